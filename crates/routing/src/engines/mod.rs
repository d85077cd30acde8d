//! Routing engines (to be written).

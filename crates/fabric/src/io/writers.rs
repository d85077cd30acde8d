//! Writers (to be written).

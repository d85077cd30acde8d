//! walk (to be written).

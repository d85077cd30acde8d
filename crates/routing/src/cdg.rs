//! cdg (to be written).

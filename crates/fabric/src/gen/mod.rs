//! Synthetic topology generators (to be written).

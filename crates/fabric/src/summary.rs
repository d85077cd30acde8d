//! Fabric figures for `fabroute info` (to be written).

//! Shared line splitting for the line-oriented readers (to be written).

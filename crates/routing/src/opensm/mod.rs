//! OpenSM file formats (to be written).

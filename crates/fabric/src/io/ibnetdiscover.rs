//! Reader for ibnetdiscover (to be written).
use super::{Loaded, ParseError};
use crate::builder::BuildOptions;

pub fn read(_bytes: &[u8], file: &str, _opts: BuildOptions) -> Result<Loaded, ParseError> {
    Err(ParseError::new(file, 0, "ibnetdiscover reader not implemented yet"))
}

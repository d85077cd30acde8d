//! fabroute's JSON form of a fabric (to be written).
use super::{Loaded, ParseError};

pub fn read(_bytes: &[u8], file: &str) -> Result<Loaded, ParseError> {
    Err(ParseError::new(file, 0, "json reader not implemented yet"))
}

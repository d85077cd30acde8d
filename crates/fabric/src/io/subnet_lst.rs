//! Reader for subnet_lst (to be written).
use super::{Loaded, ParseError};
use crate::builder::BuildOptions;

pub fn read(_bytes: &[u8], file: &str, _opts: BuildOptions) -> Result<Loaded, ParseError> {
    Err(ParseError::new(file, 0, "subnet_lst reader not implemented yet"))
}

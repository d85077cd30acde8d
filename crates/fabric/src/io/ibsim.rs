//! Reader for ibsim net files (to be written).
use super::{IncludeResolver, Loaded, ParseError};
use crate::builder::BuildOptions;

pub fn read(
    _bytes: &[u8],
    file: &str,
    _include: &mut IncludeResolver<'_>,
    _opts: BuildOptions,
) -> Result<Loaded, ParseError> {
    Err(ParseError::new(file, 0, "ibsim reader not implemented yet"))
}

pub mod convert;
pub mod gen;
pub mod info;

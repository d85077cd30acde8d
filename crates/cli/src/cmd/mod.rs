pub mod check;
pub mod convert;
pub mod fault;
pub mod gen;
pub mod info;
pub mod route;
pub mod sim;
pub mod sweep;

//! Argument groups several commands share, each with the checks that turn it into settings.

mod budget;
mod repair;
mod tables;

pub use budget::{torus_config, BudgetArgs};
pub use repair::RepairArgs;
pub use tables::Tables;

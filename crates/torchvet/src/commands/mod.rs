pub mod check;
pub mod rule;

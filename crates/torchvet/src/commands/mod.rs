pub mod check;
pub mod checkpoints;
pub mod rule;
pub mod serve;

//! The rules, one file each, grouped by catalog category.
use crate::registry::Rule;

pub mod checkpoint;
pub mod correctness;
pub mod data_loading;
pub mod deprecated_api;
pub mod distributed;
pub(crate) mod facts;
pub mod memory;
pub mod performance;
pub mod reproducibility;
pub mod security;
pub mod style;
pub mod syntax;

/// Every group's rules.
pub(crate) static RULES: &[&[&Rule]] = &[
    checkpoint::RULES,
    correctness::RULES,
    data_loading::RULES,
    deprecated_api::RULES,
    distributed::RULES,
    memory::RULES,
    performance::RULES,
    reproducibility::RULES,
    security::RULES,
    style::RULES,
    syntax::RULES,
];

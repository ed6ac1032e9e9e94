//! Rules of the `reproducibility` group.
use crate::registry::Rule;

mod missing_seed;

/// The rules of this group.
pub(crate) static RULES: &[&Rule] = &[&missing_seed::MISSING_SEED];

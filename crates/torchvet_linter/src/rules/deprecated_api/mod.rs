//! Rules of the `deprecated-api` group.
use crate::registry::Rule;

/// The rules of this group.
pub(crate) static RULES: &[&Rule] = &[];

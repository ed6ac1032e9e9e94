//! Rules of the `style` group.
use crate::registry::Rule;

/// The rules of this group.
pub(crate) static RULES: &[&Rule] = &[];

//! Syntax errors.
use crate::registry::Rule;

mod syntax_error;

/// The rules of this group.
pub(crate) static RULES: &[&Rule] = &[&syntax_error::SYNTAX_ERROR];

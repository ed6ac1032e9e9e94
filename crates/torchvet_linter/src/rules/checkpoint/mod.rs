//! Rules of the `checkpoint` group: checkpoint files found in the checked tree, read by the
//! non-executing scanner of `torchvet_checkpoint`. They have no AST hooks; `torchvet check`
//! reports them from the scanner's verdicts.
use crate::registry::Rule;

mod checkpoint_dangerous;
mod checkpoint_malformed;
mod checkpoint_unsafe;

pub use checkpoint_dangerous::CHECKPOINT_DANGEROUS;
pub use checkpoint_malformed::CHECKPOINT_MALFORMED;
pub use checkpoint_unsafe::CHECKPOINT_UNSAFE;

/// The rules of this group.
pub(crate) static RULES: &[&Rule] = &[
    &CHECKPOINT_DANGEROUS,
    &CHECKPOINT_UNSAFE,
    &CHECKPOINT_MALFORMED,
];

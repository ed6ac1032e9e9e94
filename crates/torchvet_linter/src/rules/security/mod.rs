//! Rules of the `security` group.
use crate::registry::Rule;

mod torch_hub_load_untrusted;
mod torch_load_without_weights_only;

/// The rules of this group.
pub(crate) static RULES: &[&Rule] = &[
    &torch_load_without_weights_only::TORCH_LOAD_WITHOUT_WEIGHTS_ONLY,
    &torch_hub_load_untrusted::TORCH_HUB_LOAD_UNTRUSTED,
];

//! The semantic layer: which names are bound to what (imports, aliases, relative imports,
//! `try/except ImportError` re-binds), which classes are `nn.Module`s, and small helpers that
//! turn expressions into facts (qualified names, literal values, version checks).
#![deny(missing_docs)]

mod bindings;
mod classes;
pub mod consumers;
pub mod dataflow;
pub mod entries;
pub mod flow;
pub mod grad_source;
pub mod helpers;
pub mod iterables;
pub mod kinds;
pub mod magnitude;
pub mod modes;
pub mod project;
pub mod reaching;
pub mod regions;
pub mod saves;
pub mod tensor_methods;
#[cfg(test)]
mod test_support;
pub mod uses;

pub use bindings::{KeptScopes, Scope, ScopeKind, Scopes};
pub use classes::constructs_module;
pub use classes::MODEL_EVALUATORS;
pub use classes::{
    attr_is_selection_table, attr_rebound_after, builds_pretrained, call_returns_eval_mode,
    head_replaced_mode_free, is_dataset_base, is_functional_loss, is_known_loss_class,
    is_leaf_layer, is_module_api, is_module_base, is_non_torch_model,
    is_parameter_free_construction, is_parameter_free_layer, is_registering_wrapper,
    is_torchvision_model_builder, join_mode_layers, library_mode_head, loss_call_reduces,
    mode_layer, mode_layer_effects, mode_layer_of_call, reaches_base_init, returns_eval_mode,
    AttrRebinding, ModuleClasses,
};

/// Does this text mention torch or its ecosystem at all? (The fast path: a file that never
/// does is parsed for syntax errors and nothing else.)
pub fn mentions_torch(text: &str) -> bool {
    memchr::memmem::find(text.as_bytes(), b"torch").is_some()
}

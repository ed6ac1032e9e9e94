//! Rules of the `style` group.
use crate::registry::Rule;

mod call_forward_directly;
mod legacy_tensor_construction;
mod library_without_scoped_library;
mod mutable_default_in_module_init;
mod private_collate_import;
mod tensor_data_attribute;
mod torch_save_whole_model;
mod torchvision_submodule_import_alias;
pub(crate) mod values;

/// The rules of this group.
pub(crate) static RULES: &[&Rule] = &[
    &call_forward_directly::CALL_FORWARD_DIRECTLY,
    &legacy_tensor_construction::LEGACY_TENSOR_CONSTRUCTION,
    &library_without_scoped_library::LIBRARY_WITHOUT_SCOPED_LIBRARY,
    &mutable_default_in_module_init::MUTABLE_DEFAULT_IN_MODULE_INIT,
    &private_collate_import::PRIVATE_COLLATE_IMPORT,
    &tensor_data_attribute::TENSOR_DATA_ATTRIBUTE,
    &torch_save_whole_model::TORCH_SAVE_WHOLE_MODEL,
    &torchvision_submodule_import_alias::TORCHVISION_SUBMODULE_IMPORT_ALIAS,
];

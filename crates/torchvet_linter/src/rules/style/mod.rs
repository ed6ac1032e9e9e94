//! Rules of the `style` group.
use crate::registry::Rule;

mod library_without_scoped_library;
mod private_collate_import;
mod torchvision_submodule_import_alias;
pub(crate) mod values;

/// The rules of this group.
pub(crate) static RULES: &[&Rule] = &[
    &library_without_scoped_library::LIBRARY_WITHOUT_SCOPED_LIBRARY,
    &private_collate_import::PRIVATE_COLLATE_IMPORT,
    &torchvision_submodule_import_alias::TORCHVISION_SUBMODULE_IMPORT_ALIAS,
];

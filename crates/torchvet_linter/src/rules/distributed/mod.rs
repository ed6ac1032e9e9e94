//! Rules of the `distributed` group.
use crate::registry::Rule;

mod dataparallel_instead_of_ddp;
mod ddp_compile_order;
mod ddp_missing_set_device;
mod ddp_state_dict_module_prefix;
mod local_rank_argparse_underscore;

/// The rules of this group.
pub(crate) static RULES: &[&Rule] = &[
    &dataparallel_instead_of_ddp::DATAPARALLEL_INSTEAD_OF_DDP,
    &ddp_compile_order::DDP_COMPILE_ORDER,
    &ddp_missing_set_device::DDP_MISSING_SET_DEVICE,
    &ddp_state_dict_module_prefix::DDP_STATE_DICT_MODULE_PREFIX,
    &local_rank_argparse_underscore::LOCAL_RANK_ARGPARSE_UNDERSCORE,
];

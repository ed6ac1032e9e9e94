//! Rules of the `distributed` group.
use crate::registry::Rule;

mod collective_in_rank_conditional;
mod cuda_visible_devices_after_cuda_init;
mod dataparallel_instead_of_ddp;
mod ddp_compile_order;
mod ddp_missing_set_device;
mod ddp_state_dict_module_prefix;
mod ddp_without_distributed_sampler;
mod distributed_sampler_without_set_epoch;
mod local_rank_argparse_underscore;
pub(crate) mod rank_helpers;
mod save_checkpoint_on_all_ranks;

/// The rules of this group.
pub(crate) static RULES: &[&Rule] = &[
    &dataparallel_instead_of_ddp::DATAPARALLEL_INSTEAD_OF_DDP,
    &ddp_compile_order::DDP_COMPILE_ORDER,
    &ddp_missing_set_device::DDP_MISSING_SET_DEVICE,
    &ddp_state_dict_module_prefix::DDP_STATE_DICT_MODULE_PREFIX,
    &local_rank_argparse_underscore::LOCAL_RANK_ARGPARSE_UNDERSCORE,
    &distributed_sampler_without_set_epoch::DISTRIBUTED_SAMPLER_WITHOUT_SET_EPOCH,
    &collective_in_rank_conditional::COLLECTIVE_IN_RANK_CONDITIONAL,
    &save_checkpoint_on_all_ranks::SAVE_CHECKPOINT_ON_ALL_RANKS,
    &ddp_without_distributed_sampler::DDP_WITHOUT_DISTRIBUTED_SAMPLER,
    &cuda_visible_devices_after_cuda_init::CUDA_VISIBLE_DEVICES_AFTER_CUDA_INIT,
];

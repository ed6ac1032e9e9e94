//! Rules of the `data-loading` group.
use crate::registry::Rule;

mod cuda_in_dataset_getitem;
mod dataloader_sampler_with_shuffle;
mod dataloader_workers_without_main_guard;
pub(crate) mod helpers;
mod persistent_workers_without_workers;
mod prefetch_factor_without_workers;
mod unpicklable_worker_callable;
pub(crate) mod worker_helpers;

/// The rules of this group.
pub(crate) static RULES: &[&Rule] = &[
    &dataloader_sampler_with_shuffle::DATALOADER_SAMPLER_WITH_SHUFFLE,
    &dataloader_workers_without_main_guard::DATALOADER_WORKERS_WITHOUT_MAIN_GUARD,
    &persistent_workers_without_workers::PERSISTENT_WORKERS_WITHOUT_WORKERS,
    &prefetch_factor_without_workers::PREFETCH_FACTOR_WITHOUT_WORKERS,
    &cuda_in_dataset_getitem::CUDA_IN_DATASET_GETITEM,
    &unpicklable_worker_callable::UNPICKLABLE_WORKER_CALLABLE,
];

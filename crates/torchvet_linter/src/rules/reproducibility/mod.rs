//! Rules of the `reproducibility` group.
use crate::registry::Rule;

mod missing_seed;
mod numpy_rng_in_dataset_without_worker_seed;

/// The rules of this group.
pub(crate) static RULES: &[&Rule] = &[
    &missing_seed::MISSING_SEED,
    &numpy_rng_in_dataset_without_worker_seed::NUMPY_RNG_IN_DATASET_WITHOUT_WORKER_SEED,
];

//! Rules of the `deprecated-api` group.
use crate::registry::Rule;

mod autograd_variable_deprecated;
mod backward_retain_variables_removed;
mod checkpoint_use_reentrant_implicit;
mod dataiter_next_method;
mod deprecated_api_misc;
mod deprecated_cuda_amp_autocast;
mod deprecated_functional_activation;
mod deprecated_linalg_and_range;
mod deprecated_non_underscore_alias;
mod deprecated_upsample;
#[cfg(test)]
mod fix_tests;
mod helpers;
mod implicit_default_warnings;
mod loss_size_average_reduce;
mod lr_scheduler_deprecated_calls;
mod mnist_legacy_data_attributes;
mod pack_padded_sequence_unpacked;
mod set_default_tensor_type_deprecated;
mod softmax_implicit_dim;
mod stft_return_complex_required;
mod tensor_data_zero_index;
mod torch_six_removed;
mod torchvision_pretrained_deprecated;
mod torchvision_weights;
mod volatile_flag_removed;

/// The rules of this group.
pub(crate) static RULES: &[&Rule] = &[
    &deprecated_functional_activation::DEPRECATED_FUNCTIONAL_ACTIVATION,
    &deprecated_non_underscore_alias::DEPRECATED_NON_UNDERSCORE_ALIAS,
    &torch_six_removed::TORCH_SIX_REMOVED,
    &deprecated_cuda_amp_autocast::DEPRECATED_CUDA_AMP_AUTOCAST,
    &deprecated_linalg_and_range::DEPRECATED_LINALG_AND_RANGE,
    &set_default_tensor_type_deprecated::SET_DEFAULT_TENSOR_TYPE_DEPRECATED,
    &deprecated_upsample::DEPRECATED_UPSAMPLE,
    &autograd_variable_deprecated::AUTOGRAD_VARIABLE_DEPRECATED,
    &volatile_flag_removed::VOLATILE_FLAG_REMOVED,
    &checkpoint_use_reentrant_implicit::CHECKPOINT_USE_REENTRANT_IMPLICIT,
    &loss_size_average_reduce::LOSS_SIZE_AVERAGE_REDUCE,
    &softmax_implicit_dim::SOFTMAX_IMPLICIT_DIM,
    &implicit_default_warnings::IMPLICIT_DEFAULT_WARNINGS,
    &torchvision_pretrained_deprecated::TORCHVISION_PRETRAINED_DEPRECATED,
    &deprecated_api_misc::DEPRECATED_API_MISC,
    &stft_return_complex_required::STFT_RETURN_COMPLEX_REQUIRED,
    &dataiter_next_method::DATAITER_NEXT_METHOD,
    &tensor_data_zero_index::TENSOR_DATA_ZERO_INDEX,
    &lr_scheduler_deprecated_calls::LR_SCHEDULER_DEPRECATED_CALLS,
    &backward_retain_variables_removed::BACKWARD_RETAIN_VARIABLES_REMOVED,
    &pack_padded_sequence_unpacked::PACK_PADDED_SEQUENCE_UNPACKED,
    &mnist_legacy_data_attributes::MNIST_LEGACY_DATA_ATTRIBUTES,
];

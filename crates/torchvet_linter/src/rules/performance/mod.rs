//! Rules of the `performance` group.
use crate::registry::Rule;

mod backward_inside_autocast;
mod conv_bias_before_batchnorm;
mod cuda_empty_cache_in_loop;
mod cudnn_benchmark_not_enabled;
mod dataloader_num_workers_zero;
mod dataloader_pin_memory_missing;
mod detect_anomaly_left_enabled;
mod division_by_sqrt;
mod gan_discriminator_on_undetached_fake;
mod hardcoded_device_in_forward;
pub(crate) mod helpers;
mod model_to_device_in_loop;
mod python_loop_over_tensor_elements;
mod sync_in_training_loop;
mod tensor_created_then_moved;
mod torch_compile_in_loop;
mod torch_compile_result_discarded;
mod zero_grad_set_to_none_false;

/// The rules of this group.
pub(crate) static RULES: &[&Rule] = &[
    &backward_inside_autocast::BACKWARD_INSIDE_AUTOCAST,
    &conv_bias_before_batchnorm::CONV_BIAS_BEFORE_BATCHNORM,
    &cuda_empty_cache_in_loop::CUDA_EMPTY_CACHE_IN_LOOP,
    &dataloader_num_workers_zero::DATALOADER_NUM_WORKERS_ZERO,
    &dataloader_pin_memory_missing::DATALOADER_PIN_MEMORY_MISSING,
    &detect_anomaly_left_enabled::DETECT_ANOMALY_LEFT_ENABLED,
    &division_by_sqrt::DIVISION_BY_SQRT,
    &model_to_device_in_loop::MODEL_TO_DEVICE_IN_LOOP,
    &tensor_created_then_moved::TENSOR_CREATED_THEN_MOVED,
    &torch_compile_in_loop::TORCH_COMPILE_IN_LOOP,
    &torch_compile_result_discarded::TORCH_COMPILE_RESULT_DISCARDED,
    &zero_grad_set_to_none_false::ZERO_GRAD_SET_TO_NONE_FALSE,
    &hardcoded_device_in_forward::HARDCODED_DEVICE_IN_FORWARD,
    &sync_in_training_loop::SYNC_IN_TRAINING_LOOP,
    &python_loop_over_tensor_elements::PYTHON_LOOP_OVER_TENSOR_ELEMENTS,
    &cudnn_benchmark_not_enabled::CUDNN_BENCHMARK_NOT_ENABLED,
    &gan_discriminator_on_undetached_fake::GAN_DISCRIMINATOR_ON_UNDETACHED_FAKE,
];

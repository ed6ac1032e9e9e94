//! Rules of the `correctness` group.
use crate::registry::Rule;

mod adam_weight_decay_not_decoupled;
mod backward_on_non_scalar;
mod batchnorm_hyperparam_misuse;
mod bce_after_sigmoid;
mod bce_with_logits_on_probabilities;
mod cross_entropy_after_softmax;
mod cuda_is_available_not_called;
mod flatten_includes_batch_dim;
mod functional_dropout_without_training;
mod helpers;
mod lbfgs_step_without_closure;
mod load_state_dict_strict_false;
mod log_of_softmax;
mod loss_class_not_instantiated;
mod method_reference_not_called;
mod missing_super_init;
mod module_flag_attribute_assignment;
mod mse_target_shape_broadcast;
mod nll_loss_on_probabilities;
mod no_grad_call_without_with;
mod parameter_moved_in_init;
mod plateau_scheduler_step_without_metric;
mod requires_grad_leaf_then_moved;
mod submodules_in_python_list;
mod taint_helpers;
mod tensor_attribute_not_buffer;
mod torch_load_without_map_location;
mod torch_version_string_compare;
mod view_on_non_contiguous;
mod view_used_as_transpose;

/// The rules of this group.
pub(crate) static RULES: &[&Rule] = &[
    &submodules_in_python_list::SUBMODULES_IN_PYTHON_LIST,
    &parameter_moved_in_init::PARAMETER_MOVED_IN_INIT,
    &cuda_is_available_not_called::CUDA_IS_AVAILABLE_NOT_CALLED,
    &functional_dropout_without_training::FUNCTIONAL_DROPOUT_WITHOUT_TRAINING,
    &missing_super_init::MISSING_SUPER_INIT,
    &module_flag_attribute_assignment::MODULE_FLAG_ATTRIBUTE_ASSIGNMENT,
    &plateau_scheduler_step_without_metric::PLATEAU_SCHEDULER_STEP_WITHOUT_METRIC,
    &requires_grad_leaf_then_moved::REQUIRES_GRAD_LEAF_THEN_MOVED,
    &tensor_attribute_not_buffer::TENSOR_ATTRIBUTE_NOT_BUFFER,
    &method_reference_not_called::METHOD_REFERENCE_NOT_CALLED,
    &log_of_softmax::LOG_OF_SOFTMAX,
    &torch_version_string_compare::TORCH_VERSION_STRING_COMPARE,
    &load_state_dict_strict_false::LOAD_STATE_DICT_STRICT_FALSE,
    &lbfgs_step_without_closure::LBFGS_STEP_WITHOUT_CLOSURE,
    &loss_class_not_instantiated::LOSS_CLASS_NOT_INSTANTIATED,
    &batchnorm_hyperparam_misuse::BATCHNORM_HYPERPARAM_MISUSE,
    &flatten_includes_batch_dim::FLATTEN_INCLUDES_BATCH_DIM,
    &torch_load_without_map_location::TORCH_LOAD_WITHOUT_MAP_LOCATION,
    &no_grad_call_without_with::NO_GRAD_CALL_WITHOUT_WITH,
    &adam_weight_decay_not_decoupled::ADAM_WEIGHT_DECAY_NOT_DECOUPLED,
    &cross_entropy_after_softmax::CROSS_ENTROPY_AFTER_SOFTMAX,
    &nll_loss_on_probabilities::NLL_LOSS_ON_PROBABILITIES,
    &bce_with_logits_on_probabilities::BCE_WITH_LOGITS_ON_PROBABILITIES,
    &bce_after_sigmoid::BCE_AFTER_SIGMOID,
    &view_on_non_contiguous::VIEW_ON_NON_CONTIGUOUS,
    &backward_on_non_scalar::BACKWARD_ON_NON_SCALAR,
    &view_used_as_transpose::VIEW_USED_AS_TRANSPOSE,
    &mse_target_shape_broadcast::MSE_TARGET_SHAPE_BROADCAST,
];

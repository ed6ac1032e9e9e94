//! Rules of the `correctness` group.
use crate::registry::Rule;

mod adam_weight_decay_not_decoupled;
mod batchnorm_hyperparam_misuse;
mod best_state_dict_not_copied;
mod cuda_is_available_not_called;
mod discarded_tensor_op_result;
mod flatten_includes_batch_dim;
mod functional_dropout_without_training;
mod helpers;
mod inplace_modifies_saved_tensor;
mod inplace_update_on_leaf_outside_no_grad;
mod lbfgs_step_without_closure;
mod load_state_dict_strict_false;
mod log_of_softmax;
mod loss_class_not_instantiated;
mod method_reference_not_called;
mod missing_super_init;
mod module_flag_attribute_assignment;
mod no_grad_call_without_with;
mod numpy_in_forward_or_loss;
mod numpy_on_requires_grad_tensor;
mod parameter_moved_in_init;
mod plateau_scheduler_step_without_metric;
mod requires_grad_leaf_then_moved;
mod rnn_hidden_state_not_detached;
mod submodules_in_python_list;
mod tensor_attribute_not_buffer;
mod tensor_helpers;
mod tensor_rewrap_breaks_graph;
mod torch_load_without_map_location;
mod torch_version_string_compare;

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
    &discarded_tensor_op_result::DISCARDED_TENSOR_OP_RESULT,
    &best_state_dict_not_copied::BEST_STATE_DICT_NOT_COPIED,
    &inplace_update_on_leaf_outside_no_grad::INPLACE_UPDATE_ON_LEAF_OUTSIDE_NO_GRAD,
    &rnn_hidden_state_not_detached::RNN_HIDDEN_STATE_NOT_DETACHED,
    &numpy_on_requires_grad_tensor::NUMPY_ON_REQUIRES_GRAD_TENSOR,
    &tensor_rewrap_breaks_graph::TENSOR_REWRAP_BREAKS_GRAPH,
    &inplace_modifies_saved_tensor::INPLACE_MODIFIES_SAVED_TENSOR,
    &numpy_in_forward_or_loss::NUMPY_IN_FORWARD_OR_LOSS,
];

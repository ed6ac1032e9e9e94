//! Rules of the `correctness` group.
use crate::registry::Rule;

mod adam_weight_decay_not_decoupled;
mod amp_scaler_step_without_scale;
mod attention_batch_first_mismatch;
mod backward_inside_no_grad;
mod backward_on_non_scalar;
mod batchnorm_hyperparam_misuse;
mod bce_after_sigmoid;
mod bce_with_logits_on_probabilities;
mod best_state_dict_not_copied;
mod checkpoint_fails_weights_only_load;
mod clip_grad_after_step;
mod clip_grad_norm_amp_without_unscale;
mod cross_entropy_after_softmax;
mod cuda_is_available_not_called;
mod cuda_timing_without_synchronize;
mod discarded_tensor_op_result;
mod epoch_scheduler_stepped_per_batch;
mod eval_loader_shuffled;
mod flatten_includes_batch_dim;
mod float64_numpy_into_model;
mod flow_helpers;
mod functional_dropout_without_training;
mod grad_accum_loss_not_scaled;
pub(crate) mod helpers;
mod inplace_modifies_saved_tensor;
mod inplace_update_on_leaf_outside_no_grad;
mod input_not_moved_to_model_device;
mod lbfgs_step_without_closure;
mod load_state_dict_strict_false;
mod log_of_softmax;
mod loss_class_not_instantiated;
mod manual_half_training;
mod method_reference_not_called;
mod missing_eval_mode;
mod missing_super_init;
mod missing_train_after_eval;
mod missing_zero_grad;
pub(crate) mod model_helpers;
mod module_flag_attribute_assignment;
mod mse_target_shape_broadcast;
mod nll_loss_on_probabilities;
mod no_grad_call_without_with;
mod numpy_in_forward_or_loss;
mod numpy_on_requires_grad_tensor;
mod optimizer_on_stale_model;
mod optimizer_param_generator_reused;
mod optimizer_step_before_backward;
mod optimizer_step_between_shared_backward;
mod parameter_moved_in_init;
mod plateau_scheduler_step_without_metric;
mod requires_grad_leaf_then_moved;
mod resume_without_optimizer_state;
mod rnn_hidden_state_not_detached;
mod scheduler_never_stepped;
mod scheduler_step_before_optimizer_step;
mod submodules_in_python_list;
mod taint_helpers;
mod tensor_attribute_not_buffer;
mod tensor_helpers;
mod tensor_rewrap_breaks_graph;
mod torch_load_without_map_location;
mod torch_version_string_compare;
mod view_on_non_contiguous;
mod view_used_as_transpose;
mod weight_decay_on_norm_and_bias;
mod zero_grad_misplaced;

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
    &optimizer_param_generator_reused::OPTIMIZER_PARAM_GENERATOR_REUSED,
    &input_not_moved_to_model_device::INPUT_NOT_MOVED_TO_MODEL_DEVICE,
    &cuda_timing_without_synchronize::CUDA_TIMING_WITHOUT_SYNCHRONIZE,
    &optimizer_on_stale_model::OPTIMIZER_ON_STALE_MODEL,
    &float64_numpy_into_model::FLOAT64_NUMPY_INTO_MODEL,
    &manual_half_training::MANUAL_HALF_TRAINING,
    &attention_batch_first_mismatch::ATTENTION_BATCH_FIRST_MISMATCH,
    &weight_decay_on_norm_and_bias::WEIGHT_DECAY_ON_NORM_AND_BIAS,
    &missing_train_after_eval::MISSING_TRAIN_AFTER_EVAL,
    &missing_eval_mode::MISSING_EVAL_MODE,
    &backward_inside_no_grad::BACKWARD_INSIDE_NO_GRAD,
    &epoch_scheduler_stepped_per_batch::EPOCH_SCHEDULER_STEPPED_PER_BATCH,
    &discarded_tensor_op_result::DISCARDED_TENSOR_OP_RESULT,
    &best_state_dict_not_copied::BEST_STATE_DICT_NOT_COPIED,
    &inplace_update_on_leaf_outside_no_grad::INPLACE_UPDATE_ON_LEAF_OUTSIDE_NO_GRAD,
    &rnn_hidden_state_not_detached::RNN_HIDDEN_STATE_NOT_DETACHED,
    &numpy_on_requires_grad_tensor::NUMPY_ON_REQUIRES_GRAD_TENSOR,
    &tensor_rewrap_breaks_graph::TENSOR_REWRAP_BREAKS_GRAPH,
    &inplace_modifies_saved_tensor::INPLACE_MODIFIES_SAVED_TENSOR,
    &numpy_in_forward_or_loss::NUMPY_IN_FORWARD_OR_LOSS,
    &missing_zero_grad::MISSING_ZERO_GRAD,
    &zero_grad_misplaced::ZERO_GRAD_MISPLACED,
    &clip_grad_norm_amp_without_unscale::CLIP_GRAD_NORM_AMP_WITHOUT_UNSCALE,
    &amp_scaler_step_without_scale::AMP_SCALER_STEP_WITHOUT_SCALE,
    &grad_accum_loss_not_scaled::GRAD_ACCUM_LOSS_NOT_SCALED,
    &optimizer_step_before_backward::OPTIMIZER_STEP_BEFORE_BACKWARD,
    &clip_grad_after_step::CLIP_GRAD_AFTER_STEP,
    &scheduler_step_before_optimizer_step::SCHEDULER_STEP_BEFORE_OPTIMIZER_STEP,
    &optimizer_step_between_shared_backward::OPTIMIZER_STEP_BETWEEN_SHARED_BACKWARD,
    &cross_entropy_after_softmax::CROSS_ENTROPY_AFTER_SOFTMAX,
    &nll_loss_on_probabilities::NLL_LOSS_ON_PROBABILITIES,
    &bce_with_logits_on_probabilities::BCE_WITH_LOGITS_ON_PROBABILITIES,
    &bce_after_sigmoid::BCE_AFTER_SIGMOID,
    &view_on_non_contiguous::VIEW_ON_NON_CONTIGUOUS,
    &backward_on_non_scalar::BACKWARD_ON_NON_SCALAR,
    &view_used_as_transpose::VIEW_USED_AS_TRANSPOSE,
    &mse_target_shape_broadcast::MSE_TARGET_SHAPE_BROADCAST,
    &checkpoint_fails_weights_only_load::CHECKPOINT_FAILS_WEIGHTS_ONLY_LOAD,
    &resume_without_optimizer_state::RESUME_WITHOUT_OPTIMIZER_STATE,
    &scheduler_never_stepped::SCHEDULER_NEVER_STEPPED,
    &eval_loader_shuffled::EVAL_LOADER_SHUFFLED,
];

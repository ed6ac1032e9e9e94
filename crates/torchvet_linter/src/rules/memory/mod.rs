//! Rules of the `memory` group.
use crate::registry::Rule;

mod accumulate_loss_tensor;
mod eval_without_no_grad;
mod retain_graph_in_loop;
mod store_outputs_without_detach;

/// The rules of this group.
pub(crate) static RULES: &[&Rule] = &[
    &accumulate_loss_tensor::ACCUMULATE_LOSS_TENSOR,
    &eval_without_no_grad::EVAL_WITHOUT_NO_GRAD,
    &store_outputs_without_detach::STORE_OUTPUTS_WITHOUT_DETACH,
    &retain_graph_in_loop::RETAIN_GRAPH_IN_LOOP,
];

//! What a tensor method does to its receiver: one row per method, one column per effect.
//!
//! The dataflow walker ([`crate::dataflow`]), the magnitude facts ([`crate::magnitude`]) and
//! the rules that ask whether a value still carries an autograd graph (or still requires
//! grad) all read this one table,
//! so a method is classified once. The columns are different questions on purpose: `clamp`
//! keeps every dataflow fact of its receiver (a clamped probability is still one) but not its
//! entries; `transpose` keeps the entries but changes the layout (the walker handles it
//! itself); `mean` keeps the graph but neither the shape nor the entries.

/// The effects of one tensor method (see [`effects`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Effects(u8);

/// Every tracked dataflow fact of the receiver carries over to the result: the result is the
/// receiver's data re-viewed, cast, moved, copied, clamped or sub-selected (probabilities stay
/// probabilities, an unreduced loss stays unreduced, a graph stays). The walker handles the
/// exceptions of such methods (a device move, `.detach()` dropping the graph, a view resetting
/// contiguity) before it asks this.
const FACTS: u8 = 1;
/// Every entry of the result is an entry of the receiver, unchanged: moves, casts, views,
/// copies, reorderings and repetitions (`clamp`, `select` are not: one changes entries, the
/// other is not listed as it drops some).
const VALUES: u8 = 1 << 1;
/// The result is one tensor that keeps the receiver's autograd graph (a differentiable op on
/// it). Not: methods returning a tuple for some arguments (`max`, `sort`), `type()` (a string
/// without arguments), `requires_grad_` (its argument decides).
const GRAPH: u8 = 1 << 2;
/// The result carries no autograd graph: a Python value, a detached tensor, an integer or
/// boolean tensor, or `None` (`backward`).
const NO_GRAPH: u8 = 1 << 3;
/// No useful gradient reaches the receiver through the result: rounding (`round`, `floor`,
/// `ceil`, `sign`: a zero gradient) and the reductions that return indices (`max`, `min`,
/// `sort`, `topk` with a dim give `(values, indices)`, and code usually keeps the indices).
const ZERO_GRAD: u8 = 1 << 4;
/// The result has the receiver's shape: casts, device moves, copies, `detach`, element-wise
/// functions of the tensor alone.
const SHAPE: u8 = 1 << 5;

impl Effects {
    /// Every tracked dataflow fact carries over (see the `FACTS` column).
    pub fn keeps_facts(self) -> bool {
        self.0 & FACTS != 0
    }
    /// Every entry of the result is an entry of the receiver, unchanged.
    pub fn keeps_values(self) -> bool {
        self.0 & VALUES != 0
    }
    /// The result is one tensor that keeps the receiver's autograd graph.
    pub fn keeps_graph(self) -> bool {
        self.0 & GRAPH != 0
    }
    /// The result carries no autograd graph.
    pub fn drops_graph(self) -> bool {
        self.0 & NO_GRAPH != 0
    }
    /// The result has the receiver's shape (see the `SHAPE` column).
    pub fn keeps_shape(self) -> bool {
        self.0 & SHAPE != 0
    }

    /// No useful gradient reaches the receiver: no graph, a zero gradient (rounding), or
    /// indices (see the `ZERO_GRAD` column).
    pub fn cuts_gradient(self) -> bool {
        self.0 & (NO_GRAPH | ZERO_GRAD) != 0
    }
}

/// The effects of `tensor.<method>(...)`; no effect known for methods not in the table.
pub fn effects(method: &str) -> Effects {
    Effects(match method {
        // Views and shape changes of the same entries.
        "view" | "view_as" | "reshape" | "reshape_as" | "squeeze" | "unsqueeze" | "flatten"
        | "squeeze_" | "unsqueeze_" => FACTS | VALUES | GRAPH,
        // Casts and device moves.
        "float" | "double" | "half" | "bfloat16" | "to" | "cuda" | "cpu" | "type_as" => {
            FACTS | VALUES | GRAPH | SHAPE
        }
        "type" => FACTS | VALUES,
        // Copies.
        "clone" | "contiguous" => FACTS | VALUES | GRAPH | SHAPE,
        "pin_memory" | "requires_grad_" => FACTS | VALUES | SHAPE,
        "detach" | "detach_" => FACTS | VALUES | NO_GRAPH | SHAPE,
        // Entries bounded or selected: facts kept, entries not all kept.
        "clamp" | "clamp_" | "clip" | "narrow" | "select" | "index_select" | "masked_select" => {
            FACTS | GRAPH
        }
        // Reorderings and repetitions (the walker tracks their layout itself).
        "transpose" | "permute" | "t" | "expand" | "expand_as" | "repeat" | "flip" | "roll" => {
            VALUES | GRAPH
        }
        // Differentiable arithmetic, activations and reductions to one tensor.
        "mean" | "sum" | "norm" | "mul" | "add" | "div" | "sub" | "pow" => GRAPH,
        // Element-wise functions of the tensor alone.
        "sqrt" | "abs" | "exp" | "log" | "sigmoid" | "tanh" | "softmax" | "log_softmax" => {
            GRAPH | SHAPE
        }
        // Integer and boolean casts.
        "long" | "int" | "bool" => NO_GRAPH | SHAPE,
        // Python values, indices, comparisons, shapes.
        "item" | "tolist" | "numpy" | "argmax" | "argmin" | "eq" | "ne" | "gt" | "lt" | "ge"
        | "le" | "size" | "dim" | "numel" | "backward" | "nonzero" | "argsort" => NO_GRAPH,
        // Zero gradients and index-returning reductions.
        "round" | "floor" | "ceil" | "sign" | "max" | "min" | "sort" | "topk" => ZERO_GRAD,
        _ => 0,
    })
}

/// Is `tensor.<attr>` something other than a graph-carrying tensor: the raw data, the
/// gradient, the graph node, a shape, a dtype, a device or a flag?
pub fn attribute_without_graph(attr: &str) -> bool {
    matches!(
        attr,
        "data"
            | "grad"
            | "grad_fn"
            | "shape"
            | "dtype"
            | "device"
            | "requires_grad"
            | "is_cuda"
            | "ndim"
    )
}

#[cfg(test)]
mod tests {
    use super::effects;

    #[test]
    fn columns_answer_different_questions() {
        // A clamped probability is still a probability, but its entries changed.
        assert!(effects("clamp").keeps_facts());
        assert!(!effects("clamp").keeps_values());
        // A transpose keeps the entries; its layout is the walker's business.
        assert!(effects("transpose").keeps_values());
        assert!(!effects("transpose").keeps_facts());
        // A mean keeps the graph, not the entries.
        assert!(effects("mean").keeps_graph());
        assert!(!effects("mean").keeps_values());
        // detach keeps the entries and drops the graph.
        assert!(effects("detach").keeps_values());
        assert!(effects("detach").drops_graph());
        assert!(!effects("detach").keeps_graph());
        // `x.type()` without arguments is a string; `max(dim)` a tuple.
        assert!(!effects("type").keeps_graph());
        assert!(!effects("max").keeps_graph());
        assert!(effects("max").cuts_gradient() && !effects("max").drops_graph());
        assert!(effects("item").cuts_gradient());
        // A cast keeps the shape; a reduction or a view does not promise it.
        assert!(effects("float").keeps_shape() && effects("detach").keeps_shape());
        assert!(!effects("mean").keeps_shape() && !effects("view").keeps_shape());
        assert_eq!(effects("frobnicate"), Default::default());
        assert!(super::attribute_without_graph("grad"));
        assert!(!super::attribute_without_graph("logits"));
    }

    #[test]
    fn no_method_both_keeps_and_drops_the_graph() {
        for m in [
            "view", "to", "clone", "detach", "clamp", "t", "mean", "item", "long", "backward",
        ] {
            let e = effects(m);
            assert!(!(e.keeps_graph() && e.drops_graph()), "{m}");
        }
    }
}

use crate::checker::Checker;
use ruff_python_ast::ExprCall;
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;
use torchvet_semantic::modes::{calls_in, classify, events_of, Event};
use torchvet_semantic::regions::loop_body;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `loss.backward(retain_graph=True)` (or `torch.autograd.grad(...,
    /// retain_graph=True)`) in a training loop where no second backward pass over the same
    /// graph follows in the iteration (of that loop or of a loop around it).
    ///
    /// ## Why is this bad?
    /// `retain_graph=True` keeps the graph's saved activations after the backward pass so the
    /// graph can be differentiated again. When nothing differentiates it again, it is usually
    /// a workaround for "Trying to backward through the graph a second time", caused by state
    /// carried over from the previous iteration (an RNN hidden state, a running average, a
    /// cached target) that links every iteration's graph to the previous ones. With the
    /// workaround the error disappears, but each backward now runs through the whole history:
    /// memory and step time grow every iteration until the process runs out of memory. The
    /// fix is to detach the carried state (`h = h.detach()`).
    ///
    /// ## Example
    /// ```python
    /// for x, y in loader:
    ///     out, h = rnn(x, h)
    ///     loss = criterion(out, y)
    ///     loss.backward(retain_graph=True)
    ///     optimizer.step()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// for x, y in loader:
    ///     h = h.detach()
    ///     out, h = rnn(x, h)
    ///     loss = criterion(out, y)
    ///     loss.backward()
    ///     optimizer.step()
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: the state that links the iterations has to be found and detached,
    /// which only the author can do safely.
    ///
    /// ## References
    /// - [torch.Tensor.backward](https://pytorch.org/docs/stable/generated/torch.Tensor.backward.html)
    /// - [pytorch/pytorch issue 40005](https://github.com/pytorch/pytorch/issues/40005)
    /// - [sgadgil6/cnslab_fmri issue 4](https://github.com/sgadgil6/cnslab_fmri/issues/4)
    pub(crate) static RETAIN_GRAPH_IN_LOOP = {
        name: "retain-graph-in-loop",
        code: "TV068",
        group: Memory,
        severity: Warning,
        title: "backward(retain_graph=True) in a training loop without a second backward",
        autofix: No,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let is_backward = matches!(helpers::method_call(call), Some(("backward", _)))
        || matches!(
            name,
            Some("torch.autograd.backward" | "torch.autograd.grad")
        );
    if !is_backward {
        return;
    }
    if helpers::keyword(call, "retain_graph").and_then(helpers::is_truthy) != Some(true) {
        return;
    }
    let Some(&inner) = checker.frame().loops.last() else {
        return;
    };
    let body = loop_body(inner);
    // A training loop: the optimizer steps in this very loop.
    let Some(step) = calls_in(body)
        .into_iter()
        .find(|c| classify(checker, c) == Event::OptStep)
        .map(Ranged::range)
    else {
        return;
    };
    // A second backward (or autograd.grad) in the iteration may reuse the retained graph:
    // in this loop, or later in an enclosing one (a WGAN's critic loop retains the graph of
    // `fake = G(z)`, which the generator's backward after the critic loop runs through again).
    let outer = checker.frame().loops.first().copied().unwrap_or(inner);
    let body = loop_body(outer);
    let backwards = events_of(checker, body)
        .iter()
        .filter(|f| f.event == Event::Backward)
        .count();
    let grads = calls_in(body)
        .into_iter()
        .filter(|c| {
            c.range() != call.range()
                && checker.resolves_to(&c.func, &["torch.autograd.grad", "torch.autograd.backward"])
        })
        .count();
    let this_counted = usize::from(classify(checker, call) == Event::Backward);
    if backwards + grads > this_counted {
        return;
    }
    let text = checker.text(call.range());
    checker
        .report(
            call.range(),
            format!(
                "`{text}` keeps the graph alive every iteration but nothing differentiates it a second time: if state carried across iterations (a hidden state, a running target) links the graphs, each backward runs through the whole history and memory grows every step; detach the carried state and drop `retain_graph=True`"
            ),
        )
        .add_related(step, "the optimizer steps once per iteration of this loop");
}

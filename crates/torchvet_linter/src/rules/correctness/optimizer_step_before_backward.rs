use super::flow_helpers::{current_flow, delete_stmt, describe, insert_after, movable};
use crate::checker::Checker;
use crate::fix::RawFix;
use ruff_python_ast::Stmt;
use ruff_text_size::Ranged;
use torchvet_semantic::flow::EventKind;

crate::declare_rule! {
    /// ## What it does
    /// Checks for loop iterations ordered `optimizer.zero_grad()` → `optimizer.step()` →
    /// `loss.backward()`: the step runs before the only `backward()` of the iteration, right
    /// after the gradients were cleared.
    ///
    /// ## Why is this bad?
    /// `step()` consumes the gradients currently stored in `.grad`. Just after `zero_grad()`
    /// they are zero (or `None`, so the parameters are skipped), and the gradients computed by
    /// the following `backward()` are cleared again at the top of the next iteration before
    /// any step sees them: the model never learns. (Optimizers with momentum or weight decay
    /// still move the weights, which hides the bug.) A step guarded by a condition, or one
    /// that runs before `zero_grad()` (applying the previous iteration's gradients), is not
    /// reported.
    ///
    /// ## Example
    /// ```python
    /// for x, y in loader:
    ///     optimizer.zero_grad()
    ///     optimizer.step()
    ///     loss = criterion(model(x), y)
    ///     loss.backward()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// for x, y in loader:
    ///     optimizer.zero_grad()
    ///     loss = criterion(model(x), y)
    ///     loss.backward()
    ///     optimizer.step()
    /// ```
    ///
    /// ## Fix safety
    /// The suggested fix moves the `step()` statement after the `backward()` statement when
    /// both are plain statements of the same block. It is unsafe: code between them may read
    /// the parameters and expect the old order.
    ///
    /// ## References
    /// - [Taking an optimization step](https://pytorch.org/docs/stable/optim.html#taking-an-optimization-step)
    /// - [edge-connect issue 188](https://github.com/knazeri/edge-connect/issues/188)
    pub(crate) static OPTIMIZER_STEP_BEFORE_BACKWARD = {
        name: "optimizer-step-before-backward",
        code: "TV058",
        group: Correctness,
        severity: Critical,
        title: "optimizer.step() precedes loss.backward() in the same iteration",
        autofix: Suggest,
        hooks: { stmt: check },
    };
}

fn check(checker: &mut Checker, stmt: &Stmt) {
    let Some(flow) = current_flow(checker, stmt) else {
        return;
    };
    for (si, step) in flow.of_kind(EventKind::Step) {
        if step.in_nested_loop() || step.is_conditional() || step.closure {
            continue;
        }
        let Some(opt) = step.target_key() else {
            continue;
        };
        // No backward before the step in the iteration, at least one after it.
        if flow.any_between(0..si, EventKind::Backward, |_| true) {
            continue;
        }
        let Some((bi, backward)) = flow
            .events
            .iter()
            .enumerate()
            .skip(si + 1)
            .find(|(_, e)| e.kind == EventKind::Backward)
        else {
            continue;
        };
        // The same optimizer's zero_grad() right before the step.
        let Some(zero) = flow.events[..si].iter().rev().find(|e| {
            e.kind == EventKind::ZeroGrad && e.target_key() == Some(opt) && e.dominates(step)
        }) else {
            continue;
        };
        // Another step of this optimizer after the backward consumes the gradients.
        if flow
            .events
            .iter()
            .skip(bi)
            .any(|e| e.kind == EventKind::Step && e.target_key() == Some(opt))
        {
            continue;
        }
        let message = format!(
            "{} runs right after {} and before the iteration's {}: it applies zero gradients, and the ones computed afterwards are cleared before any step uses them, so the model does not learn",
            describe(checker, step),
            describe(checker, zero),
            describe(checker, backward)
        );
        // The last backward of the iteration, as a plain statement of the step's block.
        let last_b = flow
            .events
            .iter()
            .rev()
            .find(|e| e.kind == EventKind::Backward)
            .unwrap_or(backward);
        let fix = (movable(checker, step)
            && step.scaler.is_none()
            && last_b.via.is_none()
            && last_b.stmt.range() == last_b.top.range()
            && step.stmt.range() == step.top.range())
        .then(|| {
            let text = checker.text(step.stmt.range());
            let del = delete_stmt(checker, step.stmt)?;
            let ins = insert_after(checker, last_b.stmt, text, None)?;
            Some(RawFix::unsafe_edit(
                "Move the optimizer step after backward()",
                vec![del, ins],
            ))
        })
        .flatten();
        let (bsite, zsite) = (backward.site(), zero.site());
        let d = checker.report(step.site(), message);
        d.add_related(bsite, "the backward() whose gradients this step should use");
        d.add_related(
            zsite,
            "the zero_grad() that cleared the gradients just before",
        );
        if let Some(fix) = fix {
            d.set_fix(fix);
        }
    }
}

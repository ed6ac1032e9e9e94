use super::flow_helpers::{current_flow, delete_stmt, describe, insert_before, movable};
use crate::checker::Checker;
use crate::fix::RawFix;
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::flow::{Event, EventKind, LoopFlow};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for gradient clipping (`clip_grad_norm_` / `clip_grad_value_`) placed after the
    /// iteration's `optimizer.step()`, or right after `zero_grad()` and before `backward()`.
    ///
    /// ## Why is this bad?
    /// Clipping rescales the gradients stored in `.grad`; only a later `step()` sees the
    /// result. After the step, the update has already been applied with the unclipped
    /// gradients, and the clipped ones are cleared before the next step: clipping does
    /// nothing, and exploding gradients are not contained. Before `backward()` (just after
    /// `zero_grad()`) there is nothing to clip yet. Calls with an infinite `max_norm` (used
    /// only to measure the norm) are not reported.
    ///
    /// ## Example
    /// ```python
    /// loss.backward()
    /// optimizer.step()
    /// torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// loss.backward()
    /// torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    /// optimizer.step()
    /// ```
    ///
    /// ## Fix safety
    /// For a clip after a plain `optimizer.step()`, the suggested fix moves the clipping
    /// statement right before the step. It is unsafe: it changes the update (which is the
    /// point) and the clip's return value may be logged differently. With a `GradScaler` no
    /// fix is offered, because clipping also needs `scaler.unscale_(optimizer)` first.
    ///
    /// ## References
    /// - [torch.nn.utils.clip_grad_norm_](https://pytorch.org/docs/stable/generated/torch.nn.utils.clip_grad_norm_.html)
    /// - [AMP examples: gradient clipping](https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping)
    /// - [Pytorch-UNet issue 468](https://github.com/milesial/Pytorch-UNet/issues/468)
    pub(crate) static CLIP_GRAD_AFTER_STEP = {
        name: "clip-grad-after-step",
        code: "TV080",
        group: Correctness,
        severity: Warning,
        title: "Gradient clipping after optimizer.step() (or before backward) has no effect",
        autofix: Suggest,
        hooks: { stmt: check },
    };
}

fn check(checker: &mut Checker, stmt: &Stmt) {
    let Some(flow) = current_flow(checker, stmt) else {
        return;
    };
    if !flow.has(EventKind::ClipGrad) || !flow.has(EventKind::Step) {
        return;
    }
    for (ci, clip) in flow.of_kind(EventKind::ClipGrad) {
        if clip.in_nested_loop() || measures_only(clip) {
            continue;
        }
        // A step before the clip and none after it (nothing consumes the clipped gradients).
        let step_after = flow.any_between(ci + 1..flow.events.len(), EventKind::Step, |_| true);
        if let Some(si) = step_before(&flow, ci).filter(|_| !step_after) {
            let step = &flow.events[si];
            let message = format!(
                "{} clips the gradients after {} already applied them: the update used the unclipped gradients and the clipped ones are never used, so clipping has no effect",
                describe(checker, clip),
                describe(checker, step)
            );
            let fix = (step.scaler.is_none() && movable(checker, clip) && movable(checker, step))
                .then(|| {
                    let text = checker.text(clip.stmt.range());
                    let del = delete_stmt(checker, clip.stmt)?;
                    let ins = insert_before(checker, step.stmt, text)?;
                    Some(RawFix::unsafe_edit(
                        "Move the clipping before the optimizer step",
                        vec![ins, del],
                    ))
                })
                .flatten();
            let ssite = step.site();
            let d = checker.report(clip.site(), message);
            d.add_related(ssite, "the optimizer step that already used the gradients");
            if let Some(fix) = fix {
                d.set_fix(fix);
            }
        } else if let Some(zi) = zeroed_before(&flow, ci) {
            let z = &flow.events[zi];
            let message = format!(
                "{} clips the gradients right after {} cleared them and before this iteration's backward(): there is nothing to clip, and the gradients the step uses are never clipped",
                describe(checker, clip),
                describe(checker, z)
            );
            let zsite = z.site();
            checker
                .report(clip.site(), message)
                .add_related(zsite, "the zero_grad() that cleared the gradients");
        }
    }
}

/// A step before the clip that always runs when the clip does, with no backward between.
fn step_before(flow: &LoopFlow, ci: usize) -> Option<usize> {
    let clip = &flow.events[ci];
    for i in (0..ci).rev() {
        let e = &flow.events[i];
        match e.kind {
            EventKind::Backward => return None,
            EventKind::Step if !e.in_nested_loop() && !e.closure && e.dominates(clip) => {
                return Some(i)
            }
            _ => {}
        }
    }
    None
}

/// A zero_grad before the clip with no backward between, and a backward after the clip.
fn zeroed_before(flow: &LoopFlow, ci: usize) -> Option<usize> {
    let clip = &flow.events[ci];
    let later_backward = flow.any_between(ci + 1..flow.events.len(), EventKind::Backward, |_| true);
    if !later_backward {
        return None;
    }
    for i in (0..ci).rev() {
        let e = &flow.events[i];
        match e.kind {
            EventKind::Backward | EventKind::Step => return None,
            EventKind::ZeroGrad
                if e.target.is_some() && !e.in_nested_loop() && e.dominates(clip) =>
            {
                return Some(i)
            }
            _ => {}
        }
    }
    None
}

/// `clip_grad_norm_(ps, float("inf"))` / `math.inf`: only measures the norm.
fn measures_only(clip: &Event) -> bool {
    let Some(call) = clip.call else { return false };
    let Some(max_norm) =
        helpers::argument(call, "max_norm", 1).or_else(|| helpers::argument(call, "clip_value", 1))
    else {
        return false;
    };
    match max_norm {
        Expr::Call(c) => c
            .arguments
            .args
            .first()
            .and_then(helpers::str_value)
            .is_some_and(|s| s.trim_start_matches(['+', '-']).eq_ignore_ascii_case("inf")),
        Expr::Attribute(a) => a.attr.as_str() == "inf",
        Expr::Name(n) => n.id.as_str() == "inf",
        _ => false,
    }
}

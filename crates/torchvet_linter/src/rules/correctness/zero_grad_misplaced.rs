use super::flow_helpers::{
    current_flow, delete_stmt, describe, framework_sync_guard, insert_after, movable, surely_clears,
};
use crate::checker::Checker;
use crate::fix::RawFix;
use ruff_python_ast::Stmt;
use ruff_text_size::Ranged;
use torchvet_semantic::flow::{Event, EventKind, Guard, LoopFlow};

crate::declare_rule! {
    /// ## What it does
    /// Checks for `optimizer.zero_grad()` placed where it wipes gradients the next step needs:
    /// between `loss.backward()` and `optimizer.step()`, or unconditionally every iteration of
    /// a gradient-accumulation loop whose step only runs every k iterations. A Lightning
    /// `training_step` under manual optimization (`self.optimizers()`,
    /// `self.manual_backward(...)`) is one iteration: Lightning calls it once per batch.
    ///
    /// ## Why is this bad?
    /// Between `backward()` and `step()`, `zero_grad()` erases the gradients just computed, so
    /// the step sees zeros (or `None`) and the parameters do not move. In an accumulation loop
    /// (`if (i + 1) % k == 0: optimizer.step()`), clearing at the top of every iteration
    /// throws away the first k - 1 micro-batches: only the last one contributes, which
    /// silently shrinks the effective batch. `zero_grad()` right after the step, or inside the
    /// accumulation branch, is correct and stays silent; so does `with
    /// accelerator.accumulate(model):`, whose optimizer skips clearing on non-update steps.
    ///
    /// ## Example
    /// ```python
    /// for step, batch in enumerate(loader):
    ///     optimizer.zero_grad()
    ///     (compute_loss(batch) / k).backward()
    ///     if (step + 1) % k == 0:
    ///         optimizer.step()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// for step, batch in enumerate(loader):
    ///     (compute_loss(batch) / k).backward()
    ///     if (step + 1) % k == 0:
    ///         optimizer.step()
    ///         optimizer.zero_grad()
    /// ```
    ///
    /// ## Fix safety
    /// The suggested fix moves the `zero_grad()` call right after the optimizer step (inside
    /// the same branch). It is unsafe: it changes which gradients the step sees, which is the
    /// point, but the surrounding code may rely on the old placement (for example gradients
    /// logged between the calls).
    ///
    /// ## References
    /// - [Zeroing out gradients in PyTorch](https://pytorch.org/tutorials/recipes/recipes/zeroing_out_gradients.html)
    /// - [RAE issue 67: zero_grad per micro-batch breaks accumulation](https://github.com/bytetriper/RAE/issues/67)
    /// - [ultralytics PR 11217](https://github.com/ultralytics/ultralytics/pull/11217)
    pub(crate) static ZERO_GRAD_MISPLACED = {
        name: "zero-grad-misplaced",
        code: "TV022",
        group: Correctness,
        severity: Critical,
        title: "zero_grad() wipes gradients the next step needs",
        autofix: Suggest,
        hooks: { stmt: check },
    };
}

fn check(checker: &mut Checker, stmt: &Stmt) {
    // A loop, or the body of a manual-optimization `training_step` (one iteration per call).
    let Some(flow) = current_flow(checker, stmt).or_else(|| checker.manual_step_hook_flow(stmt))
    else {
        return;
    };
    if !flow.has(EventKind::Backward) || !flow.has(EventKind::ZeroGrad) {
        return;
    }
    let mut reported: Vec<usize> = Vec::new();
    for (si, step) in flow.of_kind(EventKind::Step) {
        if step.in_nested_loop() || step.closure || step.in_accumulate_context() {
            continue;
        }
        let Some(opt) = step.target.as_ref().map(|o| o.key.as_str()) else {
            continue;
        };
        if let Some((zi, bi)) = between_backward_and_step(&flow, si, opt) {
            if reported.contains(&zi) {
                continue;
            }
            reported.push(zi);
            let (z, b) = (&flow.events[zi], &flow.events[bi]);
            let zt = describe(checker, z);
            let st = describe(checker, step);
            let bt = describe(checker, b);
            let message = format!("{zt} runs after {bt} and before {st}: it erases the gradients just computed, so the step sees zeros and the parameters do not move");
            report(
                checker,
                &flow,
                zi,
                si,
                message,
                b.site(),
                "the backward() whose gradients are erased",
            );
        } else if let Some(zi) =
            every_micro_step(&flow, si, opt).filter(|_| !framework_sync_guard(checker, step))
        {
            if reported.contains(&zi) {
                continue;
            }
            reported.push(zi);
            let z = &flow.events[zi];
            let zt = describe(checker, z);
            let st = describe(checker, step);
            let guard = match step.periodic_guard() {
                Some(Guard::If { test: Some(t), .. }) => {
                    format!("only runs when `{}`", checker.text(t.range()))
                }
                Some(Guard::AfterExit { test, .. }) => {
                    format!("is skipped while `{}`", checker.text(test.range()))
                }
                _ => "only runs every few iterations".to_string(),
            };
            let message = format!("{zt} runs every iteration but {st} {guard}: each micro-batch's gradients are wiped before the next one, so only the last micro-batch of each accumulation window reaches the step");
            report(
                checker,
                &flow,
                zi,
                si,
                message,
                step.site(),
                "the accumulation step that should see every micro-batch",
            );
        }
    }
}

/// (a) backward ... zero_grad ... step, with zero_grad running whenever the step does and no
/// backward between zero_grad and step: (zero_grad index, backward index).
fn between_backward_and_step(flow: &LoopFlow, si: usize, opt: &str) -> Option<(usize, usize)> {
    let step = &flow.events[si];
    for zi in (0..si).rev() {
        let z = &flow.events[zi];
        if z.kind == EventKind::Backward
            || (z.kind == EventKind::Step && z.target_key() == Some(opt))
        {
            return None;
        }
        // Only the same optimizer: a model's zero_grad() may be another model's (GAN).
        if z.kind != EventKind::ZeroGrad
            || z.target_key() != Some(opt)
            || z.in_nested_loop()
            || !z.dominates(step)
        {
            continue;
        }
        let bi = (0..zi)
            .rev()
            .find(|&bi| flow.events[bi].kind == EventKind::Backward)?;
        // A step of the same optimizer between backward and zero_grad consumed them already.
        if flow.any_between(bi..zi, EventKind::Step, |e| e.target_key() == Some(opt)) {
            return None;
        }
        return Some((zi, bi));
    }
    None
}

/// (b) the step runs under a periodic guard while zero_grad runs unconditionally every
/// iteration before a backward that is not under a periodic guard.
fn every_micro_step(flow: &LoopFlow, si: usize, opt: &str) -> Option<usize> {
    let step = &flow.events[si];
    let guard = step.periodic_guard()?;
    // The step's own backward runs under the same periodic guard (`if i % k == 0:
    // loss_g.backward(); opt_g.step()`): nothing is accumulated across iterations, and the
    // backwards outside it feed another optimizer (a GAN's discriminator).
    if flow.events[..si]
        .iter()
        .any(|b| b.kind == EventKind::Backward && b.periodic_guard().is_some_and(|g| g.same(guard)))
    {
        return None;
    }
    if accumulates_in_inner_loop(flow, opt) {
        return None;
    }
    flow.events.iter().enumerate().find_map(|(zi, z)| {
        let unconditional = !z.is_conditional() && !z.in_accumulate_context();
        let clears = surely_clears(flow, z, opt);
        // A backward of this iteration: one in a nested loop (here or in a helper) runs many
        // times per iteration, and its gradients are the inner loop's business.
        let later_backward = flow.events[zi..].iter().any(|b| {
            b.kind == EventKind::Backward
                && b.periodic_guard().is_none()
                && !b.in_accumulate_context()
                && !b.in_nested_loop()
        });
        (unconditional && clears && later_backward).then_some(zi)
    })
}

/// Is the accumulation done by a nested loop (here or in a helper the loop calls) that steps
/// the same optimizer itself? An epoch loop that clears at the top of each epoch, runs the
/// batch loop (`if (i + 1) % k == 0: step(); zero_grad()`) and then flushes the remainder
/// under `if n % k != 0: step()` is correct: the periodic step of the epoch level is the
/// flush of what the inner loop accumulated, not an accumulation window of epochs.
fn accumulates_in_inner_loop(flow: &LoopFlow, opt: &str) -> bool {
    flow.events
        .iter()
        .any(|e| e.kind == EventKind::Step && e.target_key() == Some(opt) && e.in_nested_loop())
}

fn report(
    checker: &mut Checker,
    flow: &LoopFlow,
    zi: usize,
    si: usize,
    message: String,
    related: ruff_text_size::TextRange,
    related_msg: &str,
) {
    let (z, step) = (&flow.events[zi], &flow.events[si]);
    let fix = move_after_step(checker, flow, z, step);
    let d = checker.report(z.site(), message);
    d.add_related(related, related_msg);
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

fn move_after_step(checker: &Checker, flow: &LoopFlow, z: &Event, step: &Event) -> Option<RawFix> {
    if !movable(checker, z) || step.via.is_some() {
        return None;
    }
    let delete = delete_stmt(checker, z.stmt)?;
    let key = step.target_key()?;
    // Another zero_grad of the same optimizer already follows the step: only delete.
    let already = flow.events.iter().any(|e| {
        e.kind == EventKind::ZeroGrad
            && e.range != z.range
            && e.target_key() == Some(key)
            && e.range.start() > step.range.start()
    });
    let mut edits = vec![delete];
    if !already {
        let text = checker.text(z.stmt.range());
        edits.push(insert_after(checker, step.stmt, text, None)?);
    }
    Some(RawFix::unsafe_edit(
        "Move the zero_grad() call right after the optimizer step",
        edits,
    ))
}

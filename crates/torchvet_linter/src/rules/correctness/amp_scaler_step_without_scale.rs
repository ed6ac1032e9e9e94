use super::flow_helpers::{current_flow, delete_stmt, describe, insert_after, movable};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::flow::{Event, EventKind, LoopFlow};

crate::declare_rule! {
    /// ## What it does
    /// Checks for `scaler.step(optimizer)` (a `GradScaler`) in a loop where the loss is
    /// backpropagated without `scaler.scale(loss)`, where `optimizer.step()` is also called,
    /// or where `scaler.update()` is never called.
    ///
    /// ## Why is this bad?
    /// `scaler.step` divides the gradients by the current loss scale before stepping. If the
    /// loss was not multiplied by that scale (`loss.backward()` instead of
    /// `scaler.scale(loss).backward()`), every update is divided by 65536 and the model barely
    /// trains (and fp16 gradients underflow). Calling `optimizer.step()` as well applies the
    /// update twice, the second time with scaled gradients. Without `scaler.update()` the scale
    /// never adapts: an overflow makes every later step skipped.
    ///
    /// ## Example
    /// ```python
    /// loss.backward()
    /// scaler.step(optimizer)
    /// scaler.update()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// scaler.scale(loss).backward()
    /// scaler.step(optimizer)
    /// scaler.update()
    /// ```
    ///
    /// ## Fix safety
    /// The fixes rewrite `loss.backward()` as `scaler.scale(loss).backward()`, delete the
    /// duplicate `optimizer.step()`, or insert `scaler.update()` after `scaler.step(...)`. They
    /// are safe: each restores the documented GradScaler sequence with the scaler the loop
    /// already uses. Steps and backwards in exclusive branches (`if use_amp: ... else:
    /// loss.backward(); optimizer.step()`) never run together and are not reported.
    ///
    /// ## References
    /// - [Automatic mixed precision examples](https://pytorch.org/docs/stable/notes/amp_examples.html)
    /// - [torch.amp.GradScaler](https://pytorch.org/docs/stable/amp.html#gradient-scaling)
    /// - [Lightning issue 4148](https://github.com/Lightning-AI/pytorch-lightning/issues/4148)
    pub(crate) static AMP_SCALER_STEP_WITHOUT_SCALE = {
        name: "amp-scaler-step-without-scale",
        code: "TV073",
        group: Correctness,
        severity: Critical,
        title: "GradScaler.step(opt) without scaler.scale(loss), or with opt.step() too",
        autofix: Yes,
        hooks: { stmt: check },
    };
}

fn check(checker: &mut Checker, stmt: &Stmt) {
    let Some(flow) = current_flow(checker, stmt) else {
        return;
    };
    let mut seen_scalers: Vec<String> = Vec::new();
    for (si, step) in flow.of_kind(EventKind::Step) {
        let Some(scaler) = step.scaler.as_ref() else {
            continue;
        };
        if step.in_nested_loop() {
            continue;
        }
        let sc = scaler.key.as_str();
        let first_for_scaler = !seen_scalers.iter().any(|k| k == sc);
        if first_for_scaler {
            seen_scalers.push(sc.to_string());
            unscaled_backward(checker, &flow, si, step);
        }
        double_step(checker, &flow, si, step);
        if first_for_scaler {
            missing_update(checker, &flow, step);
        }
    }
}

/// The backward()s before the scaler step, none of them scaled.
fn unscaled_backward(checker: &mut Checker, flow: &LoopFlow, si: usize, step: &Event) {
    // A plain backward in the branch that does not use the scaler (`if fp16: ... else:
    // loss.backward()`) never runs together with the scaler step.
    let backwards: Vec<&Event> = flow.events[..si]
        .iter()
        .filter(|e| e.kind == EventKind::Backward && !e.excludes(step))
        .collect();
    if backwards.is_empty()
        || backwards
            .iter()
            .any(|b| b.scaler.is_some() || b.method_form)
        || flow.has(EventKind::ScalerScale)
    {
        return;
    }
    let Some(scaler) = step.scaler.as_ref() else {
        return;
    };
    let sc = scaler.key.clone();
    for b in backwards {
        let Some(loss) = b.loss else { continue };
        let message = format!(
            "{} backpropagates the loss without `{sc}.scale(...)`, but {} divides the gradients by the loss scale: every update is shrunk by that factor (65536 by default) and small fp16 gradients underflow",
            describe(checker, b),
            describe(checker, step)
        );
        let fix = (b.via.is_none() && !scaler.helper_local && is_receiver(b, loss)).then(|| {
            RawEdit::replace(
                loss.range(),
                format!("{sc}.scale({})", checker.text(loss.range())),
            )
        });
        let ssite = step.site();
        let d = checker.report(b.site(), message);
        d.add_related(ssite, "the scaler step that expects scaled gradients");
        if let Some(edit) = fix {
            d.set_fix(RawFix::safe(
                format!("Use `{sc}.scale(...).backward()`"),
                vec![edit],
            ));
        }
    }
}

/// `loss.backward()`: the loss is the receiver of the call.
fn is_receiver(b: &Event, loss: &Expr) -> bool {
    b.call.is_some_and(|c| match &*c.func {
        Expr::Attribute(a) => a.value.range() == loss.range(),
        _ => false,
    })
}

/// `scaler.step(opt)` and `opt.step()` in the same iteration.
fn double_step(checker: &mut Checker, flow: &LoopFlow, si: usize, step: &Event) {
    let Some(opt) = step.target_key() else { return };
    for (oi, other) in flow.of_kind(EventKind::Step) {
        if oi == si
            || other.scaler.is_some()
            || other.closure
            || other.target_key() != Some(opt)
            || other.in_nested_loop()
            || other.excludes(step)
        {
            continue;
        }
        let message = format!(
            "{} and {} both update the parameters in the same iteration: the update is applied twice, once with gradients still multiplied by the loss scale",
            describe(checker, other),
            describe(checker, step)
        );
        let fix = movable(checker, other)
            .then(|| delete_stmt(checker, other.stmt))
            .flatten();
        let ssite = step.site();
        let d = checker.report(other.site(), message);
        d.add_related(ssite, "the scaler step that already updates this optimizer");
        if let Some(edit) = fix {
            d.set_fix(RawFix::safe(
                "Remove the duplicate optimizer step",
                vec![edit],
            ));
        }
    }
}

/// No `scaler.update()` in the loop (nor anywhere in the file on that scaler).
fn missing_update(checker: &mut Checker, flow: &LoopFlow, step: &Event) {
    let Some(scaler) = step.scaler.as_ref() else {
        return;
    };
    let sc = scaler.key.as_str();
    if flow
        .of_kind(EventKind::ScalerUpdate)
        .any(|(_, e)| e.scaler_key() == Some(sc))
    {
        return;
    }
    // An update elsewhere (an outer loop, a hook method): precision first. Also match the
    // attribute name alone (`self.scaler` updated as `trainer.scaler.update()`).
    let last = sc.rsplit('.').next().unwrap_or(sc);
    if memchr::memmem::find(
        checker.source.text.as_bytes(),
        format!("{last}.update(").as_bytes(),
    )
    .is_some()
    {
        return;
    }
    let message = format!(
        "{} runs but `{sc}.update()` is never called: the loss scale never adapts, so after one overflow every later step is skipped (or the scale stays needlessly small)",
        describe(checker, step)
    );
    let fix = (step.via.is_none() && !scaler.helper_local)
        .then(|| insert_after(checker, step.stmt, &format!("{sc}.update()"), None))
        .flatten();
    let scaled = flow
        .of_kind(EventKind::Backward)
        .find(|(_, b)| b.scaler_key() == Some(sc))
        .map(|(_, b)| b.site());
    let d = checker.report(step.site(), message);
    if let Some(r) = scaled {
        d.add_related(r, "the scaled backward() whose scale is never updated");
    }
    if let Some(edit) = fix {
        d.set_fix(RawFix::safe(
            format!("Call `{sc}.update()` after the step"),
            vec![edit],
        ));
    }
}

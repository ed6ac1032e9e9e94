use super::flow_helpers::{current_flow, describe, insert_before};
use crate::checker::Checker;
use crate::fix::RawFix;
use ruff_python_ast::Stmt;
use torchvet_semantic::flow::EventKind;

crate::declare_rule! {
    /// ## What it does
    /// Checks for gradient clipping (`torch.nn.utils.clip_grad_norm_` /
    /// `clip_grad_value_`) between `scaler.scale(loss).backward()` and
    /// `scaler.step(optimizer)` without `scaler.unscale_(optimizer)` before it.
    ///
    /// ## Why is this bad?
    /// With a `GradScaler`, the gradients after `backward()` are multiplied by the loss scale
    /// (65536 by default). Clipping them compares the *scaled* norm against `max_norm`, so the
    /// clip either fires on every step (shrinking the real gradients by the scale factor) or
    /// the threshold means nothing. `scaler.unscale_(optimizer)` first divides the gradients
    /// back; `scaler.step` then knows they are unscaled and does not divide twice.
    ///
    /// ## Example
    /// ```python
    /// scaler.scale(loss).backward()
    /// torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    /// scaler.step(optimizer)
    /// scaler.update()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// scaler.scale(loss).backward()
    /// scaler.unscale_(optimizer)
    /// torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    /// scaler.step(optimizer)
    /// scaler.update()
    /// ```
    ///
    /// ## Fix safety
    /// The fix inserts `scaler.unscale_(optimizer)` right before the clipping statement, with
    /// the scaler and optimizer of the `scaler.step(...)` call. It is safe: `scaler.step`
    /// skips its own unscaling for an optimizer already unscaled since the last `update()`.
    /// No fix is offered when `unscale_` is already called later in the iteration (calling it
    /// twice raises).
    ///
    /// ## References
    /// - [AMP examples: gradient clipping](https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping)
    /// - [torch.amp.GradScaler.unscale_](https://pytorch.org/docs/stable/amp.html#torch.amp.GradScaler.unscale_)
    /// - [Pytorch-UNet issue 468](https://github.com/milesial/Pytorch-UNet/issues/468)
    pub(crate) static CLIP_GRAD_NORM_AMP_WITHOUT_UNSCALE = {
        name: "clip-grad-norm-amp-without-unscale",
        code: "TV010",
        group: Correctness,
        severity: Critical,
        title: "Gradient clipping on GradScaler-scaled gradients without scaler.unscale_()",
        autofix: Yes,
        hooks: { stmt: check },
    };
}

fn check(checker: &mut Checker, stmt: &Stmt) {
    let Some(flow) = current_flow(checker, stmt) else {
        return;
    };
    if !flow.has(EventKind::ClipGrad) {
        return;
    }
    for (ci, clip) in flow.of_kind(EventKind::ClipGrad) {
        if clip.method_form || clip.in_nested_loop() {
            continue;
        }
        // The scaled backward before the clip and the scaler step after it.
        let Some((bi, backward)) = flow.events[..ci]
            .iter()
            .enumerate()
            .rev()
            .find(|(_, e)| e.kind == EventKind::Backward)
        else {
            continue;
        };
        let Some(scaler) = backward.scaler.as_ref() else {
            continue;
        };
        let Some((si, step)) = flow.events.iter().enumerate().skip(ci + 1).find(|(_, e)| {
            e.kind == EventKind::Step && e.scaler_key() == Some(scaler.key.as_str())
        }) else {
            continue;
        };
        if flow.any_between(bi..ci, EventKind::ScalerUnscale, |_| true) || step.in_nested_loop() {
            continue;
        }
        let Some(opt) = step.target.as_ref() else {
            continue;
        };
        let sc = scaler.key.as_str();
        let message = format!(
            "{} clips the gradients while they are still multiplied by `{sc}`'s loss scale: the threshold is compared with the scaled norm, so real gradients are clipped far too hard (or not at all); call `{sc}.unscale_({})` first",
            describe(checker, clip),
            opt.key
        );
        let later_unscale = flow.any_between(ci..si, EventKind::ScalerUnscale, |_| true);
        let fix =
            if clip.via.is_none() && !later_unscale && !opt.helper_local && !scaler.helper_local {
                insert_before(checker, clip.stmt, &format!("{sc}.unscale_({})", opt.key))
            } else {
                None
            };
        let (bsite, ssite) = (backward.site(), step.site());
        let d = checker.report(clip.site(), message);
        d.add_related(bsite, "the scaled backward() that produced these gradients");
        d.add_related(ssite, "the scaler step that consumes them");
        if let Some(edit) = fix {
            d.set_fix(RawFix::safe(
                format!("Insert `{sc}.unscale_({})` before clipping", opt.key),
                vec![edit],
            ));
        }
    }
}

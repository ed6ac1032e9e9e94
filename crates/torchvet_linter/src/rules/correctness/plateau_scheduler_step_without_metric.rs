use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::ExprCall;
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `scheduler.step()` without the monitored metric when `scheduler` was
    /// created by `torch.optim.lr_scheduler.ReduceLROnPlateau`.
    ///
    /// ## Why is this bad?
    /// `ReduceLROnPlateau.step(metrics)` needs the value it watches (usually the validation
    /// loss): it lowers the learning rate when that value stops improving. Without it the call
    /// fails with a `TypeError` at the end of the first epoch, often after hours of training;
    /// code that passes a constant or the epoch number instead never reduces the LR properly.
    ///
    /// ## Example
    /// ```python
    /// scheduler = ReduceLROnPlateau(optimizer)
    /// for epoch in range(epochs):
    ///     train_one_epoch()
    ///     scheduler.step()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// scheduler = ReduceLROnPlateau(optimizer)
    /// for epoch in range(epochs):
    ///     train_one_epoch()
    ///     scheduler.step(validate())
    /// ```
    ///
    /// ## Fix safety
    /// The fix is display only: it inserts a placeholder `val_loss` argument, since only the
    /// author knows which metric the scheduler should watch.
    ///
    /// ## References
    /// - [ReduceLROnPlateau](https://pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.ReduceLROnPlateau.html)
    /// - [pytorch-CycleGAN-and-pix2pix issue 495](https://github.com/junyanz/pytorch-CycleGAN-and-pix2pix/issues/495)
    /// - [pytorch-template issue 89](https://github.com/victoresque/pytorch-template/issues/89)
    pub(crate) static PLATEAU_SCHEDULER_STEP_WITHOUT_METRIC = {
        name: "plateau-scheduler-step-without-metric",
        code: "TV038",
        group: Correctness,
        severity: Critical,
        title: "ReduceLROnPlateau.step() called without the monitored metric",
        autofix: No,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    let Some(("step", receiver)) = helpers::method_call(call) else {
        return;
    };
    if !call.arguments.args.is_empty()
        || helpers::keyword(call, "metrics").is_some()
        || helpers::has_kwargs_splat(call)
    {
        return;
    }
    if !matches!(checker.kind_of(receiver), Kind::Scheduler(n) if n == "ReduceLROnPlateau") {
        return;
    }
    let created = checker.kind_origin(receiver);
    let text = checker.text(receiver.range());
    let insert_at = call.arguments.start() + ruff_text_size::TextSize::from(1);
    let edit = if call.arguments.keywords.is_empty() {
        RawEdit::insert(insert_at, "val_loss")
    } else {
        RawEdit::insert(insert_at, "val_loss, ")
    };
    checker
        .report(
            call.range(),
            format!("`{text}` is a ReduceLROnPlateau scheduler: `step()` needs the monitored metric (e.g. the validation loss) and raises a TypeError without it"),
        )
        .add_related_opt(created, "the scheduler is created here")
        .set_fix(RawFix::display_only("Pass the monitored metric", vec![edit]));
}

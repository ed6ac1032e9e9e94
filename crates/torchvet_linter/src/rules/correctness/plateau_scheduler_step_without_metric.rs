use super::helpers::LocalKinds;
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use std::cell::RefCell;
use torchvet_semantic::helpers;

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
        hooks: { stmt: check_stmt, call: check_call, end: clear },
    };
}

thread_local! {
    static KINDS: RefCell<LocalKinds<TextRange>> = RefCell::new(LocalKinds::default());
}

fn classify(checker: &Checker, _kinds: &LocalKinds<TextRange>, value: &Expr) -> Option<TextRange> {
    let Expr::Call(call) = value else { return None };
    let q = checker.resolve(&call.func)?;
    matches!(
        q.as_str(),
        "torch.optim.lr_scheduler.ReduceLROnPlateau"
            | "torch.optim.lr_scheduler.reduce_lr_on_plateau.ReduceLROnPlateau"
    )
    .then(|| value.range())
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    // The table only matters in files that can create such an object.
    if !checker.mentions("Plateau") {
        return;
    }
    KINDS.with_borrow_mut(|k| k.observe(checker, stmt, classify));
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
    let Some(created) = KINDS.with_borrow(|k| k.get(checker, receiver)) else {
        return;
    };
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
        .add_related(created, "the scheduler is created here")
        .set_fix(RawFix::display_only("Pass the monitored metric", vec![edit]));
}

fn clear(_checker: &mut Checker) {
    KINDS.with_borrow_mut(LocalKinds::clear);
}

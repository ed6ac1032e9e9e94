use super::helpers::{self, bindings};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers as sem;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `scheduler.step(epoch)` (an explicit epoch argument) and
    /// `scheduler.get_lr()` on learning-rate schedulers created in the same file with
    /// `torch.optim.lr_scheduler.*` (or a `transformers.get_*_schedule*` helper).
    /// `ReduceLROnPlateau.step(metric)` is the correct use of that scheduler and is not
    /// flagged.
    ///
    /// ## Why is this bad?
    /// Since torch 1.4 passing the epoch to `step()` is deprecated (it warns and switches the
    /// scheduler to a closed-form formula that does not compose with chained schedulers), and
    /// `get_lr()` called outside `step()` warns and can return a value that was never applied
    /// (e.g. the already-decayed rate at a step boundary). `get_last_lr()` returns the rate in
    /// effect.
    ///
    /// ## Example
    /// ```python
    /// sched.step(epoch)
    /// lr = sched.get_lr()[0]
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// sched.step()
    /// lr = sched.get_last_lr()[0]
    /// ```
    ///
    /// ## Fix safety
    /// `get_lr()` -> `get_last_lr()` is safe: it returns the learning rate the optimizer is
    /// using, which is what code reading the rate outside `step()` means. `step(epoch)` ->
    /// `step()` is unsafe: when the epoch argument skips or repeats epochs, the closed-form
    /// schedule differs from the recursive one.
    ///
    /// ## References
    /// - [How to adjust learning rate](https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate)
    /// - [LRScheduler.get_last_lr](https://pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.LRScheduler.html)
    pub(crate) static LR_SCHEDULER_DEPRECATED_CALLS = {
        name: "lr-scheduler-deprecated-calls",
        code: "TV103",
        group: DeprecatedApi,
        severity: Info,
        title: "scheduler.step(epoch) and scheduler.get_lr() outside step are deprecated (use step() / get_last_lr())",
        autofix: Yes,
        hooks: { stmt: check_assign, call: check_call, end: bindings::clear },
    };
}

const SCHEDULER: u8 = 1;
const PLATEAU: u8 = 2;

fn classify(checker: &Checker, expr: &Expr) -> Option<u8> {
    let Expr::Call(call) = expr else { return None };
    // Cheap filter before resolving: scheduler class or factory names.
    let last = match &*call.func {
        Expr::Name(n) => n.id.as_str(),
        Expr::Attribute(a) => a.attr.as_str(),
        _ => return None,
    };
    if !(last.contains("LR")
        || last.contains("Schedul")
        || last.contains("schedule")
        || last == "CosineAnnealingWarmRestarts")
    {
        return None;
    }
    let q = checker.resolve(&call.func)?;
    if let Some(class) = q.strip_prefix("torch.optim.lr_scheduler.") {
        return match class {
            "ReduceLROnPlateau" => Some(PLATEAU),
            "LRScheduler" | "_LRScheduler" => None,
            c if c.starts_with(|ch: char| ch.is_ascii_uppercase()) => Some(SCHEDULER),
            _ => None,
        };
    }
    let last = sem::last_segment(&q);
    (q.starts_with("transformers.") && last.starts_with("get_") && last.contains("schedule"))
        .then_some(SCHEDULER)
}

fn check_assign(checker: &mut Checker, stmt: &Stmt) {
    if !matches!(stmt, Stmt::Assign(_) | Stmt::AnnAssign(_)) {
        return;
    }
    bindings::record(checker, stmt, classify);
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    let Some((method, receiver)) = sem::method_call(call) else {
        return;
    };
    if !matches!(method, "step" | "get_lr") {
        return;
    }
    let args = &call.arguments;
    if method == "step" && args.is_empty() {
        return;
    }
    if method == "get_lr" && !args.is_empty() {
        return;
    }
    if bindings::kind_of(checker, receiver) != Some(SCHEDULER) || !helpers::active(checker, 1, 4) {
        return;
    }
    let Expr::Attribute(func) = &*call.func else {
        return;
    };
    let recv = checker.text(receiver.range()).to_string();
    if method == "get_lr" {
        checker
            .report(
                call.func.range(),
                format!("`{recv}.get_lr()` outside `step()` is deprecated since torch 1.4 (warns, and may return a rate that is not in effect): use `{recv}.get_last_lr()`"),
            )
            .set_fix(RawFix::safe(
                "Use `get_last_lr()`",
                vec![RawEdit::replace(func.attr.range, "get_last_lr")],
            ));
        return;
    }
    let epoch_arg = args.args.len() + args.keywords.len() == 1
        && (args.args.len() == 1 || args.find_keyword("epoch").is_some());
    if !epoch_arg || sem::has_args_splat(call) || sem::has_kwargs_splat(call) {
        return;
    }
    let arg = checker.text(args.inner_range()).trim().to_string();
    let d = checker.report(
        call.func.range(),
        format!("`{recv}.step({arg})`: passing the epoch is deprecated since torch 1.4 (warns; uses the closed-form schedule): call `{recv}.step()` once per epoch"),
    );
    if !arg.contains('#') {
        d.set_fix(RawFix::unsafe_edit(
            "Call `step()` without the epoch",
            vec![RawEdit::delete(args.inner_range())],
        ));
    }
}

use super::helpers::LocalKinds;
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use std::cell::RefCell;

crate::declare_rule! {
    /// ## What it does
    /// Checks for a loss class bound to a name without being instantiated
    /// (`criterion = nn.CrossEntropyLoss`) and then called with tensors (`criterion(out, y)`).
    /// A loss class is a torch or library loss (`monai.losses.DiceLoss`), or a loss class of
    /// the project, defined in any file (an `nn.Module` that computes a loss, or a subclass of
    /// a loss), as the project model knows it.
    ///
    /// ## Why is this bad?
    /// Calling the class constructs a new loss *module*, passing the tensors as constructor
    /// arguments (`weight`, `size_average`, `reduce`, ...). No loss is computed; the code fails
    /// later (`backward` on a module) or, worse, a tensor is silently taken as a class weight.
    ///
    /// ## Example
    /// ```python
    /// criterion = nn.CrossEntropyLoss
    /// loss = criterion(out, y)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// criterion = nn.CrossEntropyLoss()
    /// loss = criterion(out, y)
    /// ```
    ///
    /// ## Fix safety
    /// The fix adds `()` at the assignment. The original code cannot compute a loss, so the
    /// fix is safe.
    ///
    /// ## References
    /// - [torch.nn.MSELoss](https://pytorch.org/docs/stable/generated/torch.nn.MSELoss.html)
    /// - [torch.nn.CrossEntropyLoss](https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html)
    pub(crate) static LOSS_CLASS_NOT_INSTANTIATED = {
        name: "loss-class-not-instantiated",
        code: "TV076",
        group: Correctness,
        severity: Critical,
        title: "Loss class bound without instantiation (crit = nn.CrossEntropyLoss) then called with tensors",
        autofix: Yes,
        hooks: { stmt: check_stmt, call: check_call, end: clear },
    };
}

thread_local! {
    static KINDS: RefCell<LocalKinds<TextRange>> = RefCell::new(LocalKinds::default());
}

fn classify(checker: &Checker, _kinds: &LocalKinds<TextRange>, value: &Expr) -> Option<TextRange> {
    if !matches!(value, Expr::Attribute(_) | Expr::Name(_)) {
        return None;
    }
    checker.is_loss_class(value).then(|| value.range())
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    KINDS.with_borrow_mut(|k| k.observe(checker, stmt, classify));
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    if !matches!(&*call.func, Expr::Name(_) | Expr::Attribute(_)) || call.arguments.args.len() < 2 {
        return;
    }
    let Some(assigned) = KINDS.with_borrow(|k| k.get(checker, &call.func)) else {
        return;
    };
    // Report once per assignment.
    KINDS.with_borrow_mut(|k| k.assign(checker, &call.func, None));
    let class = checker.text(assigned);
    let bound = checker.text(call.func.range());
    checker
        .report(
            assigned,
            format!("`{class}` is bound to `{bound}` without `()`: `{bound}(...)` then constructs a new loss module from the tensors instead of computing a loss"),
        )
        .add_related(call.range(), "called with tensors here")
        .set_fix(RawFix::safe(
            format!("Instantiate it: `{class}()`"),
            vec![RawEdit::insert(assigned.end(), "()")],
        ));
}

fn clear(_checker: &mut Checker) {
    KINDS.with_borrow_mut(LocalKinds::clear);
}

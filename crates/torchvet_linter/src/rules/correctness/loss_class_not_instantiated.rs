use super::helpers::{file_key, self_assignments};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use rustc_hash::FxHashSet;
use std::cell::RefCell;
use torchvet_semantic::helpers;
use torchvet_semantic::reaching::Def;

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
        hooks: { call: check_call, end: clear },
    };
}

thread_local! {
    /// The assignments already reported in the current file (one finding per assignment).
    static REPORTED: RefCell<((usize, usize), FxHashSet<TextSize>)> =
        RefCell::new(((0, 0), FxHashSet::default()));
}

/// A loss class itself (`nn.CrossEntropyLoss`, not an instance): its range.
fn loss_class(checker: &Checker, value: &Expr) -> Option<TextRange> {
    if !matches!(value, Expr::Attribute(_) | Expr::Name(_)) {
        return None;
    }
    checker.is_loss_class(value).then(|| value.range())
}

/// Where the called name or `self.<attr>` was bound to a loss class: the one assignment of
/// the name that reaches the call, or, for an attribute, every assignment of `self.<attr>`
/// in the class's methods (all of them loss classes; the first is reported).
fn bound_loss_class(checker: &Checker, func: &Expr) -> Option<TextRange> {
    match func {
        Expr::Name(n) => match checker
            .reaching_defs(n.id.as_str(), func.start())?
            .as_slice()
        {
            [Def::Value(v)] => loss_class(checker, v),
            _ => None,
        },
        Expr::Attribute(_) => {
            let attr = helpers::self_attribute(func)?;
            let class = checker.frame().method_of?;
            let mut first = None;
            for s in &class.def.body {
                let Stmt::FunctionDef(f) = s else { continue };
                for (x, value, _) in self_assignments(&f.body) {
                    if x != attr {
                        continue;
                    }
                    let range = loss_class(checker, value)?;
                    first.get_or_insert(range);
                }
            }
            first
        }
        _ => None,
    }
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    if !matches!(&*call.func, Expr::Name(_) | Expr::Attribute(_)) || call.arguments.args.len() < 2 {
        return;
    }
    let Some(assigned) = bound_loss_class(checker, &call.func) else {
        return;
    };
    // Report once per assignment.
    let key = file_key(checker);
    let first = REPORTED.with_borrow_mut(|(file, seen)| {
        if *file != key {
            *file = key;
            seen.clear();
        }
        seen.insert(assigned.start())
    });
    if !first {
        return;
    }
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
    REPORTED.with_borrow_mut(|(file, seen)| {
        *file = (0, 0);
        seen.clear();
    });
}

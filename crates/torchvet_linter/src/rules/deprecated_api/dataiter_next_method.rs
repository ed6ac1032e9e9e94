use super::helpers::{self, bindings};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers as sem;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `.next()` called on an iterator made with `iter(...)` or `.__iter__()`:
    /// `iter(loader).next()`, or `it.next()` / `self.it.next()` after `it = iter(loader)`.
    ///
    /// ## Why is this bad?
    /// Python 3 iterators have no `.next()` method; DataLoader iterators kept a Python 2 style
    /// alias until torch 1.13 removed it. The call now fails with `AttributeError:
    /// '_MultiProcessingDataLoaderIter' object has no attribute 'next'`, typically on the
    /// first batch of a tutorial or training script.
    ///
    /// ## Example
    /// ```python
    /// dataiter = iter(trainloader)
    /// images, labels = dataiter.next()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// dataiter = iter(trainloader)
    /// images, labels = next(dataiter)
    /// ```
    ///
    /// ## Fix safety
    /// The fix rewrites `x.next()` to `next(x)`, the built-in that calls the iterator's
    /// `__next__`, which is what the removed alias did: safe.
    ///
    /// ## References
    /// - [torch.utils.data](https://pytorch.org/docs/stable/data.html)
    /// - [Python built-in next()](https://docs.python.org/3/library/functions.html#next)
    /// - [DeepSpeedExamples#222](https://github.com/deepspeedai/DeepSpeedExamples/issues/222)
    pub(crate) static DATAITER_NEXT_METHOD = {
        name: "dataiter-next-method",
        code: "TV011",
        group: DeprecatedApi,
        severity: Critical,
        title: "iter(loader).next() / dataiter.next() (AttributeError since torch 1.13)",
        autofix: Yes,
        hooks: { stmt: check_assign, call: check_call, end: bindings::clear },
    };
}

const ITERATOR: u8 = 1;

/// `iter(x)` (the builtin) or `x.__iter__()`.
fn is_iter_call(checker: &Checker, expr: &Expr) -> bool {
    let Expr::Call(call) = expr else { return false };
    match &*call.func {
        Expr::Name(n) => {
            n.id.as_str() == "iter"
                && call.arguments.args.len() == 1
                && checker.resolve(&call.func).is_none()
        }
        Expr::Attribute(a) => a.attr.as_str() == "__iter__" && call.arguments.is_empty(),
        _ => false,
    }
}

fn check_assign(checker: &mut Checker, stmt: &Stmt) {
    if !matches!(stmt, Stmt::Assign(_) | Stmt::AnnAssign(_)) {
        return;
    }
    bindings::record(checker, stmt, |c, v| is_iter_call(c, v).then_some(ITERATOR));
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    let Some(("next", receiver)) = sem::method_call(call) else {
        return;
    };
    if !call.arguments.is_empty() {
        return;
    }
    let is_iterator =
        is_iter_call(checker, receiver) || bindings::kind_of(checker, receiver) == Some(ITERATOR);
    if !is_iterator || !helpers::active(checker, 1, 13) {
        return;
    }
    // TensorFlow's dataset iterators still have `.next()`: a TensorFlow notebook that never
    // names torch iterates no DataLoader.
    if checker.mentions("tensorflow") && !checker.mentions("torch") {
        return;
    }
    let recv = checker.text(receiver.range()).to_string();
    checker
        .report(
            call.range(),
            format!("`{recv}.next()` raises AttributeError: iterators have no `.next()` method (DataLoader iterators lost it in torch 1.13); use `next({recv})`"),
        )
        .set_fix(RawFix::safe(
            format!("Replace with `next({recv})`"),
            vec![RawEdit::replace(call.range(), format!("next({recv})"))],
        ));
}

#[cfg(test)]
mod tests {
    use crate::rules::performance::helpers::count_findings;

    #[test]
    fn tensorflow_iterators_keep_next() {
        let rule = "dataiter-next-method";
        let tf = "import tensorflow as tf\nds = tf.data.Dataset.from_tensor_slices(x).batch(4)\nit = iter(ds)\nbatch = it.next()\n";
        assert_eq!(count_findings(rule, "tf_cycle_gan.py", tf), 0);
        let torch = tf.replace(
            "import tensorflow as tf",
            "import tensorflow as tf\nimport torch",
        );
        assert_eq!(count_findings(rule, "mixed.py", &torch), 1);
    }
}

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
    let is_iterator = is_iter_call(checker, receiver)
        || bindings::kind_of(checker, receiver) == Some(ITERATOR)
        || element_of_iterators(checker, receiver);
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

/// An element of a list of iterators: `its[i]`, or the loop variable of `for it in its` /
/// `for i, it in enumerate(its)`, where the file fills `its` (a name or `self.<attr>`) only
/// with `iter(...)` calls (`its.append(iter(loader))`, `its[i] = iter(loader)`, `its =
/// [iter(l) for l in loaders]`). A balanced batch drawn from several loaders keeps one
/// iterator per loader this way.
fn element_of_iterators(checker: &Checker, receiver: &Expr) -> bool {
    let container = match receiver {
        Expr::Subscript(s) => &*s.value,
        Expr::Name(n) => {
            // The innermost enclosing `for` that binds the name.
            let Some(iter) = checker.frame().loops.iter().rev().find_map(|l| match l {
                Stmt::For(f) => sem::loop_element_source(&f.target, &f.iter, n.id.as_str()),
                _ => None,
            }) else {
                return false;
            };
            iter
        }
        _ => return false,
    };
    let Some(key) = sem::dotted(container) else {
        return false;
    };
    let mut fills = 0;
    let mut other = false;
    for_each_stmt_deep(&checker.module().body, &mut |st| {
        if other {
            return;
        }
        match st {
            Stmt::Expr(e) => {
                if let Expr::Call(c) = &*e.value {
                    if let Some((m, recv)) = sem::method_call(c) {
                        if sem::dotted(recv).as_deref() == Some(key.as_str())
                            && matches!(m, "append" | "insert" | "extend")
                        {
                            match (m, c.arguments.args.last()) {
                                ("append" | "insert", Some(a)) if is_iter_call(checker, a) => {
                                    fills += 1
                                }
                                _ => other = true,
                            }
                        }
                    }
                }
            }
            Stmt::Assign(a) => {
                for t in &a.targets {
                    let target = match t {
                        Expr::Subscript(s) => &*s.value,
                        t => t,
                    };
                    if sem::dotted(target).as_deref() != Some(key.as_str()) {
                        continue;
                    }
                    let iterators = match (t, &*a.value) {
                        (Expr::Subscript(_), v) => is_iter_call(checker, v),
                        (_, Expr::List(l)) => l.elts.iter().all(|e| is_iter_call(checker, e)),
                        (_, Expr::ListComp(c)) => is_iter_call(checker, &c.elt),
                        _ => false,
                    };
                    if iterators {
                        fills += 1;
                    } else if !matches!(&*a.value, Expr::List(l) if l.elts.is_empty()) {
                        // `its = []` starts the list; anything else may hold other objects.
                        other = true;
                    }
                }
            }
            _ => {}
        }
    });
    fills > 0 && !other
}

/// Every statement of a suite, nested definitions included.
fn for_each_stmt_deep<'a>(body: &'a [Stmt], f: &mut dyn FnMut(&'a Stmt)) {
    sem::for_each_own_stmt(body, &mut |st| {
        f(st);
        match st {
            Stmt::FunctionDef(d) => for_each_stmt_deep(&d.body, &mut *f),
            Stmt::ClassDef(c) => for_each_stmt_deep(&c.body, &mut *f),
            _ => {}
        }
    });
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

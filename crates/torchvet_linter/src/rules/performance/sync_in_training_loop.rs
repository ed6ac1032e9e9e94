use crate::checker::Checker;
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;
use torchvet_semantic::modes::{calls_in, is_backward, loop_is_training};
use torchvet_semantic::regions::loop_body;

crate::declare_rule! {
    /// ## What it does
    /// Checks for host-device synchronisation executed on every step of a training loop:
    /// `loss.item()`, `.cpu()`, `.tolist()`, `.numpy()`, or `float(loss)` / `int(t)` on a
    /// tensor, outside any `if step % N == 0` logging condition.
    ///
    /// ## Why is this bad?
    /// CUDA work is queued asynchronously: while the GPU runs one step, Python can already
    /// queue the next. Reading a value back to the host makes the CPU wait until every queued
    /// kernel has finished, so the GPU idles while Python prepares the next batch. Done on
    /// every step, this can cost a noticeable share of the training time. Keeping running
    /// totals on the device (`running += loss.detach()`) and reading them every N steps
    /// avoids the stall.
    ///
    /// ## Example
    /// ```python
    /// for x, y in loader:
    ///     loss = criterion(model(x), y)
    ///     loss.backward()
    ///     optimizer.step()
    ///     losses.append(loss.item())
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// for step, (x, y) in enumerate(loader):
    ///     loss = criterion(model(x), y)
    ///     loss.backward()
    ///     optimizer.step()
    ///     running += loss.detach()
    ///     if step % 100 == 0:
    ///         log(running.item() / 100)
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: moving the read-out under a logging condition changes what is
    /// logged, so the change is left to the author.
    ///
    /// ## References
    /// - [Performance tuning guide: avoid unnecessary CPU-GPU synchronization](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#avoid-unnecessary-cpu-gpu-synchronization)
    /// - [karpathy/nanoGPT train.py](https://github.com/karpathy/nanoGPT/blob/master/train.py)
    pub(crate) static SYNC_IN_TRAINING_LOOP = {
        name: "sync-in-training-loop",
        code: "TV108",
        group: Performance,
        severity: Info,
        title: "Per-step host-device synchronisation in the training loop",
        autofix: Suggest,
        hooks: { call: check_call, end: finish },
    };
}

/// The value a call synchronises, and how it is written (`.item()`, `float()`).
fn sync_target(call: &ExprCall) -> Option<(&Expr, &'static str, bool)> {
    if let Some((method, recv)) = helpers::method_call(call) {
        if !call.arguments.is_empty() {
            return None;
        }
        return match method {
            "item" => Some((recv, "item()", true)),
            "cpu" => Some((recv, "cpu()", false)),
            "tolist" => Some((recv, "tolist()", false)),
            "numpy" => Some((recv, "numpy()", false)),
            _ => None,
        };
    }
    let name = helpers::name_of(&call.func)?;
    let [arg] = call.arguments.args.as_ref() else {
        return None;
    };
    match name {
        "float" => Some((arg, "float()", false)),
        "int" => Some((arg, "int()", false)),
        _ => None,
    }
}

thread_local! {
    static LAST_STMT: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Inside a comprehension or generator expression (its own loop, not the training step)?
fn in_loop_or_comprehension_expr(checker: &Checker) -> bool {
    checker.expr_stack().iter().any(|e| {
        matches!(
            e,
            Expr::ListComp(_) | Expr::SetComp(_) | Expr::DictComp(_) | Expr::Generator(_)
        )
    })
}

fn finish(_checker: &mut Checker) {
    LAST_STMT.set(0);
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    let Some((value, how, any_receiver)) = sync_target(call) else {
        return;
    };
    if !checker.flow_relevant()
        // A CPU-only script has no device to wait for.
        || !(checker.mentions("cuda") || checker.mentions("device"))
        || checker.is_test_file()
        || checker.in_no_grad()
        || in_loop_or_comprehension_expr(checker)
    {
        return;
    }
    if matches!(&*call.func, Expr::Name(n) if checker.scopes.current().is_some_and(|s| s.binds_locally(n.id.as_str())))
    {
        return;
    }
    let Some(&inner) = checker.frame().loops.last() else {
        return;
    };
    // Only the innermost statement chain without conditions runs every iteration.
    let stack = checker.stmt_stack();
    let Some(at) = stack.iter().position(|s| std::ptr::eq(*s, inner)) else {
        return;
    };
    if stack[at + 1..].iter().any(|s| {
        matches!(
            s,
            Stmt::If(_) | Stmt::Match(_) | Stmt::While(_) | Stmt::For(_)
        )
    }) {
        return;
    }
    // One report per chain (`loss.detach().cpu().numpy()`): the innermost sync.
    if let Expr::Call(inner_call) = value {
        if sync_target(inner_call).is_some() {
            return;
        }
    }
    if !loop_is_training(checker, inner) {
        return;
    }
    let body = loop_body(inner);
    let tensorish = any_receiver
        || checker.kind_of(value) == Kind::Tensor
        || checker.graph_of(value, body, inner.range()).is_some()
        || matches!(value, Expr::Call(c) if matches!(helpers::method_call(c), Some(("detach", _))));
    if !tensorish {
        return;
    }
    // `model.cpu()` moves a module, it does not read a value back.
    if how == "cpu()" && checker.kind_of(value) == Kind::Module {
        return;
    }
    let backward = calls_in(body)
        .into_iter()
        .find(|c| is_backward(checker, c))
        .map(Ranged::range);
    // A value the loop needs now (early stopping: `if abs(cur - prev) < tol: break`) cannot
    // be deferred.
    if feeds_a_condition(checker, body) {
        return;
    }
    // One finding per iteration: once the first read has waited for the device, the next
    // ones in the same step cost little.
    let loop_key = inner.start().to_u32() + 1;
    if LAST_STMT.get() == loop_key {
        return;
    }
    LAST_STMT.set(loop_key);
    let text = checker.text(call.range());
    let d = checker.report(
        call.range(),
        format!(
            "`{text}` copies a value from the device to the host on every training step: the CPU waits for all queued GPU work to finish before it can queue the next step; keep running values on the device (`.detach()`) and read them every N steps"
        ),
    );
    if let Some(b) = backward {
        d.add_related(b, "the backward pass of each step");
    }
}

/// Is the value read by the current statement tested by a condition of the loop: the
/// statement is itself an `if`/`while`, or it assigns a name that an `if` of the loop body
/// tests?
fn feeds_a_condition(checker: &Checker, body: &[Stmt]) -> bool {
    let Some(stmt) = checker.current_stmt() else {
        return false;
    };
    let target = match stmt {
        Stmt::If(_) | Stmt::While(_) => return true,
        Stmt::Assign(a) => match &a.targets[..] {
            [Expr::Name(n)] => n.id.as_str(),
            _ => return false,
        },
        Stmt::AnnAssign(a) => match &*a.target {
            Expr::Name(n) => n.id.as_str(),
            _ => return false,
        },
        _ => return false,
    };
    let mut tested = false;
    walk_ifs(body, &mut |test| {
        let mut names = Vec::new();
        collect_names(test, &mut names);
        tested |= names.contains(&target);
    });
    tested
}

fn walk_ifs<'a>(body: &'a [Stmt], f: &mut impl FnMut(&'a Expr)) {
    for s in body {
        match s {
            Stmt::If(i) => {
                f(&i.test);
                walk_ifs(&i.body, f);
                for c in &i.elif_else_clauses {
                    if let Some(t) = &c.test {
                        f(t);
                    }
                    walk_ifs(&c.body, f);
                }
            }
            Stmt::While(w) => {
                f(&w.test);
                walk_ifs(&w.body, f);
            }
            Stmt::With(w) => walk_ifs(&w.body, f),
            Stmt::Try(t) => walk_ifs(&t.body, f),
            _ => {}
        }
    }
}

fn collect_names<'a>(expr: &'a Expr, out: &mut Vec<&'a str>) {
    use ruff_python_ast::visitor::{walk_expr, Visitor};
    struct Names<'a, 'o>(&'o mut Vec<&'a str>);
    impl<'a> Visitor<'a> for Names<'a, '_> {
        fn visit_expr(&mut self, e: &'a Expr) {
            if let Expr::Name(n) = e {
                self.0.push(n.id.as_str());
            }
            walk_expr(self, e);
        }
    }
    Names(out).visit_expr(expr);
}

use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

crate::declare_rule! {
    /// ## What it does
    /// Checks for availability probes such as `torch.cuda.is_available` that are tested for
    /// truth without being called.
    ///
    /// ## Why is this bad?
    /// Without the parentheses the expression is the function object itself, and a function
    /// object is always truthy. The test therefore always passes: on a machine without a GPU
    /// the code takes the CUDA branch anyway and fails later with "Torch not compiled with
    /// CUDA enabled" or "no CUDA GPUs are available".
    ///
    /// ## Example
    /// ```python
    /// device = "cuda" if torch.cuda.is_available else "cpu"
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// device = "cuda" if torch.cuda.is_available() else "cpu"
    /// ```
    ///
    /// ## Fix safety
    /// The fix adds the missing `()`. The original test can only ever be true, so no working
    /// program relies on it; the fix is safe.
    ///
    /// ## References
    /// - [torch.cuda.is_available](https://pytorch.org/docs/stable/generated/torch.cuda.is_available.html)
    /// - [DeepSpeed PR 2661](https://github.com/deepspeedai/DeepSpeed/pull/2661)
    pub(crate) static CUDA_IS_AVAILABLE_NOT_CALLED = {
        name: "cuda-is-available-not-called",
        code: "TV030",
        group: Correctness,
        severity: Critical,
        title: "torch.cuda.is_available used without () (a function object is always truthy)",
        autofix: Yes,
        hooks: { expr: check_expr, expr_on: crate::registry::ExprKinds::ATTRIBUTE },
    };
}

const PROBES: &[&str] = &[
    "torch.cuda.is_available",
    "torch.cuda.is_bf16_supported",
    "torch.cuda.is_initialized",
    "torch.backends.mps.is_available",
    "torch.backends.mps.is_built",
    "torch.backends.cudnn.is_available",
    "torch.distributed.is_available",
    "torch.distributed.is_initialized",
    "torch.distributed.is_torchelastic_launched",
];

fn is_same(a: &Expr, b: &Expr) -> bool {
    a.range() == b.range()
}

/// Is `expr` (a child of the current statement or of `parent`) evaluated for its truth?
fn in_boolean_context(checker: &Checker, expr: &Expr) -> bool {
    if let Some(parent) = checker.parent_expr() {
        return match parent {
            Expr::If(e) => is_same(&e.test, expr),
            Expr::BoolOp(_) => true,
            Expr::UnaryOp(u) => matches!(u.op, ruff_python_ast::UnaryOp::Not),
            Expr::Call(c) => {
                c.arguments.args.len() == 1
                    && is_same(&c.arguments.args[0], expr)
                    && matches!(&*c.func, Expr::Name(n) if n.id.as_str() == "bool")
                    && checker.scopes.lookup("bool").is_none()
            }
            _ => false,
        };
    }
    match checker.current_stmt() {
        Some(Stmt::If(s)) => {
            is_same(&s.test, expr)
                || s.elif_else_clauses
                    .iter()
                    .any(|c| c.test.as_ref().is_some_and(|t| is_same(t, expr)))
        }
        Some(Stmt::While(s)) => is_same(&s.test, expr),
        Some(Stmt::Assert(s)) => is_same(&s.test, expr),
        _ => false,
    }
}

fn check_expr(checker: &mut Checker, expr: &Expr) {
    let Expr::Attribute(attr) = expr else { return };
    if !matches!(
        attr.attr.as_str(),
        "is_available"
            | "is_bf16_supported"
            | "is_initialized"
            | "is_built"
            | "is_torchelastic_launched"
    ) {
        return;
    }
    let Some(q) = checker.resolve(expr) else {
        return;
    };
    if !PROBES.contains(&q.as_str()) || !in_boolean_context(checker, expr) {
        return;
    }
    let text = checker.text(expr.range());
    checker
        .report(
            expr.range(),
            format!("`{text}` is a function and is never called here: a function object is always truthy, so this test passes even without the device or feature"),
        )
        .set_fix(RawFix::safe(format!("Call it: `{text}()`"), vec![RawEdit::insert(expr.end(), "()")]));
}

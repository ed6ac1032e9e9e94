use super::helpers;
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers as sem;

crate::declare_rule! {
    /// ## What it does
    /// Checks for the linear-algebra functions deprecated in torch 1.9 and since removed
    /// (`torch.solve`, `torch.symeig`, `torch.eig`, `torch.lstsq`, `torch.matrix_rank`), the
    /// deprecated ones that still exist (`torch.qr`, `torch.cholesky`, `torch.chain_matmul`,
    /// which warn when called, and `torch.lu`, `torch.lu_solve`, `torch.triangular_solve`,
    /// `torch.svd`, `torch.norm`, `torch.ger`) and `torch.range`: calls, references and
    /// `from torch import ...`. The Tensor methods `.symeig()` and `.lstsq()` and
    /// `.eig(eigenvectors=...)` are checked too.
    ///
    /// ## Why is this bad?
    /// The removed functions fail on torch 2.0 and later: the releases that still keep a stub
    /// raise `RuntimeError: This function was deprecated since version 1.9 and is now
    /// removed`, later ones have no such attribute (`AttributeError`). The deprecated ones
    /// still work, but their documentation says they will be removed in a future release and
    /// some warn on every run; their `torch.linalg` replacements have clearer semantics (and
    /// `torch.range` includes its end point and returns a floating tensor, unlike Python's
    /// `range` and `torch.arange`).
    ///
    /// ## Example
    /// ```python
    /// X = torch.solve(B, A).solution
    /// L = torch.cholesky(A)
    /// r = torch.range(0, 9)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// X = torch.linalg.solve(A, B)
    /// L = torch.linalg.cholesky(A)
    /// r = torch.arange(0, 10, dtype=torch.float32)
    /// ```
    ///
    /// ## Fix safety
    /// Mechanical rewrites are safe: `torch.ger` -> `torch.outer`; `torch.cholesky(A)` ->
    /// `torch.linalg.cholesky(A)`, and `upper=True` (keyword or positional) ->
    /// `torch.linalg.cholesky(A).mH`; `torch.qr(A)` -> `torch.linalg.qr(A)`, with
    /// `some=False` -> `mode="complete"` and `some=True` dropped;
    /// `torch.chain_matmul(a, b, c, out=o)` -> `torch.linalg.multi_dot([a, b, c], out=o)`.
    /// `torch.range(a, b, s)` becomes `torch.arange(a, b + s, s)` (integer literals computed,
    /// `n - 1` simplified to `n`): safe only with integer-literal bounds and a `dtype=`,
    /// unsafe otherwise because `torch.range` returns the default floating dtype, `torch.arange`
    /// of integers returns int64, and float bounds would include other points. Non-literal
    /// `upper`/`some` and non-integer steps get no fix. `solve` (swapped arguments, different
    /// result), `symeig`, `eig`, `lstsq`, `lu*`, `svd`, `norm` and `matrix_rank` need a manual
    /// rewrite: no fix. The replacements are newer than the old functions (`torch.outer` and
    /// `torch.linalg` since torch 1.8, `multi_dot` 1.9, `.mH` 1.11): when the project declares
    /// or documents an older torch (`torch>=1.7`, "PyTorch 1.7+" in its README), the fix is
    /// unsafe.
    ///
    /// ## References
    /// - [torch.linalg](https://pytorch.org/docs/stable/linalg.html)
    /// - [Removal of torch.solve (pytorch#70986)](https://github.com/pytorch/pytorch/pull/70986)
    /// - [torch.range](https://pytorch.org/docs/stable/generated/torch.range.html)
    pub(crate) static DEPRECATED_LINALG_AND_RANGE = {
        name: "deprecated-linalg-and-range",
        code: "TV065",
        group: DeprecatedApi,
        severity: Warning,
        title: "Removed/deprecated torch linear-algebra functions and torch.range",
        autofix: Yes,
        torchfix: ["TOR001", "TOR004", "TOR101", "TOR103"],
        hooks: { stmt: check_import, expr: check_reference, expr_on: crate::registry::ExprKinds::REFERENCE, end: helpers::bindings::clear },
    };
}

const NAMES: &[&str] = &[
    "solve",
    "symeig",
    "eig",
    "lstsq",
    "matrix_rank",
    "qr",
    "cholesky",
    "chain_matmul",
    "lu",
    "lu_solve",
    "triangular_solve",
    "svd",
    "norm",
    "ger",
    "range",
];

/// Removed (true: gone or an error-raising stub from torch 2.0 on, per the torch docs and
/// the removal PRs) or deprecated and still working (false: `qr`, `cholesky` and
/// `chain_matmul` warn; the others are documented as deprecated), with the replacement to
/// mention.
fn deprecated(q: &str) -> Option<(bool, &'static str)> {
    let name = q.strip_prefix("torch.")?;
    Some(match name {
        "solve" => (true, "torch.linalg.solve(A, B)"),
        "symeig" => (true, "torch.linalg.eigh"),
        "eig" => (true, "torch.linalg.eig"),
        "lstsq" => (true, "torch.linalg.lstsq(A, B)"),
        "matrix_rank" => (true, "torch.linalg.matrix_rank"),
        "qr" => (false, "torch.linalg.qr"),
        "cholesky" => (false, "torch.linalg.cholesky"),
        "chain_matmul" => (false, "torch.linalg.multi_dot"),
        "lu" => (false, "torch.linalg.lu_factor"),
        "lu_solve" => (false, "torch.linalg.lu_solve"),
        "triangular_solve" => (false, "torch.linalg.solve_triangular"),
        "svd" => (false, "torch.linalg.svd"),
        "norm" => (false, "torch.linalg.vector_norm / torch.linalg.matrix_norm"),
        "ger" => (false, "torch.outer"),
        "range" => (false, "torch.arange (which excludes the end point)"),
        _ => return None,
    })
}

fn message(q: &str, removed: bool, replacement: &str) -> String {
    if removed {
        format!("`{q}` was deprecated in torch 1.9 and has been removed: calling it fails on torch 2.0 and later; use `{replacement}`")
    } else {
        format!("`{q}` is deprecated (it still works) and may be removed in a future torch release: use `{replacement}`")
    }
}

fn check_import(checker: &mut Checker, stmt: &Stmt) {
    if matches!(stmt, Stmt::Import(_) | Stmt::ImportFrom(_)) {
        helpers::note_imports(checker, stmt, NAMES);
    }
    if !matches!(stmt, Stmt::ImportFrom(_)) || !helpers::active(checker, 1, 9) {
        return;
    }
    for name in helpers::imported_names(stmt) {
        if let Some((removed, replacement)) = deprecated(&name.qualified) {
            let fix = helpers::same_module_rename(&name.qualified, replacement)
                .and_then(|new| helpers::rename_imported_member(checker, &name, new));
            let d = checker.report(name.range, message(&name.qualified, removed, replacement));
            if let Some(fix) = fix {
                d.set_fix(fix);
            }
        }
    }
}

fn check_reference(checker: &mut Checker, expr: &Expr) {
    // Tensor-method forms, seen at their callee.
    if let Expr::Attribute(a) = expr {
        if matches!(a.attr.as_str(), "symeig" | "lstsq" | "eig") {
            if let Some(call) = helpers::callee_of(checker, expr) {
                let name = checker.resolve(&call.func);
                check_method(checker, call, name.as_deref());
            }
        }
    }
    let Some(q) = helpers::reference_to(checker, expr, NAMES) else {
        return;
    };
    let Some((removed, replacement)) = deprecated(&q) else {
        return;
    };
    if !helpers::active(checker, 1, 9) {
        return;
    }
    let fix = helpers::callee_of(checker, expr)
        .and_then(|call| fix_call(checker, expr, call, &q))
        .map(|f| {
            // What the rewrite writes: `torch.outer` and `torch.linalg` came with torch 1.8,
            // `linalg.multi_dot` with 1.9, `.mH` with 1.11 (`torch.arange` is old).
            let (major, minor) = match q.as_str() {
                "torch.range" => (0, 0),
                "torch.chain_matmul" => (1, 9),
                _ if f.edits.iter().any(|e| e.content.contains(".mH")) => (1, 11),
                _ => (1, 8),
            };
            checker.fix_needs_torch(f, major, minor)
        });
    let d = checker.report(expr.range(), message(&q, removed, replacement));
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

/// The replacement for `torch.<name>`, keeping the way the file spells `torch` (`th.qr` ->
/// `th.linalg.qr`). Only for attribute references.
fn renamed(checker: &Checker, expr: &Expr, new: &str) -> Option<RawEdit> {
    let Expr::Attribute(a) = expr else {
        return None;
    };
    let base = checker.text(a.value.range());
    Some(RawEdit::replace(expr.range(), format!("{base}.{new}")))
}

fn fix_call(checker: &Checker, expr: &Expr, call: &ExprCall, q: &str) -> Option<RawFix> {
    let args = &call.arguments;
    if sem::has_args_splat(call) || sem::has_kwargs_splat(call) {
        return None;
    }
    let kw_names: Vec<&str> = args
        .keywords
        .iter()
        .filter_map(|k| k.arg.as_ref().map(|a| a.as_str()))
        .collect();
    match q {
        "torch.ger" => Some(RawFix::safe(
            "Use `torch.outer`",
            vec![renamed(checker, expr, "outer")?],
        )),
        "torch.cholesky" => fix_cholesky(checker, expr, call),
        "torch.qr" => fix_qr(checker, expr, call),
        "torch.chain_matmul" if args.args.len() >= 2 && kw_names.iter().all(|k| *k == "out") => {
            let first = args.args.first()?;
            let last = args.args.last()?;
            Some(RawFix::safe(
                "Use `torch.linalg.multi_dot([...])`",
                vec![
                    renamed(checker, expr, "linalg.multi_dot")?,
                    RawEdit::insert(first.start(), "["),
                    RawEdit::insert(last.end(), "]"),
                ],
            ))
        }
        "torch.range" => fix_range(checker, expr, call),
        _ => None,
    }
}

/// A literal bool argument given by keyword or at a position; `Some(None)` when absent,
/// `None` when present but not a literal bool.
fn bool_arg(call: &ExprCall, name: &str, position: usize) -> Option<Option<bool>> {
    match sem::argument(call, name, position) {
        None => Some(None),
        Some(e) => match sem::literal(e)? {
            sem::Literal::Bool(b) => Some(Some(b)),
            _ => None,
        },
    }
}

/// The range of an argument with its keyword (`upper=True`) or of the positional value,
/// extended to the preceding comma so that deleting it leaves a valid call.
fn removal_range(
    checker: &Checker,
    call: &ExprCall,
    name: &str,
    position: usize,
) -> Option<TextRange> {
    let target = call
        .arguments
        .find_keyword(name)
        .map(Ranged::range)
        .or_else(|| call.arguments.args.get(position).map(Ranged::range))?;
    let before = checker.text(TextRange::new(call.arguments.start(), target.start()));
    let comma = before.rfind(',')?;
    Some(TextRange::new(
        call.arguments.start() + ruff_text_size::TextSize::new(comma as u32),
        target.end(),
    ))
}

/// `torch.cholesky(A[, upper])` -> `torch.linalg.cholesky(A)`, with `.mH` for `upper=True`
/// (the upper factor is the conjugate transpose of the lower one).
fn fix_cholesky(checker: &Checker, expr: &Expr, call: &ExprCall) -> Option<RawFix> {
    let args = &call.arguments;
    if args.args.is_empty()
        || args.args.len() > 2
        || args.find_keyword("input").is_some()
        || args.keywords.iter().any(|k| {
            k.arg
                .as_ref()
                .is_none_or(|a| !matches!(a.as_str(), "upper" | "out"))
        })
    {
        return None;
    }
    let upper = bool_arg(call, "upper", 1)?;
    let mut edits = vec![renamed(checker, expr, "linalg.cholesky")?];
    if upper.is_some() {
        edits.push(RawEdit::delete(removal_range(checker, call, "upper", 1)?));
    }
    if upper == Some(true) {
        if args.find_keyword("out").is_some() {
            return None;
        }
        edits.push(RawEdit::insert(call.end(), ".mH"));
    }
    Some(RawFix::safe(
        if upper == Some(true) {
            "Use `torch.linalg.cholesky(...).mH` (the upper factor)"
        } else {
            "Use `torch.linalg.cholesky`"
        },
        edits,
    ))
}

/// `torch.qr(A[, some])` -> `torch.linalg.qr(A)`; `some=False` -> `mode="complete"`.
fn fix_qr(checker: &Checker, expr: &Expr, call: &ExprCall) -> Option<RawFix> {
    let args = &call.arguments;
    if args.args.is_empty()
        || args.args.len() > 2
        || args.keywords.iter().any(|k| {
            k.arg
                .as_ref()
                .is_none_or(|a| !matches!(a.as_str(), "some" | "out"))
        })
    {
        return None;
    }
    let some = bool_arg(call, "some", 1)?;
    let mut edits = vec![renamed(checker, expr, "linalg.qr")?];
    match some {
        None => {}
        Some(true) => edits.push(RawEdit::delete(removal_range(checker, call, "some", 1)?)),
        Some(false) => {
            let target = args
                .find_keyword("some")
                .map(Ranged::range)
                .or_else(|| args.args.get(1).map(Ranged::range))?;
            edits.push(RawEdit::replace(target, "mode=\"complete\""));
        }
    }
    Some(RawFix::safe(
        match some {
            Some(false) => "Use `torch.linalg.qr(..., mode=\"complete\")`",
            _ => "Use `torch.linalg.qr`",
        },
        edits,
    ))
}

/// `torch.range(start, end[, step])` -> `torch.arange(start, end + step[, step])`: the end
/// point becomes exclusive. Integer literals are computed (`range(0, 6, 2)` -> `arange(0, 8,
/// 2)`); otherwise, with a step of 1, `n - 1` becomes `n` and any other end `end + 1`. A step
/// that is not an integer literal gets no fix. Safe only when every bound is an integer
/// literal and `dtype=` is given: `torch.range` returns the default float dtype (arange of
/// integers returns int64), and float bounds would change which points are included.
fn fix_range(checker: &Checker, expr: &Expr, call: &ExprCall) -> Option<RawFix> {
    let args = &call.arguments;
    let allowed = |k: &str| {
        matches!(
            k,
            "start" | "end" | "step" | "dtype" | "device" | "requires_grad" | "layout" | "out"
        )
    };
    if args
        .keywords
        .iter()
        .any(|k| k.arg.as_ref().is_none_or(|a| !allowed(a.as_str())))
        || args.args.len() > 3
    {
        return None;
    }
    let start = sem::argument(call, "start", 0)?;
    let end = sem::argument(call, "end", 1)?;
    let step_value = match sem::argument(call, "step", 2) {
        Some(st) => int_literal(st)?,
        None => 1,
    };
    if step_value == 0 {
        return None;
    }
    let end_text = checker.text(end.range());
    let (new_end, literal_end) = match int_literal(end) {
        Some(e) => (e.checked_add(step_value)?.to_string(), true),
        None => {
            let minus_one = match end {
                Expr::BinOp(b)
                    if matches!(b.op, ruff_python_ast::Operator::Sub)
                        && int_literal(&b.right) == Some(1)
                        && step_value == 1 =>
                {
                    Some(checker.text(b.left.range()).to_string())
                }
                _ => None,
            };
            let needs_parens = matches!(
                end,
                Expr::If(_) | Expr::BoolOp(_) | Expr::Compare(_) | Expr::Lambda(_) | Expr::Named(_)
            );
            let sum = if needs_parens {
                format!("({end_text}) + {step_value}")
            } else if step_value < 0 {
                format!("{end_text} - {}", -step_value)
            } else {
                format!("{end_text} + {step_value}")
            };
            (minus_one.unwrap_or(sum), false)
        }
    };
    let edits = vec![
        renamed(checker, expr, "arange")?,
        RawEdit::replace(end.range(), new_end),
    ];
    let exact = literal_end && int_literal(start).is_some() && args.find_keyword("dtype").is_some();
    Some(if exact {
        RawFix::safe("Use `torch.arange` with the end point + step", edits)
    } else {
        RawFix::unsafe_edit(
            "Use `torch.arange` with the end point + step (unsafe: without `dtype=` the result becomes int64 instead of the default float dtype, and non-integer bounds would include other points)",
            edits,
        )
    })
}

fn int_literal(expr: &Expr) -> Option<i64> {
    match expr {
        // `-2` is a unary minus on a literal.
        Expr::UnaryOp(u) if matches!(u.op, ruff_python_ast::UnaryOp::USub) => {
            int_literal(&u.operand).and_then(i64::checked_neg)
        }
        _ => match sem::literal(expr)? {
            sem::Literal::Int(i) => Some(i),
            _ => None,
        },
    }
}

/// Tensor-method forms of removed functions: `A.symeig(...)`, `A.lstsq(B)`,
/// `A.eig(eigenvectors=True)`.
fn check_method(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let Some((method, receiver)) = sem::method_call(call) else {
        return;
    };
    let hit = match method {
        "symeig" | "lstsq" => true,
        "eig" => call.arguments.find_keyword("eigenvectors").is_some(),
        _ => false,
    };
    if !hit
        || name.is_some()
        || checker.resolve(receiver).is_some()
        || sem::name_of(receiver) == Some("self")
    {
        return;
    }
    if !helpers::active(checker, 1, 9) {
        return;
    }
    let replacement = match method {
        "symeig" => "torch.linalg.eigh",
        "lstsq" => "torch.linalg.lstsq(A, B)",
        _ => "torch.linalg.eig",
    };
    let text = checker.text(receiver.range());
    checker.report(
        call.func.range(),
        format!("`Tensor.{method}` was deprecated in torch 1.9 and has been removed: `{text}.{method}(...)` fails on torch 2.0 and later; use `{replacement}`"),
    );
}

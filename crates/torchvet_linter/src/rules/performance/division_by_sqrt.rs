use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Operator, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for a division by `torch.sqrt(...)`: `a / torch.sqrt(b)` and `a /= torch.sqrt(b)`.
    ///
    /// ## Why is this bad?
    /// The division runs two element-wise kernels (square root, then divide) and materialises
    /// the intermediate square root. `a * torch.rsqrt(b)` computes the reciprocal square root
    /// in one kernel and multiplies, which is cheaper, and `1 / torch.sqrt(b)` is simply
    /// `torch.rsqrt(b)`.
    ///
    /// ## Example
    /// ```python
    /// scores = q @ k.transpose(-2, -1) / torch.sqrt(d)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// scores = q @ k.transpose(-2, -1) * torch.rsqrt(d)
    /// ```
    ///
    /// ## Fix safety
    /// The fix rewrites the division as a multiplication by `rsqrt` (or `1 / torch.sqrt(b)` as
    /// `torch.rsqrt(b)`). It is unsafe because the result may differ in the last bits: `rsqrt`
    /// is computed with its own rounding, so results are not bit-identical.
    ///
    /// ## References
    /// - [torch.rsqrt](https://pytorch.org/docs/stable/generated/torch.rsqrt.html)
    /// - [TorchFix TOR109](https://github.com/pytorch-labs/torchfix)
    pub(crate) static DIVISION_BY_SQRT = {
        name: "division-by-sqrt",
        code: "TV122",
        group: Performance,
        severity: Info,
        title: "a / torch.sqrt(b): a * torch.rsqrt(b) is one fused kernel",
        autofix: Suggest,
        torchfix: ["TOR109"],
        hooks: { expr: check_expr, expr_on: crate::registry::ExprKinds::BIN_OP, stmt: check_stmt },
    };
}

/// The `torch.sqrt(...)` call, when `expr` is one.
fn sqrt_call<'e>(checker: &Checker, expr: &'e Expr) -> Option<&'e ExprCall> {
    let Expr::Call(call) = expr else { return None };
    if call.arguments.args.len() != 1 || !call.arguments.keywords.is_empty() {
        return None;
    }
    checker
        .resolves_to(&call.func, &["torch.sqrt"])
        .then_some(call)
}

/// The callee text with `sqrt` replaced by `rsqrt`, when that name is certainly torch's.
fn rsqrt_callee(checker: &Checker, call: &ExprCall) -> Option<String> {
    match &*call.func {
        Expr::Attribute(a) => Some(format!("{}.rsqrt", checker.text(a.value.range()))),
        _ => {
            let torch = ["torch", "th", "pt"]
                .into_iter()
                .find(|alias| checker.scopes.lookup(alias).as_deref() == Some("torch"))?;
            Some(format!("{torch}.rsqrt"))
        }
    }
}

/// The range of the one operator token `op` in the gap between two operands, when the gap
/// holds nothing else but spaces, line continuations and parentheses.
fn operator_range(checker: &Checker, gap: TextRange, op: &str) -> Option<TextRange> {
    let text = checker.text(gap);
    let at = text.find(op)?;
    let mut rest = text[..at].chars().chain(text[at + op.len()..].chars());
    let clean = rest.all(|c| c.is_whitespace() || c == '\\' || c == '(' || c == ')');
    if !clean {
        return None;
    }
    let start = gap.start() + TextSize::try_from(at).ok()?;
    Some(TextRange::at(start, TextSize::try_from(op.len()).ok()?))
}

fn message(checker: &Checker, call: &ExprCall) -> String {
    let text = checker.text(call.range());
    let text = if text.contains('\n') {
        format!("{}(...)", checker.text(call.func.range()))
    } else {
        text.to_string()
    };
    format!("dividing by `{text}` runs a square root and a division as two kernels with an intermediate tensor; multiply by `rsqrt` instead")
}

fn check_expr(checker: &mut Checker, expr: &Expr) {
    let Expr::BinOp(b) = expr else { return };
    if b.op != Operator::Div {
        return;
    }
    let Some(call) = sqrt_call(checker, &b.right) else {
        return;
    };
    let arg = checker.text(call.arguments.args[0].range());
    let fix = rsqrt_callee(checker, call).and_then(|callee| {
        let one = matches!(helpers::literal(&b.left), Some(helpers::Literal::Int(1)))
            || matches!(helpers::literal(&b.left), Some(helpers::Literal::Float(f)) if f == 1.0);
        if one {
            return Some(RawFix::unsafe_edit(
                format!("Replace with `{callee}(...)`"),
                vec![RawEdit::replace(b.range(), format!("{callee}({arg})"))],
            ));
        }
        let op = operator_range(checker, TextRange::new(b.left.end(), b.right.start()), "/")?;
        Some(RawFix::unsafe_edit(
            format!("Multiply by `{callee}(...)`"),
            vec![
                RawEdit::replace(op, "*"),
                RawEdit::replace(call.func.range(), callee),
            ],
        ))
    });
    let msg = message(checker, call);
    let d = checker.report(b.range(), msg);
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::AugAssign(a) = stmt else { return };
    if a.op != Operator::Div {
        return;
    }
    let Some(call) = sqrt_call(checker, &a.value) else {
        return;
    };
    let fix = rsqrt_callee(checker, call).and_then(|callee| {
        let op = operator_range(
            checker,
            TextRange::new(a.target.end(), a.value.start()),
            "/=",
        )?;
        Some(RawFix::unsafe_edit(
            format!("Multiply by `{callee}(...)`"),
            vec![
                RawEdit::replace(op, "*="),
                RawEdit::replace(call.func.range(), callee),
            ],
        ))
    });
    let msg = message(checker, call);
    let d = checker.report(a.range(), msg);
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::performance::helpers::apply_fixes;

    #[test]
    fn fixes() {
        let src = "import torch\nfrom torch import sqrt\na = (x + 1) / torch.sqrt(d)\nb = 1 / sqrt(d)\nc /= torch.sqrt(d)\n";
        let (n, out) = apply_fixes("division-by-sqrt", src);
        assert_eq!(n, 3);
        assert_eq!(
            out,
            "import torch\nfrom torch import sqrt\na = (x + 1) * torch.rsqrt(d)\nb = torch.rsqrt(d)\nc *= torch.rsqrt(d)\n"
        );
    }
}

use super::taint_helpers::{self, Loss};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::Ranged;
use torchvet_semantic::dataflow::Prop;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for regression losses (`nn.MSELoss`, `nn.L1Loss`, `nn.SmoothL1Loss`,
    /// `nn.HuberLoss` and their `F.*` forms) where one argument is known to have shape `(N, 1)`
    /// (the output of `nn.Linear(_, 1)`, of a module or `nn.Sequential` ending in one, or
    /// `y.unsqueeze(1)`) and the other is known to be 1-D (`torch.tensor([...])`,
    /// `x.view(-1)`, `x.squeeze(-1)`, `data[:, k]`, `torch.randn(n)`).
    ///
    /// ## Why is this bad?
    /// The loss is elementwise and broadcasts: `(N, 1)` against `(N,)` becomes `(N, N)`, every
    /// prediction is compared with every target, and the mean is taken over that matrix. The
    /// model converges to predicting the mean of the targets. PyTorch only prints a
    /// `UserWarning` ("Using a target size ... that is different to the input size"), which is
    /// easy to miss.
    ///
    /// This rule is in preview: shapes are inferred from local evidence only, and a 1-D source
    /// guessed from `data[:, k]` assumes `data` is 2-D.
    ///
    /// ## Example
    /// ```python
    /// pred = model(x)          # (N, 1)
    /// loss = F.mse_loss(pred, y.view(-1))
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// loss = F.mse_loss(pred.squeeze(-1), y.view(-1))
    /// ```
    ///
    /// ## Fix safety
    /// The fix appends `.squeeze(-1)` to the `(N, 1)` argument. It is unsafe: it changes the
    /// loss value (that is the point) and relies on the inferred shapes.
    ///
    /// ## References
    /// - [torch.nn.MSELoss](https://pytorch.org/docs/stable/generated/torch.nn.MSELoss.html)
    /// - [Broadcasting semantics](https://pytorch.org/docs/stable/notes/broadcasting.html)
    pub(crate) static MSE_TARGET_SHAPE_BROADCAST = {
        name: "mse-target-shape-broadcast",
        code: "TV005",
        group: Correctness,
        severity: Warning,
        title: "Regression loss with input (N,1) vs target (N,) silently broadcasts to (N,N)",
        autofix: Suggest,
        preview: true,
        hooks: { call: check_call },
    };
}

fn is_atom(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Name(_) | Expr::Attribute(_) | Expr::Call(_) | Expr::Subscript(_)
    )
}

fn check_call(checker: &mut Checker, call: &ExprCall, q: Option<&str>) {
    let Some(lc) = taint_helpers::loss_call(checker, call, q, Loss::Regression) else {
        return;
    };
    let Some(target) = helpers::argument(call, "target", 1) else {
        return;
    };
    let a = checker.taint_of(lc.input);
    let b = checker.taint_of(target);
    let (col_expr, col, vec) = if let (Some(c), Some(v)) =
        (a.definite(Prop::ColumnVector), b.definite(Prop::Vector))
    {
        (lc.input, c.clone(), v.clone())
    } else if let (Some(c), Some(v)) = (b.definite(Prop::ColumnVector), a.definite(Prop::Vector)) {
        (target, c.clone(), v.clone())
    } else {
        return;
    };
    let col_text = taint_helpers::short(checker.text(col_expr.range()));
    let other = if std::ptr::eq(col_expr, lc.input) {
        target
    } else {
        lc.input
    };
    let vec_text = taint_helpers::short(checker.text(other.range()));
    let loss = taint_helpers::short(checker.text(call.func.range()));
    let via = match &col.through {
        Some(t) => format!(" (`{t}` ends in {})", col.op),
        None => String::new(),
    };
    let text = checker.text(col_expr.range());
    let replacement = if is_atom(col_expr) {
        format!("{text}.squeeze(-1)")
    } else {
        format!("({text}).squeeze(-1)")
    };
    let diag = checker.report(
        call.range(),
        format!(
            "`{col_text}` has shape (N, 1){via} but `{vec_text}` is 1-D (N,): `{loss}` broadcasts them to (N, N) and averages every prediction against every target; squeeze one side"
        ),
    );
    if col.origin != col_expr.range() {
        diag.add_related(
            col.origin,
            format!("the {} that gives shape (N, 1)", col.op),
        );
    }
    if vec.origin != other.range() {
        diag.add_related(
            vec.origin,
            format!("the {} that gives a 1-D tensor", vec.op),
        );
    }
    diag.set_fix(RawFix::unsafe_edit(
        "Squeeze the (N, 1) side",
        vec![RawEdit::replace(col_expr.range(), replacement)],
    ));
}

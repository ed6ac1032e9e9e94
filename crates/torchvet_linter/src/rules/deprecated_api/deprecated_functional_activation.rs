use super::helpers;
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `torch.nn.functional.sigmoid` and `torch.nn.functional.tanh` (`F.sigmoid`,
    /// `F.tanh`, or the names imported from `torch.nn.functional`).
    ///
    /// ## Why is this bad?
    /// Torch 0.4.1 deprecated the functional versions in favour of `torch.sigmoid` /
    /// `torch.tanh`, which compute the same thing; the releases of that era emit a
    /// `UserWarning` on every call. Recent releases keep them as plain aliases without a
    /// warning, so this is a style and portability issue: the canonical names work on every
    /// version and are what the documentation uses.
    ///
    /// ## Example
    /// ```python
    /// import torch.nn.functional as F
    ///
    /// gate = F.sigmoid(x)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// gate = torch.sigmoid(x)
    /// ```
    ///
    /// ## Fix safety
    /// The fix replaces the reference with `torch.sigmoid` / `torch.tanh` (using the file's own
    /// name for `torch`), which is the function the alias forwards to: safe. No fix is offered
    /// when `torch` itself is not imported, or for the import statement.
    ///
    /// ## References
    /// - [torch.nn.functional.sigmoid](https://pytorch.org/docs/stable/generated/torch.nn.functional.sigmoid.html)
    /// - [torch.sigmoid](https://pytorch.org/docs/stable/generated/torch.sigmoid.html)
    pub(crate) static DEPRECATED_FUNCTIONAL_ACTIVATION = {
        name: "deprecated-functional-activation",
        code: "TV115",
        group: DeprecatedApi,
        severity: Info,
        title: "F.sigmoid / F.tanh are deprecated (use torch.sigmoid / torch.tanh)",
        autofix: Yes,
        hooks: { stmt: check_import, expr: check_reference, end: helpers::bindings::clear },
    };
}

const NAMES: &[&str] = &["sigmoid", "tanh"];

fn deprecated(q: &str) -> Option<&'static str> {
    match q {
        "torch.nn.functional.sigmoid" => Some("sigmoid"),
        "torch.nn.functional.tanh" => Some("tanh"),
        _ => None,
    }
}

fn check_import(checker: &mut Checker, stmt: &Stmt) {
    if matches!(stmt, Stmt::Import(_) | Stmt::ImportFrom(_)) {
        helpers::note_imports(checker, stmt, NAMES);
    }
    if !matches!(stmt, Stmt::ImportFrom(_)) || !helpers::active(checker, 0, 4) {
        return;
    }
    for name in helpers::imported_names(stmt) {
        if let Some(f) = deprecated(&name.qualified) {
            checker.report(
                name.range,
                format!("`torch.nn.functional.{f}` is a legacy alias of `torch.{f}` (deprecated in torch 0.4.1)"),
            );
        }
    }
}

fn check_reference(checker: &mut Checker, expr: &Expr) {
    let Some(q) = helpers::reference_to(checker, expr, NAMES) else {
        return;
    };
    let Some(f) = deprecated(&q) else { return };
    if !helpers::active(checker, 0, 4) {
        return;
    }
    let text = checker.text(expr.range()).to_string();
    let fix = helpers::torch_alias(checker).map(|t| {
        RawFix::safe(
            format!("Replace with `{t}.{f}`"),
            vec![RawEdit::replace(expr.range(), format!("{t}.{f}"))],
        )
    });
    let d = checker.report(
        expr.range(),
        format!("`{text}` is a legacy alias (deprecated in torch 0.4.1, which warns on every call): use `torch.{f}`, which computes the same"),
    );
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

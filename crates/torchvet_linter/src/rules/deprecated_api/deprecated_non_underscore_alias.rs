use super::helpers;
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

crate::declare_rule! {
    /// ## What it does
    /// Checks for the non-underscore aliases of in-place functions:
    /// `torch.nn.utils.clip_grad_norm` and `torch.nn.init.xavier_uniform`, `xavier_normal`,
    /// `kaiming_uniform`, `kaiming_normal`, `uniform`, `normal`, `constant`, `orthogonal` and
    /// `sparse`. Only calls are reported (and `from ... import` of the names): a bare reference
    /// such as a dict of init functions kept to monkeypatch and restore them calls nothing and
    /// stays silent.
    ///
    /// ## Why is this bad?
    /// These names were renamed in torch 0.4 to end in `_`, the convention for functions that
    /// modify their argument in place. The old names are kept only as deprecated wrappers that
    /// emit a warning on each call, and hide the fact that the tensor is modified in place.
    ///
    /// ## Example
    /// ```python
    /// nn.init.xavier_uniform(layer.weight)
    /// nn.utils.clip_grad_norm(model.parameters(), 1.0)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// nn.init.xavier_uniform_(layer.weight)
    /// nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    /// ```
    ///
    /// ## Fix safety
    /// The fix appends `_` to the attribute (`nn.init.xavier_uniform` ->
    /// `nn.init.xavier_uniform_`); the old name forwards to exactly that function, so the fix is
    /// safe. Names imported with `from ... import` are reported without a fix (the import and
    /// every use would have to change together).
    ///
    /// ## References
    /// - [torch.nn.init](https://pytorch.org/docs/stable/nn.init.html)
    /// - [torch.nn.utils.clip_grad_norm_](https://pytorch.org/docs/stable/generated/torch.nn.utils.clip_grad_norm_.html)
    pub(crate) static DEPRECATED_NON_UNDERSCORE_ALIAS = {
        name: "deprecated-non-underscore-alias",
        code: "TV119",
        group: DeprecatedApi,
        severity: Info,
        title: "Deprecated non-underscore in-place aliases (nn.utils.clip_grad_norm, nn.init.xavier_uniform, ...)",
        autofix: Yes,
        hooks: { stmt: check_import, expr: check_reference, expr_on: crate::registry::ExprKinds::REFERENCE, end: helpers::bindings::clear },
    };
}

const INIT: &[&str] = &[
    "uniform",
    "normal",
    "constant",
    "xavier_uniform",
    "xavier_normal",
    "kaiming_uniform",
    "kaiming_normal",
    "orthogonal",
    "sparse",
];

const NAMES: &[&str] = &[
    "clip_grad_norm",
    "uniform",
    "normal",
    "constant",
    "xavier_uniform",
    "xavier_normal",
    "kaiming_uniform",
    "kaiming_normal",
    "orthogonal",
    "sparse",
];

/// The deprecated function's name when `q` is one of them.
fn deprecated(q: &str) -> Option<&str> {
    if matches!(
        q,
        "torch.nn.utils.clip_grad_norm" | "torch.nn.utils.clip_grad.clip_grad_norm"
    ) {
        return Some("clip_grad_norm");
    }
    let name = q.strip_prefix("torch.nn.init.")?;
    INIT.contains(&name).then_some(name)
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
                format!(
                    "`{f}` is a deprecated alias of the in-place `{f}_` and warns on every call"
                ),
            );
        }
    }
}

fn check_reference(checker: &mut Checker, expr: &Expr) {
    let Some(q) = helpers::reference_to(checker, expr, NAMES) else {
        return;
    };
    let Some(f) = deprecated(&q) else { return };
    // Only a call warns: a bare reference (stored in a dict to patch and restore) is silent.
    if helpers::callee_of(checker, expr).is_none() || !helpers::active(checker, 0, 4) {
        return;
    }
    let text = checker.text(expr.range()).to_string();
    let fix = helpers::attr_range(expr)
        .map(|r| RawFix::safe(format!("Use `{f}_`"), vec![RawEdit::insert(r.end(), "_")]));
    let d = checker.report(
        expr.range(),
        format!("`{text}` is a deprecated alias (warning on every call): use `{f}_`, which modifies the tensor in place as this does"),
    );
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

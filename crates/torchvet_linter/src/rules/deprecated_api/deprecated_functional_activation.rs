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
    /// The functional versions were deprecated in 0.4.1 with a warning until torch 2.0: on
    /// torch 0.4.1 to 1.13 every call emits a `UserWarning` telling you to use `torch.sigmoid` /
    /// `torch.tanh`, which compute the same thing, and the warnings clutter training logs.
    /// torch 2.0 dropped the warning and keeps them as plain aliases, so the rule only reports
    /// when the target torch version is below 2.0; on torch >= 2.0 it stays silent.
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
        hooks: { stmt: check_import, expr: check_reference, expr_on: crate::registry::ExprKinds::REFERENCE, end: helpers::bindings::clear },
    };
}

const NAMES: &[&str] = &["sigmoid", "tanh"];

/// The alias warns from 0.4.1 until torch 2.0, which removed the warning (plain aliases since).
fn applies(checker: &Checker) -> bool {
    helpers::active(checker, 0, 4) && !checker.torch_at_least(2, 0)
}

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
    if !matches!(stmt, Stmt::ImportFrom(_)) || !applies(checker) {
        return;
    }
    for name in helpers::imported_names(stmt) {
        if let Some(f) = deprecated(&name.qualified) {
            checker.report(
                name.range,
                format!("`torch.nn.functional.{f}` is a deprecated alias of `torch.{f}` (deprecated in 0.4.1 with a warning until torch 2.0) and warns on every call"),
            );
        }
    }
}

fn check_reference(checker: &mut Checker, expr: &Expr) {
    let Some(q) = helpers::reference_to(checker, expr, NAMES) else {
        return;
    };
    let Some(f) = deprecated(&q) else { return };
    if !applies(checker) {
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
        format!("`{text}` is deprecated in 0.4.1 with a warning until torch 2.0 (UserWarning on every call before 2.0): use `torch.{f}`, which computes the same"),
    );
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

#[cfg(test)]
mod tests {
    use crate::{LintSettings, Linter, Version};
    use torchvet_python::SourceFile;

    fn count(target: Option<Version>) -> usize {
        let src = "import torch.nn.functional as F\nfrom torch.nn.functional import tanh\ny = F.sigmoid(x)\n";
        let mut settings = LintSettings::only("deprecated-functional-activation");
        settings.target_torch = target;
        let file = SourceFile::from_python("model.py", src.to_string());
        Linter::new(settings).lint(&file, "model.py").len()
    }

    #[test]
    fn reported_only_before_torch_2() {
        assert_eq!(count(Some(Version::new(1, 13))), 2);
        assert_eq!(count(Some(Version::new(0, 4))), 2);
        assert_eq!(count(Some(Version::new(2, 0))), 0);
        assert_eq!(count(Some(Version::new(2, 5))), 0);
        assert_eq!(count(None), 0);
    }
}

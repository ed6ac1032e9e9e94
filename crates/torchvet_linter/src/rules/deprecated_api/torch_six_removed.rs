use super::helpers;
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

crate::declare_rule! {
    /// ## What it does
    /// Checks for imports of `torch._six` and references to its attributes (`string_classes`,
    /// `int_classes`, `inf`, `container_abcs`, ...).
    ///
    /// ## Why is this bad?
    /// `torch._six` was a private Python 2/3 compatibility module. It was removed in torch 2.0,
    /// so `from torch._six import inf` fails with `ModuleNotFoundError` as soon as the file is
    /// imported: the whole program stops before doing anything.
    ///
    /// ## Example
    /// ```python
    /// from torch._six import inf, string_classes
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// from math import inf
    /// string_classes = (str, bytes)
    /// ```
    ///
    /// ## Fix safety
    /// For `from torch._six import ...` of known names the fix rewrites the statement with the
    /// values `torch/_six.py` defined on Python 3, keeping the bound names:
    /// `string_classes = (str, bytes)` (a tuple with `bytes`, not `str` alone),
    /// `int_classes = int`, `from math import inf` / `nan`,
    /// `import collections.abc as container_abcs`, `PY3 = True`, `PY2 = False`,
    /// `from io import StringIO`, `from builtins import FileNotFoundError`, `import queue`.
    /// Each is the same object or an equal value on every Python 3 that torch 2 supports, so
    /// the fix is safe. `PY37` gets no fix: torch defined it as `== 3.7` in older releases and
    /// as `>= 3.7` in later ones, so its value depends on the torch the code was written for.
    /// Attribute references get `(str, bytes)` / `int` / `torch.inf` / `torch.nan`. No fix is
    /// offered for other names (`with_metaclass`, `istuple`, ...) or for `import torch._six`.
    ///
    /// ## References
    /// - [Removal of torch._six (pytorch#94709)](https://github.com/pytorch/pytorch/pull/94709)
    /// - [pytorch#102410](https://github.com/pytorch/pytorch/issues/102410)
    pub(crate) static TORCH_SIX_REMOVED = {
        name: "torch-six-removed",
        code: "TV042",
        group: DeprecatedApi,
        severity: Critical,
        title: "torch._six was removed in torch 2.0 (string_classes, inf, container_abcs, int_classes)",
        autofix: Yes,
        hooks: { stmt: check_import, expr: check_reference, expr_on: crate::registry::ExprKinds::ATTRIBUTE },
    };
}

/// The Python 3 replacement statement for `bound = torch._six.member`.
fn replacement_stmt(member: &str, bound: &str) -> Option<String> {
    Some(match member {
        // torch/_six.py (Python 3): `string_classes = (str, bytes)`, not `str`.
        "string_classes" => format!("{bound} = (str, bytes)"),
        "int_classes" => format!("{bound} = int"),
        "inf" | "nan" if bound == member => format!("from math import {member}"),
        "inf" | "nan" => format!("from math import {member} as {bound}"),
        "container_abcs" => format!("import collections.abc as {bound}"),
        // `sys.version_info[0] == 3` / `== 2`: fixed on any Python torch 2 runs on. `PY37` is
        // left alone: it was `== 7` in older releases and `>= 7` in later ones.
        "PY3" => format!("{bound} = True"),
        "PY2" => format!("{bound} = False"),
        "FileNotFoundError" if bound == member => "from builtins import FileNotFoundError".into(),
        "FileNotFoundError" => format!("from builtins import FileNotFoundError as {bound}"),
        "StringIO" if bound == member => "from io import StringIO".into(),
        "StringIO" => format!("from io import StringIO as {bound}"),
        "queue" if bound == member => "import queue".into(),
        "queue" => format!("import queue as {bound}"),
        _ => return None,
    })
}

fn is_six(q: &str) -> bool {
    q == "torch._six" || q.starts_with("torch._six.")
}

fn check_import(checker: &mut Checker, stmt: &Stmt) {
    if !matches!(stmt, Stmt::ImportFrom(_) | Stmt::Import(_)) || !helpers::active(checker, 2, 0) {
        return;
    }
    let names = helpers::imported_names(stmt);
    if !names.iter().any(|n| is_six(&n.qualified)) {
        return;
    }
    // A whole `from torch._six import a, b` statement can be rewritten when every name is known.
    let whole_fix = match stmt {
        Stmt::ImportFrom(imp)
            if imp
                .module
                .as_ref()
                .is_some_and(|m| m.as_str() == "torch._six") =>
        {
            names
                .iter()
                .map(|n| replacement_stmt(&n.member, &n.bound))
                .collect::<Option<Vec<String>>>()
                .filter(|_| !checker.text(stmt.range()).contains('#'))
                .map(|parts| {
                    RawFix::safe(
                        "Replace with the standard-library equivalents",
                        vec![RawEdit::replace(stmt.range(), parts.join("; "))],
                    )
                })
        }
        _ => None,
    };
    let mut first = true;
    for name in names.iter().filter(|n| is_six(&n.qualified)) {
        let msg = if name.qualified == "torch._six" {
            "`torch._six` was removed in torch 2.0: this import raises ModuleNotFoundError"
                .to_string()
        } else {
            format!(
                "`torch._six.{}` was removed in torch 2.0: this import raises ModuleNotFoundError",
                name.member
            )
        };
        let d = checker.report(name.range, msg);
        if first {
            if let Some(fix) = &whole_fix {
                d.set_fix(fix.clone());
            }
        }
        first = false;
    }
}

fn check_reference(checker: &mut Checker, expr: &Expr) {
    // Only attribute chains (`torch._six.inf`, `_six.string_classes`); names imported from
    // torch._six are reported at their import.
    let Expr::Attribute(attr) = expr else { return };
    if !helpers::is_load_reference(expr) || !helpers::is_outermost(checker, expr) {
        return;
    }
    // Cheap filter before resolving: `_six` must appear in the chain.
    let mut part = expr;
    let mentions_six = loop {
        match part {
            Expr::Attribute(a) if a.attr.as_str() == "_six" => break true,
            Expr::Attribute(a) => part = &a.value,
            Expr::Name(n) => break n.id.as_str() == "_six",
            _ => break false,
        }
    };
    if !mentions_six {
        return;
    }
    let Some(q) = checker.resolve(expr) else {
        return;
    };
    if !is_six(&q) || !helpers::active(checker, 2, 0) {
        return;
    }
    // Rooted at `torch` or at the module `_six` itself, not at a name imported from it.
    let mut root = &*attr.value;
    while let Expr::Attribute(a) = root {
        root = &a.value;
    }
    if !checker
        .resolve(root)
        .is_some_and(|r| r == "torch" || r == "torch._six")
    {
        return;
    }
    let text = checker.text(expr.range()).to_string();
    let replacement = match q.strip_prefix("torch._six.") {
        Some("string_classes") => Some("(str, bytes)".to_string()),
        Some("int_classes") => Some("int".to_string()),
        Some(m @ ("inf" | "nan")) => helpers::torch_alias(checker).map(|t| format!("{t}.{m}")),
        _ => None,
    };
    let d = checker.report(
        expr.range(),
        format!("`{text}` was removed in torch 2.0: this raises AttributeError"),
    );
    if let Some(r) = replacement {
        d.set_fix(RawFix::safe(
            format!("Replace with `{r}`"),
            vec![RawEdit::replace(attr.range(), r)],
        ));
    }
}

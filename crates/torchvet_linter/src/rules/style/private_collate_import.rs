use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};

crate::declare_rule! {
    /// ## What it does
    /// Checks for uses and imports of `default_collate` and `default_convert` through the
    /// private module `torch.utils.data._utils.collate`.
    ///
    /// ## Why is this bad?
    /// Modules whose names start with an underscore are internal to PyTorch: they can be moved
    /// or renamed in any release without a deprecation period. Both functions are exported
    /// publicly from `torch.utils.data` (and `torch.utils.data.dataloader`), which is where
    /// they should be taken from.
    ///
    /// ## Example
    /// ```python
    /// from torch.utils.data._utils.collate import default_collate
    ///
    /// loader = DataLoader(ds, collate_fn=torch.utils.data._utils.collate.default_convert)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// from torch.utils.data.dataloader import default_collate
    ///
    /// loader = DataLoader(ds, collate_fn=torch.utils.data.dataloader.default_convert)
    /// ```
    ///
    /// ## Fix safety
    /// The fix replaces the private module path with `torch.utils.data.dataloader`, which
    /// re-exports the very same function objects, so behaviour does not change: safe. Imports
    /// that also take other names from the private module are reported without a fix.
    ///
    /// ## References
    /// - [torch.utils.data: working with collate_fn](https://pytorch.org/docs/stable/data.html#working-with-collate-fn)
    /// - [torch.utils.data.default_collate](https://pytorch.org/docs/stable/data.html#torch.utils.data.default_collate)
    pub(crate) static PRIVATE_COLLATE_IMPORT = {
        name: "private-collate-import",
        code: "TV121",
        group: Style,
        severity: Warning,
        title: "default_collate/default_convert taken from the private torch.utils.data._utils.collate",
        autofix: Yes,
        torchfix: ["TOR104", "TOR105"],
        hooks: { stmt: check_stmt, expr: check_expr, expr_on: crate::registry::ExprKinds::ATTRIBUTE },
    };
}

const PRIVATE: &str = "torch.utils.data._utils.collate";
const PUBLIC: &str = "torch.utils.data.dataloader";
const FUNCTIONS: &[&str] = &["default_collate", "default_convert"];

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::ImportFrom(import) = stmt else {
        return;
    };
    let Some(module) = &import.module else { return };
    if import.level != 0 || module.as_str() != PRIVATE {
        return;
    }
    let public_only = import
        .names
        .iter()
        .all(|a| FUNCTIONS.contains(&a.name.as_str()));
    for alias in &import.names {
        let name = alias.name.as_str();
        if !FUNCTIONS.contains(&name) {
            continue;
        }
        let diagnostic = checker.report(
            alias.range(),
            format!("`{name}` is imported from the private module `{PRIVATE}`, which may move in any release: import it from `{PUBLIC}`"),
        );
        if public_only {
            diagnostic.set_fix(RawFix::safe(
                format!("Import from `{PUBLIC}`"),
                vec![RawEdit::replace(module.range(), PUBLIC)],
            ));
        }
    }
}

fn check_expr(checker: &mut Checker, expr: &Expr) {
    // Only dotted uses: a bare name bound by `from ..._utils.collate import ...` is reported
    // once, at its import.
    let Expr::Attribute(attr) = expr else { return };
    let name = attr.attr.as_str();
    if !FUNCTIONS.contains(&name) {
        return;
    }
    let Some(q) = checker.resolve(expr) else {
        return;
    };
    if q.strip_suffix(name).and_then(|p| p.strip_suffix('.')) != Some(PRIVATE) {
        return;
    }
    let fix = torch_root(&attr.value)
        .filter(|root| checker.name_is(root.0, "torch"))
        .map(|(root, range)| {
            RawFix::safe(
                format!("Use `{PUBLIC}.{name}`"),
                vec![RawEdit::replace(
                    TextRange::new(range.start(), attr.value.end()),
                    format!("{root}{}", &PUBLIC["torch".len()..]),
                )],
            )
        })
        .or_else(|| via_dataloader_module(checker, &attr.value, name));
    let diagnostic = checker.report(
        expr.range(),
        format!("`{name}` is used through the private module `{PRIVATE}`, which may move in any release: use `{PUBLIC}.{name}`"),
    );
    if let Some(fix) = fix {
        diagnostic.set_fix(fix);
    }
}

/// The root name of a dotted chain, with its range.
/// For a use through an imported private module (`_utils.collate.default_collate` after
/// `from torch.utils.data import _utils`): spell it `dataloader.default_collate`, where
/// `dataloader` is bound by the file, or added to its module-level
/// `from torch.utils.data import ...` statement.
fn via_dataloader_module(checker: &Checker, module_expr: &Expr, name: &str) -> Option<RawFix> {
    let message = format!("Use `{PUBLIC}.{name}`");
    let replace = RawEdit::replace(module_expr.range(), "dataloader");
    match checker.scopes.lookup("dataloader") {
        Some(q) if q == PUBLIC => return Some(RawFix::safe(message, vec![replace])),
        Some(_) => return None,
        None => {}
    }
    // The module-level `from torch.utils.data import a, b` to extend.
    let import = checker.module().body.iter().find_map(|stmt| match stmt {
        Stmt::ImportFrom(imp)
            if imp.level == 0
                && imp
                    .module
                    .as_ref()
                    .is_some_and(|m| m.as_str() == "torch.utils.data")
                && imp.names.iter().all(|a| a.name.as_str() != "*") =>
        {
            imp.names.first()
        }
        _ => None,
    })?;
    Some(RawFix::safe(
        message,
        vec![RawEdit::insert(import.start(), "dataloader, "), replace],
    ))
}

fn torch_root(expr: &Expr) -> Option<(&str, TextRange)> {
    match expr {
        Expr::Name(n) => Some((n.id.as_str(), n.range())),
        Expr::Attribute(a) => torch_root(&a.value),
        _ => None,
    }
}

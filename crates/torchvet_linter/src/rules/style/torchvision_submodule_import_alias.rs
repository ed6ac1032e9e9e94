use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::Stmt;
use ruff_text_size::Ranged;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `import torchvision.<submodule> as <submodule>`, such as
    /// `import torchvision.models as models`.
    ///
    /// ## Why is this bad?
    /// The alias only repeats the submodule's own name. `from torchvision import models` says
    /// the same thing more directly and is the form used in the torchvision documentation.
    /// Nothing breaks at run time: this is a style rule.
    ///
    /// ## Example
    /// ```python
    /// import torchvision.models as models
    /// import torchvision.transforms as transforms
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// from torchvision import models
    /// from torchvision import transforms
    /// ```
    ///
    /// ## Fix safety
    /// The fix rewrites the statement into the `from` form when it imports nothing else. Both
    /// forms import the submodule and bind the same name to it, so the fix is safe.
    ///
    /// ## References
    /// - [torchvision.models](https://pytorch.org/vision/stable/models.html)
    /// - [The import statement](https://docs.python.org/3/reference/simple_stmts.html#the-import-statement)
    pub(crate) static TORCHVISION_SUBMODULE_IMPORT_ALIAS = {
        name: "torchvision-submodule-import-alias",
        code: "TV123",
        group: Style,
        severity: Info,
        title: "import torchvision.<submodule> as <submodule>: prefer from torchvision import <submodule>",
        autofix: Yes,
        torchfix: ["TOR203"],
        hooks: { stmt: check_stmt },
    };
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::Import(import) = stmt else { return };
    for alias in &import.names {
        let full = alias.name.as_str();
        let Some(asname) = &alias.asname else {
            continue;
        };
        let Some((parent, last)) = full.rsplit_once('.') else {
            continue;
        };
        if parent != "torchvision" && !parent.starts_with("torchvision.") {
            continue;
        }
        if asname.as_str() != last {
            continue;
        }
        let diagnostic = checker.report(
            alias.range(),
            format!("`import {full} as {last}` repeats the submodule's name: write `from {parent} import {last}`"),
        );
        if import.names.len() == 1 {
            diagnostic.set_fix(RawFix::safe(
                format!("Replace with `from {parent} import {last}`"),
                vec![RawEdit::replace(
                    import.range(),
                    format!("from {parent} import {last}"),
                )],
            ));
        }
    }
}

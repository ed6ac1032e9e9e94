use super::helpers::{constructs_module, is_parameter_class};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, Stmt, StmtFunctionDef};
use ruff_text_size::Ranged;
use torchvet_semantic::{helpers, ScopeKind};

crate::declare_rule! {
    /// ## What it does
    /// Checks for an `nn.Module` subclass whose `__init__` never calls `super().__init__()`
    /// (or `Base.__init__(self)`), or assigns a sub-module or Parameter before that call.
    ///
    /// ## Why is this bad?
    /// `nn.Module.__init__` creates the dictionaries that hold parameters, buffers,
    /// sub-modules and hooks. Without it the first `self.fc = nn.Linear(...)` raises
    /// "cannot assign module before Module.__init__() call", and a module that survives
    /// construction fails on its first call or `.to()`.
    ///
    /// ## Example
    /// ```python
    /// class Net(nn.Module):
    ///     def __init__(self):
    ///         self.fc = nn.Linear(4, 2)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// class Net(nn.Module):
    ///     def __init__(self):
    ///         super().__init__()
    ///         self.fc = nn.Linear(4, 2)
    /// ```
    ///
    /// ## Fix safety
    /// When `__init__` never calls the base initialiser, the fix inserts `super().__init__()`
    /// as its first statement. That is safe when the class derives directly from
    /// `nn.Module` (whose initialiser takes no arguments); for other bases the initialiser may
    /// need arguments, so the fix is unsafe there. Misordered calls are not fixed.
    ///
    /// ## References
    /// - [torch.nn.Module](https://pytorch.org/docs/stable/generated/torch.nn.Module.html)
    /// - [pytorch issue 37824](https://github.com/pytorch/pytorch/issues/37824)
    /// - [gReLU issue 188](https://github.com/Genentech/gReLU/issues/188)
    pub(crate) static MISSING_SUPER_INIT = {
        name: "missing-super-init",
        code: "TV034",
        group: Correctness,
        severity: Critical,
        title: "nn.Module subclass __init__ without super().__init__() (or assigning modules before it)",
        autofix: Yes,
        hooks: { stmt: check_stmt },
    };
}

/// Does the code call some `__init__` (or use `super`) at all?
fn calls_init(stmts: &[Stmt]) -> bool {
    struct Finder(bool);
    impl<'x> Visitor<'x> for Finder {
        fn visit_expr(&mut self, expr: &'x Expr) {
            if self.0 {
                return;
            }
            match expr {
                Expr::Attribute(a) if a.attr.as_str() == "__init__" => self.0 = true,
                Expr::Name(n) if n.id.as_str() == "super" => self.0 = true,
                _ => visitor::walk_expr(self, expr),
            }
        }
    }
    let mut f = Finder(false);
    f.visit_body(stmts);
    f.0
}

fn trivial_body(func: &StmtFunctionDef) -> bool {
    func.body.iter().all(|s| match s {
        Stmt::Pass(_) | Stmt::Raise(_) => true,
        Stmt::Expr(e) => matches!(&*e.value, Expr::StringLiteral(_) | Expr::EllipsisLiteral(_)),
        _ => false,
    })
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::FunctionDef(func) = stmt else {
        return;
    };
    if func.name.as_str() != "__init__"
        || checker.scopes.current().map(|s| s.kind) != Some(ScopeKind::Class)
    {
        return;
    }
    let Some(class) = checker.class() else { return };
    if !class.is_module || trivial_body(func) {
        return;
    }
    let first_init = func
        .body
        .iter()
        .position(|s| calls_init(std::slice::from_ref(s)));
    match first_init {
        None => report_missing(checker, func, class.def),
        Some(i) => {
            for s in &func.body[..i] {
                let Stmt::Assign(a) = s else { continue };
                if !a
                    .targets
                    .iter()
                    .any(|t| helpers::self_attribute(t).is_some())
                {
                    continue;
                }
                let Expr::Call(call) = &*a.value else {
                    continue;
                };
                let is_param = checker
                    .resolve(&call.func)
                    .is_some_and(|q| is_parameter_class(&q));
                if !is_param && !constructs_module(checker, call) {
                    continue;
                }
                let what = if is_param {
                    "a Parameter"
                } else {
                    "a sub-module"
                };
                let init_stmt = &func.body[i];
                checker
                    .report(
                        a.range(),
                        format!("{what} is assigned before the base `__init__` runs: this raises \"cannot assign {} before Module.__init__() call\"; call `super().__init__()` first", if is_param { "parameters" } else { "module" }),
                    )
                    .add_related(init_stmt.range(), "the base initialiser is called here");
            }
        }
    }
}

fn report_missing(
    checker: &mut Checker,
    func: &StmtFunctionDef,
    class: &ruff_python_ast::StmtClassDef,
) {
    let class_name = class.name.as_str();
    let direct_module = class.arguments.as_ref().is_some_and(|a| {
        a.args
            .iter()
            .any(|b| checker.resolves_to(b, &["torch.nn.Module", "torch.nn.modules.module.Module"]))
    });
    let fix = insertion(checker, func).map(|edit| {
        if direct_module {
            RawFix::safe("Call `super().__init__()` first", vec![edit])
        } else {
            RawFix::unsafe_edit(
                "Call `super().__init__()` first (check the base's arguments)",
                vec![edit],
            )
        }
    });
    let diag = checker.report(
        func.name.range(),
        format!("`{class_name}.__init__` never calls `super().__init__()`: nn.Module's registries are not created, so assigning sub-modules or parameters raises and the module cannot be called or moved"),
    );
    if let Some(fix) = fix {
        diag.set_fix(fix);
    }
}

/// An edit inserting `super().__init__()` before the first statement (after a docstring).
fn insertion(checker: &Checker, func: &StmtFunctionDef) -> Option<RawEdit> {
    let text = &checker.source.text;
    let first = func.body.first()?;
    let is_doc = matches!(first, Stmt::Expr(e) if matches!(&*e.value, Expr::StringLiteral(_)));
    let anchor = if is_doc {
        func.body.get(1)
    } else {
        Some(first)
    };
    // Indentation of the first statement (which must start its own line).
    let start = first.start().to_usize();
    let line_start = text.get(..start)?.rfind('\n').map_or(0, |i| i + 1);
    let indent = text.get(line_start..start)?;
    if !indent.chars().all(|c| c == ' ' || c == '\t') {
        return None;
    }
    match anchor {
        Some(s) => Some(RawEdit::insert(
            s.start(),
            format!("super().__init__()\n{indent}"),
        )),
        None => Some(RawEdit::insert(
            first.end(),
            format!("\n{indent}super().__init__()"),
        )),
    }
}

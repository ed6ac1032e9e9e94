use super::helpers::{constructs_module, is_parameter_class};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
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
    /// as its first statement. That is safe when the class derives from `nn.Module` alone
    /// (whose initialiser takes no arguments). When a base's initialiser takes no required
    /// arguments either (a project class whose `__init__` has only defaults, `nn.Sequential`)
    /// the fix is unsafe: the base may still expect values. When a base needs arguments
    /// (`nn.Embedding`, `nn.Linear`, a project class with required parameters) or is not known,
    /// a bare call would raise `TypeError`, so no fix is offered. Misordered calls are not
    /// fixed.
    ///
    /// A direct `nn.Module` subclass that only holds plain values is not reported:
    /// `nn.Module.__setattr__` stores numbers, tensors and lists without the registries, so
    /// such a holder works until it is used as a module. It is reported when the failure can
    /// happen: a method assigns a sub-module or a Parameter to `self`, registers a buffer or
    /// parameter, or calls another module method on `self`; the class defines `forward`; or
    /// an instance is used as a module anywhere in the project (called, moved, asked for its
    /// parameters or state dict, switched to eval, ...).
    ///
    /// The base initialiser may also run in one of the class's own methods that `__init__`
    /// calls (`self.make_weight(...)` calling `super().__init__(n, d, _weight=w)`); such
    /// an `__init__` is not reported.
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
        .position(|s| torchvet_semantic::reaches_base_init(class.def, std::slice::from_ref(s)));
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
    let module_base =
        |b: &Expr| checker.resolves_to(b, &["torch.nn.Module", "torch.nn.modules.module.Module"]);
    let bases = class
        .arguments
        .as_ref()
        .map(|a| &a.args[..])
        .unwrap_or_default();
    let direct_module = bases.len() == 1 && module_base(&bases[0]);
    // Without `Module.__init__`, `nn.Module.__setattr__` still stores plain values (numbers,
    // tensors, lists): a holder of such values that is never used as a module works.
    if direct_module && !fails_without_base_init(checker, class) {
        return;
    }
    // A bare `super().__init__()` raises TypeError when a base's initialiser needs
    // arguments (`nn.Embedding`, `nn.Linear`, a project class taking required ones): offer
    // it only when the model knows every base's initialiser takes none.
    let no_args = direct_module
        || checker
            .project_or_file()
            .and_then(|p| p.model.base_init_takes_no_args(p.class_at(class.start())?))
            .unwrap_or(false);
    let fix = insertion(checker, func).filter(|_| no_args).map(|edit| {
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

/// Can a direct `nn.Module` subclass whose `__init__` skips `Module.__init__` fail? It does
/// when one of its methods assigns a sub-module or a Parameter to `self` (or registers a
/// buffer, parameter or module, or calls any other module API on `self`), when it defines
/// `forward` (it is meant to be called, and calling runs the hooks machinery), or when an
/// instance is used as a module anywhere in the project: called, or given a module method
/// (`net.to(dev)`, `net.parameters()`, `net.state_dict()`, ...), as the project model tells.
fn fails_without_base_init(checker: &Checker, class: &ruff_python_ast::StmtClassDef) -> bool {
    use ruff_python_ast::visitor::{self, Visitor};
    struct Uses<'c, 'a> {
        checker: &'c Checker<'a>,
        found: bool,
    }
    impl<'x> Visitor<'x> for Uses<'_, '_> {
        fn visit_stmt(&mut self, s: &'x Stmt) {
            if self.found {
                return;
            }
            if let Stmt::Assign(a) = s {
                if a.targets
                    .iter()
                    .any(|t| helpers::self_attribute(t).is_some())
                {
                    if let Expr::Call(call) = &*a.value {
                        let is_param = self
                            .checker
                            .resolve(&call.func)
                            .is_some_and(|q| is_parameter_class(&q));
                        if is_param || constructs_module(self.checker, call) {
                            self.found = true;
                            return;
                        }
                    }
                }
            }
            visitor::walk_stmt(self, s);
        }
        fn visit_expr(&mut self, e: &'x Expr) {
            if self.found {
                return;
            }
            if let Expr::Call(c) = e {
                if let Some((m, recv)) = helpers::method_call(c) {
                    if helpers::name_of(recv) == Some("self") && torchvet_semantic::is_module_api(m)
                    {
                        self.found = true;
                        return;
                    }
                }
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut methods = Vec::new();
    for s in &class.body {
        if let Stmt::FunctionDef(f) = s {
            if f.name.as_str() == "forward" || f.name.as_str() == "__call__" {
                return true;
            }
            methods.push(f);
        }
    }
    let mut u = Uses {
        checker,
        found: false,
    };
    for f in methods {
        u.visit_body(&f.body);
    }
    if u.found {
        return true;
    }
    checker
        .project_or_file()
        .and_then(|p| Some(p.model.instance_used_as_module(p.class_at(class.start())?)))
        .unwrap_or(false)
}

/// An edit inserting `super().__init__()` before the first statement (after a docstring).
fn insertion(checker: &Checker, func: &StmtFunctionDef) -> Option<RawEdit> {
    let first = func.body.first()?;
    let is_doc = matches!(first, Stmt::Expr(e) if matches!(&*e.value, Expr::StringLiteral(_)));
    let anchor = if is_doc {
        func.body.get(1)
    } else {
        Some(first)
    };
    // Indentation of the first statement (which must start its own line).
    let indent = crate::fix::own_line_indent(checker, first.start())?;
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

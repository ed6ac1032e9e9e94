//! Helpers shared by the correctness rules: recognising constructor calls of torch classes,
//! `self.<attr>` assignments and uses, and the per-file key of thread-local rule state. What a
//! name was last assigned is the semantic layer's answer ([`Checker::reaching_defs`]).
use crate::checker::Checker;
use ruff_python_ast::{Expr, ExprCall, Stmt};
use torchvet_semantic::helpers;

/// Is a qualified name `nn.Parameter`?
pub(crate) fn is_parameter_class(q: &str) -> bool {
    matches!(
        q,
        "torch.nn.Parameter" | "torch.nn.parameter.Parameter" | "torch.nn.UninitializedParameter"
    )
}

/// Does this call construct an `nn.Module`: a callee the semantic layer says builds one
/// ([`torchvet_semantic::constructs_module`]), a module class of the project imported from
/// another file (`from .modules import BNReluRNN`, whose base `BaseRNN(nn.Module)` may live in
/// a third), a project function the model says returns a module (`build_model(cfg)`), or a
/// module class of this file (not shadowed by an import)?
pub(crate) fn constructs_module(checker: &Checker, call: &ExprCall) -> bool {
    if let Some(q) = checker.resolve(&call.func) {
        // `call_kind` is `Module` for a project module class as for a project function
        // returning one.
        return torchvet_semantic::constructs_module(&q)
            || checker
                .project()
                .is_some_and(|p| p.call_kind(&q) == torchvet_semantic::kinds::Kind::Module);
    }
    match &*call.func {
        Expr::Name(n) => checker.classes.is_module(n.id.as_str()),
        _ => false,
    }
}

/// A prefix that names `torch.nn` in this file at this point (`nn.`, `torch.nn.`), if any.
pub(crate) fn nn_prefix(checker: &Checker) -> Option<&'static str> {
    if checker.scopes.lookup("nn").as_deref() == Some("torch.nn") {
        Some("nn.")
    } else if checker.scopes.lookup("torch").as_deref() == Some("torch") {
        Some("torch.nn.")
    } else {
        None
    }
}

/// The name `torch` is bound to in this file (`torch`, `th`), tried among the usual spellings.
pub(crate) fn torch_alias(checker: &Checker) -> Option<&'static str> {
    ["torch", "th", "pt", "T"]
        .into_iter()
        .find(|n| checker.scopes.lookup(n).as_deref() == Some("torch"))
}

/// Which file a checker is on (for per-file state kept in thread-locals).
pub(crate) fn file_key(checker: &Checker) -> (usize, usize) {
    (
        std::ptr::from_ref(checker.source) as usize,
        checker.source.text.len(),
    )
}

pub(crate) use torchvet_semantic::helpers::for_each_own_stmt as for_each_stmt;

/// The method of a class body with this name.
pub(crate) fn class_method<'a>(
    class: &'a ruff_python_ast::StmtClassDef,
    name: &str,
) -> Option<&'a ruff_python_ast::StmtFunctionDef> {
    class.body.iter().find_map(|s| match s {
        Stmt::FunctionDef(f) if f.name.as_str() == name => Some(f),
        _ => None,
    })
}

pub(crate) use torchvet_semantic::helpers::self_assignments;

/// How `self.<name>` is used in a function body: read at all, and the receiver of a
/// device move (`self.x.to(...)`, `.cuda()`, `.type_as(...)`) or replaced by a moved value
/// (`self.grid = self._make_grid(nx, ny).to(x.device)`, a cache rebuilt on the input's device).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SelfAttrUse {
    /// `self.<name>` appears in the body.
    pub(crate) read: bool,
    /// It is moved explicitly.
    pub(crate) moved: bool,
}

/// Scan a function body for uses of `self.<name>` (nested functions included).
pub(crate) fn self_attr_use(body: &[Stmt], name: &str) -> SelfAttrUse {
    use ruff_python_ast::visitor::{self, Visitor};
    struct Finder<'n> {
        name: &'n str,
        out: SelfAttrUse,
    }
    const MOVES: &[&str] = &["to", "cuda", "cpu", "type_as", "type"];
    impl<'x> Visitor<'x> for Finder<'_> {
        fn visit_stmt(&mut self, stmt: &'x Stmt) {
            if let Stmt::Assign(a) = stmt {
                let replaced = a
                    .targets
                    .iter()
                    .any(|t| helpers::self_attribute(t) == Some(self.name));
                let moved_value = matches!(&*a.value, Expr::Call(c)
                    if helpers::method_call(c).is_some_and(|(m, _)| MOVES.contains(&m)));
                if replaced && moved_value {
                    self.out.moved = true;
                }
            }
            visitor::walk_stmt(self, stmt);
        }

        fn visit_expr(&mut self, expr: &'x Expr) {
            if let Expr::Call(c) = expr {
                if let Some((m, recv)) = helpers::method_call(c) {
                    if helpers::self_attribute(recv) == Some(self.name) && MOVES.contains(&m) {
                        self.out.moved = true;
                    }
                }
            }
            if helpers::self_attribute(expr) == Some(self.name) {
                self.out.read = true;
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut f = Finder {
        name,
        out: SelfAttrUse::default(),
    };
    f.visit_body(body);
    f.out
}

/// Is `stmt` an expression statement whose value a notebook displays: the last top-level
/// statement of its cell, not ending in `;` (Jupyter shows that value as the cell's output,
/// so it is not discarded). Always false for Python files.
pub(crate) fn displayed_by_notebook(checker: &Checker, stmt: &Stmt) -> bool {
    use ruff_text_size::Ranged;
    if checker.source.cells().is_none() || !matches!(stmt, Stmt::Expr(_)) {
        return false;
    }
    let body = &checker.module().body;
    let Some(pos) = body.iter().position(|s| s.range() == stmt.range()) else {
        return false;
    };
    let cell = checker.source.cell_index(stmt.start());
    let last_in_cell = body
        .get(pos + 1)
        .is_none_or(|next| checker.source.cell_index(next.start()) != cell);
    if !last_in_cell {
        return false;
    }
    // `x.float();` suppresses the output.
    let text = &checker.source.text;
    let rest = text.get(stmt.end().to_usize()..).unwrap_or("");
    let line_rest = rest.split('\n').next().unwrap_or("");
    !line_rest.trim_start().starts_with(';')
}

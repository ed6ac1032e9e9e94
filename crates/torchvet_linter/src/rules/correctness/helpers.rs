//! Helpers shared by the correctness rules: recognising constructor calls of torch classes and a
//! small per-file record of what local names were last assigned from (a light "value kind").
use crate::checker::Checker;
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::Ranged;
use rustc_hash::FxHashMap;
use torchvet_semantic::{helpers, ScopeKind};

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

/// Where a tracked name lives: a function (by its start offset), the module, or a class's
/// `self.x` attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Owner {
    Module,
    Function(u32),
    Class(u32),
}

/// What simple names (and `self.x` attributes) were last assigned from, in visiting order.
/// Each rule that needs one keeps its own in a `thread_local!`; statements are fed in source
/// order by the rule's `stmt` hook and the record is cleared by its `end` hook.
#[derive(Debug)]
pub(crate) struct LocalKinds<K> {
    file: (usize, usize),
    map: FxHashMap<(Owner, String), K>,
}

impl<K> Default for LocalKinds<K> {
    fn default() -> Self {
        Self {
            file: (0, 0),
            map: FxHashMap::default(),
        }
    }
}

/// Which file a checker is on (for per-file state kept in thread-locals).
pub(crate) fn file_key(checker: &Checker) -> (usize, usize) {
    (
        std::ptr::from_ref(checker.source) as usize,
        checker.source.text.len(),
    )
}

impl<K: Copy> LocalKinds<K> {
    fn sync(&mut self, checker: &Checker) {
        let key = file_key(checker);
        if self.file != key {
            self.map.clear();
            self.file = key;
        }
    }

    /// Forget everything (call from the rule's `end` hook).
    pub(crate) fn clear(&mut self) {
        self.map.clear();
        self.file = (0, 0);
    }

    fn key(checker: &Checker, expr: &Expr) -> Option<(Owner, String)> {
        match expr {
            Expr::Name(n) => {
                let name = n.id.as_str();
                let scope = checker.scopes.current()?;
                match scope.kind {
                    ScopeKind::Module => Some((Owner::Module, name.to_string())),
                    ScopeKind::Class => None,
                    ScopeKind::Function => {
                        if scope.binds_locally(name) || scope.import(name).is_some() {
                            let f = checker.function()?;
                            Some((
                                Owner::Function(f.range().start().to_u32()),
                                name.to_string(),
                            ))
                        } else {
                            Some((Owner::Module, name.to_string()))
                        }
                    }
                }
            }
            Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => {
                let class = checker.frame().method_of?;
                Some((
                    Owner::Class(class.def.range().start().to_u32()),
                    format!("self.{}", a.attr),
                ))
            }
            _ => None,
        }
    }

    /// Record that `target` now holds a value of `kind` (`None`: something else).
    pub(crate) fn assign(&mut self, checker: &Checker, target: &Expr, kind: Option<K>) {
        self.sync(checker);
        if kind.is_none() && self.map.is_empty() {
            // Nothing to forget (the common case: no value of the kind in the file so far).
            return;
        }
        match target {
            Expr::Tuple(t) => t.elts.iter().for_each(|e| self.assign(checker, e, None)),
            Expr::List(l) => l.elts.iter().for_each(|e| self.assign(checker, e, None)),
            Expr::Starred(s) => self.assign(checker, &s.value, None),
            _ => {
                let Some(key) = Self::key(checker, target) else {
                    return;
                };
                match kind {
                    Some(k) => {
                        self.map.insert(key, k);
                    }
                    None => {
                        self.map.remove(&key);
                    }
                }
            }
        }
    }

    /// The kind `expr` (a name or `self.x`) was last assigned, if known.
    pub(crate) fn get(&self, checker: &Checker, expr: &Expr) -> Option<K> {
        if self.file != file_key(checker) || self.map.is_empty() {
            return None;
        }
        let key = Self::key(checker, expr)?;
        self.map.get(&key).copied()
    }

    /// Feed one statement: assignments record `classify(value)`, other bindings forget.
    pub(crate) fn observe(
        &mut self,
        checker: &Checker,
        stmt: &Stmt,
        classify: impl Fn(&Checker, &Self, &Expr) -> Option<K>,
    ) {
        self.sync(checker);
        match stmt {
            Stmt::Assign(a) => {
                let kind = classify(checker, self, &a.value);
                for t in &a.targets {
                    self.assign(checker, t, kind);
                }
            }
            Stmt::AnnAssign(a) => {
                let kind = a.value.as_deref().and_then(|v| classify(checker, self, v));
                self.assign(checker, &a.target, kind);
            }
            Stmt::AugAssign(a) => self.assign(checker, &a.target, None),
            Stmt::For(f) => self.assign(checker, &f.target, None),
            Stmt::With(w) => {
                for item in &w.items {
                    if let Some(v) = &item.optional_vars {
                        self.assign(checker, v, None);
                    }
                }
            }
            _ => {}
        }
    }
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

/// `self.x = <value>` statements of a function body (any nesting), with `x` and the value.
pub(crate) fn self_assignments(body: &[Stmt]) -> Vec<(&str, &Expr, &Stmt)> {
    let mut out = Vec::new();
    for_each_stmt(body, &mut |s| {
        if let Stmt::Assign(a) = s {
            for t in &a.targets {
                if let Some(x) = helpers::self_attribute(t) {
                    out.push((x, &*a.value, s));
                }
            }
        }
        if let Stmt::AnnAssign(a) = s {
            if let (Some(x), Some(v)) = (helpers::self_attribute(&a.target), a.value.as_deref()) {
                out.push((x, v, s));
            }
        }
    });
    out
}

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

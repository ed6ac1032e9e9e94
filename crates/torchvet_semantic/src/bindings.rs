//! Name bindings per scope.
//!
//! Each scope records the names it imports (with the qualified name they stand for) and the
//! names it binds in any other way (parameters, assignments, loop targets, defs). A lookup walks
//! the scopes from the innermost outwards, skipping class scopes for code inside methods, as
//! Python does. Within one scope an import wins over other bindings of the same name, because
//! the common case is a compatibility shim (`try: from x import y` / `except: y = None`).
use ruff_python_ast::{self as ast, ExceptHandler, Expr, Stmt};
use rustc_hash::{FxHashMap, FxHashSet};

/// What a scope belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScopeKind {
    /// The module.
    Module,
    /// A class body.
    Class,
    /// A function body (or lambda).
    Function,
}

/// One scope's bindings.
#[derive(Debug, PartialEq)]
pub struct Scope {
    /// Module, class or function.
    pub kind: ScopeKind,
    imports: FxHashMap<String, String>,
    locals: FxHashSet<String>,
    /// Names imported in a `try:` body that an `except` handler binds too (`try: from
    /// torch.cuda.amp import GradScaler` / `except ImportError: class GradScaler: ...`).
    fallbacks: FxHashSet<String>,
    /// Names bound only by an undecorated `def` or a `class` statement (no assignment,
    /// parameter, loop target or decorated definition binds them here).
    defs: FxHashSet<String>,
}

impl Scope {
    /// Collect the bindings of a suite (not descending into nested defs/classes).
    pub fn collect(
        kind: ScopeKind,
        body: &[Stmt],
        params: Option<&ast::Parameters>,
        outer: &Scopes,
    ) -> Self {
        let mut scope = Scope {
            kind,
            imports: FxHashMap::default(),
            locals: FxHashSet::default(),
            fallbacks: FxHashSet::default(),
            defs: FxHashSet::default(),
        };
        if let Some(params) = params {
            for p in params.iter() {
                scope.bind_local(p.name().as_str());
            }
        }
        let mut aliases = Vec::new();
        scope.collect_suite(body, &mut aliases);
        // Simple aliases (`_BN = nn.BatchNorm2d`) resolve through imports already known.
        for (name, value) in aliases {
            if scope.imports.contains_key(name) {
                continue;
            }
            let resolved = {
                let mut chain = Vec::new();
                if collect_chain(value, &mut chain) {
                    let root = chain[0];
                    scope
                        .imports
                        .get(root)
                        .cloned()
                        .or_else(|| {
                            if scope.locals.contains(root) {
                                None
                            } else {
                                outer.lookup(root)
                            }
                        })
                        .map(|q| join_chain(&q, &chain[1..]))
                } else {
                    None
                }
            };
            match resolved {
                Some(q) => {
                    scope.imports.insert(name.to_string(), q);
                }
                None => {
                    scope.bind_local(name);
                }
            }
        }
        scope
    }

    /// Bind `name` other than by import (allocating only for a name not bound yet).
    fn bind_local(&mut self, name: &str) {
        if !self.locals.contains(name) {
            self.locals.insert(name.to_string());
        } else if !self.defs.is_empty() {
            self.defs.remove(name);
        }
    }

    /// Bind `name` by a `def` or `class` statement: a definition only while nothing else
    /// binds it (a decorator may return anything).
    fn bind_def(&mut self, name: &str, decorated: bool) {
        if !self.locals.contains(name) {
            self.locals.insert(name.to_string());
            if !decorated {
                self.defs.insert(name.to_string());
            }
        } else if decorated && !self.defs.is_empty() {
            self.defs.remove(name);
        }
    }

    fn bind_target(&mut self, target: &Expr) {
        match target {
            Expr::Name(n) => {
                self.bind_local(n.id.as_str());
            }
            Expr::Tuple(t) => t.elts.iter().for_each(|e| self.bind_target(e)),
            Expr::List(l) => l.elts.iter().for_each(|e| self.bind_target(e)),
            Expr::Starred(s) => self.bind_target(&s.value),
            _ => {}
        }
    }

    fn collect_suite<'a>(&mut self, body: &'a [Stmt], aliases: &mut Vec<(&'a str, &'a Expr)>) {
        for stmt in body {
            self.collect_stmt(stmt, aliases);
        }
    }

    fn collect_stmt<'a>(&mut self, stmt: &'a Stmt, aliases: &mut Vec<(&'a str, &'a Expr)>) {
        match stmt {
            Stmt::Import(imp) => {
                for alias in &imp.names {
                    let full = alias.name.as_str();
                    match &alias.asname {
                        Some(asname) => {
                            if !self.imports.contains_key(asname.as_str()) {
                                self.imports.insert(asname.to_string(), full.to_string());
                            }
                        }
                        None => {
                            let root = full.split('.').next().unwrap_or(full);
                            if !self.imports.contains_key(root) {
                                self.imports.insert(root.to_string(), root.to_string());
                            }
                        }
                    }
                }
            }
            Stmt::ImportFrom(imp) => {
                let mut module = ".".repeat(imp.level as usize);
                if let Some(m) = &imp.module {
                    module.push_str(m.as_str());
                }
                for alias in &imp.names {
                    if alias.name.as_str() == "*" {
                        continue;
                    }
                    let bound = alias.asname.as_ref().unwrap_or(&alias.name).as_str();
                    if self.imports.contains_key(bound) {
                        continue;
                    }
                    let name = alias.name.as_str();
                    let mut q = String::with_capacity(module.len() + 1 + name.len());
                    q.push_str(&module);
                    if !(module.ends_with('.') || module.is_empty()) {
                        q.push('.');
                    }
                    q.push_str(name);
                    self.imports.insert(bound.to_string(), q);
                }
            }
            Stmt::Assign(a) => {
                if let ([Expr::Name(n)], Expr::Attribute(_) | Expr::Name(_)) =
                    (a.targets.as_slice(), &*a.value)
                {
                    aliases.push((n.id.as_str(), &a.value));
                } else {
                    a.targets.iter().for_each(|t| self.bind_target(t));
                }
            }
            Stmt::AnnAssign(a) => self.bind_target(&a.target),
            Stmt::AugAssign(a) => self.bind_target(&a.target),
            Stmt::For(f) => {
                self.bind_target(&f.target);
                self.collect_suite(&f.body, aliases);
                self.collect_suite(&f.orelse, aliases);
            }
            Stmt::While(w) => {
                self.collect_suite(&w.body, aliases);
                self.collect_suite(&w.orelse, aliases);
            }
            Stmt::If(i) => {
                self.collect_suite(&i.body, aliases);
                for clause in &i.elif_else_clauses {
                    self.collect_suite(&clause.body, aliases);
                }
            }
            Stmt::With(w) => {
                for item in &w.items {
                    if let Some(v) = &item.optional_vars {
                        self.bind_target(v);
                    }
                }
                self.collect_suite(&w.body, aliases);
            }
            Stmt::Try(t) => {
                let mut imported = Vec::new();
                for s in &t.body {
                    import_names(s, &mut imported);
                }
                for h in &t.handlers {
                    let ExceptHandler::ExceptHandler(h) = h;
                    for name in &imported {
                        if h.body.iter().any(|s| binds_name(s, name)) {
                            self.fallbacks.insert(name.clone());
                        }
                    }
                }
                self.collect_suite(&t.body, aliases);
                for h in &t.handlers {
                    let ExceptHandler::ExceptHandler(h) = h;
                    if let Some(name) = &h.name {
                        self.bind_local(name.as_str());
                    }
                    self.collect_suite(&h.body, aliases);
                }
                self.collect_suite(&t.orelse, aliases);
                self.collect_suite(&t.finalbody, aliases);
            }
            Stmt::Match(m) => {
                for case in &m.cases {
                    self.collect_suite(&case.body, aliases);
                }
            }
            Stmt::FunctionDef(f) => {
                self.bind_def(f.name.as_str(), !f.decorator_list.is_empty());
            }
            Stmt::ClassDef(c) => {
                self.bind_def(c.name.as_str(), false);
            }
            Stmt::Global(g) => {
                for n in &g.names {
                    self.locals.remove(n.as_str());
                    self.defs.remove(n.as_str());
                }
            }
            _ => {}
        }
    }

    /// Every imported name and the qualified name it stands for, sorted by name.
    pub fn imports(&self) -> impl Iterator<Item = (&str, &str)> {
        let mut v: Vec<(&str, &str)> = self
            .imports
            .iter()
            .map(|(n, q)| (n.as_str(), q.as_str()))
            .collect();
        v.sort_unstable();
        v.into_iter()
    }

    /// The qualified name an imported name stands for.
    pub fn import(&self, name: &str) -> Option<&str> {
        self.imports.get(name).map(String::as_str)
    }

    /// Bind `name` as an import of `q` unless the scope binds it already (names a star import
    /// of a project module brings in: `from utils import *` where utils does `import torch`).
    pub fn import_if_unbound(&mut self, name: &str, q: &str) {
        if !self.imports.contains_key(name) && !self.locals.contains(name) {
            self.imports.insert(name.to_string(), q.to_string());
        }
    }

    /// Whether the scope binds `name` other than by import.
    pub fn binds_locally(&self, name: &str) -> bool {
        self.locals.contains(name)
    }

    /// Whether the scope binds `name` only by an undecorated `def` or a `class` (and does not
    /// import it).
    pub fn binds_definition_only(&self, name: &str) -> bool {
        self.defs.contains(name) && !self.imports.contains_key(name)
    }
}

/// The names an import statement binds (nested `if`s of a `try` body included).
fn import_names(stmt: &Stmt, out: &mut Vec<String>) {
    match stmt {
        Stmt::Import(imp) => {
            for alias in &imp.names {
                let bound = match &alias.asname {
                    Some(a) => a.as_str(),
                    None => alias.name.split('.').next().unwrap_or(&alias.name),
                };
                out.push(bound.to_string());
            }
        }
        Stmt::ImportFrom(imp) => {
            for alias in &imp.names {
                out.push(alias.asname.as_ref().unwrap_or(&alias.name).to_string());
            }
        }
        Stmt::If(i) => {
            for s in i
                .body
                .iter()
                .chain(i.elif_else_clauses.iter().flat_map(|c| &c.body))
            {
                import_names(s, out);
            }
        }
        _ => {}
    }
}

/// Does the statement (an `except` handler's, top level or under `if`) bind `name`?
fn binds_name(stmt: &Stmt, name: &str) -> bool {
    let is = |e: &Expr| matches!(e, Expr::Name(n) if n.id.as_str() == name);
    match stmt {
        Stmt::ClassDef(c) => c.name.as_str() == name,
        Stmt::FunctionDef(f) => f.name.as_str() == name,
        Stmt::Assign(a) => a
            .targets
            .iter()
            .any(|t| is(t) || matches!(t, Expr::Tuple(tt) if tt.elts.iter().any(is))),
        Stmt::AnnAssign(a) => is(&a.target),
        Stmt::Import(_) | Stmt::ImportFrom(_) => {
            let mut names = Vec::new();
            import_names(stmt, &mut names);
            names.iter().any(|n| n == name)
        }
        Stmt::If(i) => i
            .body
            .iter()
            .chain(i.elif_else_clauses.iter().flat_map(|c| &c.body))
            .any(|s| binds_name(s, name)),
        _ => false,
    }
}

fn collect_chain<'a>(expr: &'a Expr, out: &mut Vec<&'a str>) -> bool {
    match expr {
        Expr::Name(n) => {
            out.push(n.id.as_str());
            true
        }
        Expr::Attribute(a) if collect_chain(&a.value, out) => {
            out.push(a.attr.as_str());
            true
        }
        _ => false,
    }
}

fn join_chain(root: &str, rest: &[&str]) -> String {
    let mut s = String::with_capacity(root.len() + rest.iter().map(|r| r.len() + 1).sum::<usize>());
    s.push_str(root);
    for r in rest {
        s.push('.');
        s.push_str(r);
    }
    s
}

/// The scopes phase 1 collected for one syntax tree (the module's own bindings, without
/// names of star imports, and each summarised function's and class's by where its definition
/// starts), handed to phase 2 with the kept tree so the checker does not collect them again.
/// A scope depends on its body and on the scopes around it; the checker takes them only when
/// its module scope is the same as this one (the star-imported names it binds included), so
/// every enclosing scope is the same too.
#[derive(Debug, Default)]
pub struct KeptScopes {
    module: Option<Scope>,
    defs: FxHashMap<u32, Scope>,
}

impl KeptScopes {
    /// The module's scope.
    pub fn module(&self) -> Option<&Scope> {
        self.module.as_ref()
    }

    /// Take the module's scope.
    pub fn take_module(&mut self) -> Option<Scope> {
        self.module.take()
    }

    /// Take the scope of the function or class whose definition starts at `start`.
    pub fn take(&mut self, start: u32) -> Option<Scope> {
        self.defs.remove(&start)
    }

    pub(crate) fn set_module(&mut self, scope: Scope) {
        self.module = Some(scope);
    }

    pub(crate) fn keep(&mut self, start: u32, scope: Scope) {
        self.defs.insert(start, scope);
    }
}

/// The stack of scopes visible at a point of the traversal.
#[derive(Debug, Default)]
pub struct Scopes {
    stack: Vec<Scope>,
    /// Per depth: a one-bit-per-name filter ([`name_bit`]) of every name imported by the
    /// scopes up to it. Most names looked up are imported nowhere (`self`, locals), and the
    /// filter answers them without a table look-up per scope.
    imported: Vec<NameBits>,
}

/// A set of names as bits: may hold false positives, never false negatives.
type NameBits = [u64; 4];

/// The bit of a name in a [`NameBits`].
fn name_bit(name: &str) -> (usize, u64) {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    name.hash(&mut h);
    let h = h.finish();
    // The hash's high bits mix best.
    let b = (h >> 56) as usize;
    (b >> 6, 1u64 << (b & 63))
}

impl Scopes {
    /// Enter a scope.
    pub fn push(&mut self, scope: Scope) {
        let mut bits = self.imported.last().copied().unwrap_or_default();
        for name in scope.imports.keys() {
            let (w, b) = name_bit(name);
            bits[w] |= b;
        }
        self.imported.push(bits);
        self.stack.push(scope);
    }

    /// Leave the innermost scope.
    pub fn pop(&mut self) {
        self.stack.pop();
        self.imported.pop();
    }

    /// Leave the innermost scope, giving it back.
    pub fn pop_scope(&mut self) -> Option<Scope> {
        self.imported.pop();
        self.stack.pop()
    }

    /// May a scope of the stack import `name`? (`false`: certainly none does.)
    fn may_import(&self, name: &str) -> bool {
        let Some(bits) = self.imported.last() else {
            return false;
        };
        let (w, b) = name_bit(name);
        bits[w] & b != 0
    }

    /// The innermost scope.
    pub fn current(&self) -> Option<&Scope> {
        self.stack.last()
    }

    /// The module's scope (the outermost).
    pub fn module_scope(&self) -> Option<&Scope> {
        self.stack.first()
    }

    /// Depth (1 = module).
    pub fn depth(&self) -> usize {
        self.stack.len()
    }

    /// The qualified name a bare name is bound to by an import, if any.
    pub fn lookup(&self, name: &str) -> Option<String> {
        self.lookup_str(name).map(str::to_string)
    }

    /// The innermost scope visible where the stack stands that binds `name` (by an import or
    /// otherwise), and its depth (0: the module). Class scopes are invisible to the functions
    /// nested in them. The walk every name query below shares.
    fn binding_scope(&self, name: &str) -> Option<(usize, &Scope)> {
        let innermost = self.stack.len().saturating_sub(1);
        self.stack.iter().enumerate().rev().find(|(i, scope)| {
            (scope.kind != ScopeKind::Class || *i == innermost)
                && (scope.import(name).is_some() || scope.binds_locally(name))
        })
    }

    /// [`Scopes::lookup`] without allocating.
    pub fn lookup_str(&self, name: &str) -> Option<&str> {
        if !self.may_import(name) {
            return None;
        }
        self.binding_scope(name)?.1.import(name)
    }

    /// Does a bare name refer to the module scope's own binding (an assignment, def or class
    /// at module level) where the stack stands: no visible inner scope binds or imports it?
    pub fn module_binds(&self, name: &str) -> bool {
        self.binding_scope(name)
            .is_some_and(|(i, scope)| i == 0 && scope.import(name).is_none())
    }

    /// The qualified name a bare name stands for when the scope that binds it where the stack
    /// stands binds it by an import and in no other way (no assignment, `def` or parameter of
    /// the same name in that scope).
    pub fn import_only(&self, name: &str) -> Option<&str> {
        if !self.may_import(name) {
            return None;
        }
        let (_, scope) = self.binding_scope(name)?;
        if scope.binds_locally(name) {
            return None;
        }
        scope.import(name)
    }

    /// Resolve `a.b.c` to the qualified name it stands for (`th.nn.functional.softmax` ->
    /// `torch.nn.functional.softmax`). `None` for anything not rooted in an import.
    pub fn resolve(&self, expr: &Expr) -> Option<String> {
        // Find the root name first, without allocating: most callees are not imports.
        let mut cur = expr;
        let root_name = loop {
            match cur {
                Expr::Name(n) => break n.id.as_str(),
                Expr::Attribute(a) => cur = &a.value,
                _ => return None,
            }
        };
        let root = self.lookup_str(root_name)?;
        fn push(expr: &Expr, out: &mut String) {
            if let Expr::Attribute(a) = expr {
                push(&a.value, out);
                out.push('.');
                out.push_str(a.attr.as_str());
            }
        }
        let mut s = String::with_capacity(root.len() + 24);
        s.push_str(root);
        push(expr, &mut s);
        Some(s)
    }

    /// Does a bare name refer, where the stack stands, to a function or class that its scope
    /// binds by nothing but an undecorated `def` or a `class` statement? Calling it runs that
    /// function or builds an object of that class. A `global`/`nonlocal` statement in a
    /// nested function may still rebind it: callers that care check the text for one.
    pub fn names_definition(&self, name: &str) -> bool {
        self.binding_scope(name)
            .is_some_and(|(_, scope)| scope.binds_definition_only(name))
    }

    /// Is this bare name bound at all where the stack stands (by an import, an assignment, a
    /// parameter, a def or class) in a scope visible here? A fix that adds an import of the
    /// name checks this first.
    pub fn is_bound(&self, name: &str) -> bool {
        self.binding_scope(name).is_some()
    }

    /// Is the import that binds this bare name here a `try:` whose `except` handler binds the
    /// name too (a fallback definition for torch versions or installs without it)? The name
    /// then may not be the imported object at all.
    pub fn import_has_fallback(&self, name: &str) -> bool {
        self.may_import(name)
            && self.binding_scope(name).is_some_and(|(_, scope)| {
                scope.import(name).is_some() && scope.fallbacks.contains(name)
            })
    }

    /// Is this bare name bound by an import to exactly `qualified`?
    pub fn name_is(&self, name: &str, qualified: &str) -> bool {
        self.lookup_str(name) == Some(qualified)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torchvet_python::SourceFile;

    fn module_scopes(src: &str) -> (Scopes, ast::ModModule) {
        let file = SourceFile::from_python("t.py", src.to_string());
        let module = file.parse().into_syntax();
        let mut scopes = Scopes::default();
        let scope = Scope::collect(ScopeKind::Module, &module.body, None, &scopes);
        scopes.push(scope);
        (scopes, module)
    }

    fn expr_of(module: &ast::ModModule, i: usize) -> &Expr {
        match &module.body[i] {
            Stmt::Expr(e) => &e.value,
            _ => panic!("not an expression statement"),
        }
    }

    #[test]
    fn resolves_aliases() {
        let src = "import torch as th\nimport torch.nn.functional as F\nfrom torch import nn\nfrom torch.cuda.amp import autocast\nimport torch.utils.data\nfrom .models import load\n_BN = nn.BatchNorm2d\ntry:\n    from torch._six import inf\nexcept ImportError:\n    inf = float('inf')\nth.load\nF.softmax\nnn.Linear\nautocast\ntorch.utils.data.DataLoader\nload\n_BN\ninf\n";
        let (scopes, m) = module_scopes(src);
        let n = m.body.len();
        let got: Vec<Option<String>> = (n - 8..n).map(|i| scopes.resolve(expr_of(&m, i))).collect();
        assert_eq!(
            got,
            vec![
                Some("torch.load".into()),
                Some("torch.nn.functional.softmax".into()),
                Some("torch.nn.Linear".into()),
                Some("torch.cuda.amp.autocast".into()),
                Some("torch.utils.data.DataLoader".into()),
                Some(".models.load".into()),
                Some("torch.nn.BatchNorm2d".into()),
                Some("torch._six.inf".into()),
            ]
        );
        assert_eq!(scopes.lookup("inf").as_deref(), Some("torch._six.inf"));
    }

    #[test]
    fn locals_shadow_imports_in_functions() {
        let src = "import torch\ndef f(torch):\n    torch.load\n";
        let (mut scopes, m) = module_scopes(src);
        let Stmt::FunctionDef(f) = &m.body[1] else {
            panic!()
        };
        let scope = Scope::collect(ScopeKind::Function, &f.body, Some(&f.parameters), &scopes);
        scopes.push(scope);
        let Stmt::Expr(e) = &f.body[0] else { panic!() };
        assert_eq!(scopes.resolve(&e.value), None);
        scopes.pop();
        assert_eq!(scopes.lookup("torch").as_deref(), Some("torch"));
    }

    #[test]
    fn definitions_bound_no_other_way() {
        let src = "from models import build
def helper(x):
    return x
class Net:
    pass
def model(x):
    return x
model = Net()
net = Net()
def net(x):
    return x
@torch.compile
def fast(x):
    return x
def build(x):
    return x
def shadowed(x):
    return x
";
        let (mut scopes, m) = module_scopes(src);
        assert!(scopes.names_definition("helper"));
        assert!(scopes.names_definition("Net"));
        // Rebound by an assignment (after or before the `def`), decorated, or imported.
        assert!(!scopes.names_definition("model"));
        assert!(!scopes.names_definition("net"));
        assert!(!scopes.names_definition("fast"));
        assert!(!scopes.names_definition("build"));
        assert!(!scopes.names_definition("len"));
        // A parameter of the function visited hides the module's definition.
        let Some(Stmt::FunctionDef(f)) = m
            .body
            .iter()
            .find(|s| matches!(s, Stmt::FunctionDef(f) if f.name.as_str() == "helper"))
        else {
            panic!()
        };
        let mut params = f.parameters.clone();
        params.args[0].parameter.name = ast::Identifier::new("shadowed", Default::default());
        scopes.push(Scope::collect(
            ScopeKind::Function,
            &f.body,
            Some(&params),
            &scopes,
        ));
        assert!(!scopes.names_definition("shadowed"));
        assert!(scopes.names_definition("helper"));
    }
}

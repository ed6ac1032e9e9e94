//! Which bindings of a name may reach a use, in statement order: the one query behind "what
//! was this name last assigned" for the semantic layer and every rule.
//!
//! Kinds and values keyed by name alone ignore order: `net = Net(); torch.save(net, p);
//! net = torch.load(p)` joins a module and a loaded object into "unknown" at the save. This
//! answers with the bindings that may reach one point of a body (a function's or the
//! module's, nested blocks included, nested functions and classes not): the last one before
//! it on a straight path, the union of the branches of an `if`/`try`/`match` before it (only
//! the branch holding the use when it lies in one), a loop's body joined with the way around
//! it (zero iterations). [`reaching`] also lets a use inside a loop see the bindings later in
//! that loop (the next iteration sees them); [`bindings_at`] does not. Flow-insensitive inside
//! expressions; `at` is the offset of the use. [`comprehension_binding`] answers for the
//! comprehensions around a use, [`every_binding`] for a name read by a function that does
//! not bind it (every module-level binding, in no order).
use crate::helpers::{binds, name_of};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextSize};

/// One binding that may reach the use.
#[derive(Clone, Copy, Debug)]
pub enum Def<'a> {
    /// `name = value` / `name: T = value`: the value.
    Value(&'a Expr),
    /// `for name in iter` / `for a, name in iter`: the iterable, and the element's index when
    /// the target is a flat tuple.
    ForIter(&'a Expr, Option<usize>),
    /// A comprehension's `for name in iter` ([`comprehension_binding`] only: the frame scans
    /// do not enter expressions).
    CompIter(&'a Expr, Option<usize>),
    /// Any other binding: a parameter, unpacking, a `with` target, `+=`, an import, a `def`,
    /// `del`, `global`.
    Other,
}

/// The bindings of `name` in `body` that may reach offset `at`, a use inside a loop seeing
/// the loop's later assignments too. `None` when none does (the name is not bound in this
/// body before `at`: a parameter, a module-level name seen from a function, or a use before
/// any assignment).
pub fn reaching<'a>(body: &'a [Stmt], name: &str, at: TextSize) -> Option<Vec<Def<'a>>> {
    let mut cur = Vec::new();
    Scan {
        name,
        at,
        loop_carried: true,
    }
    .body(body, &mut cur);
    (!cur.is_empty()).then_some(cur)
}

/// The value a plain name holds at offset `at` of a module, when exactly one assignment of
/// it reaches there in the innermost function holding `at` (or in the module body, for
/// module-level code): `train_ds = TensorDataset(x, y)` for the `train_ds` of a later
/// `DataLoader(train_ds)`. For queries asked after the walk (`end` hooks), where no frame
/// of the visit is at hand.
pub fn value_at<'a>(module: &'a [Stmt], name: &str, at: TextSize) -> Option<&'a Expr> {
    let (body, params) = match crate::helpers::location_at(module, at).0 {
        Some(f) => (&f.body[..], Some(&*f.parameters)),
        None => (module, None),
    };
    match bindings_at(body, params, name, at)[..] {
        [Def::Value(v)] => Some(v),
        _ => None,
    }
}

/// What an expression stands for at offset `at` of a module: for a plain name, the one value
/// [`value_at`] finds for it; otherwise (or when no single value reaches) the expression
/// itself.
pub fn value_or_self<'a>(module: &'a [Stmt], e: &'a Expr, at: TextSize) -> &'a Expr {
    match e {
        Expr::Name(n) => value_at(module, n.id.as_str(), at).unwrap_or(e),
        _ => e,
    }
}

/// The bindings of `name` that may reach `at` in a frame (`params` are bound on entry),
/// without the bindings a later iteration of an enclosing loop would bring.
pub fn bindings_at<'a>(
    body: &'a [Stmt],
    params: Option<&ast::Parameters>,
    name: &str,
    at: TextSize,
) -> Vec<Def<'a>> {
    let mut cur = Vec::new();
    if params.is_some_and(|p| p.iter().any(|p| p.name().as_str() == name)) {
        cur.push(Def::Other);
    }
    Scan {
        name,
        at,
        loop_carried: false,
    }
    .body(body, &mut cur);
    cur
}

/// Every binding of `name` in `body` (nested blocks included, nested functions and classes
/// not), in source order, regardless of control flow: what a function may see of a name of
/// the module it does not bind itself (it may run after any of them).
pub fn every_binding<'a>(body: &'a [Stmt], name: &str) -> Vec<Def<'a>> {
    let scan = Scan {
        name,
        at: TextSize::from(u32::MAX),
        loop_carried: false,
    };
    let mut out = Vec::new();
    crate::helpers::for_each_own_stmt(body, &mut |stmt| {
        let mut cur = Vec::new();
        match stmt {
            // Headers only: the suites are visited statement by statement.
            Stmt::For(f) => cur.extend(for_target(f, name)),
            Stmt::With(w) => cur.extend(with_target(w, name)),
            Stmt::While(_) | Stmt::If(_) | Stmt::Try(_) | Stmt::Match(_) => {}
            _ => {
                scan.stmt(stmt, &mut cur);
            }
        }
        merge(&mut out, &cur);
    });
    out
}

/// The binding a `for` header makes of `name`.
fn for_target<'a>(f: &'a ast::StmtFor, name: &str) -> Option<Def<'a>> {
    match target_index(&f.target, name) {
        Some(idx) => Some(Def::ForIter(&f.iter, idx)),
        None if binds(&f.target, name) => Some(Def::Other),
        None => None,
    }
}

/// The binding a `with` header makes of `name` (`as name`).
fn with_target<'a>(w: &ast::StmtWith, name: &str) -> Option<Def<'a>> {
    w.items
        .iter()
        .any(|i| i.optional_vars.as_deref().is_some_and(|v| binds(v, name)))
        .then_some(Def::Other)
}

/// The binding of `name` made by the innermost enclosing comprehension whose `for` binds it:
/// `exprs` are the expressions around the use, outermost first (a visitor's stack); a
/// generator whose iterable holds `at` does not bind there (`[x for x in f(x)]`). `None` when
/// no enclosing comprehension binds `name` (ask the frame: [`bindings_at`]).
pub fn comprehension_binding<'a>(exprs: &[&'a Expr], name: &str, at: TextSize) -> Option<Def<'a>> {
    for e in exprs.iter().rev() {
        let generators = match e {
            Expr::ListComp(c) => &c.generators,
            Expr::SetComp(c) => &c.generators,
            Expr::DictComp(c) => &c.generators,
            Expr::Generator(c) => &c.generators,
            _ => continue,
        };
        for g in generators.iter().rev() {
            if g.iter.range().contains(at) {
                continue;
            }
            match target_index(&g.target, name) {
                Some(idx) => return Some(Def::CompIter(&g.iter, idx)),
                None if binds(&g.target, name) => return Some(Def::Other),
                None => {}
            }
        }
    }
    None
}

/// `Some(None)` when `target` is exactly `name`, `Some(Some(i))` when it is a flat tuple whose
/// element `i` is `name`.
pub fn target_index(target: &Expr, name: &str) -> Option<Option<usize>> {
    match target {
        Expr::Name(n) if n.id.as_str() == name => Some(None),
        Expr::Tuple(t) => t
            .elts
            .iter()
            .position(|e| name_of(e) == Some(name))
            .map(Some),
        _ => None,
    }
}

/// The element of a tuple or list display that a parallel assignment binds to `name`:
/// `queries, keys = torch.normal(...), torch.ones(...)` gives `keys` the second.
fn parallel_element<'a>(target: &Expr, value: &'a Expr, name: &str) -> Option<&'a Expr> {
    let (
        Some(Some(i)),
        Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }),
    ) = (target_index(target, name), value)
    else {
        return None;
    };
    let flat = |es: &[Expr]| !es.iter().any(|e| matches!(e, Expr::Starred(_)));
    let Expr::Tuple(t) = target else { return None };
    (t.elts.len() == elts.len() && flat(&t.elts) && flat(elts)).then(|| &elts[i])
}

/// The assignments of `name` that may reach `at` in the frame a use sees: the current
/// function when it binds `name` (or imports it), otherwise the module (a function reading a
/// module-level name sees the module's assignments before its `def`). `None` in a class body,
/// for a name neither binds (a builtin), and when no assignment reaches `at`.
pub fn reaching_in_frame<'a>(
    scopes: &crate::bindings::Scopes,
    function: Option<&'a ast::StmtFunctionDef>,
    module: &'a ast::ModModule,
    name: &str,
    at: TextSize,
) -> Option<Vec<Def<'a>>> {
    use crate::bindings::{Scope, ScopeKind};
    let bound = |s: &Scope| s.binds_locally(name) || s.import(name).is_some();
    let scope = scopes.current()?;
    let body: &'a [Stmt] = match (scope.kind, function) {
        (ScopeKind::Class, _) => return None,
        (ScopeKind::Function, Some(f)) if bound(scope) => &f.body,
        _ if scopes.module_scope().is_some_and(bound) => &module.body,
        _ => return None,
    };
    reaching(body, name, at)
}

fn same(a: &Def, b: &Def) -> bool {
    match (a, b) {
        (Def::Value(x), Def::Value(y)) => std::ptr::eq(*x, *y),
        (Def::ForIter(x, i), Def::ForIter(y, j)) | (Def::CompIter(x, i), Def::CompIter(y, j)) => {
            std::ptr::eq(*x, *y) && i == j
        }
        (Def::Other, Def::Other) => true,
        _ => false,
    }
}

fn merge<'a>(into: &mut Vec<Def<'a>>, from: &[Def<'a>]) {
    for b in from {
        if !into.iter().any(|x| same(x, b)) {
            into.push(*b);
        }
    }
}

fn set<'a>(cur: &mut Vec<Def<'a>>, b: Def<'a>) {
    cur.clear();
    cur.push(b);
}

struct Scan<'n> {
    name: &'n str,
    at: TextSize,
    /// A use inside a loop also sees what the rest of the loop body binds.
    loop_carried: bool,
}

impl Scan<'_> {
    /// The same scan with no use to stop at: the effect of whole suites.
    fn whole(&self) -> Self {
        Scan {
            name: self.name,
            at: TextSize::from(u32::MAX),
            loop_carried: false,
        }
    }

    /// Run the bindings of a suite into `cur`; `true` once `at` is reached (stop).
    fn body<'a>(&self, body: &'a [Stmt], cur: &mut Vec<Def<'a>>) -> bool {
        for stmt in body {
            if stmt.start() >= self.at || self.stmt(stmt, cur) {
                return true;
            }
        }
        false
    }

    /// A loop body about to be scanned for a use inside it: with `loop_carried`, the use also
    /// sees what the whole body binds (the next iteration).
    fn carry<'a>(&self, body: &'a [Stmt], cur: &mut Vec<Def<'a>>) {
        let holds = body.first().is_some_and(|s| s.start() <= self.at)
            && body.last().is_some_and(|s| s.end() > self.at);
        if self.loop_carried && holds {
            let mut end = cur.clone();
            self.whole().body(body, &mut end);
            merge(cur, &end);
        }
    }

    /// Alternative suites (branches): `cur` becomes the union of their outcomes (plus the
    /// incoming bindings when no branch has to run), or the outcome of the branch holding `at`.
    fn branches<'a>(
        &self,
        branches: &[&'a [Stmt]],
        exhaustive: bool,
        cur: &mut Vec<Def<'a>>,
    ) -> bool {
        let before = cur.clone();
        let mut out = Vec::new();
        for branch in branches {
            let mut c = before.clone();
            if self.body(branch, &mut c) {
                *cur = c;
                return true;
            }
            merge(&mut out, &c);
        }
        if !exhaustive {
            merge(&mut out, &before);
        }
        *cur = out;
        false
    }

    fn stmt<'a>(&self, stmt: &'a Stmt, cur: &mut Vec<Def<'a>>) -> bool {
        let (name, at) = (self.name, self.at);
        let inside = stmt.range().contains(at);
        match stmt {
            Stmt::Assign(a) => {
                if a.value.end() <= at {
                    for t in &a.targets {
                        if name_of(t) == Some(name) {
                            set(cur, Def::Value(&a.value));
                        } else if let Some(v) = parallel_element(t, &a.value, name) {
                            set(cur, Def::Value(v));
                        } else if binds(t, name) {
                            set(cur, Def::Other);
                        }
                    }
                }
                inside
            }
            Stmt::AnnAssign(a) => {
                if name_of(&a.target) == Some(name) {
                    match &a.value {
                        Some(v) if v.end() <= at => set(cur, Def::Value(v)),
                        Some(_) => {}
                        None => set(cur, Def::Other),
                    }
                }
                inside
            }
            Stmt::AugAssign(a) => {
                if a.end() <= at && name_of(&a.target) == Some(name) {
                    set(cur, Def::Other);
                }
                inside
            }
            Stmt::For(f) => {
                if f.iter.end() > at {
                    return true;
                }
                let before = cur.clone();
                let rebinds = match for_target(f, name) {
                    Some(d) => {
                        set(cur, d);
                        true
                    }
                    None => false,
                };
                // Every iteration rebinds the target: nothing carries round for it.
                if !rebinds {
                    self.carry(&f.body, cur);
                }
                if self.body(&f.body, cur) {
                    return true;
                }
                merge(cur, &before);
                self.body(&f.orelse, cur) || inside
            }
            Stmt::While(w) => {
                let before = cur.clone();
                self.carry(&w.body, cur);
                if self.body(&w.body, cur) {
                    return true;
                }
                merge(cur, &before);
                self.body(&w.orelse, cur) || inside
            }
            Stmt::If(i) => {
                let mut branches: Vec<&[Stmt]> = vec![&i.body];
                branches.extend(i.elif_else_clauses.iter().map(|c| c.body.as_slice()));
                let exhaustive = i.elif_else_clauses.last().is_some_and(|c| c.test.is_none());
                self.branches(&branches, exhaustive, cur) || inside
            }
            Stmt::With(w) => {
                if let Some(d) = with_target(w, name) {
                    set(cur, d);
                }
                self.body(&w.body, cur) || inside
            }
            Stmt::Try(t) => {
                let before = cur.clone();
                if self.body(&t.body, cur) {
                    return true;
                }
                // A handler may start after any part of the body.
                let mut entry = before;
                merge(&mut entry, cur);
                let handlers: Vec<&[Stmt]> = t
                    .handlers
                    .iter()
                    .map(|h| {
                        let ast::ExceptHandler::ExceptHandler(h) = h;
                        h.body.as_slice()
                    })
                    .collect();
                let mut handled = entry;
                if self.branches(&handlers, true, &mut handled) {
                    *cur = handled;
                    return true;
                }
                let mut after_body = cur.clone();
                if self.body(&t.orelse, &mut after_body) {
                    *cur = after_body;
                    return true;
                }
                let mut out = after_body;
                if !t.handlers.is_empty() {
                    merge(&mut out, &handled);
                }
                *cur = out;
                self.body(&t.finalbody, cur) || inside
            }
            Stmt::Match(m) => {
                let branches: Vec<&[Stmt]> = m.cases.iter().map(|c| c.body.as_slice()).collect();
                self.branches(&branches, false, cur) || inside
            }
            Stmt::FunctionDef(f) => {
                if f.name.as_str() == name {
                    set(cur, Def::Other);
                }
                inside
            }
            Stmt::ClassDef(c) => {
                if c.name.as_str() == name {
                    set(cur, Def::Other);
                }
                inside
            }
            _ => {
                if binds_by_other_stmt(stmt, name) {
                    set(cur, Def::Other);
                }
                inside
            }
        }
    }
}

/// Does a simple statement other than an assignment bind `name` (import, `global`, `del`)?
pub fn binds_by_other_stmt(stmt: &Stmt, name: &str) -> bool {
    match stmt {
        Stmt::Import(i) => i.names.iter().any(|a| {
            a.asname
                .as_ref()
                .map(|n| n.as_str())
                .unwrap_or_else(|| a.name.as_str().split('.').next().unwrap_or(""))
                == name
        }),
        Stmt::ImportFrom(i) => i
            .names
            .iter()
            .any(|a| a.asname.as_ref().unwrap_or(&a.name).as_str() == name),
        Stmt::Global(g) => g.names.iter().any(|n| n.as_str() == name),
        Stmt::Nonlocal(g) => g.names.iter().any(|n| n.as_str() == name),
        Stmt::Delete(d) => d.targets.iter().any(|t| binds(t, name)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torchvet_python::SourceFile;

    /// The source text of each reaching value at the offset of `marker` (`Other` as `?`).
    fn at(src: &str, name: &str, marker: &str) -> Option<Vec<String>> {
        let source = SourceFile::from_python("t.py", src.to_string());
        let module = source.parse().into_syntax();
        let body = &module.body;
        let off = TextSize::try_from(src.find(marker).unwrap()).unwrap();
        reaching(body, name, off).map(|defs| {
            defs.iter()
                .map(|d| match d {
                    Def::Value(e) => src[e.range()].to_string(),
                    _ => "?".to_string(),
                })
                .collect()
        })
    }

    #[test]
    fn the_last_assignment_before_the_use_on_a_straight_path() {
        let src = "net = Net()\ntorch.save(net, p)\nnet = torch.load(p)\nuse(net)\n";
        assert_eq!(at(src, "net", "torch.save"), Some(vec!["Net()".into()]));
        assert_eq!(at(src, "net", "use("), Some(vec!["torch.load(p)".into()]));
        assert_eq!(at(src, "other", "use("), None);
    }

    #[test]
    fn branches_join_and_loops_see_the_next_iteration() {
        let src = "m = A()\nif c:\n    m = B()\nsave(m)\n";
        assert_eq!(at(src, "m", "save"), Some(vec!["B()".into(), "A()".into()]));
        let src = "m = A()\nif c:\n    m = B()\nelse:\n    m = C()\nsave(m)\n";
        assert_eq!(at(src, "m", "save"), Some(vec!["B()".into(), "C()".into()]));
        let src = "m = A()\nfor x in y:\n    save(m)\n    m = B()\n";
        assert_eq!(at(src, "m", "save"), Some(vec!["A()".into(), "B()".into()]));
        let src = "for m in models:\n    save(m)\n";
        assert_eq!(at(src, "m", "save"), Some(vec!["?".into()]));
        let src = "net = f(net)\n";
        assert_eq!(at(src, "net", "f("), None);
    }

    /// The source text of each value (`?` for other bindings).
    fn texts(src: &str, defs: &[Def]) -> Vec<String> {
        defs.iter()
            .map(|d| match d {
                Def::Value(e) => src[e.range()].to_string(),
                Def::ForIter(e, _) | Def::CompIter(e, _) => format!("for {}", &src[e.range()]),
                Def::Other => "?".to_string(),
            })
            .collect()
    }

    #[test]
    fn a_parallel_assignment_gives_each_name_its_element() {
        let src = "q, k = normal(0, 1), ones(2)\na, *b = f(), g()\nu, v = pair\nprint(k, b, v)\n";
        let module = SourceFile::from_python("t.py", src.to_string())
            .parse()
            .into_syntax();
        let at = TextSize::try_from(src.find("print").unwrap()).unwrap();
        let defs = |name| texts(src, &reaching(&module.body, name, at).unwrap());
        assert_eq!(defs("k"), vec!["ones(2)"]);
        assert_eq!(defs("b"), vec!["?"], "a starred target is not one element");
        assert_eq!(
            defs("v"),
            vec!["?"],
            "unpacking a value that is not a display"
        );
    }

    #[test]
    fn every_binding_ignores_order_and_control_flow() {
        let src = "d = 'cpu'\ndef f():\n    d = 'x'\nif c:\n    d = 'cuda'\nfor d in r:\n    pass\nwith o as d:\n    d, e = g()\n";
        let module = SourceFile::from_python("t.py", src.to_string())
            .parse()
            .into_syntax();
        assert_eq!(
            texts(src, &every_binding(&module.body, "d")),
            vec!["'cpu'", "'cuda'", "for r", "?"]
        );
        assert!(every_binding(&module.body, "f")
            .iter()
            .all(|d| matches!(d, Def::Other)));
        assert!(every_binding(&module.body, "zzz").is_empty());
    }

    #[test]
    fn comprehension_targets_bind_inside_their_comprehension() {
        let src = "[x for x in xs if f(x)]\n";
        let module = SourceFile::from_python("t.py", src.to_string())
            .parse()
            .into_syntax();
        let Stmt::Expr(e) = &module.body[0] else {
            panic!()
        };
        let stack = [&*e.value];
        let use_at = TextSize::try_from(src.find("f(x)").unwrap() + 2).unwrap();
        let d = comprehension_binding(&stack, "x", use_at).map(|d| texts(src, &[d]));
        assert_eq!(d, Some(vec!["for xs".to_string()]));
        assert!(comprehension_binding(&stack, "y", use_at).is_none());
        // Inside the iterable the generator's own target is not bound yet.
        let iter_at = TextSize::try_from(src.find("xs").unwrap()).unwrap();
        assert!(comprehension_binding(&stack, "x", iter_at).is_none());
    }
}

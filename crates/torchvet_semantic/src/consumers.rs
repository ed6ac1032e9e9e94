//! Where a value goes after it is made: does it reach the input of a call that can record an
//! autograd graph (a model, a `forward`, a project function), or does every use only read
//! it (its `.data`, its shape, a comparison) or combine it arithmetically into something that
//! is itself only read?
//!
//! A tensor that never reaches such a call records nothing where it is made: a constant
//! weight wrapped in a `Variable` and used as `(w * logits).data` is arithmetic whose result
//! is detached at once. The question is answered over the syntax of the function (for a local
//! name) or of the class's methods (for a `self.<attr>`), following the value through
//! assignments to other names; anything not understood counts as reaching a call.
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, ExprContext, Stmt};
use ruff_text_size::{Ranged, TextRange};

/// Attributes and methods whose result no longer holds the value's graph (or never did):
/// metadata, detached views, Python numbers.
const READS_ONLY: &[&str] = &[
    "data",
    "shape",
    "ndim",
    "dtype",
    "device",
    "is_cuda",
    "requires_grad",
    "grad",
    "size",
    "dim",
    "numel",
    "item",
    "tolist",
    "numpy",
    "detach",
];

/// Builtins that only read a value (an unresolved name: not rebound by the file).
const READING_BUILTINS: &[&str] = &[
    "len",
    "isinstance",
    "print",
    "type",
    "id",
    "str",
    "repr",
    "float",
    "int",
    "bool",
    "hasattr",
];

/// Recognises the reads of a bound target.
type Matcher = Box<dyn Fn(&Expr) -> bool>;

/// Where one occurrence of the value ends up.
enum Destination<'a> {
    /// The input of a call that may record a graph, or not understood.
    Consumed,
    /// Returned from the function (whole or as part of the returned value).
    Returned,
    /// Bound to these targets (names or attributes), whose own uses decide.
    Bound(Vec<&'a Expr>),
    /// Only read, or discarded.
    Dropped,
}

/// What a call does with a value handed to it, as the caller of [`reaches_call`] knows it
/// (by the callee's qualified name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallUse {
    /// Its result holds the value (`torch.cat`, `einops.rearrange`): follow the result.
    PassesThrough,
    /// It only reads the value (writes it to a file or a plot: `pickle.dump`, `numpy.save`):
    /// the value goes no further.
    Reads,
    /// Anything else: it may differentiate the value.
    Consumes,
}

/// Does the value of the expression at `target` (in `stmt`) reach a call that may record a
/// graph? `body` is the scope searched for the uses of the local names it is bound to (the
/// function's body, or the module's), `class_body` the enclosing class's body, searched for
/// `self.<attr>` it is stored in. `passes_through(func)` says what a call of `func` does with
/// it ([`CallUse`]): an operation on tensors (a torch function) whose result the value flows
/// into, a read (saving, plotting), or a model or function that may consume it.
/// `return_consumes()` says whether a value the function returns may reach such a call (the
/// caller's answer: `true` unless it knows what every caller does with the result).
pub fn reaches_call<'a>(
    stmt: &'a Stmt,
    target: TextRange,
    body: &'a [Stmt],
    class_body: Option<&'a [Stmt]>,
    passes_through: &dyn Fn(&Expr) -> CallUse,
    return_consumes: &dyn Fn() -> bool,
) -> bool {
    let uses = Uses {
        body,
        class_body,
        passes_through,
        return_consumes,
    };
    reaches(stmt, target, &uses, 0)
}

/// What [`reaches`] searches with (see [`reaches_call`]).
struct Uses<'a, 'f> {
    body: &'a [Stmt],
    class_body: Option<&'a [Stmt]>,
    passes_through: &'f dyn Fn(&Expr) -> CallUse,
    return_consumes: &'f dyn Fn() -> bool,
}

fn reaches<'a>(stmt: &'a Stmt, target: TextRange, uses: &Uses<'a, '_>, depth: u8) -> bool {
    let (body, class_body) = (uses.body, uses.class_body);
    // Deep enough for a figure's chain of reshapes (`out` -> `1 - (out + 1) / 2` ->
    // `hstack` -> `rearrange` -> `make_grid(x.detach())`); past it, a use is assumed.
    if depth > 6 {
        return true;
    }
    let targets = match destination(stmt, target, uses.passes_through) {
        Destination::Consumed => return true,
        Destination::Returned => return (uses.return_consumes)(),
        Destination::Dropped => return false,
        Destination::Bound(t) => t,
    };
    // Unpacking (`_, predicted = torch.max(out, 1)`, `(a, b), c = ...`): every name bound
    // may hold (part of) the value.
    fn flatten<'e>(t: &'e Expr, out: &mut Vec<&'e Expr>) {
        match t {
            Expr::Tuple(tt) => tt.elts.iter().for_each(|e| flatten(e, out)),
            Expr::List(l) => l.elts.iter().for_each(|e| flatten(e, out)),
            Expr::Starred(st) => flatten(&st.value, out),
            t => out.push(t),
        }
    }
    let mut flat = Vec::new();
    for t in targets {
        flatten(t, &mut flat);
    }
    let targets = flat;
    for t in targets {
        // A lambda parameter or comprehension variable of the same name is another variable
        // (`lambda m, i, out: maps.append(out)` does not read the `out` bound here).
        let shadowed = match t {
            Expr::Name(n) => Some(n.id.as_str()),
            _ => None,
        };
        let (scope, matches): (&[Stmt], Matcher) = match t {
            Expr::Name(n) => {
                let name = n.id.to_string();
                (
                    body,
                    Box::new(move |e: &Expr| matches!(e, Expr::Name(m) if m.id.as_str() == name)),
                )
            }
            Expr::Attribute(a) if matches!(&*a.value, Expr::Name(s) if s.id.as_str() == "self") => {
                let Some(cb) = class_body else {
                    return true;
                };
                let attr = a.attr.to_string();
                (
                    cb,
                    Box::new(move |e: &Expr| {
                        matches!(e, Expr::Attribute(x) if x.attr.as_str() == attr
                            && matches!(&*x.value, Expr::Name(s) if s.id.as_str() == "self"))
                    }),
                )
            }
            _ => return true,
        };
        // Only the loads the binding can reach: after it, in a loop around it (the next
        // iteration), or in a nested function or lambda (run at some later time). A name
        // reused for another value earlier (`output = model(inputs)` in the training loop
        // above a prediction's `output = model(img)`) is not this value. `self.<attr>` is
        // read from every method, in any order.
        let bound_at = stmt.range();
        let loops = if matches!(t, Expr::Name(_)) {
            enclosing_loops(scope, bound_at)
        } else {
            Vec::new()
        };
        // A later statement of the same suite that binds the name again (`pred =
        // pred.cpu().detach().numpy()`): loads after it read that value, not this one.
        let killed_at = match t {
            Expr::Name(n) if loops.is_empty() => rebound_after(scope, stmt, n.id.as_str()),
            _ => None,
        };
        for l in loads(scope, &*matches, shadowed) {
            if l.range == t.range() {
                continue;
            }
            // The value of an assignment that rebinds the name (`x = 1 - (x + 1) / 2`) reads
            // the old value, before this binding.
            let own_value =
                std::ptr::eq(l.stmt, stmt) && matches!(stmt, Stmt::Assign(_) | Stmt::AnnAssign(_));
            let killed = killed_at.is_some_and(|k| l.range.start() >= k);
            let reachable = !matches!(t, Expr::Name(_))
                || l.nested
                || (l.range.start() >= bound_at.start() && !own_value && !killed)
                || loops.iter().any(|r| r.contains_range(l.range));
            if reachable && reaches(l.stmt, l.range, uses, depth + 1) {
                return true;
            }
        }
    }
    false
}

/// Where the first later statement of the suite holding `stmt` (in `scope`, not inside nested
/// definitions) that binds `name` again by plain assignment ends.
fn rebound_after(scope: &[Stmt], stmt: &Stmt, name: &str) -> Option<ruff_text_size::TextSize> {
    let binds = |s: &Stmt| match s {
        Stmt::Assign(a) => a
            .targets
            .iter()
            .any(|t| matches!(t, Expr::Name(n) if n.id.as_str() == name)),
        Stmt::AnnAssign(a) => matches!(&*a.target, Expr::Name(n) if n.id.as_str() == name),
        _ => false,
    };
    if let Some(i) = scope.iter().position(|s| std::ptr::eq(s, stmt)) {
        return scope[i + 1..].iter().find(|s| binds(s)).map(|s| s.end());
    }
    scope
        .iter()
        .filter(|s| s.range().contains_range(stmt.range()))
        .filter(|s| !matches!(s, Stmt::FunctionDef(_) | Stmt::ClassDef(_)))
        .flat_map(crate::helpers::suites_of)
        .find_map(|suite| rebound_after(suite, stmt, name))
}

/// The ranges of the `for`/`while` statements of `scope` (not inside nested definitions)
/// that contain `range`.
fn enclosing_loops(scope: &[Stmt], range: TextRange) -> Vec<TextRange> {
    let mut out = Vec::new();
    crate::helpers::for_each_own_stmt(scope, &mut |st: &Stmt| {
        if matches!(st, Stmt::For(_) | Stmt::While(_)) && st.range().contains_range(range) {
            out.push(st.range());
        }
    });
    out
}

/// One load found by [`loads`].
struct Load<'a> {
    /// The innermost statement holding it.
    stmt: &'a Stmt,
    range: TextRange,
    /// Inside a nested function or lambda of the scope.
    nested: bool,
}

/// Every load of an expression matched by `matches` in `scope` (nested definitions
/// included). Not inside a lambda or comprehension that binds `shadowed` itself (its
/// parameter or loop variable is another variable).
fn loads<'a>(
    scope: &'a [Stmt],
    matches: &dyn Fn(&Expr) -> bool,
    shadowed: Option<&str>,
) -> Vec<Load<'a>> {
    struct L<'a, 'm> {
        matches: &'m dyn Fn(&Expr) -> bool,
        shadowed: Option<&'m str>,
        stmt: Option<&'a Stmt>,
        /// Inside a nested function or lambda (run at some later time).
        nested: u32,
        out: Vec<Load<'a>>,
    }
    impl<'a> Visitor<'a> for L<'a, '_> {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            let prev = self.stmt.replace(s);
            let def = matches!(s, Stmt::FunctionDef(_));
            self.nested += u32::from(def);
            visitor::walk_stmt(self, s);
            self.nested -= u32::from(def);
            self.stmt = prev;
        }
        fn visit_expr(&mut self, e: &'a Expr) {
            let load = match e {
                Expr::Name(n) => matches!(n.ctx, ExprContext::Load),
                Expr::Attribute(a) => matches!(a.ctx, ExprContext::Load),
                _ => false,
            };
            if load && (self.matches)(e) {
                if let Some(s) = self.stmt {
                    self.out.push(Load {
                        stmt: s,
                        range: e.range(),
                        nested: self.nested > 0,
                    });
                }
                return;
            }
            if let Some(name) = self.shadowed {
                let binds = match e {
                    Expr::Lambda(l) => l
                        .parameters
                        .as_ref()
                        .is_some_and(|p| p.iter().any(|p| p.name().as_str() == name)),
                    Expr::ListComp(ast::ExprListComp { generators, .. })
                    | Expr::SetComp(ast::ExprSetComp { generators, .. })
                    | Expr::DictComp(ast::ExprDictComp { generators, .. })
                    | Expr::Generator(ast::ExprGenerator { generators, .. }) => generators
                        .iter()
                        .any(|g| crate::helpers::binds(&g.target, name)),
                    _ => false,
                };
                if binds {
                    return;
                }
            }
            let lambda = matches!(e, Expr::Lambda(_));
            self.nested += u32::from(lambda);
            visitor::walk_expr(self, e);
            self.nested -= u32::from(lambda);
        }
    }
    let mut l = L {
        matches,
        shadowed,
        nested: 0,
        stmt: None,
        out: Vec::new(),
    };
    l.visit_body(scope);
    l.out
}

/// The expressions of `stmt` (not of statements nested in it) that contain `target`, outermost
/// first, ending with the expression at `target` itself.
fn ancestors(stmt: &Stmt, target: TextRange) -> Vec<&Expr> {
    struct A<'a> {
        target: TextRange,
        top: bool,
        stack: Vec<&'a Expr>,
        found: Option<Vec<&'a Expr>>,
    }
    impl<'a> Visitor<'a> for A<'a> {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            // Only the statement itself: its header expressions, not a nested suite.
            if self.top {
                self.top = false;
                visitor::walk_stmt(self, s);
            }
        }
        fn visit_expr(&mut self, e: &'a Expr) {
            if self.found.is_some() || !e.range().contains_range(self.target) {
                return;
            }
            self.stack.push(e);
            if e.range() == self.target {
                self.found = Some(self.stack.clone());
            } else {
                visitor::walk_expr(self, e);
            }
            self.stack.pop();
        }
    }
    let mut a = A {
        target,
        top: true,
        stack: Vec::new(),
        found: None,
    };
    a.visit_stmt(stmt);
    a.found.unwrap_or_default()
}

fn destination<'a>(
    stmt: &'a Stmt,
    target: TextRange,
    passes_through: &dyn Fn(&Expr) -> CallUse,
) -> Destination<'a> {
    let chain = ancestors(stmt, target);
    if chain.is_empty() {
        return Destination::Consumed;
    }
    // Walk outwards from the value; `cur` is the expression now holding it.
    let mut i = chain.len() - 1;
    let mut cur = chain[i];
    while i > 0 {
        let parent = chain[i - 1];
        match parent {
            Expr::Attribute(a) => {
                if READS_ONLY.contains(&a.attr.as_str()) {
                    return Destination::Dropped;
                }
                // A method call on the value: its result holds it.
                if i >= 2 {
                    if let Expr::Call(c) = chain[i - 2] {
                        if c.func.range() == a.range {
                            i -= 2;
                            cur = chain[i];
                            continue;
                        }
                    }
                }
            }
            Expr::Call(c) => {
                if c.func.range() == cur.range() {
                    return Destination::Consumed;
                }
                // `samples.append(out)`: the list holds it; its own uses decide.
                if let Expr::Attribute(a) = &*c.func {
                    let list = match &*a.value {
                        Expr::Name(_) => true,
                        Expr::Attribute(x) => {
                            matches!(&*x.value, Expr::Name(s) if s.id.as_str() == "self")
                        }
                        _ => false,
                    };
                    if list
                        && matches!(a.attr.as_str(), "append" | "extend" | "insert")
                        && c.arguments.args.iter().any(|x| x.range() == cur.range())
                    {
                        return Destination::Bound(vec![&*a.value]);
                    }
                }
                let usage = passes_through(&c.func);
                if let Expr::Name(n) = &*c.func {
                    if READING_BUILTINS.contains(&n.id.as_str()) && usage != CallUse::PassesThrough
                    {
                        return Destination::Dropped;
                    }
                }
                match usage {
                    CallUse::PassesThrough => {}
                    CallUse::Reads => return Destination::Dropped,
                    CallUse::Consumes => return Destination::Consumed,
                }
            }
            Expr::Subscript(s) => {
                if s.value.range() != cur.range() {
                    // Used as an index.
                    return Destination::Dropped;
                }
            }
            Expr::BinOp(_)
            | Expr::UnaryOp(_)
            | Expr::Tuple(_)
            | Expr::List(_)
            | Expr::Set(_)
            | Expr::Dict(_)
            | Expr::Starred(_) => {}
            Expr::If(t) => {
                if t.test.range() == cur.range() {
                    return Destination::Dropped;
                }
            }
            Expr::Compare(_) | Expr::FString(_) => return Destination::Dropped,
            _ => return Destination::Consumed,
        }
        i -= 1;
        cur = parent;
    }
    // `cur` is a whole expression of the statement.
    match stmt {
        Stmt::Assign(a) if a.value.range() == cur.range() => {
            // `x, y = Variable(a, volatile=True), b`: the element's own target.
            if let ([Expr::Tuple(tt)], Expr::Tuple(vt)) = (&a.targets[..], &*a.value) {
                if chain.len() >= 2
                    && tt.elts.len() == vt.elts.len()
                    && !tt.elts.iter().any(|e| matches!(e, Expr::Starred(_)))
                {
                    if let Some(k) = vt.elts.iter().position(|e| e.range() == chain[1].range()) {
                        return Destination::Bound(vec![&tt.elts[k]]);
                    }
                }
            }
            Destination::Bound(a.targets.iter().collect())
        }
        Stmt::AnnAssign(a) if a.value.as_deref().is_some_and(|v| v.range() == cur.range()) => {
            Destination::Bound(vec![&*a.target])
        }
        Stmt::AugAssign(a) if a.value.range() == cur.range() => {
            Destination::Bound(vec![&*a.target])
        }
        Stmt::Expr(_) => Destination::Dropped,
        Stmt::If(s) if s.test.range() == cur.range() => Destination::Dropped,
        Stmt::While(s) if s.test.range() == cur.range() => Destination::Dropped,
        Stmt::Assert(_) => Destination::Dropped,
        Stmt::Return(r) if r.value.as_deref().is_some_and(|v| v.range() == cur.range()) => {
            Destination::Returned
        }
        _ => Destination::Consumed,
    }
}

//! Private helpers of the model/device rules (wave 2, helper "model"): a source-order walk of a
//! function body that knows the enclosing `if` arms and loops of every statement, name-use
//! scans that do not enter nested scopes, "is this device CUDA", "is this a DataLoader
//! iteration", timer calls and float64 NumPy producers. Kept small so the lead can fold them
//! into the shared flow/dataflow analyses later.
use crate::checker::Checker;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, ExceptHandler, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;

/// The body to analyse once, when `stmt` is the first statement of the current function (or
/// of the module): rules analyse whole bodies from their `stmt` hook at that point, so that
/// `checker.kind_of` sees the function's frame.
pub(crate) fn analysed_body<'a>(checker: &Checker<'a>, stmt: &Stmt) -> Option<&'a [Stmt]> {
    let body: &'a [Stmt] = match checker.function() {
        Some(f) => &f.body,
        None => {
            if checker.stmt_stack().len() != 1 {
                return None;
            }
            &checker.module().body
        }
    };
    (body.first()?.range() == stmt.range()).then_some(body)
}

/// One arm of a branching statement: the statement's start, which arm, and whether the arm
/// ends by leaving the block (`return`/`raise`/`continue`/`break` as its last statement).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Arm {
    /// Start of the `if`/`try`/`match`.
    pub(crate) branch: TextSize,
    /// The arm index.
    pub(crate) index: usize,
    /// The arm leaves the enclosing block.
    pub(crate) exits: bool,
}

/// Where a statement sits: the `if`/`try` arms and the loops around it (outermost first).
#[derive(Clone, Debug, Default)]
pub(crate) struct Place<'a> {
    /// Enclosing arms.
    pub(crate) arms: Vec<Arm>,
    /// Enclosing loops (statements), the header of a loop is not inside it.
    pub(crate) loops: Vec<&'a Stmt>,
}

impl Place<'_> {
    /// Can the statements at `self` (earlier) and `later` not both run in one pass? True when
    /// they are in different arms of one branch, or `self` is in an arm that leaves the block
    /// and `later` is outside that branch.
    pub(crate) fn exclusive_with(&self, later: &Place) -> bool {
        for a in &self.arms {
            match later.arms.iter().find(|b| b.branch == a.branch) {
                Some(b) if b.index != a.index => return true,
                None if a.exits => return true,
                _ => {}
            }
        }
        false
    }

    /// Is the statement inside `stmt` (a loop)?
    pub(crate) fn in_loop(&self, stmt: &Stmt) -> bool {
        self.loops.iter().any(|l| l.range() == stmt.range())
    }
}

fn exits(body: &[Stmt]) -> bool {
    matches!(
        body.last(),
        Some(Stmt::Return(_) | Stmt::Raise(_) | Stmt::Continue(_) | Stmt::Break(_))
    )
}

/// Visit every statement of `body` in source order (nested suites included, nested
/// functions and classes not entered) with its place.
pub(crate) fn walk_body<'a>(body: &'a [Stmt], f: &mut impl FnMut(&'a Stmt, &Place<'a>)) {
    let mut place = Place::default();
    walk(body, &mut place, f);
}

fn walk<'a>(body: &'a [Stmt], place: &mut Place<'a>, f: &mut impl FnMut(&'a Stmt, &Place<'a>)) {
    for stmt in body {
        f(stmt, place);
        let start = stmt.start();
        let arm = |place: &mut Place<'a>, index: usize, suite: &'a [Stmt], f: &mut _| {
            place.arms.push(Arm {
                branch: start,
                index,
                exits: exits(suite),
            });
            walk(suite, place, f);
            place.arms.pop();
        };
        match stmt {
            Stmt::For(s) => {
                place.loops.push(stmt);
                walk(&s.body, place, f);
                place.loops.pop();
                walk(&s.orelse, place, f);
            }
            Stmt::While(s) => {
                place.loops.push(stmt);
                walk(&s.body, place, f);
                place.loops.pop();
                walk(&s.orelse, place, f);
            }
            Stmt::If(s) => {
                arm(place, 0, &s.body, f);
                for (i, c) in s.elif_else_clauses.iter().enumerate() {
                    arm(place, i + 1, &c.body, f);
                }
            }
            Stmt::With(s) => walk(&s.body, place, f),
            Stmt::Try(s) => {
                arm(place, 0, &s.body, f);
                for (i, h) in s.handlers.iter().enumerate() {
                    let ExceptHandler::ExceptHandler(h) = h;
                    arm(place, i + 1, &h.body, f);
                }
                walk(&s.orelse, place, f);
                walk(&s.finalbody, place, f);
            }
            Stmt::Match(m) => {
                for (i, c) in m.cases.iter().enumerate() {
                    arm(place, i, &c.body, f);
                }
            }
            _ => {}
        }
    }
}

/// The expressions a statement evaluates itself (for compound statements: the header only;
/// nested functions and classes: nothing).
pub(crate) fn own_exprs(stmt: &Stmt) -> Vec<&Expr> {
    match stmt {
        Stmt::For(s) => vec![&*s.iter],
        Stmt::While(s) => vec![&*s.test],
        Stmt::If(s) => std::iter::once(&*s.test)
            .chain(s.elif_else_clauses.iter().filter_map(|c| c.test.as_ref()))
            .collect(),
        Stmt::With(s) => s.items.iter().map(|i| &i.context_expr).collect(),
        Stmt::Match(m) => vec![&*m.subject],
        Stmt::Try(_) | Stmt::FunctionDef(_) | Stmt::ClassDef(_) => Vec::new(),
        Stmt::Expr(e) => vec![&*e.value],
        Stmt::Assign(a) => vec![&*a.value],
        Stmt::AnnAssign(a) => a.value.as_deref().into_iter().collect(),
        Stmt::AugAssign(a) => vec![&*a.target, &*a.value],
        Stmt::Return(r) => r.value.as_deref().into_iter().collect(),
        Stmt::Delete(d) => d.targets.iter().collect(),
        Stmt::Raise(r) => r.exc.as_deref().into_iter().collect(),
        Stmt::Assert(a) => std::iter::once(&*a.test).chain(a.msg.as_deref()).collect(),
        _ => Vec::new(),
    }
}

/// Names a statement binds (assignment targets, loop/with targets, `del`, imports, defs).
pub(crate) fn binds_name(stmt: &Stmt, name: &str) -> bool {
    fn target(e: &Expr, name: &str) -> bool {
        match e {
            Expr::Name(n) => n.id.as_str() == name,
            Expr::Tuple(t) => t.elts.iter().any(|e| target(e, name)),
            Expr::List(l) => l.elts.iter().any(|e| target(e, name)),
            Expr::Starred(s) => target(&s.value, name),
            _ => false,
        }
    }
    match stmt {
        Stmt::Assign(a) => a.targets.iter().any(|t| target(t, name)),
        Stmt::AnnAssign(a) => a.value.is_some() && target(&a.target, name),
        Stmt::AugAssign(a) => target(&a.target, name),
        Stmt::For(f) => target(&f.target, name),
        Stmt::With(w) => w
            .items
            .iter()
            .any(|i| i.optional_vars.as_deref().is_some_and(|v| target(v, name))),
        Stmt::Delete(d) => d.targets.iter().any(|t| target(t, name)),
        Stmt::FunctionDef(f) => f.name.as_str() == name,
        Stmt::ClassDef(c) => c.name.as_str() == name,
        Stmt::Import(i) => i.names.iter().any(|a| {
            a.asname
                .as_ref()
                .unwrap_or(&a.name)
                .as_str()
                .split('.')
                .next()
                == Some(name)
        }),
        Stmt::ImportFrom(i) => i
            .names
            .iter()
            .any(|a| a.asname.as_ref().unwrap_or(&a.name).as_str() == name),
        _ => false,
    }
}

/// Does a suite (nested suites included) bind `name` anywhere?
pub(crate) fn suite_binds(body: &[Stmt], name: &str) -> bool {
    let mut found = false;
    walk_body(body, &mut |s, _| {
        found |= binds_name(s, name) || walrus_binds(s, name)
    });
    found
}

fn walrus_binds(stmt: &Stmt, name: &str) -> bool {
    own_exprs(stmt).into_iter().any(|e| {
        let mut hit = false;
        visit_exprs(e, &mut |x| {
            if let Expr::Named(n) = x {
                hit |= helpers::name_of(&n.target) == Some(name);
            }
        });
        hit
    })
}

/// Visit `expr` and its sub-expressions (lambdas not entered).
pub(crate) fn visit_exprs<'a>(expr: &'a Expr, f: &mut impl FnMut(&'a Expr)) {
    struct V<'f, F>(&'f mut F);
    impl<'a, F: FnMut(&'a Expr)> Visitor<'a> for V<'_, F> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if matches!(expr, Expr::Lambda(_)) {
                return;
            }
            (self.0)(expr);
            visitor::walk_expr(self, expr);
        }
    }
    V(f).visit_expr(expr);
}

/// Does any own expression of the statement read `name`?
pub(crate) fn stmt_reads(stmt: &Stmt, name: &str) -> bool {
    own_exprs(stmt).into_iter().any(|e| expr_reads(e, name))
}

/// Does an expression read `name`?
pub(crate) fn expr_reads(expr: &Expr, name: &str) -> bool {
    let mut hit = false;
    visit_exprs(expr, &mut |x| {
        if let Expr::Name(n) = x {
            hit |= n.id.as_str() == name && n.ctx.is_load();
        }
    });
    hit
}

/// Every call inside the statement's own expressions.
pub(crate) fn calls_in(stmt: &Stmt) -> Vec<&ast::ExprCall> {
    let mut out = Vec::new();
    for e in own_exprs(stmt) {
        visit_exprs(e, &mut |x| {
            if let Expr::Call(c) = x {
                out.push(c);
            }
        });
    }
    out
}

/// Is `expr` a string literal naming a CUDA device (`"cuda"`, `"cuda:0"`), or
/// `torch.device("cuda"...)`, or `"cuda" if torch.cuda.is_available() else "cpu"` (CUDA
/// whenever a GPU is there)?
pub(crate) fn is_cuda_literal(checker: &Checker, expr: &Expr) -> bool {
    match expr {
        Expr::StringLiteral(s) => {
            let v = s.value.to_str();
            v == "cuda"
                || v.strip_prefix("cuda:")
                    .is_some_and(|n| n.parse::<u32>().is_ok())
        }
        Expr::Call(c) => {
            checker.resolves_to(&c.func, &["torch.device"])
                && c.arguments.keywords.is_empty()
                && c.arguments
                    .args
                    .first()
                    .is_some_and(|a| is_cuda_literal(checker, a))
        }
        Expr::If(i) => {
            let test_is_available = {
                let mut hit = false;
                visit_exprs(&i.test, &mut |x| {
                    if let Expr::Call(c) = x {
                        hit |= checker.resolves_to(&c.func, &["torch.cuda.is_available"]);
                    }
                });
                hit
            };
            test_is_available && is_cuda_literal(checker, &i.body)
        }
        _ => false,
    }
}

/// `"cpu"` or `torch.device("cpu")`.
pub(crate) fn is_cpu_literal(checker: &Checker, expr: &Expr) -> bool {
    match expr {
        Expr::StringLiteral(s) => s.value.to_str() == "cpu",
        Expr::Call(c) => {
            checker.resolves_to(&c.func, &["torch.device"])
                && c.arguments.keywords.is_empty()
                && matches!(&c.arguments.args[..], [a] if is_cpu_literal(checker, a))
        }
        _ => false,
    }
}

/// Is `expr` a CUDA device: a CUDA literal (see [`is_cuda_literal`]) or a plain name whose
/// every value that may reach it (see [`values_at`]) is one.
pub(crate) fn is_cuda_device(checker: &Checker, expr: &Expr) -> bool {
    if is_cuda_literal(checker, expr) {
        return true;
    }
    let Some(name) = helpers::name_of(expr) else {
        return false;
    };
    values_at(checker, name, expr.start()).is_some_and(|values| {
        values.iter().any(|v| is_cuda_literal(checker, v))
            && values
                .iter()
                .all(|v| is_cuda_literal(checker, v) || is_cpu_fallback(checker, v))
    })
}

/// A CPU device value bound only where CUDA is missing: the `else` of
/// `if torch.cuda.is_available():` or the body of `if not torch.cuda.is_available():` (the
/// statement form of `"cuda" if torch.cuda.is_available() else "cpu"`).
fn is_cpu_fallback(checker: &Checker, value: &Expr) -> bool {
    if !is_cpu_literal(checker, value) {
        return false;
    }
    let asks_cuda = |e: &Expr| matches!(e, Expr::Call(c) if checker.resolves_to(&c.func, &["torch.cuda.is_available"]));
    let within = |body: &[Stmt]| {
        body.first()
            .zip(body.last())
            .is_some_and(|(a, b)| TextRange::new(a.start(), b.end()).contains_range(value.range()))
    };
    let mut fallback = false;
    let mut visit = |st: &Stmt| {
        let Stmt::If(i) = st else { return };
        if !i.range.contains_range(value.range()) {
            return;
        }
        match &*i.test {
            Expr::UnaryOp(u) if u.op == ruff_python_ast::UnaryOp::Not && asks_cuda(&u.operand) => {
                fallback |= within(&i.body);
            }
            t if asks_cuda(t) => {
                fallback |=
                    matches!(&i.elif_else_clauses[..], [c] if c.test.is_none() && within(&c.body));
            }
            _ => {}
        }
    };
    if let Some(f) = checker.function() {
        helpers::for_each_own_stmt(&f.body, &mut visit);
    }
    helpers::for_each_own_stmt(&checker.module().body, &mut visit);
    fallback
}

/// The values `name` may hold at `at`, from the reaching-definitions engine: the bindings
/// that reach `at` in the function or module being checked (`Checker::reaching_defs`), or,
/// for a name the current function does not bind, every module-level binding
/// ([`torchvet_semantic::reaching::every_binding`]: the function may run after any of them).
/// `None` when one of them is not a plain `name = value` (a parameter, a loop target,
/// unpacking, `+=`, an import) or there is none.
pub(crate) fn values_at<'a>(
    checker: &Checker<'a>,
    name: &str,
    at: TextSize,
) -> Option<Vec<&'a Expr>> {
    use torchvet_semantic::reaching::{every_binding, Def};
    let global = checker.function().is_some()
        && !checker
            .scopes
            .current()
            .is_some_and(|s| s.binds_locally(name) || s.import(name).is_some());
    let defs = if global {
        every_binding(&checker.module().body, name)
    } else {
        checker.reaching_defs(name, at)?
    };
    let values = defs
        .iter()
        .map(|d| match d {
            Def::Value(v) => Some(*v),
            _ => None,
        })
        .collect::<Option<Vec<&'a Expr>>>()?;
    (!values.is_empty()).then_some(values)
}

/// The DataLoader a `for` loop iterates: `for b in loader`, `enumerate(loader)`,
/// `tqdm(loader)`, `enumerate(tqdm(loader))`, `tqdm(enumerate(loader))`. `enumerated` tells
/// whether the items are `(index, batch)` pairs.
pub(crate) fn loader_of<'e>(checker: &Checker, iter: &'e Expr) -> Option<(&'e Expr, bool)> {
    let mut e = iter;
    let mut enumerated = false;
    for _ in 0..3 {
        let Expr::Call(c) = e else { break };
        match checker.loop_wrapper(c)? {
            "enumerate" if !enumerated => enumerated = true,
            "enumerate" => return None,
            _ => {}
        }
        e = c.arguments.args.first()?;
    }
    Some((e, enumerated))
}

/// Is `expr` a DataLoader by its kind (`loader = DataLoader(ds, ...)`) without a
/// `collate_fn` (a custom collate may move batches to the device)?
pub(crate) fn is_plain_dataloader(checker: &mut Checker, expr: &Expr) -> bool {
    if checker.kind_of(expr) != Kind::DataLoader {
        return false;
    }
    // The DataLoader(...) calls that bind this name must not pass collate_fn.
    let Some(name) = helpers::name_of(expr) else {
        return true;
    };
    values_at(checker, name, expr.start()).is_some_and(|values| {
        values.iter().all(|v| match v {
            Expr::Call(c) => {
                helpers::keyword(c, "collate_fn").is_none() && !helpers::has_kwargs_splat(c)
            }
            _ => false,
        })
    })
}

/// The source line's indentation before `offset` when only whitespace precedes it on its line.
pub(crate) fn indentation_at(checker: &Checker, offset: TextSize) -> Option<(TextSize, String)> {
    let indent = crate::fix::own_line_indent(checker, offset)?;
    let line_start = offset.to_usize() - indent.len();
    Some((TextSize::try_from(line_start).ok()?, indent.to_string()))
}

/// Is a builtin (`list`, `enumerate`) not shadowed at this point?
pub(crate) fn builtin(checker: &Checker, name: &str) -> bool {
    checker.scopes.lookup(name).is_none()
        && !checker
            .scopes
            .current()
            .is_some_and(|s| s.binds_locally(name))
        && !checker.module().body.iter().any(|s| binds_name(s, name))
}

/// Optimizer class names from libraries other than torch.optim (matched on the last segment).
const OTHER_OPTIMIZERS: &[&str] = &[
    "Adam",
    "AdamW",
    "SGD",
    "RMSprop",
    "Adagrad",
    "Adadelta",
    "Adamax",
    "NAdam",
    "RAdam",
    "LBFGS",
    "Lion",
    "Adafactor",
    "Lamb",
    "LAMB",
    "FusedAdam",
    "FusedLAMB",
    "AdamW8bit",
    "Adam8bit",
    "SparseAdam",
    "ASGD",
    "Rprop",
    "Muon",
    "Sophia",
    "Shampoo",
    "AdaBelief",
];

/// Does this call construct an optimizer (`torch.optim.X(...)`, or a well-known optimizer
/// class of another library by its name)?
pub(crate) fn is_optimizer_call(checker: &Checker, call: &ast::ExprCall) -> bool {
    let Some(q) = checker
        .resolve(&call.func)
        .or_else(|| helpers::dotted(&call.func))
    else {
        return false;
    };
    let last = helpers::last_segment(&q);
    (q.starts_with("torch.optim.")
        && !q.starts_with("torch.optim.lr_scheduler")
        && last.starts_with(|c: char| c.is_ascii_uppercase()))
        || OTHER_OPTIMIZERS.contains(&last)
}

/// Cheap exit: does the source text of `body` contain `needle`? (Not when the file does not:
/// one cached search per file and word, [`Checker::mentions`].)
pub(crate) fn body_mentions(checker: &Checker, body: &[Stmt], needle: &'static str) -> bool {
    let (Some(first), Some(last)) = (body.first(), body.last()) else {
        return false;
    };
    if !checker.mentions(needle) {
        return false;
    }
    let text = checker.text(ruff_text_size::TextRange::new(first.start(), last.end()));
    memchr::memmem::find(text.as_bytes(), needle.as_bytes()).is_some()
}

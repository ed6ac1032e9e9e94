//! Private helpers of the tensor-op rules (discarded results, in-place updates of leaves,
//! numpy conversions, graph cuts). Small, syntactic and local to one function; the lead may
//! fold them into the shared dataflow analysis later.
//!
//! - [`enclosing_suite`] / [`stmts_after`] / [`first_read`]: "what comes next in this block".
//! - [`batch_loop_of`]: a name unpacked from a `DataLoader` loop (`for x, y in loader`), which
//!   holds a tensor with the default collate.
//! - [`ParamLoop`] / [`param_loop_of`]: a loop variable ranging over parameters
//!   (`for p in model.parameters()`, `for n, p in m.named_parameters()`,
//!   `for p in group["params"]`): a requires-grad leaf.
//! - [`is_module_path`]: `model`, `self.fc`, `model.encoder.layer` (a Module and its submodules).
//! - [`indent_of`] / [`newline_of`]: text layout for statement-inserting fixes.
use crate::checker::Checker;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, ExprContext, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;

/// The statement lists directly held by a compound statement (or a function/class body).
pub(crate) fn suites_of(stmt: &Stmt) -> Vec<&[Stmt]> {
    match stmt {
        Stmt::FunctionDef(f) => vec![&f.body],
        Stmt::ClassDef(c) => vec![&c.body],
        Stmt::For(f) => vec![&f.body, &f.orelse],
        Stmt::While(w) => vec![&w.body, &w.orelse],
        Stmt::If(i) => {
            let mut v: Vec<&[Stmt]> = vec![&i.body];
            v.extend(i.elif_else_clauses.iter().map(|c| c.body.as_slice()));
            v
        }
        Stmt::With(w) => vec![&w.body],
        Stmt::Try(t) => {
            let mut v: Vec<&[Stmt]> = vec![&t.body];
            for h in &t.handlers {
                let ast::ExceptHandler::ExceptHandler(h) = h;
                v.push(&h.body);
            }
            v.push(&t.orelse);
            v.push(&t.finalbody);
            v
        }
        Stmt::Match(m) => m.cases.iter().map(|c| c.body.as_slice()).collect(),
        _ => Vec::new(),
    }
}

/// The statement list that holds `stmt` (which must be on the checker's statement stack or be
/// the statement being visited): its parent's suite, or the module body.
pub(crate) fn enclosing_suite<'a>(checker: &Checker<'a>, stmt: &Stmt) -> Option<&'a [Stmt]> {
    let stack = checker.stmt_stack();
    let pos = stack.iter().rposition(|s| s.range() == stmt.range())?;
    let suites: Vec<&'a [Stmt]> = if pos == 0 {
        vec![checker.module().body.as_slice()]
    } else {
        suites_of(stack[pos - 1])
    };
    suites
        .into_iter()
        .find(|suite| suite.iter().any(|s| s.range() == stmt.range()))
}

/// The statements after `stmt` in its suite.
pub(crate) fn stmts_after<'s>(suite: &'s [Stmt], stmt: &Stmt) -> &'s [Stmt] {
    match suite.iter().position(|s| s.range() == stmt.range()) {
        Some(i) => &suite[i + 1..],
        None => &[],
    }
}

/// The first read of the bare name `name` in `body` (nested blocks included, nested
/// functions and classes not).
pub(crate) fn first_read(body: &[Stmt], name: &str) -> Option<TextRange> {
    struct Reader<'n> {
        name: &'n str,
        found: Option<TextRange>,
    }
    impl<'x> Visitor<'x> for Reader<'_> {
        fn visit_stmt(&mut self, stmt: &'x Stmt) {
            if self.found.is_some() || matches!(stmt, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                return;
            }
            visitor::walk_stmt(self, stmt);
        }
        fn visit_expr(&mut self, expr: &'x Expr) {
            if self.found.is_some() {
                return;
            }
            if let Expr::Name(n) = expr {
                if n.id.as_str() == self.name && n.ctx == ExprContext::Load {
                    self.found = Some(n.range());
                    return;
                }
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut r = Reader { name, found: None };
    r.visit_body(body);
    r.found
}

/// Does `target` (an assignment or loop target) bind the bare name `name`, at any depth of
/// tuple unpacking?
pub(crate) fn target_binds(target: &Expr, name: &str) -> bool {
    match target {
        Expr::Name(n) => n.id.as_str() == name,
        Expr::Tuple(t) => t.elts.iter().any(|e| target_binds(e, name)),
        Expr::List(l) => l.elts.iter().any(|e| target_binds(e, name)),
        Expr::Starred(s) => target_binds(&s.value, name),
        _ => false,
    }
}

/// When `name` is unpacked from the batches of a data loader by an enclosing loop of this
/// function: `for x, y in loader`, `for i, (x, y) in enumerate(tqdm(loader))`, or
/// `for data in loader: x, y = data` (first statements of the body); that loop. The loader is
/// a `DataLoader` (value kind) or a name that says so (`train_loader`, `dataloader`,
/// `val_dl`). A plain `for batch in loader: batch.to(d)` does not count (a batch may be a
/// dict or a `BatchEncoding`, whose `.to()` works in place).
pub(crate) fn batch_loop_of<'a>(checker: &mut Checker<'a>, name: &str) -> Option<&'a Stmt> {
    let loops: Vec<&'a Stmt> = checker.frame().loops.clone();
    for stmt in loops.into_iter().rev() {
        let Stmt::For(f) = stmt else { continue };
        let Some((batch, loader)) = batch_target(checker, &f.target, &f.iter) else {
            if target_binds(&f.target, name) {
                return None;
            }
            continue;
        };
        let unpacked = if target_binds(batch, name) {
            if matches!(batch, Expr::Name(_)) {
                return None;
            }
            true
        } else if target_binds(&f.target, name) {
            return None; // the `enumerate` counter
        } else {
            // `for data in loader: inputs, labels = data`
            let Some(batch_name) = helpers::name_of(batch) else {
                continue;
            };
            f.body.iter().take(3).any(|s| match s {
                Stmt::Assign(a) => {
                    helpers::name_of(&a.value) == Some(batch_name)
                        && a.targets.iter().any(|t| {
                            matches!(t, Expr::Tuple(_) | Expr::List(_)) && target_binds(t, name)
                        })
                }
                _ => false,
            })
        };
        if !unpacked {
            continue;
        }
        return is_loader(checker, loader).then_some(stmt);
    }
    None
}

/// The per-batch part of a loop target and the iterable, through `enumerate(...)` (whose
/// target is `(i, batch)`), `tqdm(...)` and `iter(...)`.
fn batch_target<'e>(
    checker: &Checker,
    mut target: &'e Expr,
    mut iter: &'e Expr,
) -> Option<(&'e Expr, &'e Expr)> {
    while let Expr::Call(c) = iter {
        let Some(first) = c.arguments.args.first() else {
            break;
        };
        match checker.loop_wrapper(c) {
            Some("enumerate") => {
                let Expr::Tuple(t) = target else { return None };
                if t.elts.len() != 2 {
                    return None;
                }
                target = &t.elts[1];
                iter = first;
            }
            Some(_) => iter = first,
            None => break,
        }
    }
    Some((target, iter))
}

/// A `DataLoader` by kind, or a name/attribute that says it is one.
fn is_loader(checker: &mut Checker, iter: &Expr) -> bool {
    if checker.kind_of(iter) == Kind::DataLoader {
        return true;
    }
    let last = match iter {
        Expr::Name(n) => n.id.as_str(),
        Expr::Attribute(a) => a.attr.as_str(),
        _ => return false,
    };
    let lower = last.to_ascii_lowercase();
    lower.ends_with("loader") || lower.ends_with("_dl") || lower == "dl"
}

/// Is `expr` a module or one of its submodules: `model`, `self.fc` (known Modules),
/// `model.encoder.layer` (attributes of a known Module)?
pub(crate) fn is_module_path(checker: &mut Checker, expr: &Expr) -> bool {
    if checker.kind_of(expr) == Kind::Module {
        return true;
    }
    match expr {
        Expr::Attribute(a) => is_module_path(checker, &a.value),
        _ => false,
    }
}

/// A loop variable that ranges over parameters.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ParamLoop<'a> {
    /// The `for` statement.
    pub(crate) stmt: &'a Stmt,
    /// The loop's `for` header (target and iterable) for secondary locations.
    pub(crate) header: TextRange,
}

/// Does `iter` produce parameters (`X.parameters()`, `X.named_parameters()` with a
/// `(name, p)` target, `group["params"]`)? `Some(true)` for named pairs.
fn param_iter(iter: &Expr) -> Option<bool> {
    match iter {
        Expr::Call(c) => match helpers::method_call(c)? {
            ("parameters", _) => Some(false),
            ("named_parameters", _) => Some(true),
            _ => None,
        },
        Expr::Subscript(s) if helpers::str_value(&s.slice) == Some("params") => Some(false),
        _ => None,
    }
}

/// When the bare name `name` is the variable of an enclosing loop over parameters: that loop.
pub(crate) fn param_loop_of<'a>(checker: &Checker<'a>, name: &str) -> Option<ParamLoop<'a>> {
    for &stmt in checker.frame().loops.iter().rev() {
        let Stmt::For(f) = stmt else { continue };
        if !target_binds(&f.target, name) {
            continue;
        }
        let named = param_iter(&f.iter)?;
        let ok = match &*f.target {
            Expr::Name(_) => !named,
            Expr::Tuple(t) => {
                named && t.elts.len() == 2 && helpers::name_of(&t.elts[1]) == Some(name)
            }
            _ => false,
        };
        return ok.then(|| ParamLoop {
            stmt,
            header: TextRange::new(f.target.start(), f.iter.end()),
        });
    }
    None
}

/// The indentation (spaces/tabs) before `offset` on its line, when only whitespace precedes it.
pub(crate) fn indent_of<'a>(checker: &Checker<'a>, offset: TextSize) -> Option<&'a str> {
    let text = checker.source.text.as_str();
    let end = offset.to_usize();
    let before = text.get(..end)?;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    let indent = &text[start..end];
    indent
        .chars()
        .all(|c| c == ' ' || c == '\t')
        .then_some(indent)
}

/// The file's newline sequence.
pub(crate) fn newline_of(checker: &Checker) -> &'static str {
    if checker.source.text.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    }
}

/// Is the statement alone on its lines (nothing but whitespace before it on its first line,
/// and nothing but an optional comment after it on its last)?
pub(crate) fn stmt_owns_lines(checker: &Checker, stmt: &Stmt) -> bool {
    if indent_of(checker, stmt.start()).is_none() {
        return false;
    }
    let text = checker.source.text.as_str();
    let rest = text.get(stmt.end().to_usize()..).unwrap_or("");
    let line = rest.split('\n').next().unwrap_or("").trim();
    line.is_empty() || line.starts_with('#')
}

/// Is the current statement inside an expected-error context (`with pytest.raises(...)`,
/// `with self.assertRaises(...)`) or the body of a `try` that handles exceptions? Code there
/// may run a call just to see it fail.
pub(crate) fn in_error_probe(checker: &Checker) -> bool {
    let current = checker.current_stmt().map(Ranged::range);
    checker.stmt_stack().iter().any(|s| match s {
        Stmt::With(w) => w.items.iter().any(|i| {
            let Expr::Call(c) = &i.context_expr else {
                return false;
            };
            let callee = match &*c.func {
                Expr::Attribute(a) => a.attr.as_str(),
                Expr::Name(n) => n.id.as_str(),
                _ => "",
            };
            callee == "raises" || callee.starts_with("assertRaises")
        }),
        Stmt::Try(t) => {
            !t.handlers.is_empty()
                && current.is_some_and(|r| t.body.iter().any(|b| b.range().contains_range(r)))
        }
        _ => false,
    })
}

/// Functions and methods called inside a `no_grad`/`inference_mode` region of the file (by
/// simple name): a helper called there runs without autograd too.
#[derive(Debug, Default)]
pub(crate) struct NoGradCallees {
    names: rustc_hash::FxHashSet<String>,
}

impl NoGradCallees {
    /// Record a call seen while `checker.in_no_grad()`.
    pub(crate) fn observe(&mut self, call: &ast::ExprCall) {
        let name = match &*call.func {
            Expr::Name(n) => n.id.as_str(),
            Expr::Attribute(a) => a.attr.as_str(),
            _ => return,
        };
        if !self.names.contains(name) {
            self.names.insert(name.to_string());
        }
    }

    /// Was a function of this name called under no_grad?
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }
}

/// torch functions (qualified) whose result still requires grad when their first input does.
fn grad_preserving_function(q: &str) -> bool {
    let last = helpers::last_segment(q);
    (q.starts_with("torch.nn.functional.") || q.starts_with("torch."))
        && matches!(
            last,
            "softmax" | "log_softmax" | "sigmoid" | "tanh" | "exp" | "squeeze" | "flatten"
        )
}

/// Follow grad-preserving steps down to the value they start from (`model(x).squeeze().cpu()`
/// -> `model(x)`, `out.logits[0]` -> `out`). `None` when a step cuts the graph (`.detach()`,
/// `.data`, `.argmax()`, `.item()`...).
pub(crate) fn strip_grad_preserving<'e>(checker: &Checker, mut e: &'e Expr) -> Option<&'e Expr> {
    loop {
        match e {
            Expr::Call(c) => {
                let q = checker.resolve(&c.func);
                if let (Some(q), Some(first)) = (&q, c.arguments.args.first()) {
                    if grad_preserving_function(q) {
                        e = first;
                        continue;
                    }
                }
                if q.is_some() {
                    return Some(e);
                }
                if let Some((m, recv)) = helpers::method_call(c) {
                    let effects = torchvet_semantic::tensor_methods::effects(m);
                    if effects.keeps_graph() {
                        e = recv;
                        continue;
                    }
                    if effects.cuts_gradient() {
                        return None;
                    }
                    // `model(x)` where `model` is `self.net`: a call of an attribute path.
                    return Some(e);
                }
                return Some(e);
            }
            Expr::Attribute(a) => {
                let attr = a.attr.as_str();
                if torchvet_semantic::tensor_methods::attribute_without_graph(attr) {
                    return None;
                }
                if matches!(attr, "weight" | "bias") || helpers::self_attribute(e).is_some() {
                    return Some(e);
                }
                e = &a.value;
            }
            Expr::Subscript(s) => e = &s.value,
            _ => return Some(e),
        }
    }
}

/// Where a value that still requires grad comes from: a call of a known module (`model(x)`,
/// `self.encoder(x)`), a loss from `torch.nn.functional`, a module's `.weight`/`.bias`,
/// arithmetic on such values, or a name whose last assignment before `before` (in the
/// current function, not under `torch.no_grad()`) is one. Follows grad-preserving steps
/// (see [`strip_grad_preserving`]). Computed on demand: no per-statement tracking.
pub(crate) fn grad_source(
    checker: &mut Checker,
    e: &Expr,
    before: TextSize,
    depth: u8,
) -> Option<TextRange> {
    if depth > 4 {
        return None;
    }
    if let Expr::BinOp(b) = e {
        return grad_source(checker, &b.left, before, depth + 1)
            .or_else(|| grad_source(checker, &b.right, before, depth + 1));
    }
    let base = strip_grad_preserving(checker, e)?;
    match base {
        Expr::BinOp(_) if !std::ptr::eq(base, e) => grad_source(checker, base, before, depth + 1),
        Expr::Call(c) => {
            if let Some(q) = checker.resolve(&c.func) {
                let loss = q.starts_with("torch.nn.functional.")
                    && (q.ends_with("loss") || q.ends_with("entropy"));
                return loss.then(|| c.range());
            }
            let callee_is_module = !matches!(&*c.func, Expr::Attribute(a) if is_method_like(a.attr.as_str()))
                && is_module_path(checker, &c.func);
            callee_is_module.then(|| c.range())
        }
        Expr::Attribute(a) if matches!(a.attr.as_str(), "weight" | "bias") => {
            is_module_path(checker, &a.value).then(|| base.range())
        }
        Expr::Name(n) => {
            let (value, no_grad) = last_binding(checker, n.id.as_str(), before)?;
            if no_grad {
                return None;
            }
            grad_source(checker, value, value.start(), depth + 1)
        }
        _ => None,
    }
}

/// The value of the last plain assignment `name = value` that starts before `before` in the
/// current function (or module) body, and whether it sits in a `with torch.no_grad()` /
/// `inference_mode()` block. `None` when the last binding is something else (a loop target,
/// tuple unpacking, `+=`) or there is none.
pub(crate) fn last_binding<'a>(
    checker: &Checker<'a>,
    name: &str,
    before: TextSize,
) -> Option<(&'a Expr, bool)> {
    let body: &'a [Stmt] = match checker.function() {
        Some(f) => &f.body,
        None => &checker.module().body,
    };
    let mut last: Option<(Option<&'a Expr>, bool)> = None;
    scan_bindings(checker, body, name, before, false, &mut last);
    match last? {
        (Some(v), ng) => Some((v, ng)),
        (None, _) => None,
    }
}

fn scan_bindings<'a>(
    checker: &Checker<'a>,
    body: &'a [Stmt],
    name: &str,
    before: TextSize,
    no_grad: bool,
    last: &mut Option<(Option<&'a Expr>, bool)>,
) {
    for stmt in body {
        if stmt.start() >= before {
            return;
        }
        match stmt {
            Stmt::Assign(a) => {
                for t in &a.targets {
                    match t {
                        Expr::Name(n) if n.id.as_str() == name => {
                            *last = Some((Some(&a.value), no_grad))
                        }
                        t if target_binds(t, name) => *last = Some((None, no_grad)),
                        _ => {}
                    }
                }
            }
            Stmt::AnnAssign(a) if target_binds(&a.target, name) => {
                *last = Some((a.value.as_deref(), no_grad));
            }
            Stmt::AugAssign(a) if target_binds(&a.target, name) => *last = Some((None, no_grad)),
            Stmt::For(f) => {
                if target_binds(&f.target, name) {
                    *last = Some((None, no_grad));
                }
                scan_bindings(checker, &f.body, name, before, no_grad, last);
                scan_bindings(checker, &f.orelse, name, before, no_grad, last);
            }
            Stmt::While(w) => {
                scan_bindings(checker, &w.body, name, before, no_grad, last);
                scan_bindings(checker, &w.orelse, name, before, no_grad, last);
            }
            Stmt::If(i) => {
                scan_bindings(checker, &i.body, name, before, no_grad, last);
                for c in &i.elif_else_clauses {
                    scan_bindings(checker, &c.body, name, before, no_grad, last);
                }
            }
            Stmt::With(w) => {
                let mut ng = no_grad;
                for item in &w.items {
                    if item
                        .optional_vars
                        .as_deref()
                        .is_some_and(|v| target_binds(v, name))
                    {
                        *last = Some((None, no_grad));
                    }
                    let ctx = match &item.context_expr {
                        Expr::Call(c) => &*c.func,
                        e => e,
                    };
                    if checker.resolve(ctx).is_some_and(|q| {
                        matches!(
                            q.as_str(),
                            "torch.no_grad"
                                | "torch.inference_mode"
                                | "torch.autograd.no_grad"
                                | "torch.autograd.inference_mode"
                        )
                    }) {
                        ng = true;
                    }
                }
                scan_bindings(checker, &w.body, name, before, ng, last);
            }
            Stmt::Try(t) => {
                scan_bindings(checker, &t.body, name, before, no_grad, last);
                for h in &t.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    scan_bindings(checker, &h.body, name, before, no_grad, last);
                }
                scan_bindings(checker, &t.orelse, name, before, no_grad, last);
                scan_bindings(checker, &t.finalbody, name, before, no_grad, last);
            }
            _ => {}
        }
    }
}

/// Method names that are not submodules (`model.parameters()` is a method call, not a
/// forward pass).
fn is_method_like(name: &str) -> bool {
    matches!(
        name,
        "parameters"
            | "named_parameters"
            | "detach"
            | "state_dict"
            | "modules"
            | "children"
            | "buffers"
            | "named_modules"
            | "to"
            | "cuda"
            | "cpu"
            | "eval"
            | "train"
            | "float"
            | "half"
            | "double"
            | "apply"
            | "forward_features"
            | "generate"
            | "predict"
    )
}

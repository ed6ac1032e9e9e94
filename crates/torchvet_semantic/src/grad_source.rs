//! Where a value that still requires grad comes from, judged on demand from one function's
//! statements: a call of a known module (`model(x)`, `self.encoder(x)`), a loss from
//! `torch.nn.functional`, a module's `.weight`/`.bias`, arithmetic on such values, or a name
//! whose last assignment before the use is one, through grad-preserving steps
//! (`.squeeze()`, `.cpu()`, `F.softmax`). Asked by the rules on NumPy conversions and on
//! tensors re-wrapped with `torch.tensor(...)`.
use crate::helpers;
use crate::kinds::Kind;
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};

/// What the grad-source query needs from its caller: qualified names and value kinds at the
/// analysed function.
pub trait ValueSite {
    /// The qualified name `expr` resolves to through the file's imports.
    fn resolve(&self, expr: &Expr) -> Option<String>;
    /// The value kind of `expr`.
    fn kind(&mut self, expr: &Expr) -> Kind;
}

/// Functions and methods called inside a `no_grad`/`inference_mode` region of the file (by
/// simple name): a helper called there runs without autograd too.
#[derive(Debug, Default)]
pub struct NoGradCallees {
    names: rustc_hash::FxHashSet<String>,
}

impl NoGradCallees {
    /// Record a call seen while `checker.in_no_grad()`.
    pub fn observe(&mut self, call: &ruff_python_ast::ExprCall) {
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
    pub fn contains(&self, name: &str) -> bool {
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
pub fn strip_grad_preserving<'e>(cx: &mut impl ValueSite, mut e: &'e Expr) -> Option<&'e Expr> {
    loop {
        match e {
            Expr::Call(c) => {
                let q = cx.resolve(&c.func);
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
                    let effects = crate::tensor_methods::effects(m);
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
                if crate::tensor_methods::attribute_without_graph(attr) {
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
/// function or module `body`, not under `torch.no_grad()`) is one. Follows grad-preserving steps
/// (see [`strip_grad_preserving`]). Computed on demand: no per-statement tracking.
pub fn grad_source(
    cx: &mut impl ValueSite,
    body: &[Stmt],
    e: &Expr,
    before: TextSize,
    depth: u8,
) -> Option<TextRange> {
    if depth > 4 {
        return None;
    }
    if let Expr::BinOp(b) = e {
        return grad_source(cx, body, &b.left, before, depth + 1)
            .or_else(|| grad_source(cx, body, &b.right, before, depth + 1));
    }
    let base = strip_grad_preserving(cx, e)?;
    match base {
        Expr::BinOp(_) if !std::ptr::eq(base, e) => grad_source(cx, body, base, before, depth + 1),
        Expr::Call(c) => {
            if let Some(q) = cx.resolve(&c.func) {
                let loss = q.starts_with("torch.nn.functional.")
                    && (q.ends_with("loss") || q.ends_with("entropy"));
                return loss.then(|| c.range());
            }
            let callee_is_module = !matches!(&*c.func, Expr::Attribute(a) if is_method_like(a.attr.as_str()))
                && crate::kinds::module_path(&c.func, &mut |e| cx.kind(e));
            callee_is_module.then(|| c.range())
        }
        Expr::Attribute(a) if matches!(a.attr.as_str(), "weight" | "bias") => {
            crate::kinds::module_path(&a.value, &mut |e| cx.kind(e)).then(|| base.range())
        }
        Expr::Name(n) => {
            let (value, no_grad) = last_binding(cx, body, n.id.as_str(), before)?;
            if no_grad {
                return None;
            }
            grad_source(cx, body, value, value.start(), depth + 1)
        }
        _ => None,
    }
}

/// The value of the last plain assignment `name = value` that starts before `before` in the
/// function (or module) `body`, and whether it sits in a `with torch.no_grad()` /
/// `inference_mode()` block. `None` when the last binding is something else (a loop target,
/// tuple unpacking, `+=`) or there is none.
pub fn last_binding<'a>(
    cx: &impl ValueSite,
    body: &'a [Stmt],
    name: &str,
    before: TextSize,
) -> Option<(&'a Expr, bool)> {
    let mut last: Option<(Option<&'a Expr>, bool)> = None;
    scan_bindings(cx, body, name, before, false, &mut last);
    match last? {
        (Some(v), ng) => Some((v, ng)),
        (None, _) => None,
    }
}

fn scan_bindings<'a>(
    cx: &impl ValueSite,
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
                        t if helpers::binds(t, name) => *last = Some((None, no_grad)),
                        _ => {}
                    }
                }
            }
            Stmt::AnnAssign(a) if helpers::binds(&a.target, name) => {
                *last = Some((a.value.as_deref(), no_grad));
            }
            Stmt::AugAssign(a) if helpers::binds(&a.target, name) => *last = Some((None, no_grad)),
            Stmt::For(f) => {
                if helpers::binds(&f.target, name) {
                    *last = Some((None, no_grad));
                }
                scan_bindings(cx, &f.body, name, before, no_grad, last);
                scan_bindings(cx, &f.orelse, name, before, no_grad, last);
            }
            Stmt::While(w) => {
                scan_bindings(cx, &w.body, name, before, no_grad, last);
                scan_bindings(cx, &w.orelse, name, before, no_grad, last);
            }
            Stmt::If(i) => {
                scan_bindings(cx, &i.body, name, before, no_grad, last);
                for c in &i.elif_else_clauses {
                    scan_bindings(cx, &c.body, name, before, no_grad, last);
                }
            }
            Stmt::With(w) => {
                let mut ng = no_grad;
                for item in &w.items {
                    if item
                        .optional_vars
                        .as_deref()
                        .is_some_and(|v| helpers::binds(v, name))
                    {
                        *last = Some((None, no_grad));
                    }
                    let ctx = match &item.context_expr {
                        Expr::Call(c) => &*c.func,
                        e => e,
                    };
                    if cx.resolve(ctx).is_some_and(|q| {
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
                scan_bindings(cx, &w.body, name, before, ng, last);
            }
            Stmt::Try(t) => {
                scan_bindings(cx, &t.body, name, before, no_grad, last);
                for h in &t.handlers {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    scan_bindings(cx, &h.body, name, before, no_grad, last);
                }
                scan_bindings(cx, &t.orelse, name, before, no_grad, last);
                scan_bindings(cx, &t.finalbody, name, before, no_grad, last);
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

//! Where a value that still requires grad comes from, judged on demand from one function's
//! statements: a call of a known module (`model(x)`, `self.encoder(x)`), a loss from
//! `torch.nn.functional`, a module's `.weight`/`.bias`, arithmetic on such values, or a name
//! whose assignment reaching the use is one (the last written when branches join), through
//! grad-preserving steps (`.squeeze()`, `.cpu()`, `F.softmax`). Asked by the rules on NumPy
//! conversions and on tensors re-wrapped with `torch.tensor(...)`.
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
/// arithmetic on such values, or a name whose value at `before` (in the function or module
/// `body`, from the reaching-definitions engine, not assigned under `torch.no_grad()`) is one. Follows grad-preserving steps
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
            if rebinds_around(body, n.id.as_str(), before) {
                return None;
            }
            let (value, no_grad) = reaching_value(cx, body, n.id.as_str(), before)?;
            if no_grad {
                return None;
            }
            grad_source(cx, body, value, value.start(), depth + 1)
        }
        _ => None,
    }
}

/// The value `name` holds at `before` in the function (or module) `body`, from the
/// reaching-definitions engine ([`crate::reaching::bindings_at`], no loop-carried bindings):
/// when every binding that reaches is a plain `name = value`, the last of them in source order
/// (the branch written last, as a reader follows the code), and whether it sits in a
/// `with torch.no_grad()` / `inference_mode()` block. `None` when some reaching binding is
/// something else (a loop target, tuple unpacking, `+=`) or none reaches.
fn reaching_value<'a>(
    cx: &impl ValueSite,
    body: &'a [Stmt],
    name: &str,
    before: TextSize,
) -> Option<(&'a Expr, bool)> {
    let defs = crate::reaching::bindings_at(body, None, name, before);
    let mut last: Option<&'a Expr> = None;
    for d in defs {
        let crate::reaching::Def::Value(v) = d else {
            return None;
        };
        if last.is_none_or(|l| v.start() > l.start()) {
            last = Some(v);
        }
    }
    let value = last?;
    Some((value, under_no_grad(cx, body, value.start())))
}

/// Is `at` inside an assignment that rebinds `name` (`y = y.numpy()`, `z = z * 2`)? Such a
/// name is not followed: a conversion written back into its own name is silent, as it was
/// before this query moved onto the reaching-definitions engine (on the audit set every one
/// of them that the engine's earlier binding would report was a module-output guess: a
/// parameter-free module, `decoder.sample(...)` indices, a loss of no-grad outputs).
fn rebinds_around(body: &[Stmt], name: &str, at: TextSize) -> bool {
    let mut hit = false;
    helpers::for_each_own_stmt(body, &mut |stmt| {
        if hit || !stmt.range().contains(at) {
            return;
        }
        hit = match stmt {
            Stmt::Assign(a) => a.targets.iter().any(|t| helpers::binds(t, name)),
            Stmt::AnnAssign(a) => helpers::binds(&a.target, name),
            Stmt::AugAssign(a) => helpers::binds(&a.target, name),
            _ => false,
        };
    });
    hit
}

/// Is `at` inside a `with torch.no_grad()` / `inference_mode()` block of `body` (nested
/// suites included, nested functions and classes not)?
fn under_no_grad(cx: &impl ValueSite, body: &[Stmt], at: TextSize) -> bool {
    let mut hit = false;
    helpers::for_each_own_stmt(body, &mut |stmt| {
        let Stmt::With(w) = stmt else { return };
        if hit || !w.range.contains(at) {
            return;
        }
        hit = w.items.iter().any(|item| {
            let ctx = match &item.context_expr {
                Expr::Call(c) => &*c.func,
                e => e,
            };
            cx.resolve(ctx).is_some_and(|q| {
                matches!(
                    q.as_str(),
                    "torch.no_grad"
                        | "torch.inference_mode"
                        | "torch.autograd.no_grad"
                        | "torch.autograd.inference_mode"
                )
            })
        });
    });
    hit
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

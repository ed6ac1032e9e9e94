use super::helpers::for_each_stmt;
use crate::checker::Checker;
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use torchvet_semantic::helpers;
use torchvet_semantic::modes::backward_target;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `loss.backward()` where `loss` was computed inside a `torch.no_grad()` /
    /// `torch.inference_mode()` block (or a function decorated with them), or was detached
    /// (`.detach()`, re-wrapped with `torch.tensor(...)`), and for the
    /// `loss.requires_grad = True` "fix" that silences the resulting error. A backward inside
    /// a `try` whose handler catches `RuntimeError` (a tutorial showing the error on purpose)
    /// is not reported.
    ///
    /// ## Why is this bad?
    /// Under `no_grad` PyTorch records no graph, so the loss has no `grad_fn`: `backward()`
    /// raises `RuntimeError: element 0 of tensors does not require grad and does not have a
    /// grad_fn`. Setting `loss.requires_grad = True` makes the error go away but turns the loss
    /// into a leaf disconnected from the model: backward computes nothing for the parameters,
    /// the optimizer steps with no gradients, and the model never learns.
    ///
    /// ## Example
    /// ```python
    /// with torch.no_grad():
    ///     loss = criterion(model(x), y)
    /// loss.backward()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// loss = criterion(model(x), y)
    /// loss.backward()
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: the forward pass has to move out of the `no_grad` region (only the
    /// parts that must stay gradient-free, such as target computations, belong in it), which
    /// needs a human decision.
    ///
    /// ## References
    /// - [torch.no_grad](https://pytorch.org/docs/stable/generated/torch.no_grad.html)
    /// - [Autograd mechanics: locally disabling gradient computation](https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation)
    /// - [ronghuaiyang/arcface-pytorch issue 56](https://github.com/ronghuaiyang/arcface-pytorch/issues/56)
    /// - [weizheliu/People-Flows issue 7](https://github.com/weizheliu/People-Flows/issues/7)
    pub(crate) static BACKWARD_INSIDE_NO_GRAD = {
        name: "backward-inside-no-grad",
        code: "TV074",
        group: Correctness,
        severity: Critical,
        title: "Loss computed under no_grad (or detached) and then backward()-ed",
        autofix: No,
        hooks: { stmt: check_stmt, call: check_call, end: clear },
    };
}

/// Why a definition has no graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Why {
    /// Fine (or unknown).
    Good,
    /// Computed under no_grad.
    NoGrad,
    /// Computed under inference_mode.
    Inference,
    /// `.detach()` / `torch.tensor(...)` re-wrap.
    Detached,
}

#[derive(Clone, Debug)]
struct Def {
    why: Why,
    stmt: TextRange,
    /// The enclosing grad-off `with` (for the related location).
    region: Option<TextRange>,
    /// Enclosing compound statements (to tell whether the def dominates a later use).
    ancestors: Vec<TextRange>,
    /// `name.requires_grad = True` / `name.requires_grad_()` seen after this def.
    forced: Option<TextRange>,
    /// The value is a computation (not a literal or a fresh leaf tensor).
    computed: bool,
}

type Key = (u32, String);

thread_local! {
    static DEFS: RefCell<FxHashMap<Key, Vec<Def>>> = RefCell::new(FxHashMap::default());
}

fn frame_key(checker: &Checker) -> u32 {
    checker
        .function()
        .map_or(u32::MAX, |f| f.range().start().to_u32())
}

const FACTORIES: &[&str] = &[
    "tensor",
    "zeros",
    "ones",
    "empty",
    "full",
    "rand",
    "randn",
    "randint",
    "arange",
    "eye",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "rand_like",
    "randn_like",
    "linspace",
];

/// Is `value` a computation whose graph matters (not a literal, not a fresh leaf tensor)?
fn computed(checker: &Checker, value: &Expr) -> bool {
    match value {
        Expr::Call(c) => {
            if let Some(q) = checker.resolve(&c.func) {
                if let Some(f) = q.strip_prefix("torch.") {
                    if FACTORIES.contains(&f) || f == "nn.Parameter" {
                        return false;
                    }
                }
            }
            true
        }
        Expr::BinOp(_) | Expr::Subscript(_) | Expr::UnaryOp(_) => true,
        Expr::Attribute(a) => matches!(a.attr.as_str(), "loss"),
        _ => false,
    }
}

/// `x.detach()`, `x.detach().mean()`, `torch.tensor(non_literal)` without requires_grad.
fn detached(checker: &Checker, value: &Expr) -> bool {
    let mut cur = value;
    while let Expr::Call(c) = cur {
        let last = match &*c.func {
            Expr::Attribute(a) => a.attr.as_str(),
            Expr::Name(n) => n.id.as_str(),
            _ => return false,
        };
        if matches!(last, "tensor" | "as_tensor") {
            let Some(q) = checker.resolve(&c.func) else {
                return false;
            };
            return matches!(q.as_str(), "torch.tensor" | "torch.as_tensor")
                && c.arguments
                    .args
                    .first()
                    .is_some_and(|a| helpers::literal(a).is_none() && !matches!(a, Expr::List(_)))
                && helpers::keyword(c, "requires_grad").is_none();
        }
        match helpers::method_call(c) {
            Some(("detach", _)) => return true,
            Some(("mean" | "sum" | "float" | "to" | "cuda" | "cpu" | "view" | "reshape", r)) => {
                cur = r
            }
            _ => return false,
        }
    }
    false
}

fn grad_off_region(checker: &Checker) -> Option<TextRange> {
    checker.stmt_stack().iter().rev().find_map(|st| match st {
        Stmt::With(w)
            if w.items.iter().any(|i| {
                let e = match &i.context_expr {
                    Expr::Call(c) => &*c.func,
                    e => e,
                };
                checker.resolve(e).is_some_and(|q| {
                    q.starts_with("torch")
                        && matches!(
                            helpers::last_segment(&q),
                            "no_grad" | "inference_mode" | "set_grad_enabled"
                        )
                })
            }) =>
        {
            Some(st.range())
        }
        _ => None,
    })
}

fn record(checker: &Checker, stmt: &Stmt, targets: &[&Expr], value: Option<&Expr>) {
    let why = match value {
        Some(v) if checker.in_no_grad() && computed(checker, v) => {
            if checker.regions().inference_mode > 0 {
                Why::Inference
            } else {
                Why::NoGrad
            }
        }
        Some(v) if detached(checker, v) => Why::Detached,
        _ => Why::Good,
    };
    // Definitions with a graph only matter after one without: nothing recorded yet, done.
    if why == Why::Good && DEFS.with_borrow(FxHashMap::is_empty) {
        return;
    }
    let mut ns = Vec::new();
    for t in targets {
        helpers::for_each_bound_name(t, &mut |n| ns.push(n.to_string()));
    }
    if ns.is_empty() {
        return;
    }
    let computed = value.is_some_and(|v| computed(checker, v));
    let region = if matches!(why, Why::NoGrad | Why::Inference) {
        grad_off_region(checker)
    } else {
        None
    };
    // Enclosing compound statements, excluding the statement itself.
    let stack = checker.stmt_stack();
    let ancestors: Vec<TextRange> = stack[..stack.len().saturating_sub(1)]
        .iter()
        .filter(|s| {
            matches!(
                s,
                Stmt::If(_) | Stmt::Try(_) | Stmt::For(_) | Stmt::While(_) | Stmt::Match(_)
            )
        })
        .map(|s| s.range())
        .collect();
    let frame = frame_key(checker);
    DEFS.with_borrow_mut(|d| {
        for n in ns {
            let key = (frame, n);
            // Definitions with a graph only matter after one without.
            if why == Why::Good && !d.contains_key(&key) {
                continue;
            }
            d.entry(key).or_default().push(Def {
                why,
                stmt: stmt.range(),
                region,
                ancestors: ancestors.clone(),
                forced: None,
                computed,
            });
        }
    });
}

fn mark_forced(checker: &Checker, name: &str, at: TextRange) {
    let frame = frame_key(checker);
    let key = (frame, name.to_string());
    if !DEFS.with_borrow(|d| d.contains_key(&key)) {
        // Only definitions without a graph are recorded: find the plain one now.
        let body: &[Stmt] = checker.scope_body();
        let mut last = None;
        for_each_stmt(body, &mut |st: &Stmt| {
            if let Stmt::Assign(a) = st {
                if a.range.end() <= at.start()
                    && a.targets.iter().any(|t| helpers::name_of(t) == Some(name))
                {
                    last = Some((a.range, computed(checker, &a.value)));
                }
            }
        });
        let Some((stmt, computed)) = last else { return };
        DEFS.with_borrow_mut(|d| {
            d.entry(key.clone()).or_default().push(Def {
                why: Why::Good,
                stmt,
                region: None,
                ancestors: Vec::new(),
                forced: None,
                computed,
            });
        });
    }
    DEFS.with_borrow_mut(|d| {
        if let Some(last) = d.get_mut(&key).and_then(|v| v.last_mut()) {
            last.forced.get_or_insert(at);
        }
    });
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    if !checker.flow_relevant() {
        return;
    }
    match stmt {
        Stmt::Assign(a) => {
            // `loss.requires_grad = True`
            if let [Expr::Attribute(t)] = a.targets.as_slice() {
                if t.attr.as_str() == "requires_grad" && helpers::is_truthy(&a.value) == Some(true)
                {
                    if let Some(n) = helpers::name_of(&t.value) {
                        mark_forced(checker, n, stmt.range());
                    }
                    return;
                }
            }
            let targets: Vec<&Expr> = a.targets.iter().collect();
            record(checker, stmt, &targets, Some(&a.value));
        }
        Stmt::AnnAssign(a) => record(checker, stmt, &[&a.target], a.value.as_deref()),
        Stmt::For(f) => record(checker, stmt, &[&f.target], None),
        Stmt::With(w) => {
            let t: Vec<&Expr> = w
                .items
                .iter()
                .filter_map(|i| i.optional_vars.as_deref())
                .collect();
            record(checker, stmt, &t, None);
        }
        Stmt::Expr(e) => {
            // `loss.requires_grad_()` / `loss.requires_grad_(True)`
            if let Expr::Call(c) = &*e.value {
                if let Some(("requires_grad_", recv)) = helpers::method_call(c) {
                    let on = c
                        .arguments
                        .args
                        .first()
                        .map_or(Some(true), helpers::is_truthy);
                    if let (Some(true), Some(n)) = (on, helpers::name_of(recv)) {
                        mark_forced(checker, n, stmt.range());
                    }
                }
            }
        }
        _ => {}
    }
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    let Some(target) = backward_target(checker, call) else {
        return;
    };
    // A tutorial showing the error on purpose: `try: z.backward() except RuntimeError: ...`.
    if checker.in_try_catching(&["RuntimeError"]) {
        return;
    }
    let Some(name) = helpers::name_of(target) else {
        return;
    };
    let frame = frame_key(checker);
    let here = call.range();
    let Some(defs) = DEFS.with_borrow(|d| d.get(&(frame, name.to_string())).cloned()) else {
        return;
    };
    let before: Vec<&Def> = defs
        .iter()
        .filter(|d| d.stmt.end() <= here.start())
        .collect();
    // The last definition that certainly runs before the call, and any conditional ones after.
    let Some(dom) = before
        .iter()
        .rposition(|d| d.ancestors.iter().all(|a| a.contains_range(here)))
    else {
        return;
    };
    let relevant = &before[dom..];
    if relevant
        .iter()
        .any(|d| d.why == Why::Good && d.forced.is_none())
    {
        return;
    }
    let def = relevant[0];
    if def.why == Why::Good && !def.computed {
        return;
    }
    let backward_text = checker.text(here).to_string();
    if let Some(forced) = relevant.iter().find_map(|d| d.forced) {
        let origin = match def.why {
            Why::NoGrad => "computed under `torch.no_grad()`",
            Why::Inference => "computed under `torch.inference_mode()`",
            Why::Detached => "detached from the graph",
            Why::Good => "not connected to the model's graph",
        };
        let text = checker.text(forced).to_string();
        let d = checker.report(
            forced,
            format!(
                "`{text}` only silences the \"does not require grad\" error: `{name}` was {origin}, so `{backward_text}` computes no gradient for the model's parameters and training does nothing"
            ),
        );
        d.add_related(here, "the backward pass that computes nothing");
        d.add_related(
            def.region.unwrap_or(def.stmt),
            format!("`{name}` is defined here"),
        );
        return;
    }
    let (origin, region_note) = match def.why {
        Why::NoGrad => (
            "computed under `torch.no_grad()`",
            "the `no_grad` region where it is computed",
        ),
        Why::Inference => (
            "computed under `torch.inference_mode()`",
            "the `inference_mode` region where it is computed",
        ),
        Why::Detached => ("detached from the graph", "where it is detached"),
        Why::Good => return,
    };
    let d = checker.report(
        here,
        format!(
            "`{backward_text}` differentiates `{name}`, which was {origin}: it has no autograd graph, so this raises \"element 0 of tensors does not require grad\" and the model cannot learn from it"
        ),
    );
    match def.region {
        Some(region) => {
            d.add_related(region, region_note);
            d.add_related(def.stmt, format!("`{name}` is defined here"));
        }
        None if def.why == Why::Detached => {
            d.add_related(def.stmt, region_note);
        }
        None => {
            d.add_related(
                def.stmt,
                format!("`{name}` is computed here, in a function whose decorator disables grad"),
            );
        }
    }
}

fn clear(_checker: &mut Checker) {
    DEFS.with_borrow_mut(FxHashMap::clear);
}

use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::correctness::helpers::for_each_stmt;
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use rustc_hash::FxHashSet;
use std::cell::RefCell;
use torchvet_semantic::helpers;
use torchvet_semantic::modes::{grad_off_here, in_model_class, loop_has_backward, summary};
use torchvet_semantic::regions::{is_eval_name, loop_body};

crate::declare_rule! {
    /// ## What it does
    /// Checks for model outputs or losses that still carry their autograd graph being appended
    /// to a list that outlives the loop iteration (`preds.append(model(x))`,
    /// `losses.append(loss)`) in a training loop or an evaluation function that runs with
    /// autograd enabled.
    ///
    /// ## Why is this bad?
    /// A tensor that requires grad keeps its whole graph alive: every intermediate activation
    /// saved for the backward pass. Storing one per batch in a list means the memory of every
    /// batch's forward pass is kept until the list is dropped, so memory grows with each
    /// iteration until the GPU runs out. Logging and metrics only need the values:
    /// `.detach()` (and `.cpu()` to move them off the GPU) or `.item()` for scalars.
    ///
    /// This rule is in preview: which values carry a graph is inferred locally (model calls,
    /// criterion calls, values `.backward()` is called on).
    ///
    /// ## Example
    /// ```python
    /// losses = []
    /// for x, y in loader:
    ///     loss = criterion(model(x), y)
    ///     loss.backward()
    ///     optimizer.step()
    ///     losses.append(loss)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// losses = []
    /// for x, y in loader:
    ///     loss = criterion(model(x), y)
    ///     loss.backward()
    ///     optimizer.step()
    ///     losses.append(loss.detach())
    /// ```
    ///
    /// ## Fix safety
    /// The fix appends `.detach()` to the stored value: the same numbers without the graph.
    /// Lists that are later differentiated (`torch.stack(losses).backward()`) are never
    /// reported, so the fix is safe. A name that holds a plain number on some path
    /// (`loss = 0`, then a loss in a branch) gets no fix: a number has no `.detach()`.
    ///
    /// ## References
    /// - [PyTorch FAQ: My model reports "cuda runtime error(2): out of memory"](https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory)
    /// - [jokester-zzz/SSA-SC issue 2](https://github.com/jokester-zzz/SSA-SC/issues/2)
    pub(crate) static STORE_OUTPUTS_WITHOUT_DETACH = {
        name: "store-outputs-without-detach",
        code: "TV016",
        group: Memory,
        severity: Warning,
        title: "Graph-carrying model outputs or losses stored in a list kept across iterations",
        autofix: Yes,
        preview: true,
        hooks: { call: check_call, end: finish },
    };
}

struct Candidate {
    call: TextRange,
    value: TextRange,
    message: String,
    origin: TextRange,
    origin_note: &'static str,
    replacement: String,
    /// Evaluation function whose callers may disable grad.
    function: Option<String>,
    /// The value is always a tensor (not a number on some path, which has no `.detach()`).
    fixable: bool,
}

#[derive(Default)]
struct State {
    no_grad_callees: FxHashSet<String>,
    pending: Vec<Candidate>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// Is `text` (a dotted name) plainly re-assigned somewhere in `body`?
fn reassigned_in(body: &[Stmt], text: &str) -> bool {
    let mut found = false;
    for_each_stmt(body, &mut |st: &Stmt| {
        if let Stmt::Assign(a) = st {
            if a.targets
                .iter()
                .any(|t| helpers::dotted(t).as_deref() == Some(text))
            {
                found = true;
            }
        }
    });
    found
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    let callee = match &*call.func {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => Some(a.attr.as_str()),
        Expr::Attribute(a) if a.attr.as_str() == "append" => None,
        _ => return,
    };
    if grad_off_here(checker) {
        // Remember functions that callers run under no_grad.
        if let Some(c) = callee {
            STATE.with_borrow_mut(|s| {
                if !s.no_grad_callees.contains(c) {
                    s.no_grad_callees.insert(c.to_string());
                }
            });
        }
        return;
    }
    let Some(("append", list)) = helpers::method_call(call) else {
        return;
    };
    let [value] = call.arguments.args.as_ref() else {
        return;
    };
    if !checker.in_loop() || in_model_class(checker) || checker.is_test_file() {
        return;
    }
    let Some(list_text) = helpers::dotted(list) else {
        return;
    };
    let enclosing: Vec<&Stmt> = checker.frame().loops.clone();
    // The list must outlive iterations: the loops it is not re-created in (a list made at the
    // top of each epoch and appended per batch outlives the batch loop's iterations). None
    // when it is re-created in the innermost loop.
    let Some(k) = enclosing
        .iter()
        .position(|l| !reassigned_in(loop_body(l), &list_text))
    else {
        return;
    };
    let loops = &enclosing[k..];
    let outer = loops[0];
    let training = loops.iter().any(|l| loop_has_backward(checker, l));
    let mut function = None;
    if !training {
        let Some(f) = checker.function() else { return };
        if !is_eval_name(f.name.as_str()) {
            return;
        }
        let s = summary(checker, f);
        if s.backward.is_some() || s.uses_grad {
            return;
        }
        function = Some(f.name.to_string());
    }
    let (found, fixable) = match checker.graph_of(value, loop_body(outer), outer.range()) {
        Some(f) => (Some(f), true),
        None => (
            checker.graph_or_number_of(value, loop_body(outer), outer.range()),
            false,
        ),
    };
    let Some((origin, is_loss)) = found else {
        return;
    };
    // Lists that are differentiated later (`torch.stack(losses).backward()`).
    let scope: &[Stmt] = checker.scope_body();
    let root = list_text.split('.').next().unwrap_or(&list_text);
    if torchvet_semantic::uses::differentiates_name(&checker.scopes, scope, root) {
        return;
    }
    let value_src = checker.text(value.range());
    let what = if is_loss { "a loss" } else { "a model output" };
    let replacement = if !fixable && is_loss {
        // A number on some path: `float(...)` takes both the number and a reduced loss.
        format!("float({value_src})")
    } else if matches!(
        value,
        Expr::Name(_) | Expr::Attribute(_) | Expr::Call(_) | Expr::Subscript(_)
    ) {
        format!("{value_src}.detach()")
    } else {
        format!("({value_src}).detach()")
    };
    let message = format!(
        "`{list_text}` keeps `{value_src}`, {what} that still carries its autograd graph, beyond the iteration: every stored tensor keeps its whole graph (all saved activations) alive, so memory grows with each batch; store `{replacement}` instead"
    );
    let origin_note = if is_loss {
        "the graph-carrying loss comes from here"
    } else {
        "the graph-carrying model output comes from here"
    };
    STATE.with_borrow_mut(|s| {
        s.pending.push(Candidate {
            call: call.range(),
            value: value.range(),
            message,
            origin,
            origin_note,
            replacement,
            function,
            fixable,
        })
    });
}

fn finish(checker: &mut Checker) {
    report_pending(checker);
}

fn report_pending(checker: &mut Checker) {
    let state = STATE.with_borrow_mut(std::mem::take);
    for c in state.pending {
        if c.function
            .as_ref()
            .is_some_and(|f| state.no_grad_callees.contains(f))
        {
            continue;
        }
        let d = checker
            .report(c.call, c.message)
            .add_related(c.origin, c.origin_note);
        if c.fixable {
            d.set_fix(RawFix::safe(
                format!("Store `{}`", c.replacement),
                vec![RawEdit::replace(c.value, c.replacement)],
            ));
        }
    }
}

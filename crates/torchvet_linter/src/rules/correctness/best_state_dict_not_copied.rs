use super::tensor_helpers::{enclosing_suite, first_read, stmts_after};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::performance::helpers::{loop_body, names_bound_in_loop, suite_calls_method};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use std::cell::RefCell;
use torchvet_semantic::kinds::Kind;
use torchvet_semantic::{helpers, regions};

crate::declare_rule! {
    /// ## What it does
    /// Checks for a "best model" snapshot taken inside a training loop with
    /// `best = model.state_dict()` (or `.state_dict().copy()`, `dict(model.state_dict())`, a
    /// `{k: v ...}` comprehension, or `best = model`) and used after the loop.
    ///
    /// ## Why is this bad?
    /// `state_dict()` returns references to the live parameter tensors, not a copy, and
    /// `.copy()`/`dict()` only copy the dictionary. The optimizer keeps updating those tensors
    /// in place, so when the loop ends the "best" snapshot holds the final weights:
    /// `model.load_state_dict(best)` or `torch.save(best, ...)` after training silently
    /// restores or saves the last epoch, not the best one. The rule reports only snapshots
    /// taken in a conditional branch of a loop that tracks a best (the condition compares a
    /// metric or loss to a running best, `if acc > best_acc:`, or the snapshot's name says
    /// best, `best_wts`) and read after that loop (or, for `self.<attr>` snapshots, passed to
    /// `load_state_dict` somewhere in the file), and not when the model is rebuilt inside the
    /// loop. A periodic snapshot (`if epoch % 10 == 9: last_wts = model.state_dict()`) is
    /// meant to follow the live weights and is left alone.
    ///
    /// ## Example
    /// ```python
    /// for epoch in range(epochs):
    ///     train_one_epoch(model, loader, opt)
    ///     acc = evaluate(model)
    ///     if acc > best_acc:
    ///         best_acc = acc
    ///         best_wts = model.state_dict()
    /// model.load_state_dict(best_wts)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// for epoch in range(epochs):
    ///     train_one_epoch(model, loader, opt)
    ///     acc = evaluate(model)
    ///     if acc > best_acc:
    ///         best_acc = acc
    ///         best_wts = copy.deepcopy(model.state_dict())
    /// model.load_state_dict(best_wts)
    /// ```
    ///
    /// ## Fix safety
    /// The fix wraps the snapshot in `copy.deepcopy(...)` (adding `import copy` when needed),
    /// which is what a snapshot is meant to be. It is unsafe: after the loop, the code then
    /// restores or saves the best weights instead of the final ones (the intent, but a change
    /// of what the program does, to be reviewed), and it holds one more copy of the weights
    /// on their device, which a large model may not have room for.
    ///
    /// ## References
    /// - [Saving and loading models: state_dict](https://pytorch.org/tutorials/beginner/saving_loading_models.html)
    /// - [pytorch/tutorials#188](https://github.com/pytorch/tutorials/pull/188)
    pub(crate) static BEST_STATE_DICT_NOT_COPIED = {
        name: "best-state-dict-not-copied",
        code: "TV003",
        group: Correctness,
        severity: Critical,
        title: "Best-model snapshot keeps references to live weights (best = model.state_dict() / best = model) without deepcopy",
        autofix: Yes,
        hooks: { stmt: check_stmt, end: check_end },
    };
}

/// A `self.<attr>` snapshot waiting for the end of the file (is it ever restored?).
struct Pending {
    target: String,
    value: TextRange,
    message: String,
    fix: RawFix,
}

thread_local! {
    static PENDING: RefCell<Vec<Pending>> = const { RefCell::new(Vec::new()) };
}

/// The model whose live weights the value references, and a description of the value.
fn snapshot_of<'e>(checker: &mut Checker, value: &'e Expr) -> Option<(&'e Expr, &'static str)> {
    fn state_dict_call(e: &Expr) -> Option<&Expr> {
        let Expr::Call(c) = e else { return None };
        match helpers::method_call(c)? {
            ("state_dict", recv) if c.arguments.is_empty() => Some(recv),
            _ => None,
        }
    }
    match value {
        Expr::Call(c) => {
            if let Some(recv) = state_dict_call(value) {
                return Some((recv, "references"));
            }
            if let Some(("copy", inner)) = helpers::method_call(c) {
                return state_dict_call(inner).map(|r| (r, "shallow copy"));
            }
            let is_dict = matches!(helpers::name_of(&c.func), Some("dict" | "OrderedDict"))
                || checker.resolves_to(&c.func, &["collections.OrderedDict"]);
            if is_dict && c.arguments.len() == 1 {
                return c
                    .arguments
                    .args
                    .first()
                    .and_then(state_dict_call)
                    .map(|r| (r, "shallow copy"));
            }
            None
        }
        Expr::DictComp(d) => {
            let gen = d.generators.first()?;
            let Expr::Call(items) = &gen.iter else {
                return None;
            };
            let ("items", sd) = helpers::method_call(items)? else {
                return None;
            };
            let recv = state_dict_call(sd)?;
            // `{k: v}` / `{k: v.detach()}` / `{k: v.data}` still alias the live tensors.
            let aliases = match &*d.value {
                Expr::Name(_) => true,
                Expr::Attribute(a) => a.attr.as_str() == "data",
                Expr::Call(c) => matches!(helpers::method_call(c), Some(("detach", _))),
                _ => false,
            };
            aliases.then_some((recv, "shallow copy"))
        }
        e @ (Expr::Name(_) | Expr::Attribute(_)) => {
            (checker.kind_of(e) == Kind::Module).then_some((e, "alias"))
        }
        _ => None,
    }
}

/// Is the receiver something that holds plain values (scheduler, scaler)?
fn holds_plain_values(kind: &Kind) -> bool {
    matches!(
        kind,
        Kind::Scheduler(_) | Kind::GradScaler | Kind::Sampler(_)
    )
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::Assign(assign) = stmt else { return };
    if !checker.in_loop() || assign.targets.len() != 1 {
        return;
    }
    let target = &assign.targets[0];
    let attr_target = helpers::self_attribute(target).is_some();
    if !matches!(target, Expr::Name(_)) && !attr_target {
        return;
    }
    let Some((model, what)) = snapshot_of(checker, &assign.value) else {
        return;
    };
    let model_kind = checker.kind_of(model);
    if holds_plain_values(&model_kind) || matches!(model_kind, Kind::Optimizer(_)) {
        return;
    }
    let known_module = torchvet_semantic::kinds::module_path(model, &mut |e| checker.kind_of(e));
    if what == "alias" && !known_module {
        return;
    }
    // Inside a conditional branch of the loop (`if acc > best_acc:`).
    let Some(&outer_loop) = checker.frame().loops.first() else {
        return;
    };
    let Some(&inner_loop) = checker.frame().loops.last() else {
        return;
    };
    // ... that tracks a best: the branch compares a measure to a running best
    // (`if acc > best_acc:`), or the snapshot's name says best. A periodic snapshot
    // (`if epoch % 10 == 9: last_wts = model.state_dict()`) is meant to hold the latest
    // weights.
    let at = assign.range();
    let mut conditional = false;
    let mut best_branch = false;
    for s in checker.stmt_stack() {
        let Stmt::If(i) = s else { continue };
        if !inner_loop.range().contains_range(i.range()) {
            continue;
        }
        conditional = true;
        let test = if i.body.iter().any(|b| b.range().contains_range(at)) {
            Some(&*i.test)
        } else {
            i.elif_else_clauses
                .iter()
                .find(|c| c.range().contains_range(at))
                .and_then(|c| c.test.as_ref())
        };
        best_branch |= test.is_some_and(regions::tracks_running_best);
    }
    let target_id = helpers::self_attribute(target).or_else(|| helpers::name_of(target));
    let best_name = target_id.is_some_and(regions::names_running_best);
    if !conditional || !(best_branch || best_name) {
        return;
    }
    // The model is rebuilt every iteration: the old snapshot is of a model nobody trains.
    if let Some(root) = root_name(model) {
        if names_bound_in_loop(outer_loop, None).contains(root) {
            return;
        }
    }
    // A receiver of unknown kind (`def fit(model, ...)`): the loop must train it (backward or
    // step, or pass it to a helper); a stateful DataLoader's `state_dict()` holds no tensors.
    if !known_module {
        let body = loop_body(outer_loop);
        let trains = suite_calls_method(body, &["backward", "step"], true)
            || root_name(model).is_some_and(|r| passes_to_call(body, r));
        if !trains {
            return;
        }
    }
    let model_text = checker.text(model.range());
    let target_text = checker.text(target.range());
    let value_text = checker.text(assign.value.range());
    let message = match what {
        "alias" => format!(
            "`{target_text} = {model_text}` is another name for the same model, not a snapshot: training after this point changes `{target_text}` too, so the \"best\" model ends up with the final weights"
        ),
        "references" => format!(
            "`{value_text}` returns references to `{model_text}`'s live tensors: the optimizer keeps updating them in place, so `{target_text}` ends up holding the final weights, not the best ones"
        ),
        _ => format!(
            "`{value_text}` copies only the dictionary: its tensors are still `{model_text}`'s live weights, so `{target_text}` ends up holding the final weights, not the best ones"
        ),
    };
    let (copy, import) = checker.import_module("copy");
    let inner = match &*assign.value {
        Expr::Call(c) if what == "shallow copy" => shallow_inner(c).unwrap_or(&assign.value),
        v => v,
    };
    let inner_text = checker.text(inner.range());
    let mut edits = vec![RawEdit::replace(
        assign.value.range(),
        format!("{copy}.deepcopy({inner_text})"),
    )];
    edits.extend(import);
    let fix = RawFix::unsafe_edit(
        format!("Take a real snapshot: `{copy}.deepcopy({inner_text})`"),
        edits,
    );
    if attr_target {
        PENDING.with(|p| {
            p.borrow_mut().push(Pending {
                target: target_text.to_string(),
                value: assign.value.range(),
                message,
                fix,
            });
        });
        return;
    }
    let Some(name) = helpers::name_of(target) else {
        return;
    };
    let later = enclosing_suite(checker, outer_loop)
        .and_then(|suite| first_read(stmts_after(suite, outer_loop), name));
    let Some(later) = later else { return };
    checker
        .report(assign.value.range(), message)
        .add_related(
            later,
            format!("`{name}` is used here, after training went on"),
        )
        .set_fix(fix);
}

/// `X.state_dict()` inside `X.state_dict().copy()` / `dict(X.state_dict())`.
fn shallow_inner(c: &ExprCall) -> Option<&Expr> {
    match helpers::method_call(c) {
        Some(("copy", inner)) => Some(inner),
        _ => c.arguments.args.first(),
    }
}

/// Does `body` pass the bare name `name` to some call, or call a `train*`/`fit*`/`*epoch*`
/// function or method?
fn passes_to_call(body: &[Stmt], name: &str) -> bool {
    use ruff_python_ast::visitor::{self, Visitor};
    struct F<'n>(&'n str, bool);
    impl<'x> Visitor<'x> for F<'_> {
        fn visit_expr(&mut self, e: &'x Expr) {
            if let Expr::Call(c) = e {
                let callee = match &*c.func {
                    Expr::Name(n) => n.id.as_str(),
                    Expr::Attribute(a) => a.attr.as_str(),
                    _ => "",
                };
                if ["train", "fit", "epoch"].iter().any(|w| callee.contains(w)) {
                    self.1 = true;
                    return;
                }
                let passes = c
                    .arguments
                    .args
                    .iter()
                    .chain(c.arguments.keywords.iter().map(|k| &k.value))
                    .any(|a| root_name(a) == Some(self.0));
                if passes {
                    self.1 = true;
                    return;
                }
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut f = F(name, false);
    f.visit_body(body);
    f.1
}

/// The leftmost name of `a.b.c`.
fn root_name(e: &Expr) -> Option<&str> {
    match e {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Attribute(a) => root_name(&a.value),
        _ => None,
    }
}

fn check_end(checker: &mut Checker) {
    let pending = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
    if pending.is_empty() {
        return;
    }
    let restores: Vec<(String, TextRange)> = checker
        .facts
        .method_calls_of("load_state_dict")
        .iter()
        .filter_map(|c| {
            let arg = c.arguments.args.first()?;
            Some((helpers::dotted(arg)?, c.range()))
        })
        .collect();
    for p in pending {
        let Some((_, at)) = restores.iter().find(|(t, _)| *t == p.target) else {
            continue;
        };
        checker
            .report(p.value, p.message)
            .add_related(*at, format!("`{}` is restored here", p.target))
            .set_fix(p.fix);
    }
}

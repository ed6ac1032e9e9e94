use super::flow_helpers::{
    atom_text, current_flow, describe, framework_sync_guard, may_clear, stepped_optimizers,
};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{self as ast, Expr, Operator, Stmt};
use ruff_text_size::{Ranged, TextSize};
use torchvet_semantic::flow::{modulus_of, Event, EventKind, Guard, LoopFlow};
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::{is_scale_invariant_optimizer, Kind};

crate::declare_rule! {
    /// ## What it does
    /// Checks for gradient accumulation whose loss is not divided by the number of
    /// accumulation steps: `backward()` every micro-batch while `optimizer.step()` runs only
    /// every k iterations (`if (i + 1) % k == 0:`) or after an inner `for _ in range(k):`
    /// loop, with the loss backpropagated as computed.
    ///
    /// ## Why is this bad?
    /// Gradients add up over the k micro-batches, so the step applies k times the gradient of
    /// the mean loss over the window: the effective learning rate is k times the configured
    /// one, and changing k changes the training dynamics. Dividing each micro-batch loss by k
    /// makes the accumulated gradient equal to that of one large batch. Losses already
    /// normalised by a global count (`num_items_in_batch`, sum reduction) stay silent, as do
    /// `accelerator.backward(loss)` (Accelerate divides by itself), losses computed in
    /// helpers the rule cannot see, and windows whose gradients are scaled in place before the
    /// step (`for p in model.parameters(): p.grad /= k`, `p.grad.div_(k)`).
    ///
    /// When the optimizer is known to be adaptive (Adam and its variants, RMSprop, Adagrad,
    /// Adadelta, Lion), its update divides by a running gradient magnitude (or takes the
    /// sign), so a constant factor on the gradients leaves the step size unchanged: the rule
    /// reports such a window only when the gradients are clipped before the step
    /// (`clip_grad_norm_`), because the clipping threshold then applies to k times the mean
    /// gradient and cuts far more than intended.
    ///
    /// ## Example
    /// ```python
    /// for micro in range(accum_steps):
    ///     loss = model(x, y)
    ///     loss.backward()
    /// optimizer.step()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// for micro in range(accum_steps):
    ///     loss = model(x, y) / accum_steps
    ///     loss.backward()
    /// optimizer.step()
    /// ```
    ///
    /// ## Fix safety
    /// The fix rewrites `loss.backward()` as `(loss / k).backward()` (or
    /// `scaler.scale(loss / k)`), with `k` taken from the accumulation condition or the
    /// `range(k)` of the inner loop: the accumulated gradient becomes the gradient of the mean
    /// loss, as with one large batch. The fix is unsafe: it changes the size of every update on
    /// purpose (with SGD it divides the effective learning rate by `k`), so a learning rate
    /// tuned on the summed gradients needs retuning, and if the pairing of backward and step is
    /// not what the rule believes, it scales a loss that was never accumulated. Logged loss
    /// values computed from the same variable before the division are unchanged.
    ///
    /// ## References
    /// - [nanoGPT issue 206](https://github.com/karpathy/nanoGPT/issues/206)
    /// - [fastai issue 3023](https://github.com/fastai/fastai/issues/3023)
    /// - [AMP examples: gradient accumulation](https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-accumulation)
    pub(crate) static GRAD_ACCUM_LOSS_NOT_SCALED = {
        name: "grad-accum-loss-not-scaled",
        code: "TV052",
        group: Correctness,
        severity: Warning,
        title: "Gradient accumulation without dividing the loss by the number of steps",
        autofix: Yes,
        hooks: { stmt: check },
    };
}

fn check(checker: &mut Checker, stmt: &Stmt) {
    let Some(flow) = current_flow(checker, stmt) else {
        return;
    };
    if !flow.has(EventKind::Backward) {
        return;
    }
    let stepped = stepped_optimizers(&flow);
    let mut reported: Vec<TextSize> = Vec::new();
    for (_, step) in flow.of_kind(EventKind::Step) {
        if step.in_nested_loop() || step.closure || step.in_accumulate_context() {
            continue;
        }
        let Some(opt) = step.target_key() else {
            continue;
        };
        // An adaptive optimizer (Adam, RMSprop...): a constant factor on the gradients does
        // not change its step, so the undivided sum is not a larger learning rate. What the
        // factor still changes is clipping before the step.
        let adaptive = adaptive_optimizer(checker, step);
        let clipped = flow.events.iter().any(|e| {
            e.kind == EventKind::ClipGrad
                && e.range.start() < step.range.start()
                && !e.excludes(step)
        });
        if adaptive && !clipped {
            continue;
        }
        // The gradients are averaged by hand before the step (`for p in model.parameters():
        // p.grad /= num_iters`): the loss needs no division.
        if flow.events.iter().any(|e| {
            e.kind == EventKind::GradScale
                && e.range.start() < step.range.start()
                && !e.excludes(step)
        }) {
            continue;
        }
        // Pattern B: a periodic step.
        if let Some(guard) = step.periodic_guard() {
            if framework_sync_guard(checker, step) {
                continue;
            }
            let test = match guard {
                Guard::If { test: Some(t), .. } | Guard::AfterExit { test: t, .. } => *t,
                _ => continue,
            };
            // A zero_grad every iteration: no accumulation (zero-grad-misplaced reports it).
            if flow
                .events
                .iter()
                .any(|e| may_clear(e, opt, &stepped) && !e.is_conditional())
            {
                continue;
            }
            // The step's own block clears the optimizer first (`if step % k == 0:
            // actor_opt.zero_grad(); actor_loss.backward(); actor_opt.step()`, the delayed
            // actor update of TD3/DDPG): gradients of other iterations never reach the step.
            if flow.events.iter().any(|e| {
                may_clear(e, opt, &stepped)
                    && e.range.start() < step.range.start()
                    && e.periodic_guard().is_some_and(|g| g.same(guard))
            }) {
                continue;
            }
            let k = modulus_of(test);
            // A backward in a branch exclusive with the step's (`if accum > 1: ... step every
            // k ... else: loss.backward(); step()`) is not accumulated into that step.
            for b in flow.events.iter().filter(|b| {
                b.kind == EventKind::Backward
                    && !b.in_nested_loop()
                    && b.periodic_guard().is_none()
                    && !b.excludes(step)
            }) {
                candidate(checker, &flow, b, step, k, adaptive, &mut reported);
            }
            continue;
        }
        // Pattern A: backward in an inner `for _ in range(k)` loop, step after it.
        for b in flow.events.iter().filter(|b| b.kind == EventKind::Backward) {
            let loops: Vec<&Stmt> = b
                .guards
                .iter()
                .filter_map(|g| match g {
                    Guard::Loop {
                        stmt,
                        over_params: false,
                    } => Some(*stmt),
                    _ => None,
                })
                .collect();
            let [inner] = loops.as_slice() else { continue };
            let Some(k) = range_count(inner) else {
                continue;
            };
            let zero_inside = flow.events.iter().any(|e| {
                may_clear(e, opt, &stepped)
                    && e.guards.iter().any(
                        |g| matches!(g, Guard::Loop { stmt, .. } if stmt.range() == inner.range()),
                    )
            });
            // An inner loop that steps an optimizer itself trains on every pass (a WGAN
            // critic loop with its own zero_grad/step): no accumulation there.
            let steps_inside = flow.events.iter().any(|e| {
                e.kind == EventKind::Step
                    && e.guards.iter().any(
                        |g| matches!(g, Guard::Loop { stmt, .. } if stmt.range() == inner.range()),
                    )
            });
            if zero_inside || steps_inside {
                continue;
            }
            candidate(checker, &flow, b, step, Some(k), adaptive, &mut reported);
        }
    }
}

/// `for _ in range(k)`: `k` (not a literal 0 or 1).
fn range_count(stmt: &Stmt) -> Option<&Expr> {
    let Stmt::For(f) = stmt else { return None };
    let Expr::Call(c) = &*f.iter else { return None };
    if helpers::name_of(&c.func) != Some("range")
        || c.arguments.args.len() != 1
        || !c.arguments.keywords.is_empty()
    {
        return None;
    }
    let k = c.arguments.args.first()?;
    if helpers::int_value(k).is_some_and(|v| v <= 1) {
        return None;
    }
    Some(k)
}

fn candidate(
    checker: &mut Checker,
    flow: &LoopFlow,
    b: &Event,
    step: &Event,
    k: Option<&Expr>,
    adaptive: bool,
    reported: &mut Vec<TextSize>,
) {
    if b.via.is_some()
        || b.method_form
        || b.in_accumulate_context()
        || reported.contains(&b.range.start())
    {
        return;
    }
    if k.and_then(helpers::int_value).is_some_and(|v| v <= 1) {
        return;
    }
    let Some(loss) = b.loss else { return };
    if !unscaled(checker, flow, loss, b.range.start()) {
        return;
    }
    reported.push(b.range.start());
    let k_text = k.map(|k| checker.text(k.range()).to_string());
    let k_desc = k_text.as_deref().map_or_else(
        || "the number of accumulation steps".to_string(),
        |t| format!("`{t}`"),
    );
    let loss_text = checker.text(loss.range());
    let message = if adaptive {
        format!(
            "`{loss_text}` is backpropagated undivided on every micro-batch while {} runs once per {k_desc} of them: the gradients are summed, and the clipping before the step cuts the sum, {k_desc} times their mean, as if the threshold were {k_desc} times smaller (the adaptive optimizer's own step does not depend on the scale, the clipping does); divide the loss by {k_desc}",
            describe(checker, step)
        )
    } else {
        format!(
            "`{loss_text}` is backpropagated undivided on every micro-batch while {} runs once per {k_desc} of them: the step applies the sum of their gradients, an effective learning rate {k_desc} times too large; divide the loss by {k_desc}",
            describe(checker, step)
        )
    };
    let fix = k.map(|k| {
        let kt = match k {
            Expr::Name(_) | Expr::Attribute(_) | Expr::NumberLiteral(_) => {
                checker.text(k.range()).to_string()
            }
            _ => format!("({})", checker.text(k.range())),
        };
        let lt = atom_text(checker, loss);
        let receiver = b.call.is_some_and(|c| match &*c.func {
            Expr::Attribute(a) => a.value.range() == loss.range(),
            _ => false,
        });
        let new = if receiver {
            format!("({lt} / {kt})")
        } else {
            format!("{lt} / {kt}")
        };
        RawEdit::replace(loss.range(), new)
    });
    let ssite = step.site();
    let d = checker.report(b.site(), message);
    d.add_related(
        ssite,
        "the optimizer step that applies the accumulated gradients",
    );
    if let Some(edit) = fix {
        d.set_fix(RawFix::unsafe_edit(
            "Divide the loss by the number of accumulation steps",
            vec![edit],
        ));
    }
}

/// Is the loss certainly not divided (nor normalised) before this backward?
fn unscaled(checker: &Checker, flow: &LoopFlow, loss: &Expr, before: TextSize) -> bool {
    match loss {
        Expr::Name(n) => {
            let mut found: Option<&Expr> = None;
            let mut aug_scaled = false;
            find_assignments(
                flow.body(),
                n.id.as_str(),
                before,
                &mut found,
                &mut aug_scaled,
            );
            if aug_scaled {
                return false;
            }
            found.is_some_and(|v| unscaled_value(checker, v))
        }
        // `self.loss`, `out[0]`: assigned elsewhere, not followed.
        Expr::Attribute(_) | Expr::Subscript(_) => false,
        e => unscaled_value(checker, e),
    }
}

/// The last assignment `name = value` starting before `before` (in the loop body, not in
/// nested definitions); `aug_scaled` when `name /= k` / `name *= k` happens before `before`.
fn find_assignments<'b>(
    body: &'b [Stmt],
    name: &str,
    before: TextSize,
    found: &mut Option<&'b Expr>,
    aug_scaled: &mut bool,
) {
    for stmt in body {
        if stmt.start() >= before {
            return;
        }
        match stmt {
            Stmt::Assign(a) => {
                if a.targets.iter().any(|t| helpers::name_of(t) == Some(name)) {
                    *found = Some(&a.value);
                    *aug_scaled = false;
                } else if a.targets.iter().any(|t| binds_in_tuple(t, name)) {
                    // `loss, logs = step(...)`: not a value we can read.
                    *found = None;
                }
            }
            Stmt::AnnAssign(a) if helpers::name_of(&a.target) == Some(name) => {
                *found = a.value.as_deref();
                *aug_scaled = false;
            }
            Stmt::AugAssign(a)
                if helpers::name_of(&a.target) == Some(name)
                    && matches!(a.op, Operator::Div | Operator::Mult | Operator::FloorDiv) =>
            {
                *aug_scaled = true;
            }
            Stmt::If(i) => {
                find_assignments(&i.body, name, before, found, aug_scaled);
                for c in &i.elif_else_clauses {
                    find_assignments(&c.body, name, before, found, aug_scaled);
                }
            }
            Stmt::With(w) => find_assignments(&w.body, name, before, found, aug_scaled),
            Stmt::For(f) => find_assignments(&f.body, name, before, found, aug_scaled),
            Stmt::While(w) => find_assignments(&w.body, name, before, found, aug_scaled),
            Stmt::Try(t) => {
                find_assignments(&t.body, name, before, found, aug_scaled);
                for h in &t.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    find_assignments(&h.body, name, before, found, aug_scaled);
                }
                find_assignments(&t.orelse, name, before, found, aug_scaled);
            }
            _ => {}
        }
    }
}

fn binds_in_tuple(target: &Expr, name: &str) -> bool {
    match target {
        Expr::Tuple(t) => t
            .elts
            .iter()
            .any(|e| helpers::name_of(e) == Some(name) || binds_in_tuple(e, name)),
        Expr::List(t) => t
            .elts
            .iter()
            .any(|e| helpers::name_of(e) == Some(name) || binds_in_tuple(e, name)),
        _ => false,
    }
}

/// A loss value that is certainly raw: a call of a loss/model (not of a function of this
/// file or a method of this class, which may divide inside), an attribute or item of one
/// (`outputs.loss`, `out[0]`), or sums of those; nothing mentioning a normalising count.
fn unscaled_value(checker: &Checker, value: &Expr) -> bool {
    let text = checker.text(value.range()).to_ascii_lowercase();
    if [
        "accum",
        "num_items",
        "reduction",
        "grad_acc",
        "n_acc",
        "normaliz",
    ]
    .iter()
    .any(|w| text.contains(w))
    {
        return false;
    }
    raw(checker, value)
}

fn raw(checker: &Checker, value: &Expr) -> bool {
    match value {
        Expr::BinOp(b) => {
            matches!(b.op, Operator::Add | Operator::Sub)
                && raw(checker, &b.left)
                && raw(checker, &b.right)
        }
        Expr::Call(c) => {
            if let Some((m, recv)) = helpers::method_call(c) {
                if matches!(
                    m,
                    "div" | "div_" | "mul" | "mul_" | "__truediv__" | "true_divide"
                ) {
                    return false;
                }
                // `.sum()` is a sum reduction: normalised by design or not, not ours to judge.
                if m == "sum" {
                    return false;
                }
                if matches!(m, "mean" | "float" | "squeeze" | "to") {
                    return raw(checker, recv);
                }
                if helpers::name_of(recv) == Some("self") {
                    return !is_own_method(checker, m);
                }
                return true;
            }
            match helpers::name_of(&c.func) {
                Some(name) => !is_local_function(checker, name),
                None => true,
            }
        }
        Expr::Attribute(a) => raw(checker, &a.value) || matches!(&*a.value, Expr::Name(_)),
        Expr::Subscript(s) => matches!(&*s.value, Expr::Name(_) | Expr::Call(_)),
        _ => false,
    }
}

fn is_local_function(checker: &Checker, name: &str) -> bool {
    let defined_in = |body: &[Stmt]| {
        body.iter()
            .any(|s| matches!(s, Stmt::FunctionDef(f) if f.name.as_str() == name))
    };
    defined_in(&checker.module().body) || checker.function().is_some_and(|f| defined_in(&f.body))
}

fn is_own_method(checker: &Checker, name: &str) -> bool {
    checker.frame().method_of.is_some_and(|c| {
        c.def
            .body
            .iter()
            .any(|s| matches!(s, Stmt::FunctionDef(f) if f.name.as_str() == name))
    })
}

/// Is the optimizer the step applies known to be adaptive (Adam, RMSprop...: see
/// [`is_scale_invariant_optimizer`])? `opt.step()` or `scaler.step(opt)`.
fn adaptive_optimizer(checker: &mut Checker, step: &Event) -> bool {
    let Some(call) = step.call else { return false };
    let opt = if step.scaler.is_some() {
        call.arguments.args.first()
    } else {
        helpers::method_call(call).map(|(_, recv)| recv)
    };
    opt.is_some_and(|o| {
        matches!(checker.value_kind(o), Kind::Optimizer(name) if is_scale_invariant_optimizer(&name))
    })
}

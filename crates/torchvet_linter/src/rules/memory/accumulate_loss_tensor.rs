use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::correctness::helpers::for_each_stmt;
use ruff_python_ast::{self as ast, Expr, Operator, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;
use torchvet_semantic::modes::{grad_off_here, loop_has_backward};
use torchvet_semantic::regions::loop_body;
use torchvet_semantic::uses::{dependents, mentions_name, reaches_differentiation};

crate::declare_rule! {
    /// ## What it does
    /// Checks for running totals in a training loop that add up loss (or model output)
    /// tensors that still carry their autograd graph: `total_loss += loss`. Also a meter
    /// object of the project given such a tensor, `losses.update(loss, n)`, when that method
    /// adds the value to an attribute of the object as it is (`self.sum += val * n` in an
    /// `AverageMeter`; a meter that converts with `float(val)` or `val.item()` is fine).
    ///
    /// ## Why is this bad?
    /// Adding a tensor that requires grad to an accumulator makes the accumulator a tensor that
    /// is part of the graph too. Every iteration links its graph to the previous ones, so
    /// none of them can be freed: memory grows with every batch until the epoch ends (or the
    /// process runs out of memory). The PyTorch FAQ calls this out: "don't accumulate history
    /// across your training loop". For logging, a Python number (`loss.item()`) or a detached
    /// tensor is all that is needed.
    ///
    /// A local of a per-step function summed over that step's bounded micro-batch loop
    /// (`for _ in range(accum_steps)` with its own `backward()`, or a helper given the
    /// accumulation count) and not returned or stored is not reported: it is dropped when the
    /// step ends, so the graph does not grow across batches. Neither is a loss built per step
    /// over classes, heads or layers: reset at the top of each batch iteration, summed in a
    /// nested loop without its own backward pass, then differentiated or read once
    /// (`loss_s = 0.0; for i in range(num_class): loss_s += ...; loss = ... + loss_s;
    /// loss.backward()`). A value unpacked from a call (`loss, per_class = criterion(...)`) is
    /// graph-carrying only when it is differentiated: the other positions may hold detached
    /// scores.
    ///
    /// ## Example
    /// ```python
    /// total_loss = 0.0
    /// for x, y in loader:
    ///     loss = criterion(model(x), y)
    ///     loss.backward()
    ///     optimizer.step()
    ///     total_loss += loss
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// total_loss = 0.0
    /// for x, y in loader:
    ///     loss = criterion(model(x), y)
    ///     loss.backward()
    ///     optimizer.step()
    ///     total_loss += loss.item()
    /// ```
    ///
    /// ## Fix safety
    /// The fix adds `.item()` to the accumulated loss, or `.detach()` when the value is a model
    /// output (not a scalar) or when the accumulator is later used as a tensor
    /// (`total.item()`, `total.cpu()`, `(total / n).detach()`). The accumulated numbers are the same, only the graph
    /// is dropped, and accumulators that are differentiated later (`total.backward()`, or
    /// through names computed from them: `total_loss = content_loss + total`, then
    /// `total_loss.backward()`) are never reported, so the fix is safe. It is unsafe when the
    /// total is returned or another value is computed from it: a caller may differentiate it,
    /// or call a tensor method on what becomes a Python number.
    ///
    /// ## References
    /// - [PyTorch FAQ: My model reports "cuda runtime error(2): out of memory"](https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory)
    /// - [google/brax pull request 152](https://github.com/google/brax/pull/152)
    /// - [BatsResearch/labelmodels issue 4](https://github.com/BatsResearch/labelmodels/issues/4)
    pub(crate) static ACCUMULATE_LOSS_TENSOR = {
        name: "accumulate-loss-tensor",
        code: "TV008",
        group: Memory,
        severity: Warning,
        title: "Running total accumulates graph-carrying loss tensors across iterations",
        autofix: Yes,
        hooks: { stmt: check_stmt },
    };
}

/// `ACC += E` or `ACC = ACC + E`: the accumulator and the added value.
fn accumulation(stmt: &Stmt) -> Option<(&Expr, &Expr)> {
    match stmt {
        Stmt::AugAssign(a) if a.op == Operator::Add => Some((&a.target, &a.value)),
        Stmt::Assign(ast::StmtAssign { targets, value, .. }) if targets.len() == 1 => {
            let Expr::BinOp(b) = &**value else {
                return None;
            };
            (b.op == Operator::Add && same_target(&targets[0], &b.left))
                .then(|| (&targets[0], &*b.right))
        }
        _ => None,
    }
}

fn same_target(a: &Expr, b: &Expr) -> bool {
    match (helpers::dotted(a), helpers::dotted(b)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// The root name of an accumulator (`total`, `self.total` -> `self`, `stats["loss"]` ->
/// `stats`) and its dotted text.
fn acc_root(target: &Expr) -> Option<(String, &str)> {
    match target {
        Expr::Name(n) => Some((n.id.to_string(), n.id.as_str())),
        Expr::Attribute(_) => {
            let d = helpers::dotted(target)?;
            let root = match target {
                Expr::Attribute(a) => helpers::name_of(&a.value)?,
                _ => return None,
            };
            Some((d, root))
        }
        Expr::Subscript(s) => {
            let base = helpers::name_of(&s.value)?;
            Some((base.to_string(), base))
        }
        _ => None,
    }
}

/// Is `text` (a dotted name) plainly re-assigned somewhere in `body`?
fn reassigned_in(body: &[Stmt], text: &str) -> bool {
    let mut found = false;
    for_each_stmt(body, &mut |st: &Stmt| {
        let targets: &[Expr] = match st {
            Stmt::Assign(a) => &a.targets,
            Stmt::AnnAssign(a) => std::slice::from_ref(&*a.target),
            _ => return,
        };
        if targets
            .iter()
            .any(|t| helpers::dotted(t).as_deref() == Some(text))
        {
            // `acc = acc + x` is the accumulation itself, not a reset.
            if let Stmt::Assign(a) = st {
                if let Expr::BinOp(b) = &*a.value {
                    if helpers::dotted(&b.left).as_deref() == Some(text) {
                        return;
                    }
                }
            }
            found = true;
        }
    });
    found
}

/// Is the accumulator used as a tensor later (`total.item()`, `total.cpu()`, `total.backward`,
/// `(total / n).detach()`)?
fn used_as_tensor(body: &[Stmt], acc: &str) -> bool {
    /// Is `e` the accumulator, or arithmetic on it (`(total / n).detach()`: a tensor still)?
    fn arithmetic_of(e: &Expr, acc: &str) -> bool {
        match e {
            Expr::BinOp(b) => arithmetic_of(&b.left, acc) || arithmetic_of(&b.right, acc),
            Expr::UnaryOp(u) => arithmetic_of(&u.operand, acc),
            _ => helpers::dotted(e).as_deref() == Some(acc),
        }
    }
    helpers::any_expr_in(
        body,
        |e| matches!(e, Expr::Attribute(a) if arithmetic_of(&a.value, acc)),
    )
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Some((target, value)) = accumulation(stmt) else {
        check_meter_update(checker, stmt);
        return;
    };
    let Some(loops) = training_loops(checker) else {
        return;
    };
    let (outer, inner) = (loops[0], loops[loops.len() - 1]);
    let Some((acc_text, root)) = acc_root(target) else {
        return;
    };
    // One training step's micro-batch loop (`for _ in range(accum_steps)`, each iteration with
    // its own backward) summing into a local of the step function that dies with it: the
    // linked graph lives for one step, it does not grow across batches.
    if let (Expr::Name(n), Some(f), [only]) = (target, checker.function(), loops.as_slice()) {
        let local = checker
            .scopes
            .current()
            .is_some_and(|s| s.binds_locally(n.id.as_str()));
        if local
            && torchvet_semantic::flow::is_micro_batch_loop(only)
            && loop_has_backward(checker, only)
            && !torchvet_semantic::uses::local_outlives_function(&f.body, n.id.as_str())
        {
            return;
        }
    }
    // The accumulator must outlive the iteration: not reset inside the innermost loop.
    let acc_key = match target {
        Expr::Subscript(_) => root.to_string(),
        _ => acc_text.clone(),
    };
    if reassigned_in(loop_body(inner), &acc_key) {
        return;
    }
    if per_step_sum(checker, &loops, target) {
        return;
    }

    let Some((origin, is_loss)) = checker.graph_of(value, loop_body(outer), outer.range()) else {
        return;
    };
    // Intentional sum-then-backward: the accumulator is differentiated somewhere.
    let scope: &[Stmt] = checker.scope_body();
    if matches!(target, Expr::Name(_)) && reaches_differentiation(&checker.scopes, scope, root) {
        return;
    }
    if !matches!(target, Expr::Name(_)) {
        // `self.total` / `stats[k]`: differentiated through its root name?
        let mentioned = torchvet_semantic::modes::calls_in(scope)
            .into_iter()
            .any(|c| {
                torchvet_semantic::modes::backward_target(checker, c).is_some_and(|t| {
                    mentions_name(t, root) && checker.text(t.range()).contains(acc_text.as_str())
                })
            });
        if mentioned {
            return;
        }
    }
    let acc_src = checker.text(target.range());
    let value_src = checker.text(value.range());
    let what = graph_value(is_loss);
    let use_detach = !is_loss || used_as_tensor(scope, &acc_text);
    let suffix = if use_detach { ".detach()" } else { ".item()" };
    let replacement = suffixed(value, value_src, suffix);
    let message = format!(
        "`{acc_src}` accumulates `{value_src}`, {what} that still carries its autograd graph: every iteration's graph stays linked to `{acc_src}` and is never freed, so memory grows with each batch; add `{suffix}`"
    );
    let origin_note = origin_note(is_loss);
    // The fix only changes what is summed when nothing else reads the total: a value computed
    // from it (`avg = total / n`, which a caller may differentiate or call `.item()` on) or a
    // return of it leaves the fix to the user.
    let escapes = match target {
        Expr::Name(_) => !dependents(scope, root).is_empty() || returned(scope, root),
        _ => false,
    };
    let fix_message = format!("Accumulate `{replacement}`");
    let edits = vec![RawEdit::replace(value.range(), replacement)];
    let fix = if escapes {
        RawFix::unsafe_edit(fix_message, edits)
    } else {
        RawFix::safe(fix_message, edits)
    };
    checker
        .report(stmt.range(), message)
        .add_related(origin, origin_note)
        .set_fix(fix);
}

/// The loops enclosing the statement, outermost first, when they train (some loop of this
/// function runs a backward pass, directly or through a call of the outermost) and the
/// statement runs with autograd on in a file the flow rules look at.
fn training_loops<'a>(checker: &mut Checker<'a>) -> Option<Vec<&'a Stmt>> {
    if !checker.in_loop() || !checker.flow_relevant() || grad_off_here(checker) {
        return None;
    }
    let loops: Vec<&'a Stmt> = checker.frame().loops.clone();
    let &outer = loops.first()?;
    (loops.iter().any(|l| loop_has_backward(checker, l)) || backward_through_call(checker, outer))
        .then_some(loops)
}

/// What a graph-carrying value is, for messages.
fn graph_value(is_loss: bool) -> &'static str {
    if is_loss {
        "a loss tensor"
    } else {
        "a model output"
    }
}

/// The note at the expression that produced the graph-carrying value.
fn origin_note(is_loss: bool) -> &'static str {
    if is_loss {
        "the graph-carrying loss is produced here"
    } else {
        "the graph-carrying model output is produced here"
    }
}

/// `value` (spelled `src`) followed by `suffix`, in parentheses unless it is a primary
/// expression (`loss.item()`, `(a + b).item()`).
fn suffixed(value: &Expr, src: &str, suffix: &str) -> String {
    if matches!(
        value,
        Expr::Name(_) | Expr::Attribute(_) | Expr::Call(_) | Expr::Subscript(_)
    ) {
        format!("{src}{suffix}")
    } else {
        format!("({src}){suffix}")
    }
}

/// `meter.update(loss)` in a training loop, where `meter` is an instance of a project class
/// whose `update` adds that argument to an attribute of the object unconverted
/// (`self.sum += val * n`): the object accumulates the graph like `total += loss` would.
fn check_meter_update(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::Expr(e) = stmt else { return };
    let Expr::Call(call) = &*e.value else { return };
    let Some((method, recv)) = helpers::method_call(call) else {
        return;
    };
    // The object outlives the iteration: a name or `self.<attr>`, not rebound in the loop.
    let Some(recv_key) = helpers::dotted(recv) else {
        return;
    };
    // The cheap tests first: the receiver's class needs the file's dataflow.
    let Some(loops) = training_loops(checker) else {
        return;
    };
    let (outer, inner) = (loops[0], loops[loops.len() - 1]);
    if reassigned_in(loop_body(inner), &recv_key) {
        return;
    }
    let Some(class) = checker.project_class_of(recv) else {
        return;
    };
    let Some(p) = checker.project_or_file().cloned() else {
        return;
    };
    let Some(f) = p.model.method(class, method, 0) else {
        return;
    };
    let summary = p.model.function(f);
    if summary.accumulated_params.is_empty() {
        return;
    }
    let params = &summary.params;
    for &i in &summary.accumulated_params {
        let i = usize::from(i);
        let arg = call.arguments.args.get(i - 1).or_else(|| {
            let name = params.get(i)?;
            call.arguments
                .keywords
                .iter()
                .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == &**name))
                .map(|k| &k.value)
        });
        let Some(arg) = arg else { continue };
        if matches!(arg, Expr::Starred(_)) {
            continue;
        }
        let Some((origin, is_loss)) = checker.graph_of(arg, loop_body(outer), outer.range()) else {
            continue;
        };
        let recv_src = checker.text(recv.range());
        let arg_src = checker.text(arg.range());
        let what = graph_value(is_loss);
        let replacement = suffixed(arg, arg_src, ".item()");
        let message = format!(
            "`{recv_src}.{method}(...)` adds `{arg_src}`, {what} that still carries its autograd graph, to a running total of `{recv_src}` (`{}.{method}` keeps it in an attribute): every iteration's graph stays linked to the object and is never freed, so memory grows with each batch; pass `{replacement}`",
            p.model.class_name(class).0
        );
        // The method may need a tensor (`val.mean()`, `val.size(0)`): the user checks.
        let fix = RawFix::unsafe_edit(
            format!("Pass `{replacement}`"),
            vec![RawEdit::replace(arg.range(), replacement)],
        );
        checker
            .report(call.range(), message)
            .add_related(origin, origin_note(is_loss))
            .set_fix(fix);
        return;
    }
}

/// Does a `return` of `scope` mention `name`?
fn returned(scope: &[Stmt], name: &str) -> bool {
    let mut found = false;
    for_each_stmt(scope, &mut |st: &Stmt| {
        if let Stmt::Return(r) = st {
            if r.value.as_deref().is_some_and(|v| mentions_name(v, name)) {
                found = true;
            }
        }
    });
    found
}

/// A sum that one training step builds over classes, heads or layers: the accumulator (a
/// name) is reset in the body of an enclosing loop `L` before the nested loop that sums into
/// it, no loop from there down to the sum runs a backward pass (so the sum belongs to one
/// iteration of `L`), and the step consumes the total: differentiates it (directly or
/// through names computed from it: `local_loss = 0.01 * (loss_s + loss_t)`, ...,
/// `loss.backward()`) or reads it as a tensor (`tmpd_c.cpu().item()`). Each iteration of `L`
/// starts a new total, so no graph survives the step.
fn per_step_sum(checker: &mut Checker, loops: &[&Stmt], target: &Expr) -> bool {
    let Expr::Name(n) = target else {
        return false;
    };
    let acc = n.id.as_str();
    for (i, pair) in loops.windows(2).enumerate() {
        let (step, nested) = (pair[0], pair[1]);
        let body = loop_body(step);
        let mut reset = false;
        for_each_stmt(body, &mut |st: &Stmt| {
            if st.end() > nested.start() {
                return;
            }
            let value = match st {
                Stmt::Assign(a)
                    if a.targets.len() == 1
                        && matches!(&a.targets[0], Expr::Name(t) if t.id.as_str() == acc) =>
                {
                    &a.value
                }
                Stmt::AnnAssign(a) if matches!(&*a.target, Expr::Name(t) if t.id.as_str() == acc) => {
                    match &a.value {
                        Some(v) => v,
                        None => return,
                    }
                }
                _ => return,
            };
            if !mentions_name(value, acc) {
                reset = true;
            }
        });
        if !reset {
            continue;
        }
        if loops[i + 1..].iter().any(|l| loop_has_backward(checker, l)) {
            // The nested loop trains: the total runs across its batches.
            return false;
        }
        return reaches_differentiation(&checker.scopes, body, acc) || used_as_tensor(body, acc);
    }
    false
}

/// Does the loop run a backward pass through a project function it calls (a training-step
/// helper of this or another file)?
fn backward_through_call(checker: &mut Checker, outer: &Stmt) -> bool {
    if checker.project().is_none() {
        return false;
    }
    let range = outer.range();
    checker.function_events().iter().any(|e| {
        e.kind == torchvet_semantic::flow::EventKind::Backward
            && e.via.is_some()
            && range.contains_range(e.site())
    })
}

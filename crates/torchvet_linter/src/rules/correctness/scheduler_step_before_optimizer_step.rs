use super::flow_helpers::{current_flow, delete_stmt, describe, insert_after, movable};
use crate::checker::Checker;
use crate::fix::RawFix;
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::flow::{object_key, role_from_name, Event, EventKind, Guard, Role};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `scheduler.step()` ordered before the optimizer step in a training loop:
    /// directly before `optimizer.step()`, or before a call such as
    /// `train_one_epoch(model, optimizer, loader)` that performs it. A step under a test the
    /// loop never changes (`if scheduler is not None:`, `if args.sched == "step":`) counts:
    /// when it runs at all, it runs in the first iteration.
    ///
    /// ## Why is this bad?
    /// Since PyTorch 1.1 a learning-rate scheduler must be stepped after the optimizer. Called
    /// first, the scheduler advances before any update, so the first value of the schedule
    /// (for example the initial or warm-up learning rate) is skipped and the whole schedule is
    /// shifted by one step; PyTorch warns "Detected call of `lr_scheduler.step()` before
    /// `optimizer.step()`". A scheduler step guarded by a condition that can change between
    /// iterations (for example `if epoch > 0:` to skip the first one), with arguments (`ReduceLROnPlateau` metrics, legacy epoch numbers),
    /// or preceded by an optimizer step before the loop is not reported. Neither is a project
    /// whose every allowed torch is older than 1.1 (`torch==0.4.1` in its requirements, or
    /// `--target-torch 1.0`): there, calling the scheduler first was the documented order.
    ///
    /// ## Example
    /// ```python
    /// for epoch in range(epochs):
    ///     scheduler.step()
    ///     train_one_epoch(model, optimizer, loader)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// for epoch in range(epochs):
    ///     train_one_epoch(model, optimizer, loader)
    ///     scheduler.step()
    /// ```
    ///
    /// ## Fix safety
    /// The suggested fix moves the `scheduler.step()` statement after the statement of the
    /// loop body that performs the optimizer step. It is unsafe: the learning rate used by
    /// every later iteration changes (by design), and code between the two may read it.
    ///
    /// ## References
    /// - [How to adjust the learning rate](https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate)
    /// - [NeuralRecon issue 51](https://github.com/zju3dv/NeuralRecon/issues/51)
    /// - [Deformable-ProtoPNet issue 6](https://github.com/jdonnelly36/Deformable-ProtoPNet/issues/6)
    pub(crate) static SCHEDULER_STEP_BEFORE_OPTIMIZER_STEP = {
        name: "scheduler-step-before-optimizer-step",
        code: "TV083",
        group: Correctness,
        severity: Warning,
        title: "lr_scheduler.step() runs before the first optimizer.step()",
        autofix: Suggest,
        hooks: { stmt: check },
    };
}

fn check(checker: &mut Checker, stmt: &Stmt) {
    // Before torch 1.1 stepping the scheduler first was the documented order: a project whose
    // every allowed torch is older (`torch==0.4.1`, `--target-torch 1.0`) is right to do it.
    if !checker.torch_at_least(1, 1) {
        return;
    }
    let Some(flow) = current_flow(checker, stmt) else {
        return;
    };
    if !flow.has(EventKind::SchedulerStep) || !flow.has(EventKind::Step) {
        return;
    }
    for (xi, sched) in flow.of_kind(EventKind::SchedulerStep) {
        // A step under a test the loop never changes (`if scheduler is not None:`) runs in
        // the first iteration whenever it runs at all.
        if sched.in_nested_loop() || sched.varies_between_iterations(stmt) || sched.via.is_some() {
            continue;
        }
        let Some(call) = sched.call else { continue };
        if !call.arguments.args.is_empty() || !call.arguments.keywords.is_empty() {
            continue;
        }
        let Some(target) = sched.target.as_ref() else {
            continue;
        };
        if matches!(&target.role, Role::Scheduler(Some(n)) if n == "ReduceLROnPlateau") {
            continue;
        }
        // Deliberate: the warning is silenced or the scheduler's epoch is set by hand.
        if deliberate(checker, sched, &target.key) {
            continue;
        }
        if flow.any_between(0..xi, EventKind::Step, |_| true) {
            continue;
        }
        let Some(step) = flow.events[xi + 1..]
            .iter()
            .find(|e| e.kind == EventKind::Step && !e.closure)
        else {
            continue;
        };
        let Some(opt) = step.target.as_ref() else {
            continue;
        };
        if stepped_before_loop(checker, stmt, &opt.key) {
            continue;
        }
        let message = format!(
            "{} runs before {} in the first iteration: the scheduler advances before any update, so the first learning rate of the schedule is skipped and every later one comes a step early",
            describe(checker, sched),
            describe(checker, step)
        );
        // Move the scheduler step after the loop-body statement that performs the step.
        let fix = (movable(checker, sched)
            && sched.stmt.range() == sched.top.range()
            && step.top.range() != sched.top.range())
        .then(|| {
            let text = checker.text(sched.stmt.range());
            let del = delete_stmt(checker, sched.stmt)?;
            let ins = insert_after(checker, step.top, text, None)?;
            Some(RawFix::unsafe_edit(
                "Move the scheduler step after the optimizer step",
                vec![del, ins],
            ))
        })
        .flatten();
        let ssite = step.site();
        let d = checker.report(sched.site(), message);
        d.add_related(ssite, "the optimizer step that should come first");
        if let Some(fix) = fix {
            d.set_fix(fix);
        }
        return;
    }
}

/// Did an optimizer step run earlier in the same function (or module code), before the
/// loop? (`facts` holds the calls visited so far, i.e. those before the loop.)
fn stepped_before_loop(checker: &Checker, loop_stmt: &Stmt, opt: &str) -> bool {
    let start = loop_stmt.start();
    let func = checker.function().map(Ranged::range);
    let defs: Vec<ruff_text_size::TextRange> = if func.is_none() {
        checker
            .module()
            .body
            .iter()
            .filter(|s| matches!(s, Stmt::FunctionDef(_) | Stmt::ClassDef(_)))
            .map(Ranged::range)
            .collect()
    } else {
        Vec::new()
    };
    checker.facts.method_calls_of("step").iter().any(|c| {
        if c.start() >= start {
            return false;
        }
        let inside = match func {
            Some(r) => r.contains_range(c.range()),
            None => !defs.iter().any(|d| d.contains_range(c.range())),
        };
        if !inside {
            return false;
        }
        let Some((_, recv)) = helpers::method_call(c) else {
            return false;
        };
        object_key(recv).as_deref() == Some(opt)
            || matches!(
                last(recv).map(role_from_name),
                Some(Role::Optimizer | Role::Scaler)
            )
    })
}

/// `with warnings.catch_warnings():` around the call, or `SCHED.last_epoch = ...` in the file.
fn deliberate(checker: &Checker, sched: &Event, key: &str) -> bool {
    let silenced = sched.guards.iter().any(|g| {
        matches!(g, Guard::With { stmt, .. } if stmt.items.iter().any(|i| {
            checker.text(i.context_expr.range()).contains("catch_warnings")
        }))
    });
    silenced
        || memchr::memmem::find(
            checker.source.text.as_bytes(),
            format!("{key}.last_epoch").as_bytes(),
        )
        .is_some()
}

fn last(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Attribute(a) => Some(a.attr.as_str()),
        _ => None,
    }
}

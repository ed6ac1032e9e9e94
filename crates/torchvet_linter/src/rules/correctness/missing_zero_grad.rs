use super::flow_helpers::{
    current_flow, describe, insert_after, insert_before, may_clear, stepped_optimizers,
};
use crate::checker::Checker;
use crate::fix::RawFix;
use crate::rules::facts::current_function;
use ruff_python_ast::Stmt;
use torchvet_semantic::flow::{EventKind, LoopFlow, Role};

crate::declare_rule! {
    /// ## What it does
    /// Checks for training loops that call `backward()` and `optimizer.step()` but never clear
    /// the gradients (`optimizer.zero_grad()`, `model.zero_grad()`, `p.grad = None`) anywhere
    /// in the loop, including the local functions the loop calls and the `forward` of a project
    /// model the loop calls (`loss = model(x, y)` where the model's forward begins with
    /// `self.zero_grad()` clears the model's gradients at the call). A Lightning
    /// `training_step` under manual optimization (`self.optimizers()`,
    /// `self.manual_backward(...)`) is one iteration of the loop, when its class clears
    /// gradients nowhere else.
    ///
    /// ## Why is this bad?
    /// `backward()` adds into `.grad`; it does not overwrite it. Without clearing, every step
    /// uses the sum of the gradients of all previous batches, so the effective update grows
    /// each iteration and training diverges or never converges. Clearing after the step, or
    /// only every k iterations inside a gradient-accumulation branch, is fine and stays silent,
    /// as are LBFGS closures (which clear inside the closure) and optimizers created inside the
    /// loop.
    ///
    /// ## Example
    /// ```python
    /// for x, y in loader:
    ///     loss = criterion(model(x), y)
    ///     loss.backward()
    ///     optimizer.step()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// for x, y in loader:
    ///     optimizer.zero_grad()
    ///     loss = criterion(model(x), y)
    ///     loss.backward()
    ///     optimizer.step()
    /// ```
    ///
    /// ## Fix safety
    /// The fix inserts `optimizer.zero_grad()` as the first statement of the loop body, or
    /// right after the step when the step is inside a gradient-accumulation branch. It is
    /// safe: the gradients the step consumes are exactly the ones computed since the previous
    /// step.
    ///
    /// ## References
    /// - [Zeroing out gradients in PyTorch](https://pytorch.org/tutorials/recipes/recipes/zeroing_out_gradients.html)
    /// - [torch.optim.Optimizer.zero_grad](https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html)
    /// - [Karpathy: common neural net training mistakes](https://threadreaderapp.com/thread/1013244313327681536.html)
    pub(crate) static MISSING_ZERO_GRAD = {
        name: "missing-zero-grad",
        code: "TV002",
        group: Correctness,
        severity: Critical,
        title: "optimizer.step() in a loop whose gradients are never cleared",
        autofix: Yes,
        hooks: { stmt: check },
    };
}

fn check(checker: &mut Checker, stmt: &Stmt) {
    // A loop, or the body of a manual-optimization `training_step` (one iteration per call)
    // in a class that clears gradients nowhere (no `optimizer_zero_grad` override, no
    // `zero_grad()` in another hook).
    let Some(flow) = current_flow(checker, stmt).or_else(|| {
        let flow = checker.manual_step_hook_flow(stmt)?;
        (!cleared_by_other_methods(checker)).then_some(flow)
    }) else {
        return;
    };
    let Some((_, backward)) = flow.of_kind(EventKind::Backward).next() else {
        return;
    };
    let stepped = stepped_optimizers(&flow);
    let mut reported: Vec<&str> = Vec::new();
    for (_, step) in flow.of_kind(EventKind::Step) {
        if step.in_nested_loop() || step.closure {
            continue;
        }
        let Some(opt) = &step.target else { continue };
        if opt.role != Role::Optimizer && step.scaler.is_none() {
            continue;
        }
        let key = opt.key.as_str();
        if reported.contains(&key)
            || flow.events.iter().any(|e| may_clear(e, key, &stepped))
            || flow.events.iter().any(|e| {
                matches!(e.kind, EventKind::OptimizerCreated | EventKind::Escape)
                    && e.target_key() == Some(key)
            })
            || cleared_through_modules(checker, &flow, key)
        {
            continue;
        }
        reported.push(key);
        let periodic = step.periodic_guard().is_some();
        let step_text = describe(checker, step);
        // `self.optimizers[*]`: the loop variable of a loop over every optimizer.
        let fanout = key.strip_suffix("[*]");
        let whose = match fanout {
            Some(all) => format!("the gradients of every optimizer in `{all}`"),
            None => format!("`{key}`'s gradients"),
        };
        let message = if periodic {
            format!("{step_text} runs every few iterations but {whose} are never cleared in this loop: each accumulation window adds to all the previous ones, so every step applies the running sum of all gradients so far")
        } else {
            format!("{step_text} runs every iteration but {whose} are never cleared in this loop: `backward()` adds to the gradients of every previous batch, so each step applies their running sum")
        };
        let fix = if opt.helper_local || fanout.is_some() {
            None
        } else if periodic {
            if step.via.is_none() {
                insert_after(checker, step.stmt, &format!("{key}.zero_grad()"), None)
            } else {
                None
            }
        } else {
            flow.body()
                .first()
                .and_then(|first| insert_before(checker, first, &format!("{key}.zero_grad()")))
        };
        let backward_site = backward.site();
        let d = checker.report(step.site(), message);
        d.add_related(
            backward_site,
            "the backward() whose gradients keep accumulating",
        );
        if step.via.is_some() {
            d.add_related(step.range, "the optimizer step inside the called function");
        }
        if let Some(edit) = fix {
            d.set_fix(RawFix::safe(
                format!("Call `{key}.zero_grad()` once per step"),
                vec![edit],
            ));
        }
    }
}

/// Are `opt`'s gradients cleared every iteration by other calls of the loop? Every module it
/// trains (the project model knows them) is zeroed in this function's body, directly
/// (`D.zero_grad()`) or through another optimizer over it: an InfoGAN's `info_optimizer`
/// over `chain(G.parameters(), D.parameters())` while `g_opt` and `d_opt` are zeroed each
/// iteration.
fn cleared_through_modules(checker: &Checker, flow: &LoopFlow, opt: &str) -> bool {
    let Some(p) = checker.project_or_file() else {
        return false;
    };
    let Some(func) = current_function(checker, p) else {
        return false;
    };
    let Some(trained) = p.model.optimizer_module_keys(func, opt) else {
        return false;
    };
    if trained.is_empty() {
        return false;
    }
    let mut cleared: Vec<String> = Vec::new();
    for (_, z) in flow.of_kind(EventKind::ZeroGrad) {
        let Some(t) = &z.target else { continue };
        if z.via.is_some() {
            continue; // a helper's names are not this function's
        }
        if t.role == Role::Optimizer {
            if let Some(ms) = p.model.optimizer_module_keys(func, &t.key) {
                cleared.extend(ms);
            }
        } else {
            cleared.push(t.key.clone());
        }
    }
    trained.iter().all(|m| cleared.contains(m))
}

/// Does another method of the class being visited clear gradients (an `optimizer_zero_grad`
/// override, a `zero_grad()` in `on_train_batch_start`), by the project model's events of
/// its methods? Unknown (no project model) counts as yes.
fn cleared_by_other_methods(checker: &Checker) -> bool {
    let (Some(p), Some(class), Some(f)) = (
        checker.project(),
        checker.method_class_id(),
        checker.function(),
    ) else {
        return true;
    };
    let current = p.function_at(f.range.start());
    p.model.class_methods(class).into_iter().any(|m| {
        Some(m) != current
            && p.model
                .events(m)
                .iter()
                .any(|e| e.kind == EventKind::ZeroGrad)
    })
}

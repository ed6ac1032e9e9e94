use super::helpers::conditional_inside_loop;
use crate::checker::Checker;
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `torch.cuda.empty_cache()` called unconditionally in the body of a training
    /// step loop: a loop each iteration of which runs a backward pass or an optimizer step,
    /// in its body or in a helper it calls (not only in a nested loop).
    ///
    /// ## Why is this bad?
    /// `empty_cache` hands the caching allocator's unused blocks back to the driver. It cannot
    /// free memory that live tensors still hold, so it does not cure out-of-memory errors; it
    /// synchronises with the GPU, and the next iteration must ask the driver for the same
    /// memory again with slow `cudaMalloc` calls. Called every step, it slows training down
    /// noticeably. Calls behind a condition (`if step % 1000 == 0:`) or in an out-of-memory
    /// `except` handler, and calls in an outer epoch loop, are not reported; nor are calls
    /// after `del model, ...` in a loop where each iteration is a separate trial with its own
    /// model (a batch-size search or benchmark).
    ///
    /// ## Example
    /// ```python
    /// for batch in loader:
    ///     loss = model(batch).mean()
    ///     loss.backward()
    ///     optimizer.step()
    ///     torch.cuda.empty_cache()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// for batch in loader:
    ///     loss = model(batch).mean()
    ///     loss.backward()
    ///     optimizer.step()
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: remove the call, or run it only every N steps or after an
    /// out-of-memory error.
    ///
    /// ## References
    /// - [CUDA memory management](https://pytorch.org/docs/stable/notes/cuda.html#memory-management)
    /// - [transformers#31372: slowdown from empty_cache in the loop](https://github.com/huggingface/transformers/issues/31372)
    pub(crate) static CUDA_EMPTY_CACHE_IN_LOOP = {
        name: "cuda-empty-cache-in-loop",
        code: "TV097",
        group: Performance,
        severity: Warning,
        title: "torch.cuda.empty_cache() called every iteration (slow; does not free memory held by live tensors)",
        autofix: Suggest,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if !matches!(
        name,
        Some("torch.cuda.empty_cache" | "torch.cuda.memory.empty_cache")
    ) {
        return;
    }
    let Some(&innermost) = checker.frame().loops.last() else {
        return;
    };
    // A per-step training loop: one iteration runs a backward pass or an optimizer step
    // (the loop's flow, helpers it calls included), not only in a nested batch loop.
    let step_loop = checker
        .enclosing_loop_flow()
        .is_some_and(|flow| flow.is_step_loop());
    if !step_loop || conditional_inside_loop(checker, call.range()) {
        return;
    }
    // Each iteration is a separate trial that deletes its own model (a batch-size search or
    // benchmark: `del model, input_tensor, output, loss`): releasing the cache between trials
    // is the point.
    let body = torchvet_semantic::regions::loop_body(innermost);
    let mut deleted = Vec::new();
    // Names built in the loop by a call, and names used as a module there (`.train()`,
    // `.eval()`, `.parameters()`).
    let mut built: Vec<&str> = Vec::new();
    let mut module_used: Vec<&str> = Vec::new();
    torchvet_semantic::helpers::for_each_own_stmt(body, &mut |s| match s {
        Stmt::Delete(d) if d.start() < call.start() => {
            for t in &d.targets {
                match t {
                    Expr::Tuple(tu) => deleted.extend(tu.elts.iter()),
                    e => deleted.push(e),
                }
            }
        }
        Stmt::Assign(a) if matches!(&*a.value, Expr::Call(_)) => {
            built.extend(a.targets.iter().filter_map(helpers::name_of));
        }
        Stmt::Expr(e) => {
            if let Expr::Call(c) = &*e.value {
                if let Some(("train" | "eval", recv)) = helpers::method_call(c) {
                    module_used.extend(helpers::name_of(recv));
                }
            }
        }
        _ => {}
    });
    if deleted.into_iter().any(|e| {
        helpers::name_of(e).is_some_and(|n| {
            built.contains(&n) && (module_used.contains(&n) || checker.kind_of(e) == Kind::Module)
        })
    }) {
        return;
    }
    let text = checker.text(call.func.range());
    checker.report(
        call.range(),
        format!(
            "`{text}()` runs on every training step: it synchronises with the GPU and makes the allocator re-request the same memory next step, while memory held by live tensors is not freed"
        ),
    );
}

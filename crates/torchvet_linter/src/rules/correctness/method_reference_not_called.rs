use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

crate::declare_rule! {
    /// ## What it does
    /// Checks for statements that name a method such as `model.eval`, `optimizer.zero_grad`,
    /// `loss.backward` or `optimizer.step` without calling it, and for `with torch.no_grad:`
    /// without parentheses.
    ///
    /// ## Why is this bad?
    /// Without `()` the statement only looks the method up and throws it away: the model
    /// stays in training mode, gradients are never cleared, no backward pass or update
    /// happens. Python raises nothing, so training silently does something else. In a `with`
    /// statement the class object `torch.no_grad` is not a context manager instance and fails.
    ///
    /// ## Example
    /// ```python
    /// model.eval
    /// optimizer.zero_grad
    /// loss.backward()
    /// optimizer.step
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model.eval()
    /// optimizer.zero_grad()
    /// loss.backward()
    /// optimizer.step()
    /// ```
    ///
    /// ## Fix safety
    /// The fix appends `()`. For `with torch.no_grad:` that is safe (the original raises).
    /// For a bare method reference it runs a call that did not happen before (an optimizer
    /// step, a mode switch), which changes what the program computes, so it is unsafe.
    ///
    /// ## References
    /// - [nn.Module.eval](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval)
    /// - [nr3d_lib PR 12](https://github.com/PJLab-ADG/nr3d_lib/pull/12)
    /// - [DeepSpeed PR 2661](https://github.com/deepspeedai/DeepSpeed/pull/2661)
    pub(crate) static METHOD_REFERENCE_NOT_CALLED = {
        name: "method-reference-not-called",
        code: "TV057",
        group: Correctness,
        severity: Critical,
        title: "Method referenced but not called (model.eval / opt.zero_grad / loss.backward / opt.step)",
        autofix: Yes,
        hooks: { stmt: check_stmt },
    };
}

const METHODS: &[&str] = &[
    "eval",
    "train",
    "zero_grad",
    "backward",
    "step",
    "detach",
    "detach_",
    "cuda",
    "cpu",
    "item",
    "requires_grad_",
];

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    match stmt {
        Stmt::Expr(e) => {
            let Expr::Attribute(a) = &*e.value else {
                return;
            };
            let method = a.attr.as_str();
            if !METHODS.contains(&method) {
                return;
            }
            // A receiver that is an imported module (`np.cpu`) is not an object with these methods;
            // torch modules themselves are not either (`torch.cuda` names a module).
            if checker.resolve(&a.value).is_some() {
                return;
            }
            let text = checker.text(e.value.range());
            checker
                .report(
                    e.value.range(),
                    format!("`{text}` only looks the method up: without `()` it is never called, so `{method}` does not happen"),
                )
                .set_fix(RawFix::unsafe_edit(
                    format!("Call it: `{text}()`"),
                    vec![RawEdit::insert(e.value.end(), "()")],
                ));
        }
        Stmt::With(w) => {
            for item in &w.items {
                let ctx = &item.context_expr;
                if !matches!(ctx, Expr::Attribute(_) | Expr::Name(_)) {
                    continue;
                }
                let Some(q) = checker.resolve(ctx) else {
                    continue;
                };
                if !matches!(
                    q.as_str(),
                    "torch.no_grad"
                        | "torch.enable_grad"
                        | "torch.inference_mode"
                        | "torch.autograd.no_grad"
                ) {
                    continue;
                }
                let text = checker.text(ctx.range());
                checker
                    .report(
                        ctx.range(),
                        format!("`{text}` is a class, not a context manager instance: `with {text}:` fails at run time; write `{text}()`"),
                    )
                    .set_fix(RawFix::safe(
                        format!("Instantiate it: `{text}()`"),
                        vec![RawEdit::insert(ctx.end(), "()")],
                    ));
            }
        }
        _ => {}
    }
}

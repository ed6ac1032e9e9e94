use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprAttribute, ExprCall, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;

crate::declare_rule! {
    /// ## What it does
    /// Checks for statements that name a method such as `model.eval`, `optimizer.zero_grad`,
    /// `loss.backward` or `optimizer.step` without calling it, for a loaded state assigned to
    /// the method instead of passed to it (`optimizer.load_state_dict = ckpt["optimizer"]`),
    /// and for `with torch.no_grad:`
    /// without parentheses, and for `torch.save(optimizer.state_dict, path)`: the
    /// `state_dict` method of a module, optimizer, scheduler or scaler saved without calling
    /// it (also as a value of a saved dict, list or tuple).
    ///
    /// ## Why is this bad?
    /// Without `()` the statement only looks the method up and throws it away: the model
    /// stays in training mode, gradients are never cleared, no backward pass or update
    /// happens. Python raises nothing, so training silently does something else. In a `with`
    /// statement the class object `torch.no_grad` is not a context manager instance and fails.
    /// Saving `optimizer.state_dict` pickles the bound method, that is the whole optimizer
    /// (or model) it belongs to, and loading it gives a method where the state was expected.
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
        hooks: { stmt: check_stmt, call: check_call },
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

/// `torch.save(optimizer.state_dict, path)` (also as a value of a saved dict, list or tuple):
/// the method itself is saved, which pickles the whole object it is bound to, and loading
/// it back gives a bound method where a `state_dict` was expected. Only for receivers that
/// are a module, an optimizer, a scheduler or a scaler.
fn check_call(checker: &mut Checker, call: &ExprCall, q: Option<&str>) {
    if !q.is_some_and(helpers::is_torch_save) {
        return;
    }
    let Some(obj) = helpers::argument(call, "obj", 0) else {
        return;
    };
    fn state_dict_ref(e: &Expr) -> Option<&ExprAttribute> {
        match e {
            Expr::Attribute(a) if a.attr.as_str() == "state_dict" => Some(a),
            _ => None,
        }
    }
    let refs: Vec<&ExprAttribute> = match obj {
        Expr::Dict(d) => d
            .items
            .iter()
            .filter_map(|i| state_dict_ref(&i.value))
            .collect(),
        Expr::List(l) => l.elts.iter().filter_map(state_dict_ref).collect(),
        Expr::Tuple(t) => t.elts.iter().filter_map(state_dict_ref).collect(),
        e => state_dict_ref(e).into_iter().collect(),
    };
    for a in refs {
        let kind = checker.value_kind(&a.value);
        if !matches!(
            kind,
            Kind::Module | Kind::Optimizer(_) | Kind::Scheduler(_) | Kind::GradScaler
        ) {
            continue;
        }
        let text = checker.text(a.range()).to_string();
        checker
            .report(
                a.range(),
                format!("`{text}` is the method, not the state: `torch.save` pickles the bound method, that is the whole object it belongs to, and loading it back gives a method where a state dict was expected; call it: `{text}()`"),
            )
            .set_fix(RawFix::unsafe_edit(
                format!("Call it: `{text}()`"),
                vec![RawEdit::insert(a.end(), "()")],
            ));
    }
}

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
        // `optimizer.load_state_dict = checkpoint["optimizer"]`: the loaded state replaces the
        // method instead of going into it.
        Stmt::Assign(a) => {
            let ([Expr::Attribute(t)], value) = (&a.targets[..], &*a.value) else {
                return;
            };
            if t.attr.as_str() != "load_state_dict" || checker.resolve(&t.value).is_some() {
                return;
            }
            let loaded = match value {
                Expr::Subscript(_) => true,
                Expr::Call(c) => checker
                    .resolve(&c.func)
                    .is_some_and(|q| torchvet_semantic::helpers::is_torch_load(&q)),
                _ => false,
            };
            if !loaded {
                return;
            }
            let target = checker.text(t.range());
            let value_text = checker.text(value.range());
            checker
                .report(
                    a.range(),
                    format!("`{target} = ...` replaces the method with the loaded state instead of calling it: the state is never restored (and a later `{target}(...)` fails); write `{target}({value_text})`"),
                )
                .set_fix(RawFix::unsafe_edit(
                    format!("Call it: `{target}({value_text})`"),
                    vec![RawEdit::replace(a.range(), format!("{target}({value_text})"))],
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

use super::model_helpers::{
    analysed_body, body_mentions, calls_in, is_optimizer_call, visit_exprs, walk_body,
};
use crate::checker::Checker;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;

crate::declare_rule! {
    /// ## What it does
    /// Checks for a model converted to float16 (`model.half()`, `model.to(torch.float16)`,
    /// `model.to(dtype=torch.half)`) whose parameters go to an optimizer and which is trained
    /// with `backward()` in the same function, in a file that never uses autocast.
    ///
    /// ## Why is this bad?
    /// With float16 parameters there are no float32 master weights: small updates
    /// (`lr * grad`) round to zero against the weights, gradients underflow to zero or
    /// overflow to `inf`, and the loss turns into `nan` after some steps. `GradScaler` refuses
    /// float16 gradients ("Attempting to unscale FP16 gradients"). Mixed precision keeps the
    /// weights in float32 and runs the forward pass under `torch.autocast`. Inference-only
    /// conversions, bfloat16, and files using apex/DeepSpeed master weights are not reported.
    /// The rule is in preview: it only sees training in the function that converts the model.
    ///
    /// ## Example
    /// ```python
    /// model = Net().cuda().half()
    /// opt = torch.optim.Adam(model.parameters())
    /// for x, y in loader:
    ///     loss = criterion(model(x.cuda().half()), y.cuda())
    ///     loss.backward()
    ///     opt.step()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model = Net().cuda()
    /// opt = torch.optim.Adam(model.parameters())
    /// scaler = torch.amp.GradScaler("cuda")
    /// for x, y in loader:
    ///     with torch.autocast("cuda", dtype=torch.float16):
    ///         loss = criterion(model(x.cuda()), y.cuda())
    ///     scaler.scale(loss).backward()
    ///     scaler.step(opt)
    ///     scaler.update()
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: switching to autocast changes the forward pass, the input casts and
    /// the optimizer step (GradScaler), which needs review.
    ///
    /// ## References
    /// - [Automatic mixed precision](https://pytorch.org/docs/stable/amp.html)
    /// - [AMP recipe](https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html)
    /// - [x-transformers#30](https://github.com/lucidrains/x-transformers/issues/30)
    pub(crate) static MANUAL_HALF_TRAINING = {
        name: "manual-half-training",
        code: "TV045",
        group: Correctness,
        severity: Warning,
        title: "Training with model.half()/.to(torch.float16) parameters instead of autocast (no fp32 master weights)",
        autofix: Suggest,
        preview: true,
        hooks: { stmt: check_stmt },
    };
}

fn is_f16(checker: &Checker, e: &Expr) -> bool {
    checker.resolves_to(e, &["torch.float16", "torch.half"])
}

/// `M.half()` / `M.to(torch.float16)` somewhere in a self-returning chain: the call and the
/// chain's root model expression.
fn half_call<'a>(checker: &Checker, e: &'a Expr) -> Option<(&'a ast::ExprCall, &'a Expr)> {
    let Expr::Call(c) = e else { return None };
    let (m, recv) = helpers::method_call(c)?;
    let is_half = match m {
        "half" => c.arguments.is_empty(),
        "to" => {
            helpers::keyword(c, "dtype").is_some_and(|d| is_f16(checker, d))
                || c.arguments.args.iter().any(|a| is_f16(checker, a))
        }
        _ => false,
    };
    if is_half {
        return Some((c, recv));
    }
    if matches!(m, "to" | "cuda" | "train" | "eval" | "cpu") {
        return half_call(checker, recv);
    }
    None
}

fn file_has_master_weights(checker: &Checker) -> bool {
    let t = checker.source.text.as_bytes();
    let has = |n: &str| memchr::memmem::find(t, n.as_bytes()).is_some();
    has("autocast")
        || has("master")
        || has("FP16_Optimizer")
        || has("amp.initialize")
        || has("deepspeed")
        || has("accelerate")
        || has("lightning")
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Some(body) = analysed_body(checker, stmt) else {
        return;
    };
    if !body_mentions(checker, body, "backward")
        || !["half", "float16"]
            .iter()
            .any(|n| body_mentions(checker, body, n))
    {
        return;
    }
    let mut stmts = Vec::new();
    walk_body(body, &mut |s, _| stmts.push(s));
    // 1. half conversions of a model.
    let mut halves: Vec<(TextRange, String)> = Vec::new();
    for s in &stmts {
        let (value, target) = match s {
            Stmt::Expr(e) => (&*e.value, None),
            Stmt::Assign(a) if a.targets.len() == 1 => (&*a.value, Some(&a.targets[0])),
            _ => continue,
        };
        let Some((call, root)) = half_call(checker, value) else {
            continue;
        };
        let model = match target {
            Some(t) => t,
            None => root,
        };
        let Some(name) = helpers::dotted(model) else {
            continue;
        };
        let is_module =
            checker.kind_of(model) == Kind::Module || checker.kind_of(root) == Kind::Module;
        if is_module {
            halves.push((call.range(), name));
        }
    }
    if halves.is_empty() {
        return;
    }
    // 2. an optimizer over its parameters, and a backward() in the same function.
    let mut backward: Option<TextRange> = None;
    let mut optimizers: Vec<(TextRange, String)> = Vec::new();
    for s in &stmts {
        for c in calls_in(s) {
            if backward.is_none() {
                if let Some(("backward", _)) = helpers::method_call(c) {
                    backward = Some(c.range());
                }
            }
            if is_optimizer_call(checker, c) {
                for a in c
                    .arguments
                    .args
                    .iter()
                    .chain(c.arguments.keywords.iter().map(|k| &k.value))
                {
                    visit_exprs(a, &mut |x| {
                        if let Expr::Call(p) = x {
                            if let Some(("parameters" | "named_parameters", recv)) =
                                helpers::method_call(p)
                            {
                                if let Some(d) = helpers::dotted(recv) {
                                    optimizers.push((c.range(), d));
                                }
                            }
                        }
                    });
                }
            }
        }
    }
    let Some(backward) = backward else { return };
    if file_has_master_weights(checker) {
        return;
    }
    for (half, model) in halves {
        let Some((opt, _)) = optimizers.iter().find(|(_, m)| *m == model) else {
            continue;
        };
        let half_text = checker.text(half).to_string();
        let d = checker.report(
            half,
            format!(
                "`{half_text}` makes `{model}`'s parameters float16 and they are trained directly: with no float32 master weights small updates round away and gradients underflow, so the loss tends to nan; keep float32 weights and use torch.autocast with a GradScaler"
            ),
        );
        d.add_related(*opt, "the optimizer updates the float16 parameters");
        d.add_related(backward, "gradients are computed in float16 here");
    }
}

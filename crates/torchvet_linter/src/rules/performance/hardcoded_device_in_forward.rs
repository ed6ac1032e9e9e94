use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::correctness::model_helpers::{is_cuda_literal, visit_exprs};
use ruff_python_ast::{self as ast, Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks `forward` methods of `nn.Module` subclasses, and the project functions they run
    /// through unconditional calls (up to three calls deep, `self.<method>(...)` dispatch to
    /// subclass overrides included), for hard-coded CUDA placement: `.cuda()`, `.to("cuda")`
    /// / `.to("cuda:0")`, and `device="cuda"` (or `torch.device("cuda")`) in tensor
    /// factories.
    ///
    /// ## Why is this bad?
    /// A module's device is decided by whoever calls `.to(device)` on it. A `forward` that
    /// creates or moves tensors to the default GPU breaks the model on the CPU, puts tensors
    /// on `cuda:0` when the model runs on `cuda:1` (or under DistributedDataParallel, where
    /// every rank has its own GPU), and fails with a device mismatch. Take the device from an
    /// input tensor (`device=x.device`) or register the tensor as a buffer. Code under a test
    /// of `x.is_cuda`, `torch.cuda.is_available()` or a device flag is not reported. The rule
    /// is in preview: some modules are CUDA-only on purpose (custom kernels).
    ///
    /// ## Example
    /// ```python
    /// class Net(nn.Module):
    ///     def forward(self, x):
    ///         mask = torch.ones(x.size(0), 1).cuda()
    ///         return x * mask
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// class Net(nn.Module):
    ///     def forward(self, x):
    ///         mask = torch.ones(x.size(0), 1, device=x.device)
    ///         return x * mask
    /// ```
    ///
    /// ## Fix safety
    /// No fix is offered in a helper that `forward` runs. When `forward`'s first input is
    /// visibly a tensor (annotated `torch.Tensor`, or its
    /// `.shape`/`.size()`/`.device`/`.dtype` is used), the fix takes the device from it:
    /// `device="cuda"` becomes `device=x.device`, and `torch.ones(...).cuda()` becomes
    /// `torch.ones(..., device=x.device)`. The input is where the model's computation happens,
    /// so these fixes are safe. Moving another tensor (`t.cuda()` -> `t.to(x.device)`) is
    /// unsafe, since `t` may need to follow the weights rather than the input. No fix is
    /// offered when the moved value is the input itself or no input tensor is at hand.
    ///
    /// ## References
    /// - [CUDA semantics: device-agnostic code](https://pytorch.org/docs/stable/notes/cuda.html#best-practices)
    /// - [pytorch/pytorch#39062](https://github.com/pytorch/pytorch/issues/39062)
    pub(crate) static HARDCODED_DEVICE_IN_FORWARD = {
        name: "hardcoded-device-in-forward",
        code: "TV053",
        group: Performance,
        severity: Warning,
        title: "x.cuda()/.to('cuda')/torch.zeros(..).cuda() inside forward (breaks CPU/multi-GPU/DDP device placement)",
        autofix: Yes,
        preview: true,
        hooks: { call: check_call },
    };
}

enum Site<'a> {
    /// `recv.cuda(...)`: the receiver.
    Cuda(&'a Expr),
    /// `recv.to("cuda")`: the receiver and the device argument.
    To(&'a Expr, &'a Expr),
    /// `f(..., device="cuda")`: the keyword value.
    DeviceKw(&'a Expr),
}

fn check_call(checker: &mut Checker, call: &ExprCall, _q: Option<&str>) {
    let in_forward = checker.in_module_method("forward");
    if !in_forward && checker.function().is_none() {
        return;
    }
    let site = match helpers::method_call(call) {
        Some(("cuda", recv)) if checker.resolve(recv).is_none() => {
            if call.arguments.keywords.is_empty()
                && call
                    .arguments
                    .args
                    .iter()
                    .all(|a| helpers::int_value(a).is_some())
            {
                Site::Cuda(recv)
            } else {
                return;
            }
        }
        Some(("to", recv)) if checker.resolve(recv).is_none() => {
            match helpers::argument(call, "device", 0) {
                Some(d) if is_cuda_literal(checker, d) => Site::To(recv, d),
                _ => return,
            }
        }
        _ => match helpers::keyword(call, "device") {
            Some(d) if is_cuda_literal(checker, d) => Site::DeviceKw(d),
            _ => return,
        },
    };
    if guarded(checker) {
        return;
    }
    let Some(func) = checker.function() else {
        return;
    };
    // A helper that a module's `forward` runs (`forward` -> `self.log_likelihood(x, l)` ->
    // `mix_loss(x, l)`), through calls that no condition guards.
    let runner = match in_forward {
        true => None,
        false => match forward_runner(checker) {
            Some(label) => Some(label),
            None => return,
        },
    };
    let place = match &runner {
        None => format!(
            "`{}.forward`",
            checker
                .module_method()
                .map(|c| c.def.name.as_str())
                .unwrap_or_default()
        ),
        Some((helper, forward)) => format!("`{helper}`, which `{forward}` runs,"),
    };
    let input = if in_forward {
        tensor_input(checker, func)
    } else {
        None
    };
    let (range, what) = match &site {
        Site::Cuda(_) => (call.range(), checker.text(call.range()).to_string()),
        Site::To(_, d) => (call.range(), format!(".to({})", checker.text(d.range()))),
        Site::DeviceKw(d) => (d.range(), format!("device={}", checker.text(d.range()))),
    };
    let what = if what.len() > 50 {
        match &site {
            Site::Cuda(_) => ".cuda()".to_string(),
            _ => what,
        }
    } else {
        what
    };
    let fix = input.and_then(|(name, _)| fix_for(checker, call, &site, name));
    let d = checker.report(
        range,
        format!(
            "`{what}` in {place} pins this tensor to the default GPU whatever device the module was moved to: the model fails on the CPU and mixes devices on another GPU or under DDP"
        ),
    );
    match input {
        Some((name, r)) => {
            d.add_related(
                r,
                format!("take the device from the input instead: `{name}.device`"),
            );
        }
        None if runner.is_none() => {
            d.add_related(func.name.range(), "the forward method");
        }
        None => {}
    }
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

/// The function being checked and the `forward` that runs it, by the project's call graph,
/// as findings name them (`Mixture.log_likelihood`, `Lik.forward`).
fn forward_runner(checker: &Checker) -> Option<(String, String)> {
    let p = checker.project_or_file()?;
    let f = p.function_at(checker.function()?.range.start())?;
    let forward = p.model.forward_caller(f)?;
    Some((p.model.function_label(f), p.model.function_label(forward)))
}

/// Inside an `if`/conditional expression that tests CUDA or a device?
fn guarded(checker: &Checker) -> bool {
    let mentions = |e: &Expr| {
        let t = checker.text(e.range());
        t.contains("cuda") || t.contains("device") || t.contains("gpu") || t.contains("GPU")
    };
    let stmts = checker.stmt_stack();
    let in_func = stmts
        .iter()
        .rposition(|s| matches!(s, Stmt::FunctionDef(_)))
        .map_or(0, |i| i + 1);
    stmts[in_func..].iter().any(|s| match s {
        Stmt::If(i) => {
            mentions(&i.test)
                || i.elif_else_clauses
                    .iter()
                    .any(|c| c.test.as_ref().is_some_and(mentions))
        }
        Stmt::While(w) => mentions(&w.test),
        _ => false,
    }) || checker.expr_stack().iter().any(|e| match e {
        Expr::If(i) => mentions(&i.test),
        Expr::BoolOp(b) => b
            .values
            .iter()
            .any(|v| mentions(v) && !matches!(v, Expr::Call(_))),
        _ => false,
    })
}

/// The first input of `forward` when it is visibly a tensor: its name and range.
fn tensor_input<'a>(
    checker: &Checker,
    func: &'a ast::StmtFunctionDef,
) -> Option<(&'a str, TextRange)> {
    let p = func.parameters.args.get(1)?;
    let name = p.parameter.name.as_str();
    if let Some(ann) = &p.parameter.annotation {
        return checker
            .resolves_to(ann, &["torch.Tensor"])
            .then_some((name, p.parameter.range()));
    }
    let mut used = false;
    for s in &func.body {
        let mut exprs = Vec::new();
        crate::rules::correctness::model_helpers::walk_body(
            std::slice::from_ref(s),
            &mut |x, _| {
                exprs.extend(crate::rules::correctness::model_helpers::own_exprs(x));
            },
        );
        for e in exprs {
            visit_exprs(e, &mut |x| {
                if let Expr::Attribute(a) = x {
                    if helpers::name_of(&a.value) == Some(name)
                        && matches!(
                            a.attr.as_str(),
                            "shape" | "size" | "device" | "dtype" | "dim" | "ndim"
                        )
                    {
                        used = true;
                    }
                }
            });
        }
    }
    used.then_some((name, p.parameter.range()))
}

fn factory_call<'a>(checker: &Checker, e: &'a Expr) -> Option<&'a ExprCall> {
    let Expr::Call(c) = e else { return None };
    let q = checker.resolve(&c.func)?;
    let f = q.strip_prefix("torch.")?;
    (super::helpers::DEVICE_FACTORIES.contains(&f)
        && helpers::keyword(c, "device").is_none()
        && !helpers::has_kwargs_splat(c))
    .then_some(c)
}

fn fix_for(checker: &Checker, call: &ExprCall, site: &Site, input: &str) -> Option<RawFix> {
    let dev = format!("{input}.device");
    let msg = format!("Use the input's device (`{dev}`)");
    match site {
        Site::DeviceKw(d) => Some(RawFix::safe(msg, vec![RawEdit::replace(d.range(), dev)])),
        Site::Cuda(recv) | Site::To(recv, _) => {
            if helpers::name_of(recv) == Some(input) {
                return None;
            }
            let tail = TextRange::new(recv.end(), call.end());
            if let Some(factory) = factory_call(checker, recv) {
                if matches!(site, Site::Cuda(_)) || call.arguments.len() == 1 {
                    return Some(RawFix::safe(
                        msg,
                        vec![
                            crate::fix::add_keyword_argument(factory, &format!("device={dev}")),
                            RawEdit::delete(tail),
                        ],
                    ));
                }
            }
            match site {
                Site::To(_, d) => Some(RawFix::unsafe_edit(
                    msg,
                    vec![RawEdit::replace(d.range(), dev)],
                )),
                _ => Some(RawFix::unsafe_edit(
                    msg,
                    vec![RawEdit::replace(tail, format!(".to({dev})"))],
                )),
            }
        }
    }
}

use super::helpers::{class_method, self_attr_use};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for a constant tensor stored as a plain attribute in the `__init__` of an
    /// `nn.Module` (`self.mask = torch.tril(torch.ones(T, T))`) and read in `forward`.
    ///
    /// ## Why is this bad?
    /// Only parameters and buffers belong to the module's state. A plain tensor attribute is
    /// not moved by `model.to(device)` / `model.cuda()` / `model.half()`, so `forward` fails
    /// with a device mismatch as soon as the model runs on a GPU. It is also missing from
    /// `state_dict()`, and DDP does not broadcast it. `register_buffer` fixes all of that.
    ///
    /// ## Example
    /// ```python
    /// def __init__(self, T):
    ///     super().__init__()
    ///     self.mask = torch.tril(torch.ones(T, T))
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def __init__(self, T):
    ///     super().__init__()
    ///     self.register_buffer("mask", torch.tril(torch.ones(T, T)), persistent=False)
    /// ```
    ///
    /// ## Fix safety
    /// The fix rewrites the assignment to `self.register_buffer("x", ..., persistent=False)`,
    /// so checkpoints keep their keys. The tensor now follows `model.to()` (and dtype casts
    /// such as `model.half()`), which changes behaviour, so the fix is unsafe.
    ///
    /// ## References
    /// - [nn.Module.register_buffer](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer)
    /// - [botorch PR 1035](https://github.com/meta-pytorch/botorch/pull/1035)
    /// - [torchaudio PR 457](https://github.com/pytorch/audio/pull/457)
    pub(crate) static TENSOR_ATTRIBUTE_NOT_BUFFER = {
        name: "tensor-attribute-not-buffer",
        code: "TV055",
        group: Correctness,
        severity: Warning,
        title: "Constant tensor stored as a plain attribute in __init__ (not moved by model.to()): use register_buffer",
        autofix: Yes,
        hooks: { stmt: check_stmt },
    };
}

const CREATORS: &[&str] = &[
    "tensor",
    "as_tensor",
    "from_numpy",
    "Tensor",
    "FloatTensor",
    "LongTensor",
    "BoolTensor",
    "zeros",
    "ones",
    "full",
    "arange",
    "linspace",
    "logspace",
    "eye",
    "empty",
    "rand",
    "randn",
    "randint",
    "randperm",
    "tril",
    "triu",
    "tril_indices",
    "triu_indices",
    "hann_window",
    "hamming_window",
];

const CHAIN: &[&str] = &[
    "float",
    "long",
    "bool",
    "int",
    "double",
    "view",
    "reshape",
    "unsqueeze",
    "expand",
    "t",
    "transpose",
    "contiguous",
];

/// A tensor built from torch creation functions, without an explicit device.
fn is_constant_tensor(checker: &Checker, expr: &Expr) -> bool {
    let Expr::Call(call) = expr else { return false };
    if let Some(q) = checker.resolve(&call.func) {
        let Some(f) = q.strip_prefix("torch.") else {
            return false;
        };
        if !CREATORS.contains(&f) {
            return false;
        }
        return helpers::keyword(call, "device").is_none()
            && helpers::keyword(call, "requires_grad").is_none()
            && !helpers::has_kwargs_splat(call);
    }
    match helpers::method_call(call) {
        Some((m, recv)) if CHAIN.contains(&m) => is_constant_tensor(checker, recv),
        _ => false,
    }
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::Assign(assign) = stmt else { return };
    let [target] = assign.targets.as_slice() else {
        return;
    };
    let Some(name) = helpers::self_attribute(target) else {
        return;
    };
    if !checker.in_module_method("__init__") || !is_constant_tensor(checker, &assign.value) {
        return;
    }
    let Some(class) = checker.module_method() else {
        return;
    };
    // A class that moves its own attributes (custom `_apply`/`to`) knows what it does.
    if ["_apply", "to", "cuda"]
        .iter()
        .any(|m| class_method(class.def, m).is_some())
    {
        return;
    }
    let Some(forward) = class_method(class.def, "forward") else {
        return;
    };
    let usage = self_attr_use(&forward.body, name);
    if !usage.read || usage.moved {
        return;
    }
    let value = checker.text(assign.value.range());
    checker
        .report(
            target.range(),
            format!("`self.{name}` is a plain tensor attribute read in forward(): `model.to(device)` does not move it (device mismatch on GPU) and it is not in state_dict(); register it with `self.register_buffer`"),
        )
        .set_fix(RawFix::unsafe_edit(
            "Register it as a non-persistent buffer",
            vec![RawEdit::replace(
                stmt.range(),
                format!("self.register_buffer(\"{name}\", {value}, persistent=False)"),
            )],
        ));
}

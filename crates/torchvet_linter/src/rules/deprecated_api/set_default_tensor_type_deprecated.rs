use super::helpers;
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{ExprCall, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers as sem;

crate::declare_rule! {
    /// ## What it does
    /// Checks for calls to `torch.set_default_tensor_type(...)`.
    ///
    /// ## Why is this bad?
    /// The function is deprecated since torch 2.1 (it warns on every call). With a CUDA type
    /// (`'torch.cuda.FloatTensor'`) it also makes every factory call allocate on the GPU,
    /// including those inside DataLoader worker processes, which then fail to initialise CUDA.
    /// `torch.set_default_dtype` and `torch.set_default_device` (or explicit `device=`) say
    /// what is meant.
    ///
    /// ## Example
    /// ```python
    /// torch.set_default_tensor_type("torch.cuda.FloatTensor")
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// torch.set_default_dtype(torch.float32)
    /// torch.set_default_device("cuda")
    /// ```
    ///
    /// ## Fix safety
    /// For the CPU types `torch.FloatTensor` / `torch.DoubleTensor` (string or type) the fix
    /// calls `torch.set_default_dtype(torch.float32 / torch.float64)`, which sets the same
    /// default: safe. For the CUDA types it also calls `torch.set_default_device("cuda")`, only
    /// when the call is a statement of its own; that is unsafe because the default device also
    /// applies to factory calls the old setting did not affect. Other arguments get no fix.
    ///
    /// ## References
    /// - [torch.set_default_tensor_type](https://pytorch.org/docs/stable/generated/torch.set_default_tensor_type.html)
    /// - [torch.set_default_device](https://pytorch.org/docs/stable/generated/torch.set_default_device.html)
    pub(crate) static SET_DEFAULT_TENSOR_TYPE_DEPRECATED = {
        name: "set-default-tensor-type-deprecated",
        code: "TV092",
        group: DeprecatedApi,
        severity: Warning,
        title: "torch.set_default_tensor_type is deprecated (use set_default_dtype / set_default_device)",
        autofix: Yes,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if name != Some("torch.set_default_tensor_type") || !helpers::active(checker, 2, 1) {
        return;
    }
    let arg = sem::argument(call, "t", 0);
    let type_name: Option<String> = arg.and_then(|a| {
        sem::str_value(a)
            .map(str::to_string)
            .or_else(|| checker.resolve(a))
    });
    let (dtype, cuda) = match type_name.as_deref() {
        Some("torch.FloatTensor") => (Some("float32"), false),
        Some("torch.DoubleTensor") => (Some("float64"), false),
        Some("torch.cuda.FloatTensor") => (Some("float32"), true),
        Some("torch.cuda.DoubleTensor") => (Some("float64"), true),
        _ => (None, false),
    };
    let callee = checker.text(call.func.range()).to_string();
    let fix = match (dtype, helpers::torch_alias(checker)) {
        (Some(dtype), Some(t)) if !cuda => Some(RawFix::safe(
            format!("Use `{t}.set_default_dtype({t}.{dtype})`"),
            vec![RawEdit::replace(
                call.range(),
                format!("{t}.set_default_dtype({t}.{dtype})"),
            )],
        )),
        (Some(dtype), Some(t)) if is_statement(checker, call) => Some(RawFix::unsafe_edit(
            format!(
                "Use `{t}.set_default_dtype({t}.{dtype})` and `{t}.set_default_device(\"cuda\")`"
            ),
            vec![RawEdit::replace(
                call.range(),
                format!("{t}.set_default_dtype({t}.{dtype}); {t}.set_default_device(\"cuda\")"),
            )],
        )),
        _ => None,
    };
    let why = if cuda {
        " and makes every tensor factory allocate on the GPU, including in DataLoader workers"
    } else {
        ""
    };
    let d = checker.report(
        call.range(),
        format!("`{callee}(...)` is deprecated since torch 2.1{why}: use `torch.set_default_dtype` / `torch.set_default_device`"),
    );
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

/// Is the call the whole expression statement?
fn is_statement(checker: &Checker, call: &ExprCall) -> bool {
    matches!(checker.current_stmt(), Some(Stmt::Expr(e)) if e.value.range() == call.range())
}

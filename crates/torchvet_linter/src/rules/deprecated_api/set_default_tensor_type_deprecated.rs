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
    /// default when the default backend is the CPU: safe. It is offered only when no file of
    /// the project can have made CUDA the default (no CUDA type or non-literal argument given
    /// to `set_default_tensor_type`, no `set_default_device` other than `"cpu"`): after
    /// `set_default_tensor_type(torch.cuda.HalfTensor)`, the CPU type is a reset to the CPU,
    /// which `set_default_dtype` does not do (it keeps the CUDA backend, and later tensors are
    /// created on the GPU), and `set_default_device("cpu")` does not restore the legacy tensor
    /// type either: no fix then. For the CUDA types it also calls `torch.set_default_device("cuda")`, only
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
    // A CPU type after a CUDA one resets the backend too, which `set_default_dtype` does not.
    let cuda_default_possible = checker
        .project_or_file()
        .is_none_or(|p| p.model.any_may_set_cuda_default());
    let fix = match (dtype, helpers::torch_alias(checker)) {
        (Some(_), Some(_)) if !cuda && cuda_default_possible => None,
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

#[cfg(test)]
mod tests {
    use crate::{LintSettings, Linter};
    use torchvet_diagnostics::Applicability;
    use torchvet_python::SourceFile;

    /// The fix applicability of each finding, in order (`None`: no fix).
    fn fixes(src: &str) -> Vec<Option<Applicability>> {
        let linter = Linter::new(LintSettings::only("set-default-tensor-type-deprecated"));
        let file = SourceFile::from_python("train.py", src.to_string());
        let mut found = linter.lint(&file, "train.py");
        found.sort_by_key(|d| d.range.0);
        found
            .iter()
            .map(|d| d.fix.as_ref().map(|f| f.applicability))
            .collect()
    }

    #[test]
    fn a_cpu_type_is_a_safe_dtype_fix_only_when_nothing_made_cuda_the_default() {
        assert_eq!(
            fixes("import torch\ntorch.set_default_tensor_type(torch.FloatTensor)\n"),
            vec![Some(Applicability::Safe)]
        );
        // A reset after a CUDA half type: `set_default_dtype` would keep the CUDA backend.
        let reset = "import torch\n\ndef build(fp16):\n    torch.set_default_tensor_type(torch.cuda.HalfTensor)\n    model = Transformer(fp16)\n    torch.set_default_tensor_type(torch.FloatTensor)\n    return model\n";
        assert_eq!(fixes(reset), vec![None, None]);
        // A type chosen at run time may be a CUDA one; so may a default device.
        let chosen = "import torch\ntorch.set_default_tensor_type(TYPES[args.precision])\ntorch.set_default_tensor_type('torch.FloatTensor')\n";
        assert_eq!(fixes(chosen), vec![None, None]);
        let device = "import torch\ntorch.set_default_device(args.device)\ntorch.set_default_tensor_type(torch.DoubleTensor)\n";
        assert_eq!(fixes(device), vec![None]);
        let cpu_device = "import torch\ntorch.set_default_device('cpu')\ntorch.set_default_tensor_type(torch.DoubleTensor)\n";
        assert_eq!(fixes(cpu_device), vec![Some(Applicability::Safe)]);
    }
}

use super::helpers::displayed_by_notebook;
use super::tensor_helpers::{
    batch_loop_of, enclosing_suite, first_read, in_error_probe, stmts_after,
};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;

crate::declare_rule! {
    /// ## What it does
    /// Checks for out-of-place tensor methods (`.to()`, `.cuda()`, `.cpu()`, `.float()`,
    /// `.detach()`, `.add()`, `.reshape()`, ...) called as a statement of their own on a value
    /// known to be a tensor, so that the new tensor they return is thrown away.
    ///
    /// ## Why is this bad?
    /// These methods never change the tensor they are called on: they return a new one. As a
    /// bare statement the call does nothing, and the code after it keeps using the original
    /// tensor, on its old device, with its old dtype, still attached to the graph. The error
    /// surfaces later as a device-mismatch `RuntimeError`, or not at all (silently training
    /// in the wrong precision). `nn.Module.to()`/`.cuda()`/`.float()` are different: they act
    /// in place, so a bare `model.to(device)` is correct and is not reported. The rule only
    /// reports receivers known to be tensors (torch factory results, annotated parameters,
    /// names unpacked from `DataLoader` batches); the in-place variants (`add_`, `clamp_`) are
    /// not reported. In a notebook, the last expression of a cell is not discarded: Jupyter
    /// displays it as the cell's output (unless the line ends with `;`).
    ///
    /// ## Example
    /// ```python
    /// for x, y in loader:
    ///     x.to(device)
    ///     out = model(x)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// for x, y in loader:
    ///     x = x.to(device)
    ///     out = model(x)
    /// ```
    ///
    /// ## Fix safety
    /// When the receiver is a plain name, the fix assigns the result back to it
    /// (`x = x.to(device)`), which is what the statement meant. It is safe: the name now holds
    /// the converted tensor and nothing else changes. Receivers that are attributes
    /// (`self.mask.cuda()`) get an unsafe fix: assigning a plain tensor to an attribute that
    /// holds an `nn.Parameter` raises a `TypeError`, so review it.
    ///
    /// ## References
    /// - [torch.Tensor.to](https://pytorch.org/docs/stable/generated/torch.Tensor.to.html)
    /// - [torch.nn.Module.to (in place)](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.to)
    /// - [accelerate#2251: `.to` is not in place for tensors](https://github.com/huggingface/accelerate/issues/2251)
    pub(crate) static DISCARDED_TENSOR_OP_RESULT = {
        name: "discarded-tensor-op-result",
        code: "TV012",
        group: Correctness,
        severity: Critical,
        title: "Result of an out-of-place tensor op is discarded (x.to(device), x.cuda(), x.detach(), x.float() as a bare statement)",
        autofix: Yes,
        hooks: { stmt: check_stmt },
    };
}

/// Out-of-place tensor methods and what stays unchanged when their result is dropped.
fn effect(method: &str) -> Option<&'static str> {
    Some(match method {
        "to" => "stays on its old device and dtype",
        "cuda" => "stays on the CPU",
        "cpu" => "stays on its device",
        "float" | "double" | "half" | "bfloat16" | "long" | "int" | "type" => "keeps its old dtype",
        "detach" => "stays attached to the autograd graph",
        "contiguous" => "stays non-contiguous",
        "pin_memory" => "stays in pageable memory",
        "clone" => "is not copied",
        "add" | "sub" | "mul" | "div" | "clamp" => "keeps its old values",
        "squeeze" | "unsqueeze" | "view" | "reshape" | "permute" | "t" => "keeps its old shape",
        _ => return None,
    })
}

/// Methods that act in place on modules but not on tensors.
const MODULE_IN_PLACE: &[&str] = &[
    "to", "cuda", "cpu", "float", "double", "half", "bfloat16", "type",
];

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::Expr(e) = stmt else { return };
    let Expr::Call(call) = &*e.value else { return };
    let Some((method, receiver)) = helpers::method_call(call) else {
        return;
    };
    let Some(unchanged) = effect(method) else {
        return;
    };
    // `x.type()` without arguments returns the type name: a no-op, not a lost conversion.
    if method == "type" && call.arguments.is_empty() {
        return;
    }
    let mut batch_loop = None;
    if checker.kind_of(receiver) != Kind::Tensor {
        let Some(name) = helpers::name_of(receiver) else {
            return;
        };
        batch_loop = batch_loop_of(checker, name);
        if batch_loop.is_none() {
            return;
        }
    }
    if in_error_probe(checker) || displayed_by_notebook(checker, stmt) {
        return;
    }
    let recv = checker.text(receiver.range());
    let call_text = checker.text(call.range());
    let call_text = if call_text.contains('\n') {
        format!("{recv}.{method}(...)")
    } else {
        call_text.to_string()
    };
    let next_use = helpers::name_of(receiver).and_then(|name| {
        let suite = enclosing_suite(checker, stmt)?;
        first_read(stmts_after(suite, stmt), name)
    });
    let fix = if matches!(receiver, Expr::Name(_)) {
        Some(RawFix::safe(
            format!("Assign the result back to `{recv}`"),
            vec![RawEdit::insert(call.start(), format!("{recv} = "))],
        ))
    } else if helpers::dotted(receiver).is_some() {
        Some(RawFix::unsafe_edit(
            format!("Assign the result back to `{recv}` (review: it may hold a Parameter)"),
            vec![RawEdit::insert(call.start(), format!("{recv} = "))],
        ))
    } else {
        None
    };
    let note = if MODULE_IN_PLACE.contains(&method) {
        format!(" (`Tensor.{method}` is not in place, unlike `nn.Module.{method}`)")
    } else {
        String::new()
    };
    let d = checker.report(
        call.range(),
        format!(
            "`{call_text}` returns a new tensor that is thrown away: `{recv}` {unchanged}{note}"
        ),
    );
    if let Some(r) = next_use {
        d.add_related(r, format!("`{recv}` is used here unchanged"));
    } else if let Some(Stmt::For(f)) = batch_loop {
        d.add_related(
            f.iter.range(),
            format!("`{recv}` is a batch tensor of this loader"),
        );
    }
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

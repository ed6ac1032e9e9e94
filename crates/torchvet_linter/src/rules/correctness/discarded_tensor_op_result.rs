use super::helpers::displayed_by_notebook;
use super::tensor_helpers::{enclosing_suite, first_read, in_error_probe, stmts_after};
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
    /// known to be a tensor, so that the tensor they return is thrown away.
    ///
    /// ## Why is this bad?
    /// These methods never change the tensor they are called on: they return a new one (or
    /// the same one when there is nothing to do). As a bare statement the call does nothing,
    /// and the code after it keeps using the original tensor, on its old device, with its old
    /// dtype, still attached to the graph. The error surfaces later as a device-mismatch
    /// `RuntimeError`, or not at all (silently training in the wrong precision).
    /// `nn.Module.to()`/`.cuda()`/`.float()` are different: they act in place, so a bare
    /// `model.to(device)` is correct and is not reported. The rule only reports receivers known
    /// to be tensors (torch factory results, annotated parameters, names unpacked from
    /// `DataLoader` batches) that some name, attribute or subscript holds; the in-place
    /// variants (`add_`, `clamp_`) are not reported. A fresh temporary that nothing holds
    /// (`torch.ones(1).to("cuda")`, `torch.zeros(2, 2).cuda()`) is not reported either: no
    /// variable can "stay" unconverted, and the statement is the usual way to initialise the
    /// CUDA context (or warm it up) before a memory or timing measurement. In a notebook, the
    /// last expression of a cell is not discarded: Jupyter displays it as the cell's output
    /// (unless the line ends with `;`).
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
    /// The fix assigns the result back to the receiver (`x = x.to(device)`). It is always
    /// unsafe, whatever the method: the program as written never converts the tensor, and
    /// after the fix every later use of the name sees a different value, which is a change of
    /// behaviour by definition, however much it is what the statement meant.
    /// - Device moves (`to`, `cuda`, `cpu`, `pin_memory`): later code runs on the new device;
    ///   code that only works because the tensor stayed on the CPU (`.numpy()`, mixing with
    ///   CPU tensors) starts raising.
    /// - Dtype casts (`float`, `half`, `long`, `type`, `to(dtype)`): later arithmetic,
    ///   losses and indexing run in the new dtype (`half` loses precision, `long` truncates).
    /// - `detach`: gradients no longer flow back through the later uses; a loss built from
    ///   them stops training what it trained before.
    /// - `clone`, `contiguous`: later in-place writes no longer reach the original storage
    ///   and the tensors that share it.
    /// - Arithmetic (`add`, `mul`, `clamp`, ...) and shape ops (`view`, `reshape`, `t`, ...):
    ///   later code sees other values or another shape.
    ///
    /// An attribute receiver (`self.mask.cuda()`) has a further risk: assigning a plain tensor
    /// to an attribute that holds an `nn.Parameter` raises a `TypeError`. Review each fix.
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
        autofix: Suggest,
        hooks: { stmt: check_stmt },
    };
}

/// Out-of-place tensor methods and what stays unchanged when their result is dropped.
fn effect(method: &str) -> Option<&'static str> {
    Some(match method {
        "to" => "keeps its current device and dtype",
        "cuda" | "cpu" => "stays on its current device",
        "float" | "double" | "half" | "bfloat16" | "long" | "int" | "type" => {
            "keeps its current dtype"
        }
        "detach" => "is not detached from the autograd graph",
        "contiguous" => "is not made contiguous",
        "pin_memory" => "is not pinned",
        "clone" => "is not copied",
        "add" | "sub" | "mul" | "div" | "clamp" => "keeps its current values",
        "squeeze" | "unsqueeze" | "view" | "reshape" | "permute" | "t" => "keeps its current shape",
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
    // A fresh temporary (`torch.ones(1).to("cuda")`, a CUDA warm-up): nothing holds it, so
    // nothing can stay unconverted.
    if is_fresh_temporary(checker, receiver) {
        return;
    }
    let mut batch_loop = None;
    if checker.kind_of(receiver) != Kind::Tensor {
        let Some(name) = helpers::name_of(receiver) else {
            return;
        };
        let loops = checker.frame().loops.clone();
        let candidate =
            torchvet_semantic::iterables::batch_loop(&loops, name, &|e| checker.scopes.resolve(e));
        if let Some((stmt, loader)) = candidate {
            if checker.kind_of(loader) == Kind::DataLoader
                || torchvet_semantic::iterables::named_like_loader(loader)
            {
                batch_loop = Some(stmt);
            }
        }
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
    // Never safe: every later use of the receiver sees the converted tensor (see Fix safety).
    let fix = if matches!(receiver, Expr::Name(_)) {
        Some(RawFix::unsafe_edit(
            format!(
                "Assign the result back to `{recv}` (review: later uses see the converted tensor)"
            ),
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
        format!("the result of `{call_text}` is thrown away: `{recv}` {unchanged}{note}"),
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

/// Is the receiver a fresh temporary that no name, attribute or subscript holds: a call of a
/// torch function or a library constructor (`torch.zeros(2, 2)`, `torch.tensor([1.0])`),
/// possibly followed by more tensor methods (`torch.ones(1).float()`)?
fn is_fresh_temporary(checker: &Checker, receiver: &Expr) -> bool {
    let mut e = receiver;
    loop {
        let Expr::Call(c) = e else { return false };
        if checker.resolve(&c.func).is_some() {
            return true;
        }
        match helpers::method_call(c) {
            Some((_, inner)) => e = inner,
            None => return false,
        }
    }
}

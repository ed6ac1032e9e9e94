use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt, StmtWith};
use ruff_text_size::{Ranged, TextRange, TextSize};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `loss.backward()` (or `scaler.scale(loss).backward()`) called inside an
    /// autocast region: `with torch.autocast(...)`, `torch.amp.autocast` or
    /// `torch.cuda.amp.autocast`.
    ///
    /// ## Why is this bad?
    /// Autocast only needs to cover the forward pass and the loss. The backward ops
    /// automatically run in the dtype autocast chose for the matching forward ops, so keeping
    /// the backward pass inside the region gains nothing, and the PyTorch documentation
    /// recommends against it. Ending the region before `backward()` also keeps the optimizer
    /// step and gradient clipping out of it. Regions entered with `enabled=False` are not
    /// reported.
    ///
    /// ## Example
    /// ```python
    /// with torch.autocast("cuda"):
    ///     loss = criterion(model(x), y)
    ///     scaler.scale(loss).backward()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// with torch.autocast("cuda"):
    ///     loss = criterion(model(x), y)
    /// scaler.scale(loss).backward()
    /// ```
    ///
    /// ## Fix safety
    /// When the backward call is followed in the block only by `step()`, `update()`,
    /// `zero_grad()`, `unscale_()` and gradient clipping calls, the fix dedents those
    /// statements out of the `with` block. Gradients are the same either way (backward ops use
    /// the dtypes recorded in the forward pass), so the fix is safe.
    ///
    /// ## References
    /// - [torch.autocast: backward passes under autocast are not recommended](https://pytorch.org/docs/stable/amp.html#torch.autocast)
    /// - [pytorch#55585](https://github.com/pytorch/pytorch/issues/55585)
    pub(crate) static BACKWARD_INSIDE_AUTOCAST = {
        name: "backward-inside-autocast",
        code: "TV117",
        group: Performance,
        severity: Info,
        title: "loss.backward() executed inside the autocast region",
        autofix: Yes,
        hooks: { call: check_call },
    };
}

const AUTOCAST: &[&str] = &[
    "torch.autocast",
    "torch.amp.autocast",
    "torch.cuda.amp.autocast",
    "torch.cpu.amp.autocast",
    "torch.amp.autocast_mode.autocast",
];

/// The autocast call of a `with` statement, if it has one.
fn autocast_item<'w>(checker: &Checker, w: &'w StmtWith) -> Option<&'w ExprCall> {
    w.items.iter().find_map(|item| match &item.context_expr {
        Expr::Call(c) if checker.resolves_to(&c.func, AUTOCAST) => Some(c),
        _ => None,
    })
}

/// Statements that may follow `backward()` and move out of the region with it.
fn is_post_backward(stmt: &Stmt) -> bool {
    let Stmt::Expr(e) = stmt else { return false };
    let Expr::Call(c) = &*e.value else {
        return false;
    };
    match &*c.func {
        Expr::Attribute(a) => matches!(
            a.attr.as_str(),
            "backward"
                | "step"
                | "update"
                | "zero_grad"
                | "unscale_"
                | "clip_grad_norm_"
                | "clip_grad_value_"
        ),
        _ => false,
    }
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let is_backward = match helpers::method_call(call) {
        Some(("backward", _)) => call.arguments.args.len() <= 1,
        _ => name == Some("torch.autograd.backward"),
    };
    if !is_backward || checker.regions().autocast == 0 {
        return;
    }
    // The innermost autocast `with` of this function decides (`enabled=False` re-disables).
    let func_range = checker.function().map(Ranged::range);
    let mut region: Option<(&StmtWith, &ExprCall)> = None;
    for s in checker.stmt_stack().iter().rev() {
        if Some(s.range()) == func_range {
            break;
        }
        if let Stmt::With(w) = s {
            if let Some(c) = autocast_item(checker, w) {
                region = Some((w, c));
                break;
            }
        }
    }
    let enabled = region.map_or(Some(true), |(_, c)| {
        helpers::keyword(c, "enabled").map_or(Some(true), helpers::is_truthy)
    });
    if enabled == Some(false) {
        return;
    }
    let fix = region.and_then(|(w, _)| dedent_fix(checker, w));
    let text = checker.text(call.range());
    let text = if text.contains('\n') {
        "backward()"
    } else {
        text
    };
    let d = checker.report(
        call.range(),
        format!("`{text}` runs inside the autocast region: backward ops already use the dtypes chosen in the forward pass, so end the region before the backward call"),
    );
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

/// Dedent the backward statement and what follows it out of the `with` block, when the
/// backward statement is directly in the block and followed only by optimizer calls.
fn dedent_fix(checker: &Checker, w: &StmtWith) -> Option<RawFix> {
    if w.items.len() != 1 {
        return None;
    }
    let current = checker.current_stmt()?;
    let pos = w.body.iter().position(|s| s.range() == current.range())?;
    if pos == 0 || !w.body[pos..].iter().all(is_post_backward) {
        return None;
    }
    let text = &checker.source.text;
    let line_start = |offset: TextSize| -> usize {
        let o = offset.to_usize();
        text.get(..o)
            .and_then(|t| t.rfind('\n'))
            .map_or(0, |i| i + 1)
    };
    let with_indent = w.start().to_usize() - line_start(w.start());
    let first = &w.body[pos];
    let body_line = line_start(first.start());
    let body_indent = first.start().to_usize() - body_line;
    if body_indent <= with_indent {
        return None;
    }
    let cut = body_indent - with_indent;
    let end = w.body.last()?.end().to_usize();
    let mut edits = Vec::new();
    let mut line = body_line;
    while line < end {
        let rest = text.get(line..)?;
        let line_len = rest.find('\n').map_or(rest.len(), |i| i + 1);
        let content = &rest[..line_len];
        if !content.trim().is_empty() {
            let ws = content.len() - content.trim_start_matches([' ', '\t']).len();
            if ws < cut {
                return None;
            }
            let start = TextSize::try_from(line).ok()?;
            let len = TextSize::try_from(cut).ok()?;
            edits.push(RawEdit::delete(TextRange::at(start, len)));
        }
        line += line_len;
    }
    Some(RawFix::safe(
        "Move the backward pass and optimizer calls out of the autocast block",
        edits,
    ))
}

#[cfg(test)]
mod tests {
    use crate::rules::performance::helpers::apply_fixes;

    #[test]
    fn fixes() {
        let src = "import torch\nfor x in dl:\n    with torch.autocast(\"cuda\"):\n        loss = m(x)\n        scaler.scale(loss).backward()\n\n        scaler.step(opt)\n    print(1)\n";
        let (n, out) = apply_fixes("backward-inside-autocast", src);
        assert_eq!(n, 1);
        assert_eq!(
            out,
            "import torch\nfor x in dl:\n    with torch.autocast(\"cuda\"):\n        loss = m(x)\n    scaler.scale(loss).backward()\n\n    scaler.step(opt)\n    print(1)\n"
        );
    }
}

use super::taint_helpers::{self, Loss};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::Ranged;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `nn.BCELoss` / `F.binary_cross_entropy` whose input is the output of a
    /// sigmoid (`torch.sigmoid`, `Tensor.sigmoid`, `nn.Sigmoid`, or the `forward` of a module
    /// of the same file that ends in one, including an `nn.Sequential` whose last layer is
    /// `nn.Sigmoid()`).
    ///
    /// ## Why is this bad?
    /// Computing `log(sigmoid(z))` in two steps loses precision: for large `|z|` the sigmoid
    /// rounds to exactly 0 or 1, `BCELoss` clamps the log at -100, and the gradient through
    /// the saturated sigmoid is zero, so badly wrong confident predictions stop learning.
    /// `BCEWithLogitsLoss` fuses both steps with the log-sum-exp trick and is exact. Under
    /// `torch.autocast`, `binary_cross_entropy` is refused outright ("unsafe to autocast",
    /// RuntimeError). Sigmoid outputs used for predictions, thresholds, metrics or a Dice
    /// loss are fine and not reported, and so is a loss computed with autograd off (a
    /// validation loss under `torch.no_grad()` that is only printed: no gradient is taken, and
    /// the training loss it mirrors is where the finding belongs).
    ///
    /// ## Example
    /// ```python
    /// p = torch.sigmoid(model(x))
    /// loss = nn.BCELoss()(p, y)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// logits = model(x)
    /// loss = nn.BCEWithLogitsLoss()(logits, y)
    /// ```
    ///
    /// ## Fix safety
    /// When both the sigmoid and the loss are written in the loss call
    /// (`F.binary_cross_entropy(torch.sigmoid(z), y)` or `nn.BCELoss()(z.sigmoid(), y)`), the
    /// fix switches to the logits form and passes `z`. It is unsafe: the values differ where
    /// the old form saturated (that is the point), and a `weight=` keeps its meaning but a
    /// model whose other code expects probabilities is not changed. Other cases get no
    /// automatic fix.
    ///
    /// ## References
    /// - [torch.nn.BCEWithLogitsLoss](https://pytorch.org/docs/stable/generated/torch.nn.BCEWithLogitsLoss.html)
    /// - [pytorch/pytorch#751](https://github.com/pytorch/pytorch/issues/751)
    /// - [Autocast op reference](https://pytorch.org/docs/stable/amp.html#ops-that-can-autocast-to-float32)
    pub(crate) static BCE_AFTER_SIGMOID = {
        name: "bce-after-sigmoid",
        code: "TV047",
        group: Correctness,
        severity: Warning,
        title: "nn.BCELoss / F.binary_cross_entropy on sigmoid outputs (use BCEWithLogitsLoss)",
        autofix: Suggest,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, q: Option<&str>) {
    // Cheap exit: no softmax/sigmoid (functional, method or `nn.Softmax`/`nn.Sigmoid`) in the file.
    if !checker.may_see_probabilities() {
        return;
    }
    let Some(lc) = taint_helpers::loss_call(checker, call, q, Loss::Bce) else {
        return;
    };
    // With autograd off no gradient is taken: a reported validation loss.
    if checker.in_no_grad() {
        return;
    }
    let v = checker.taint_of(lc.input);
    let Some(f) = taint_helpers::probabilities(&v, &["sigmoid"]).cloned() else {
        return;
    };
    let what = taint_helpers::describe_input(checker, lc.input, &f);
    let loss = taint_helpers::short(checker.text(call.func.range()));
    let consequence = if checker.regions().autocast > 0 {
        "inside autocast this raises RuntimeError (binary_cross_entropy is unsafe to autocast)"
    } else {
        "saturated sigmoids make the loss clamp at 100 and stop the gradient"
    };
    let mut edits = Vec::new();
    if let Some(z) = taint_helpers::inline_operand(checker, lc.input, &f) {
        let rename = match &*call.func {
            Expr::Attribute(a) if a.attr.as_str() == "binary_cross_entropy" => Some(
                RawEdit::replace(a.attr.range(), "binary_cross_entropy_with_logits"),
            ),
            Expr::Call(ctor) => match &*ctor.func {
                Expr::Attribute(a) if a.attr.as_str() == "BCELoss" => {
                    Some(RawEdit::replace(a.attr.range(), "BCEWithLogitsLoss"))
                }
                _ => None,
            },
            _ => None,
        };
        if let Some(r) = rename {
            edits.push(r);
            edits.push(RawEdit::replace(
                lc.input.range(),
                checker.text(z.range()).to_string(),
            ));
        }
    }
    let producer = taint_helpers::producer_note(checker, lc.input.range(), &f);
    let diag = checker.report(
        lc.input.range(),
        format!(
            "{what} fed to `{loss}`: {consequence}; pass the logits to BCEWithLogitsLoss / binary_cross_entropy_with_logits instead"
        ),
    );
    if let Some(note) = producer {
        note.attach(diag);
    }
    if let Some(ctor) = lc.ctor {
        diag.add_related(ctor, "the loss object");
    }
    if !edits.is_empty() {
        diag.set_fix(RawFix::unsafe_edit(
            "Use the logits form of the loss",
            edits,
        ));
    }
}

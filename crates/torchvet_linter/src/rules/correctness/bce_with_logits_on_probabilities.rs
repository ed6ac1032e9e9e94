use super::taint_helpers::{self, Loss};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::ExprCall;
use ruff_text_size::Ranged;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `nn.BCEWithLogitsLoss` / `F.binary_cross_entropy_with_logits` whose input is
    /// the output of a sigmoid (or softmax), directly, through assignments, reshapes and
    /// indexing, or returned by the `forward` of a module of the same file (including an
    /// `nn.Sequential` ending in `nn.Sigmoid()`).
    ///
    /// ## Why is this bad?
    /// `BCEWithLogitsLoss` applies the sigmoid itself: it expects raw logits. Given sigmoid
    /// outputs, it computes `sigmoid(sigmoid(z))`, which lies in [0.5, 0.73]: the model can
    /// never express a confident negative, gradients are tiny, and the loss plateaus while
    /// accuracy looks random or stuck. Nothing raises an error.
    ///
    /// ## Example
    /// ```python
    /// out = torch.sigmoid(self.head(h))
    /// loss = F.binary_cross_entropy_with_logits(out, y)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// out = self.head(h)
    /// loss = F.binary_cross_entropy_with_logits(out, y)
    /// ```
    ///
    /// ## Fix safety
    /// When the sigmoid is written inside the loss call, the fix passes its operand (the
    /// logits) instead. It is unsafe: the loss values and the training change (which is the
    /// point). A sigmoid applied elsewhere gets no automatic fix: keep it only for predictions
    /// and metrics.
    ///
    /// ## References
    /// - [torch.nn.BCEWithLogitsLoss](https://pytorch.org/docs/stable/generated/torch.nn.BCEWithLogitsLoss.html)
    /// - [pytorch/pytorch#39435](https://github.com/pytorch/pytorch/issues/39435)
    pub(crate) static BCE_WITH_LOGITS_ON_PROBABILITIES = {
        name: "bce-with-logits-on-probabilities",
        code: "TV017",
        group: Correctness,
        severity: Critical,
        title: "BCEWithLogitsLoss / binary_cross_entropy_with_logits applied to sigmoid outputs (double sigmoid)",
        autofix: Suggest,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, q: Option<&str>) {
    // Cheap exit: no softmax/sigmoid (functional, method or `nn.Softmax`/`nn.Sigmoid`) in the file.
    if !checker.may_see_probabilities() {
        return;
    }
    let Some(lc) = taint_helpers::loss_call(checker, call, q, Loss::BceWithLogits) else {
        return;
    };
    let v = checker.taint_of(lc.input);
    let Some(f) =
        taint_helpers::probabilities(&v, &["sigmoid", "softmax", "exp(log_softmax)"]).cloned()
    else {
        return;
    };
    let what = taint_helpers::describe_input(checker, lc.input, &f);
    let loss = taint_helpers::short(checker.text(call.func.range()));
    let fix = taint_helpers::inline_operand(checker, lc.input, &f)
        .map(|z| RawEdit::replace(lc.input.range(), checker.text(z.range())));
    let producer = taint_helpers::producer_note(checker, lc.input.range(), &f);
    let diag = checker.report(
        lc.input.range(),
        format!(
            "{what}, but `{loss}` applies sigmoid itself: the loss sees sigmoid(sigmoid(z)) in [0.5, 0.73], gradients vanish and training stalls; pass the logits"
        ),
    );
    if let Some(note) = producer {
        note.attach(diag);
    }
    if let Some(ctor) = lc.ctor {
        diag.add_related(ctor, "the loss object");
    }
    if let Some(edit) = fix {
        diag.set_fix(RawFix::unsafe_edit(
            "Pass the logits (drop the sigmoid)",
            vec![edit],
        ));
    }
}

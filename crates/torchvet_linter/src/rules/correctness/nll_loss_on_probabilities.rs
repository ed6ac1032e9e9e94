use super::taint_helpers::{self, Loss};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::Ranged;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `nn.NLLLoss` / `F.nll_loss` whose input is the output of a softmax or a
    /// sigmoid (probabilities), directly, through assignments, reshapes and indexing, or
    /// returned by the `forward` of a module of the same file.
    ///
    /// ## Why is this bad?
    /// `nll_loss` expects log-probabilities: it only picks `-input[target]`. Given
    /// probabilities it minimises `-p[target]`, a bounded, nearly linear objective whose
    /// gradients vanish for confident predictions; training converges slowly to worse models
    /// and the reported loss is not a log-likelihood. No error is raised. `log_softmax` (or
    /// `nn.LogSoftmax`) into `nll_loss` is the canonical pair and is not reported.
    ///
    /// ## Example
    /// ```python
    /// loss = F.nll_loss(F.softmax(logits, 1), y)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// loss = F.nll_loss(F.log_softmax(logits, 1), y)  # or F.cross_entropy(logits, y)
    /// ```
    ///
    /// ## Fix safety
    /// When the softmax is written inside the loss call, the fix turns it into `log_softmax`
    /// with the same arguments. It is unsafe: the loss values and the training change (which
    /// is the point). Probabilities produced elsewhere, and sigmoid outputs, get no automatic
    /// fix.
    ///
    /// ## References
    /// - [torch.nn.NLLLoss](https://pytorch.org/docs/stable/generated/torch.nn.NLLLoss.html)
    /// - [torch.nn.functional.nll_loss](https://pytorch.org/docs/stable/generated/torch.nn.functional.nll_loss.html)
    pub(crate) static NLL_LOSS_ON_PROBABILITIES = {
        name: "nll-loss-on-probabilities",
        code: "TV018",
        group: Correctness,
        severity: Critical,
        title: "NLLLoss / F.nll_loss applied to softmax probabilities instead of log-probabilities",
        autofix: Suggest,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, q: Option<&str>) {
    // Cheap exit: no softmax/sigmoid (functional, method or `nn.Softmax`/`nn.Sigmoid`) in the file.
    if !checker.may_see_probabilities() {
        return;
    }
    let Some(lc) = taint_helpers::loss_call(checker, call, q, Loss::Nll) else {
        return;
    };
    let v = checker.taint_of(lc.input);
    let Some(f) =
        taint_helpers::probabilities(&v, &["softmax", "sigmoid", "exp(log_softmax)"]).cloned()
    else {
        return;
    };
    let what = taint_helpers::describe_input(checker, lc.input, &f);
    let loss = taint_helpers::short(checker.text(call.func.range()));
    // Inline `F.softmax(z, 1)` / `z.softmax(1)`: rename to log_softmax.
    let fix = match lc.input {
        Expr::Call(c) if f.through.is_none() && f.origin == lc.input.range() => match &*c.func {
            Expr::Attribute(a) if a.attr.as_str() == "softmax" => {
                Some(RawEdit::replace(a.attr.range(), "log_softmax"))
            }
            _ => None,
        },
        _ => None,
    };
    let producer = taint_helpers::producer_note(checker, lc.input.range(), &f);
    let diag = checker.report(
        lc.input.range(),
        format!(
            "{what} (probabilities), but `{loss}` expects log-probabilities: it minimises -p[target] instead of -log p[target] and training degrades silently; use log_softmax (or cross_entropy on logits)"
        ),
    );
    if let Some(note) = producer {
        note.attach(diag);
    }
    if let Some(ctor) = lc.ctor {
        diag.add_related(ctor, "the loss object");
    }
    if let Some(edit) = fix {
        diag.set_fix(RawFix::unsafe_edit("Use `log_softmax`", vec![edit]));
    }
}

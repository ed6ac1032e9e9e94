use super::taint_helpers::{self, Loss};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::ExprCall;
use ruff_text_size::Ranged;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `nn.CrossEntropyLoss` / `F.cross_entropy` whose input is the output of a
    /// softmax (`F.softmax`, `Tensor.softmax`, `nn.Softmax`, `exp(log_softmax)`), directly,
    /// through assignments, reshapes and indexing, or returned by the `forward` of a module of
    /// the same file (`crit(model(x), y)`).
    ///
    /// A model chosen among several classes (`net = MLP(...)` in one `elif`, `net = CNN(...)`
    /// in another, or returned by a factory with one `return` per class) is reported when
    /// one of those classes' `forward` returns softmax and the others' outputs are not
    /// probabilities on any path: the message says the input *may* be probabilities and
    /// names the class, since every run configured with it trains on a double softmax. Not
    /// when a branch builds an object the analysis does not know (a third-party model).
    ///
    /// ## Why is this bad?
    /// Cross-entropy applies `log_softmax` to its input itself: it expects raw logits. Feeding it
    /// probabilities applies softmax twice. The loss still decreases, but its gradients are
    /// squashed (all inputs lie in [0, 1], so the second softmax is nearly uniform), training is
    /// much slower and often stalls at a worse accuracy, with no error or warning.
    /// `log_softmax` into cross-entropy is redundant but harmless and is not reported; softmax
    /// outputs used for metrics, `argmax` or other losses are fine.
    ///
    /// ## Example
    /// ```python
    /// probs = F.softmax(self.fc(h), dim=1)
    /// loss = F.cross_entropy(probs, y)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// logits = self.fc(h)
    /// loss = F.cross_entropy(logits, y)
    /// probs = logits.softmax(1)  # metrics only
    /// ```
    ///
    /// ## Fix safety
    /// When the softmax call is written inside the loss call, the fix passes its operand (the
    /// logits) instead. It is unsafe: it changes the loss values and the training dynamics
    /// (that is the point), and the operand may not be the logits the author meant. A softmax
    /// assigned elsewhere or applied inside `forward` gets no automatic fix: move it out of the
    /// loss path by hand (return logits from `forward`, apply softmax at inference).
    ///
    /// ## References
    /// - [torch.nn.CrossEntropyLoss](https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html)
    /// - [torch.nn.functional.cross_entropy](https://pytorch.org/docs/stable/generated/torch.nn.functional.cross_entropy.html)
    pub(crate) static CROSS_ENTROPY_AFTER_SOFTMAX = {
        name: "cross-entropy-after-softmax",
        code: "TV001",
        group: Correctness,
        severity: Critical,
        title: "CrossEntropyLoss / F.cross_entropy fed probabilities (softmax output) instead of logits",
        autofix: Suggest,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, q: Option<&str>) {
    // Cheap exit: no softmax/sigmoid (functional, method or `nn.Softmax`/`nn.Sigmoid`) in the file.
    if !checker.may_see_probabilities() {
        return;
    }
    let Some(lc) = taint_helpers::loss_call(checker, call, q, Loss::CrossEntropy) else {
        return;
    };
    let v = checker.taint_of(lc.input);
    const OPS: &[&str] = &["softmax", "exp(log_softmax)"];
    // A model that may be one of several classes (chosen in `if`/`elif` branches, or by a
    // factory) where one class's `forward` returns probabilities: reported as "may", naming
    // the class; every run configured with that class trains on a double softmax.
    let (f, one_of) = match taint_helpers::probabilities(&v, OPS) {
        Some(f) => (f.clone(), None),
        None => match taint_helpers::one_of_probabilities(&v, OPS) {
            Some((f, class)) => (f.clone(), Some(class.to_string())),
            None => return,
        },
    };
    let what = match &one_of {
        None => taint_helpers::describe_input(checker, lc.input, &f),
        Some(class) => format!(
            "`{}` may be a {} output: it is when the model is a `{class}` (returned by `{class}.forward`)",
            taint_helpers::short(checker.text(lc.input.range())),
            f.op
        ),
    };
    let loss = taint_helpers::short(checker.text(call.func.range()));
    let fix = taint_helpers::inline_operand(checker, lc.input, &f)
        .map(|z| RawEdit::replace(lc.input.range(), checker.text(z.range())));
    let producer = taint_helpers::producer_note(checker, lc.input.range(), &f);
    let diag = checker.report(
        lc.input.range(),
        format!(
            "{what}, but `{loss}` applies log_softmax itself: softmax is applied twice, gradients shrink and training stalls; pass the logits"
        ),
    );
    if let Some(class) = one_of.as_ref().filter(|_| f.remote.is_some()) {
        // A project class of another file: the origin is where this file builds it.
        if f.origin != lc.input.range() {
            diag.add_related(
                f.origin,
                format!("the `{class}` built here returns {} output", f.op),
            );
        }
    }
    if let Some(note) = producer {
        note.attach(diag);
    }
    if let Some(ctor) = lc.ctor {
        diag.add_related(ctor, "the loss object");
    }
    if let Some(edit) = fix {
        diag.set_fix(RawFix::unsafe_edit(
            "Pass the logits (drop the softmax)",
            vec![edit],
        ));
    }
}

use crate::checker::Checker;
use crate::fix::{add_keyword_argument, RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers::{self, Literal};

crate::declare_rule! {
    /// ## What it does
    /// Checks for `torch.optim.Adam` (and `Adamax`, `NAdam`) created with a non-zero
    /// `weight_decay` and without `decoupled_weight_decay=True`.
    ///
    /// ## Why is this bad?
    /// These optimizers implement weight decay as an L2 term added to the gradient. The
    /// adaptive step then rescales it per parameter, so weights with large gradient history
    /// are hardly regularised. That is not the decoupled weight decay of AdamW (Loshchilov &
    /// Hutter), which most recipes and hyperparameters quoted in papers assume.
    ///
    /// ## Example
    /// ```python
    /// opt = torch.optim.Adam(model.parameters(), lr=3e-4, weight_decay=1e-2)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=1e-2)
    /// ```
    ///
    /// ## Fix safety
    /// The fix (unsafe) switches `Adam` to `AdamW`, or adds `decoupled_weight_decay=True` to
    /// `NAdam`. The optimisation changes and the weight decay value usually needs retuning,
    /// so it is never applied without `--unsafe-fixes`.
    ///
    /// ## References
    /// - [torch.optim.Adam](https://pytorch.org/docs/stable/generated/torch.optim.Adam.html)
    /// - [torch.optim.AdamW](https://pytorch.org/docs/stable/generated/torch.optim.AdamW.html)
    /// - [pytorch PR 41679](https://github.com/pytorch/pytorch/pull/41679)
    pub(crate) static ADAM_WEIGHT_DECAY_NOT_DECOUPLED = {
        name: "adam-weight-decay-not-decoupled",
        code: "TV099",
        group: Correctness,
        severity: Info,
        title: "Adam(weight_decay>0) applies L2 in the gradient, not decoupled weight decay (AdamW)",
        autofix: Suggest,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let Some(q) = name else { return };
    let class = match q {
        "torch.optim.Adam" | "torch.optim.adam.Adam" => "Adam",
        "torch.optim.Adamax" | "torch.optim.adamax.Adamax" => "Adamax",
        "torch.optim.NAdam" | "torch.optim.nadam.NAdam" => "NAdam",
        _ => return,
    };
    if let Some(d) = helpers::keyword(call, "decoupled_weight_decay") {
        if helpers::is_truthy(d) != Some(false) {
            return;
        }
    }
    let Some(wd) = helpers::argument(call, "weight_decay", 4) else {
        return;
    };
    // A name bound to one literal where the optimizer is built (`WEIGHT_DECAY = 0.0` at the
    // top of a script) says what it holds.
    let wd_value = match torchvet_semantic::reaching::value_or_self(
        &checker.module().body,
        wd,
        call.start(),
    ) {
        v if helpers::literal(v).is_some() => v,
        _ => wd,
    };
    let literal_zero = match helpers::literal(wd_value) {
        Some(Literal::Int(0)) => true,
        Some(Literal::Float(f)) => f == 0.0,
        Some(Literal::Bool(false)) => true,
        Some(Literal::Int(_)) | Some(Literal::Bool(true)) => false,
        Some(_) => return,
        None => false,
    };
    if literal_zero {
        return;
    }
    let wd_text = checker.text(wd.range());
    let certain = helpers::literal(wd_value).is_some();
    let message = if certain {
        format!("`{class}(weight_decay={wd_text})` adds an L2 penalty to the gradient, which the adaptive step rescales per parameter; this is not decoupled weight decay (use AdamW)")
    } else {
        format!("`{class}(weight_decay={wd_text})`: if non-zero, the decay is an L2 penalty in the gradient that the adaptive step rescales, not decoupled weight decay (use AdamW)")
    };
    let fix = match (class, &*call.func) {
        ("Adam", Expr::Attribute(a)) => Some(RawFix::unsafe_edit(
            "Use `AdamW` (retune weight_decay)",
            vec![RawEdit::replace(a.attr.range(), "AdamW")],
        )),
        ("NAdam", _) if !helpers::has_kwargs_splat(call) => Some(RawFix::unsafe_edit(
            "Use `decoupled_weight_decay=True`",
            vec![match helpers::keyword(call, "decoupled_weight_decay") {
                Some(existing) => RawEdit::replace(existing.range(), "True"),
                None => add_keyword_argument(call, "decoupled_weight_decay=True"),
            }],
        )),
        _ => None,
    };
    let diag = checker.report(call.func.range(), message);
    if let Some(fix) = fix {
        diag.set_fix(fix);
    }
}

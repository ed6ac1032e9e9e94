use super::helpers;
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{ExprCall, Keyword};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers as sem;

crate::declare_rule! {
    /// ## What it does
    /// Checks for the legacy `size_average=` and `reduce=` arguments of the loss classes
    /// (`nn.MSELoss`, `nn.CrossEntropyLoss`, ...) and loss functions (`F.mse_loss`,
    /// `F.cross_entropy`, ...).
    ///
    /// ## Why is this bad?
    /// Since torch 0.4.1 both are deprecated in favour of `reduction=` and warn when used.
    /// They also override `reduction=` when both are given, and their combination rules
    /// (`reduce=False` wins over `size_average`) are easy to get wrong.
    ///
    /// ## Example
    /// ```python
    /// criterion = nn.MSELoss(size_average=False)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// criterion = nn.MSELoss(reduction="sum")
    /// ```
    ///
    /// ## Fix safety
    /// When every legacy argument is a literal (`True`, `False` or `None`) the fix computes the
    /// equivalent `reduction=` exactly as torch does (`reduce=False` -> `"none"`, otherwise
    /// `size_average=False` -> `"sum"`, else `"mean"`), replaces the legacy arguments (and any
    /// `reduction=` they override) with it: safe. Non-literal values get no fix.
    ///
    /// ## References
    /// - [torch.nn loss functions](https://pytorch.org/docs/stable/nn.html#loss-functions)
    /// - [pytorch#8018](https://github.com/pytorch/pytorch/pull/8018)
    pub(crate) static LOSS_SIZE_AVERAGE_REDUCE = {
        name: "loss-size-average-reduce",
        code: "TV098",
        group: DeprecatedApi,
        severity: Warning,
        title: "Loss size_average= / reduce= arguments are deprecated (use reduction=)",
        autofix: Yes,
        hooks: { call: check_call },
    };
}

/// A torch loss: a `torch.nn.functional` loss function or a `torch.nn` loss class.
fn is_loss(q: &str) -> bool {
    torchvet_semantic::is_functional_loss(q)
        || (q.starts_with("torch.") && torchvet_semantic::is_known_loss_class(q))
}

/// A literal `True` / `False` / `None`: `Some(None)` for `None`.
fn flag(k: &Keyword) -> Option<Option<bool>> {
    match sem::literal(&k.value)? {
        sem::Literal::Bool(b) => Some(Some(b)),
        sem::Literal::None => Some(None),
        _ => None,
    }
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let Some(q) = name else { return };
    // An explicit `None` is the signature's default: torch takes the legacy path only for
    // a value that is not None (`BCELoss(weight=None, size_average=None, reduce=None,
    // reduction="sum")` neither warns nor overrides `reduction=`).
    let given = |name: &str| {
        call.arguments
            .find_keyword(name)
            .filter(|k| !k.value.is_none_literal_expr())
    };
    let size_average = given("size_average");
    let reduce = given("reduce");
    if size_average.is_none() && reduce.is_none() {
        return;
    }
    if !is_loss(q) || !helpers::active(checker, 0, 4) {
        return;
    }
    let fix = fix(checker, call, size_average, reduce);
    let callee = checker.text(call.func.range()).to_string();
    let args: Vec<&str> = [
        size_average.map(|_| "size_average="),
        reduce.map(|_| "reduce="),
    ]
    .into_iter()
    .flatten()
    .collect();
    let first = size_average
        .into_iter()
        .chain(reduce)
        .min_by_key(|k| k.start())
        .map(Ranged::range)
        .unwrap_or_else(|| call.func.range());
    let d = checker.report(
        first,
        format!(
            "{} in `{callee}(...)` is deprecated since torch 0.4.1 (and overrides `reduction=`): use `reduction=`",
            args.join(" and ")
        ),
    );
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

fn fix(
    checker: &Checker,
    call: &ExprCall,
    size_average: Option<&Keyword>,
    reduce: Option<&Keyword>,
) -> Option<RawFix> {
    let sa = match size_average {
        Some(k) => flag(k)?,
        None => None,
    };
    let rd = match reduce {
        Some(k) => flag(k)?,
        None => None,
    };
    let reduction = if !rd.unwrap_or(true) {
        "none"
    } else if sa.unwrap_or(true) {
        "mean"
    } else {
        "sum"
    };
    let mut legacy: Vec<&Keyword> = size_average
        .into_iter()
        .chain(reduce)
        .chain(call.arguments.find_keyword("reduction"))
        .collect();
    legacy.sort_by_key(|k| k.start());
    let (first, rest) = legacy.split_first()?;
    let mut edits = vec![RawEdit::replace(
        first.range(),
        format!("reduction=\"{reduction}\""),
    )];
    for k in rest {
        edits.push(helpers::delete_argument(checker, call, k.range())?);
    }
    Some(RawFix::safe(
        format!("Use `reduction=\"{reduction}\"`"),
        edits,
    ))
}

use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Operator};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers::{self, Literal};
use torchvet_semantic::magnitude;

crate::declare_rule! {
    /// ## What it does
    /// Checks for compositions that have a fused, numerically stable torch op:
    /// `torch.log(softmax(x))` (use `log_softmax`), `torch.log(torch.sigmoid(x))`
    /// (`F.logsigmoid`), `torch.log(1 + x)` (`torch.log1p`), `torch.exp(x) - 1`
    /// (`torch.expm1`) and `torch.log(torch.sum(torch.exp(x), dim))` (`torch.logsumexp`).
    ///
    /// The `log(1 + x)` and `exp(x) - 1` forms are reported only with `--preview`: whether the
    /// digits they lose matter depends on the range of `x`, which usually comes from the
    /// caller or the data (a time step in `[0.03, 1]`, a frequency over 700, pixel heights),
    /// and read in context about one finding in six was on values where nothing is lost.
    /// The softmax, sigmoid and sum-of-exp forms fail outright (`-inf`, overflow) and are
    /// always reported.
    ///
    /// ## Why is this bad?
    /// Softmax and sigmoid outputs underflow to exactly 0 for large negative logits, and
    /// `log(0)` is `-inf`: the loss becomes `inf`/`nan` and training diverges. `1 + x` loses
    /// the digits of a small `x` before the log, `exp(x) - 1` cancels them after the exp, and
    /// `sum(exp(x))` overflows for large `x` (`log(sum(exp(x - x_max))) + x_max`, already
    /// shifted by hand, is not reported, nor is an `x` shifted by its own maximum in an
    /// earlier statement, `d = s - s.max(1, keepdim=True)[0]`, even after moves, views,
    /// scaling by a positive literal or a further subtraction). The fused ops compute the same values without
    /// these failures (and usually faster).
    ///
    /// Not reported where the failure cannot happen: `log(sigmoid(x))`, `log(softmax(x))`
    /// and `log(sum(exp(x)))` of an `x` no data reaches, whose magnitude the code fixes
    /// (a tensor of literals, `torch.arange` / `linspace` with literal ends, `torch.rand` /
    /// `randn` / `randint`, possibly scaled by literals: reference formulas in tests);
    /// `log(1 + x)` / `exp(x) - 1` of whole numbers (`x` is 0 or at least 1 in magnitude:
    /// `.long()`, rounding, integer ranges, counts such as node degrees from
    /// `torch_geometric.utils.degree`, DGL's `in_degrees()` or the row sums of an unweighted
    /// adjacency matrix, `torch.bincount`, `.sum()` of a comparison, `len` / `.shape`);
    /// of a scalar the code fixes at 0.05 or more in magnitude (literals and parameters that
    /// every call leaves at a literal default: `torch.tensor(5.0 * init_scale)`); and `exp(x) - 1` / `log(1 + x)` whose result is
    /// rounded to a whole number (`torch.round(torch.exp(log_d) - 1)`, `.long()`, through a
    /// clamp), where the lost low digits cannot change the rounded value.
    ///
    /// ## Example
    /// ```python
    /// logp = torch.log(F.softmax(logits, dim=-1))
    /// y = torch.log(1 + x)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// logp = F.log_softmax(logits, dim=-1)
    /// y = torch.log1p(x)
    /// ```
    ///
    /// ## Fix safety
    /// The fix rewrites the expression to the fused op with the same arguments. The result is
    /// mathematically identical and only differs where the original lost precision or
    /// overflowed, so the fix is safe. No fix is offered when the needed name (`F`, `torch`)
    /// is not bound in the file or when `sum` has no `dim`.
    ///
    /// ## References
    /// - [torch.nn.functional.log_softmax](https://pytorch.org/docs/stable/generated/torch.nn.functional.log_softmax.html)
    /// - [torch.log1p](https://pytorch.org/docs/stable/generated/torch.log1p.html)
    /// - [torch.expm1](https://pytorch.org/docs/stable/generated/torch.expm1.html)
    /// - [torch.logsumexp](https://pytorch.org/docs/stable/generated/torch.logsumexp.html)
    /// - [TorchFix TOR106-TOR108](https://github.com/pytorch-labs/torchfix)
    pub(crate) static LOG_OF_SOFTMAX = {
        name: "log-of-softmax",
        code: "TV067",
        group: Correctness,
        severity: Warning,
        title: "log(softmax(x)) / log(sigmoid) / log(1+x) / exp(x)-1 / log(sum(exp)) instead of fused stable ops",
        autofix: Yes,
        torchfix: ["TOR106", "TOR107", "TOR108"],
        hooks: { call: check_call, expr: check_expr, expr_on: crate::registry::ExprKinds::BIN_OP },
    };
}

/// A method call on something that is not an imported module (a tensor, presumably).
fn tensor_method<'a>(checker: &Checker, call: &'a ExprCall, name: &str) -> Option<&'a Expr> {
    match helpers::method_call(call) {
        Some((m, recv)) if m == name && checker.resolve(recv).is_none() => Some(recv),
        _ => None,
    }
}

fn is_one(e: &Expr) -> bool {
    match helpers::literal(e) {
        Some(Literal::Int(1)) => true,
        Some(Literal::Float(f)) => f == 1.0,
        _ => false,
    }
}

fn is_atom(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Name(_) | Expr::Attribute(_) | Expr::Call(_) | Expr::Subscript(_)
    )
}

/// Are the entries of `x` bounded by a magnitude below `limit` that the code itself fixes
/// (literals, literal ranges, random factories: no data reaches them)?
fn bounded_below(checker: &mut Checker, x: &Expr, limit: u32) -> bool {
    magnitude::magnitude_bound(&checker.taint_of(x)).is_some_and(|b| b < limit)
}

/// Can the digits that `log(1 + x)` / `exp(x) - 1` lose not matter? When `x` is a whole
/// number (it is 0, or at least 1 in magnitude), and when the result is rounded to a whole
/// number by what consumes it (`torch.round(torch.exp(d) - 1)`: FastSpeech durations).
/// Called with the expression being visited on top of the checker's expression stack.
fn no_digits_to_lose(checker: &mut Checker, x: &Expr) -> bool {
    let stack = checker.expr_stack().to_vec();
    if magnitude::rounded_by_consumer(&stack, &|e| checker.resolve(e)) {
        return true;
    }
    magnitude::integer_valued(&checker.taint_of(x)) || not_small_constant(checker, x)
}

/// The smallest magnitude of a constant `x` for which `log(1 + x)` / `exp(x) - 1` is taken to
/// lose no digits worth naming: at 0.05 a float32 `exp(x) - 1` keeps about 5.6 of its 7
/// significant digits, and the value is computed once.
const NOT_SMALL: f64 = 0.05;

/// Is `x` a scalar the code fixes (`torch.tensor(0.5 * 10.0 * init_scale)`: literals and
/// parameters left at a literal default by every call in the project) whose magnitude is at
/// least [`NOT_SMALL`]? A configuration constant, not data that may come near 0.
fn not_small_constant(checker: &Checker, x: &Expr) -> bool {
    let project = checker.project_or_file().cloned();
    let name = |e: &Expr| -> Option<f64> {
        let p = project.as_ref()?;
        let (func, i, default) = crate::rules::facts::unrebound_param(checker, p, e)?;
        let v = match helpers::literal(default?)? {
            Literal::Int(n) => n as f64,
            Literal::Float(f) => f,
            _ => return None,
        };
        p.model.param_never_passed(func, i).then_some(v)
    };
    magnitude::scalar_constant(x, &name, &|e| checker.resolve(e))
        .is_some_and(|v| v.abs() >= NOT_SMALL)
}

/// `torch.exp(x)` or `x.exp()`: the operand.
fn exp_operand<'a>(checker: &Checker, e: &'a Expr) -> Option<&'a Expr> {
    let Expr::Call(c) = e else { return None };
    if checker.resolves_to(&c.func, &["torch.exp", "torch.special.exp"])
        && c.arguments.args.len() == 1
    {
        return c.arguments.args.first();
    }
    tensor_method(checker, c, "exp").filter(|_| c.arguments.is_empty())
}

/// The prefix naming torch.nn.functional here (`F.`), if any.
fn functional_prefix(checker: &Checker, seen: Option<&Expr>) -> Option<String> {
    if let Some(Expr::Attribute(a)) = seen {
        if checker.resolve(&a.value).as_deref() == Some("torch.nn.functional") {
            return Some(format!("{}.", checker.text(a.value.range())));
        }
    }
    if checker.scopes.lookup("F").as_deref() == Some("torch.nn.functional") {
        return Some("F.".into());
    }
    super::helpers::torch_alias(checker).map(|t| format!("{t}.nn.functional."))
}

/// `log(<inner>)` where `log_func` is the `torch.log` callee (None for the method form).
fn check_log(checker: &mut Checker, outer: &ExprCall, inner: &Expr, log_prefix: Option<String>) {
    let replace = |text: String| RawEdit::replace(outer.range(), text);
    match inner {
        Expr::Call(c) => {
            let q = checker.resolve(&c.func);
            let q = q.as_deref();
            // softmax
            let softmax = matches!(
                q,
                Some("torch.softmax" | "torch.nn.functional.softmax" | "torch.special.softmax")
            ) || tensor_method(checker, c, "softmax").is_some();
            if softmax {
                let input = match tensor_method(checker, c, "softmax") {
                    Some(recv) => Some(recv),
                    None => c.arguments.args.first(),
                };
                // Entries within 80 of each other: no probability can underflow.
                if input.is_some_and(|x| bounded_below(checker, x, 40)) {
                    return;
                }
                let fix = match &*c.func {
                    Expr::Attribute(a) => Some(format!(
                        "{}.log_softmax{}",
                        checker.text(a.value.range()),
                        checker.text(c.arguments.range())
                    )),
                    _ => None,
                };
                let diag = checker.report(
                    outer.range(),
                    "log of a softmax underflows: probabilities that round to 0 give -inf (and NaN gradients); `log_softmax` computes the same values stably",
                );
                if let Some(text) = fix {
                    diag.set_fix(RawFix::safe("Use `log_softmax`", vec![replace(text)]));
                }
                return;
            }
            // sigmoid
            let sigmoid_input = if matches!(
                q,
                Some("torch.sigmoid" | "torch.nn.functional.sigmoid" | "torch.special.expit")
            ) {
                (c.arguments.args.len() == 1 && c.arguments.keywords.is_empty())
                    .then(|| &c.arguments.args[0])
            } else {
                tensor_method(checker, c, "sigmoid").filter(|_| c.arguments.is_empty())
            };
            let is_sigmoid = sigmoid_input.is_some()
                || matches!(
                    q,
                    Some("torch.sigmoid" | "torch.nn.functional.sigmoid" | "torch.special.expit")
                );
            if is_sigmoid {
                if sigmoid_input.is_some_and(|x| bounded_below(checker, x, 80)) {
                    return;
                }
                let fix = sigmoid_input.and_then(|x| {
                    let prefix = functional_prefix(checker, Some(&*c.func))?;
                    Some(format!("{prefix}logsigmoid({})", checker.text(x.range())))
                });
                let diag = checker.report(
                    outer.range(),
                    "log of a sigmoid underflows to -inf for large negative inputs; `F.logsigmoid` computes it stably",
                );
                if let Some(text) = fix {
                    diag.set_fix(RawFix::safe("Use `F.logsigmoid`", vec![replace(text)]));
                }
                return;
            }
            // sum(exp(x))
            let sum_parts = if matches!(q, Some("torch.sum")) {
                c.arguments
                    .args
                    .first()
                    .and_then(|a| exp_operand(checker, a))
                    .map(|x| (x, 1usize))
            } else if let Some(recv) = tensor_method(checker, c, "sum") {
                exp_operand(checker, recv).map(|x| (x, 0usize))
            } else {
                None
            };
            // `log(sum(exp(x - x_max))) + x_max` is the hand-written stable form already.
            // So is one shifted by its maximum in an earlier statement
            // (`d = s - s.max(1, keepdim=True)[0]` ... `log(exp(d).sum(-1))`).
            let shifted = sum_parts.is_some_and(|(x, _)| {
                matches!(x, Expr::BinOp(b) if matches!(b.op, Operator::Sub))
                    || magnitude::shifted_by_max(&checker.taint_of(x))
            });
            let small = sum_parts.is_some_and(|(x, _)| bounded_below(checker, x, 80));
            if let Some((x, skip)) = sum_parts.filter(|_| !shifted && !small) {
                let rest: Vec<&str> = c
                    .arguments
                    .args
                    .iter()
                    .skip(skip)
                    .map(|a| checker.text(a.range()))
                    .chain(c.arguments.keywords.iter().map(|k| checker.text(k.range())))
                    .collect();
                let has_dim = !rest.is_empty()
                    && (c.arguments.args.len() > skip || helpers::keyword(c, "dim").is_some());
                let fix = match (&log_prefix, has_dim) {
                    (Some(p), true) => Some(format!(
                        "{p}.logsumexp({}, {})",
                        checker.text(x.range()),
                        rest.join(", ")
                    )),
                    _ => None,
                };
                let diag = checker.report(
                    outer.range(),
                    "log(sum(exp(x))) overflows for large x and underflows to -inf for very negative x; `torch.logsumexp` computes it stably",
                );
                if let Some(text) = fix {
                    diag.set_fix(RawFix::safe("Use `torch.logsumexp`", vec![replace(text)]));
                }
            }
        }
        Expr::BinOp(b)
            if matches!(b.op, Operator::Add) && (is_one(&b.left) || is_one(&b.right)) =>
        {
            let x = if is_one(&b.left) { &*b.right } else { &*b.left };
            if !checker.settings.preview || no_digits_to_lose(checker, x) {
                return;
            }
            let fix = log_prefix.map(|p| format!("{p}.log1p({})", checker.text(x.range())));
            let diag = checker.report(
                outer.range(),
                "log(1 + x) loses the digits of small x before the log; `torch.log1p(x)` is accurate",
            );
            if let Some(text) = fix {
                diag.set_fix(RawFix::safe("Use `torch.log1p`", vec![replace(text)]));
            }
        }
        _ => {}
    }
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if matches!(name, Some("torch.log")) {
        if call.arguments.args.len() != 1 || !call.arguments.keywords.is_empty() {
            return;
        }
        let prefix = match &*call.func {
            Expr::Attribute(a) => Some(checker.text(a.value.range()).to_string()),
            _ => None,
        };
        check_log(checker, call, &call.arguments.args[0], prefix);
        return;
    }
    if let Some(recv) = tensor_method(checker, call, "log") {
        if call.arguments.is_empty() {
            // Method form: the fix would need `torch`; offer it when bound.
            let prefix = super::helpers::torch_alias(checker).map(str::to_string);
            check_log(checker, call, recv, prefix);
        }
    }
}

fn check_expr(checker: &mut Checker, expr: &Expr) {
    let Expr::BinOp(b) = expr else { return };
    if !matches!(b.op, Operator::Sub) || !is_one(&b.right) || !checker.settings.preview {
        return;
    }
    let Some(x) = exp_operand(checker, &b.left) else {
        return;
    };
    if no_digits_to_lose(checker, x) {
        return;
    }
    let fix = match &*b.left {
        Expr::Call(c) => match &*c.func {
            Expr::Attribute(a) if a.attr.as_str() == "exp" && !c.arguments.is_empty() => {
                Some(format!(
                    "{}.expm1({})",
                    checker.text(a.value.range()),
                    checker.text(x.range())
                ))
            }
            Expr::Attribute(_) if is_atom(x) => {
                Some(format!("{}.expm1()", checker.text(x.range())))
            }
            _ => None,
        },
        _ => None,
    };
    let diag = checker.report(
        expr.range(),
        "exp(x) - 1 cancels the significant digits of small x; `torch.expm1(x)` is accurate",
    );
    if let Some(text) = fix {
        diag.set_fix(RawFix::safe(
            "Use `torch.expm1`",
            vec![RawEdit::replace(expr.range(), text)],
        ));
    }
}

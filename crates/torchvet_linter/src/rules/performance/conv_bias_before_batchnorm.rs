use crate::checker::Checker;
use crate::fix::{add_keyword_argument, RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for a convolution or linear layer with a bias that is immediately followed by a
    /// batch norm layer inside `nn.Sequential(...)`, such as
    /// `nn.Sequential(nn.Conv2d(64, 128, 3), nn.BatchNorm2d(128))`.
    ///
    /// ## Why is this bad?
    /// Batch norm subtracts the per-channel mean of its input, which removes any constant
    /// per-channel offset, so the bias added by the layer before it has no effect on the
    /// output. It still costs memory, an extra add in every forward and backward pass, and
    /// optimizer state; its gradient is always zero in training mode.
    ///
    /// ## Example
    /// ```python
    /// block = nn.Sequential(nn.Conv2d(64, 128, 3), nn.BatchNorm2d(128), nn.ReLU())
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// block = nn.Sequential(nn.Conv2d(64, 128, 3, bias=False), nn.BatchNorm2d(128), nn.ReLU())
    /// ```
    ///
    /// ## Fix safety
    /// The fix passes `bias=False` to the layer. The outputs stay the same, but the fix is
    /// unsafe because the module loses its `bias` parameter: existing checkpoints no longer
    /// load with `strict=True`, and code that refers to `layer.bias` breaks.
    ///
    /// ## References
    /// - [Performance tuning guide: disable bias for convolutions directly followed by a batch norm](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html)
    /// - [nn.BatchNorm2d](https://pytorch.org/docs/stable/generated/torch.nn.BatchNorm2d.html)
    pub(crate) static CONV_BIAS_BEFORE_BATCHNORM = {
        name: "conv-bias-before-batchnorm",
        code: "TV118",
        group: Performance,
        severity: Info,
        title: "Conv/Linear with bias=True immediately followed by BatchNorm (bias is cancelled by BN mean subtraction)",
        autofix: Yes,
        hooks: { call: check_call },
    };
}

/// The layer's class name and the position of its `bias` parameter.
fn biased_layer(q: &str) -> Option<(&'static str, usize)> {
    let last = q
        .strip_prefix("torch.nn.")
        .or_else(|| q.strip_prefix("torch.nn.modules.conv."))
        .or_else(|| q.strip_prefix("torch.nn.modules.linear."))?;
    Some(match last {
        "Conv1d" => ("Conv1d", 7),
        "Conv2d" => ("Conv2d", 7),
        "Conv3d" => ("Conv3d", 7),
        "Linear" => ("Linear", 2),
        _ => return None,
    })
}

fn is_batchnorm(q: &str) -> bool {
    let Some(last) = q
        .strip_prefix("torch.nn.")
        .or_else(|| q.strip_prefix("torch.nn.modules.batchnorm."))
    else {
        return false;
    };
    matches!(
        last,
        "BatchNorm1d"
            | "BatchNorm2d"
            | "BatchNorm3d"
            | "SyncBatchNorm"
            | "LazyBatchNorm1d"
            | "LazyBatchNorm2d"
            | "LazyBatchNorm3d"
    )
}

/// The module built by an element of `Sequential(...)`: the call itself, or the second item
/// of a `("name", module)` pair inside `OrderedDict([...])`.
fn layers<'e>(checker: &Checker, call: &'e ExprCall) -> Vec<&'e Expr> {
    if let [Expr::Call(inner)] = &call.arguments.args[..] {
        if checker.resolves_to(&inner.func, &["collections.OrderedDict"]) {
            let elts = match inner.arguments.args.first() {
                Some(Expr::List(l)) => &l.elts,
                Some(Expr::Tuple(t)) => &t.elts,
                _ => return Vec::new(),
            };
            return elts
                .iter()
                .map(|e| match e {
                    Expr::Tuple(t) if t.elts.len() == 2 => Some(&t.elts[1]),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()
                .unwrap_or_default();
        }
    }
    call.arguments.args.iter().collect()
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if !matches!(
        name,
        Some("torch.nn.Sequential" | "torch.nn.modules.container.Sequential")
    ) {
        return;
    }
    let elements = layers(checker, call);
    for pair in elements.windows(2) {
        let (Expr::Call(layer), Expr::Call(norm)) = (pair[0], pair[1]) else {
            continue;
        };
        let Some((kind, bias_pos)) = checker
            .resolve(&layer.func)
            .as_deref()
            .and_then(biased_layer)
        else {
            continue;
        };
        if !checker
            .resolve(&norm.func)
            .as_deref()
            .is_some_and(is_batchnorm)
        {
            continue;
        }
        if helpers::has_kwargs_splat(layer) || helpers::has_args_splat(layer) {
            continue;
        }
        let bias = helpers::argument(layer, "bias", bias_pos);
        let fix_edit = match bias {
            None => add_keyword_argument(layer, "bias=False"),
            Some(Expr::BooleanLiteral(b)) if b.value => RawEdit::replace(b.range(), "False"),
            // `bias=False` already, or a value decided at run time.
            Some(_) => continue,
        };
        let layer_text = checker.text(layer.func.range());
        let norm_text = checker.text(norm.func.range());
        checker
            .report(
                layer.range(),
                format!(
                    "the bias of this `{kind}` is cancelled by the mean subtraction of the following `{norm_text}`: it only costs memory and compute; pass `bias=False` to `{layer_text}`"
                ),
            )
            .set_fix(RawFix::unsafe_edit("Pass `bias=False`", vec![fix_edit]));
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::performance::helpers::apply_fixes;

    #[test]
    fn fixes() {
        let src = "from torch import nn\nb = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.Linear(4, 4, True), nn.BatchNorm1d(4))\n";
        let (n, out) = apply_fixes("conv-bias-before-batchnorm", src);
        assert_eq!(n, 2);
        assert_eq!(
            out,
            "from torch import nn\nb = nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8), nn.Linear(4, 4, False), nn.BatchNorm1d(4))\n"
        );
    }
}

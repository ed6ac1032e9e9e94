use super::helpers;
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Keyword};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers as sem;

crate::declare_rule! {
    /// ## What it does
    /// Checks for torchvision model builders (`torchvision.models.resnet50`,
    /// `models.detection.fasterrcnn_resnet50_fpn`, `models.__dict__[arch]`,
    /// `getattr(models, name)`) called with `pretrained=` or `pretrained_backbone=`.
    /// Builders of other libraries (`timm.create_model(..., pretrained=True)`) and project
    /// functions with the same names are not flagged.
    ///
    /// ## Why is this bad?
    /// Since torchvision 0.13 these arguments are deprecated in favour of `weights=` /
    /// `weights_backbone=` and warn on every call. `weights=` also states which checkpoint is
    /// loaded (`ResNet50_Weights.IMAGENET1K_V2` is more accurate than what `pretrained=True`
    /// gives), and the old arguments are slated for removal.
    ///
    /// ## Example
    /// ```python
    /// m = torchvision.models.resnet50(pretrained=True)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// m = torchvision.models.resnet50(weights="DEFAULT")
    /// ```
    ///
    /// ## Fix safety
    /// `pretrained=False` becomes `weights=None`, which is identical: safe. `pretrained=True`
    /// becomes `weights="DEFAULT"`, the best available weights; for some models these are newer
    /// than the `IMAGENET1K_V1` weights `pretrained=True` loaded, so predictions change and the
    /// fix is unsafe (use `<Model>_Weights.IMAGENET1K_V1` to keep the old weights). The same
    /// applies to `pretrained_backbone` -> `weights_backbone`. Non-literal values are reported
    /// without a fix.
    ///
    /// ## References
    /// - [torchvision models and pre-trained weights](https://pytorch.org/vision/stable/models.html)
    /// - [torchvision multi-weight support API](https://pytorch.org/blog/introducing-torchvision-new-multi-weight-support-api/)
    pub(crate) static TORCHVISION_PRETRAINED_DEPRECATED = {
        name: "torchvision-pretrained-deprecated",
        code: "TV086",
        group: DeprecatedApi,
        severity: Warning,
        title: "torchvision model builders called with pretrained=/pretrained_backbone= (use weights=)",
        autofix: Yes,
        torchfix: ["TOR201"],
        hooks: { call: check_call },
    };
}

/// Is `q` a torchvision model builder function?
fn is_builder(q: &str) -> bool {
    q.strip_prefix("torchvision.models.").is_some_and(|rest| {
        let last = rest.rsplit('.').next().unwrap_or(rest);
        last.starts_with(|c: char| c.is_ascii_lowercase()) && !last.starts_with('_')
    })
}

/// Does `expr` stand for the `torchvision.models` package (or one of its sub-packages)?
fn is_models_package(checker: &Checker, expr: &Expr) -> bool {
    checker
        .resolve(expr)
        .is_some_and(|q| q == "torchvision.models" || q.starts_with("torchvision.models."))
}

/// A builder chosen at run time: `models.__dict__[arch]` or `getattr(models, name)`.
fn is_dynamic_builder(checker: &Checker, func: &Expr) -> bool {
    match func {
        Expr::Subscript(s) => matches!(&*s.value, Expr::Attribute(a)
            if a.attr.as_str() == "__dict__" && is_models_package(checker, &a.value)),
        Expr::Call(c) => {
            sem::name_of(&c.func) == Some("getattr")
                && checker.resolve(&c.func).is_none()
                && c.arguments
                    .args
                    .first()
                    .is_some_and(|m| is_models_package(checker, m))
        }
        _ => false,
    }
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let pretrained = call.arguments.find_keyword("pretrained");
    let backbone = call.arguments.find_keyword("pretrained_backbone");
    if pretrained.is_none() && backbone.is_none() {
        return;
    }
    let direct = name.is_some_and(is_builder);
    if !direct && !is_dynamic_builder(checker, &call.func) {
        return;
    }
    if !helpers::active(checker, 1, 12) {
        return;
    }
    let fix = fix(call, pretrained, backbone);
    let callee = checker.text(call.func.range()).to_string();
    let (first, names) = match (pretrained, backbone) {
        (Some(p), Some(_)) => (p, "`pretrained=` / `pretrained_backbone=`"),
        (Some(p), None) => (p, "`pretrained=`"),
        (None, Some(b)) => (b, "`pretrained_backbone=`"),
        (None, None) => return,
    };
    let d = checker.report(
        first.range(),
        format!("{names} in `{callee}(...)` is deprecated since torchvision 0.13 (warns on every call): use `weights=` / `weights_backbone=`"),
    );
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

/// The replacement for one keyword and whether it is exact.
fn replacement(k: &Keyword, new_name: &str) -> Option<(RawEdit, bool)> {
    let (value, exact) = match sem::literal(&k.value)? {
        sem::Literal::Bool(true) => ("\"DEFAULT\"", false),
        sem::Literal::Bool(false) | sem::Literal::None => ("None", true),
        _ => return None,
    };
    Some((
        RawEdit::replace(k.range(), format!("{new_name}={value}")),
        exact,
    ))
}

fn fix(
    call: &ExprCall,
    pretrained: Option<&Keyword>,
    backbone: Option<&Keyword>,
) -> Option<RawFix> {
    if call.arguments.find_keyword("weights").is_some()
        || call.arguments.find_keyword("weights_backbone").is_some()
    {
        return None;
    }
    let mut edits = Vec::new();
    let mut exact = true;
    for (k, new_name) in [(pretrained, "weights"), (backbone, "weights_backbone")] {
        if let Some(k) = k {
            let (edit, e) = replacement(k, new_name)?;
            edits.push(edit);
            exact &= e;
        }
    }
    Some(if exact {
        RawFix::safe("Use `weights=None`", edits)
    } else {
        RawFix::unsafe_edit(
            "Use `weights=\"DEFAULT\"` (may load newer weights than `pretrained=True` did)",
            edits,
        )
    })
}

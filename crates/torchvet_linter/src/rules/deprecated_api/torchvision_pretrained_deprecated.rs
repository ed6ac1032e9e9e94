use super::torchvision_weights;
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers as sem;

crate::declare_rule! {
    /// ## What it does
    /// Checks for torchvision model builders (`torchvision.models.resnet50`,
    /// `models.detection.fasterrcnn_resnet50_fpn`, `models.__dict__[arch]`,
    /// `getattr(models, name)`) called with `pretrained=` or `pretrained_backbone=`, or with a
    /// positional `True`/`False` in the place `pretrained` had (`resnet50(True)`).
    /// Builders of other libraries (`timm.create_model(..., pretrained=True)`) and project
    /// functions with the same names are not flagged.
    ///
    /// ## Why is this bad?
    /// Since torchvision 0.13 these arguments are deprecated in favour of `weights=` /
    /// `weights_backbone=` and warn on every call, and they are slated for removal. `weights=`
    /// also says which checkpoint is loaded.
    ///
    /// ## Example
    /// ```python
    /// m = torchvision.models.resnet50(pretrained=True)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// from torchvision import models
    ///
    /// m = torchvision.models.resnet50(weights=models.ResNet50_Weights.IMAGENET1K_V1)
    /// ```
    ///
    /// ## Fix safety
    /// The fix keeps the weights the code used to get, so it is safe. `pretrained=True`
    /// selected the builder's legacy weights (for `resnet50`, `IMAGENET1K_V1`, not the newer
    /// `IMAGENET1K_V2` that `weights="DEFAULT"` gives: that would change results), so it becomes
    /// `weights=models.ResNet50_Weights.IMAGENET1K_V1`; segmentation, detection, video,
    /// optical-flow and quantized builders get their own enums
    /// (`models.segmentation.DeepLabV3_ResNet50_Weights.COCO_WITH_VOC_LABELS_V1`, the quantized
    /// enum with `quantize=True`). `pretrained_backbone=True` becomes
    /// `weights_backbone=<the backbone's legacy enum>`, and `False` becomes `None`.
    /// `from torchvision import models` is added when the file has no name for
    /// `torchvision.models`. The builder -> legacy enum table is generated from torchvision's
    /// own registry (`@register_model` and `@handle_legacy_interface`) by
    /// `crates/torchvet_linter/data/gen_torchvision_weights.py`. Non-literal values, builders
    /// chosen at run time (`models.__dict__[arch](pretrained=True)`), a positional `True`
    /// followed by other positional arguments, and a non-literal `quantize=` are reported
    /// without a fix. When any dependency file of the project (a `requirements*.txt` in any
    /// folder, `setup.py` / `setup.cfg` / `pyproject.toml`, a conda `environment.yml` /
    /// `env.yml`) allows a torchvision below 0.13, which added `weights=`, or a torch below
    /// 1.12 (the release paired with it), the same fix is offered as unsafe: on that older
    /// torchvision the rewritten call raises `TypeError`.
    ///
    /// Calls are not reported where `pretrained=` is the current API: when the file's nearest
    /// declaration allows no torchvision from 0.13 on (`torchvision==0.9.1`, or a torch older
    /// than 1.12 when torchvision is not declared), in a branch for old releases (a version
    /// or feature test such as `hasattr(models, "ResNet50_Weights")`, an
    /// `ImportError`/`AttributeError` shim), or in the `except TypeError:` fallback of a `try`
    /// that calls the same builder with a keyword the fallback leaves out (`weights=`,
    /// `init_weights=`).
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

/// A legacy argument of the call: `pretrained=`/`pretrained_backbone=` or a positional
/// `True`/`False` (the first positional argument was `pretrained`).
struct Legacy<'a> {
    /// `pretrained` or `pretrained_backbone`.
    param: &'static str,
    /// The whole argument (`pretrained=True`, or the positional `True`).
    range: TextRange,
    value: &'a Expr,
    positional: bool,
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let mut legacy: Vec<Legacy> = Vec::new();
    for (param, kw) in [
        ("pretrained", call.arguments.find_keyword("pretrained")),
        (
            "pretrained_backbone",
            call.arguments.find_keyword("pretrained_backbone"),
        ),
    ] {
        if let Some(k) = kw {
            legacy.push(Legacy {
                param,
                range: k.range(),
                value: &k.value,
                positional: false,
            });
        }
    }
    // `resnet50(True)`: a literal bool in the first positional place is the old `pretrained`
    // (an enum there is the new `weights`, passed positionally).
    if let Some(first) = call.arguments.args.first() {
        if matches!(sem::literal(first), Some(sem::Literal::Bool(_)))
            && call.arguments.find_keyword("pretrained").is_none()
        {
            legacy.push(Legacy {
                param: "pretrained",
                range: first.range(),
                value: first,
                positional: true,
            });
        }
    }
    if legacy.is_empty() {
        return;
    }
    let direct = name.is_some_and(is_builder);
    if !direct && !is_dynamic_builder(checker, &call.func) {
        return;
    }
    // `weights=` arrived with torchvision 0.13: below it (the declared torchvision, or the one
    // the target torch pairs with) `pretrained=` is the API. Neither is it deprecated in a
    // branch for old releases: a version / feature test (`hasattr(models, "ResNet50_Weights")`),
    // an ImportError/AttributeError shim, or the `except TypeError:` fallback of a call that
    // tries a newer keyword first.
    if !checker.torchvision_at_least(0, 13)
        || checker.in_version_guard()
        || checker.in_signature_fallback(call)
    {
        return;
    }
    let rest = name.and_then(|q| q.strip_prefix("torchvision.models."));
    let fix = fix(checker, call, rest, &legacy);
    let callee = checker.text(call.func.range()).to_string();
    let names = match (
        legacy.iter().any(|l| l.param == "pretrained"),
        legacy.iter().any(|l| l.param == "pretrained_backbone"),
    ) {
        (true, true) => "`pretrained=` / `pretrained_backbone=`",
        (true, false) if legacy.iter().any(|l| l.positional) => {
            "a positional `True`/`False` (the old `pretrained`)"
        }
        (true, false) => "`pretrained=`",
        _ => "`pretrained_backbone=`",
    };
    let d = checker.report(
        legacy[0].range,
        format!("{names} in `{callee}(...)` is deprecated since torchvision 0.13 (warns on every call): use `weights=` / `weights_backbone=`"),
    );
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

/// How to write `torchvision.models` here: an existing module-level name for it (`models`,
/// `tvm`), or `models` with an added `from torchvision import models` when the name is free,
/// or `torchvision.models` when `torchvision` is imported.
fn models_ref(checker: &Checker) -> Option<(String, Option<RawEdit>)> {
    for stmt in &checker.module().body {
        let bound = match stmt {
            Stmt::Import(imp) => imp
                .names
                .iter()
                .find(|a| a.name.as_str() == "torchvision.models" && a.asname.is_some())
                .and_then(|a| a.asname.as_ref().map(|n| n.to_string())),
            Stmt::ImportFrom(imp)
                if imp.level == 0
                    && imp
                        .module
                        .as_ref()
                        .is_some_and(|m| m.as_str() == "torchvision") =>
            {
                imp.names
                    .iter()
                    .find(|a| a.name.as_str() == "models")
                    .map(|a| a.asname.as_ref().unwrap_or(&a.name).to_string())
            }
            _ => None,
        };
        if let Some(b) = bound {
            if checker.name_is(&b, "torchvision.models") {
                return Some((b, None));
            }
        }
    }
    if !checker.scopes.is_bound("models") {
        return Some((
            "models".to_string(),
            Some(checker.add_import_edit("from torchvision import models")),
        ));
    }
    checker
        .module_alias("torchvision")
        .map(|tv| (format!("{tv}.models"), None))
}

/// The replacement value for one legacy argument, and whether it needs `models`.
fn new_value(
    checker: &Checker,
    call: &ExprCall,
    rest: Option<&str>,
    l: &Legacy,
) -> Option<(String, bool)> {
    match sem::literal(l.value)? {
        sem::Literal::Bool(false) | sem::Literal::None => Some(("None".to_string(), false)),
        sem::Literal::Bool(true) => {
            let row = torchvision_weights::lookup(rest?, l.param)?;
            let quantize = match call.arguments.find_keyword("quantize") {
                None => false,
                Some(k) => match sem::literal(&k.value)? {
                    sem::Literal::Bool(b) => b,
                    _ => return None,
                },
            };
            let (package, member) = if quantize {
                row.quantized?
            } else {
                row.weights?
            };
            let _ = checker;
            Some((
                if package.is_empty() {
                    member.to_string()
                } else {
                    format!("{package}.{member}")
                },
                true,
            ))
        }
        _ => None,
    }
}

/// `pretrained=True` -> `weights=<Builder>_Weights.<the enum pretrained=True selected>` (the
/// legacy weights, from torchvision's registry), `pretrained=False` -> `weights=None`, the same
/// for `pretrained_backbone` -> `weights_backbone`, adding `from torchvision import models`
/// when needed. Exactly what torchvision's legacy interface does: safe.
fn fix(
    checker: &Checker,
    call: &ExprCall,
    rest: Option<&str>,
    legacy: &[Legacy],
) -> Option<RawFix> {
    if call.arguments.find_keyword("weights").is_some()
        || call.arguments.find_keyword("weights_backbone").is_some()
        || sem::has_kwargs_splat(call)
        || sem::has_args_splat(call)
    {
        return None;
    }
    // A positional `pretrained` can become a keyword only when nothing positional follows.
    if legacy.iter().any(|l| l.positional) && call.arguments.args.len() != 1 {
        return None;
    }
    let mut values = Vec::new();
    for l in legacy {
        values.push(new_value(checker, call, rest, l)?);
    }
    let models = if values.iter().any(|(_, needs)| *needs) {
        Some(models_ref(checker)?)
    } else {
        None
    };
    let mut edits = Vec::new();
    for (l, (value, needs)) in legacy.iter().zip(&values) {
        let new_param = if l.param == "pretrained" {
            "weights"
        } else {
            "weights_backbone"
        };
        let value = match (&models, needs) {
            (Some((m, _)), true) => format!("{m}.{value}"),
            _ => value.clone(),
        };
        edits.push(RawEdit::replace(l.range, format!("{new_param}={value}")));
    }
    if let Some((_, Some(import))) = models {
        edits.push(import);
    }
    let message = if values.iter().any(|(_, needs)| *needs) {
        "Use `weights=` with the weights `pretrained=True` loaded (`IMAGENET1K_V1`-style legacy enum)"
    } else {
        "Use `weights=None`"
    };
    // `weights=` arrived with torchvision 0.13, which pairs with torch 1.12: on an older
    // torchvision any declaration of the project allows, the rewritten call raises `TypeError`.
    Some(if checker.declared_torchvision_min_at_least(0, 13) {
        RawFix::safe(message, edits)
    } else {
        RawFix::unsafe_edit(
            format!(
                "{message} (needs torchvision >= 0.13 / torch >= 1.12; the project allows older)"
            ),
            edits,
        )
    })
}

#[cfg(test)]
mod tests {
    use crate::{FileContext, LintSettings, Linter, Version};
    use torchvet_diagnostics::Applicability;
    use torchvet_python::SourceFile;

    /// The applicability of the fix when the project declares `min`.
    fn applicability(min: Option<Version>) -> Applicability {
        let src = "import torchvision.models as models\nnet = models.resnet18(pretrained=True)\n";
        let settings = LintSettings::only("torchvision-pretrained-deprecated");
        let file = SourceFile::from_python("train.py", src.to_string());
        let ctx = FileContext {
            min_torch: min,
            ..FileContext::default()
        };
        let found = Linter::new(settings).lint_file(&file, None, "train.py", &ctx);
        assert_eq!(found.len(), 1, "{found:?}");
        found[0].fix.as_ref().expect("a fix").applicability
    }

    #[test]
    fn fix_is_safe_only_when_the_declared_torch_has_weights() {
        // No lower bound (target: latest) or torch>=1.12 (torchvision 0.13): safe.
        assert_eq!(applicability(None), Applicability::Safe);
        assert_eq!(
            applicability(Some(Version::new(1, 12))),
            Applicability::Safe
        );
        // `torch>=0.4.0`: torchvision of that era has no `weights=`.
        assert_eq!(
            applicability(Some(Version::new(0, 4))),
            Applicability::Unsafe
        );
    }
}

use super::helpers;
use crate::checker::Checker;
use crate::fix::{add_keyword_argument, RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers as sem;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `F.upsample`, `F.upsample_bilinear`, `F.upsample_nearest`,
    /// `nn.UpsamplingBilinear2d` and `nn.UpsamplingNearest2d` (references and imports).
    /// `nn.Upsample` is not deprecated and is not flagged.
    ///
    /// ## Why is this bad?
    /// Since torch 0.4.1 these are deprecated spellings of `F.interpolate` / `nn.Upsample`;
    /// the functions warn on every call. `upsample_bilinear` and `UpsamplingBilinear2d` also
    /// silently use `align_corners=True`, which the replacement makes visible.
    ///
    /// ## Example
    /// ```python
    /// y = F.upsample(x, scale_factor=2, mode="bilinear")
    /// self.up = nn.UpsamplingBilinear2d(scale_factor=2)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// y = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
    /// self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
    /// ```
    ///
    /// ## Fix safety
    /// `F.upsample` is renamed to `F.interpolate` (same parameters). `upsample_bilinear` /
    /// `UpsamplingBilinear2d` become `interpolate` / `nn.Upsample` with `mode="bilinear",
    /// align_corners=True`, and the nearest variants get `mode="nearest"`: exactly what the
    /// deprecated wrappers pass, so the fix is safe. It is offered for attribute references
    /// that are called without `mode=` / `**kwargs`; imported names get no fix.
    ///
    /// ## References
    /// - [torch.nn.functional.interpolate](https://pytorch.org/docs/stable/generated/torch.nn.functional.interpolate.html)
    /// - [torch.nn.Upsample](https://pytorch.org/docs/stable/generated/torch.nn.Upsample.html)
    /// - [pytorch#11568 (nn.Upsample is not deprecated)](https://github.com/pytorch/pytorch/pull/11568)
    pub(crate) static DEPRECATED_UPSAMPLE = {
        name: "deprecated-upsample",
        code: "TV101",
        group: DeprecatedApi,
        severity: Info,
        title: "F.upsample* / nn.UpsamplingBilinear2d / nn.UpsamplingNearest2d are deprecated",
        autofix: Yes,
        torchfix: ["TOR101", "TOR103"],
        hooks: { stmt: check_import, expr: check_reference, expr_on: crate::registry::ExprKinds::REFERENCE, end: helpers::bindings::clear },
    };
}

const NAMES: &[&str] = &[
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
    "UpsamplingBilinear2d",
    "UpsamplingNearest2d",
];

/// (replacement name, extra keywords) for a deprecated qualified name.
fn deprecated(q: &str) -> Option<(&'static str, &'static str)> {
    Some(match q {
        "torch.nn.functional.upsample" => ("interpolate", ""),
        "torch.nn.functional.upsample_bilinear" => {
            ("interpolate", "mode=\"bilinear\", align_corners=True")
        }
        "torch.nn.functional.upsample_nearest" => ("interpolate", "mode=\"nearest\""),
        "torch.nn.UpsamplingBilinear2d" | "torch.nn.modules.upsampling.UpsamplingBilinear2d" => {
            ("Upsample", "mode=\"bilinear\", align_corners=True")
        }
        "torch.nn.UpsamplingNearest2d" | "torch.nn.modules.upsampling.UpsamplingNearest2d" => {
            ("Upsample", "mode=\"nearest\"")
        }
        _ => return None,
    })
}

fn check_import(checker: &mut Checker, stmt: &Stmt) {
    if matches!(stmt, Stmt::Import(_) | Stmt::ImportFrom(_)) {
        helpers::note_imports(checker, stmt, NAMES);
    }
    if !matches!(stmt, Stmt::ImportFrom(_)) || !helpers::active(checker, 0, 4) {
        return;
    }
    for name in helpers::imported_names(stmt) {
        if let Some((new, _)) = deprecated(&name.qualified) {
            checker.report(
                name.range,
                format!("`{}` is deprecated: use `{new}`", name.qualified),
            );
        }
    }
}

fn check_reference(checker: &mut Checker, expr: &Expr) {
    let Some(q) = helpers::reference_to(checker, expr, NAMES) else {
        return;
    };
    let Some((new, extra)) = deprecated(&q) else {
        return;
    };
    if !helpers::active(checker, 0, 4) {
        return;
    }
    let text = checker.text(expr.range()).to_string();
    let call = helpers::callee_of(checker, expr);
    let fix = helpers::attr_range(expr).and_then(|attr| {
        let mut edits = vec![RawEdit::replace(attr, new)];
        if !extra.is_empty() {
            let call = call?;
            if call.arguments.find_keyword("mode").is_some() || sem::has_kwargs_splat(call) {
                return None;
            }
            edits.push(add_keyword_argument(call, extra));
        }
        let shown = if extra.is_empty() {
            new.to_string()
        } else {
            format!("{new}(..., {extra})")
        };
        Some(RawFix::safe(format!("Use `{shown}`"), edits))
    });
    let what = if new == "interpolate" {
        "warns on every call"
    } else {
        "is kept only for compatibility"
    };
    let d = checker.report(
        expr.range(),
        format!("`{text}` is deprecated since torch 0.4.1 and {what}: use `{new}`"),
    );
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

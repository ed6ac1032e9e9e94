use super::helpers;
use crate::checker::Checker;
use crate::fix::{add_keyword_argument, RawFix};
use ruff_python_ast::ExprCall;
use ruff_text_size::Ranged;
use torchvet_semantic::helpers as sem;

crate::declare_rule! {
    /// ## What it does
    /// Checks for calls that rely on a default torch warns about: `torch.meshgrid` without
    /// `indexing=`, `F.interpolate` / `nn.Upsample` with a linear mode (`linear`, `bilinear`,
    /// `bicubic`, `trilinear`) without `align_corners=`, and `F.grid_sample` /
    /// `F.affine_grid` without `align_corners=`.
    ///
    /// ## Why is this bad?
    /// Each of these defaults changed once (`align_corners` of `interpolate` in 0.4.0, of
    /// `grid_sample` / `affine_grid` in 1.3.0) or is announced to change (`meshgrid` will
    /// require `indexing`); `meshgrid`, `grid_sample` and `affine_grid` warn on every call.
    /// Stating the value documents which convention the code uses (`'ij'` matrix vs `'xy'`
    /// Cartesian indexing; pixel-corner vs pixel-centre alignment) and keeps results stable
    /// across versions.
    ///
    /// ## Example
    /// ```python
    /// yy, xx = torch.meshgrid(torch.arange(h), torch.arange(w))
    /// up = F.interpolate(x, scale_factor=2, mode="bilinear")
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// yy, xx = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    /// up = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
    /// ```
    ///
    /// ## Fix safety
    /// The fix passes the current default explicitly (`indexing="ij"`, `align_corners=False`),
    /// so results do not change: safe.
    ///
    /// ## References
    /// - [torch.meshgrid](https://pytorch.org/docs/stable/generated/torch.meshgrid.html)
    /// - [torch.nn.functional.interpolate](https://pytorch.org/docs/stable/generated/torch.nn.functional.interpolate.html)
    /// - [torch.nn.functional.grid_sample](https://pytorch.org/docs/stable/generated/torch.nn.functional.grid_sample.html)
    pub(crate) static IMPLICIT_DEFAULT_WARNINGS = {
        name: "implicit-default-warnings",
        code: "TV102",
        group: DeprecatedApi,
        severity: Info,
        title: "torch.meshgrid without indexing=, interpolate/grid_sample/affine_grid without align_corners=",
        autofix: Yes,
        hooks: { call: check_call },
    };
}

const LINEAR_MODES: &[&str] = &["linear", "bilinear", "bicubic", "trilinear"];

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let Some(q) = name else { return };
    let (keyword, position, value, version) = match q {
        "torch.meshgrid" | "torch.functional.meshgrid" => {
            ("indexing", usize::MAX, "\"ij\"", (1, 10))
        }
        "torch.nn.functional.interpolate"
        | "torch.nn.Upsample"
        | "torch.nn.modules.upsampling.Upsample" => {
            let mode_pos = if q.ends_with("interpolate") { 3 } else { 2 };
            let Some(mode) = sem::argument(call, "mode", mode_pos).and_then(sem::str_value) else {
                return;
            };
            if !LINEAR_MODES.contains(&mode) {
                return;
            }
            ("align_corners", mode_pos + 1, "False", (0, 4))
        }
        "torch.nn.functional.grid_sample" => ("align_corners", 4, "False", (1, 3)),
        "torch.nn.functional.affine_grid" => ("align_corners", 2, "False", (1, 3)),
        _ => return,
    };
    if sem::has_kwargs_splat(call) || sem::has_args_splat(call) {
        return;
    }
    if call.arguments.find_keyword(keyword).is_some() || call.arguments.args.len() > position {
        return;
    }
    if !helpers::active(checker, version.0, version.1) {
        return;
    }
    let callee = checker.text(call.func.range()).to_string();
    let message = if keyword == "indexing" {
        format!("`{callee}(...)` without `indexing=` warns on every call (the default is due to change): pass `indexing=\"ij\"` (current behaviour) or `\"xy\"`")
    } else if version == (1, 3) {
        format!("`{callee}(...)` without `align_corners=` warns on every call (the default changed to False in torch 1.3.0): pass `align_corners=False` (current behaviour) or `True`")
    } else {
        format!("`{callee}(...)` with a linear mode relies on the implicit `align_corners` default, which changed in torch 0.4.0: pass `align_corners=False` (current behaviour) or `True`")
    };
    checker
        .report(call.func.range(), message)
        .set_fix(RawFix::safe(
            format!("Pass `{keyword}={value}`"),
            vec![add_keyword_argument(call, &format!("{keyword}={value}"))],
        ));
}

use crate::checker::Checker;
use ruff_python_ast::{CmpOp, Expr, ExprCall};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for version strings compared as plain strings: `torchvision.__version__ < "0.13"`,
    /// `torch.__version__[:3] >= "1.1"`, `float(torch.__version__[:3])`, and
    /// `torch.__version__ < "2.4"` when the target torch is older than 1.10.
    ///
    /// ## Why is this bad?
    /// Strings compare character by character: `"2.10" < "2.4"` and `"0.9" > "0.13"` are both
    /// true. Slices such as `__version__[:3]` turn `"2.10.0"` into `"2.1"`, and `float()` of
    /// it reads `"1.10"` as `1.1`. Version-gated code then takes the wrong branch on exactly
    /// the newest releases. (`torch.__version__` itself is a `TorchVersion` since torch 1.10
    /// and compares correctly with strings; its slices and other packages' `__version__` do not.)
    ///
    /// ## Example
    /// ```python
    /// if torchvision.__version__ < "0.13":
    ///     model = resnet50(pretrained=True)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// from packaging.version import Version
    /// if Version(torchvision.__version__) < Version("0.13"):
    ///     model = resnet50(pretrained=True)
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: the correct comparison needs `packaging` (or a `TorchVersion`), and
    /// slices must be rewritten by hand.
    ///
    /// ## References
    /// - [PyTorch versioning and TorchVersion](https://pytorch.org/docs/stable/notes/versioning.html)
    /// - [PyPOTS issue 520](https://github.com/WenjieDu/PyPOTS/issues/520)
    pub(crate) static TORCH_VERSION_STRING_COMPARE = {
        name: "torch-version-string-compare",
        code: "TV070",
        group: Correctness,
        severity: Warning,
        title: "__version__ compared as a string ('2.10' < '2.4' is True)",
        autofix: No,
        hooks: { expr: check_expr, call: check_call },
    };
}

/// How a version expression is derived from `<package>.__version__`.
enum VersionExpr {
    /// `torch.__version__` itself (a TorchVersion since 1.10).
    TorchVersion,
    /// A plain string: another package's `__version__`, or a slice/index/method result.
    PlainString(String),
}

fn version_expr(checker: &Checker, expr: &Expr) -> Option<VersionExpr> {
    match expr {
        Expr::Attribute(a) if a.attr.as_str() == "__version__" => {
            let q = checker.resolve(&a.value)?;
            let package = q.split('.').next().unwrap_or(&q);
            if !matches!(
                package,
                "torch" | "torchvision" | "torchaudio" | "torchtext" | "torchdata"
            ) {
                return None;
            }
            if q == "torch" {
                Some(VersionExpr::TorchVersion)
            } else {
                Some(VersionExpr::PlainString(format!("{q}.__version__")))
            }
        }
        // `__version__[:3]`, `__version__.split("+")[0]`
        Expr::Subscript(s) => {
            let inner = match &*s.value {
                Expr::Call(c) => match &*c.func {
                    Expr::Attribute(m)
                        if matches!(m.attr.as_str(), "split" | "rsplit" | "partition") =>
                    {
                        &m.value
                    }
                    _ => return None,
                },
                v => v,
            };
            version_expr(checker, inner)?;
            Some(VersionExpr::PlainString(
                checker.text(expr.range()).to_string(),
            ))
        }
        _ => None,
    }
}

fn check_expr(checker: &mut Checker, expr: &Expr) {
    let Expr::Compare(cmp) = expr else { return };
    if !cmp
        .ops
        .iter()
        .any(|op| matches!(op, CmpOp::Lt | CmpOp::LtE | CmpOp::Gt | CmpOp::GtE))
    {
        return;
    }
    let operands: Vec<&Expr> = std::iter::once(&*cmp.left)
        .chain(cmp.comparators.iter())
        .collect();
    for (i, op) in cmp.ops.iter().enumerate() {
        if !matches!(op, CmpOp::Lt | CmpOp::LtE | CmpOp::Gt | CmpOp::GtE) {
            continue;
        }
        let (l, r) = (operands[i], operands[i + 1]);
        let (ver, lit) = if helpers::str_value(r).is_some() {
            (l, r)
        } else if helpers::str_value(l).is_some() {
            (r, l)
        } else {
            continue;
        };
        let Some(kind) = version_expr(checker, ver) else {
            continue;
        };
        let lit_text = checker.text(lit.range());
        let message = match kind {
            VersionExpr::TorchVersion => {
                // TorchVersion compares by version since torch 1.10.
                if checker.torch_at_least(1, 10) {
                    continue;
                }
                format!("`torch.__version__` is a plain string before torch 1.10: comparing it with {lit_text} is lexicographic (\"1.10\" < \"1.4\"); parse both with `packaging.version.Version`")
            }
            VersionExpr::PlainString(text) => format!(
                "`{text}` is a plain string: comparing it with {lit_text} is lexicographic (\"2.10\" < \"2.4\", \"0.9\" > \"0.13\"); parse both with `packaging.version.Version`"
            ),
        };
        checker.report(expr.range(), message);
        return;
    }
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    // float(torch.__version__[:3])
    let Expr::Name(n) = &*call.func else { return };
    if n.id.as_str() != "float"
        || checker.scopes.lookup("float").is_some()
        || call.arguments.args.len() != 1
    {
        return;
    }
    let arg = &call.arguments.args[0];
    if !matches!(arg, Expr::Subscript(_)) {
        return;
    }
    let Some(VersionExpr::PlainString(text)) = version_expr(checker, arg) else {
        return;
    };
    checker.report(
        call.range(),
        format!("`float({text})` reads a version as a decimal number: \"1.10\" becomes 1.1 and \"2.10\" becomes 2.1, so newer releases compare as older; use `packaging.version.Version`"),
    );
}

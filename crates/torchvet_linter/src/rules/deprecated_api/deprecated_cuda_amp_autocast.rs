use super::helpers;
use crate::checker::Checker;
use crate::fix::{add_keyword_argument, RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextSize};

crate::declare_rule! {
    /// ## What it does
    /// Checks for the device-specific mixed-precision APIs `torch.cuda.amp.autocast`,
    /// `torch.cuda.amp.GradScaler`, `torch.cuda.amp.custom_fwd`, `torch.cuda.amp.custom_bwd`,
    /// `torch.cpu.amp.autocast` and `torch.cpu.amp.GradScaler`: calls, decorators, other
    /// references and `from ... import` of them.
    ///
    /// ## Why is this bad?
    /// Since torch 2.4 they are deprecated in favour of the device-generic `torch.amp` API and
    /// emit a `FutureWarning` each time they are used (every training step for `autocast`).
    /// They are slated for removal.
    ///
    /// ## Example
    /// ```python
    /// scaler = torch.cuda.amp.GradScaler()
    /// with torch.cuda.amp.autocast(use_amp):
    ///     loss = model(x)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// scaler = torch.amp.GradScaler("cuda")
    /// with torch.amp.autocast("cuda", enabled=use_amp):
    ///     loss = model(x)
    /// ```
    ///
    /// ## Fix safety
    /// Calls are rewritten to the `torch.amp` function with the device type as first argument
    /// (`custom_fwd` / `custom_bwd` get `device_type=`). The first positional parameter of the
    /// old `autocast` is `enabled` (the new one's is `device_type`), so positional arguments are
    /// turned into keywords (`enabled=`, `dtype=`, `cache_enabled=`). The defaults of both APIs
    /// match, so the fix is safe. It uses the file's own name for `torch` and is not offered
    /// when `torch` is not imported, for `*args`, or for import statements. The replacements
    /// are newer than the old API (`torch.amp.GradScaler` since torch 2.3,
    /// `custom_fwd(device_type=...)` since 2.4, `torch.amp.autocast` since 1.10): when the
    /// project declares a lower torch bound below that (`torch>=1.7`), or its README, INSTALL
    /// file or docs say it runs on an older torch ("PyTorch 1.7.0+", "tested on PyTorch
    /// 1.6"), the fix is unsafe, since the rewritten code would fail on torch versions the
    /// project still allows. For
    /// `GradScaler` and `custom_fwd` / `custom_bwd` it is also unsafe when the project declares
    /// no lower bound at all (it may run on torch 2.0-2.2), and for any name imported in a
    /// `try:` whose `except` handler defines a fallback (`except ImportError: class
    /// GradScaler: ...`): the name may not be torch's class.
    ///
    /// ## References
    /// - [Automatic mixed precision: torch.amp](https://pytorch.org/docs/stable/amp.html)
    /// - [Deprecation of torch.cuda.amp (pytorch#126062)](https://github.com/pytorch/pytorch/pull/126062)
    pub(crate) static DEPRECATED_CUDA_AMP_AUTOCAST = {
        name: "deprecated-cuda-amp-autocast",
        code: "TV059",
        group: DeprecatedApi,
        severity: Warning,
        title: "torch.cuda.amp / torch.cpu.amp autocast, GradScaler, custom_fwd/bwd are deprecated (use torch.amp)",
        autofix: Yes,
        torchfix: ["TOR101", "TOR103"],
        hooks: { stmt: check_import, expr: check_reference, expr_on: crate::registry::ExprKinds::REFERENCE, end: helpers::bindings::clear },
    };
}

const NAMES: &[&str] = &["autocast", "GradScaler", "custom_fwd", "custom_bwd"];

/// (device, member) for a deprecated qualified name.
fn deprecated(q: &str) -> Option<(&'static str, &'static str)> {
    Some(match q {
        "torch.cuda.amp.autocast" | "torch.cuda.amp.autocast_mode.autocast" => ("cuda", "autocast"),
        "torch.cpu.amp.autocast" | "torch.cpu.amp.autocast_mode.autocast" => ("cpu", "autocast"),
        "torch.cuda.amp.GradScaler" | "torch.cuda.amp.grad_scaler.GradScaler" => {
            ("cuda", "GradScaler")
        }
        "torch.cpu.amp.GradScaler" | "torch.cpu.amp.grad_scaler.GradScaler" => {
            ("cpu", "GradScaler")
        }
        "torch.cuda.amp.custom_fwd" | "torch.cuda.amp.autocast_mode.custom_fwd" => {
            ("cuda", "custom_fwd")
        }
        "torch.cuda.amp.custom_bwd" | "torch.cuda.amp.autocast_mode.custom_bwd" => {
            ("cuda", "custom_bwd")
        }
        _ => return None,
    })
}

fn check_import(checker: &mut Checker, stmt: &Stmt) {
    if matches!(stmt, Stmt::Import(_) | Stmt::ImportFrom(_)) {
        helpers::note_imports(checker, stmt, NAMES);
    }
    if !matches!(stmt, Stmt::ImportFrom(_)) || !helpers::active(checker, 2, 4) {
        return;
    }
    for name in helpers::imported_names(stmt) {
        if let Some((device, member)) = deprecated(&name.qualified) {
            checker.report(
                name.range,
                format!(
                    "`{}` is deprecated since torch 2.4 (FutureWarning on each use): import `torch.amp.{member}` and pass \"{device}\"",
                    name.qualified
                ),
            );
        }
    }
}

/// Edits turning a call of the old API into the `torch.amp` one (after the callee is renamed).
fn call_edits(call: &ExprCall, device: &str, member: &str) -> Option<Vec<RawEdit>> {
    let args = &call.arguments;
    if helpers_has_star(call) {
        return None;
    }
    let device_lit = format!("\"{device}\"");
    match member {
        "custom_fwd" | "custom_bwd" => Some(vec![add_keyword_argument(
            call,
            &format!("device_type={device_lit}"),
        )]),
        "autocast" => {
            const KW: [&str; 3] = ["enabled", "dtype", "cache_enabled"];
            if args.args.len() > KW.len() {
                return None;
            }
            let mut edits = Vec::new();
            for (i, arg) in args.args.iter().enumerate() {
                let prefix = if i == 0 {
                    format!("{device_lit}, ")
                } else {
                    String::new()
                };
                edits.push(RawEdit::insert(arg.start(), format!("{prefix}{}=", KW[i])));
            }
            if args.args.is_empty() {
                edits.push(first_argument_insert(call, &device_lit));
            }
            Some(edits)
        }
        _ => Some(vec![first_argument_insert(call, &device_lit)]),
    }
}

fn helpers_has_star(call: &ExprCall) -> bool {
    torchvet_semantic::helpers::has_args_splat(call)
        || torchvet_semantic::helpers::has_kwargs_splat(call)
}

/// Insert `value` as the new first argument.
fn first_argument_insert(call: &ExprCall, value: &str) -> RawEdit {
    match call.arguments.iter_source_order().next() {
        Some(first) => RawEdit::insert(first.start(), format!("{value}, ")),
        None => RawEdit::insert(
            call.arguments.start() + TextSize::from(1),
            value.to_string(),
        ),
    }
}

fn check_reference(checker: &mut Checker, expr: &Expr) {
    let Some(q) = helpers::reference_to(checker, expr, NAMES) else {
        return;
    };
    let Some((device, member)) = deprecated(&q) else {
        return;
    };
    if !helpers::active(checker, 2, 4) {
        return;
    }
    let text = checker.text(expr.range()).to_string();
    let torch = helpers::torch_alias(checker);
    let call = helpers::callee_of(checker, expr);
    let fix = torch.and_then(|t| {
        let new_callee = format!("{t}.amp.{member}");
        let mut edits = vec![RawEdit::replace(expr.range(), new_callee.clone())];
        match call {
            Some(call) => edits.extend(call_edits(call, device, member)?),
            None if is_bare_decorator(checker, expr) && member.starts_with("custom_") => {
                edits = vec![RawEdit::replace(
                    expr.range(),
                    format!("{new_callee}(device_type=\"{device}\")"),
                )];
            }
            None => return None,
        }
        // The replacement's first release: `torch.amp.autocast(device_type, ...)` 1.10,
        // `torch.amp.GradScaler` 2.3, `custom_fwd/custom_bwd(device_type=...)` 2.4. Below the
        // project's declared lowest torch the new code would not run: not safe then.
        let (major, minor) = match member {
            "autocast" => (1, 10),
            "GradScaler" => (2, 3),
            _ => (2, 4),
        };
        // `torch.amp.autocast` is old enough to assume; the newer ones need the project to
        // declare a lowest torch that has them (a project on torch 2.0-2.2 that declares
        // nothing would break). A name with a fallback definition in an `except` handler may
        // not be torch's class at all.
        let title = format!("Use `{new_callee}` with device \"{device}\"");
        let fallback = root_name(expr).is_some_and(|n| checker.scopes.import_has_fallback(n));
        let new_enough = if member == "autocast" {
            checker.declared_min_at_least(major, minor)
        } else {
            checker.declared_min_known_at_least(major, minor)
        };
        Some(if fallback {
            RawFix::unsafe_edit(
                format!("{title} (the name has a fallback definition in an `except` handler)"),
                edits,
            )
        } else if new_enough {
            RawFix::safe(title, edits)
        } else if checker.declared_min_at_least(major, minor) {
            RawFix::unsafe_edit(
                format!(
                    "{title} (needs torch >= {major}.{minor}; the project declares no lower bound)"
                ),
                edits,
            )
        } else {
            RawFix::unsafe_edit(
                format!("{title} (needs torch >= {major}.{minor}; the project allows older)"),
                edits,
            )
        })
    });
    let shown = if call.is_some() {
        format!("{text}(...)")
    } else {
        text
    };
    // An annotation only names the class: nothing warns there, and `torch.amp.{member}` (the
    // base class of the deprecated one since torch 2.4) accepts both.
    let message = if checker.in_annotation() {
        format!("`{shown}` is a deprecated alias since torch 2.4: annotate with `torch.amp.{member}`, its base class (an annotation does not warn, but the alias is slated for removal)")
    } else {
        format!("`{shown}` is deprecated since torch 2.4 (FutureWarning on each use): use `torch.amp.{member}` with device \"{device}\"")
    };
    let d = checker.report(expr.range(), message);
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

/// The name an attribute chain starts with (`torch` in `torch.cuda.amp.GradScaler`).
fn root_name(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Attribute(a) => root_name(&a.value),
        _ => None,
    }
}

/// `@torch.cuda.amp.custom_fwd` used without parentheses.
fn is_bare_decorator(checker: &Checker, expr: &Expr) -> bool {
    checker.parent_expr().is_none()
        && matches!(checker.current_stmt(), Some(Stmt::FunctionDef(f))
            if f.decorator_list.iter().any(|d| d.expression.range() == expr.range()))
}

#[cfg(test)]
mod tests {
    use crate::{FileContext, LintSettings, Linter, Version};
    use torchvet_diagnostics::Applicability;
    use torchvet_python::SourceFile;

    /// The applicability of each fix, in source order, when the project declares `min`.
    fn fixes(min: Option<Version>) -> Vec<(String, Applicability)> {
        fixes_of(
            "import torch\n\
             scaler = torch.cuda.amp.GradScaler()\n\
             with torch.cuda.amp.autocast(enabled=True):\n    y = model(x)\n",
            min,
        )
    }

    fn fixes_of(src: &str, min: Option<Version>) -> Vec<(String, Applicability)> {
        let settings = LintSettings::only("deprecated-cuda-amp-autocast");
        let file = SourceFile::from_python("train.py", src.to_string());
        let ctx = FileContext {
            min_torch: min,
            ..FileContext::default()
        };
        Linter::new(settings)
            .lint_file(&file, None, "train.py", &ctx)
            .into_iter()
            .map(|d| {
                let f = d.fix.expect("a fix");
                (f.message, f.applicability)
            })
            .collect()
    }

    #[test]
    fn fix_is_safe_only_when_the_declared_torch_has_the_new_api() {
        // No lower bound declared: the project may run on torch 2.0-2.2, which has no
        // `torch.amp.GradScaler`; `torch.amp.autocast` (1.10) is assumed.
        let none = fixes(None);
        assert_eq!(none.len(), 2);
        assert_eq!(none[0].1, Applicability::Unsafe);
        assert!(none[0].0.contains("declares no lower bound"), "{none:?}");
        assert_eq!(none[1].1, Applicability::Safe);
        // `torch>=1.7`: neither replacement exists there (GradScaler 2.3, autocast 1.10).
        let old = fixes(Some(Version::new(1, 7)));
        assert!(
            old.iter().all(|(_, a)| *a == Applicability::Unsafe),
            "{old:?}"
        );
        assert!(old[0].0.contains("needs torch >= 2.3"), "{old:?}");
        // `torch>=2.0`: autocast is there, the new GradScaler is not.
        let mid = fixes(Some(Version::new(2, 0)));
        assert_eq!(mid[0].1, Applicability::Unsafe);
        assert_eq!(mid[1].1, Applicability::Safe);
        // `torch>=2.4`: both safe.
        let new = fixes(Some(Version::new(2, 4)));
        assert!(new.iter().all(|(_, a)| *a == Applicability::Safe));
    }

    #[test]
    fn a_name_with_an_except_fallback_is_never_fixed_safely() {
        let src = "import torch\n\
                   try:\n    from torch.cuda.amp import GradScaler, autocast\n\
                   except ImportError:\n    class GradScaler:\n        def __init__(self, **kw):\n            pass\n\
                   scaler = GradScaler(enabled=True)\n\
                   with autocast():\n    y = model(x)\n";
        let got = fixes_of(src, Some(Version::new(2, 4)));
        // The GradScaler call (the import line has no fix): unsafe, a fallback exists; the
        // autocast import has no fallback: safe.
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].1, Applicability::Unsafe);
        assert!(got[0].0.contains("fallback"), "{got:?}");
        assert_eq!(got[1].1, Applicability::Safe);
    }
}

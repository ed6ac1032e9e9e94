use super::helpers::{arg_range, has_splat, known_workers, loader_arg, loader_kind};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::style::values::{eval, with_frame, Value};
use ruff_python_ast::ExprCall;
use ruff_text_size::Ranged;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `DataLoader(prefetch_factor=k)` when the loader has no worker processes
    /// (`num_workers` is 0 or missing).
    ///
    /// ## Why is this bad?
    /// `prefetch_factor` is the number of batches each worker loads ahead; without workers
    /// there is nothing to prefetch. Since torch 2.0 the constructor raises
    /// `ValueError: prefetch_factor option could only be specified in multiprocessing` for
    /// any value other than `None` (before 2.0, any value other than the default 2). The
    /// script stops before the first batch.
    ///
    /// Only values known not to be `None` are reported: `prefetch_factor=4 if nw > 0 else
    /// None` and values passed in from elsewhere stay silent, as does a `num_workers` that is
    /// not known statically.
    ///
    /// ## Example
    /// ```python
    /// loader = DataLoader(ds, num_workers=0, prefetch_factor=4)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// loader = DataLoader(ds, num_workers=nw, prefetch_factor=4 if nw > 0 else None)
    /// ```
    ///
    /// ## Fix safety
    /// The fix sets `prefetch_factor=None` (`2`, the only accepted value, when the target
    /// torch is older than 2.0). The call raised a `ValueError` before and without workers
    /// nothing is prefetched, so the fix is safe.
    ///
    /// ## References
    /// - [torch.utils.data.DataLoader](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader)
    /// - [pytorch/pytorch#68576: prefetch_factor default](https://github.com/pytorch/pytorch/issues/68576)
    pub(crate) static PREFETCH_FACTOR_WITHOUT_WORKERS = {
        name: "prefetch-factor-without-workers",
        code: "TV078",
        group: DataLoading,
        severity: Critical,
        title: "DataLoader(prefetch_factor=k) with num_workers=0 raises ValueError",
        autofix: Yes,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let Some(loader) = name.and_then(loader_kind) else {
        return;
    };
    let Some(pf) = loader_arg(call, loader, "prefetch_factor") else {
        return;
    };
    if has_splat(call) {
        return;
    }
    let (value, workers) = with_frame(checker, |env| {
        (
            eval(checker, env, pf),
            known_workers(checker, env, call, loader),
        )
    });
    if workers != Some(0) {
        return;
    }
    let modern = checker.torch_at_least(2, 0);
    let raises = match value {
        Some(Value::None) => !modern,
        Some(Value::Int(k)) => modern || k != 2,
        Some(Value::NotNone | Value::Bool(_)) => modern,
        None => false,
    };
    if !raises {
        return;
    }
    let how = if loader_arg(call, loader, "num_workers").is_some() {
        "`num_workers` is 0"
    } else {
        "`num_workers` defaults to 0"
    };
    let (replacement, rule) = if modern {
        ("None", "only `None` is accepted without workers")
    } else {
        (
            "2",
            "only the default 2 is accepted without workers before torch 2.0",
        )
    };
    checker
        .report(
            arg_range(call, "prefetch_factor", pf),
            format!("`prefetch_factor={}` but {how}: creating this DataLoader raises `ValueError` ({rule})", checker.text(pf.range())),
        )
        .set_fix(RawFix::safe(
            format!("Set `prefetch_factor={replacement}`"),
            vec![RawEdit::replace(pf.range(), replacement)],
        ));
}

#[cfg(test)]
mod tests {
    use crate::{LintSettings, Linter, Version};
    use torchvet_python::SourceFile;

    fn count(src: &str, target: Option<Version>) -> usize {
        let mut settings = LintSettings::only("prefetch-factor-without-workers");
        settings.target_torch = target;
        let file = SourceFile::from_python("train.py", src.to_string());
        Linter::new(settings).lint(&file, "train.py").len()
    }

    #[test]
    fn before_torch_2_only_non_default_values_raise() {
        let old = Some(Version::new(1, 13));
        let src = |pf: &str| {
            format!(
                "from torch.utils.data import DataLoader\nDataLoader(ds, prefetch_factor={pf})\n"
            )
        };
        assert_eq!(count(&src("2"), old), 0);
        assert_eq!(count(&src("4"), old), 1);
        assert_eq!(count(&src("None"), old), 1);
        assert_eq!(count(&src("2"), None), 1);
        assert_eq!(count(&src("None"), None), 0);
    }
}

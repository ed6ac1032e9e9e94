use super::helpers::{arg_range, has_splat, known_workers, loader_arg, loader_kind};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::style::values::{eval, with_frame, Value};
use ruff_python_ast::ExprCall;
use ruff_text_size::Ranged;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `DataLoader(persistent_workers=True)` when the loader has no worker
    /// processes (`num_workers` is 0 or missing).
    ///
    /// ## Why is this bad?
    /// Persistent workers only make sense when there are workers to keep alive. The
    /// `DataLoader` constructor raises
    /// `ValueError: persistent_workers option needs num_workers > 0`, so the script stops
    /// before the first batch. This typically appears when `num_workers` is lowered to 0 for
    /// debugging and `persistent_workers` is left on.
    ///
    /// Values are followed through simple expressions: `persistent_workers=pw and
    /// num_workers > 0` stays silent, and a `num_workers` that is not known statically is
    /// treated as unknown.
    ///
    /// ## Example
    /// ```python
    /// loader = DataLoader(ds, batch_size=64, persistent_workers=True)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// loader = DataLoader(ds, batch_size=64, num_workers=nw, persistent_workers=nw > 0)
    /// ```
    ///
    /// ## Fix safety
    /// The fix sets `persistent_workers=False`. The call raised a `ValueError` before, and with
    /// no workers the option has nothing to act on, so the fix is safe.
    ///
    /// ## References
    /// - [torch.utils.data.DataLoader](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader)
    pub(crate) static PERSISTENT_WORKERS_WITHOUT_WORKERS = {
        name: "persistent-workers-without-workers",
        code: "TV037",
        group: DataLoading,
        severity: Critical,
        title: "DataLoader(persistent_workers=True) with num_workers=0 raises ValueError",
        autofix: Yes,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let Some(loader) = name.and_then(loader_kind) else {
        return;
    };
    let Some(pw) = loader_arg(call, loader, "persistent_workers") else {
        return;
    };
    if has_splat(call) {
        return;
    }
    let (persistent, workers) = with_frame(checker, |env| {
        (
            eval(checker, env, pw).and_then(Value::truthy),
            known_workers(checker, env, call, loader),
        )
    });
    if persistent != Some(true) || workers != Some(0) {
        return;
    }
    let how = if loader_arg(call, loader, "num_workers").is_some() {
        "`num_workers` is 0"
    } else {
        "`num_workers` defaults to 0"
    };
    checker
        .report(
            arg_range(call, "persistent_workers", pw),
            format!("`persistent_workers` is true but {how}: creating this DataLoader raises `ValueError: persistent_workers option needs num_workers > 0`"),
        )
        .set_fix(RawFix::safe("Set `persistent_workers=False`", vec![RawEdit::replace(pw.range(), "False")]));
}

#[cfg(test)]
mod tests {
    use crate::{LintSettings, Linter};
    use torchvet_python::SourceFile;

    fn count(body: &str) -> usize {
        let src =
            format!("from torch.utils.data import DataLoader\ndef f(ds, debug, pw, args):\n{body}");
        let file = SourceFile::from_python("train.py", src);
        Linter::new(LintSettings::only("persistent-workers-without-workers"))
            .lint(&file, "train.py")
            .len()
    }

    #[test]
    fn values_are_evaluated_not_guessed() {
        assert_eq!(count("    nw = 0 if debug else 4\n    DataLoader(ds, num_workers=nw, persistent_workers=True)\n"), 0);
        assert_eq!(count("    nw = 0\n    DataLoader(ds, num_workers=nw, persistent_workers=not debug or True)\n"), 1);
        assert_eq!(count("    nw = 0\n    p = pw and nw > 0\n    DataLoader(ds, num_workers=nw, persistent_workers=p)\n"), 0);
        assert_eq!(count("    nw = 0\n    nw = args.workers\n    DataLoader(ds, num_workers=nw, persistent_workers=True)\n"), 0);
        assert_eq!(count("    DataLoader(ds, num_workers=args.workers, persistent_workers=args.workers > 0)\n"), 0);
        assert_eq!(
            count("    DataLoader(ds, 8, False, None, None, 0, persistent_workers=True)\n"),
            1
        );
    }
}

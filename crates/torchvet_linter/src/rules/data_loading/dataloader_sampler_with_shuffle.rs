use super::helpers::{arg_range, has_splat, loader_arg, loader_kind};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::style::values::{eval, frame_bindings, with_frame, Bound, Env, Value};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::Ranged;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `DataLoader` calls that pass `shuffle=True` together with a `sampler`, and
    /// calls that pass a `batch_sampler` together with `batch_size`, `shuffle`, `sampler` or
    /// `drop_last`.
    ///
    /// ## Why is this bad?
    /// A sampler decides the order of the samples, so it cannot be combined with `shuffle`:
    /// the constructor raises `ValueError: sampler option is mutually exclusive with shuffle`.
    /// Likewise a batch sampler decides the batches, and the constructor raises when any of
    /// `batch_size` (other than 1), `shuffle`, `sampler` or `drop_last` is also given. The
    /// classic case is a training script that works on one GPU and fails as soon as a
    /// `DistributedSampler` is plugged in.
    ///
    /// Simple boolean expressions are evaluated: `shuffle=(sampler is None)`, the usual DDP
    /// idiom, stays silent, and so does a sampler that is known to be `None`.
    ///
    /// ## Example
    /// ```python
    /// sampler = DistributedSampler(ds) if distributed else None
    /// loader = DataLoader(ds, batch_size=32, shuffle=True, sampler=sampler)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// sampler = DistributedSampler(ds) if distributed else None
    /// loader = DataLoader(ds, batch_size=32, shuffle=(sampler is None), sampler=sampler)
    /// ```
    ///
    /// ## Fix safety
    /// For `shuffle` with a `sampler`, the fix replaces the `shuffle` value with
    /// `<sampler> is None` (or `False` when the sampler is constructed in the call). Whenever a
    /// sampler is present the original call raised, and when it is `None` shuffling is kept,
    /// so the fix is safe. Batch-sampler conflicts are reported without a fix.
    ///
    /// ## References
    /// - [torch.utils.data.DataLoader](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader)
    /// - [torch.utils.data.distributed.DistributedSampler](https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler)
    pub(crate) static DATALOADER_SAMPLER_WITH_SHUFFLE = {
        name: "dataloader-sampler-with-shuffle",
        code: "TV031",
        group: DataLoading,
        severity: Critical,
        title: "DataLoader(shuffle=True, sampler=...) raises ValueError (sampler and shuffle are exclusive)",
        autofix: Yes,
        hooks: { call: check_call },
    };
}

/// Might this be a sampler at run time (not provably `None`, with evidence of a value)?
fn may_be_present(checker: &Checker, env: Env<'_>, expr: &Expr, depth: u32) -> bool {
    if depth > 4 {
        return false;
    }
    match eval(checker, env, expr) {
        Some(Value::None) => return false,
        Some(Value::NotNone) => return true,
        Some(_) => return false,
        None => {}
    }
    match expr {
        Expr::If(i) => {
            may_be_present(checker, env, &i.body, depth + 1)
                || may_be_present(checker, env, &i.orelse, depth + 1)
        }
        // Any binding that may reach the use and may hold a sampler.
        Expr::Name(n) => frame_bindings(env, n.id.as_str(), n.start())
            .iter()
            .any(|b| matches!(b, Bound::Value(v) if may_be_present(checker, env, v, depth + 1))),
        _ => false,
    }
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let Some(loader) = name.and_then(loader_kind) else {
        return;
    };
    let shuffle = loader_arg(call, loader, "shuffle");
    let sampler = loader_arg(call, loader, "sampler");
    let batch_sampler = loader_arg(call, loader, "batch_sampler");
    if sampler.is_none() && batch_sampler.is_none() {
        return;
    }
    if has_splat(call) {
        return;
    }
    struct Facts {
        shuffle_true: bool,
        sampler_present: bool,
        sampler_certain: bool,
        batch_sampler_present: bool,
        batch_size_conflict: bool,
        drop_last_true: bool,
    }
    let facts = with_frame(checker, |env| {
        let truthy = |e: Option<&Expr>| {
            e.and_then(|e| eval(checker, env, e))
                .and_then(Value::truthy)
                == Some(true)
        };
        Facts {
            shuffle_true: truthy(shuffle),
            sampler_present: sampler.is_some_and(|s| may_be_present(checker, env, s, 0)),
            sampler_certain: sampler.and_then(|s| eval(checker, env, s)) == Some(Value::NotNone),
            batch_sampler_present: batch_sampler
                .is_some_and(|s| may_be_present(checker, env, s, 0)),
            batch_size_conflict: loader_arg(call, loader, "batch_size")
                .and_then(|b| eval(checker, env, b))
                .is_some_and(|v| matches!(v, Value::None) || matches!(v, Value::Int(n) if n != 1)),
            drop_last_true: truthy(loader_arg(call, loader, "drop_last")),
        }
    });

    if let (Some(shuffle), Some(sampler)) = (shuffle, sampler) {
        if facts.shuffle_true && facts.sampler_present {
            let s = checker.text(sampler.range());
            let shown = if s.len() <= 40 && !s.contains('\n') {
                s
            } else {
                "..."
            };
            let when = if facts.sampler_certain {
                ""
            } else {
                " whenever it is not None"
            };
            let replacement = if facts.sampler_certain {
                Some("False".to_string())
            } else if matches!(sampler, Expr::Name(_) | Expr::Attribute(_)) {
                Some(format!("({s} is None)"))
            } else {
                None
            };
            let diagnostic = checker.report(
                arg_range(call, "shuffle", shuffle),
                format!("`shuffle` is true and `sampler={shown}` is given{when}: the DataLoader raises `ValueError: sampler option is mutually exclusive with shuffle`"),
            );
            if let Some(text) = replacement {
                diagnostic.set_fix(RawFix::safe(
                    format!("Replace the `shuffle` value with `{text}`"),
                    vec![RawEdit::replace(shuffle.range(), text)],
                ));
            }
            return;
        }
    }

    if let Some(bs) = batch_sampler {
        if !facts.batch_sampler_present {
            return;
        }
        let mut conflicts = Vec::new();
        if facts.batch_size_conflict {
            conflicts.push("batch_size");
        }
        if facts.shuffle_true {
            conflicts.push("shuffle");
        }
        if sampler.is_some() && facts.sampler_certain {
            conflicts.push("sampler");
        }
        if facts.drop_last_true {
            conflicts.push("drop_last");
        }
        if conflicts.is_empty() {
            return;
        }
        let list = conflicts
            .iter()
            .map(|c| format!("`{c}`"))
            .collect::<Vec<_>>()
            .join(", ");
        checker.report(
            arg_range(call, "batch_sampler", bs),
            format!("`batch_sampler` is given together with {list}: the DataLoader raises `ValueError: batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last`"),
        );
    }
}

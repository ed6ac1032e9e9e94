use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::facts::{loader_used_only_for_evaluation, site};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers;
use torchvet_semantic::project::facts::ShuffleArg;
use torchvet_semantic::project::{Entity, FuncId, ProjectFile, Val};

crate::declare_rule! {
    /// ## What it does
    /// Checks for `shuffle=True` on a `DataLoader` that is used only for evaluation. The
    /// loader is followed wherever it goes in the project: returned by a factory
    /// (`train_loader, val_loader = build_loaders(cfg)`), passed to functions in other files
    /// (`evaluate(model, val_loader)`), stored in `self.<attr>` of a trainer. Every loop that
    /// iterates it must be an evaluation loop (no backward pass or optimizer step, directly
    /// or in the project functions it calls; and under `torch.no_grad()` /
    /// `inference_mode()`, or after `model.eval()`), or a Lightning `val_dataloader` /
    /// `test_dataloader` / `predict_dataloader` hook must return it. A loader that may reach
    /// anything else (a library trainer, `next(iter(loader))` to show samples, a closure) is
    /// not reported.
    ///
    /// The `shuffle=True` may also be passed to a project loader factory whose `DataLoader`
    /// takes `shuffle` from its parameter (`get_test_dataloader(..., shuffle=True)`).
    ///
    /// ## Why is this bad?
    /// Shuffling does not change a metric averaged over the whole set, but everything
    /// order-dependent does change from run to run: the batches logged or visualised, the
    /// predictions saved per batch, metrics computed on the first batches only, and the
    /// samples dropped by `drop_last`. Evaluation stops being comparable across runs and
    /// checkpoints, and it costs a random permutation per epoch for nothing.
    ///
    /// ## Example
    /// ```python
    /// val_loader = DataLoader(val_set, batch_size=256, shuffle=True)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// val_loader = DataLoader(val_set, batch_size=256, shuffle=False)
    /// ```
    ///
    /// ## Fix safety
    /// The fix sets `shuffle=False`. It changes which samples an evaluation that stops early
    /// or drops the last batch sees, and the order of what it logs (which is the point), so
    /// it is offered as unsafe.
    ///
    /// ## References
    /// - [torch.utils.data.DataLoader](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader)
    pub(crate) static EVAL_LOADER_SHUFFLED = {
        name: "eval-loader-shuffled",
        code: "TV129",
        group: Correctness,
        severity: Info,
        title: "shuffle=True on a DataLoader used only for evaluation (order-dependent metrics and logging differ run to run)",
        autofix: Suggest,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    match name {
        Some("torch.utils.data.DataLoader" | "torch.utils.data.dataloader.DataLoader") => {
            check_loader(checker, call)
        }
        Some(q) if !q.starts_with("torch") && !call.arguments.is_empty() => {
            check_factory_call(checker, call, q)
        }
        None if matches!(&*call.func, Expr::Name(_)) && !call.arguments.is_empty() => {
            if let Expr::Name(n) = &*call.func {
                let q = n.id.to_string();
                check_factory_call(checker, call, &q);
            }
        }
        _ => {}
    }
}

/// `DataLoader(..., shuffle=True)` whose value is used only for evaluation.
fn check_loader(checker: &mut Checker, call: &ExprCall) {
    // A `**kwargs` splat beside a literal `shuffle=True` (`**kwargs` holding `num_workers`
    // and `pin_memory` when CUDA is there) cannot change the verdict: it cannot hold
    // `shuffle` again (a TypeError) nor a `sampler` / `batch_sampler` (a ValueError with
    // `shuffle=True`).
    let (value, at) = match call.arguments.find_keyword("shuffle") {
        Some(k) => (&k.value, k.range()),
        None => match helpers::argument(call, "shuffle", 2) {
            Some(a) => (a, a.range()),
            None => return,
        },
    };
    if !matches!(value, Expr::BooleanLiteral(b) if b.value) {
        return;
    }
    let has_sampler = ["sampler", "batch_sampler"]
        .iter()
        .any(|k| helpers::keyword(call, k).is_some_and(|v| !matches!(v, Expr::NoneLiteral(_))));
    if has_sampler {
        return;
    }
    let Some(p) = checker.project_or_file().cloned() else {
        return;
    };
    let Some(evals) = loader_used_only_for_evaluation(checker, &p, call) else {
        return;
    };
    report(checker, &p, at, value.range(), &evals);
}

/// `factory(..., shuffle=True)` where the project function builds its loader with
/// `shuffle=<that parameter>` and returns it, and the result is used only for evaluation.
fn check_factory_call(checker: &mut Checker, call: &ExprCall, q: &str) {
    if !checker.mentions("shuffle") {
        return;
    }
    let has_true = call
        .arguments
        .keywords
        .iter()
        .any(|k| matches!(&k.value, Expr::BooleanLiteral(b) if b.value))
        || call
            .arguments
            .args
            .iter()
            .any(|a| matches!(a, Expr::BooleanLiteral(b) if b.value));
    if !has_true {
        return;
    }
    let Some(p) = checker.project_or_file().cloned() else {
        return;
    };
    let g = match p.entity(q).or_else(|| p.local(q)) {
        Some(Entity::Function(g)) => g,
        _ => return,
    };
    let gs = p.model.function(g);
    if !matches!(gs.returns, Val::Loader { .. }) {
        return;
    }
    let [loader] = gs.facts.loaders.as_slice() else {
        return;
    };
    let ShuffleArg::Param(i, _) = loader.shuffle else {
        return;
    };
    if loader.sampler {
        return;
    }
    let i = i as usize;
    let shift =
        usize::from(gs.class.is_some() && gs.params.first().is_some_and(|p| &**p == "self"));
    let pname = gs.params.get(i).cloned();
    // The argument the call passes for that parameter: `shuffle=True` or positional.
    let kw = call
        .arguments
        .keywords
        .iter()
        .find(|k| k.arg.as_ref().map(|a| a.as_str()) == pname.as_deref());
    let (value, at) = match kw {
        Some(k) => (&k.value, k.range()),
        None => match i
            .checked_sub(shift)
            .and_then(|j| call.arguments.args.get(j))
        {
            Some(a) if !helpers::has_args_splat(call) => (a, a.range()),
            _ => return,
        },
    };
    if !matches!(value, Expr::BooleanLiteral(b) if b.value) {
        return;
    }
    let Some(evals) = loader_used_only_for_evaluation(checker, &p, call) else {
        return;
    };
    report(checker, &p, at, value.range(), &evals);
}

fn report(
    checker: &mut Checker,
    p: &ProjectFile,
    at: TextRange,
    value: TextRange,
    evals: &[(FuncId, TextRange, String)],
) {
    let (first_func, first_at, _) = &evals[0];
    let place = site(p, first_func.file, *first_at);
    let message = format!(
        "`shuffle=True` on a loader used only for evaluation ({place}): metrics stay the same but the order of logged or saved batches, early-stopped evaluations and `drop_last` change from run to run; use `shuffle=False`"
    );
    let d = checker.report(at, message);
    for (f, r, note) in evals.iter().take(3) {
        if f.file == p.file {
            d.add_related(*r, note.clone());
        } else {
            d.add_remote(p, f.file, *r, note.clone());
        }
    }
    d.set_fix(RawFix::unsafe_edit(
        "Set `shuffle=False`",
        vec![RawEdit::replace(value, "False")],
    ));
}

use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::data_loading::helpers::{has_splat, loader_arg, loader_kind, Loader};
use crate::rules::style::values::{eval, with_frame, Value};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::{Ranged, TextRange};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for a shuffling `DataLoader` without a sampler built in a function (or script)
    /// that wraps the model in `DistributedDataParallel` / FSDP or initialises
    /// `torch.distributed`, or in a same-file helper such a function calls.
    ///
    /// ## Why is this bad?
    /// DDP synchronises gradients but does not split the data: that is the sampler's job.
    /// With `shuffle=True` and no `DistributedSampler`, each of the N processes iterates the
    /// whole dataset, so an "epoch" costs N times the work, the ranks' batches overlap, and
    /// the effective number of passes over the data is N times what the schedule assumes.
    ///
    /// Loaders that already have a `sampler=` / `batch_sampler=` (including
    /// `sampler=None if ... else DistributedSampler(...)` with `shuffle=(sampler is None)`),
    /// datasets sharded by rank (`split_dataset_by_node`, names mentioning the rank or a
    /// shard), and files that hand loaders to Accelerate or Lightning (which add the sampler
    /// themselves) stay silent. The rule is in preview: it takes `shuffle=True` as the sign of
    /// a training loader.
    ///
    /// ## Example
    /// ```python
    /// model = DDP(model, device_ids=[rank])
    /// loader = DataLoader(train_set, batch_size=32, shuffle=True)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model = DDP(model, device_ids=[rank])
    /// sampler = DistributedSampler(train_set)
    /// loader = DataLoader(train_set, batch_size=32, sampler=sampler)
    /// ```
    ///
    /// ## Fix safety
    /// The fix replaces `shuffle=True` with `sampler=DistributedSampler(<dataset>)` (which
    /// shuffles by default). It is unsafe: the sampler needs an initialised process group,
    /// changes the number of batches per epoch, and needs `set_epoch(epoch)` every epoch to
    /// reshuffle. It is offered only when the dataset is a plain name and `shuffle` a keyword.
    ///
    /// ## References
    /// - [DistributedDataParallel](https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html)
    /// - [DistributedSampler](https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler)
    /// - [AgatheSenellart/MultiVae#33](https://github.com/AgatheSenellart/MultiVae/issues/33)
    pub(crate) static DDP_WITHOUT_DISTRIBUTED_SAMPLER = {
        name: "ddp-without-distributed-sampler",
        code: "TV043",
        group: Distributed,
        severity: Warning,
        title: "DDP training DataLoader without DistributedSampler (every rank iterates the full dataset)",
        autofix: Suggest,
        preview: true,
        hooks: { call: check_call, end: check_end },
    };
}

/// Calls that make a function the setup of a distributed job.
const SETUP: &[&str] = &[
    "torch.distributed.init_process_group",
    "torch.distributed.distributed_c10d.init_process_group",
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_shard",
];

const SHARDED: &[&str] = &["rank", "shard", "split_dataset_by_node", "by_node", "node"];

struct Candidate {
    call: TextRange,
    function: Option<String>,
    setup: Option<TextRange>,
    message: String,
    fix: Option<RawFix>,
}

#[derive(Default)]
struct State {
    candidates: Vec<Candidate>,
    /// Setup call of each visited frame (by start).
    setups: super::rank_helpers::FrameCalls,
    /// Functions called by name from a setup frame, with the (first) call.
    called_from_setup: FxHashMap<String, TextRange>,
    /// The file mentions `DataLoader` at all (computed on the first call).
    relevant: Option<bool>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

fn frame_setup(checker: &Checker) -> Option<TextRange> {
    STATE.with_borrow_mut(|s| s.setups.first_call(checker, SETUP))
}

/// How to write `DistributedSampler` in the fix: a name bound to it, else through `torch`.
fn sampler_name(checker: &Checker) -> Option<String> {
    for q in [
        "torch.utils.data.DistributedSampler",
        "torch.utils.data.distributed.DistributedSampler",
    ] {
        if checker.name_is("DistributedSampler", q) {
            return Some("DistributedSampler".to_string());
        }
    }
    checker
        .module_alias("torch")
        .map(|t| format!("{t}.utils.data.distributed.DistributedSampler"))
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let relevant = STATE.with_borrow_mut(|s| {
        *s.relevant
            .get_or_insert_with(|| checker.source.text.contains("DataLoader"))
    });
    if !relevant {
        return;
    }
    match name.and_then(loader_kind) {
        Some(Loader::Torch) => check_loader(checker, call),
        Some(Loader::Subclass) => {}
        None => {
            // Calls by name from a setup frame (one level of helpers).
            if let (None, Expr::Name(n)) = (name, &*call.func) {
                if frame_setup(checker).is_some() {
                    let at = call.range();
                    STATE.with_borrow_mut(|s| {
                        s.called_from_setup.entry(n.id.to_string()).or_insert(at);
                    });
                }
            }
        }
    }
}

fn check_loader(checker: &mut Checker, call: &ExprCall) {
    let loader = Loader::Torch;
    if has_splat(call)
        || loader_arg(call, loader, "sampler").is_some()
        || loader_arg(call, loader, "batch_sampler").is_some()
    {
        return;
    }
    let Some(shuffle) = loader_arg(call, loader, "shuffle") else {
        return;
    };
    let shuffles = match helpers::is_truthy(shuffle) {
        Some(b) => b,
        None => with_frame(checker, |env| eval(checker, env, shuffle)) == Some(Value::Bool(true)),
    };
    if !shuffles {
        return;
    }
    let Some(dataset) = loader_arg(call, loader, "dataset") else {
        return;
    };
    let ds_text = checker.text(dataset.range());
    let lower = ds_text.to_ascii_lowercase();
    if SHARDED.iter().any(|s| lower.contains(s)) {
        return;
    }
    let setup = frame_setup(checker);
    let function = checker.function().map(|f| f.name.to_string());
    if setup.is_none() && function.is_none() {
        return;
    }
    let shown = if ds_text.len() <= 30 && !ds_text.contains('\n') {
        format!("`{ds_text}`")
    } else {
        "the dataset".to_string()
    };
    let message = format!(
        "this DataLoader shuffles {shown} without a DistributedSampler in a distributed job: every rank iterates the whole dataset, so each epoch does N times the work and the ranks train on overlapping batches"
    );
    let fix = match (
        call.arguments.find_keyword("shuffle"),
        matches!(dataset, Expr::Name(_) | Expr::Attribute(_)),
        sampler_name(checker),
    ) {
        (Some(kw), true, Some(sampler)) => Some(RawFix::unsafe_edit(
            format!("Replace `shuffle` with `sampler={sampler}({ds_text})`"),
            vec![RawEdit::replace(
                kw.range(),
                format!("sampler={sampler}({ds_text})"),
            )],
        )),
        _ => None,
    };
    STATE.with_borrow_mut(|s| {
        s.candidates.push(Candidate {
            call: call.func.range(),
            function,
            setup,
            message,
            fix,
        });
    });
}

/// Frameworks that add the distributed sampler themselves.
fn framework_owned(checker: &Checker) -> bool {
    checker.facts.any_call(|q| {
        ["accelerate.", "lightning.", "pytorch_lightning."]
            .iter()
            .any(|p| q.starts_with(p))
    }) || checker.facts.method_calls_of("prepare").iter().any(|c| {
        helpers::method_call(c)
            .is_some_and(|(_, r)| checker.text(r.range()).contains("accelerator"))
    })
}

fn check_end(checker: &mut Checker) {
    let state = STATE.with_borrow_mut(std::mem::take);
    if state.candidates.is_empty() || framework_owned(checker) {
        return;
    }
    for c in state.candidates {
        let related = match (c.setup, &c.function) {
            (Some(s), _) => Some((
                s,
                "the distributed setup: the job runs one process per rank",
            )),
            (None, Some(f)) => state.called_from_setup.get(f).map(|&r| {
                (
                    r,
                    "called here, in the function that sets up the distributed job",
                )
            }),
            (None, None) => None,
        };
        let Some((range, note)) = related else {
            continue;
        };
        let d = checker.report(c.call, c.message);
        d.add_related(range, note);
        if let Some(fix) = c.fix {
            d.set_fix(fix);
        }
    }
}

use super::rank_helpers::{enclosing_rank_guard, for_each_call};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `torch.save(...)` that every process of a distributed job runs: the save is
    /// in the function (or script) that sets up `torch.distributed` / wraps the model in
    /// `DistributedDataParallel`, or in a same-file helper that such a function calls, and no
    /// rank test (`if rank == 0:`, `if is_main_process():`, an early `if rank != 0: return`)
    /// guards it.
    ///
    /// ## Why is this bad?
    /// Under DDP every rank holds the same weights, so one copy is enough; yet each of the N
    /// processes writes the checkpoint to the same path at the same time. Besides N times the
    /// I/O, the concurrent writes can interleave and leave a truncated file that fails to load
    /// later ("storage has wrong size", "PytorchStreamReader failed").
    ///
    /// Saves whose path names the rank (per-rank shards), saves into in-memory buffers, and
    /// saves in functions named or decorated as main-process-only (`save_on_master`,
    /// `@rank_zero_only`) stay silent. The rule is in preview: whether a helper is only ever
    /// called on rank 0 is decided from the calls visible in the same file.
    ///
    /// ## Example
    /// ```python
    /// model = DDP(model, device_ids=[rank])
    /// for epoch in range(epochs):
    ///     train_one_epoch(model, loader)
    ///     torch.save(model.module.state_dict(), "ckpt.pth")
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model = DDP(model, device_ids=[rank])
    /// for epoch in range(epochs):
    ///     train_one_epoch(model, loader)
    ///     if dist.get_rank() == 0:
    ///         torch.save(model.module.state_dict(), "ckpt.pth")
    /// ```
    ///
    /// ## Fix safety
    /// The fix wraps the statement in `if dist.get_rank() == 0:`. It is unsafe: it assumes the
    /// process group is initialised whenever this line runs (`get_rank()` raises otherwise)
    /// and that readers of the file wait (e.g. at a barrier) before loading it.
    ///
    /// ## References
    /// - [Saving and loading models in DDP](https://pytorch.org/tutorials/intermediate/ddp_tutorial.html#save-and-load-checkpoints)
    /// - [bytedance/ibot#15](https://github.com/bytedance/ibot/issues/15)
    /// - [NVIDIA/apex#629](https://github.com/NVIDIA/apex/issues/629)
    pub(crate) static SAVE_CHECKPOINT_ON_ALL_RANKS = {
        name: "save-checkpoint-on-all-ranks",
        code: "TV069",
        group: Distributed,
        severity: Warning,
        title: "torch.save in a DDP script not guarded by rank==0 (all ranks write the same file)",
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
    "torch.utils.data.DistributedSampler",
    "torch.utils.data.distributed.DistributedSampler",
];

/// Parts of a path or function name that say "one per rank" or "main process only".
const RANK_SPECIFIC: &[&str] = &[
    "rank", "buf", "bytes", "stream", "gpu", "proc", "worker", "shard", "device", "local",
];
const MAIN_ONLY: &[&str] = &[
    "master",
    "main_process",
    "rank0",
    "rank_0",
    "rank_zero",
    "on_main",
    "is_main",
    "zero_only",
    "main_only",
];

/// A save waiting for the end of the file.
struct Candidate {
    call: TextRange,
    /// The function the save is in (`None`: module level), by name as it is called
    /// (`name` or `self.name`).
    function: Option<String>,
    /// The setup call of the save's own frame, when it has one.
    setup: Option<TextRange>,
    fix: Option<RawFix>,
    message: String,
}

#[derive(Default)]
struct State {
    candidates: Vec<Candidate>,
    /// Same-file functions containing a `torch.save` (by called name), computed lazily.
    savers: Option<Vec<String>>,
    /// Unguarded calls of savers from a frame with a distributed setup: callee -> (call range,
    /// setup range).
    calls: FxHashMap<String, (TextRange, TextRange)>,
    /// Setup call of each visited frame (by start offset).
    setups: super::rank_helpers::FrameCalls,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// The setup call of the current function (or module body), cached per frame.
fn frame_setup(checker: &Checker) -> Option<TextRange> {
    STATE.with_borrow_mut(|s| s.setups.first_call(checker, SETUP))
}

/// Functions (and `self.` methods) of the file that call `torch.save` directly.
fn savers(checker: &Checker) -> Vec<String> {
    let mut out = Vec::new();
    let has_save = |body: &[Stmt]| {
        let mut found = false;
        for_each_call(body, &mut |c| {
            found = found
                || checker
                    .resolve(&c.func)
                    .is_some_and(|q| torchvet_semantic::helpers::is_torch_save(&q));
        });
        found
    };
    for stmt in &checker.module().body {
        match stmt {
            Stmt::FunctionDef(f) if has_save(&f.body) => out.push(f.name.to_string()),
            Stmt::ClassDef(c) => {
                for s in &c.body {
                    if let Stmt::FunctionDef(f) = s {
                        if has_save(&f.body) {
                            out.push(format!("self.{}", f.name));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Does a callee name a function of the file (`name(...)`, or `self.name(...)` for
/// `self.name`)?
fn callee_is(func: &Expr, key: &str) -> bool {
    match func {
        Expr::Name(n) => n.id.as_str() == key,
        Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => {
            key.strip_prefix("self.") == Some(a.attr.as_str())
        }
        _ => false,
    }
}

/// Is the code being visited inside a function named or decorated as main-process-only?
fn in_main_only_function(checker: &Checker) -> bool {
    checker.frames().iter().filter_map(|f| f.function).any(|f| {
        let name = f.name.to_ascii_lowercase();
        MAIN_ONLY.iter().any(|m| name.contains(m))
            || f.decorator_list.iter().any(|d| {
                let target = match &d.expression {
                    Expr::Call(c) => &*c.func,
                    e => e,
                };
                helpers::dotted(target).is_some_and(|t| {
                    let t = t.to_ascii_lowercase();
                    MAIN_ONLY.iter().any(|m| t.contains(m))
                })
            })
    })
}

fn shown(text: &str) -> String {
    if text.len() <= 40 && !text.contains('\n') {
        format!("`{text}`")
    } else {
        "the checkpoint".to_string()
    }
}

/// `if dist.get_rank() == 0:` around the statement, when the call is a statement of its own.
fn guard_fix(checker: &Checker, call: &ExprCall) -> Option<RawFix> {
    let stmt = checker.current_stmt()?;
    let Stmt::Expr(e) = stmt else { return None };
    if e.value.range() != call.range() {
        return None;
    }
    let dist = if checker.name_is("dist", "torch.distributed") {
        "dist".to_string()
    } else {
        format!("{}.distributed", checker.module_alias("torch")?)
    };
    let indent = crate::fix::own_line_indent(checker, stmt.start())?;
    let body = checker.text(stmt.range());
    if body.contains("\"\"\"") || body.contains("'''") {
        return None;
    }
    let unit = if indent.contains('\t') { "\t" } else { "    " };
    let newline = crate::fix::newline(checker);
    let reindented = body
        .split('\n')
        .collect::<Vec<_>>()
        .join(&format!("\n{unit}"));
    Some(RawFix::unsafe_edit(
        format!("Save on rank 0 only (`if {dist}.get_rank() == 0:`)"),
        vec![RawEdit::replace(
            stmt.range(),
            format!("if {dist}.get_rank() == 0:{newline}{indent}{unit}{reindented}"),
        )],
    ))
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let is_save = name.is_some_and(torchvet_semantic::helpers::is_torch_save);
    if !is_save {
        // A call of a same-file function that saves, from a distributed frame.
        if !matches!(&*call.func, Expr::Name(_) | Expr::Attribute(_)) || name.is_some() {
            return;
        }
        let callee = STATE.with_borrow_mut(|s| {
            s.savers
                .get_or_insert_with(|| {
                    if checker.source.text.contains("save") {
                        savers(checker)
                    } else {
                        Vec::new()
                    }
                })
                .iter()
                .find(|k| callee_is(&call.func, k))
                .cloned()
        });
        let Some(callee) = callee else {
            return;
        };
        if enclosing_rank_guard(checker).is_some() || in_main_only_function(checker) {
            return;
        }
        if let Some(setup) = frame_setup(checker) {
            STATE.with_borrow_mut(|s| {
                s.calls.entry(callee).or_insert((call.range(), setup));
            });
        }
        return;
    }
    let Some(path) = helpers::argument(call, "f", 1) else {
        return;
    };
    let path_text = checker.text(path.range());
    let lower = path_text.to_ascii_lowercase();
    if RANK_SPECIFIC.iter().any(|r| lower.contains(r)) {
        return;
    }
    if enclosing_rank_guard(checker).is_some() || in_main_only_function(checker) {
        return;
    }
    let function = checker.function().map(|f| {
        if checker.frame().method_of.is_some() {
            format!("self.{}", f.name)
        } else {
            f.name.to_string()
        }
    });
    let setup = frame_setup(checker);
    let message = format!(
        "`{}(...)` runs on every rank of the distributed job: each process writes {} at the same time (N copies of the I/O, and interleaved writes can leave a corrupt file)",
        checker.text(call.func.range()),
        shown(path_text)
    );
    let fix = guard_fix(checker, call);
    STATE.with_borrow_mut(|s| {
        s.candidates.push(Candidate {
            call: call.range(),
            function,
            setup,
            fix,
            message,
        });
    });
}

fn check_end(checker: &mut Checker) {
    let state = STATE.with_borrow_mut(std::mem::take);
    for c in state.candidates {
        let related = match (c.setup, &c.function) {
            (Some(setup), _) => Some((setup, "the distributed setup every rank runs")),
            (None, Some(f)) => state
                .calls
                .get(f)
                .map(|&(call, _)| (call, "called here on every rank")),
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

use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::{Ranged, TextSize};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for NCCL process groups initialised in a file that never selects the GPU of the
    /// process: no `torch.cuda.set_device(...)`, no `torch.accelerator.set_device_index(...)`,
    /// no `device_id=` argument and no per-process `CUDA_VISIBLE_DEVICES`.
    ///
    /// ## Why is this bad?
    /// Every process starts on GPU 0. NCCL communicators, cached allocations and any tensor
    /// created with a bare `"cuda"` device then land on GPU 0 for all ranks: GPU 0 runs out of
    /// memory, the other GPUs idle, and collectives can hang because ranks disagree on their
    /// device. Selecting the device before `init_process_group` avoids all of this.
    ///
    /// The whole file is searched for the device selection, so a `set_device` in a helper of
    /// the same file counts. Files that call a `get_device`/`setup_device`-style helper, or
    /// use a framework that owns process setup (HF `Trainer`, Accelerate, Lightning,
    /// DeepSpeed, torchtune), stay silent. A backend given as a variable is only reported when
    /// the file otherwise uses CUDA. A group of one process (a literal `world_size=1`) has no
    /// other rank to share GPU 0 with and stays silent.
    ///
    /// ## Example
    /// ```python
    /// dist.init_process_group("nccl")
    /// model = DDP(model.to(rank), device_ids=[rank])
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// local_rank = int(os.environ["LOCAL_RANK"])
    /// torch.cuda.set_device(local_rank)
    /// dist.init_process_group("nccl")
    /// ```
    ///
    /// ## Fix safety
    /// The fix inserts `torch.cuda.set_device(...)` before the call, and is unsafe: it assumes
    /// that one process drives one GPU. The device index depends on how the file starts its
    /// processes. A function started by `torch.multiprocessing.spawn(fn, ...)` receives its
    /// process index as its first argument (spawn sets no `LOCAL_RANK`), so the fix passes
    /// that parameter (`torch.cuda.set_device(rank)`). With no process start in the file, the
    /// script is taken to be started by `torchrun`, which sets `LOCAL_RANK`, and the fix
    /// inserts `torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))` (offered only when `os`
    /// is imported). When processes are started another way (`mp.Process`, a spawn of a
    /// function other than the one that initialises the group), no fix is offered. It is
    /// offered only when `torch` is imported and the call is a statement of its own.
    ///
    /// ## References
    /// - [torch.cuda.set_device](https://pytorch.org/docs/stable/generated/torch.cuda.set_device.html)
    /// - [torch.distributed.init_process_group](https://pytorch.org/docs/stable/distributed.html#torch.distributed.init_process_group)
    /// - [pytorch/examples#1142](https://github.com/pytorch/examples/pull/1142)
    pub(crate) static DDP_MISSING_SET_DEVICE = {
        name: "ddp-missing-set-device",
        code: "TV064",
        group: Distributed,
        severity: Warning,
        title: "NCCL process group initialised without torch.cuda.set_device(local_rank)",
        autofix: Yes,
        hooks: { end: check_end },
    };
}

const INIT: &[&str] = &[
    "torch.distributed.init_process_group",
    "torch.distributed.distributed_c10d.init_process_group",
];

const SELECTS_DEVICE: &[&str] = &[
    "torch.cuda.set_device",
    "torch.cuda.device",
    "torch.accelerator.set_device_index",
    "torch.xpu.set_device",
    "torch.npu.set_device",
];

/// What the backend argument says.
enum Backend {
    Nccl,
    Other,
    Unknown,
}

fn backend(call: &ExprCall) -> Backend {
    let Some(b) = helpers::argument(call, "backend", 0) else {
        return Backend::Other;
    };
    match b {
        Expr::StringLiteral(s) => {
            if s.value.to_str().to_ascii_lowercase().contains("nccl") {
                Backend::Nccl
            } else {
                Backend::Other
            }
        }
        Expr::NoneLiteral(_) => Backend::Other,
        Expr::Attribute(a) if a.attr.as_str() == "NCCL" => Backend::Nccl,
        _ => Backend::Unknown,
    }
}

fn check_end(checker: &mut Checker) {
    let inits: Vec<&ExprCall> = INIT
        .iter()
        .flat_map(|q| checker.facts.calls_of(q).iter().copied())
        .collect();
    if inits.is_empty() {
        return;
    }
    let selects = SELECTS_DEVICE
        .iter()
        .any(|q| !checker.facts.calls_of(q).is_empty())
        || ["set_device", "set_device_index", "cuda_set_device"]
            .iter()
            .any(|m| !checker.facts.method_calls_of(m).is_empty())
        || checker
            .facts
            .any_call(|q| helpers::last_segment(q) == "set_device")
        || checker.source.text.contains("CUDA_VISIBLE_DEVICES")
        || delegates_device_setup(checker);
    if selects {
        return;
    }
    let uses_cuda = !checker.facts.method_calls_of("cuda").is_empty()
        || checker.facts.any_call(|q| q.starts_with("torch.cuda."));
    let torch = bound_alias(checker, "torch");
    let os = bound_alias(checker, "os");
    let launch = launch(checker);
    for call in inits {
        if helpers::keyword(call, "device_id").is_some() || helpers::has_kwargs_splat(call) {
            continue;
        }
        // `world_size=1`: one process (often only to make `SyncBatchNorm` usable on one GPU),
        // so there are no ranks to crowd onto GPU 0 and no peer to hang with.
        if helpers::argument(call, "world_size", 3).and_then(helpers::int_value) == Some(1) {
            continue;
        }
        let spawned =
            matches!(&launch, Launch::Spawn(t) if spawned_rank(checker, call, t).is_some());
        if !spawned && in_helper_for_other_files(checker, call) {
            continue;
        }
        let which = match backend(call) {
            Backend::Nccl => "the NCCL process group",
            Backend::Unknown if uses_cuda => "the process group (backend chosen at run time)",
            _ => continue,
        };
        let indent = statement_indent(checker, call.start());
        // Which expression holds the process's GPU index: the spawned function's first
        // parameter under `mp.spawn` (which sets no LOCAL_RANK), else torchrun's LOCAL_RANK;
        // nothing when the file starts processes some other way.
        let device = match launch {
            Launch::Spawn(ref targets) => spawned_rank(checker, call, targets),
            Launch::Torchrun => os
                .as_ref()
                .map(|os| format!("int({os}.environ[\"LOCAL_RANK\"])")),
            Launch::Other => None,
        };
        let diagnostic = checker.report(
            call.func.range(),
            format!("{which} is initialised but this file never calls `torch.cuda.set_device(local_rank)`: every rank starts on GPU 0 (extra memory there, possible NCCL hangs)"),
        );
        if let (Some(torch), Some(device), Some(indent)) = (&torch, device, indent) {
            diagnostic.set_fix(RawFix::unsafe_edit(
                format!("Insert `torch.cuda.set_device({device})` before the call"),
                vec![RawEdit::insert(
                    call.start(),
                    format!("{torch}.cuda.set_device({device})\n{indent}"),
                )],
            ));
        }
    }
}

/// How the file starts its processes, as far as the fix needs to know.
enum Launch {
    /// `torch.multiprocessing.spawn(fn, ...)` / `start_processes(fn, ...)`: the names of the
    /// spawned functions (the process index is their first argument; no LOCAL_RANK is set).
    Spawn(Vec<String>),
    /// No process start in sight: a launcher such as torchrun sets LOCAL_RANK.
    Torchrun,
    /// Processes started some other way (`mp.Process(target=...)`, a spawn target that is not
    /// a plain name): where the GPU index comes from is unknown.
    Other,
}

const SPAWNS: &[&str] = &[
    "torch.multiprocessing.spawn",
    "torch.multiprocessing.start_processes",
    "torch.multiprocessing.spawn.spawn",
    "torch.multiprocessing.spawn.start_processes",
];

fn launch(checker: &Checker) -> Launch {
    let spawns: Vec<&ExprCall> = SPAWNS
        .iter()
        .flat_map(|q| checker.facts.calls_of(q).iter().copied())
        .collect();
    let processes = checker
        .facts
        .any_call(|q| q.ends_with("multiprocessing.Process") || q.ends_with("mp.Process"));
    if spawns.is_empty() {
        return if processes {
            Launch::Other
        } else {
            Launch::Torchrun
        };
    }
    let mut targets = Vec::new();
    for call in spawns {
        match helpers::argument(call, "fn", 0).and_then(helpers::name_of) {
            Some(name) => targets.push(name.to_string()),
            None => return Launch::Other,
        }
    }
    Launch::Spawn(targets)
}

/// Under `mp.spawn`: the first parameter of the spawned function that holds the init call
/// (spawn passes the process index there, whatever its name), when it is a plain positional
/// parameter. `None` when the init call is not directly inside a spawned function.
fn spawned_rank(checker: &Checker, call: &ExprCall, targets: &[String]) -> Option<String> {
    use ruff_python_ast::Stmt;
    fn innermost(
        body: &[Stmt],
        at: ruff_text_size::TextRange,
    ) -> Option<&ruff_python_ast::StmtFunctionDef> {
        for stmt in body {
            if !stmt.range().contains_range(at) {
                continue;
            }
            return match stmt {
                Stmt::FunctionDef(f) => innermost(&f.body, at).or(Some(f)),
                Stmt::ClassDef(c) => innermost(&c.body, at),
                _ => None,
            };
        }
        None
    }
    let f = innermost(&checker.module().body, call.range())?;
    if !targets.iter().any(|t| t == f.name.as_str()) {
        return None;
    }
    let p = f
        .parameters
        .posonlyargs
        .first()
        .or(f.parameters.args.first())?;
    let name = p.parameter.name.as_str();
    (p.default.is_none() && name != "self" && name != "cls").then(|| name.to_string())
}

/// Device selection that may happen out of sight: helpers named like `get_device` /
/// `setup_device` (torchtune's `get_device` calls `set_device`), and frameworks that own the
/// process setup (HF Trainer, Accelerate, Lightning, DeepSpeed, torchtune).
fn delegates_device_setup(checker: &Checker) -> bool {
    const HELPERS: &[&str] = &[
        "get_device",
        "setup_device",
        "init_device",
        "init_distributed_device",
    ];
    const FRAMEWORKS: &[&str] = &[
        "deepspeed",
        "accelerate",
        "lightning",
        "pytorch_lightning",
        "torchtune",
        "trl",
    ];
    HELPERS
        .iter()
        .any(|m| !checker.facts.method_calls_of(m).is_empty())
        || checker.facts.any_call(|q| {
            HELPERS.contains(&helpers::last_segment(q))
                || FRAMEWORKS
                    .iter()
                    .any(|f| q.starts_with(f) && q[f.len()..].starts_with('.'))
                || (q.starts_with("transformers.") && q.ends_with("Trainer"))
        })
        || ["deepspeed", "accelerate", "Trainer", "Accelerator"]
            .iter()
            .any(|n| {
                checker.scopes.lookup(n).is_some_and(|q| {
                    FRAMEWORKS.iter().any(|f| q.starts_with(f)) || q.starts_with("transformers.")
                })
            })
}

/// The name a module is imported as at module level (`import torch as th` -> `th`).
fn bound_alias(checker: &Checker, module: &str) -> Option<String> {
    checker.name_is(module, module).then(|| module.to_string())
}

/// The indentation of the line `offset` starts a statement on, when only whitespace precedes
/// it (the call is the statement).
fn statement_indent(checker: &Checker, offset: TextSize) -> Option<String> {
    crate::fix::own_line_indent(checker, offset).map(str::to_string)
}

/// Is the init call inside a function this file never calls (nor spawns) (`def setup():
/// dist.init_process_group("nccl")` in a utilities module)? Its callers live in other files,
/// which are the ones that select the device.
fn in_helper_for_other_files(checker: &Checker, call: &ExprCall) -> bool {
    use ruff_python_ast::Stmt;
    use ruff_text_size::Ranged;
    fn enclosing(body: &[Stmt], at: ruff_text_size::TextRange) -> Option<&str> {
        for stmt in body {
            if !stmt.range().contains_range(at) {
                continue;
            }
            return match stmt {
                Stmt::FunctionDef(f) => enclosing(&f.body, at).or(Some(f.name.as_str())),
                Stmt::ClassDef(c) => enclosing(&c.body, at),
                _ => None,
            };
        }
        None
    }
    let Some(name) = enclosing(&checker.module().body, call.range()) else {
        return false;
    };
    let text = checker.source.text.as_bytes();
    let needle = format!("{name}(");
    let calls = memchr::memmem::find_iter(text, needle.as_bytes())
        .filter(|&i| {
            let before = &text[..i];
            // Not the definition itself, and not the tail of a longer name.
            !before.ends_with(b"def ")
                && before
                    .last()
                    .is_none_or(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
        })
        .count();
    calls == 0
}

#[cfg(test)]
mod tests {

    fn count(src: &str) -> usize {
        crate::test_support::count_findings("ddp-missing-set-device", src)
    }

    #[test]
    fn a_device_selection_anywhere_in_the_file_silences() {
        let init = "import os\nimport torch\nimport torch.distributed as dist\ndef setup():\n    dist.init_process_group('nccl')\nsetup()\n";
        assert_eq!(count(init), 1);
        // A helper this file never calls is set up by its callers (other files).
        assert_eq!(
            count("import torch.distributed as dist\ndef setup():\n    dist.init_process_group('nccl')\n"),
            0
        );
        assert_eq!(
            count(&format!(
                "{init}def pick(r):\n    torch.cuda.set_device(r)\n"
            )),
            0
        );
        assert_eq!(
            count(&format!("{init}with torch.cuda.device(0):\n    pass\n")),
            0
        );
        assert_eq!(
            count(&format!(
                "{init}os.environ['CUDA_VISIBLE_DEVICES'] = str(0)\n"
            )),
            0
        );
    }

    fn fix_of(src: &str) -> Option<String> {
        use torchvet_python::SourceFile;
        let linter = crate::Linter::new(crate::LintSettings::only("ddp-missing-set-device"));
        let file = SourceFile::from_python("train.py", src.to_string());
        let diagnostics = linter.lint(&file, "train.py");
        assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
        diagnostics[0]
            .fix
            .as_ref()
            .map(|f| f.edits.iter().map(|e| e.content.clone()).collect())
    }

    #[test]
    fn the_fix_uses_the_rank_the_launcher_gives() {
        let head = "import os\nimport torch\nimport torch.distributed as dist\nimport torch.multiprocessing as mp\n";
        // torchrun: LOCAL_RANK.
        assert_eq!(
            fix_of(&format!("{head}def main():\n    dist.init_process_group('nccl')\n    torch.zeros(1).cuda()\nmain()\n")).as_deref(),
            Some("torch.cuda.set_device(int(os.environ[\"LOCAL_RANK\"]))\n    ")
        );
        // mp.spawn: the spawned function's first parameter (spawn sets no LOCAL_RANK).
        assert_eq!(
            fix_of(&format!("{head}def worker(proc_idx, args, tmp):\n    dist.init_process_group(backend='nccl', rank=proc_idx, world_size=args.n)\nif __name__ == '__main__':\n    mp.spawn(fn=worker, args=(a, t), nprocs=n)\n")).as_deref(),
            Some("torch.cuda.set_device(proc_idx)\n    ")
        );
        // The group is set up in a helper the spawned function calls: no fix.
        assert_eq!(
            fix_of(&format!("{head}def setup(r):\n    dist.init_process_group('nccl', rank=r)\ndef worker(r):\n    setup(r)\nmp.spawn(worker, nprocs=2)\n")),
            None
        );
        // Processes started with mp.Process: no fix.
        assert_eq!(
            fix_of(&format!("{head}def worker(r):\n    dist.init_process_group('nccl', rank=r)\nif n == 1:\n    worker(0)\nelse:\n    p = mp.Process(target=worker, args=(1,))\n")),
            None
        );
    }

    #[test]
    fn runtime_backend_without_cuda_is_silent() {
        // A run-time backend without other CUDA use stays silent.
        assert_eq!(
            count("import torch.distributed as dist\ndist.init_process_group(backend)\n"),
            0
        );
    }
}

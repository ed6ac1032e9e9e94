use crate::checker::Checker;
use crate::fix::{add_keyword_argument, RawFix};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `torch.load(path)` without `map_location` in files that also select the
    /// device at run time (`torch.cuda.is_available()`) or run distributed training.
    ///
    /// ## Why is this bad?
    /// `torch.load` restores every tensor onto the device it was saved from. A checkpoint
    /// written on a GPU then fails to load on a CPU-only machine ("Attempting to deserialize
    /// object on a CUDA device"), and under DDP every rank loads onto `cuda:0`, filling GPU 0
    /// with copies. Code that supports both cases should say where tensors go.
    ///
    /// A bare load in one arm of an `if` whose other arm loads the same path with
    /// `map_location` (`if args.gpu is None: torch.load(p) else: torch.load(p,
    /// map_location=loc)`) is a deliberate choice of the default for that case and is not
    /// reported. Nor are: a load of a path the same file saves (when the reason is the CPU
    /// fallback: the process that loads it saved it, on the same machine); a per-rank file
    /// (`"queue" + str(rank) + ".pth"`, read back by the rank that wrote it) under DDP; and a
    /// file whose only `torch.cuda.is_available()` is asserted (CUDA-only code has no CPU
    /// fallback).
    ///
    /// This rule is in preview (off by default; `--preview`, or select it by name): whether a
    /// project really loads GPU-saved checkpoints on CPU-only machines or under DDP is a
    /// deployment fact the code rarely states. On five rounds of untuned audits of real
    /// repositories (2026-11), about half of its findings were judged right.
    ///
    /// ## Example
    /// ```python
    /// device = "cuda" if torch.cuda.is_available() else "cpu"
    /// model.load_state_dict(torch.load(path, weights_only=True))
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// device = "cuda" if torch.cuda.is_available() else "cpu"
    /// model.load_state_dict(torch.load(path, map_location=device, weights_only=True))
    /// ```
    ///
    /// ## Fix safety
    /// The fix adds `map_location="cpu"`. Loaded tensors then live on the CPU, which is what
    /// `load_state_dict` needs, but code that uses them directly on the GPU would need a
    /// `.to(device)`, so the fix is unsafe.
    ///
    /// ## References
    /// - [torch.load](https://pytorch.org/docs/stable/generated/torch.load.html)
    /// - [Cutie issue 37](https://github.com/hkchengrex/Cutie/issues/37)
    /// - [apex issue 222](https://github.com/NVIDIA/apex/issues/222)
    pub(crate) static TORCH_LOAD_WITHOUT_MAP_LOCATION = {
        name: "torch-load-without-map-location",
        code: "TV084",
        group: Correctness,
        severity: Warning,
        title: "torch.load without map_location in code that also runs on CPU or under DDP",
        autofix: Yes,
        preview: true,
        hooks: { call: check_call, end: check_end },
    };
}

/// A bare load, with the facts of its own place; the file-wide reasons (a CPU fallback, DDP)
/// are known only at the file's end.
struct Candidate {
    /// The `torch.load(...)` call.
    call: ruff_text_size::TextRange,
    /// Its path names the process rank: each rank reads back the file it wrote.
    per_rank: bool,
    /// The project model pairs it, by path, with a save of the same file.
    saved_here: bool,
}

thread_local! {
    static PENDING: std::cell::RefCell<Vec<Candidate>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if !name.is_some_and(helpers::is_torch_load) {
        return;
    }
    if helpers::argument(call, "map_location", 1).is_some()
        || helpers::has_kwargs_splat(call)
        || helpers::has_args_splat(call)
    {
        return;
    }
    // `scheduler.load_state_dict(torch.load(".../scheduler.pt"))`: an LR scheduler's state
    // is plain numbers (epoch counters, base learning rates), no tensors to place.
    if into_scheduler(checker, call) {
        return;
    }
    let candidate = Candidate {
        call: call.range(),
        per_rank: per_rank_path(checker, call),
        saved_here: saved_here(checker, call),
    };
    PENDING.with_borrow_mut(|p| p.push(candidate));
}

/// Is the load the argument of `<x>.load_state_dict(...)` where `x` is an LR scheduler?
fn into_scheduler(checker: &mut Checker, call: &ExprCall) -> bool {
    let Some(Expr::Call(parent)) = checker.parent_expr() else {
        return false;
    };
    let Some(("load_state_dict", recv)) = helpers::method_call(parent) else {
        return false;
    };
    if parent.arguments.args.first().map(Ranged::range) != Some(call.range()) {
        return false;
    }
    matches!(checker.kind_of(recv), Kind::Scheduler(_))
}

fn check_end(checker: &mut Checker) {
    let pending = PENDING.with_borrow_mut(std::mem::take);
    if pending.is_empty() {
        return;
    }
    let facts = &checker.facts;
    // `torch.cuda.is_available()` chooses a device (a CPU fallback), unless it is asserted:
    // `assert torch.cuda.is_available()` makes the file CUDA-only.
    let asserts = assert_tests(&checker.module().body);
    let cpu_fallback = facts
        .calls_of("torch.cuda.is_available")
        .iter()
        .any(|c| !asserts.iter().any(|r| r.contains_range(c.range())));
    let distributed = [
        "torch.distributed.init_process_group",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
    ]
    .iter()
    .any(|q| !facts.calls_of(q).is_empty());
    if !cpu_fallback && !distributed {
        return;
    }
    let why = if distributed {
        "under DDP every rank loads the tensors onto the GPU they were saved from (usually cuda:0)"
    } else {
        "a checkpoint saved on a GPU fails to load on a CPU-only machine, which this file supports"
    };
    let calls: Vec<_> = helpers::TORCH_LOADS
        .iter()
        .flat_map(|q| checker.facts.calls_of(q).iter().copied())
        .collect();
    let main_only = if distributed {
        main_rank_blocks(&checker.module().body)
    } else {
        Vec::new()
    };
    for c in pending {
        let Some(&call) = calls.iter().find(|k| k.range() == c.call) else {
            continue;
        };
        // Under `if rank in [-1, 0]:` only one process loads, and a per-rank file
        // (`"queue" + str(args.rank) + ".pth"`) is read back by the rank that wrote it from
        // its own GPU: the DDP reason does not hold.
        let why = if distributed
            && (main_only.iter().any(|r| r.contains_range(call.range())) || c.per_rank)
        {
            if !cpu_fallback {
                continue;
            }
            "a checkpoint saved on a GPU fails to load on a CPU-only machine, which this file supports"
        } else {
            why
        };
        // The CPU reason only: this file writes the path itself (`torch.save(model, path)` and
        // later `torch.load(path)`, the test of a training script): the process that loads
        // it is the one that saved it, on the same machine.
        if !distributed && c.saved_here {
            continue;
        }
        // `if args.gpu is None: torch.load(p) else: torch.load(p, map_location=loc)`: the
        // author chose where each case loads; the bare arm is a deliberate default.
        if sibling_arm_maps(checker, call, &calls) {
            continue;
        }
        checker
            .report(
                call.func.range(),
                format!("`torch.load` without `map_location` restores tensors onto the device they were saved from: {why}"),
            )
            .set_fix(RawFix::unsafe_edit(
                "Add `map_location=\"cpu\"`",
                vec![add_keyword_argument(call, "map_location=\"cpu\"")],
            ));
    }
}

/// The test expressions of the file's `assert` statements.
fn assert_tests(body: &[ruff_python_ast::Stmt]) -> Vec<ruff_text_size::TextRange> {
    use ruff_python_ast::visitor::{self, Visitor};
    use ruff_python_ast::Stmt;
    struct V(Vec<ruff_text_size::TextRange>);
    impl<'a> Visitor<'a> for V {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            if let Stmt::Assert(a) = stmt {
                self.0.push(a.test.range());
            }
            visitor::walk_stmt(self, stmt);
        }
    }
    let mut v = V(Vec::new());
    v.visit_body(body);
    v.0
}

/// Does the project model pair the load, by its path (or as the load helper of the file's
/// save helper), with a `torch.save` of the same file?
fn saved_here(checker: &Checker, call: &ExprCall) -> bool {
    use torchvet_semantic::project::facts::PairBy;
    let Some(info) = crate::rules::facts::load_info(checker, call) else {
        return false;
    };
    info.pairs.iter().any(|ps| {
        matches!(ps.by, PairBy::Path | PairBy::Helper) && ps.func.file == info.project.file
    })
}

/// Does the load's path name the process rank (`f"ckpt_rank{rank}.pt"`, or a local assigned
/// such a path in the function): each rank reads the file it wrote itself?
fn per_rank_path(checker: &Checker, call: &ExprCall) -> bool {
    use ruff_python_ast::Stmt;
    let Some(path) = call.arguments.args.first() else {
        return false;
    };
    let names_rank = |e: &Expr| {
        helpers::any_identifier(e, &|name| {
            matches!(name, "rank" | "local_rank" | "global_rank")
        })
    };
    if names_rank(path) {
        return true;
    }
    let Some(var) = helpers::name_of(path) else {
        return false;
    };
    let body = match checker.function() {
        Some(f) => &f.body[..],
        None => &checker.module().body[..],
    };
    let mut assigned_rank = false;
    helpers::for_each_own_stmt(body, &mut |s| {
        if let Stmt::Assign(a) = s {
            if a.start() < call.start()
                && a.targets.iter().any(|t| helpers::name_of(t) == Some(var))
            {
                assigned_rank = names_rank(&a.value);
            }
        }
    });
    assigned_rank
}

/// Is `call` in one arm of an `if` whose other arm loads the same path with `map_location`?
fn sibling_arm_maps(
    checker: &Checker,
    call: &ruff_python_ast::ExprCall,
    loads: &[&ruff_python_ast::ExprCall],
) -> bool {
    use ruff_python_ast::Stmt;
    use ruff_text_size::TextRange;
    let Some(path) = call.arguments.args.first() else {
        return false;
    };
    let path = checker.text(path.range());
    let span = |body: &[Stmt]| match (body.first(), body.last()) {
        (Some(a), Some(b)) => Some(TextRange::new(a.start(), b.end())),
        _ => None,
    };
    enclosing_ifs(&checker.module().body, call.range())
        .iter()
        .any(|i| {
            let arms: Vec<TextRange> = std::iter::once(span(&i.body))
                .chain(i.elif_else_clauses.iter().map(|c| span(&c.body)))
                .flatten()
                .collect();
            let Some(own) = arms.iter().position(|r| r.contains_range(call.range())) else {
                return false;
            };
            loads.iter().any(|other| {
                helpers::argument(other, "map_location", 1).is_some()
                    && other
                        .arguments
                        .args
                        .first()
                        .map(|a| checker.text(a.range()))
                        == Some(path)
                    && arms
                        .iter()
                        .enumerate()
                        .any(|(k, r)| k != own && r.contains_range(other.range()))
            })
        })
}

/// The `if` statements (any depth, nested definitions included) that contain `at`.
fn enclosing_ifs(
    body: &[ruff_python_ast::Stmt],
    at: ruff_text_size::TextRange,
) -> Vec<&ruff_python_ast::StmtIf> {
    use ruff_python_ast::visitor::{self, Visitor};
    use ruff_python_ast::Stmt;
    struct V<'a> {
        at: ruff_text_size::TextRange,
        out: Vec<&'a ruff_python_ast::StmtIf>,
    }
    impl<'a> Visitor<'a> for V<'a> {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            if !stmt.range().contains_range(self.at) {
                return;
            }
            if let Stmt::If(i) = stmt {
                self.out.push(i);
            }
            visitor::walk_stmt(self, stmt);
        }
    }
    let mut v = V {
        at,
        out: Vec::new(),
    };
    v.visit_body(body);
    v.out
}

/// The bodies of `if <test>:` blocks (anywhere in the file) whose test selects the main
/// process only (`if rank in [-1, 0]:`, `if is_main_process():`).
fn main_rank_blocks(body: &[ruff_python_ast::Stmt]) -> Vec<ruff_text_size::TextRange> {
    use crate::rules::distributed::rank_helpers::{is_rank_test, polarity, Polarity};
    use ruff_python_ast::visitor::{self, Visitor};
    use ruff_python_ast::Stmt;
    use ruff_text_size::{Ranged, TextRange};
    struct V(Vec<TextRange>);
    impl<'a> Visitor<'a> for V {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            if let Stmt::If(i) = stmt {
                if is_rank_test(&i.test) && polarity(&i.test) == Polarity::Main {
                    if let (Some(first), Some(last)) = (i.body.first(), i.body.last()) {
                        self.0.push(TextRange::new(first.start(), last.end()));
                    }
                }
            }
            visitor::walk_stmt(self, stmt);
        }
    }
    let mut v = V(Vec::new());
    v.visit_body(body);
    v.0
}

#[cfg(test)]
mod tests {

    fn count(src: &str) -> usize {
        crate::test_support::count_findings("torch-load-without-map-location", src)
    }

    #[test]
    fn cuda_only_files_per_rank_files_and_files_saved_here_stay_silent() {
        let fallback = "import torch\ndevice = 'cuda' if torch.cuda.is_available() else 'cpu'\n";
        assert_eq!(
            count(&format!("{fallback}state = torch.load('model.pt')\n")),
            1
        );
        // `assert torch.cuda.is_available()`: CUDA-only, no CPU fallback.
        assert_eq!(
            count(
                "import torch\nassert torch.cuda.is_available()\nstate = torch.load('model.pt')\n"
            ),
            0
        );
        // The file saves the path it loads (train, then test the saved model).
        assert_eq!(
            count(&format!(
                "{fallback}def run(model, args):\n    torch.save(model, args.save)\n    model = torch.load(args.save)\n"
            )),
            0
        );
        // Under DDP, each rank reads back the file it wrote from its own GPU.
        let ddp = "import os\nimport torch\nimport torch.distributed as dist\ndist.init_process_group('nccl')\n";
        assert_eq!(count(&format!("{ddp}state = torch.load('last.pt')\n")), 1);
        assert_eq!(
            count(&format!(
                "{ddp}def restore(args):\n    queue_path = os.path.join(args.dump, 'queue' + str(args.rank) + '.pth')\n    return torch.load(queue_path)['queue']\n"
            )),
            0
        );
        // File handles: `with open(path) as f` stands for `path`; another file opened under
        // the same handle name is another checkpoint.
        assert_eq!(
            count(&format!(
                "{fallback}def run(model, args):\n    with open(args.save, 'wb') as f:\n        torch.save(model, f)\n    with open(args.save, 'rb') as f:\n        model = torch.load(f)\n"
            )),
            0
        );
        assert_eq!(
            count(&format!(
                "{fallback}def run(prior, args):\n    with open(args.model, 'rb') as f:\n        sd = torch.load(f)\n    with open(args.out, 'wb') as f:\n        torch.save(prior.state_dict(), f)\n"
            )),
            1
        );
        // A temporary file written and read back under one `with`.
        assert_eq!(
            count(&format!(
                "{fallback}import tempfile\ndef roundtrip(m):\n    with tempfile.NamedTemporaryFile() as f:\n        torch.save(m.state_dict(), f)\n        f.seek(0)\n        return torch.load(f)\n"
            )),
            0
        );
        // `Path(dir).joinpath(..., name)` and `dir / NAME` are paths like `os.path.join`.
        assert_eq!(
            count(&format!(
                "{fallback}from pathlib import Path\ndef save(ck, root):\n    torch.save(ck, Path(root).joinpath('fold_0', 'best.pth'))\ndef load(root):\n    return torch.load(Path(root).joinpath('fold_0', 'best.pth'))\n"
            )),
            0
        );
        assert_eq!(
            count(&format!(
                "{fallback}from pathlib import Path\nNAME = 'model_1.pth'\nSAVE_PATH = Path('models') / NAME\ntorch.save(model.state_dict(), f=SAVE_PATH)\nmodel.load_state_dict(torch.load(SAVE_PATH))\n"
            )),
            0
        );
        // A saved path under DDP still loads onto the saving GPU on every rank.
        assert_eq!(
            count(&format!(
                "{ddp}def run(model):\n    torch.save(model.state_dict(), 'last.pt')\n    model.load_state_dict(torch.load('last.pt'))\n"
            )),
            1
        );
    }
}

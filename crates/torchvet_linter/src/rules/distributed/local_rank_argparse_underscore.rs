use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for argparse options `--local_rank` defined without the `--local-rank`
    /// spelling, in scripts that use `torch.distributed`.
    ///
    /// ## Why is this bad?
    /// The legacy launcher `python -m torch.distributed.launch` passes the local rank to every
    /// process as a command-line option. Since torch 2.0 it passes `--local-rank=N` (with a
    /// hyphen); a parser that only knows `--local_rank` stops every process with
    /// `error: unrecognized arguments: --local-rank=0`. Accepting both spellings keeps the
    /// script working with old and new launchers; reading the `LOCAL_RANK` environment
    /// variable (set by `torchrun`) avoids the option altogether.
    ///
    /// A program that takes its rank from the `LOCAL_RANK` environment variable (read in any
    /// file of the project: it is started with `torchrun` or `torch.distributed.launch
    /// --use_env`, which pass no option) and never reads the parsed `.local_rank` (not in the
    /// file, and nowhere in the project on a value another file can hand over: a parameter,
    /// `self.args`, a module-level name) keeps the option as an unused leftover: not flagged,
    /// unless the option's help names the legacy launcher (`help="set by
    /// torch.distributed.launch"`). A help that only says the value is filled in
    /// (`"Automatic DDP Multi-GPU argument, do not modify"`) names no launcher. The leftover is
    /// flagged when a script or document of the project (a shell or job script, a README, a
    /// Makefile), or the file's own usage docstring, starts this file, by its name, with
    /// `python -m torch.distributed.launch` without `--use_env`: that launcher sets
    /// `LOCAL_RANK` as well, so reading the variable does not show how the program is started,
    /// and it still passes the option (the commands are read as text, never run).
    ///
    /// A program that the project's scripts and documents, or its own usage docstring, start
    /// only with `torchrun`, `python -m torch.distributed.run` or `torch.distributed.launch
    /// --use_env` is not flagged: those launchers pass no rank option, so parsing never
    /// meets `--local-rank`.
    ///
    /// Scripts that use DeepSpeed, or name it at all (a backend loaded with
    /// `importlib.import_module("deepspeed")`), are left alone: its launcher passes
    /// `--local_rank`.
    ///
    /// ## Example
    /// ```python
    /// parser.add_argument("--local_rank", type=int, default=0)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// parser.add_argument(
    ///     "--local-rank", "--local_rank", type=int, default=int(os.environ.get("LOCAL_RANK", 0))
    /// )
    /// ```
    ///
    /// ## Fix safety
    /// The fix adds `"--local-rank"` as the first option string. argparse derives the
    /// destination from the first long option with hyphens turned into underscores, so the
    /// value is still stored as `args.local_rank`, and `--local_rank` keeps working: safe.
    ///
    /// ## References
    /// - [torch.distributed.launch: `--local-rank` (changed in 2.0)](https://pytorch.org/docs/stable/distributed.html#launch-utility)
    /// - [torchrun](https://pytorch.org/docs/stable/elastic/run.html)
    /// - [huggingface/pytorch-image-models#1724](https://github.com/huggingface/pytorch-image-models/issues/1724)
    pub(crate) static LOCAL_RANK_ARGPARSE_UNDERSCORE = {
        name: "local-rank-argparse-underscore",
        code: "TV013",
        group: Distributed,
        severity: Critical,
        title: "argparse defines only --local_rank (torch>=2.0 launcher passes --local-rank)",
        autofix: Yes,
        hooks: { end: check_end },
    };
}

/// Does the file use torch.distributed (or DDP)?
fn uses_distributed(checker: &Checker) -> bool {
    checker.facts.any_call(|q| {
        q.starts_with("torch.distributed.")
            || q.starts_with("torch.nn.parallel.DistributedDataParallel")
            || q.starts_with("torch.nn.parallel.distributed.")
    })
}

fn check_end(checker: &mut Checker) {
    if !checker.torch_at_least(2, 0) {
        return;
    }
    let candidates: Vec<&ExprCall> = checker
        .facts
        .method_calls_of("add_argument")
        .iter()
        .copied()
        .filter(|c| {
            c.arguments
                .args
                .iter()
                .any(|a| helpers::str_value(a) == Some("--local_rank"))
        })
        .collect();
    if candidates.is_empty() || !uses_distributed(checker) {
        return;
    }
    // DeepSpeed's launcher passes `--local_rank`: a file that imports it, calls it, or names
    // it at all (a backend loaded by `importlib.import_module("deepspeed")`, a `--deepspeed`
    // flag, a `deepspeed_config`) serves that launcher.
    if checker.scopes.lookup("deepspeed").is_some()
        || checker.facts.any_call(|q| q.starts_with("deepspeed."))
        || checker.mentions("deepspeed")
    {
        return;
    }
    // How the program is started, as the project's scripts and documents (read as text) or
    // the file's own usage docstring say. The legacy launcher (`torch.distributed.launch`
    // without `--use_env`) passes the option, whatever the program reads; `torchrun`,
    // `torch.distributed.run` and `--use_env` pass none, so parsing never meets it.
    let launch = checker
        .project_or_file()
        .map(|p| p.summary().facts.launch)
        .unwrap_or_default();
    let legacy_launched =
        checker.settings.launches_with_rank_argument || launch.documents_legacy_launch;
    let env_launched_only = !legacy_launched
        && (checker.settings.launches_with_env_rank || launch.documents_env_launch);
    if env_launched_only {
        return;
    }
    // The rank comes from the environment and the parsed option is read nowhere: a leftover
    // that parsing never meets, unless the project's scripts or docs start this file with the
    // legacy launcher, or the option's help names that launcher ("set by
    // torch.distributed.launch"): it sets `LOCAL_RANK` too, and still passes the option.
    let leftover = !legacy_launched
        && checker.project_or_file().is_some_and(|p| {
            p.model.any_reads_local_rank_env()
                && !p.summary().facts.launch.reads_local_rank_attr
                && !p.model.any_reads_shared_local_rank_attr()
        });
    // The project starts its programs with `torchrun` (the rank comes from `LOCAL_RANK`, no
    // script passes the legacy launcher's option): a parser in a function that nothing in the
    // project calls (a template, `parse_args_example()`) is never met at all.
    let env_launched = !legacy_launched
        && checker
            .project()
            .is_some_and(|p| p.model.any_reads_local_rank_env());
    let gated = version_gated_ifs(&checker.module().body);
    for call in candidates {
        if leftover && !help_names_legacy_launcher(call) {
            continue;
        }
        if env_launched && in_uncalled_function(checker, call) {
            continue;
        }
        // `if PYTORCH_MAJOR_VERSION == 1: parser.add_argument("--local_rank", ...)`: only
        // for the torch versions whose launcher passes `--local_rank`.
        if gated.iter().any(|r| r.contains_range(call.range())) {
            continue;
        }
        let strings: Vec<&Expr> = call
            .arguments
            .args
            .iter()
            .filter(|a| helpers::str_value(a).is_some())
            .collect();
        if strings
            .iter()
            .any(|a| helpers::str_value(a) == Some("--local-rank"))
        {
            continue;
        }
        let Some(opt) = strings
            .iter()
            .find(|a| helpers::str_value(a) == Some("--local_rank"))
        else {
            continue;
        };
        let quote = if checker.text(opt.range()).starts_with('\'') {
            "'"
        } else {
            "\""
        };
        let explicit_dest =
            helpers::keyword(call, "dest").is_some() || helpers::has_kwargs_splat(call);
        // argparse names the destination after the first long option: with another long
        // option before `--local_rank` the fix is left out unless `dest=` is explicit.
        let long_before = strings
            .iter()
            .take_while(|a| !std::ptr::eq(**a, *opt))
            .any(|a| helpers::str_value(a).is_some_and(|s| s.starts_with("--")));
        let fixable = !long_before || explicit_dest;
        let diagnostic = checker.report(
            opt.range(),
            "only `--local_rank` is accepted: since torch 2.0 `torch.distributed.launch` passes `--local-rank`, so argument parsing fails with `unrecognized arguments`",
        );
        if fixable {
            diagnostic.set_fix(RawFix::safe(
                "Also accept `--local-rank`",
                vec![RawEdit::insert(
                    opt.start(),
                    format!("{quote}--local-rank{quote}, "),
                )],
            ));
        }
    }
}

/// Is the call inside a module-level function that nothing in the project calls, as the
/// model's call graph tells? Only when the whole project was analysed (a file checked alone
/// does not see its callers), and not for methods (called through instances the graph may not
/// resolve).
fn in_uncalled_function(checker: &Checker, call: &ExprCall) -> bool {
    fn top_level_def(
        body: &[Stmt],
        at: ruff_text_size::TextRange,
    ) -> Option<&ruff_python_ast::StmtFunctionDef> {
        body.iter()
            .filter(|s| s.range().contains_range(at))
            .find_map(|s| match s {
                Stmt::FunctionDef(f) => Some(f),
                Stmt::If(i) => top_level_def(&i.body, at).or_else(|| {
                    i.elif_else_clauses
                        .iter()
                        .find_map(|c| top_level_def(&c.body, at))
                }),
                _ => None,
            })
    }
    let Some(def) = top_level_def(&checker.module().body, call.range()) else {
        return false;
    };
    let Some(p) = checker.project() else {
        return false;
    };
    p.function_at(def.range.start())
        .is_some_and(|f| !p.model.is_called(f))
}

/// Does the option's `help=` name the legacy launcher as the one that passes it (`"set by
/// torch.distributed.launch"`, `"for distributed launch"`)? A help that only says the value is
/// filled in (`"Automatic DDP Multi-GPU argument, do not modify"`) names no launcher: `torchrun`
/// fills `LOCAL_RANK` automatically too.
fn help_names_legacy_launcher(call: &ExprCall) -> bool {
    helpers::keyword(call, "help")
        .and_then(helpers::str_value)
        .is_some_and(|h| {
            let h = h.to_ascii_lowercase();
            h.contains("launch") && !h.contains("torchrun") && !h.contains("distributed.run")
        })
}

/// The body ranges of `if` statements (anywhere, functions included) whose test reads a
/// version (`PYTORCH_MAJOR_VERSION == 1`, `torch.__version__ < "2"`, `TORCH_MAJOR < 2`).
fn version_gated_ifs(body: &[Stmt]) -> Vec<ruff_text_size::TextRange> {
    use ruff_python_ast::visitor::{self, Visitor};
    struct V(Vec<ruff_text_size::TextRange>);
    impl<'a> Visitor<'a> for V {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            if let Stmt::If(i) = stmt {
                let mut reads = false;
                let mut names = Names(&mut reads);
                names.visit_expr(&i.test);
                if reads {
                    self.0.push(stmt.range());
                }
            }
            visitor::walk_stmt(self, stmt);
        }
    }
    struct Names<'r>(&'r mut bool);
    impl<'a> Visitor<'a> for Names<'_> {
        fn visit_expr(&mut self, e: &'a Expr) {
            match e {
                Expr::Name(n) if crate::checker::mentions_version(n.id.as_str()) => *self.0 = true,
                Expr::Attribute(a) if crate::checker::mentions_version(a.attr.as_str()) => {
                    *self.0 = true
                }
                _ => {}
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut v = V(Vec::new());
    v.visit_body(body);
    v.0
}

#[cfg(test)]
mod tests {

    fn count(src: &str) -> usize {
        crate::test_support::count_findings("local-rank-argparse-underscore", src)
    }

    #[test]
    fn deepspeed_scripts_and_non_distributed_scripts_stay_silent() {
        let base = "import argparse\nimport torch\nimport torch.distributed as dist\np = argparse.ArgumentParser()\np.add_argument('--local_rank', type=int)\ndist.init_process_group('nccl')\n";
        assert_eq!(count(base), 1);
        assert_eq!(count(&format!("import deepspeed\n{base}")), 0);
        // A DeepSpeed backend imported by name (`importlib.import_module(NAME)`).
        assert_eq!(
            count(&format!("{base}BACKEND_MODULE_NAME = 'deepspeed'\n")),
            0
        );
        assert_eq!(count("import argparse\nimport torch\np = argparse.ArgumentParser()\np.add_argument('--local_rank', type=int)\n"), 0);
    }

    #[test]
    fn an_unread_option_beside_the_environment_rank_is_a_leftover() {
        let parser = "import argparse\nimport os\nimport torch\nimport torch.distributed as dist\n\ndef get_args_parser():\n    parser = argparse.ArgumentParser('finetune')\n    parser.add_argument('--local_rank', default=-1, type=int)\n    parser.add_argument('--dist_url', default='env://')\n    return parser\n\n";
        // The rank comes from the environment and `.local_rank` is never read: silent.
        let env = "def init_distributed_mode(args):\n    args.rank = int(os.environ['RANK'])\n    args.gpu = int(os.environ['LOCAL_RANK'])\n    torch.cuda.set_device(args.gpu)\n    dist.init_process_group('nccl', init_method=args.dist_url)\n";
        assert_eq!(count(&format!("{parser}{env}")), 0);
        let get = env.replace(
            "os.environ['LOCAL_RANK']",
            "os.environ.get('LOCAL_RANK', 0)",
        );
        assert_eq!(count(&format!("{parser}{get}")), 0);
        // A store is not a read.
        assert_eq!(
            count(&format!("{parser}{env}    args.local_rank = args.gpu\n")),
            0
        );
        // In the file itself any `.local_rank` read counts (the parsed namespace is often a
        // local: `args = parser.parse_args(); args.local_rank`); in other files only reads
        // on what can be handed over do (see the `clean_env_rank_leftover_option` project).
        assert_eq!(
            count(&format!(
                "{parser}{env}\ndef setup_gpu(self):\n    job_env = submitit.JobEnvironment()\n    self.args.gpu = job_env.local_rank\n"
            )),
            1
        );
        // The option is read (the rank may come from the launcher's `--local-rank`): fires.
        let read = env.replace(
            "torch.cuda.set_device(args.gpu)",
            "torch.cuda.set_device(args.local_rank)",
        );
        assert_eq!(count(&format!("{parser}{read}")), 1);
        // The option's help names the legacy launcher: the script is meant to be started
        // by `torch.distributed.launch`, which passes `--local-rank` on torch 2: fires.
        let documented = parser.replace(
            "default=-1, type=int)",
            "default=-1, type=int, help='set by torch.distributed.launch, do not modify')",
        );
        assert_eq!(count(&format!("{documented}{env}")), 1);
        // A help that only says the value is filled in names no launcher: a leftover.
        let automatic = parser.replace(
            "default=-1, type=int)",
            "default=-1, type=int, help='Automatic DDP Multi-GPU argument, do not modify')",
        );
        assert_eq!(count(&format!("{automatic}{env}")), 0);
        // No environment rank: the legacy launcher passes the option: fires.
        let no_env = env.replace("int(os.environ['LOCAL_RANK'])", "0");
        assert_eq!(count(&format!("{parser}{no_env}")), 1);
    }

    #[test]
    fn the_files_own_usage_docstring_tells_how_it_is_launched() {
        let body = "import argparse\nimport os\nimport torch\nimport torch.distributed as dist\nLOCAL_RANK = int(os.getenv('LOCAL_RANK', -1))\n\ndef parse_opt():\n    parser = argparse.ArgumentParser()\n    parser.add_argument('--local_rank', type=int, default=-1, help='Automatic DDP Multi-GPU argument, do not modify')\n    return parser.parse_args()\n\ndef main(opt):\n    if LOCAL_RANK != -1:\n        torch.cuda.set_device(LOCAL_RANK)\n        dist.init_process_group('nccl')\n";
        // (`count` lints the text as `train.py`.)
        let count_in = count;
        // Started with `torch.distributed.run`: no option is passed; silent even when read.
        let run = "\"\"\"Train.\n\nUsage - Multi-GPU DDP training:\n    $ python -m torch.distributed.run --nproc_per_node 4 train.py --data coco.yaml\n\"\"\"\n";
        assert_eq!(count_in(&format!("{run}{body}")), 0);
        let read = body.replace(
            "torch.cuda.set_device(LOCAL_RANK)",
            "torch.cuda.set_device(opt.local_rank)",
        );
        assert_eq!(count_in(&format!("{run}{read}")), 0);
        // Started with the legacy launcher: it passes `--local-rank` on torch 2: fires,
        // even though the rank is read from the environment.
        let legacy = run.replace("torch.distributed.run", "torch.distributed.launch");
        assert_eq!(count_in(&format!("{legacy}{body}")), 1);
        // A launch line for another program says nothing about this one.
        let other = run.replace("4 train.py", "4 other.py");
        assert_eq!(count_in(&format!("{other}{read}")), 1);
    }
}

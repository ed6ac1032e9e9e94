//! Raw command-line arguments (kept apart from the resolved settings).
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// torchvet: finds the PyTorch mistakes type checkers miss, and reads checkpoints without running them.
#[derive(Parser, Debug)]
#[command(name = "torchvet", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Worker threads (default: all cores; also TORCHVET_THREADS).
    #[arg(long, global = true)]
    pub threads: Option<usize>,
}

/// The same command line as [`Cli`], with only the `ckpt` subcommand: `torchvet ckpt ...` parses
/// through it, so that a checkpoint scan does not build the parser of every other subcommand
/// (`check` alone has dozens of options). The help and errors of `torchvet ckpt ...` are the
/// same either way (a test compares them).
#[derive(Parser, Debug)]
#[command(name = "torchvet", version, about, long_about = None, propagate_version = true)]
pub struct CkptCli {
    #[command(subcommand)]
    pub command: CkptOnly,
    /// Worker threads (default: all cores; also TORCHVET_THREADS).
    // In `Cli`, clap numbers the root's subcommands and arguments together: `--threads` comes
    // after the nine subcommands, which places it in every subcommand's help.
    #[arg(long, global = true, display_order = 9)]
    pub threads: Option<usize>,
}

/// The `ckpt` subcommand of [`Command`], alone.
#[derive(Subcommand, Debug)]
pub enum CkptOnly {
    /// Read PyTorch checkpoints without executing them: scan, inspect, convert, diff.
    Ckpt(torchvet_checkpoint::cli::CkptArgs),
}

impl Cli {
    /// Parse the process's arguments (through [`CkptCli`] when the subcommand is `ckpt`).
    pub fn parse_args() -> Cli {
        if std::env::args_os().nth(1).is_some_and(|a| a == "ckpt") {
            let c = CkptCli::parse();
            let CkptOnly::Ckpt(a) = c.command;
            return Cli {
                command: Command::Ckpt(a),
                threads: c.threads,
            };
        }
        Cli::parse()
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Lint Python files and notebooks.
    Check(CheckArgs),
    /// List every rule with its code, group, severity and default.
    Rules(RulesArgs),
    /// Print one rule's documentation.
    Rule(RuleArgs),
    /// Read PyTorch checkpoints without executing them: scan, inspect, convert, diff.
    Ckpt(torchvet_checkpoint::cli::CkptArgs),
    /// The reviewer's structured report: critical issues, performance, best practices, positive aspects, tests to write.
    Review(torchvet_review::cli::ReviewArgs),
    /// Detect a PyTorch project and describe it (triggers, torch version, model/training/checkpoint dirs, commands).
    Project(torchvet_project::cli::ProjectArgs),
    /// A static model card for each nn.Module subclass: layer tree, parameter counts, expected state_dict.
    Summary(torchvet_summary::cli::SummaryArgs),
    /// Run the language server (LSP) over stdio, for editors.
    Server(ServerArgs),
    /// Run the Model Context Protocol server over stdio, for AI coding agents.
    Mcp(McpArgs),
}

#[derive(Args, Debug)]
pub struct ServerArgs {}

#[derive(Args, Debug)]
pub struct McpArgs {
    /// Directories the tools may read (repeatable) [default: the current directory]. Paths
    /// outside them are refused.
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormatArg {
    Full,
    Concise,
    Json,
    JsonLines,
    Sarif,
    Github,
}

#[derive(Args, Debug, Default)]
pub struct CheckArgs {
    /// Files or directories to check [default: .]
    pub paths: Vec<PathBuf>,
    /// Rules to enable, replacing the defaults: names, codes (TV007), code prefixes, groups, TorchFix codes (TOR102), or ALL.
    #[arg(long, value_delimiter = ',')]
    pub select: Option<Vec<String>>,
    /// Rules to enable on top of the selection.
    #[arg(long, value_delimiter = ',')]
    pub extend_select: Vec<String>,
    /// Rules to disable.
    #[arg(long, value_delimiter = ',')]
    pub ignore: Vec<String>,
    /// Output format.
    #[arg(long, value_enum)]
    pub output_format: Option<OutputFormatArg>,
    /// Print a count of findings per rule instead of the findings.
    #[arg(long)]
    pub statistics: bool,
    /// Exit 0 even when there are findings.
    #[arg(long)]
    pub exit_zero: bool,
    /// Print findings only (no summary line).
    #[arg(long, short)]
    pub quiet: bool,
    /// The torch version the code targets (e.g. 2.1); default: config, then per file the torch version declared nearest to it, then latest.
    #[arg(long)]
    pub target_torch: Option<String>,
    /// Enable preview rules.
    #[arg(long)]
    pub preview: bool,
    /// Use this configuration file instead of searching for one.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Ignore all configuration files.
    #[arg(long)]
    pub isolated: bool,
    /// Glob patterns to exclude, on top of the configured ones.
    #[arg(long, value_delimiter = ',')]
    pub extend_exclude: Vec<String>,
    /// Apply safe fixes (files are rewritten atomically; a fix that breaks parsing is dropped).
    #[arg(long)]
    pub fix: bool,
    /// With --fix/--diff: also apply unsafe fixes (they may change behaviour; read their docs).
    #[arg(long)]
    pub unsafe_fixes: bool,
    /// Print the fixes as a unified diff and write nothing.
    #[arg(long)]
    pub diff: bool,
    /// Apply fixes and report nothing else.
    #[arg(long)]
    pub fix_only: bool,
    /// List the fixes that were applied.
    #[arg(long)]
    pub show_fixes: bool,
    /// Do not read or write the result cache (.torchvet_cache/).
    #[arg(long)]
    pub no_cache: bool,
    /// Where to keep the result cache [default: .torchvet_cache next to the configuration
    /// file, else in the current directory; also TORCHVET_CACHE_DIR].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Benchmark baseline: only read and parse the files, run no rules.
    #[arg(long, hide = true)]
    pub parse_only: bool,
    /// Analyse each file alone, without the whole-project model (for comparisons).
    #[arg(long, hide = true)]
    pub no_project: bool,
}

#[derive(Args, Debug)]
pub struct RulesArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ListFormat,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    Text,
    Json,
}

#[derive(Args, Debug)]
pub struct RuleArgs {
    /// A rule name, code (TV007) or TorchFix code (TOR102).
    pub rule: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ListFormat,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Help text of `torchvet <path...> --help`, as the given parser renders it.
    fn help(mut cmd: clap::Command, path: &[&str]) -> String {
        cmd.build();
        let mut c = &mut cmd;
        for p in path {
            c = c.find_subcommand_mut(p).expect("subcommand");
        }
        c.render_long_help().to_string()
    }

    #[test]
    fn ckpt_parser_matches_the_full_one() {
        for path in [
            &["ckpt"][..],
            &["ckpt", "scan"],
            &["ckpt", "inspect"],
            &["ckpt", "convert"],
            &["ckpt", "diff"],
        ] {
            assert_eq!(
                help(CkptCli::command(), path),
                help(Cli::command(), path),
                "help of {path:?}"
            );
        }
        // Errors too: the same message for the same mistake.
        for argv in [
            &["torchvet", "ckpt", "scan", "--bogus", "x"][..],
            &["torchvet", "ckpt", "scan"],
            &["torchvet", "ckpt", "frobnicate"],
            &["torchvet", "ckpt", "scan", "--threads", "nope", "x"],
        ] {
            let a = CkptCli::try_parse_from(argv)
                .unwrap_err()
                .render()
                .to_string();
            let b = Cli::try_parse_from(argv).unwrap_err().render().to_string();
            assert_eq!(a, b, "error for {argv:?}");
        }
        let c = CkptCli::try_parse_from(["torchvet", "ckpt", "scan", "--threads", "3", "x.pt"])
            .unwrap();
        assert_eq!(c.threads, Some(3));
        assert!(matches!(c.command, CkptOnly::Ckpt(_)));
    }
}

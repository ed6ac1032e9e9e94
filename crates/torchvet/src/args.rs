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
            if let Some(cli) = plain_scan(std::env::args_os().skip(1)) {
                return cli;
            }
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

/// `ckpt scan` with only paths and the common options, each at most once, parsed without
/// building clap's parser (its construction is a tenth of the instructions of scanning a
/// 1 GB checkpoint). Anything else (help, version, `--extensions`, `--`, joined short flags, a
/// repeated or unknown option, a value clap would refuse, a path that starts with `-`) returns
/// None and goes through clap, so help and errors are clap's. `args` starts at `ckpt`.
fn plain_scan(mut args: impl Iterator<Item = std::ffi::OsString>) -> Option<Cli> {
    use torchvet_checkpoint::cli::{CkptArgs, CkptCommand, FailOn, ScanArgs, ScanFormat};
    if args.next()? != "ckpt" || args.next()? != "scan" {
        return None;
    }
    let mut paths = Vec::new();
    let (mut strict, mut verbose, mut quiet) = (None, None, None);
    let (mut format, mut fail_on, mut threads) = (None, None, None);
    // Set an option once; a second occurrence goes to clap.
    fn once<T>(slot: &mut Option<T>, v: T) -> Option<()> {
        slot.is_none().then(|| *slot = Some(v))
    }
    while let Some(a) = args.next() {
        let Some(t) = a.to_str() else {
            // Not UTF-8: only ever a path (clap takes it as one too).
            if a.as_encoded_bytes().first() == Some(&b'-') {
                return None;
            }
            paths.push(PathBuf::from(a));
            continue;
        };
        if !t.starts_with('-') {
            if t.is_empty() {
                return None;
            }
            paths.push(PathBuf::from(a));
            continue;
        }
        let (name, inline) = match t.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (t, None),
        };
        let mut value = |inline: Option<String>| -> Option<String> {
            match inline {
                Some(v) => Some(v),
                None => args.next()?.into_string().ok(),
            }
        };
        match name {
            "--strict" if inline.is_none() => once(&mut strict, ())?,
            "-v" | "--verbose" if inline.is_none() => once(&mut verbose, ())?,
            "-q" | "--quiet" if inline.is_none() => once(&mut quiet, ())?,
            "--format" => {
                let v = match value(inline)?.as_str() {
                    "text" => ScanFormat::Text,
                    "json" => ScanFormat::Json,
                    "jsonl" => ScanFormat::Jsonl,
                    "sarif" => ScanFormat::Sarif,
                    _ => return None,
                };
                once(&mut format, v)?;
            }
            "--fail-on" => {
                let v = match value(inline)?.as_str() {
                    "dangerous" => FailOn::Dangerous,
                    "unsafe" => FailOn::Unsafe,
                    "malformed" => FailOn::Malformed,
                    "never" => FailOn::Never,
                    _ => return None,
                };
                once(&mut fail_on, v)?;
            }
            "--threads" => {
                let v = value(inline)?;
                if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                once(&mut threads, v.parse::<usize>().ok()?)?;
            }
            _ => return None,
        }
    }
    if paths.is_empty() {
        return None;
    }
    Some(Cli {
        command: Command::Ckpt(CkptArgs {
            command: CkptCommand::Scan(ScanArgs {
                paths,
                extensions: None,
                strict: strict.is_some(),
                format: format.unwrap_or(ScanFormat::Text),
                fail_on: fail_on.unwrap_or(FailOn::Unsafe),
                verbose: verbose.is_some(),
                quiet: quiet.is_some(),
            }),
        }),
        threads,
    })
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

    /// The hand-written `ckpt scan` parser gives what clap gives, or hands over to clap.
    #[test]
    fn plain_scan_matches_clap() {
        let taken: &[&[&str]] = &[
            &["a.pt"],
            &["a.pt", "dir", "c"],
            &["--format", "json", "a"],
            &["--format=jsonl", "a", "--strict"],
            &[
                "a",
                "--format",
                "sarif",
                "-v",
                "--fail-on",
                "never",
                "--threads",
                "3",
                "b",
            ],
            &["-q", "--verbose", "--fail-on=malformed", "--threads=0", "x"],
            &[
                "--quiet",
                "-v",
                "--format",
                "text",
                "--fail-on",
                "dangerous",
                "y",
            ],
            &["--fail-on", "unsafe", "./-x"],
        ];
        for rest in taken {
            let argv: Vec<&str> = ["torchvet", "ckpt", "scan"]
                .iter()
                .chain(*rest)
                .copied()
                .collect();
            let fast = plain_scan(argv[1..].iter().map(std::ffi::OsString::from))
                .unwrap_or_else(|| panic!("not taken: {argv:?}"));
            let c = CkptCli::try_parse_from(&argv).unwrap();
            let CkptOnly::Ckpt(a) = c.command;
            let clap = Cli {
                command: Command::Ckpt(a),
                threads: c.threads,
            };
            assert_eq!(format!("{fast:?}"), format!("{clap:?}"), "{argv:?}");
        }
        let left: &[&[&str]] = &[
            &[],
            &["--help"],
            &["-h", "a"],
            &["-V"],
            &["--version"],
            &["--extensions", "pt", "a"],
            &["--", "a"],
            &["-vq", "a"],
            &["-v", "-v", "a"],
            &["--strict", "--strict", "a"],
            &["--format", "json", "--format", "text", "a"],
            &["--format", "JSON", "a"],
            &["--format", "a"],
            &["--format"],
            &["--fail-on", "bad", "a"],
            &["--threads", "+3", "a"],
            &["--threads", "-1", "a"],
            &["--threads", "", "a"],
            &["--threads", "99999999999999999999999", "a"],
            &["--strict=true", "a"],
            &["--bogus", "a"],
            &["-x", "a"],
            &["-"],
            &[""],
            &["a", "-"],
        ];
        for rest in left {
            let argv: Vec<&str> = ["ckpt", "scan"].iter().chain(*rest).copied().collect();
            assert!(
                plain_scan(argv.iter().map(std::ffi::OsString::from)).is_none(),
                "taken: {argv:?}"
            );
        }
        for other in [&["ckpt", "inspect", "a"][..], &["check", "a"], &["ckpt"]] {
            assert!(plain_scan(other.iter().map(std::ffi::OsString::from)).is_none());
        }
    }
}

//! The `torchvet ckpt` subcommand: scan, inspect, convert, diff.

use crate::convert::{ConvertOptions, SharedPolicy};
use crate::scan::{scan_paths_with_progress, ScanOptions, WalkOptions};
use crate::{output, Verdict};
use std::io::Write;
use std::path::PathBuf;

/// Read, scan, convert and compare PyTorch checkpoints without executing them.
#[derive(Debug, clap::Args)]
pub struct CkptArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: CkptCommand,
}

/// `torchvet ckpt` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum CkptCommand {
    /// Scan checkpoints for code that would run when they are loaded.
    ///
    /// Every file gets a verdict: safe (only names in torch's weights_only allowlist), unsafe
    /// (names outside it: loading needs trust), dangerous (code execution, file, network or
    /// process access, or constructs that hide what is imported) or malformed. Formats are
    /// decided from content: torch zip, TorchScript, legacy, pre-1.0 tar, raw pickle, npy/npz,
    /// safetensors, 7z/gzip wrappers. Nothing is ever unpickled or imported.
    Scan(ScanArgs),
    /// Show what a checkpoint holds: tensors, shared storages, parameter counts, metadata.
    ///
    /// Reads only the pickle and the archive directory, so time and memory do not depend on the
    /// size of the tensor data.
    Inspect(InspectArgs),
    /// Convert a checkpoint (state_dict or a subtree of it) to safetensors.
    ///
    /// Tensor bytes are streamed; views and non-contiguous tensors are materialised; big-endian
    /// data is byte-swapped; tied weights are written once (or copied, or refused).
    Convert(ConvertArgs),
    /// Compare two checkpoints the way load_state_dict would: missing and unexpected keys,
    /// shape and dtype mismatches, and (with --values) the largest absolute difference.
    ///
    /// With `--against FILE.py::Class` and a single checkpoint, compare the checkpoint with the
    /// state_dict the class would produce (found by static analysis; nothing is imported).
    Diff(DiffArgs),
}

/// Output format of `scan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ScanFormat {
    /// Readable text.
    Text,
    /// JSON array, one object per file.
    Json,
    /// JSON lines: one object per file and line (for pipelines and batch jobs).
    Jsonl,
    /// SARIF 2.1.0.
    Sarif,
}

/// When `scan` exits with status 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// Only dangerous files.
    Dangerous,
    /// Unsafe or dangerous files (default).
    Unsafe,
    /// Malformed, unsafe or dangerous files.
    Malformed,
    /// Never (report only).
    Never,
}

/// Arguments of `scan`.
#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    /// Files or directories. Directories are walked and every file is sniffed by content (zip,
    /// pickle 0-5, tar, 7z, gzip/bzip2/xz/zstd, npy/npz, safetensors); names are not trusted.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Walk only files with these extensions (comma-separated, e.g. `pt,bin,pkl`); they are
    /// scanned whatever their content. Files named on the command line are always scanned.
    #[arg(long, value_delimiter = ',', value_name = "EXT,...")]
    pub extensions: Option<Vec<String>>,
    /// Verify the CRC-32 of every zip member, tensor data included (default: pickle members
    /// only, whose CRC decides which loaders accept them).
    #[arg(long)]
    pub strict: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ScanFormat,
    /// Exit with status 1 when a file is at least this bad.
    #[arg(long, value_enum, default_value = "unsafe")]
    pub fail_on: FailOn,
    /// Also print informational findings, and how many files a directory walk skipped and why
    /// (on stderr for json/jsonl/sarif).
    #[arg(long, short)]
    pub verbose: bool,
    /// Print only files that are not safe (text output).
    #[arg(long, short)]
    pub quiet: bool,
}

/// Output format of `inspect` and `diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// Readable text.
    Text,
    /// JSON.
    Json,
}

/// Arguments of `inspect`.
#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// The checkpoint.
    pub file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ReportFormat,
    /// List every tensor in text output (default: the first 200).
    #[arg(long)]
    pub all: bool,
}

/// Arguments of `convert`.
#[derive(Debug, clap::Args)]
pub struct ConvertArgs {
    /// The checkpoint to read.
    pub input: PathBuf,
    /// The safetensors file to write.
    pub output: PathBuf,
    /// Convert only this subtree (e.g. `model_state_dict`, `state_dict`, `model.encoder`).
    #[arg(long)]
    pub key: Option<String>,
    /// What to do with tensors that share one storage view (tied weights).
    #[arg(long, value_enum, default_value = "dedupe")]
    pub shared: SharedPolicy,
    /// Re-read the output and compare every tensor's bytes with the source.
    #[arg(long)]
    pub verify: bool,
    /// Overwrite OUTPUT if it exists.
    #[arg(long, short)]
    pub force: bool,
}

/// Arguments of `diff`.
#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// Reference checkpoint (what the model expects); with --against, the checkpoint to check.
    pub a: PathBuf,
    /// Checkpoint to compare (not with --against).
    #[arg(required_unless_present = "against", conflicts_with = "against")]
    pub b: Option<PathBuf>,
    /// Compare the checkpoint with the state_dict of a model class: `FILE.py::Class` (the class
    /// may be omitted when the file defines one nn.Module).
    #[arg(long, value_name = "FILE.py::Class", conflicts_with = "values")]
    pub against: Option<String>,
    /// Subtree of both files to compare (e.g. `model_state_dict`).
    #[arg(long)]
    pub key: Option<String>,
    /// Subtree of A (overrides --key).
    #[arg(long)]
    pub key_a: Option<String>,
    /// Subtree of B (overrides --key).
    #[arg(long)]
    pub key_b: Option<String>,
    /// Compare values: maximum absolute difference per tensor.
    #[arg(long)]
    pub values: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ReportFormat,
}

fn out(s: &str) {
    let mut o = std::io::stdout().lock();
    // A closed pipe is not an error.
    let _ = o.write_all(s.as_bytes());
    let _ = o.flush();
}

/// Run a `torchvet ckpt` command; returns the exit code (0 ok, 1 findings or failed
/// verification, 2 usage or I/O error).
pub fn run(args: &CkptArgs) -> i32 {
    match &args.command {
        CkptCommand::Scan(a) => run_scan(a),
        CkptCommand::Inspect(a) => run_inspect(a),
        CkptCommand::Convert(a) => run_convert(a),
        CkptCommand::Diff(a) => run_diff(a),
    }
}

use torchvet_diagnostics::progress::{Progress, LARGE_FILE, MANY_CHECKPOINTS};

fn run_scan(a: &ScanArgs) -> i32 {
    for p in &a.paths {
        if !p.exists() {
            eprintln!(
                "torchvet ckpt scan: {}: no such file or directory",
                p.display()
            );
            return 2;
        }
    }
    let opts = ScanOptions {
        strict: a.strict,
        ..ScanOptions::default()
    };
    let bar = std::sync::OnceLock::new();
    let (reports, skipped_counts) = scan_paths_with_progress(
        &a.paths,
        &WalkOptions {
            extensions: a.extensions.clone(),
        },
        &opts,
        &|total| {
            let b = bar.get_or_init(|| {
                Progress::items(
                    total,
                    "checkpoints",
                    a.format == ScanFormat::Text && total >= MANY_CHECKPOINTS,
                )
                .with_prefix("Scanning")
            });
            b.inc(1);
        },
    );
    if let Some(b) = bar.get() {
        b.finish();
    }
    let skipped = (a.verbose && a.paths.iter().any(|p| p.is_dir()))
        .then(|| format!("{}\n", skipped_counts.describe()));
    let text = match a.format {
        ScanFormat::Json => format!("{}\n", output::render_json(&reports)),
        ScanFormat::Jsonl => output::render_jsonl(&reports),
        ScanFormat::Sarif => format!("{}\n", output::render_sarif(&reports)),
        ScanFormat::Text => {
            let mut t = if a.quiet {
                let bad: Vec<_> = reports
                    .iter()
                    .filter(|r| r.verdict != Verdict::Safe)
                    .cloned()
                    .collect();
                let mut t = output::render_text(&bad, a.verbose);
                if let Some(pos) = t.rfind(" files scanned") {
                    // keep the totals of everything scanned
                    let start = t[..pos].rfind('\n').map(|i| i + 1).unwrap_or(0);
                    t.truncate(start);
                    let count = |v: Verdict| reports.iter().filter(|r| r.verdict == v).count();
                    t.push_str(&format!(
                        "{} files scanned: {} dangerous, {} unsafe, {} malformed, {} safe\n",
                        reports.len(),
                        count(Verdict::Dangerous),
                        count(Verdict::Unsafe),
                        count(Verdict::Malformed),
                        count(Verdict::Safe)
                    ));
                }
                t
            } else {
                output::render_text(&reports, a.verbose)
            };
            if let Some(s) = &skipped {
                t.push_str(s);
            }
            t
        }
    };
    out(&text);
    if a.format != ScanFormat::Text {
        if let Some(s) = &skipped {
            eprint!("{s}");
        }
    }
    let threshold = match a.fail_on {
        FailOn::Dangerous => Some(Verdict::Dangerous),
        FailOn::Unsafe => Some(Verdict::Unsafe),
        FailOn::Malformed => Some(Verdict::Malformed),
        FailOn::Never => None,
    };
    match threshold {
        Some(t) if reports.iter().any(|r| r.verdict >= t) => 1,
        _ => 0,
    }
}

fn run_inspect(a: &InspectArgs) -> i32 {
    let ck = match crate::model::Checkpoint::open(&a.file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("torchvet ckpt inspect: {e}");
            return 2;
        }
    };
    let verdict = crate::scan_path(&a.file).verdict;
    let r = crate::inspect::inspect(&ck, verdict.as_str());
    match a.format {
        ReportFormat::Json => out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&r).unwrap_or_default()
        )),
        ReportFormat::Text => out(&crate::inspect::render_text(
            &r,
            if a.all { usize::MAX } else { 200 },
        )),
    }
    0
}

fn run_convert(a: &ConvertArgs) -> i32 {
    if a.output.exists() && !a.force {
        eprintln!(
            "torchvet ckpt convert: {} exists (use --force to overwrite)",
            a.output.display()
        );
        return 2;
    }
    let verdict = crate::scan_path(&a.input);
    if verdict.verdict >= Verdict::Unsafe {
        eprintln!(
            "torchvet ckpt convert: note: {} is {} (nothing is executed while converting)",
            a.input.display(),
            verdict.verdict
        );
    }
    let opts = ConvertOptions {
        key: a.key.clone(),
        shared: a.shared,
        verify: a.verify,
    };
    let start = std::time::Instant::now();
    let mut bar: Option<Progress> = None;
    let converted =
        crate::convert::convert_with_progress(&a.input, &a.output, &opts, &mut |done, total| {
            match &bar {
                Some(b) => b.set(done),
                None => {
                    bar =
                        Some(Progress::bytes(total, total >= LARGE_FILE).with_prefix("Converting"));
                }
            }
        });
    if let Some(b) = &bar {
        b.finish();
    }
    match converted {
        Ok(s) => {
            for n in &s.notes {
                eprintln!("note: {n}");
            }
            let secs = start.elapsed().as_secs_f64();
            out(&format!(
                "wrote {} tensors ({} bytes) to {} in {:.2}s{}\n",
                s.tensors,
                s.bytes,
                a.output.display(),
                secs,
                match s.verified {
                    Some(true) => ", verified",
                    Some(false) => ", VERIFY FAILED",
                    None => "",
                }
            ));
            if s.verified == Some(false) {
                1
            } else {
                0
            }
        }
        Err(e) => {
            eprintln!("torchvet ckpt convert: {e}");
            if a.verify && e.to_string().starts_with("verify:") {
                1
            } else {
                2
            }
        }
    }
}

fn run_against(a: &DiffArgs, spec: &str) -> i32 {
    let key = a.key_a.as_deref().or(a.key.as_deref());
    let r = match crate::against::diff_against(&a.a, key, spec) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("torchvet ckpt diff: {e}");
            return 2;
        }
    };
    match a.format {
        ReportFormat::Json => out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&r).unwrap_or_default()
        )),
        ReportFormat::Text => out(&r.to_text()),
    }
    if r.is_clean() {
        0
    } else {
        1
    }
}

fn run_diff(a: &DiffArgs) -> i32 {
    if let Some(spec) = &a.against {
        return run_against(a, spec);
    }
    let Some(b) = &a.b else {
        eprintln!("torchvet ckpt diff: a second checkpoint or --against FILE.py::Class is needed");
        return 2;
    };
    let ka = a.key_a.as_deref().or(a.key.as_deref());
    let kb = a.key_b.as_deref().or(a.key.as_deref());
    let r = match crate::diff::diff(&a.a, b, ka, kb, a.values) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("torchvet ckpt diff: {e}");
            return 2;
        }
    };
    match a.format {
        ReportFormat::Json => out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&r).unwrap_or_default()
        )),
        ReportFormat::Text => {
            let mut s = String::new();
            s.push_str(&format!(
                "A: {}\nB: {}\n{} tensors in common\n",
                r.a, r.b, r.common
            ));
            for k in &r.missing_keys {
                s.push_str(&format!("missing (in A, not in B): {k}\n"));
            }
            for k in &r.unexpected_keys {
                s.push_str(&format!("unexpected (in B, not in A): {k}\n"));
            }
            for m in &r.shape_mismatches {
                s.push_str(&format!("shape mismatch: {}: {} vs {}\n", m.name, m.a, m.b));
            }
            for m in &r.dtype_mismatches {
                s.push_str(&format!("dtype mismatch: {}: {} vs {}\n", m.name, m.a, m.b));
            }
            for v in &r.values {
                if !v.identical {
                    match v.max_abs_diff {
                        Some(d) => {
                            s.push_str(&format!("values differ: {}: max |a-b| = {d:e}\n", v.name))
                        }
                        None => s.push_str(&format!("values not comparable: {}\n", v.name)),
                    }
                }
            }
            if r.is_clean() {
                s.push_str("no differences\n");
            }
            out(&s);
        }
    }
    if r.is_clean() {
        0
    } else {
        1
    }
}

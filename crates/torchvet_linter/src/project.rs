//! Phase 1 of a run over many files: read and parse every file once (in parallel), summarise
//! it, and link the summaries into the [`ProjectModel`]. `check`, `review` and the editor
//! server share this; phase 2 (the rules) then runs per file with [`ProjectFile`] views.
use rayon::prelude::*;
use ruff_python_ast::ModModule;
use ruff_python_parser::Parsed;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use torchvet_python::SourceFile;
use torchvet_semantic::project::{
    summarise_source, summarise_source_keeping_scopes, summarise_source_with, FileSummary,
    ProjectFile, ProjectModel,
};

/// The syntax trees of phase 1 are kept for phase 2 when the checked files' source text is
/// at most this many bytes in all; a larger run parses every file again in phase 2 and keeps
/// none. Trees take about ten times the size of their text, and on this kind of machine fresh
/// memory costs about as much as parsing again. Measured on the 2-core bench machine (median
/// of 5-7 alternating runs): timm (6 MB of source) 0.17 s keeping its trees against 0.19 s
/// without; diffusers (30 MB) 0.84 s keeping them against 0.77 s (noisy: the fastest run kept
/// them, 0.67 s), at 458 against 249 MB, for 1.6 G more instructions without; the whole
/// 8,083-file corpus (128 MB) 4.21 s with a 32 MB prefix kept against 4.08 s with none, at
/// 1,142 against 882 MB. A kept prefix of a large run costs its memory at the peak and saves
/// little, so the budget is all or nothing.
pub const KEEP_TREES_BYTES: u64 = 32 << 20;

/// One file after phase 1.
pub struct Loaded {
    /// The path as given (shown in findings).
    pub path: PathBuf,
    /// The file, its tree (when kept) and its view of the model; or why it could not be read.
    pub state: Result<LoadedFile, String>,
}

/// A file that was read.
pub struct LoadedFile {
    /// The source.
    pub source: SourceFile,
    /// Its parse, when kept for phase 2.
    pub parsed: Option<Parsed<ModModule>>,
    /// Its view of the model.
    pub project: Option<ProjectFile>,
    /// The scopes phase 1 collected for the kept tree, for the checker of phase 2 (taken
    /// once: see [`torchvet_semantic::KeptScopes`]).
    pub scopes: std::sync::Mutex<Option<torchvet_semantic::KeptScopes>>,
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// CPU time of the process so far (user + system), for `TORCHVET_TIMING=1`.
pub fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which may contain spaces) close with ')'.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 (1-based), i.e. 11 and 12 after the ')'.
    (ticks(11) + ticks(12)) / 100.0
}

/// Summarise a parsed file (absolute path for the resolver).
pub fn summary_of(source: &SourceFile, parsed: &Parsed<ModModule>) -> FileSummary {
    summarise_source(&model_path(source), source, parsed.syntax())
}

/// The path the model knows a file by (absolute, for the resolver).
fn model_path(source: &SourceFile) -> PathBuf {
    std::path::absolute(&source.path).unwrap_or_else(|_| source.path.clone())
}

/// Read and summarise a file outside the checked set (imports resolve to it): summary only.
fn load_extra(path: &Path) -> Option<FileSummary> {
    std::panic::catch_unwind(|| {
        let source = SourceFile::load(path).ok()?;
        let parsed = source.parse();
        Some(summarise_source(path, &source, parsed.syntax()))
    })
    .ok()
    .flatten()
}

/// Phase 1 over `files`: read, parse and summarise each (in parallel), then link the model.
/// `roots` are the directories discovery walked. With `project` false, no model is built
/// (each file is analysed alone).
pub fn load_project(
    files: &[PathBuf],
    roots: &[PathBuf],
    project: bool,
) -> (Vec<Loaded>, Option<Arc<ProjectModel>>) {
    // Whether the files keep their trees (see `KEEP_TREES_BYTES`).
    let budget = match std::env::var("TORCHVET_KEEP_TREES").ok().as_deref() {
        Some("0") => 0,
        Some("1") => u64::MAX,
        // `TORCHVET_KEEP_TREES=8M`: a budget of that many megabytes of source.
        Some(v) if v.ends_with('M') => v[..v.len() - 1]
            .parse::<u64>()
            .map_or(KEEP_TREES_BYTES, |mb| mb << 20),
        _ => KEEP_TREES_BYTES,
    };
    // Every tree or none: the sizes are summed until they pass the budget.
    let mut used = 0u64;
    let keep_all = budget > 0
        && files.iter().all(|p| {
            used = used.saturating_add(std::fs::metadata(p).map_or(0, |m| m.len()));
            used <= budget
        });
    let keep = vec![keep_all; files.len()];
    let timing = std::env::var_os("TORCHVET_TIMING").is_some();
    let t0 = cpu_seconds();
    let w0 = std::time::Instant::now();
    let results: Vec<(Loaded, Option<FileSummary>)> = files
        .par_iter()
        .zip(keep.par_iter())
        .map(|(p, &keep)| {
            let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
                let source = SourceFile::load(p).map_err(|e| e.to_string())?;
                let parsed = source.parse();
                // A kept tree keeps the scopes its summary collected, for its checker.
                let (summary, scopes) = match (project, keep) {
                    (false, _) => (None, None),
                    (true, false) => (Some(summary_of(&source, &parsed)), None),
                    (true, true) => {
                        let (s, k) = summarise_source_keeping_scopes(
                            &model_path(&source),
                            &source,
                            parsed.syntax(),
                        );
                        (Some(s), Some(k))
                    }
                };
                Ok::<_, String>((source, keep.then_some(parsed), summary, scopes))
            }));
            match r {
                Ok(Ok((source, parsed, summary, scopes))) => (
                    Loaded {
                        path: p.clone(),
                        state: Ok(LoadedFile {
                            source,
                            parsed,
                            project: None,
                            scopes: std::sync::Mutex::new(scopes),
                        }),
                    },
                    summary,
                ),
                Ok(Err(e)) => (
                    Loaded {
                        path: p.clone(),
                        state: Err(e),
                    },
                    None,
                ),
                Err(panic) => (
                    Loaded {
                        path: p.clone(),
                        state: Err(format!(
                            "internal error while reading (please report it): {}",
                            panic_message(&*panic)
                        )),
                    },
                    None,
                ),
            }
        })
        .collect();
    if !project {
        return (results.into_iter().map(|(l, _)| l).collect(), None);
    }
    let mut loaded = Vec::with_capacity(results.len());
    let mut summaries = Vec::new();
    let mut ids = Vec::with_capacity(results.len());
    for (l, s) in results {
        match s {
            Some(s) => {
                ids.push(Some(summaries.len() as u32));
                summaries.push(s);
            }
            None => ids.push(None),
        }
        loaded.push(l);
    }
    let roots: Vec<PathBuf> = roots
        .iter()
        .filter(|r| r.is_dir())
        .map(|r| std::path::absolute(r).unwrap_or_else(|_| r.clone()))
        .collect();
    let t1 = cpu_seconds();
    let w1 = w0.elapsed().as_secs_f64();
    if timing {
        let (mut fns, mut calls, mut args, mut classes, mut globals, mut events, mut lines) =
            (0, 0, 0, 0, 0, 0, 0);
        for s in &summaries {
            fns += s.functions.len();
            classes += s.classes.len();
            globals += s.globals.len();
            lines += s.line_starts.len();
            for f in &s.functions {
                calls += f.calls.len();
                events += f.events.len();
                args += f
                    .calls
                    .iter()
                    .map(|c| c.args.len() + c.kwargs.len())
                    .sum::<usize>();
            }
        }
        let rss = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS"))
                    .map(str::to_string)
            })
            .unwrap_or_default();
        eprintln!("after phase 1: {rss}");
        eprintln!("summaries: {fns} functions, {classes} classes, {globals} globals, {calls} calls ({args} arguments), {events} events, {lines} lines");
    }
    // Files whose star imports bring torch names: summarised again with them (kept tree, or
    // parsed again) before the model is linked; rare, so the common case costs one scan of
    // the files.
    let by_id: Vec<Option<usize>> = {
        let mut v = vec![None; summaries.len()];
        for (i, id) in ids.iter().enumerate() {
            if let Some(id) = id {
                v[*id as usize] = Some(i);
            }
        }
        v
    };
    let model = Arc::new(ProjectModel::build_with_star_torch_names(
        summaries,
        roots,
        &load_extra,
        &|id, names| {
            let Ok(f) = &loaded[by_id.get(id as usize).copied().flatten()?].state else {
                return None;
            };
            let abs = model_path(&f.source);
            std::panic::catch_unwind(AssertUnwindSafe(|| match &f.parsed {
                Some(parsed) => summarise_source_with(&abs, &f.source, parsed.syntax(), names),
                None => {
                    let parsed = f.source.parse();
                    summarise_source_with(&abs, &f.source, parsed.syntax(), names)
                }
            }))
            .ok()
        },
    ));
    if timing {
        eprintln!(
            "timing (process CPU / wall): phase 1 (read, parse, summarise) {:.3}s / {:.3}s, link {:.3}s / {:.3}s, {} files ({} loaded outside the checked set)",
            t1 - t0,
            w1,
            cpu_seconds() - t1,
            w0.elapsed().as_secs_f64() - w1,
            model.len(),
            model.len() - loaded.len().min(model.len()),
        );
    }
    for (l, id) in loaded.iter_mut().zip(ids) {
        if let (Ok(f), Some(id)) = (&mut l.state, id) {
            f.project = Some(model.view(id));
        }
    }
    (loaded, Some(model))
}

/// The model after files changed (on disk or in an editor's buffer): `changed` summaries
/// replace the files of the same path or join the checked set, `removed` paths leave it.
/// When every changed file is already in the model and none leaves, only the links are
/// rebuilt ([`ProjectModel::rebuild_with_all`]); otherwise the model is linked again from the
/// summaries it holds (no file of the checked set is read again).
pub fn update_model(
    model: &ProjectModel,
    mut changed: Vec<FileSummary>,
    removed: &[PathBuf],
) -> ProjectModel {
    let all_known = changed.iter().all(|s| model.file_id(&s.path).is_some());
    if removed.is_empty() && all_known {
        match model.rebuild_with_all(changed) {
            Some(m) => return m,
            // Not reached: every path was found above.
            None => changed = Vec::new(),
        }
    }
    let mut by_path: rustc_hash::FxHashMap<PathBuf, FileSummary> = model
        .files()
        .filter(|&id| model.is_checked(id))
        .map(|id| (model.file(id).path.clone(), model.file(id).clone()))
        .collect();
    for p in removed {
        by_path.remove(p);
    }
    for s in changed {
        by_path.insert(s.path.clone(), s);
    }
    let mut summaries: Vec<FileSummary> = by_path.into_values().collect();
    summaries.sort_by(|a, b| a.path.cmp(&b.path));
    ProjectModel::build(summaries, model.roots().to_vec(), &load_extra)
}

/// [`ProjectModel::with_star_torch_names`] for a model whose files are read from disk (the
/// language server's rebuilt model): a file whose star imports bring torch names is read
/// and summarised again with them.
pub fn with_star_torch_names_from_disk(model: Arc<ProjectModel>) -> Arc<ProjectModel> {
    let paths: Vec<PathBuf> = model
        .files()
        .map(|id| model.file(id).path.clone())
        .collect();
    model.with_star_torch_names(&|id, names| {
        let path = paths.get(id as usize)?;
        std::panic::catch_unwind(|| {
            let source = SourceFile::load(path).ok()?;
            let parsed = source.parse();
            Some(summarise_source_with(path, &source, parsed.syntax(), names))
        })
        .ok()
        .flatten()
    })
}

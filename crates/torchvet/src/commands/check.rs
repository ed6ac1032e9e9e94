//! `torchvet check`: resolve settings, discover files, lint them in parallel, print.
use crate::args::{CheckArgs, OutputFormatArg};
use crate::cache::{self, Cache};
use crate::printer;
use globset::{Glob, GlobSet, GlobSetBuilder};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use torchvet_diagnostics::progress::{Progress, MANY_FILES};
use torchvet_diagnostics::{render, Diagnostic, OutputFormat, RenderOptions, Severity};
use torchvet_linter::project::{load_project, Loaded};
use torchvet_linter::{expand_selector, FileContext, LintSettings, Linter, Version};
use torchvet_python::SourceFile;
use torchvet_workspace::{
    discover, find_config, load_config, ConfigFile, DiscoveryOptions, TorchTargets,
};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Everything resolved from CLI + config.
struct Resolved {
    linter: Linter,
    discovery: DiscoveryOptions,
    per_file_ignores: Vec<(GlobSet, Vec<usize>)>,
    root: PathBuf,
    /// Without `--target-torch` or a `target-torch` setting: each file's target is the torch
    /// requirement declared nearest to it.
    per_file_targets: Option<TorchTargets>,
}

fn resolve(args: &CheckArgs, paths: &[PathBuf]) -> Result<Resolved, String> {
    let config: Option<ConfigFile> = if args.isolated {
        None
    } else if let Some(path) = &args.config {
        match load_config(path) {
            Ok(Some(c)) => Some(c),
            Ok(None) => return Err(format!("{}: no [tool.torchvet] table", path.display())),
            Err(e) => return Err(e.to_string()),
        }
    } else {
        find_config(&paths[0]).map_err(|e| e.to_string())?
    };
    let opts = config
        .as_ref()
        .map(|c| c.options.clone())
        .unwrap_or_default();
    let select = args.select.clone().or(opts.select.clone());
    let mut extend = opts.extend_select.clone().unwrap_or_default();
    extend.extend(args.extend_select.iter().cloned());
    let mut ignore = opts.ignore.clone().unwrap_or_default();
    ignore.extend(args.ignore.iter().cloned());
    let preview = args.preview || opts.preview.unwrap_or(false);
    let mut settings = LintSettings::from_selectors(select.as_deref(), &extend, &ignore, preview)
        .map_err(|e| e.to_string())?;
    let root = config
        .as_ref()
        .map(|c| c.root().to_path_buf())
        .unwrap_or_else(|| std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")));
    settings.target_torch = match (&args.target_torch, &opts.target_torch) {
        (Some(v), _) => Some(
            Version::parse(v)
                .ok_or_else(|| format!("--target-torch: `{v}` is not a version like 2.1"))?,
        ),
        (None, Some(v)) => Version::parse(v),
        (None, None) => None,
    };
    let per_file_targets = (args.target_torch.is_none() && opts.target_torch.is_none())
        .then(|| TorchTargets::with_roots(paths));
    let mut per_file_ignores = Vec::new();
    for (pattern, sels) in opts.per_file_ignores.iter().flatten() {
        let mut b = GlobSetBuilder::new();
        let pat = if pattern.contains('/') {
            pattern.clone()
        } else {
            format!("**/{pattern}")
        };
        b.add(Glob::new(&pat).map_err(|e| format!("per-file-ignores: {e}"))?);
        let set = b.build().map_err(|e| format!("per-file-ignores: {e}"))?;
        let mut idx = Vec::new();
        for s in sels {
            idx.extend(expand_selector(s).map_err(|e| e.to_string())?);
        }
        per_file_ignores.push((set, idx));
    }
    let mut extend_exclude = opts.extend_exclude.clone().unwrap_or_default();
    extend_exclude.extend(args.extend_exclude.iter().cloned());
    let scan_checkpoints = super::checkpoints::enabled(&settings);
    Ok(Resolved {
        linter: Linter::new(settings),
        discovery: DiscoveryOptions {
            exclude: opts.exclude.clone(),
            extend_exclude,
            root: root.clone(),
            extra_extensions: if scan_checkpoints {
                super::checkpoints::EXTENSIONS
                    .iter()
                    .map(|s| s.to_string())
                    .collect()
            } else {
                Vec::new()
            },
        },
        per_file_ignores,
        root,
        per_file_targets,
    })
}

fn display_name(path: &Path) -> String {
    let s = path.to_string_lossy();
    s.strip_prefix("./").unwrap_or(&s).to_string()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Lint,
    ParseOnly,
    /// Fix: write files (or only print a diff).
    Fix {
        unsafe_fixes: bool,
        diff: bool,
    },
}

#[derive(Default)]
struct FileResult {
    diagnostics: Vec<Diagnostic>,
    applied: Vec<torchvet_linter::apply::FixRecord>,
    dropped: Vec<torchvet_linter::apply::FixRecord>,
    diff: Option<String>,
    note: Option<String>,
}

enum Outcome {
    Findings(FileResult),
    Error(String, String),
}

fn fix_file(
    linter: &Linter,
    source: &SourceFile,
    name: &str,
    (unsafe_fixes, diff): (bool, bool),
    ctx: &FileContext,
) -> Result<FileResult, String> {
    let outcome = linter.fix_in(source, name, unsafe_fixes, ctx);
    let mut result = FileResult {
        diagnostics: outcome.remaining,
        applied: outcome.applied,
        dropped: outcome.dropped,
        ..FileResult::default()
    };
    // Notebooks: only the edited cells' sources change; the JSON keeps key order and indent.
    let (original, fixed, bom) = match (&source.kind, outcome.notebook_json) {
        (torchvet_python::SourceKind::Notebook(_), Some(Ok(json))) => {
            let raw = std::fs::read_to_string(&source.path)
                .map_err(|e| format!("cannot re-read: {e}"))?;
            let raw = raw.strip_prefix('\u{feff}').unwrap_or(&raw).to_string();
            (raw, json, source.bom)
        }
        (torchvet_python::SourceKind::Notebook(_), Some(Err(e))) => {
            result.note = Some(format!("fixes not written: {e}"));
            return Ok(result);
        }
        (torchvet_python::SourceKind::Notebook(_), None) => return Ok(result),
        _ => (source.text.to_string(), outcome.text, source.bom),
    };
    if fixed == original {
        return Ok(result);
    }
    if diff {
        let d = similar::TextDiff::from_lines(&original, &fixed);
        result.diff = Some(
            d.unified_diff()
                .context_radius(3)
                .header(&format!("a/{name}"), &format!("b/{name}"))
                .to_string(),
        );
    } else {
        write_atomically(&source.path, bom, &fixed)
            .map_err(|e| format!("cannot write fixes: {e}"))?;
    }
    Ok(result)
}

/// Write through a temporary file in the same directory and rename it over the original,
/// keeping the BOM and the permissions.
fn write_atomically(path: &Path, bom: bool, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let perms = std::fs::metadata(path)?.permissions();
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    if bom {
        tmp.write_all("\u{feff}".as_bytes())?;
    }
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    std::fs::set_permissions(tmp.path(), perms)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

thread_local! {
    /// Set while one file is analysed: a panic there becomes that file's error line.
    static IN_FILE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Keep the default panic report for panics outside per-file work; inside it, stay quiet
/// (the file's error line says what happened).
fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !IN_FILE.with(|f| f.get()) {
            default(info);
        }
    }));
}

fn catch_file(name: String, f: impl FnOnce() -> Result<FileResult, String>) -> Outcome {
    IN_FILE.with(|f| f.set(true));
    let result = std::panic::catch_unwind(AssertUnwindSafe(f));
    IN_FILE.with(|f| f.set(false));
    match result {
        Ok(Ok(d)) => Outcome::Findings(d),
        Ok(Err(e)) => Outcome::Error(name, e),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Outcome::Error(
                name,
                format!("internal error while linting (please report it): {msg}"),
            )
        }
    }
}

/// Every file's findings from the cache under the whole-tree hash, when all are there.
fn cached_tree(cache: &Cache, tree: &cache::TreeState, files: &[PathBuf]) -> Option<Vec<Outcome>> {
    files
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let key = tree.tree_key(i)?;
            cache.get(key, &display_name(p)).map(|d| {
                Outcome::Findings(FileResult {
                    diagnostics: d,
                    ..FileResult::default()
                })
            })
        })
        .collect()
}

/// The benchmark baseline: read and parse, nothing else.
fn parse_one(path: &Path) -> Outcome {
    catch_file(display_name(path), || {
        let source = SourceFile::load(path).map_err(|e| e.to_string())?;
        let _ = Linter::parse_only(&source);
        Ok(FileResult::default())
    })
}

/// Phase 2 for one file: the rules, with the file's view of the project model and its own
/// target torch (the requirement declared nearest to it, unless the run sets one).
fn lint_loaded(
    linter: &Linter,
    loaded: &Loaded,
    mode: Mode,
    targets: Option<&TorchTargets>,
) -> Outcome {
    let name = display_name(&loaded.path);
    let file = match &loaded.state {
        Ok(f) => f,
        Err(e) => return Outcome::Error(name, e.clone()),
    };
    let declared = targets.map(|t| t.targets(&loaded.path));
    let ctx = FileContext {
        project: file.project.clone(),
        target: declared.map(|d| d.torch),
        min_torch: declared.and_then(|d| d.min_torch),
        nearest_min_torch: declared.and_then(|d| d.nearest_min_torch),
        target_torchvision: declared.map(|d| d.torchvision),
        min_torchvision: declared.and_then(|d| d.min_torchvision),
        launches_with_rank_argument: declared.map(|d| d.launches_with_rank_argument),
        launches_with_env_rank: declared.map(|d| d.launches_with_env_rank),
        documented_min_torch: declared.and_then(|d| d.documented_min_torch),
    };
    catch_file(name.clone(), || {
        match mode {
            Mode::ParseOnly => Ok(FileResult::default()),
            Mode::Lint => {
                // Phase 1's scopes of the kept tree, taken once.
                let scopes = file.scopes.lock().ok().and_then(|mut s| s.take());
                Ok(FileResult {
                    diagnostics: linter.lint_file_with_scopes(
                        &file.source,
                        file.parsed.as_ref(),
                        scopes,
                        &name,
                        &ctx,
                    ),
                    ..FileResult::default()
                })
            }
            // A file decoded from the encoding it declares (`# coding=gbk`): writing it back as
            // UTF-8 would change every non-ASCII byte, and re-encoding risks what the encoding
            // cannot hold. It is checked, and its fixes are offered, not written.
            Mode::Fix { diff: false, .. } if file.source.encoding.is_some() => {
                let diagnostics = linter.lint_file(&file.source, file.parsed.as_ref(), &name, &ctx);
                let note = diagnostics
                .iter()
                .any(|d| d.fix.is_some())
                .then_some(file.source.encoding)
                .flatten()
                .map(|e| {
                    format!("fixes not written: the file is {e}-encoded, and torchvet writes UTF-8 files only")
                });
                Ok(FileResult {
                    diagnostics,
                    note,
                    ..FileResult::default()
                })
            }
            Mode::Fix { unsafe_fixes, diff } => {
                fix_file(linter, &file.source, &name, (unsafe_fixes, diff), &ctx)
            }
        }
    })
}

/// The checked files by project: the indices of `files` in each group, and the command-line
/// paths the group came from (its roots for the model). Paths in one repository (the project
/// a file belongs to everywhere else, [`torchvet_workspace::repository_root`]), paths inside
/// one another, and all paths outside any repository share a group. A file belongs to the
/// group of the paths it is under. One group (the common case: `torchvet check .`) is the
/// whole run.
fn project_groups(files: &[PathBuf], paths: &[PathBuf]) -> Vec<(Vec<usize>, Vec<PathBuf>)> {
    let whole = || vec![((0..files.len()).collect(), paths.to_vec())];
    if paths.len() < 2 {
        return whole();
    }
    let abs: Vec<PathBuf> = paths
        .iter()
        .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
        .collect();
    let keys: Vec<Option<PathBuf>> = abs
        .iter()
        .map(|p| {
            let dir = if p.is_dir() { p.as_path() } else { p.parent()? };
            torchvet_workspace::repository_root(dir)
        })
        .collect();
    // Union-find over the command-line paths.
    let mut parent: Vec<usize> = (0..abs.len()).collect();
    fn find(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for a in 0..abs.len() {
        for b in 0..a {
            let same = keys[a] == keys[b]
                || abs[a].starts_with(&abs[b])
                || abs[b].starts_with(&abs[a])
                || keys[a].as_ref().is_some_and(|k| abs[b].starts_with(k))
                || keys[b].as_ref().is_some_and(|k| abs[a].starts_with(k));
            if same {
                let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
                parent[ra] = rb;
            }
        }
    }
    let mut group_of_root: Vec<Option<usize>> = vec![None; abs.len()];
    let mut groups: Vec<(Vec<usize>, Vec<PathBuf>)> = Vec::new();
    let mut path_group = Vec::with_capacity(abs.len());
    for (i, path) in paths.iter().enumerate() {
        let r = find(&mut parent, i);
        let g = *group_of_root[r].get_or_insert_with(|| {
            groups.push((Vec::new(), Vec::new()));
            groups.len() - 1
        });
        groups[g].1.push(path.clone());
        path_group.push(g);
    }
    if groups.len() < 2 {
        return whole();
    }
    for (fi, f) in files.iter().enumerate() {
        let f = std::path::absolute(f).unwrap_or_else(|_| f.clone());
        // The deepest command-line path holding the file.
        let Some(pi) = (0..abs.len())
            .filter(|&i| f.starts_with(&abs[i]))
            .max_by_key(|&i| abs[i].components().count())
        else {
            // Not under any path as given (cannot happen for discovered files): keep the
            // whole run together rather than guess.
            return whole();
        };
        groups[path_group[pi]].0.push(fi);
    }
    groups.retain(|(m, _)| !m.is_empty());
    groups
}

pub fn run(args: &CheckArgs) -> u8 {
    install_panic_hook();
    let paths: Vec<PathBuf> = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let resolved = match resolve(args, &paths) {
        Ok(r) => r,
        Err(e) => {
            printer::err(&format!("error: {e}"));
            return 2;
        }
    };
    let found = discover(&paths, &resolved.discovery);
    let mode = if args.parse_only {
        Mode::ParseOnly
    } else if args.fix || args.diff || args.fix_only {
        Mode::Fix {
            unsafe_fixes: args.unsafe_fixes,
            diff: args.diff,
        }
    } else {
        Mode::Lint
    };
    let targets = resolved.per_file_targets.as_ref();
    let cache = (mode == Mode::Lint && !args.no_cache)
        .then(|| {
            let base = args
                .cache_dir
                .clone()
                .or_else(|| std::env::var_os("TORCHVET_CACHE_DIR").map(PathBuf::from))
                .unwrap_or_else(|| resolved.root.join(".torchvet_cache"));
            Cache::open(&base, resolved.linter.settings(), VERSION)
        })
        .flatten();
    let progress = Progress::items(
        found.files.len(),
        "files",
        found.files.len() >= MANY_FILES
            && matches!(
                args.output_format,
                None | Some(OutputFormatArg::Full | OutputFormatArg::Concise)
            ),
    )
    .with_prefix("Checking");
    // The target torch of each file is part of what its findings depend on.
    // (The declared lowest torch too: it decides whether some fixes are safe.)
    let target_of = |p: &Path| targets.map(|t| t.targets(p));
    let tree = cache.as_ref().map(|_| {
        cache::TreeState::read(&found.files, &|p| {
            use std::hash::{Hash, Hasher};
            let mut h = rustc_hash::FxHasher::default();
            format!("{:?}", target_of(p)).hash(&mut h);
            h.finish()
        })
    });
    let outcomes: Vec<Outcome> = if mode == Mode::ParseOnly {
        found.files.par_iter().map(|p| parse_one(p)).collect()
    } else if let Some(hits) = cache
        .as_ref()
        .zip(tree.as_ref())
        .and_then(|(c, t)| cached_tree(c, t, &found.files))
    {
        // Nothing in the checked tree changed since a cached run: every file's findings come
        // back without reading a syntax tree.
        hits
    } else if args.no_project {
        // Each file alone, in one pass (read, parse, lint).
        found
            .files
            .par_iter()
            .map(|p| {
                let (loaded, _) = load_project(std::slice::from_ref(p), &[], false);
                let outcome = loaded
                    .first()
                    .map(|l| lint_loaded(&resolved.linter, l, mode, targets))
                    .unwrap_or_else(|| Outcome::Error(display_name(p), "not read".into()));
                progress.inc(1);
                outcome
            })
            .collect()
    } else {
        // Phase 1: every file read, parsed and summarised once; the project model linked.
        // Phase 2: the rules, per file, against the model (through the cache when on: a file
        // whose content and view of the project are unchanged is not analysed again).
        // Separate projects given together (`torchvet check repo_a repo_b`) are analysed one
        // after the other, each with its own model: peak memory is that of the largest, and
        // its trees stay within the kept-tree budget.
        // With the cache on, every file's view digest is computed, and it reads the autograd
        // facts of every function with callers: compute them while each tree is at hand.
        torchvet_linter::set_eager_grad_flows(cache.is_some());
        let groups = project_groups(&found.files, &paths);
        let last = groups.len().saturating_sub(1);
        let mut outcomes: Vec<Option<Outcome>> = Vec::new();
        outcomes.resize_with(found.files.len(), || None);
        for (g, (members, roots)) in groups.into_iter().enumerate() {
            let files: Vec<PathBuf> = members.iter().map(|&i| found.files[i].clone()).collect();
            let (loaded, model) = load_project(&files, &roots, true);
            let w2 = std::time::Instant::now();
            let done: Vec<Outcome> = loaded
                .par_iter()
                .zip(members.par_iter())
                .map(|(l, &i)| {
                    let outcome = match (&cache, &tree, &l.state) {
                        (Some(c), Some(t), Ok(f)) => {
                            let deps = f
                                .project
                                .as_ref()
                                .map_or(0, |p| p.model.view_digest(p.file));
                            match t.file_key(i, u128::from(deps)) {
                                Some(key) => {
                                    let name = display_name(&l.path);
                                    let outcome = match c.get(key, &name) {
                                        Some(d) => Outcome::Findings(FileResult {
                                            diagnostics: d,
                                            ..FileResult::default()
                                        }),
                                        None => {
                                            let o = lint_loaded(&resolved.linter, l, mode, targets);
                                            if let Outcome::Findings(r) = &o {
                                                c.put(key, &r.diagnostics);
                                            }
                                            o
                                        }
                                    };
                                    if let (Outcome::Findings(r), Some(tk)) =
                                        (&outcome, t.tree_key(i))
                                    {
                                        c.put(tk, &r.diagnostics);
                                    }
                                    outcome
                                }
                                None => lint_loaded(&resolved.linter, l, mode, targets),
                            }
                        }
                        _ => lint_loaded(&resolved.linter, l, mode, targets),
                    };
                    progress.inc(1);
                    outcome
                })
                .collect();
            if std::env::var_os("TORCHVET_TIMING").is_some() {
                eprintln!(
                    "timing (wall): phase 2 (rules) {:.3}s, {} files ({} parsed again for their autograd facts)",
                    w2.elapsed().as_secs_f64(),
                    files.len(),
                    torchvet_linter::grad_flow_files()
                );
            }
            for (&i, o) in members.iter().zip(done) {
                outcomes[i] = Some(o);
            }
            if g == last {
                // Freeing every tree and summary one by one costs time for nothing at exit.
                std::mem::forget(loaded);
                std::mem::forget(model);
            } else {
                // The next project reuses the memory.
                drop(loaded);
                drop(model);
            }
        }
        found
            .files
            .iter()
            .zip(outcomes)
            .map(|(p, o)| o.unwrap_or_else(|| Outcome::Error(display_name(p), "not read".into())))
            .collect()
    };
    progress.finish();
    if let Some(c) = &cache {
        c.flush();
    }
    let mut diagnostics = Vec::new();
    let mut applied = Vec::new();
    let mut dropped = Vec::new();
    let mut diffs = String::new();
    let mut errors: Vec<(String, String)> = found
        .errors
        .iter()
        .map(|(p, e)| (display_name(p), e.clone()))
        .collect();
    for (path, outcome) in found.files.iter().zip(outcomes) {
        match outcome {
            Outcome::Findings(r) => {
                let name = display_name(path);
                applied.extend(r.applied.into_iter().map(|f| (name.clone(), f)));
                dropped.extend(r.dropped.into_iter().map(|f| (name.clone(), f)));
                if let Some(diff) = r.diff {
                    diffs.push_str(&diff);
                }
                if let Some(note) = r.note {
                    printer::err(&format!("note: {name}: {note}"));
                }
                let mut d = r.diagnostics;
                if !resolved.per_file_ignores.is_empty() {
                    let abs = std::path::absolute(path).unwrap_or_else(|_| path.clone());
                    let rel = abs.strip_prefix(&resolved.root).unwrap_or(path);
                    let ignored: Vec<usize> = resolved
                        .per_file_ignores
                        .iter()
                        .filter(|(set, _)| set.is_match(rel) || set.is_match(path))
                        .flat_map(|(_, idx)| idx.iter().copied())
                        .collect();
                    if !ignored.is_empty() {
                        let rules = torchvet_linter::all_rules();
                        d.retain(|diag| !ignored.iter().any(|&i| rules[i].code == diag.code));
                    }
                }
                diagnostics.extend(d);
            }
            Outcome::Error(name, e) => errors.push((name, e)),
        }
    }
    if !found.extra.is_empty() && !args.parse_only {
        let settings = resolved.linter.settings();
        let ckpt: Vec<Diagnostic> = found
            .extra
            .par_iter()
            .filter_map(|p| super::checkpoints::check(p, &display_name(p), settings))
            .collect();
        diagnostics.extend(ckpt);
    }
    diagnostics.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    errors.sort();
    for (name, e) in &errors {
        printer::err(&format!("error: {name}: {e}"));
    }
    let format = match args.output_format.unwrap_or(OutputFormatArg::Full) {
        OutputFormatArg::Full => OutputFormat::Full,
        OutputFormatArg::Concise => OutputFormat::Concise,
        OutputFormatArg::Json => OutputFormat::Json,
        OutputFormatArg::JsonLines => OutputFormat::JsonLines,
        OutputFormatArg::Sarif => OutputFormat::Sarif,
        OutputFormatArg::Github => OutputFormat::Github,
    };
    let human = matches!(format, OutputFormat::Full | OutputFormat::Concise);
    for (name, f) in &dropped {
        printer::err(&format!(
            "warning: {name}:{}: dropped the fix for {} ({}): the result did not parse",
            f.row, f.code, f.name
        ));
    }
    if args.diff {
        printer::out(&diffs);
        let n = applied.len();
        printer::err(&format!(
            "Would fix {n} finding{}.",
            if n == 1 { "" } else { "s" }
        ));
        return if n > 0 && !args.exit_zero { 1 } else { 0 };
    }
    if args.show_fixes && !applied.is_empty() {
        let mut s = String::from("Fixed:\n");
        for (name, f) in &applied {
            s.push_str(&format!(
                "  {name}:{}: {} {}: {}\n",
                f.row, f.code, f.name, f.message
            ));
        }
        printer::out(&s);
    }
    if args.fix_only {
        if !args.quiet {
            let n = applied.len();
            printer::out(&format!(
                "Fixed {n} finding{}.\n",
                if n == 1 { "" } else { "s" }
            ));
        }
        return if !errors.is_empty() && !args.exit_zero {
            2
        } else {
            0
        };
    }
    if human && !args.quiet && (args.fix || args.unsafe_fixes) {
        let n = applied.len();
        printer::out(&format!(
            "Fixed {n} finding{}.\n",
            if n == 1 { "" } else { "s" }
        ));
    }
    if args.statistics {
        printer::out(&statistics(&diagnostics));
    } else {
        printer::out(&render(
            &diagnostics,
            &RenderOptions {
                format,
                version: VERSION,
            },
        ));
    }
    if human && !args.quiet {
        printer::out(&summary(
            &diagnostics,
            found.files.len() + found.extra.len(),
            errors.len(),
        ));
    }
    if !errors.is_empty() && !args.exit_zero {
        2
    } else if !diagnostics.is_empty() && !args.exit_zero {
        1
    } else {
        0
    }
}

fn statistics(diags: &[Diagnostic]) -> String {
    let mut counts: BTreeMap<(&str, &str), (usize, bool)> = BTreeMap::new();
    for d in diags {
        let e = counts.entry((d.code, d.name)).or_insert((0, false));
        e.0 += 1;
        e.1 |= d
            .fix
            .as_ref()
            .is_some_and(|f| f.applicability == torchvet_diagnostics::Applicability::Safe);
    }
    let mut rows: Vec<_> = counts.into_iter().collect();
    rows.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(&b.0)));
    let mut s = String::new();
    for ((code, name), (n, fixable)) in rows {
        s.push_str(&format!(
            "{n:>6}  {code}  {}{name}\n",
            if fixable { "[*] " } else { "" }
        ));
    }
    s
}

fn summary(diags: &[Diagnostic], files: usize, errors: usize) -> String {
    if diags.is_empty() && errors == 0 {
        return format!(
            "All checks passed! ({files} file{} checked)\n",
            if files == 1 { "" } else { "s" }
        );
    }
    if diags.is_empty() {
        return format!(
            "No findings, but {errors} of {files} file{} could not be checked (see the errors above).\n",
            if files == 1 { "" } else { "s" }
        );
    }
    let count = |s: Severity| diags.iter().filter(|d| d.severity == s).count();
    let fixable = diags
        .iter()
        .filter(|d| {
            d.fix
                .as_ref()
                .is_some_and(|f| f.applicability == torchvet_diagnostics::Applicability::Safe)
        })
        .count();
    let mut s = format!(
        "Found {} finding{} in {} file{} checked ({} critical, {} warning, {} info).\n",
        diags.len(),
        if diags.len() == 1 { "" } else { "s" },
        files,
        if files == 1 { "" } else { "s" },
        count(Severity::Critical),
        count(Severity::Warning),
        count(Severity::Info)
    );
    if fixable > 0 {
        s.push_str(&format!(
            "[*] {fixable} fixable with `torchvet check --fix`.\n"
        ));
    }
    if errors > 0 {
        s.push_str(&format!(
            "{errors} file{} could not be checked (see the errors above).\n",
            if errors == 1 { "" } else { "s" }
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::project_groups;
    use std::path::{Path, PathBuf};

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, "").expect("write");
    }

    /// The groups as sorted lists of file names (relative to `root`).
    fn names(
        root: &Path,
        files: &[PathBuf],
        groups: &[(Vec<usize>, Vec<PathBuf>)],
    ) -> Vec<Vec<String>> {
        let mut out: Vec<Vec<String>> = groups
            .iter()
            .map(|(m, _)| {
                let mut v: Vec<String> = m
                    .iter()
                    .map(|&i| {
                        files[i]
                            .strip_prefix(root)
                            .expect("under root")
                            .to_string_lossy()
                            .replace('\\', "/")
                    })
                    .collect();
                v.sort();
                v
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn separate_repositories_are_separate_projects() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/.git")).expect("mkdir");
        std::fs::create_dir_all(root.join("b/.git")).expect("mkdir");
        let files = vec![
            root.join("a/model.py"),
            root.join("a/train.py"),
            root.join("b/net.py"),
        ];
        files.iter().for_each(|f| touch(f));
        let paths = vec![root.join("a"), root.join("b")];
        let groups = project_groups(&files, &paths);
        assert_eq!(
            names(root, &files, &groups),
            vec![vec!["a/model.py", "a/train.py"], vec!["b/net.py"]]
        );
    }

    #[test]
    fn paths_of_one_project_stay_together() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        // One repository, two of its directories and a submodule of it given; and a package
        // given with its parent directory.
        std::fs::create_dir_all(root.join("repo/.git")).expect("mkdir");
        std::fs::create_dir_all(root.join("repo/third_party/lib/.git")).expect("mkdir");
        let files = vec![
            root.join("repo/src/model.py"),
            root.join("repo/scripts/train.py"),
            root.join("repo/third_party/lib/layers.py"),
            root.join("proj/pkg/a.py"),
            root.join("proj/b.py"),
        ];
        files.iter().for_each(|f| touch(f));
        let paths = vec![
            root.join("repo/src"),
            root.join("repo/scripts"),
            root.join("repo/third_party/lib"),
            root.join("proj/pkg"),
            root.join("proj"),
        ];
        let groups = project_groups(&files, &paths);
        assert_eq!(
            names(root, &files, &groups),
            vec![
                vec!["proj/b.py", "proj/pkg/a.py"],
                vec![
                    "repo/scripts/train.py",
                    "repo/src/model.py",
                    "repo/third_party/lib/layers.py"
                ],
            ]
        );
    }

    #[test]
    fn directories_without_project_markers_stay_one_project() {
        // Sibling directories of an exported project (no repository, no declaration) may
        // import each other: they are not split.
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let files = vec![root.join("models/net.py"), root.join("train/loop.py")];
        files.iter().for_each(|f| touch(f));
        let paths = vec![root.join("models"), root.join("train")];
        let groups = project_groups(&files, &paths);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].0, vec![0, 1]);
    }
}

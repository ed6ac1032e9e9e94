//! The tree walk and the decision of every trigger and field.

use crate::deps::{dep_file_kind, parse_ini, read_text, rel, DepFacts, ScriptEntry};
use crate::pyscan::{self, Hit, PyFacts};
use crate::requirement::{is_torch, DeclaredRequirement};
use crate::{best_requirement, Evidence};
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use torchvet_python::launch::Launcher;

/// Directories never entered.
const SKIP_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    "site-packages",
    "node_modules",
    "__pycache__",
    "build",
    "dist",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".ipynb_checkpoints",
    ".eggs",
    ".idea",
    ".vscode",
];
/// Python files larger than this are not parsed.
const MAX_PY: u64 = 4 * 1024 * 1024;
/// Evidence items kept per trigger/field in the report.
const MAX_EVIDENCE: usize = 50;

/// Ecosystem packages reported in `tech_stack`, in display order.
const ECOSYSTEM: &[&str] = &[
    "torch",
    "pytorch",
    "torchvision",
    "torchaudio",
    "torchtext",
    "torchdata",
    "torchmetrics",
    "lightning",
    "pytorch-lightning",
    "transformers",
    "diffusers",
    "timm",
    "accelerate",
    "deepspeed",
    "peft",
    "bitsandbytes",
    "xformers",
    "flash-attn",
    "triton",
    "fairscale",
    "torch-geometric",
    "torch-scatter",
    "einops",
    "safetensors",
    "onnx",
    "onnxruntime",
    "onnxruntime-gpu",
    "tensorrt",
    "datasets",
    "tokenizers",
    "hydra-core",
    "omegaconf",
    "tensorboard",
    "wandb",
    "mlflow",
    "optuna",
    "ray",
];

/// Why the directory counts as a PyTorch project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TriggerKind {
    /// torch (or an ecosystem package) among the declared dependencies.
    Dependency,
    /// `import torch` / `from torch ...` in Python files or notebooks.
    Import,
    /// Checkpoint files (`.pt`, `.pth`, `.ckpt`, `.safetensors`, torch-zip `.bin`).
    Checkpoint,
    /// `nn.Module` subclasses.
    Module,
}

impl TriggerKind {
    fn label(self) -> &'static str {
        match self {
            TriggerKind::Dependency => "torch in dependencies",
            TriggerKind::Import => "import torch statements",
            TriggerKind::Checkpoint => "checkpoint files",
            TriggerKind::Module => "nn.Module subclasses",
        }
    }
}

/// One trigger that matched, with its evidence.
#[derive(Debug, Clone, Serialize)]
pub struct Trigger {
    /// Which trigger.
    pub kind: TriggerKind,
    /// Human description of the trigger.
    pub description: &'static str,
    /// How many matches in total (evidence is capped).
    pub count: usize,
    /// The matches (at most 50).
    pub evidence: Vec<Evidence>,
}

/// A directory and how many relevant files/classes it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DirCount {
    /// Directory relative to the root (`.` for the root itself).
    pub dir: String,
    /// Number of matching items.
    pub count: usize,
    /// Total size in bytes (checkpoint directories only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

/// One project-knowledge field: its rendered value and the evidence that decided it.
#[derive(Debug, Clone, Serialize)]
pub struct Field {
    /// Field name, as used in `{{field}}` placeholders.
    pub name: &'static str,
    /// The value substituted for `{{name}}`.
    pub value: String,
    /// Directory breakdown for the `*_dirs` fields.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dirs: Vec<DirCount>,
    /// How many evidence items were found (the list is capped at 50).
    pub count: usize,
    /// The evidence (at most 50 items; the first decided the value).
    pub evidence: Vec<Evidence>,
}

/// Everything `torchvet project` reports.
#[derive(Debug, Clone, Serialize)]
pub struct ProjectReport {
    /// The analysed directory as given.
    pub root: String,
    /// True when any trigger matched.
    pub is_pytorch_project: bool,
    /// Matched triggers, in the order of the agent guide.
    pub triggers: Vec<Trigger>,
    /// The project-knowledge fields, in template order.
    pub fields: Vec<Field>,
    /// Declared torch-ecosystem requirements.
    pub requirements: Vec<DeclaredRequirement>,
    /// Files that could not be read or parsed, broken includes.
    pub warnings: Vec<String>,
}

impl ProjectReport {
    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// The field names, in template order.
pub const FIELD_NAMES: &[&str] = &[
    "tech_stack",
    "pytorch_version",
    "cuda_available",
    "model_dirs",
    "checkpoint_dirs",
    "training_dirs",
    "config_dirs",
    "train_command",
    "test_command",
    "export_command",
    "profile_command",
];

fn walker(root: &Path) -> ignore::Walk {
    ignore::WalkBuilder::new(root)
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .parents(false)
        .sort_by_file_path(|a, b| a.cmp(b))
        .filter_entry(|e| {
            if e.depth() == 0 {
                return true;
            }
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            let name = e.file_name().to_string_lossy();
            !(is_dir && (SKIP_DIRS.contains(&name.as_ref()) || name.ends_with(".egg-info")))
        })
        .build()
}

fn files(root: &Path) -> Vec<PathBuf> {
    walker(root)
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(ignore::DirEntry::into_path)
        .collect()
}

/// Files that may hold a launch command: shell and job scripts, documentation, CI and
/// config files, Makefiles and Dockerfiles.
fn may_hold_launch_command(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if matches!(name, "Makefile" | "Dockerfile" | "Procfile") {
        return true;
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    matches!(
        ext.as_str(),
        "sh" | "bash"
            | "zsh"
            | "slurm"
            | "sbatch"
            | "pbs"
            | "job"
            | "md"
            | "rst"
            | "txt"
            | "yaml"
            | "yml"
            | "cfg"
            | "toml"
    )
}

/// The programs (file names, `main.py`) that `text` starts with the legacy launcher (`python
/// -m torch.distributed.launch ... main.py` or `.../torch/distributed/launch.py ... main.py`)
/// without `--use_env` / `--use-env`. Shell continuations (`\\` at a line's end) join a
/// command.
#[cfg(test)]
pub(crate) fn legacy_launched_programs(text: &str) -> Vec<String> {
    torchvet_python::launch::launched_programs(text)
        .into_iter()
        .filter(|(_, k)| *k == Launcher::Legacy)
        .map(|(p, _)| p)
        .collect()
}

/// Programs started by the legacy launcher, and by the environment-rank launchers.
type LaunchedPrograms = (Vec<String>, Vec<String>);

/// The programs the project's scripts and documents among `all` start (files above 1 MB
/// are not read): (with the legacy launcher, with `torchrun` / `torch.distributed.run` /
/// `--use_env`), each sorted and without repeats.
pub(crate) fn launched_programs_in(all: &[PathBuf]) -> LaunchedPrograms {
    let mut legacy = Vec::new();
    let mut env = Vec::new();
    for b in all
        .iter()
        .filter(|p| {
            may_hold_launch_command(p) && std::fs::metadata(p).is_ok_and(|m| m.len() <= 1 << 20)
        })
        .filter_map(|p| std::fs::read(p).ok())
    {
        for (p, k) in torchvet_python::launch::launched_programs(&String::from_utf8_lossy(&b)) {
            match k {
                Launcher::Legacy => legacy.push(p),
                Launcher::Env => env.push(p),
            }
        }
    }
    for v in [&mut legacy, &mut env] {
        v.sort();
        v.dedup();
    }
    (legacy, env)
}

/// [`legacy_launched_programs`] over the project's scripts and documents among `all`.
#[cfg(test)]
pub(crate) fn legacy_launched_programs_in(all: &[PathBuf]) -> Vec<String> {
    launched_programs_in(all).0
}

/// Parse only the dependency files under `root`.
pub(crate) fn collect_deps(root: &Path) -> DepFacts {
    let all = files(root);
    deps_of(root, &all)
}

/// The dependency facts and the legacy-launched programs of the project under `root`, from
/// one walk of its tree.
pub(crate) fn collect_deps_and_launches(
    root: &Path,
) -> (DepFacts, LaunchedPrograms, Option<(u32, u32)>) {
    let all = files(root);
    (
        deps_of(root, &all),
        launched_programs_in(&all),
        crate::documented::documented_torch_floor(root, &all),
    )
}

/// The dependency facts of the files directly in `dir` (no recursion).
pub(crate) fn collect_deps_in_dir(dir: &Path) -> DepFacts {
    // Names first: only dependency files are stat-ed (this runs for every directory above a
    // checked file, and most entries are sources).
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| dep_file_kind(p).is_some() && p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.extend(readme_scripts(dir, &files));
    files.sort();
    deps_of(dir, &files)
}

/// Shell scripts below `dir` that its README tells the reader to run (`bash
/// scripts/setup_env.sh`, "follow `tools/install.sh`"): they install the torch the project
/// runs on as much as a script beside the README does. Paths are taken as written, relative
/// to `dir`, and kept only when they name an existing file inside `dir`; `have` are the files
/// already read.
fn readme_scripts(dir: &Path, have: &[PathBuf]) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = Vec::new();
    for e in rd.filter_map(Result::ok) {
        let name = e.file_name().to_string_lossy().to_ascii_uppercase();
        if !name.starts_with("README") {
            continue;
        }
        let path = e.path();
        if std::fs::metadata(&path).map_or(true, |m| !m.is_file() || m.len() > 1 << 20) {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        for word in text.split(|c: char| {
            c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '(' | ')' | '[' | ']' | '<' | '>')
        }) {
            let word = word
                .trim_start_matches("./")
                .trim_end_matches(['.', ',', ':', ';']);
            if !word.ends_with(".sh") || word.contains("..") || word.starts_with('/') {
                continue;
            }
            if word.contains("://") {
                continue;
            }
            let p = dir.join(word);
            if p.is_file() && !have.contains(&p) && !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// Parse the dependency files among `all`, shallow files first (so that a root requirements
/// file is read as itself before a nested file includes it).
fn deps_of(root: &Path, all: &[PathBuf]) -> DepFacts {
    let mut dep_files: Vec<(&PathBuf, crate::deps::DepKind)> = all
        .iter()
        .filter_map(|p| dep_file_kind(p).map(|k| (p, k)))
        .collect();
    dep_files.sort_by_key(|(p, _)| (p.components().count(), (*p).clone()));
    let mut facts = DepFacts::default();
    for (path, kind) in dep_files {
        facts.add_file(root, path, kind);
    }
    facts
}

struct CheckpointFile {
    path: String,
    size: u64,
    lfs_pointer: bool,
}

fn checkpoint_kind(path: &Path) -> Option<CheckpointFile> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    let size = std::fs::metadata(path).ok()?.len();
    let head = read_head(path, 512);
    let lfs_pointer = size < 1024 && head.starts_with(b"version https://git-lfs");
    let ok = match ext.as_str() {
        "pt" | "pth" | "ckpt" | "safetensors" => true,
        // `.bin` only when it is a torch zip (a `data.pkl` member).
        "bin" => lfs_pointer || (head.starts_with(b"PK\x03\x04") && zip_has_data_pkl(path, size)),
        _ => false,
    };
    ok.then(|| CheckpointFile {
        path: String::new(),
        size,
        lfs_pointer,
    })
}

fn read_head(path: &Path, n: usize) -> Vec<u8> {
    let mut buf = Vec::with_capacity(n);
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(n as u64).read_to_end(&mut buf);
    }
    buf
}

/// Look for a `.../data.pkl` name in the first local header and the central directory.
fn zip_has_data_pkl(path: &Path, size: u64) -> bool {
    use std::io::{Seek, SeekFrom};
    let finder = memchr::memmem::Finder::new(b"data.pkl");
    if finder.find(&read_head(path, 4096)).is_some() {
        return true;
    }
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let tail = size.min(1 << 20);
    if f.seek(SeekFrom::Start(size - tail)).is_err() {
        return false;
    }
    let mut buf = Vec::with_capacity(tail as usize);
    if f.take(tail).read_to_end(&mut buf).is_err() {
        return false;
    }
    finder.find(&buf).is_some()
}

const HYPER_KEYS: &[&str] = &[
    "learning_rate",
    "lr",
    "batch_size",
    "epochs",
    "max_epochs",
    "num_epochs",
    "weight_decay",
    "optimizer",
    "hidden_size",
    "hidden_dim",
    "num_layers",
    "dropout",
    "warmup_steps",
    "momentum",
    "max_steps",
    "d_model",
    "_target_",
    "seed",
    "gradient_accumulation_steps",
];

const NOT_CONFIG: &[&str] = &[
    "pyproject.toml",
    "package.json",
    "package-lock.json",
    "tsconfig.json",
    ".pre-commit-config.yaml",
    "environment.yml",
    "environment.yaml",
    "mkdocs.yml",
    ".readthedocs.yaml",
    ".readthedocs.yml",
    "codecov.yml",
    "poetry.lock",
    "uv.lock",
    "pdm.lock",
    "pipfile.lock",
    "cargo.toml",
    ".markdownlint.yaml",
    "dependabot.yml",
    "citation.cff",
    "renovate.json",
    ".zenodo.json",
    "tox.toml",
    "ruff.toml",
    ".ruff.toml",
    "torchvet.toml",
];

/// The first hyperparameter-looking key in a config file (1-based line, text).
fn config_evidence(path: &Path) -> Option<(u32, String)> {
    let name = path.file_name()?.to_str()?.to_ascii_lowercase();
    if NOT_CONFIG.contains(&name.as_str()) || name.ends_with(".ipynb") {
        return None;
    }
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    if !matches!(ext.as_str(), "yaml" | "yml" | "json" | "toml") {
        return None;
    }
    if std::fs::metadata(path).ok()?.len() > 1024 * 1024 {
        return None;
    }
    let text = read_text(path)?;
    let in_conf_dir = path.components().any(|c| {
        matches!(
            c.as_os_str().to_str(),
            Some("conf" | "config" | "configs" | "cfg" | "hparams" | "hydra")
        )
    });
    for (i, line) in text.lines().enumerate().take(2000) {
        let t = line
            .trim()
            .trim_start_matches('-')
            .trim()
            .trim_start_matches('"')
            .to_ascii_lowercase();
        for key in HYPER_KEYS {
            if let Some(rest) = t.strip_prefix(key) {
                let rest = rest.trim_start_matches('"').trim_start();
                if rest.starts_with(':') || rest.starts_with('=') {
                    return Some((i as u32 + 1, line.trim().to_string()));
                }
            }
        }
        if t.starts_with("defaults:") {
            return Some((i as u32 + 1, line.trim().to_string()));
        }
    }
    if in_conf_dir {
        return Some((1, "config file in a configuration directory".to_string()));
    }
    None
}

fn dir_of(rel_path: &str) -> String {
    match rel_path.rsplit_once('/') {
        Some((d, _)) => d.to_string(),
        None => ".".to_string(),
    }
}

fn hit_evidence(file: &str, h: &Hit) -> Evidence {
    Evidence {
        file: file.to_string(),
        line: Some(h.line),
        cell: h.cell,
        text: h.text.clone(),
    }
}

fn count_dirs(items: &[(String, u64)]) -> Vec<DirCount> {
    let mut map: BTreeMap<String, (usize, u64)> = BTreeMap::new();
    for (file, bytes) in items {
        let e = map.entry(dir_of(file)).or_default();
        e.0 += 1;
        e.1 += bytes;
    }
    let mut v: Vec<DirCount> = map
        .into_iter()
        .map(|(dir, (count, b))| DirCount {
            dir,
            count,
            bytes: Some(b),
        })
        .collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.dir.cmp(&b.dir)));
    v
}

fn dirs_value(dirs: &[DirCount]) -> String {
    if dirs.is_empty() {
        return "none found".to_string();
    }
    dirs.iter()
        .map(|d| {
            if d.dir == "." {
                "./".to_string()
            } else {
                format!("{}/", d.dir)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn capped(mut v: Vec<Evidence>) -> Vec<Evidence> {
    v.truncate(MAX_EVIDENCE);
    v
}

fn req_evidence(r: &DeclaredRequirement) -> Evidence {
    Evidence::new(
        r.source.to_string_lossy().replace('\\', "/"),
        Some(r.line),
        &r.text,
    )
}

struct Makefile {
    file: String,
    targets: Vec<(String, u32, String)>,
}

fn makefile_targets(root: &Path, path: &Path) -> Option<Makefile> {
    let text = read_text(path)?;
    let mut targets = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with(['\t', ' ', '#', '.']) {
            continue;
        }
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        if rest.starts_with('=') || name.contains('=') || name.contains('$') || name.contains('%') {
            continue;
        }
        for t in name.split_whitespace() {
            targets.push((t.to_string(), i as u32 + 1, line.trim().to_string()));
        }
    }
    Some(Makefile {
        file: rel(root, path),
        targets,
    })
}

/// Analyse the directory `root`.
pub fn analyze(root: &Path) -> ProjectReport {
    use rayon::prelude::*;
    let all = files(root);
    let deps = deps_of(root, &all);
    let mut py_files: Vec<(String, PathBuf, bool)> = Vec::new();
    let mut checkpoints: Vec<CheckpointFile> = Vec::new();
    let mut configs: Vec<(String, u32, String)> = Vec::new();
    let mut makefiles: Vec<Makefile> = Vec::new();
    let mut tox: Vec<(String, String, u32)> = Vec::new(); // command, file, line
    let mut tox_pytest: Option<Evidence> = None;
    let mut pytest_ini: Vec<(Vec<String>, Evidence)> = Vec::new();
    let mut test_files: Vec<String> = Vec::new();
    let mut nox_sessions: Vec<(String, Evidence)> = Vec::new();

    for path in &all {
        let r = rel(root, path);
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        let lower = name.to_ascii_lowercase();
        if let Some(mut c) = checkpoint_kind(path) {
            c.path = r.clone();
            checkpoints.push(c);
            continue;
        }
        if lower.ends_with(".py") || lower.ends_with(".ipynb") {
            // pytest's default discovery, restricted to test directories (a `test_time_pool.py`
            // module inside a package is not a test).
            let in_test_dir = r
                .split('/')
                .rev()
                .skip(1)
                .any(|c| matches!(c, "tests" | "test" | "testing" | "unittests"));
            let test_name = lower.starts_with("test_") || lower.ends_with("_test.py");
            if lower == "conftest.py" || (in_test_dir && test_name && lower.ends_with(".py")) {
                test_files.push(r.clone());
            }
            if lower == "noxfile.py" {
                if let Some(text) = read_text(path) {
                    let lines: Vec<&str> = text.lines().collect();
                    for (i, l) in lines.iter().enumerate() {
                        if l.trim_start().starts_with("@nox.session")
                            || l.trim_start().starts_with("@session")
                        {
                            if let Some((j, def)) = lines
                                .iter()
                                .enumerate()
                                .skip(i + 1)
                                .find(|(_, d)| d.trim_start().starts_with("def "))
                            {
                                let fname: String = def.trim_start()[4..]
                                    .chars()
                                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                                    .collect();
                                nox_sessions.push((
                                    fname,
                                    Evidence::new(r.clone(), Some(j as u32 + 1), def),
                                ));
                            }
                        }
                    }
                }
            }
            let is_nb = lower.ends_with(".ipynb");
            py_files.push((r, path.clone(), is_nb));
            continue;
        }
        if lower == "makefile" || lower == "gnumakefile" {
            if let Some(m) = makefile_targets(root, path) {
                makefiles.push(m);
            }
            continue;
        }
        if lower == "tox.ini" || lower == "pytest.ini" {
            if let Some(text) = read_text(path) {
                for (i, l) in text.lines().enumerate() {
                    let t = l.trim();
                    if let Some(env) = t
                        .strip_prefix("[testenv:")
                        .and_then(|x| x.strip_suffix(']'))
                    {
                        tox.push((format!("tox -e {env}"), r.clone(), i as u32 + 1));
                    } else if t == "[testenv]" {
                        tox.push(("tox".to_string(), r.clone(), i as u32 + 1));
                    } else if t == "[pytest]" {
                        let paths: Vec<String> = parse_ini(&text)
                            .into_iter()
                            .find(|e| e.section == "pytest" && e.key == "testpaths")
                            .map(|e| {
                                e.values
                                    .iter()
                                    .flat_map(|(_, v)| {
                                        v.split_whitespace().map(String::from).collect::<Vec<_>>()
                                    })
                                    .collect()
                            })
                            .unwrap_or_default();
                        let ev = Evidence::new(r.clone(), Some(i as u32 + 1), t);
                        if lower == "pytest.ini" {
                            pytest_ini.push((paths, ev));
                        } else {
                            tox_pytest = Some(ev);
                        }
                    }
                }
            }
            continue;
        }
        if let Some((line, text)) = config_evidence(path) {
            configs.push((r, line, text));
        }
    }

    // Python files in parallel.
    let py: Vec<(String, bool, PyFacts)> = py_files
        .par_iter()
        .map(|(r, path, is_nb)| {
            let mut facts = PyFacts::default();
            let small = std::fs::metadata(path).is_ok_and(|m| m.len() <= MAX_PY);
            if small {
                if let Some(text) = read_text(path) {
                    if *is_nb {
                        pyscan::scan_notebook(&text, &mut facts);
                    } else {
                        pyscan::scan_source(&text, None, &mut facts);
                    }
                }
            }
            (r.clone(), *is_nb, facts)
        })
        .collect();

    // nn.Module subclasses: direct bases, then project classes deriving from them (fixpoint).
    let mut module_names: HashSet<String> = HashSet::new();
    loop {
        let before = module_names.len();
        for (_, _, f) in &py {
            for c in &f.classes {
                let derives = c.bases.iter().any(|b| {
                    pyscan::is_module_base(b)
                        || module_names.contains(b.rsplit('.').next().unwrap_or(b))
                });
                if derives {
                    module_names.insert(c.name.clone());
                }
            }
        }
        if module_names.len() == before {
            break;
        }
    }
    let mut module_hits: Vec<Evidence> = Vec::new();
    let mut module_files: Vec<(String, u64)> = Vec::new();
    for (file, _, f) in &py {
        for c in &f.classes {
            let derives = c.bases.iter().any(|b| {
                pyscan::is_module_base(b)
                    || module_names.contains(b.rsplit('.').next().unwrap_or(b))
            });
            if derives {
                module_hits.push(hit_evidence(file, &c.hit));
                module_files.push((file.clone(), 0));
            }
        }
    }

    // ---- triggers
    let mut triggers = Vec::new();
    let torch_family = |n: &str| {
        matches!(
            n,
            "torch" | "pytorch" | "torchvision" | "torchaudio" | "lightning" | "pytorch-lightning"
        )
    };
    let dep_hits: Vec<Evidence> = deps
        .requirements
        .iter()
        .chain(deps.locks.iter().filter(|l| is_torch(&l.normalized)))
        .filter(|r| torch_family(&r.normalized))
        .map(req_evidence)
        .collect();
    if !dep_hits.is_empty() {
        triggers.push(make_trigger(TriggerKind::Dependency, dep_hits));
    }
    let import_hits: Vec<Evidence> = py
        .iter()
        .flat_map(|(file, _, f)| f.torch_imports.iter().map(move |h| hit_evidence(file, h)))
        .collect();
    if !import_hits.is_empty() {
        triggers.push(make_trigger(TriggerKind::Import, import_hits));
    }
    if !checkpoints.is_empty() {
        let ev = checkpoints
            .iter()
            .map(|c| {
                let what = if c.lfs_pointer {
                    "Git LFS pointer".to_string()
                } else {
                    human_size(c.size)
                };
                Evidence::new(c.path.clone(), None, &what)
            })
            .collect();
        triggers.push(make_trigger(TriggerKind::Checkpoint, ev));
    }
    if !module_hits.is_empty() {
        triggers.push(make_trigger(TriggerKind::Module, module_hits.clone()));
    }

    // ---- fields
    let mut fields = Vec::new();

    // tech_stack
    let mut stack_parts = Vec::new();
    let mut stack_ev = Vec::new();
    if let Some((py_spec, ev)) = best_python(&deps.python) {
        stack_parts.push(format!("Python {py_spec}"));
        stack_ev.push(ev);
    }
    for name in ECOSYSTEM {
        if *name == "pytorch" {
            continue;
        }
        if let Some(r) = best_requirement(&deps.requirements, &[], name).or_else(|| {
            best_requirement(&[], &deps.locks, name).filter(|_| {
                matches!(
                    *name,
                    "torch" | "torchvision" | "torchaudio" | "lightning" | "pytorch-lightning"
                )
            })
        }) {
            let mut r = r;
            r.locked_version =
                best_requirement(&[], &deps.locks, name).and_then(|l| l.locked_version);
            let shown = if r.origin == crate::RequirementOrigin::Lock {
                format!("{name} {}", r.locked_version.clone().unwrap_or_default())
            } else {
                format!("{name} {}", r.display_specifier())
            };
            stack_parts.push(shown.trim().to_string());
            stack_ev.push(req_evidence(&r));
        }
    }
    if stack_parts.iter().all(|p| !p.starts_with("torch ")) && !import_hits_empty(&triggers) {
        stack_parts.push("torch (imported, not declared)".to_string());
    }
    fields.push(Field {
        name: "tech_stack",
        value: if stack_parts.is_empty() {
            "unknown".to_string()
        } else {
            stack_parts.join(", ")
        },
        dirs: Vec::new(),
        evidence: stack_ev,
        count: 0,
    });

    // pytorch_version
    let torch_req = best_requirement(&deps.requirements, &deps.locks, "torch");
    let (tv_value, tv_ev) = match &torch_req {
        Some(r) => {
            let mut ev = vec![req_evidence(r)];
            let mut v = if r.origin == crate::RequirementOrigin::Lock {
                format!("{} (locked)", r.locked_version.clone().unwrap_or_default())
            } else {
                let mut s = r.display_specifier();
                if let Some(uv) = crate::deps::url_version(r) {
                    s = format!("{uv} (from URL)");
                }
                s
            };
            if r.origin != crate::RequirementOrigin::Lock {
                if let Some(lock) = deps.locks.iter().find(|l| is_torch(&l.normalized)) {
                    v = format!(
                        "{v} (locked {})",
                        lock.locked_version.clone().unwrap_or_default()
                    );
                    ev.push(req_evidence(lock));
                }
            }
            (v, ev)
        }
        None => ("not declared".to_string(), Vec::new()),
    };
    fields.push(Field {
        name: "pytorch_version",
        value: tv_value,
        dirs: Vec::new(),
        evidence: tv_ev,
        count: 0,
    });

    // cuda_available
    fields.push(cuda_field(&deps, &py));

    // model_dirs
    let model_dirs = count_dirs(&module_files)
        .into_iter()
        .map(|d| DirCount { bytes: None, ..d })
        .collect::<Vec<_>>();
    fields.push(Field {
        name: "model_dirs",
        value: dirs_value(&model_dirs),
        dirs: model_dirs,
        evidence: module_hits,
        count: 0,
    });

    // checkpoint_dirs
    let ck: Vec<(String, u64)> = checkpoints
        .iter()
        .map(|c| (c.path.clone(), c.size))
        .collect();
    let ck_dirs = count_dirs(&ck);
    let ck_ev = checkpoints
        .iter()
        .map(|c| Evidence::new(c.path.clone(), None, &human_size(c.size)))
        .collect();
    fields.push(Field {
        name: "checkpoint_dirs",
        value: dirs_value(&ck_dirs),
        dirs: ck_dirs,
        evidence: ck_ev,
        count: 0,
    });

    // training_dirs
    let mut train_ev = Vec::new();
    let mut train_files = Vec::new();
    for (file, _, f) in &py {
        if let Some(h) = f.training.first() {
            train_ev.push(hit_evidence(file, h));
            train_files.push((file.clone(), 0));
        }
    }
    let train_dirs: Vec<DirCount> = count_dirs(&train_files)
        .into_iter()
        .map(|d| DirCount { bytes: None, ..d })
        .collect();
    fields.push(Field {
        name: "training_dirs",
        value: dirs_value(&train_dirs),
        dirs: train_dirs,
        evidence: train_ev,
        count: 0,
    });

    // config_dirs
    let cfg_files: Vec<(String, u64)> = configs.iter().map(|(f, _, _)| (f.clone(), 0)).collect();
    let cfg_dirs: Vec<DirCount> = count_dirs(&cfg_files)
        .into_iter()
        .map(|d| DirCount { bytes: None, ..d })
        .collect();
    let cfg_ev = configs
        .iter()
        .map(|(f, l, t)| Evidence::new(f.clone(), Some(*l), t))
        .collect();
    fields.push(Field {
        name: "config_dirs",
        value: dirs_value(&cfg_dirs),
        dirs: cfg_dirs,
        evidence: cfg_ev,
        count: 0,
    });

    // commands
    let make_cmd = |pred: &dyn Fn(&str) -> bool| -> Vec<(String, Evidence)> {
        makefiles
            .iter()
            .flat_map(|m| {
                m.targets
                    .iter()
                    .filter(|(t, _, _)| pred(t))
                    .map(move |(t, l, text)| {
                        let dir = dir_of(&m.file);
                        let cmd = if dir == "." {
                            format!("make {t}")
                        } else {
                            format!("make -C {dir} {t}")
                        };
                        (cmd, Evidence::new(m.file.clone(), Some(*l), text))
                    })
            })
            .collect()
    };
    let script_cmd =
        |scripts: &[ScriptEntry], pred: &dyn Fn(&str) -> bool| -> Vec<(String, Evidence)> {
            scripts
                .iter()
                .filter(|s| pred(&s.name.to_ascii_lowercase()))
                .map(|s| (s.command.clone(), s.evidence.clone()))
                .collect()
        };
    let py_cmd = |pred: &dyn Fn(&str, &PyFacts) -> Option<Hit>| -> Vec<(String, Evidence)> {
        let mut v: Vec<(usize, String, Evidence)> = py
            .iter()
            .filter(|(_, nb, _)| !nb)
            .filter_map(|(file, _, f)| {
                let h = pred(file, f)?;
                Some((
                    file.matches('/').count(),
                    format!("python {file}"),
                    hit_evidence(file, &h),
                ))
            })
            .collect();
        v.sort_by_key(|(depth, cmd, _)| (*depth, cmd.clone()));
        v.into_iter().map(|(_, c, e)| (c, e)).collect()
    };
    let base_name = |file: &str| file.rsplit('/').next().unwrap_or(file).to_ascii_lowercase();

    // train
    let mut train = script_cmd(&deps.scripts, &|n| n.contains("train"));
    train.extend(make_cmd(&|t| t.starts_with("train")));
    train.extend(
        nox_sessions
            .iter()
            .filter(|(n, _)| n.contains("train"))
            .map(|(n, e)| (format!("nox -s {n}"), e.clone())),
    );
    train.extend(py_cmd(&|file, f| {
        let b = base_name(file);
        (b.starts_with("train") && !file.contains("test")).then(|| {
            f.training.first().cloned().unwrap_or(Hit {
                line: 1,
                cell: None,
                text: "training script".into(),
            })
        })
    }));
    fields.push(command_field("train_command", train));

    // test
    let mut test = make_cmd(&|t| matches!(t, "test" | "tests" | "pytest" | "check"));
    test.extend(script_cmd(&deps.scripts, &|n| n == "test" || n == "tests"));
    for (paths, ev) in deps.pytest.iter().chain(pytest_ini.iter()) {
        let cmd = if paths.is_empty() {
            "pytest".to_string()
        } else {
            format!("pytest {}", paths.join(" "))
        };
        test.push((cmd, ev.clone()));
    }
    test.extend(
        nox_sessions
            .iter()
            .filter(|(n, _)| n.starts_with("test"))
            .map(|(n, e)| (format!("nox -s {n}"), e.clone())),
    );
    test.extend(
        tox.iter()
            .map(|(c, f, l)| (c.clone(), Evidence::new(f.clone(), Some(*l), c))),
    );
    if let Some(ev) = tox_pytest {
        test.push(("pytest".to_string(), ev));
    }
    if let Some(first) = test_files.first() {
        let n = test_files.len();
        test.push((
            "pytest".to_string(),
            Evidence::new(
                first.clone(),
                None,
                &format!("{n} pytest file(s) (conftest.py, tests/test_*.py)"),
            ),
        ));
    }
    fields.push(command_field("test_command", test));

    // export
    let mut export = script_cmd(&deps.scripts, &|n| {
        n.contains("export") || n.contains("onnx")
    });
    export.extend(make_cmd(&|t| t.contains("export") || t.contains("onnx")));
    export.extend(py_cmd(&|file, f| {
        let b = base_name(file);
        let runnable = f.has_main_guard || b.starts_with("export");
        f.export
            .first()
            .filter(|_| runnable && !b.starts_with("test"))
            .cloned()
    }));
    fields.push(command_field("export_command", export));

    // profile
    let mut profile = script_cmd(&deps.scripts, &|n| {
        n.contains("profil") || n.contains("bench")
    });
    profile.extend(make_cmd(&|t| {
        t.contains("profil") || t.starts_with("bench")
    }));
    profile.extend(py_cmd(&|file, f| {
        let b = base_name(file);
        let runnable = f.has_main_guard || b.starts_with("profil") || b.starts_with("bench");
        f.profile
            .first()
            .filter(|_| runnable && !b.starts_with("test"))
            .cloned()
    }));
    fields.push(command_field("profile_command", profile));

    for f in &mut fields {
        f.count = f.evidence.len();
        f.evidence.truncate(MAX_EVIDENCE);
    }

    let mut warnings = deps.warnings.clone();
    for (file, _, f) in &py {
        if f.parse_error {
            warnings.push(format!("{file}: cannot parse (skipped)"));
        }
    }
    let requirements = deps
        .requirements
        .iter()
        .filter(|r| ECOSYSTEM.contains(&r.normalized.as_str()))
        .cloned()
        .map(|mut r| {
            r.locked_version = deps
                .locks
                .iter()
                .find(|l| crate::same_package(&l.normalized, &r.normalized))
                .and_then(|l| l.locked_version.clone());
            r
        })
        .collect();

    ProjectReport {
        root: root.display().to_string(),
        is_pytorch_project: !triggers.is_empty(),
        triggers,
        fields,
        requirements,
        warnings,
    }
}

fn import_hits_empty(triggers: &[Trigger]) -> bool {
    !triggers.iter().any(|t| t.kind == TriggerKind::Import)
}

fn make_trigger(kind: TriggerKind, ev: Vec<Evidence>) -> Trigger {
    Trigger {
        kind,
        description: kind.label(),
        count: ev.len(),
        evidence: capped(ev),
    }
}

fn command_field(name: &'static str, cands: Vec<(String, Evidence)>) -> Field {
    let value = cands.first().map(|(c, _)| c.clone()).unwrap_or_default();
    let mut seen = HashSet::new();
    let evidence = cands
        .into_iter()
        .filter(|(c, e)| seen.insert((c.clone(), e.location())))
        .map(|(c, mut e)| {
            e.text = format!("{c}  <-  {}", e.text);
            e
        })
        .collect();
    Field {
        name,
        value,
        dirs: Vec::new(),
        evidence,
        count: 0,
    }
}

fn best_python(list: &[(String, Evidence)]) -> Option<(String, Evidence)> {
    let mut v: Vec<&(String, Evidence)> = list.iter().collect();
    v.sort_by_key(|(_, e)| {
        let pri = if e.file.ends_with("pyproject.toml") {
            0
        } else if e.file.ends_with("setup.cfg") || e.file.ends_with("setup.py") {
            1
        } else {
            2
        };
        (e.file.matches('/').count(), pri)
    });
    v.first().map(|(s, e)| (s.clone(), e.clone()))
}

fn cuda_field(deps: &DepFacts, py: &[(String, bool, PyFacts)]) -> Field {
    let mut reasons: Vec<String> = Vec::new();
    let mut ev: Vec<Evidence> = Vec::new();
    let mut cpu_only: Vec<Evidence> = Vec::new();
    let cuda_tag = |s: &str| -> Option<String> { cuda_tag(s) };
    let mut wheel_tags: Vec<String> = Vec::new();
    for e in &deps.indexes {
        let l = e.text.to_ascii_lowercase();
        if let Some(tag) = cuda_tag(&l) {
            if !wheel_tags.contains(&tag) {
                wheel_tags.push(tag);
            }
            ev.push(e.clone());
        } else if l.contains("/whl/cpu") || l.contains("+cpu") {
            cpu_only.push(e.clone());
        } else if l.contains("conda channel nvidia") {
            ev.push(e.clone());
            if !reasons.iter().any(|r| r.contains("nvidia channel")) {
                reasons.push("conda nvidia channel".to_string());
            }
        }
    }
    for r in deps.requirements.iter().chain(deps.locks.iter()) {
        let spec_and_url = format!(
            "{} {} {}",
            r.specifier,
            r.url.as_deref().unwrap_or(""),
            r.locked_version.as_deref().unwrap_or("")
        );
        if is_torch(&r.normalized) {
            if let Some(tag) = cuda_tag(&spec_and_url).or_else(|| cuda_tag(&r.text)) {
                if !wheel_tags.contains(&tag) {
                    wheel_tags.push(tag);
                }
                ev.push(req_evidence(r));
            } else if spec_and_url.contains("+cpu") {
                cpu_only.push(req_evidence(r));
            }
        }
    }
    if !wheel_tags.is_empty() {
        reasons.insert(
            0,
            format!("CUDA builds of torch ({})", wheel_tags.join(", ")),
        );
    }
    let nvidia: Vec<&DeclaredRequirement> = deps
        .requirements
        .iter()
        .chain(deps.locks.iter())
        .filter(|r| {
            r.normalized.starts_with("nvidia-")
                || matches!(
                    r.normalized.as_str(),
                    "pytorch-cuda"
                        | "cudatoolkit"
                        | "cuda-toolkit"
                        | "cuda-runtime"
                        | "cupy-cuda12x"
                        | "cupy-cuda11x"
                )
        })
        .collect();
    if !nvidia.is_empty() {
        let names: Vec<String> = {
            let mut n: Vec<String> = nvidia.iter().map(|r| r.normalized.clone()).collect();
            n.sort();
            n.dedup();
            n
        };
        let shown = if names.len() > 3 {
            format!("{}, ... ({} packages)", names[..3].join(", "), names.len())
        } else {
            names.join(", ")
        };
        reasons.push(format!("CUDA packages: {shown}"));
        ev.extend(nvidia.iter().take(10).map(|r| req_evidence(r)));
    }
    let code: Vec<Evidence> = py
        .iter()
        .flat_map(|(file, _, f)| f.cuda.iter().map(move |h| hit_evidence(file, h)))
        .collect();
    if !code.is_empty() {
        let files: HashSet<&str> = code.iter().map(|e| e.file.as_str()).collect();
        reasons.push(format!(
            "code targets CUDA (.cuda() / device=\"cuda\" in {} file(s))",
            files.len()
        ));
        ev.extend(code);
    }
    let value = if !reasons.is_empty() {
        let mut v = format!("yes: {}", reasons.join("; "));
        if !cpu_only.is_empty() {
            v.push_str("; note: CPU-only wheels are also declared");
            ev.extend(cpu_only);
        }
        v
    } else if !cpu_only.is_empty() {
        ev.extend(cpu_only);
        "no: CPU-only torch wheels declared".to_string()
    } else {
        "unknown".to_string()
    };
    Field {
        name: "cuda_available",
        value,
        dirs: Vec::new(),
        evidence: ev,
        count: 0,
    }
}

/// A CUDA build tag in a URL, local version or conda build string: `cu121`, `cuda11.7`.
fn cuda_tag(s: &str) -> Option<String> {
    let l = s.to_ascii_lowercase();
    let b = l.as_bytes();
    let mut i = 0;
    while let Some(pos) = l[i..].find("cu") {
        let start = i + pos;
        let mut j = start + 2;
        let is_cuda_word = l[j..].starts_with("da");
        if is_cuda_word {
            j += 2;
        }
        let digits_start = j;
        while j < b.len() && (b[j].is_ascii_digit() || (is_cuda_word && b[j] == b'.')) {
            j += 1;
        }
        let preceded_ok = start == 0 || !b[start - 1].is_ascii_alphabetic();
        if preceded_ok
            && j > digits_start
            && b[digits_start].is_ascii_digit()
            && (is_cuda_word || j - digits_start >= 2)
        {
            return Some(l[start..j].trim_end_matches('.').to_string());
        }
        i = start + 2;
    }
    None
}

/// `1.2 MB` style size.
pub(crate) fn human_size(bytes: u64) -> String {
    const UNITS: &[&str] = &["B", "KB", "MB", "GB", "TB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod launch_tests {
    use super::*;

    #[test]
    fn legacy_launch_commands_name_their_program() {
        // The legacy launcher passes the rank as an option, also across a continuation.
        assert_eq!(
            legacy_launched_programs(
                "```\npython -m torch.distributed.launch --nproc_per_node=8 main.py \\\n  --model convnext_tiny\n```\n"
            ),
            ["main.py"]
        );
        assert_eq!(
            legacy_launched_programs(
                "python /opt/conda/lib/python3.8/site-packages/torch/distributed/launch.py --nproc_per_node 4 tools/train.py cfg.yaml\n"
            ),
            ["train.py"]
        );
        // `--use_env` / `--use-env` (also on a continuation line), torchrun, and prose.
        let none: [&str; 0] = [];
        assert_eq!(
            legacy_launched_programs(
                "python -m torch.distributed.launch --nproc_per_node=8 \\\n  --use_env main_finetune.py\n"
            ),
            none
        );
        assert_eq!(
            legacy_launched_programs(
                "python -m torch.distributed.launch --use-env --nproc_per_node 2 train.py\n"
            ),
            none
        );
        assert_eq!(
            legacy_launched_programs("torchrun --nproc_per_node=8 main.py\n"),
            none
        );
        assert_eq!(
            legacy_launched_programs(
                "started with `python -m torch.distributed.launch` (no `--use_env`).\n"
            ),
            none
        );
    }

    #[test]
    fn the_project_scan_reads_scripts_and_docs_only() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("train.py"),
            "# python -m torch.distributed.launch --nproc_per_node=2 train.py\n",
        )
        .unwrap();
        let programs = |root: &Path| legacy_launched_programs_in(&files(root));
        assert!(programs(d.path()).is_empty());
        std::fs::create_dir(d.path().join("scripts")).unwrap();
        std::fs::write(
            d.path().join("scripts/pretrain.sh"),
            "#!/bin/bash\npython -m torch.distributed.launch --nproc_per_node=8 main.py\n",
        )
        .unwrap();
        assert_eq!(programs(d.path()), ["main.py"]);
    }
}

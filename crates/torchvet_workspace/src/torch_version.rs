//! The torch version a project declares. Parsing is `torchvet_project`'s (requirements with
//! includes and markers, PEP 621, Poetry, PDM, uv, setup.cfg/setup.py, environment.yml,
//! Pipfile, lock files); this module only decides which directory's declaration applies to a
//! checked path: the nearest one on the way up, stopping at the repository root.
use std::path::{Path, PathBuf};
use torchvet_linter::Version;

/// A declared torch requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredVersion {
    /// The specifier text, e.g. `>=2.1,<2.5`.
    pub specifier: String,
    /// Where it was declared.
    pub file: PathBuf,
    /// The highest major.minor the declaration allows (a lock file bounds it too);
    /// `None` = unbounded (latest).
    pub max: Option<Version>,
    /// The lowest major.minor the declaration allows (a lower bound, a pin or a lock);
    /// `None` = no lower bound declared.
    pub min: Option<Version>,
}

/// The torch version declared by the project that contains `start`: the nearest directory on
/// the way up whose dependency files declare torch (stopping at a `.git` directory).
pub fn declared_torch_version(start: &Path) -> Option<DeclaredVersion> {
    let abs = std::path::absolute(start).ok()?;
    let mut dir = if abs.is_dir() {
        Some(abs.as_path())
    } else {
        abs.parent()
    };
    while let Some(d) = dir {
        if let Some((req, py)) = torchvet_project::declared_torch_in_dir(d) {
            return Some(python_bounded(d, &req, py));
        }
        if d.join(".git").exists() {
            break;
        }
        dir = d.parent();
    }
    None
}

/// The repository holding `dir`: the innermost directory at or above it with a `.git`.
pub fn repository_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// What one checked file targets, from its project's declarations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FileTargets {
    /// The highest torch the nearest declaration allows (`None` = latest).
    pub torch: Option<Version>,
    /// The lowest torch any declaration of the project allows (`None` = no lower bound
    /// declared anywhere).
    pub min_torch: Option<Version>,
    /// The lowest torch the nearest declaration allows (`None` = it has no lower bound, or
    /// there is none): the torch this file's own project says it runs on, where
    /// [`FileTargets::min_torch`] is the lowest of the whole repository.
    pub nearest_min_torch: Option<Version>,
    /// The highest torchvision the nearest declaration of torchvision allows: `None` when the
    /// nearest declaring directory does not name torchvision (the target torch decides then,
    /// through the release pairing) or names it without an upper bound.
    pub torchvision: Option<Version>,
    /// The lowest torchvision any declaration of the project allows.
    pub min_torchvision: Option<Version>,
    /// A script or document of the project starts this file (by its name) with the legacy
    /// launcher (`python -m torch.distributed.launch` without `--use_env`), which passes the
    /// local rank as a command-line option: see
    /// [`torchvet_project::ProjectDeclarations::legacy_launched_programs`].
    pub launches_with_rank_argument: bool,
    /// A script or document of the project starts this file (by its name) with `torchrun`,
    /// `python -m torch.distributed.run` or `torch.distributed.launch --use_env`, and none
    /// with the legacy launcher: its processes get the rank from `LOCAL_RANK`, no option.
    pub launches_with_env_rank: bool,
    /// The lowest torch the project's documentation says it runs on (README / INSTALL /
    /// docs: "PyTorch >= 1.6"), see
    /// [`torchvet_project::ProjectDeclarations::documented_torch_min`]. Fixes use it, and
    /// `torch-load-without-weights-only` in a project no dependency file bounds; only when no
    /// dependency file of the project bounds torch from below (a declared requirement beats
    /// prose).
    pub documented_min_torch: Option<Version>,
}

/// The declared torch version per checked file, as Ruff resolves nested configurations: each
/// file gets the declaration nearest to it (its own project root: the nearest directory on the
/// way up whose dependency files declare torch, stopping at a `.git` directory), whatever
/// the directory the run started from. Answers are cached per directory, so a tree of many
/// files reads each directory's dependency files once. Safe to share across threads.
///
/// The lowest versions ([`FileTargets::min_torch`], [`FileTargets::min_torchvision`]) are
/// the project's, not only the nearest declaration's: every dependency file anywhere in the
/// file's project (the repository holding it, or the checked directory holding it when there
/// is no repository) counts, since a pin in `installation/requirements.txt` or a conda
/// `env.yml` is a torch the code is run on as much as a `requirements.txt` beside it. Fixes
/// that write a newer API are safe only when none of them allows an older one.
#[derive(Debug, Default)]
pub struct TorchTargets {
    cache: std::sync::Mutex<std::collections::HashMap<PathBuf, Option<DeclaredVersion>>>,
    tv_cache: std::sync::Mutex<std::collections::HashMap<PathBuf, Option<DeclaredVersion>>>,
    /// The checked directories (absolute): a file's project when no repository holds it.
    roots: Vec<PathBuf>,
    /// Project root -> what its declarations say (read once per project, by the first thread
    /// that asks; the others wait for it instead of reading the project again).
    projects: std::sync::Mutex<
        std::collections::HashMap<PathBuf, std::sync::Arc<std::sync::OnceLock<ProjectFacts>>>,
    >,
    /// Directory -> its project root (a walk up looking for `.git`, once per directory).
    project_roots: std::sync::Mutex<std::collections::HashMap<PathBuf, Option<PathBuf>>>,
    /// Directory -> what its own dependency files declare (one read per directory, shared
    /// by the torch and torchvision walks).
    dirs: std::sync::Mutex<
        std::collections::HashMap<PathBuf, std::sync::Arc<torchvet_project::DirDeclarations>>,
    >,
}

type Floors = (Option<Version>, Option<Version>);

fn declared(d: &Path, req: &torchvet_project::DeclaredRequirement) -> DeclaredVersion {
    DeclaredVersion {
        specifier: req.specifier.clone(),
        file: d.join(&req.source),
        max: req
            .max_allowed_version()
            .map(|(major, minor)| Version::new(major, minor)),
        min: req
            .min_allowed_version()
            .map(|(major, minor)| Version::new(major, minor)),
    }
}

/// [`declared`], with the highest torch lowered to what the Python pinned beside the
/// declaration can run (`python=3.5` in a conda environment: torch 1.5 at most).
fn python_bounded(
    d: &Path,
    req: &torchvet_project::DeclaredRequirement,
    python_max_torch: Option<(u32, u32)>,
) -> DeclaredVersion {
    let mut v = declared(d, req);
    if let Some((major, minor)) = python_max_torch {
        let bound = Version::new(major, minor);
        v.max = Some(v.max.map_or(bound, |m| m.min(bound)));
    }
    v
}

/// The lowest version a declaration allows, as far as it says: its lower bound, or for an
/// upper bound alone (`torch<1.10`) the highest version below it, which it allows too.
fn floor(req: &torchvet_project::DeclaredRequirement) -> Option<Version> {
    req.min_allowed_version()
        .or_else(|| req.max_allowed_version())
        .map(|(major, minor)| Version::new(major, minor))
}

fn lower(a: Option<Version>, b: Option<Version>) -> Option<Version> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// What [`TorchTargets`] keeps of a project: the lowest torch and torchvision its dependency
/// files allow, and the programs its scripts and documents start with the legacy launcher.
#[derive(Debug, Default)]
struct ProjectFacts {
    floors: Floors,
    legacy_launched: Vec<String>,
    env_launched: Vec<String>,
    documented_torch: Option<Version>,
}

/// [`ProjectFacts`] of the project under `root` (one walk of its tree).
fn project_facts(root: &Path) -> ProjectFacts {
    let declared = torchvet_project::project_declarations(root);
    let mut torch = None;
    let mut tv = None;
    for r in &declared.requirements {
        match r.normalized.as_str() {
            "torch" | "pytorch" => torch = lower(torch, floor(r)),
            "torchvision" => tv = lower(tv, floor(r)),
            _ => {}
        }
    }
    // Prose is weaker than a declared requirement: a README's "pytorch 1.8.1" or a FAQ's old
    // install line says nothing once a dependency file bounds torch from below
    // (`torch==2.5.1`, `torch>=2.1,<2.3`); it only fills in when none does.
    let documented_torch = if torch.is_some() {
        None
    } else {
        declared
            .documented_torch_min
            .map(|(major, minor)| Version::new(major, minor))
    };
    ProjectFacts {
        floors: (torch, tv),
        legacy_launched: declared.legacy_launched_programs,
        env_launched: declared.env_launched_programs,
        documented_torch,
    }
}

impl TorchTargets {
    /// An empty resolver (a file's project is its repository).
    pub fn new() -> Self {
        Self::default()
    }

    /// A resolver for a run over `roots` (files and directories as given): a file in no
    /// repository belongs to the checked directory that holds it.
    pub fn with_roots(roots: &[PathBuf]) -> Self {
        Self {
            roots: roots
                .iter()
                .filter(|r| r.is_dir())
                .filter_map(|r| std::path::absolute(r).ok())
                .collect(),
            ..Self::default()
        }
    }

    /// The torch declaration that applies to `file` (a file or a directory).
    pub fn for_path(&self, file: &Path) -> Option<DeclaredVersion> {
        let dir = Self::dir_of(file)?;
        self.for_dir(&dir)
    }

    /// Everything `file` targets: the nearest torch and torchvision declarations' upper
    /// bounds and the project's lowest versions.
    pub fn targets(&self, file: &Path) -> FileTargets {
        let Some(dir) = Self::dir_of(file) else {
            return FileTargets::default();
        };
        let torch = self.for_dir(&dir);
        let tv = self.torchvision_for_dir(&dir);
        let root = self.project_root(&dir);
        let project = root.map(|root| {
            let cell = match self.projects.lock() {
                Ok(mut c) => c.entry(root.clone()).or_default().clone(),
                Err(_) => std::sync::Arc::default(),
            };
            cell.get_or_init(|| project_facts(&root));
            cell
        });
        let project: Option<&ProjectFacts> = project.as_ref().and_then(|c| c.get());
        let (project_torch, project_tv) = project.map_or((None, None), |p| p.floors);
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let launches_with_rank_argument =
            project.is_some_and(|p| p.legacy_launched.iter().any(|p| p == name));
        let launches_with_env_rank = !launches_with_rank_argument
            && project.is_some_and(|p| p.env_launched.iter().any(|p| p == name));
        let documented_min_torch = project.and_then(|p| p.documented_torch);
        FileTargets {
            torch: torch.as_ref().and_then(|d| d.max),
            min_torch: lower(torch.as_ref().and_then(|d| d.min), project_torch),
            nearest_min_torch: torch.as_ref().and_then(|d| d.min),
            torchvision: tv.as_ref().and_then(|d| d.max),
            min_torchvision: lower(tv.as_ref().and_then(|d| d.min), project_tv),
            launches_with_rank_argument,
            launches_with_env_rank,
            documented_min_torch,
        }
    }

    fn dir_of(file: &Path) -> Option<PathBuf> {
        let abs = std::path::absolute(file).ok()?;
        // A checked source file (no `stat`: asked once per file of a run).
        let source = abs
            .extension()
            .is_some_and(|e| e == "py" || e == "ipynb" || e == "pyi");
        Some(if !source && abs.is_dir() {
            abs
        } else {
            abs.parent()?.to_path_buf()
        })
    }

    /// The file's project: the repository holding `dir`, or the innermost checked directory
    /// holding it.
    fn project_root(&self, dir: &Path) -> Option<PathBuf> {
        if let Some(hit) = self
            .project_roots
            .lock()
            .ok()
            .and_then(|c| c.get(dir).cloned())
        {
            return hit;
        }
        let root = self.project_root_uncached(dir);
        if let Ok(mut c) = self.project_roots.lock() {
            c.insert(dir.to_path_buf(), root.clone());
        }
        root
    }

    fn project_root_uncached(&self, dir: &Path) -> Option<PathBuf> {
        if let Some(repo) = repository_root(dir) {
            return Some(repo);
        }
        self.roots
            .iter()
            .filter(|r| dir.starts_with(r))
            .max_by_key(|r| r.components().count())
            .cloned()
    }

    /// What `dir`'s own dependency files declare (read once per directory).
    fn declarations(&self, dir: &Path) -> std::sync::Arc<torchvet_project::DirDeclarations> {
        if let Some(hit) = self.dirs.lock().ok().and_then(|c| c.get(dir).cloned()) {
            return hit;
        }
        let got = std::sync::Arc::new(torchvet_project::declarations_in_dir(dir));
        if let Ok(mut c) = self.dirs.lock() {
            c.insert(dir.to_path_buf(), got.clone());
        }
        got
    }

    fn for_dir(&self, dir: &Path) -> Option<DeclaredVersion> {
        Self::nearest(&self.cache, dir, |d| {
            self.declarations(d)
                .torch
                .as_ref()
                .map(|(r, py)| Some(python_bounded(d, r, *py)))
        })
    }

    /// The nearest directory that declares torch or torchvision decides: its torchvision
    /// declaration, or none (the torch it declares decides, through the pairing).
    fn torchvision_for_dir(&self, dir: &Path) -> Option<DeclaredVersion> {
        Self::nearest(&self.tv_cache, dir, |d| {
            let here = self.declarations(d);
            match &here.torchvision {
                Some(r) => Some(Some(declared(d, r))),
                None => here.torch.as_ref().map(|_| None),
            }
        })
    }

    /// Walk up from `dir` to the first directory where `here` answers (or a cached one, or a
    /// repository root), caching the answer for every directory passed.
    fn nearest(
        cache: &std::sync::Mutex<std::collections::HashMap<PathBuf, Option<DeclaredVersion>>>,
        dir: &Path,
        here: impl Fn(&Path) -> Option<Option<DeclaredVersion>>,
    ) -> Option<DeclaredVersion> {
        if let Some(hit) = cache.lock().ok()?.get(dir) {
            return hit.clone();
        }
        let mut passed: Vec<PathBuf> = Vec::new();
        let mut cur = Some(dir);
        let mut answer = None;
        while let Some(d) = cur {
            if let Some(hit) = cache.lock().ok()?.get(d) {
                answer = hit.clone();
                break;
            }
            passed.push(d.to_path_buf());
            if let Some(found) = here(d) {
                answer = found;
                break;
            }
            if d.join(".git").exists() {
                break;
            }
            cur = d.parent();
        }
        if let Ok(mut c) = cache.lock() {
            for p in passed {
                c.insert(p, answer.clone());
            }
        }
        answer
    }
}

/// [`TorchTargets::targets`] for one file or directory, without a run's checked roots (the
/// editor server's settings): its project is the repository holding it.
pub fn file_targets(start: &Path) -> FileTargets {
    TorchTargets::new().targets(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_declaration_wins_and_bounds_the_version() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("requirements.txt"),
            "# deps\nnumpy\ntorch[cuda]==1.12.1 ; python_version>'3.7'\n",
        )
        .unwrap();
        let sub = d.path().join("pkg");
        std::fs::create_dir(&sub).unwrap();
        let got = declared_torch_version(&sub).unwrap();
        assert_eq!(got.max, Some(Version::new(1, 12)));
        assert_eq!(got.specifier, "==1.12.1");
        std::fs::write(
            sub.join("pyproject.toml"),
            "[project]\nname='x'\ndependencies = ['torch>=1.10,<2.0']\n",
        )
        .unwrap();
        let got = declared_torch_version(&sub.join("train.py")).unwrap();
        assert_eq!(got.max, Some(Version::new(1, u32::MAX)));
        assert!(got.file.ends_with("pyproject.toml"));
    }

    #[test]
    fn each_file_gets_its_own_project_declaration_whatever_the_start() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join(".git")).unwrap();
        std::fs::write(d.path().join("requirements.txt"), "torch==2.4.1\n").unwrap();
        let old = d.path().join("legacy/deep");
        std::fs::create_dir_all(&old).unwrap();
        std::fs::write(
            d.path().join("legacy/setup.cfg"),
            "[options]\ninstall_requires =\n    torch>=1.8,<1.13\n",
        )
        .unwrap();
        let plain = d.path().join("tools");
        std::fs::create_dir(&plain).unwrap();
        let targets = TorchTargets::new();
        let v = |p: &Path| targets.for_path(p).and_then(|d| d.max);
        assert_eq!(v(&old.join("train.py")), Some(Version::new(1, 12)));
        assert_eq!(v(&d.path().join("legacy/x.py")), Some(Version::new(1, 12)));
        assert_eq!(v(&plain.join("y.py")), Some(Version::new(2, 4)));
        assert_eq!(v(&d.path().join("z.py")), Some(Version::new(2, 4)));
        // Cached answers are the same.
        assert_eq!(v(&old.join("other.py")), Some(Version::new(1, 12)));
        // Nothing above the repository root is read.
        let bare = tempfile::tempdir().unwrap();
        std::fs::create_dir(bare.path().join(".git")).unwrap();
        assert_eq!(targets.for_path(&bare.path().join("a.py")), None);
    }

    #[test]
    fn conda_files_by_content_install_scripts_and_pinned_python_bound_torch() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join(".git")).unwrap();
        let dir = |p: &str| {
            let p = d.path().join(p);
            std::fs::create_dir_all(&p).unwrap();
            p
        };
        let targets = TorchTargets::new();
        let max = |p: &Path| targets.targets(p).torch;
        // A conda environment under another name, pinning torch.
        let a5 = dir("assignments/a5");
        std::fs::write(
            a5.join("local_env.yml"),
            "name: local_nmt\nchannels:\n  - pytorch\n  - defaults\ndependencies:\n  - python=3.5\n  - numpy\n  - pytorch=1.0.0\n",
        )
        .unwrap();
        assert_eq!(max(&a5.join("run.py")), Some(Version::new(1, 0)));
        // torch unpinned beside python=3.5: at most the last torch for Python 3.5.
        let a4 = dir("assignments/a4");
        std::fs::write(
            a4.join("gpu_env.yaml"),
            "name: a4\ndependencies:\n  - python=3.5\n  - pytorch\n  - tqdm\n",
        )
        .unwrap();
        assert_eq!(max(&a4.join("run.py")), Some(Version::new(1, 5)));
        // A YAML config that is no conda environment declares nothing.
        let cfg = dir("configs");
        std::fs::write(
            cfg.join("model.yml"),
            "model:\n  name: resnet\ndependencies: none\ntrain:\n  lr: 0.1\n",
        )
        .unwrap();
        assert_eq!(max(&cfg.join("x.py")), None);
        // A setup script at a project's root: `conda install pytorch==...`.
        let p = dir("bert");
        std::fs::write(
            p.join("setup.sh"),
            "#!/usr/bin/env bash\nconda create -n bert python=3.8\nconda activate bert\nconda install pytorch==1.12.1 torchvision torchaudio \\\n    cudatoolkit=11.6 -c pytorch -c conda-forge\npip install tqdm==4.58.0\n",
        )
        .unwrap();
        assert_eq!(max(&p.join("classifier.py")), Some(Version::new(1, 12)));
        // A script the README points to, below the root; pip style with a local version.
        let q = dir("seg");
        std::fs::create_dir(q.join("tools")).unwrap();
        std::fs::write(
            q.join("README.md"),
            "Install with `bash tools/install_env.sh`.\n",
        )
        .unwrap();
        std::fs::write(
            q.join("tools/install_env.sh"),
            "python -m pip install torch==1.13.1+cu117 torchvision==0.14.1+cu117 -f https://download.pytorch.org/whl/torch_stable.html\n",
        )
        .unwrap();
        assert_eq!(max(&q.join("train.py")), Some(Version::new(1, 13)));
        // An unversioned install says nothing: the declaration above decides.
        let r = dir("bert/docker");
        std::fs::write(r.join("build.sh"), "pip install torch torchvision\n").unwrap();
        assert_eq!(max(&r.join("serve.py")), Some(Version::new(1, 12)));
        // A requirements file with an open range beside a pinned Python 3.8.
        let s = dir("tabular");
        std::fs::write(s.join("requirements.txt"), "torch>=1.10\n").unwrap();
        std::fs::write(s.join(".python-version"), "3.8.18\n").unwrap();
        assert_eq!(max(&s.join("fit.py")), Some(Version::new(2, 4)));
        // A lower bound on Python bounds nothing.
        let u = dir("modern");
        std::fs::write(
            u.join("pyproject.toml"),
            "[project]\nname = \"m\"\nrequires-python = \">=3.8\"\ndependencies = [\"torch>=2.0\"]\n",
        )
        .unwrap();
        assert_eq!(max(&u.join("m.py")), None);
    }

    #[test]
    fn a_declared_lower_bound_beats_the_torch_the_readme_mentions() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join(".git")).unwrap();
        std::fs::write(
            d.path().join("README.md"),
            "## Pytorch code for GAN models\n\n## Dependecies\n* pytorch 1.8.1\n* torchvision 0.9.1\n",
        )
        .unwrap();
        std::fs::write(d.path().join("requirements.txt"), "numpy\ntorch\n").unwrap();
        // No lower bound declared: the README's torch is the only word on the oldest one.
        let t = TorchTargets::new().targets(&d.path().join("main.py"));
        assert_eq!(t.min_torch, None);
        assert_eq!(t.documented_min_torch, Some(Version::new(1, 8)));
        // A pinned requirement decides; the README's older torch no longer counts.
        std::fs::write(d.path().join("requirements.txt"), "numpy\ntorch==2.5.1\n").unwrap();
        let t = TorchTargets::new().targets(&d.path().join("main.py"));
        assert_eq!(t.min_torch, Some(Version::new(2, 5)));
        assert_eq!(t.documented_min_torch, None);
    }

    #[test]
    fn torchvision_is_declared_like_torch_and_floors_are_the_projects() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join(".git")).unwrap();
        // The nearest declaration of the code: torch and torchvision pinned apart.
        let code = d.path().join("code/DeepDA");
        std::fs::create_dir_all(&code).unwrap();
        std::fs::write(
            code.join("requirements.txt"),
            "torch==1.13.1\ntorchvision==0.9.1\n",
        )
        .unwrap();
        // Pins in folders that are no parent of the code, one of them a conda env file.
        std::fs::create_dir(d.path().join("installation")).unwrap();
        std::fs::write(
            d.path().join("installation/requirements.txt"),
            "numpy\ntorch==1.4.0\n",
        )
        .unwrap();
        std::fs::write(
            d.path().join("env.yml"),
            "name: x\ndependencies:\n  - python=3.7\n  - pytorch=1.6.0\n  - torchvision=0.5\n  - pip:\n    - tqdm\n",
        )
        .unwrap();
        let targets = TorchTargets::new();
        let t = targets.targets(&code.join("backbones.py"));
        assert_eq!(t.torch, Some(Version::new(1, 13)));
        assert_eq!(t.torchvision, Some(Version::new(0, 9)));
        assert_eq!(t.min_torch, Some(Version::new(1, 4)));
        assert_eq!(t.min_torchvision, Some(Version::new(0, 5)));
        // A file whose nearest declaration is the conda env file at the root.
        let lib = d.path().join("lib");
        std::fs::create_dir(&lib).unwrap();
        let t = targets.targets(&lib.join("net.py"));
        assert_eq!(t.torch, Some(Version::new(1, 6)));
        assert_eq!(t.torchvision, Some(Version::new(0, 5)));
        // A directory that declares torch alone: its torchvision is what that torch pairs
        // with (left to the pairing), not a declaration farther up.
        let sub = d.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("requirements.txt"), "torch>=2.1\n").unwrap();
        let t = targets.targets(&sub.join("a.py"));
        assert_eq!(t.torch, None);
        assert_eq!(t.torchvision, None);
        assert_eq!(t.min_torch, Some(Version::new(1, 4)));

        // Without a repository, the checked directory is the project.
        let bare = tempfile::tempdir().unwrap();
        let repo = bare.path().join("repo");
        std::fs::create_dir_all(repo.join("lib/medzoo")).unwrap();
        std::fs::create_dir_all(repo.join("docker")).unwrap();
        std::fs::write(repo.join("docker/requirements.txt"), "torch==1.4.0\n").unwrap();
        let f = repo.join("lib/medzoo/covidnet.py");
        assert_eq!(TorchTargets::new().targets(&f).min_torch, None);
        let t = TorchTargets::with_roots(std::slice::from_ref(&repo)).targets(&f);
        assert_eq!(t.min_torch, Some(Version::new(1, 4)));
        assert_eq!(t.torch, None);
    }
}

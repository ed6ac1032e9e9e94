//! Parsers for the files that declare dependencies: requirements files (with includes),
//! pyproject.toml (PEP 621, PEP 735, Poetry, PDM, uv), setup.cfg, setup.py, environment.yml,
//! Pipfile and the lock files.

use crate::requirement::{
    normalize_name, parse_pep508, version_from_url, DeclaredRequirement, RequirementOrigin,
};
use crate::Evidence;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Files larger than this are not read.
const MAX_FILE: u64 = 8 * 1024 * 1024;
/// `-r` include depth limit (cycles are cut separately).
const MAX_INCLUDE_DEPTH: usize = 16;

/// A named command declared in a project file (`[project.scripts]`, `[tool.pdm.scripts]`, ...).
#[derive(Debug, Clone)]
pub(crate) struct ScriptEntry {
    pub name: String,
    /// How to run it (`train`, `pdm run train`).
    pub command: String,
    pub evidence: Evidence,
}

/// Everything the dependency files say.
#[derive(Debug, Default)]
pub(crate) struct DepFacts {
    pub requirements: Vec<DeclaredRequirement>,
    pub locks: Vec<DeclaredRequirement>,
    /// Package indexes, sources and channels (`--extra-index-url`, `[[tool.uv.index]]`, conda channels).
    pub indexes: Vec<Evidence>,
    pub python: Vec<(String, Evidence)>,
    pub scripts: Vec<ScriptEntry>,
    /// pytest configuration, with `testpaths` when given.
    pub pytest: Vec<(Vec<String>, Evidence)>,
    pub warnings: Vec<String>,
    visited: HashSet<PathBuf>,
}

/// What kind of dependency file a path is, by its name.
pub(crate) fn dep_file_kind(path: &Path) -> Option<DepKind> {
    let name = path.file_name()?.to_str()?;
    let lower = name.to_ascii_lowercase();
    let parent_is_requirements = path
        .parent()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.eq_ignore_ascii_case("requirements"));
    Some(match lower.as_str() {
        "pyproject.toml" => DepKind::Pyproject,
        "setup.cfg" => DepKind::SetupCfg,
        "setup.py" => DepKind::SetupPy,
        "environment.yml" | "environment.yaml" | "conda.yml" | "conda.yaml" | "env.yml"
        | "env.yaml" | "conda_env.yml" | "conda_env.yaml" | "conda-env.yml" | "conda-env.yaml" => {
            DepKind::Conda
        }
        "pipfile" => DepKind::Pipfile,
        "pixi.toml" => DepKind::Pixi,
        "pipfile.lock" => DepKind::PipfileLock,
        "uv.lock" | "poetry.lock" | "pdm.lock" => DepKind::TomlLock,
        ".python-version" => DepKind::PythonVersion,
        _ if (lower.starts_with("requirements") || parent_is_requirements)
            && (lower.ends_with(".txt") || lower.ends_with(".in")) =>
        {
            DepKind::Requirements
        }
        _ if lower.starts_with("environment")
            && (lower.ends_with(".yml") || lower.ends_with(".yaml")) =>
        {
            DepKind::Conda
        }
        // Any other YAML file may be a conda environment under another name
        // (`local_env.yml`, `gpu_env.yaml`, `cs224n.yml`): its content decides.
        _ if lower.ends_with(".yml") || lower.ends_with(".yaml") => DepKind::CondaByContent,
        // A setup / install script: its `conda install` / `pip install` lines of torch.
        _ if lower.ends_with(".sh") || lower.ends_with(".bash") => DepKind::InstallScript,
        // A container recipe (`Dockerfile`, `Dockerfile.gpu`, `train.dockerfile`): its
        // `RUN pip install` lines and an official PyTorch base image.
        _ if lower == "dockerfile"
            || lower.starts_with("dockerfile.")
            || lower.ends_with(".dockerfile") =>
        {
            DepKind::Dockerfile
        }
        _ => return None,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DepKind {
    Requirements,
    /// A pixi manifest (`pixi.toml`): conda and PyPI dependencies, per feature and platform.
    Pixi,
    /// A `Dockerfile`: install lines and a PyTorch base image.
    Dockerfile,
    Pyproject,
    SetupCfg,
    SetupPy,
    Conda,
    /// A YAML file of another name, read as a conda environment when its content is one.
    CondaByContent,
    /// A shell script, read for its torch install commands.
    InstallScript,
    Pipfile,
    PipfileLock,
    TomlLock,
    PythonVersion,
}

pub(crate) fn rel(root: &Path, path: &Path) -> String {
    let p = path.strip_prefix(root).unwrap_or(path);
    let s = p.to_string_lossy().replace('\\', "/");
    if s.is_empty() {
        ".".to_string()
    } else {
        s
    }
}

pub(crate) fn read_text(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    Some(decode_text(&bytes))
}

/// A dependency file's text: UTF-8 (a byte-order mark dropped), or UTF-16 when it starts with
/// a UTF-16 byte-order mark, which is what `pip freeze > requirements.txt` writes in Windows
/// PowerShell.
fn decode_text(bytes: &[u8]) -> String {
    let utf16 = |rest: &[u8], le: bool| -> String {
        let units: Vec<u16> = rest
            .chunks_exact(2)
            .map(|c| {
                if le {
                    u16::from_le_bytes([c[0], c[1]])
                } else {
                    u16::from_be_bytes([c[0], c[1]])
                }
            })
            .collect();
        String::from_utf16_lossy(&units)
    };
    match bytes {
        [0xFF, 0xFE, rest @ ..] => utf16(rest, true),
        [0xFE, 0xFF, rest @ ..] => utf16(rest, false),
        [0xEF, 0xBB, 0xBF, rest @ ..] => String::from_utf8_lossy(rest).into_owned(),
        _ => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// 1-based line of the first line at or after `from` (0-based) containing any of `needles`.
fn find_line(text: &str, from: usize, needles: &[String]) -> Option<u32> {
    text.lines()
        .enumerate()
        .skip(from)
        .find(|(_, l)| needles.iter().any(|n| l.contains(n.as_str())))
        .map(|(i, _)| i as u32 + 1)
}

/// 0-based index of a TOML table header line `[name]` / `[[name]]`.
fn header_line(text: &str, header: &str) -> Option<usize> {
    let a = format!("[{header}]");
    let b = format!("[[{header}]]");
    text.lines().position(|l| {
        let t = l.trim();
        t.starts_with(&a) || t.starts_with(&b)
    })
}

fn quoted(s: &str) -> Vec<String> {
    vec![format!("\"{s}\""), format!("'{s}'")]
}

/// 1-based line of a key `name = ...` (bare or quoted) at or after `from`.
fn find_key_line(text: &str, from: usize, key: &str) -> Option<u32> {
    text.lines().enumerate().skip(from).find_map(|(i, l)| {
        let t = l.trim_start();
        let rest = t
            .strip_prefix(key)
            .or_else(|| t.strip_prefix(&format!("\"{key}\"")))
            .or_else(|| t.strip_prefix(&format!("'{key}'")))?;
        rest.trim_start().starts_with('=').then_some(i as u32 + 1)
    })
}

fn line_text(text: &str, line: u32) -> String {
    text.lines()
        .nth(line.saturating_sub(1) as usize)
        .unwrap_or("")
        .trim()
        .to_string()
}

fn is_torch_index(url: &str) -> bool {
    let u = url.to_ascii_lowercase();
    u.contains("pytorch.org")
        || u.contains("/whl/cu")
        || u.contains("/whl/cpu")
        || u.contains("/whl/rocm")
}

impl DepFacts {
    /// Parse one dependency file found by the walk.
    pub(crate) fn add_file(&mut self, root: &Path, path: &Path, kind: DepKind) {
        match kind {
            DepKind::Requirements => {
                let origin = if path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.to_ascii_lowercase().contains("constraint"))
                {
                    RequirementOrigin::Constraints
                } else {
                    RequirementOrigin::RequirementsTxt
                };
                self.requirements_txt(root, path, origin, 0);
            }
            DepKind::Pyproject => self.pyproject(root, path),
            DepKind::SetupCfg => self.setup_cfg(root, path),
            DepKind::SetupPy => self.setup_py(root, path),
            DepKind::Conda => self.conda(root, path),
            DepKind::CondaByContent => {
                if read_small(path).is_some_and(|t| is_conda_environment(&t)) {
                    self.conda(root, path);
                }
            }
            DepKind::InstallScript => self.install_script(root, path),
            DepKind::Dockerfile => self.dockerfile(root, path),
            DepKind::Pixi => self.pixi_manifest(root, path),
            DepKind::Pipfile => self.pipfile(root, path),
            DepKind::PipfileLock => self.pipfile_lock(root, path),
            DepKind::TomlLock => self.toml_lock(root, path),
            DepKind::PythonVersion => {
                if let Some(text) = read_text(path) {
                    if let Some((i, l)) = text
                        .lines()
                        .enumerate()
                        .find(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
                    {
                        self.python.push((
                            l.trim().to_string(),
                            Evidence::new(rel(root, path), Some(i as u32 + 1), l),
                        ));
                    }
                }
            }
        }
    }

    fn first_visit(&mut self, path: &Path) -> bool {
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        self.visited.insert(key)
    }

    fn push_req(
        &mut self,
        root: &Path,
        path: &Path,
        text: &str,
        line: u32,
        spec: &str,
        origin: RequirementOrigin,
    ) {
        let Some(p) = parse_pep508(spec) else {
            return;
        };
        let mut r = DeclaredRequirement::new(
            &p.name,
            &p.specifier,
            PathBuf::from(rel(root, path)),
            line,
            origin,
            &line_text(text, line),
        );
        r.extras = p.extras;
        r.url = p.url;
        r.marker = p.marker;
        if let Some(url) = &r.url {
            if is_torch_index(url) || url.contains("%2Bcu") || url.contains("+cu") {
                self.indexes.push(Evidence::new(
                    r.source.to_string_lossy().into_owned(),
                    Some(line),
                    url,
                ));
            }
        }
        self.requirements.push(r);
    }

    /// A requirements file; `-r`/`-c` includes are followed (once each, cycles cut).
    pub(crate) fn requirements_txt(
        &mut self,
        root: &Path,
        path: &Path,
        origin: RequirementOrigin,
        depth: usize,
    ) {
        if depth > MAX_INCLUDE_DEPTH || !self.first_visit(path) {
            return;
        }
        let Some(text) = read_text(path) else {
            self.warnings.push(format!(
                "{}: cannot read requirements file",
                rel(root, path)
            ));
            return;
        };
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut logical = String::new();
        let mut start_line = 0u32;
        let mut lines: Vec<(u32, String)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            if logical.is_empty() {
                start_line = i as u32 + 1;
            }
            let l = raw.trim_end();
            if let Some(stripped) = l.strip_suffix('\\') {
                logical.push_str(stripped);
                logical.push(' ');
                continue;
            }
            logical.push_str(l);
            lines.push((start_line, std::mem::take(&mut logical)));
        }
        if !logical.is_empty() {
            lines.push((start_line, logical));
        }
        for (line, logical) in lines {
            let content = strip_comment(&logical);
            let content = content.trim();
            if content.is_empty() {
                continue;
            }
            if content.starts_with('-') {
                let (opt, value) = split_option(content);
                match opt.as_str() {
                    "-r" | "--requirement" | "-c" | "--constraint" => {
                        let target = lexical_normalize(&dir.join(value.trim()));
                        let o = if opt.starts_with("-c") || opt == "--constraint" {
                            RequirementOrigin::Constraints
                        } else {
                            origin.clone()
                        };
                        if target.is_file() {
                            self.requirements_txt(root, &target, o, depth + 1);
                        } else {
                            self.warnings.push(format!(
                                "{}:{line}: included file `{}` not found",
                                rel(root, path),
                                value.trim()
                            ));
                        }
                    }
                    "-i" | "--index-url" | "--extra-index-url" | "-f" | "--find-links" => {
                        self.indexes
                            .push(Evidence::new(rel(root, path), Some(line), content));
                    }
                    "-e" | "--editable" => {
                        let v = value.trim();
                        self.push_req(root, path, &text, line, v, origin.clone());
                    }
                    _ => {}
                }
                continue;
            }
            // Per-requirement options (`--hash=...`, `--config-settings ...`) follow the spec.
            let spec = match content.find(" --") {
                Some(i) => &content[..i],
                None => content,
            };
            self.push_req(root, path, &text, line, spec, origin.clone());
        }
    }

    fn pyproject(&mut self, root: &Path, path: &Path) {
        let Some(text) = read_text(path) else { return };
        let table: toml::Table = match toml::from_str(&text) {
            Ok(t) => t,
            Err(e) => {
                self.warnings.push(format!(
                    "{}: invalid TOML: {}",
                    rel(root, path),
                    e.message()
                ));
                return;
            }
        };
        if let Some(pixi) = table
            .get("tool")
            .and_then(|t| t.get("pixi"))
            .and_then(|v| v.as_table())
        {
            self.pixi(root, path, &text, pixi, "tool.pixi.");
        }
        let file = rel(root, path);
        let get = |t: &toml::Table, keys: &[&str]| -> Option<toml::Value> {
            let mut cur = toml::Value::Table(t.clone());
            for k in keys {
                cur = cur.as_table()?.get(*k)?.clone();
            }
            Some(cur)
        };
        // PEP 621
        if let Some(rp) =
            get(&table, &["project", "requires-python"]).and_then(|v| v.as_str().map(String::from))
        {
            let from = header_line(&text, "project").unwrap_or(0);
            let line = find_key_line(&text, from, "requires-python");
            self.python.push((
                rp,
                Evidence::new(
                    file.clone(),
                    line,
                    &line.map(|l| line_text(&text, l)).unwrap_or_default(),
                ),
            ));
        }
        if let Some(deps) = get(&table, &["project", "dependencies"]) {
            let from = header_line(&text, "project").unwrap_or(0);
            self.string_array(root, path, &text, from, &deps, RequirementOrigin::Pep621);
        }
        if let Some(opt) =
            get(&table, &["project", "optional-dependencies"]).and_then(|v| v.as_table().cloned())
        {
            let from = header_line(&text, "project.optional-dependencies")
                .or_else(|| header_line(&text, "project"))
                .unwrap_or(0);
            for (extra, deps) in opt {
                self.string_array(
                    root,
                    path,
                    &text,
                    from,
                    &deps,
                    RequirementOrigin::Pep621Optional(extra),
                );
            }
        }
        if let Some(scripts) =
            get(&table, &["project", "scripts"]).and_then(|v| v.as_table().cloned())
        {
            let from = header_line(&text, "project.scripts").unwrap_or(0);
            for (name, _) in scripts {
                let runner = if path.with_file_name("uv.lock").is_file() {
                    "uv run "
                } else if table.get("tool").and_then(|t| t.get("poetry")).is_some() {
                    "poetry run "
                } else if path.with_file_name("pdm.lock").is_file() {
                    "pdm run "
                } else {
                    ""
                };
                self.script(&file, &text, from, &name, format!("{runner}{name}"));
            }
        }
        // PEP 735 dependency groups
        if let Some(groups) = table
            .get("dependency-groups")
            .and_then(|v| v.as_table())
            .cloned()
        {
            let from = header_line(&text, "dependency-groups").unwrap_or(0);
            for (g, deps) in groups {
                self.string_array(
                    root,
                    path,
                    &text,
                    from,
                    &deps,
                    RequirementOrigin::DependencyGroup(g),
                );
            }
        }
        // uv
        if let Some(dev) = get(&table, &["tool", "uv", "dev-dependencies"]) {
            let from = header_line(&text, "tool.uv").unwrap_or(0);
            self.string_array(root, path, &text, from, &dev, RequirementOrigin::UvDev);
        }
        if let Some(idx) = get(&table, &["tool", "uv", "index"]).and_then(|v| v.as_array().cloned())
        {
            let from = header_line(&text, "tool.uv.index").unwrap_or(0);
            for entry in idx {
                if let Some(url) = entry.get("url").and_then(|u| u.as_str()) {
                    let line = find_line(&text, from, &quoted(url));
                    self.indexes.push(Evidence::new(file.clone(), line, url));
                }
            }
        }
        for key in ["index-url", "extra-index-url", "find-links"] {
            if let Some(v) = get(&table, &["tool", "uv", key]) {
                let urls: Vec<String> = match &v {
                    toml::Value::String(s) => vec![s.clone()],
                    toml::Value::Array(a) => a
                        .iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect(),
                    _ => Vec::new(),
                };
                for url in urls {
                    let line = find_line(&text, 0, &quoted(&url));
                    self.indexes.push(Evidence::new(file.clone(), line, &url));
                }
            }
        }
        if let Some(sources) =
            get(&table, &["tool", "uv", "sources"]).and_then(|v| v.as_table().cloned())
        {
            let from = header_line(&text, "tool.uv.sources").unwrap_or(0);
            for (name, _) in sources {
                if matches!(
                    normalize_name(&name).as_str(),
                    "torch" | "torchvision" | "torchaudio"
                ) {
                    let line = find_key_line(&text, from, &name);
                    let t = line
                        .map(|l| line_text(&text, l))
                        .unwrap_or_else(|| name.clone());
                    self.indexes.push(Evidence::new(file.clone(), line, &t));
                }
            }
        }
        // Poetry
        let mut poetry_tables: Vec<(String, String, toml::Table)> = Vec::new();
        if let Some(t) =
            get(&table, &["tool", "poetry", "dependencies"]).and_then(|v| v.as_table().cloned())
        {
            poetry_tables.push(("main".into(), "tool.poetry.dependencies".into(), t));
        }
        if let Some(t) =
            get(&table, &["tool", "poetry", "dev-dependencies"]).and_then(|v| v.as_table().cloned())
        {
            poetry_tables.push(("dev".into(), "tool.poetry.dev-dependencies".into(), t));
        }
        if let Some(groups) =
            get(&table, &["tool", "poetry", "group"]).and_then(|v| v.as_table().cloned())
        {
            for (g, body) in groups {
                if let Some(t) = body.get("dependencies").and_then(|d| d.as_table()).cloned() {
                    poetry_tables.push((
                        g.clone(),
                        format!("tool.poetry.group.{g}.dependencies"),
                        t,
                    ));
                }
            }
        }
        for (group, header, deps) in poetry_tables {
            let from = header_line(&text, &header).unwrap_or(0);
            for (name, value) in deps {
                let line = find_key_line(&text, from, &name).unwrap_or(1);
                let (spec, url) = poetry_spec(&value);
                if name == "python" {
                    self.python.push((
                        spec,
                        Evidence::new(file.clone(), Some(line), &line_text(&text, line)),
                    ));
                    continue;
                }
                let mut r = DeclaredRequirement::new(
                    &name,
                    &spec,
                    PathBuf::from(&file),
                    line,
                    RequirementOrigin::Poetry(group.clone()),
                    &line_text(&text, line),
                );
                r.url = url;
                if let Some(extras) = value.get("extras").and_then(|e| e.as_array()) {
                    r.extras = extras
                        .iter()
                        .filter_map(|e| e.as_str().map(String::from))
                        .collect();
                }
                if let Some(src) = value.get("source").and_then(|s| s.as_str()) {
                    if src.to_ascii_lowercase().contains("cu")
                        || src.to_ascii_lowercase().contains("torch")
                    {
                        self.indexes.push(Evidence::new(
                            file.clone(),
                            Some(line),
                            &line_text(&text, line),
                        ));
                    }
                }
                self.requirements.push(r);
            }
        }
        for src_key in [
            &["tool", "poetry", "source"][..],
            &["tool", "pdm", "source"][..],
        ] {
            if let Some(srcs) = get(&table, src_key).and_then(|v| v.as_array().cloned()) {
                for s in srcs {
                    if let Some(url) = s.get("url").and_then(|u| u.as_str()) {
                        let line = find_line(&text, 0, &quoted(url));
                        self.indexes.push(Evidence::new(file.clone(), line, url));
                    }
                }
            }
        }
        if let Some(scripts) =
            get(&table, &["tool", "poetry", "scripts"]).and_then(|v| v.as_table().cloned())
        {
            let from = header_line(&text, "tool.poetry.scripts").unwrap_or(0);
            for (name, _) in scripts {
                self.script(&file, &text, from, &name, format!("poetry run {name}"));
            }
        }
        // PDM
        if let Some(groups) =
            get(&table, &["tool", "pdm", "dev-dependencies"]).and_then(|v| v.as_table().cloned())
        {
            let from = header_line(&text, "tool.pdm.dev-dependencies").unwrap_or(0);
            for (g, deps) in groups {
                self.string_array(root, path, &text, from, &deps, RequirementOrigin::Pdm(g));
            }
        }
        if let Some(scripts) =
            get(&table, &["tool", "pdm", "scripts"]).and_then(|v| v.as_table().cloned())
        {
            let from = header_line(&text, "tool.pdm.scripts").unwrap_or(0);
            for (name, _) in scripts {
                if name != "_" {
                    self.script(&file, &text, from, &name, format!("pdm run {name}"));
                }
            }
        }
        // pytest
        if let Some(cfg) = get(&table, &["tool", "pytest", "ini_options"]) {
            let line = header_line(&text, "tool.pytest.ini_options").map(|l| l as u32 + 1);
            let paths = match cfg.get("testpaths") {
                Some(toml::Value::Array(a)) => a
                    .iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect(),
                Some(toml::Value::String(s)) => s.split_whitespace().map(String::from).collect(),
                _ => Vec::new(),
            };
            self.pytest.push((
                paths,
                Evidence::new(file.clone(), line, "[tool.pytest.ini_options]"),
            ));
        }
    }

    fn script(&mut self, file: &str, text: &str, from: usize, name: &str, command: String) {
        let line = find_key_line(text, from, name);
        let t = line
            .map(|l| line_text(text, l))
            .unwrap_or_else(|| name.to_string());
        self.scripts.push(ScriptEntry {
            name: name.to_string(),
            command,
            evidence: Evidence::new(file.to_string(), line, &t),
        });
    }

    fn string_array(
        &mut self,
        root: &Path,
        path: &Path,
        text: &str,
        from: usize,
        value: &toml::Value,
        origin: RequirementOrigin,
    ) {
        let Some(arr) = value.as_array() else { return };
        for item in arr {
            // PEP 735 `{include-group = "x"}` entries are references, not requirements.
            let Some(s) = item.as_str() else { continue };
            let line = find_line(text, from, &quoted(s))
                .or_else(|| find_line(text, 0, &quoted(s)))
                .unwrap_or(1);
            self.push_req(root, path, text, line, s, origin.clone());
        }
    }

    fn setup_cfg(&mut self, root: &Path, path: &Path) {
        let Some(text) = read_text(path) else { return };
        let file = rel(root, path);
        for entry in parse_ini(&text) {
            let sec = entry.section.to_ascii_lowercase();
            let key = entry.key.to_ascii_lowercase();
            if (sec == "options" && key == "install_requires") || sec == "options.extras_require" {
                for (line, v) in &entry.values {
                    self.push_req(root, path, &text, *line, v, RequirementOrigin::SetupCfg);
                }
            } else if sec == "options" && key == "python_requires" {
                if let Some((line, v)) = entry.values.first() {
                    self.python.push((
                        v.clone(),
                        Evidence::new(file.clone(), Some(*line), &line_text(&text, *line)),
                    ));
                }
            } else if sec == "options.entry_points" && key == "console_scripts" {
                for (line, v) in &entry.values {
                    if let Some((name, _)) = v.split_once('=') {
                        let name = name.trim().to_string();
                        self.scripts.push(ScriptEntry {
                            command: name.clone(),
                            name,
                            evidence: Evidence::new(file.clone(), Some(*line), v),
                        });
                    }
                }
            }
        }
        if let Some(l) = text.lines().position(|l| l.trim() == "[tool:pytest]") {
            let paths = parse_ini(&text)
                .into_iter()
                .find(|e| e.section == "tool:pytest" && e.key == "testpaths")
                .map(|e| {
                    e.values
                        .iter()
                        .flat_map(|(_, v)| {
                            v.split_whitespace().map(String::from).collect::<Vec<_>>()
                        })
                        .collect()
                })
                .unwrap_or_default();
            self.pytest.push((
                paths,
                Evidence::new(file, Some(l as u32 + 1), "[tool:pytest]"),
            ));
        }
    }

    fn setup_py(&mut self, root: &Path, path: &Path) {
        let Some(text) = read_text(path) else { return };
        let Ok(parsed) = ruff_python_parser::parse_module(&text) else {
            self.warnings
                .push(format!("{}: cannot parse setup.py", rel(root, path)));
            return;
        };
        let index = crate::LineIndex::new(&text);
        let body = &parsed.syntax().body;
        // Module-level `NAME = [...]` lists, for `install_requires=NAME`.
        let mut lists: Vec<(String, &Expr)> = Vec::new();
        for stmt in body {
            if let Stmt::Assign(a) = stmt {
                if let [Expr::Name(n)] = a.targets.as_slice() {
                    lists.push((n.id.to_string(), &a.value));
                }
            }
        }
        let mut calls = Vec::new();
        collect_setup_calls(body, &mut calls);
        let file = rel(root, path);
        for call in calls {
            for kw in &call.arguments.keywords {
                let Some(arg) = kw.arg.as_ref().map(|a| a.as_str()) else {
                    continue;
                };
                let value = match &kw.value {
                    Expr::Name(n) => lists
                        .iter()
                        .rev()
                        .find(|(name, _)| name == n.id.as_str())
                        .map(|(_, e)| *e)
                        .unwrap_or(&kw.value),
                    v => v,
                };
                match arg {
                    "install_requires" | "tests_require" => {
                        for (s, off) in string_items(value) {
                            let line = index.line(off);
                            self.push_req(root, path, &text, line, &s, RequirementOrigin::SetupPy);
                        }
                    }
                    "extras_require" => {
                        if let Expr::Dict(d) = value {
                            for item in &d.items {
                                for (s, off) in string_items(&item.value) {
                                    let line = index.line(off);
                                    self.push_req(
                                        root,
                                        path,
                                        &text,
                                        line,
                                        &s,
                                        RequirementOrigin::SetupPy,
                                    );
                                }
                            }
                        }
                    }
                    "python_requires" => {
                        if let Expr::StringLiteral(s) = value {
                            let line = index.line(s.range().start().to_usize());
                            self.python.push((
                                s.value.to_str().to_string(),
                                Evidence::new(file.clone(), Some(line), &line_text(&text, line)),
                            ));
                        }
                    }
                    "entry_points" => {
                        if let Expr::Dict(d) = value {
                            for item in &d.items {
                                let is_console = matches!(&item.key, Some(Expr::StringLiteral(k)) if k.value.to_str() == "console_scripts");
                                if !is_console {
                                    continue;
                                }
                                for (s, off) in string_items(&item.value) {
                                    if let Some((name, _)) = s.split_once('=') {
                                        let line = index.line(off);
                                        let name = name.trim().to_string();
                                        self.scripts.push(ScriptEntry {
                                            command: name.clone(),
                                            name,
                                            evidence: Evidence::new(file.clone(), Some(line), &s),
                                        });
                                    }
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    fn conda(&mut self, root: &Path, path: &Path) {
        let Some(text) = read_text(path) else { return };
        let file = rel(root, path);
        let mut section = String::new();
        let mut pip_indent: Option<usize> = None;
        for (i, raw) in text.lines().enumerate() {
            let line = i as u32 + 1;
            let no_comment = strip_comment(raw);
            if no_comment.trim().is_empty() {
                continue;
            }
            let indent = no_comment.len() - no_comment.trim_start().len();
            let t = no_comment.trim();
            if indent == 0 && !t.starts_with('-') {
                section = t
                    .trim_end_matches(':')
                    .split(':')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string();
                pip_indent = None;
                continue;
            }
            let Some(item) = t.strip_prefix('-') else {
                continue;
            };
            let item = item.trim().trim_matches(['"', '\'']);
            if let Some(pi) = pip_indent {
                if indent > pi {
                    self.push_req(root, path, &text, line, item, RequirementOrigin::Conda);
                    continue;
                }
                pip_indent = None;
            }
            match section.as_str() {
                "channels" => self.indexes.push(Evidence::new(
                    file.clone(),
                    Some(line),
                    &format!("conda channel {item}"),
                )),
                "dependencies" => {
                    if item.trim_end_matches(':') == "pip" && item.ends_with(':') {
                        pip_indent = Some(indent);
                        continue;
                    }
                    let (name, spec) = conda_spec(item);
                    if name.is_empty() {
                        continue;
                    }
                    if normalize_name(&name) == "python" {
                        self.python
                            .push((spec, Evidence::new(file.clone(), Some(line), raw)));
                        continue;
                    }
                    let r = DeclaredRequirement::new(
                        &name,
                        &spec,
                        PathBuf::from(&file),
                        line,
                        RequirementOrigin::Conda,
                        raw,
                    );
                    self.requirements.push(r);
                }
                _ => {}
            }
        }
    }

    /// A shell script (`setup.sh`, `install.sh`): the torch packages of its `conda install` /
    /// `mamba install` / `pip install` / `python -m pip install` / `uv pip install`
    /// commands (`conda install pytorch==1.12.1 torchvision cudatoolkit=11.6 -c pytorch`,
    /// `pip install torch==1.13.1+cu117 -f URL`). Only PyTorch's own packages with a version
    /// are kept: the script is read for the torch it installs, not as the project's
    /// dependency list.
    fn install_script(&mut self, root: &Path, path: &Path) {
        if let Some(text) = read_small(path) {
            self.install_lines(&rel(root, path), &text);
        }
    }

    /// The versioned `conda install` / `pip install` commands of torch in a script's text
    /// (a shell script, a Dockerfile's `RUN` lines).
    fn install_lines(&mut self, file: &str, text: &str) {
        if !text.contains("install") || !text.contains("torch") {
            return;
        }
        for (line, conda, spec) in install_commands(text) {
            let (name, specifier, url) = if conda {
                let (n, sp) = conda_spec(&spec);
                (n, sp, None)
            } else {
                match parse_pep508(&spec) {
                    Some(p) => (p.name, p.specifier, p.url),
                    None => continue,
                }
            };
            let normalized = normalize_name(&name);
            // An unversioned `pip install torch` installs whatever is newest that day: it
            // says nothing, and must not hide a versioned declaration further up.
            if !matches!(
                normalized.as_str(),
                "torch" | "pytorch" | "torchvision" | "torchaudio" | "torchtext"
            ) || (specifier.is_empty() && url.is_none())
            {
                continue;
            }
            let mut r = DeclaredRequirement::new(
                &name,
                &specifier,
                PathBuf::from(file),
                line,
                RequirementOrigin::InstallScript,
                &line_text(text, line),
            );
            r.url = url;
            self.requirements.push(r);
        }
    }

    /// A Dockerfile: its install commands as a shell script's, and `FROM pytorch/pytorch:2.1.0-
    /// cuda12.1-cudnn8-runtime` (the official image, tagged by its torch version) as a pin of
    /// that torch. Other images (`nvcr.io/nvidia/pytorch:23.10-py3`, tagged by date) say
    /// nothing this reads.
    fn dockerfile(&mut self, root: &Path, path: &Path) {
        let Some(text) = read_small(path) else { return };
        let file = rel(root, path);
        self.install_lines(&file, &text);
        for (i, l) in text.lines().enumerate() {
            let Some(version) = pytorch_image_version(l) else {
                continue;
            };
            let line = i as u32 + 1;
            self.requirements.push(DeclaredRequirement::new(
                "torch",
                &format!("=={version}"),
                PathBuf::from(&file),
                line,
                RequirementOrigin::InstallScript,
                &line_text(&text, line),
            ));
        }
    }

    /// A `pixi.toml`.
    fn pixi_manifest(&mut self, root: &Path, path: &Path) {
        let Some(text) = read_text(path) else { return };
        match toml::from_str::<toml::Table>(&text) {
            Ok(t) => self.pixi(root, path, &text, &t, ""),
            Err(_) => self
                .warnings
                .push(format!("{}: invalid TOML", rel(root, path))),
        }
    }

    /// The dependencies of a pixi manifest (`pixi.toml`, or `[tool.pixi]` of a pyproject:
    /// `prefix` is then `"tool.pixi."`): `[dependencies]` (conda: `pytorch = ">=2.6"`) and
    /// `[pypi-dependencies]` (`torch = { version = ">=2.6", index = "..." }`), at the top, per
    /// feature (`[feature.cuda.dependencies]`) and per platform (`[target.linux-64.dependencies]`).
    fn pixi(&mut self, root: &Path, path: &Path, text: &str, table: &toml::Table, prefix: &str) {
        let file = rel(root, path);
        let mut sections: Vec<(String, &toml::Table)> = Vec::new();
        // The dependency tables of a scope (the manifest, a feature, a platform), then those
        // of the scopes it holds.
        fn deps_of<'t>(at: &str, t: &'t toml::Table, out: &mut Vec<(String, &'t toml::Table)>) {
            for key in ["dependencies", "pypi-dependencies"] {
                if let Some(d) = t.get(key).and_then(|v| v.as_table()) {
                    out.push((format!("{at}{key}"), d));
                }
            }
            for scope in ["feature", "target"] {
                for (name, v) in t
                    .get(scope)
                    .and_then(|v| v.as_table())
                    .into_iter()
                    .flatten()
                {
                    if let Some(inner) = v.as_table() {
                        deps_of(&format!("{at}{scope}.{name}."), inner, out);
                    }
                }
            }
        }
        deps_of(prefix, table, &mut sections);
        for (section, deps) in sections {
            self.name_table(text, &file, &section, deps, RequirementOrigin::Conda);
        }
    }

    /// A TOML table of `name = "spec"` / `name = { version = "spec", ... }` requirements
    /// (Pipfile `[packages]`, pixi `[dependencies]`) under the header `section`.
    fn name_table(
        &mut self,
        text: &str,
        file: &str,
        section: &str,
        deps: &toml::Table,
        origin: RequirementOrigin,
    ) {
        let from = header_line(text, section).unwrap_or(0);
        for (name, value) in deps {
            let line = find_key_line(text, from, name).unwrap_or(1);
            let (spec, url) = poetry_spec(value);
            let spec = if spec == "*" { String::new() } else { spec };
            let mut r = DeclaredRequirement::new(
                name,
                &spec,
                PathBuf::from(file),
                line,
                origin.clone(),
                &line_text(text, line),
            );
            r.url = url;
            self.requirements.push(r);
        }
    }

    fn pipfile(&mut self, root: &Path, path: &Path) {
        let Some(text) = read_text(path) else { return };
        let Ok(table) = toml::from_str::<toml::Table>(&text) else {
            self.warnings
                .push(format!("{}: invalid TOML", rel(root, path)));
            return;
        };
        let file = rel(root, path);
        for section in ["packages", "dev-packages"] {
            let Some(deps) = table.get(section).and_then(|v| v.as_table()) else {
                continue;
            };
            self.name_table(&text, &file, section, deps, RequirementOrigin::Pipfile);
        }
        if let Some(srcs) = table.get("source").and_then(|v| v.as_array()) {
            for s in srcs {
                if let Some(url) = s.get("url").and_then(|u| u.as_str()) {
                    let line = find_line(&text, 0, &quoted(url));
                    self.indexes.push(Evidence::new(file.clone(), line, url));
                }
            }
        }
        if let Some(req) = table.get("requires").and_then(|v| v.as_table()) {
            for key in ["python_version", "python_full_version"] {
                if let Some(v) = req.get(key).and_then(|v| v.as_str()) {
                    let line = find_key_line(&text, 0, key);
                    self.python.push((
                        v.to_string(),
                        Evidence::new(
                            file.clone(),
                            line,
                            &line.map(|l| line_text(&text, l)).unwrap_or_default(),
                        ),
                    ));
                }
            }
        }
    }

    fn pipfile_lock(&mut self, root: &Path, path: &Path) {
        let Some(text) = read_text(path) else { return };
        let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
            self.warnings
                .push(format!("{}: invalid JSON", rel(root, path)));
            return;
        };
        let file = rel(root, path);
        for section in ["default", "develop"] {
            let Some(map) = json.get(section).and_then(|v| v.as_object()) else {
                continue;
            };
            for (name, entry) in map {
                let Some(v) = entry.get("version").and_then(|v| v.as_str()) else {
                    continue;
                };
                let line = find_line(&text, 0, &[format!("\"{name}\": {{")]).unwrap_or(1);
                let mut r = DeclaredRequirement::new(
                    name,
                    v,
                    PathBuf::from(&file),
                    line,
                    RequirementOrigin::Lock,
                    &format!("\"{name}\": {v}"),
                );
                r.locked_version = Some(v.trim_start_matches('=').to_string());
                self.locks.push(r);
            }
        }
        if let Some(srcs) = json.pointer("/_meta/sources").and_then(|v| v.as_array()) {
            for s in srcs {
                if let Some(url) = s.get("url").and_then(|u| u.as_str()) {
                    if is_torch_index(url) {
                        let line = find_line(&text, 0, &[url.to_string()]);
                        self.indexes.push(Evidence::new(file.clone(), line, url));
                    }
                }
            }
        }
    }

    fn toml_lock(&mut self, root: &Path, path: &Path) {
        let Some(text) = read_text(path) else { return };
        let Ok(table) = toml::from_str::<toml::Table>(&text) else {
            self.warnings
                .push(format!("{}: invalid TOML", rel(root, path)));
            return;
        };
        let file = rel(root, path);
        let Some(pkgs) = table.get("package").and_then(|v| v.as_array()) else {
            return;
        };
        // Lock files are long: index the `name = "..."` lines once.
        let mut name_lines: Vec<(String, u32)> = Vec::new();
        for (i, l) in text.lines().enumerate() {
            if let Some(rest) = l.strip_prefix("name = \"") {
                if let Some(n) = rest.strip_suffix('"') {
                    name_lines.push((n.to_string(), i as u32 + 1));
                }
            }
        }
        let mut seen_per_name: std::collections::HashMap<String, usize> =
            std::collections::HashMap::new();
        for p in pkgs {
            let (Some(name), Some(version)) = (
                p.get("name").and_then(|v| v.as_str()),
                p.get("version").and_then(|v| v.as_str()),
            ) else {
                continue;
            };
            let nth = seen_per_name.entry(name.to_string()).or_insert(0);
            let line = name_lines
                .iter()
                .filter(|(n, _)| n == name)
                .nth(*nth)
                .map_or(1, |(_, l)| *l);
            *nth += 1;
            let mut r = DeclaredRequirement::new(
                name,
                &format!("=={version}"),
                PathBuf::from(&file),
                line,
                RequirementOrigin::Lock,
                &format!("{name} {version}"),
            );
            r.locked_version = Some(version.to_string());
            if let Some(src) = p.get("source") {
                let url = src
                    .get("registry")
                    .or_else(|| src.get("url"))
                    .and_then(|u| u.as_str());
                if let Some(url) = url {
                    if is_torch_index(url) {
                        self.indexes.push(Evidence::new(
                            file.clone(),
                            Some(line),
                            &format!("{name} {version} from {url}"),
                        ));
                    }
                }
            }
            self.locks.push(r);
        }
    }
}

fn collect_setup_calls<'a>(body: &'a [Stmt], out: &mut Vec<&'a ast::ExprCall>) {
    for stmt in body {
        match stmt {
            Stmt::Expr(e) => {
                if let Expr::Call(c) = e.value.as_ref() {
                    let is_setup = match c.func.as_ref() {
                        Expr::Name(n) => n.id.as_str() == "setup",
                        Expr::Attribute(a) => a.attr.as_str() == "setup",
                        _ => false,
                    };
                    if is_setup {
                        out.push(c);
                    }
                }
            }
            Stmt::If(i) => {
                collect_setup_calls(&i.body, out);
                for c in &i.elif_else_clauses {
                    collect_setup_calls(&c.body, out);
                }
            }
            Stmt::FunctionDef(f) => collect_setup_calls(&f.body, out),
            _ => {}
        }
    }
}

/// String literals in a list/tuple literal (or a single string), with their offsets.
fn string_items(e: &Expr) -> Vec<(String, usize)> {
    let elts: Vec<&Expr> = match e {
        Expr::List(l) => l.elts.iter().collect(),
        Expr::Tuple(t) => t.elts.iter().collect(),
        Expr::StringLiteral(_) => vec![e],
        _ => Vec::new(),
    };
    elts.into_iter()
        .filter_map(|x| match x {
            Expr::StringLiteral(s) => {
                Some((s.value.to_str().to_string(), s.range().start().to_usize()))
            }
            _ => None,
        })
        .collect()
}

/// Poetry/Pipfile dependency value: `"^2.1"`, `{version = "..."}`, `{url = ...}`, `[{...}, ...]`.
fn poetry_spec(v: &toml::Value) -> (String, Option<String>) {
    match v {
        toml::Value::String(s) => (s.trim().to_string(), None),
        toml::Value::Table(t) => {
            let spec = t
                .get("version")
                .and_then(|x| x.as_str())
                .unwrap_or("")
                .to_string();
            let url = t
                .get("url")
                .or_else(|| t.get("git"))
                .or_else(|| t.get("path"))
                .and_then(|x| x.as_str())
                .map(String::from);
            (spec, url)
        }
        toml::Value::Array(a) => {
            let specs: Vec<String> = a
                .iter()
                .map(|x| poetry_spec(x).0)
                .filter(|s| !s.is_empty())
                .collect();
            (specs.join(" || "), None)
        }
        _ => (String::new(), None),
    }
}

/// conda match spec: `pytorch=2.1`, `pytorch::pytorch>=2.0`, `pytorch==2.1.0=py3.10_cuda11.8_0`,
/// `pytorch 2.1.0 py3.10_cuda`. Returns name and version specifier (build string dropped).
fn conda_spec(item: &str) -> (String, String) {
    let item = item.rsplit("::").next().unwrap_or(item).trim();
    let name_end = item
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || "-_.".contains(*c)))
        .map_or(item.len(), |(i, _)| i);
    let name = item[..name_end].to_string();
    let rest = item[name_end..].trim();
    if rest.is_empty() {
        return (name, String::new());
    }
    if rest.starts_with(['=', '<', '>', '!', '~']) {
        // `==2.1.0=build` or `=2.1=build`: drop the build string after the version.
        let (op, ver) = if let Some(v) = rest.strip_prefix("==") {
            ("==", v)
        } else if let Some(v) = rest.strip_prefix('=') {
            ("=", v)
        } else {
            ("", rest)
        };
        let ver = if op.is_empty() {
            ver
        } else {
            ver.split('=').next().unwrap_or(ver)
        };
        return (name, format!("{op}{ver}").replace(".*", ""));
    }
    // Space-separated `name version build`.
    let ver = rest.split_whitespace().next().unwrap_or("");
    (name, format!("=={ver}"))
}

/// Largest file read by content to decide what it is (a YAML file that may be a conda
/// environment, a shell script): configuration and data files can be large.
const MAX_SNIFFED: u64 = 256 * 1024;

fn read_small(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_SNIFFED {
        return None;
    }
    read_text(path)
}

/// Is this YAML text a conda environment: a top-level `dependencies:` list, and a top-level
/// `channels:` or `name:` key (what `conda env create -f` reads)? A model or data config
/// has neither pair.
pub(crate) fn is_conda_environment(text: &str) -> bool {
    let mut deps = false;
    let mut other = false;
    for line in text.lines() {
        if line.starts_with([' ', '\t', '#', '-']) {
            continue;
        }
        let key = line.split(':').next().unwrap_or("").trim();
        if !line.contains(':') {
            continue;
        }
        match key {
            "dependencies" => deps = true,
            "channels" | "name" => other = true,
            _ => {}
        }
    }
    deps && other
}

/// The package arguments of the install commands in a shell script: (1-based line, is a
/// conda command, the argument with its quotes removed). Continuation lines (`\` at the
/// end) join a command; `&&`, `;` and `|` separate commands; comments are dropped.
/// The torch version of a Dockerfile line `FROM pytorch/pytorch:<version>[-<variant>]
/// [AS name]` (`docker.io/` and `--platform=...` allowed); `None` for other lines, other
/// images and tags that are no version (`latest`).
fn pytorch_image_version(line: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    if !words.next()?.eq_ignore_ascii_case("FROM") {
        return None;
    }
    let image = words.find(|w| !w.starts_with("--"))?;
    let image = image.strip_prefix("docker.io/").unwrap_or(image);
    let tag = image.strip_prefix("pytorch/pytorch:")?;
    let version = tag.split('-').next()?;
    crate::requirement::Version::parse(version)
        .filter(|v| v.release.len() >= 2)
        .map(|_| version.to_string())
}

pub(crate) fn install_commands(text: &str) -> Vec<(u32, bool, String)> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let first = i;
        let mut joined = String::new();
        loop {
            let l = strip_comment(lines[i]).trim_end();
            match l.strip_suffix('\\') {
                Some(head) if i + 1 < lines.len() => {
                    joined.push_str(head);
                    joined.push(' ');
                    i += 1;
                }
                _ => {
                    joined.push_str(l.strip_suffix('\\').unwrap_or(l));
                    i += 1;
                    break;
                }
            }
        }
        let line = first as u32 + 1;
        for cmd in joined.split(['&', ';', '|']) {
            let words: Vec<String> = cmd
                .split_whitespace()
                .map(|w| w.trim_matches(['"', '\'']).to_string())
                .collect();
            let Some(at) = words.iter().position(|w| w == "install") else {
                continue;
            };
            let tool = &words[..at];
            let tool_name = |w: &String| w.rsplit('/').next().unwrap_or(w).to_string();
            let conda = tool
                .iter()
                .map(tool_name)
                .any(|w| matches!(w.as_str(), "conda" | "mamba" | "micromamba"));
            let pip = tool
                .iter()
                .map(tool_name)
                .any(|w| w == "pip" || w == "pip3" || w.starts_with("pip3."));
            if !(conda || pip) {
                continue;
            }
            let mut args = words[at + 1..].iter();
            while let Some(w) = args.next() {
                if w.is_empty() || w.starts_with('$') {
                    continue;
                }
                if w.starts_with('-') {
                    const TAKES_VALUE: &[&str] = &[
                        "-c",
                        "--channel",
                        "-n",
                        "--name",
                        "-p",
                        "--prefix",
                        "-f",
                        "--find-links",
                        "-i",
                        "--index-url",
                        "--extra-index-url",
                        "-r",
                        "--requirement",
                        "-e",
                        "--editable",
                        "-t",
                        "--target",
                        "--constraint",
                        "--file",
                        "--platform",
                        "--python-version",
                    ];
                    if TAKES_VALUE.contains(&w.as_str()) {
                        args.next();
                    }
                    continue;
                }
                out.push((line, conda, w.clone()));
            }
        }
    }
    out
}

/// Resolve `.` and `..` components without touching the file system.
fn lexical_normalize(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                let last_is_parent = matches!(
                    out.components().next_back(),
                    Some(Component::ParentDir) | None
                );
                if last_is_parent || !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Remove a `#` comment (at the start, or preceded by whitespace, as pip reads it).
pub(crate) fn strip_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'#' && (i == 0 || bytes[i - 1].is_ascii_whitespace()) {
            return &line[..i];
        }
    }
    line
}

/// `-r file`, `-rfile`, `--requirement=file`, `--requirement file`.
fn split_option(s: &str) -> (String, String) {
    if let Some(long) = s.strip_prefix("--") {
        let end = long
            .find(|c: char| c == '=' || c.is_whitespace())
            .unwrap_or(long.len());
        let opt = format!("--{}", &long[..end]);
        let value = long[end..].trim_start_matches(|c: char| c == '=' || c.is_whitespace());
        return (opt, value.to_string());
    }
    let mut chars = s.chars();
    chars.next();
    let flag: String = chars.next().map(String::from).unwrap_or_default();
    let value = s
        .get(2..)
        .unwrap_or("")
        .trim_start_matches(|c: char| c == '=' || c.is_whitespace());
    (format!("-{flag}"), value.to_string())
}

/// One `key = value` of an INI file, with continuation lines.
#[derive(Debug)]
pub(crate) struct IniEntry {
    pub section: String,
    pub key: String,
    /// Non-empty value lines (1-based line, trimmed text).
    pub values: Vec<(u32, String)>,
}

pub(crate) fn parse_ini(text: &str) -> Vec<IniEntry> {
    let mut out: Vec<IniEntry> = Vec::new();
    let mut section = String::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i as u32 + 1;
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with(';') {
            continue;
        }
        let indented = raw.starts_with([' ', '\t']);
        if indented {
            if let Some(last) = out.last_mut() {
                if last.section == section {
                    let v = strip_comment(t).trim();
                    if !v.is_empty() {
                        last.values.push((line, v.to_string()));
                    }
                    continue;
                }
            }
        }
        if t.starts_with('[') && t.ends_with(']') {
            section = t[1..t.len() - 1].trim().to_string();
            continue;
        }
        let Some(sep) = t.find(['=', ':']) else {
            continue;
        };
        let key = t[..sep].trim().to_string();
        let v = strip_comment(t[sep + 1..].trim()).trim();
        let mut values = Vec::new();
        if !v.is_empty() {
            values.push((line, v.to_string()));
        }
        out.push(IniEntry {
            section: section.clone(),
            key,
            values,
        });
    }
    out
}

/// The version in a URL-declared requirement, when the URL names a wheel.
pub(crate) fn url_version(r: &DeclaredRequirement) -> Option<String> {
    r.url.as_deref().and_then(version_from_url)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What one dependency file of this name and content declares, read as its name says.
    fn read_one(name: &str, content: &[u8]) -> DepFacts {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join(name);
        std::fs::write(&path, content).unwrap();
        let mut facts = DepFacts::default();
        facts.add_file(
            d.path(),
            &path,
            dep_file_kind(&path).expect("a dependency file"),
        );
        facts
    }

    /// (name, specifier, line) of every requirement read.
    fn declared(facts: &DepFacts) -> Vec<(&str, &str, u32)> {
        facts
            .requirements
            .iter()
            .map(|r| (r.name.as_str(), r.specifier.as_str(), r.line))
            .collect()
    }

    #[test]
    fn pixi_manifests_declare_conda_and_pypi_dependencies() {
        assert_eq!(dep_file_kind(Path::new("pixi.toml")), Some(DepKind::Pixi));
        let facts = read_one(
            "pixi.toml",
            b"[workspace]\nchannels = [\"conda-forge\"]\nplatforms = [\"linux-64\"]\n\n[dependencies]\npython = \"3.12.*\"\n\n[feature.cuda.pypi-dependencies]\ntorch = { version = \">=2.6\", index = \"https://download.pytorch.org/whl/cu124\" }\n\n[target.osx-arm64.dependencies]\npytorch = \"2.7.*\"\n",
        );
        let got = declared(&facts);
        assert_eq!(
            got,
            vec![
                ("python", "3.12.*", 6),
                ("torch", ">=2.6", 9),
                ("pytorch", "2.7.*", 12)
            ]
        );
        // The same tables under `[tool.pixi]` of a pyproject.
        let facts = read_one(
            "pyproject.toml",
            b"[project]\nname = \"x\"\n\n[tool.pixi.pypi-dependencies]\ntorch = \">=2.6,<3\"\n",
        );
        assert!(declared(&facts).contains(&("torch", ">=2.6,<3", 5)));
    }

    #[test]
    fn requirements_written_by_powershell_are_utf16() {
        let text = "numpy==1.26.4\r\ntorch==2.5.1\r\n";
        let mut le = vec![0xFF, 0xFE];
        le.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
        assert_eq!(decode_text(&le), text);
        let mut be = vec![0xFE, 0xFF];
        be.extend(text.encode_utf16().flat_map(u16::to_be_bytes));
        assert_eq!(decode_text(&be), text);
        let mut bom8 = vec![0xEF, 0xBB, 0xBF];
        bom8.extend(text.bytes());
        assert_eq!(decode_text(&bom8), text);
        let facts = read_one("requirements.txt", &le);
        let got = declared(&facts);
        assert_eq!(got, vec![("numpy", "==1.26.4", 1), ("torch", "==2.5.1", 2)]);
    }

    #[test]
    fn dockerfiles_pin_torch_by_base_image_and_install_lines() {
        assert_eq!(
            pytorch_image_version("FROM pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime AS base"),
            Some("2.1.0".into())
        );
        assert_eq!(
            pytorch_image_version("from --platform=linux/amd64 docker.io/pytorch/pytorch:1.13.1-cuda11.6-cudnn8-devel"),
            Some("1.13.1".into())
        );
        assert_eq!(pytorch_image_version("FROM pytorch/pytorch:latest"), None);
        assert_eq!(
            pytorch_image_version("FROM nvcr.io/nvidia/pytorch:23.10-py3"),
            None
        );
        assert_eq!(pytorch_image_version("FROM python:3.12-slim"), None);
        assert_eq!(
            pytorch_image_version("RUN echo FROM pytorch/pytorch:2.1.0"),
            None
        );
        assert_eq!(
            dep_file_kind(Path::new("docker/Dockerfile.gpu")),
            Some(DepKind::Dockerfile)
        );
        assert_eq!(
            dep_file_kind(Path::new("Dockerfile")),
            Some(DepKind::Dockerfile)
        );
        let facts = read_one(
            "Dockerfile",
            b"FROM python:3.10-slim\nRUN pip install --no-cache-dir torch==2.2.1 \\\n    torchvision==0.17.1\nCOPY . /app\n",
        );
        let got = declared(&facts);
        assert_eq!(
            got,
            vec![("torch", "==2.2.1", 2), ("torchvision", "==0.17.1", 2)]
        );
    }

    #[test]
    fn install_commands_of_shell_scripts() {
        let got = install_commands(
            "# conda install pytorch==0.4 (a comment)\nconda install -y -c pytorch pytorch=1.8.0 'torchvision>=0.9' \\\n  cudatoolkit=11.1\nsource activate x && pip3 install --upgrade torch==2.0.1 -i https://mirror/simple\napt-get install -y git\npip install -r requirements.txt\n",
        );
        let got: Vec<(u32, bool, &str)> =
            got.iter().map(|(l, c, w)| (*l, *c, w.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (2, true, "pytorch=1.8.0"),
                (2, true, "torchvision>=0.9"),
                (2, true, "cudatoolkit=11.1"),
                (4, false, "torch==2.0.1"),
            ]
        );
    }

    #[test]
    fn conda_environments_by_content() {
        assert!(is_conda_environment(
            "name: nmt\nchannels:\n  - pytorch\ndependencies:\n  - python=3.5\n"
        ));
        assert!(is_conda_environment(
            "dependencies:\n  - pytorch\nname: x\n"
        ));
        // Model and CI configs.
        assert!(!is_conda_environment(
            "model:\n  name: r50\n  dependencies: []\n"
        ));
        assert!(!is_conda_environment(
            "name: CI\non: [push]\njobs:\n  test: {}\n"
        ));
    }

    #[test]
    fn conda_specs() {
        assert_eq!(conda_spec("pytorch=2.1"), ("pytorch".into(), "=2.1".into()));
        assert_eq!(
            conda_spec("pytorch::pytorch>=2.0"),
            ("pytorch".into(), ">=2.0".into())
        );
        assert_eq!(
            conda_spec("pytorch==2.1.0=py3.10_cuda11.8_0"),
            ("pytorch".into(), "==2.1.0".into())
        );
        assert_eq!(
            conda_spec("pytorch 2.1.0 py3.10"),
            ("pytorch".into(), "==2.1.0".into())
        );
        assert_eq!(conda_spec("numpy"), ("numpy".into(), "".into()));
    }

    #[test]
    fn options_and_comments() {
        assert_eq!(
            split_option("-r base.txt"),
            ("-r".into(), "base.txt".into())
        );
        assert_eq!(split_option("-rbase.txt"), ("-r".into(), "base.txt".into()));
        assert_eq!(
            split_option("--requirement=base.txt"),
            ("--requirement".into(), "base.txt".into())
        );
        assert_eq!(strip_comment("torch==2.1 # pinned"), "torch==2.1 ");
        assert_eq!(
            strip_comment("git+https://x/y.git#egg=foo"),
            "git+https://x/y.git#egg=foo"
        );
    }

    #[test]
    fn includes_cycles_and_continuations() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::write(
            root.join("requirements.txt"),
            "-r requirements.txt\n--requirement=dev.txt\n-r missing.txt\ntorch>=2.1,\\\n    <2.4 ; python_version >= '3.9' --hash=sha256:00\n-e git+https://x.invalid/r.git#egg=mylib\n",
        )
        .expect("write");
        std::fs::write(
            root.join("dev.txt"),
            "-r requirements.txt\npytest # tests\n",
        )
        .expect("write");
        let mut facts = DepFacts::default();
        facts.requirements_txt(
            root,
            &root.join("requirements.txt"),
            RequirementOrigin::RequirementsTxt,
            0,
        );
        let names = declared(&facts);
        assert_eq!(
            names,
            vec![
                ("pytest", "", 2),
                ("torch", ">=2.1,<2.4", 4),
                ("mylib", "", 6)
            ]
        );
        assert_eq!(
            facts.requirements[1].marker.as_deref(),
            Some("python_version >= '3.9'")
        );
        assert_eq!(facts.requirements[0].source, PathBuf::from("dev.txt"));
        assert_eq!(facts.warnings.len(), 1, "{:?}", facts.warnings);
        assert!(facts.warnings[0].contains("missing.txt"));
    }

    #[test]
    fn ini_continuations() {
        let e = parse_ini(
            "[options]\ninstall_requires =\n    torch>=2.0\n    numpy\npython_requires = >=3.9\n",
        );
        assert_eq!(
            e[0].values,
            vec![(3, "torch>=2.0".to_string()), (4, "numpy".to_string())]
        );
        assert_eq!(e[1].values, vec![(5, ">=3.9".to_string())]);
    }
}

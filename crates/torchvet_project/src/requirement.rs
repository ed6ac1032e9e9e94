//! One declared dependency (PEP 508 and the dialects of Poetry, conda and lock files) and the
//! version arithmetic the linter needs (`max_allowed_version`).

use serde::Serialize;
use std::path::PathBuf;

/// Where a requirement was declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RequirementOrigin {
    /// `requirements*.txt` (or a file reached through `-r`).
    RequirementsTxt,
    /// A constraints file reached through `-c`.
    Constraints,
    /// PEP 621 `[project] dependencies`.
    Pep621,
    /// PEP 621 `[project.optional-dependencies]`, with the extra's name.
    Pep621Optional(String),
    /// PEP 735 / uv `[dependency-groups]`, with the group's name.
    DependencyGroup(String),
    /// `[tool.poetry.dependencies]` or a Poetry group, with the group's name (`main` for the main one).
    Poetry(String),
    /// `[tool.pdm.dev-dependencies]`, with the group's name.
    Pdm(String),
    /// `[tool.uv] dev-dependencies`.
    UvDev,
    /// `setup.cfg` `install_requires` or `extras_require`.
    SetupCfg,
    /// `setup.py` `install_requires` / `extras_require` literals.
    SetupPy,
    /// conda `environment.yml` (conda or pip section).
    Conda,
    /// `Pipfile` `[packages]` / `[dev-packages]`.
    Pipfile,
    /// A lock file (`uv.lock`, `poetry.lock`, `pdm.lock`, `Pipfile.lock`): an exact version.
    Lock,
    /// A `conda install` / `pip install` command of torch in a shell script (`setup.sh`).
    InstallScript,
}

impl RequirementOrigin {
    /// Lower is preferred when several files declare the same package.
    pub(crate) fn rank(&self) -> u8 {
        match self {
            RequirementOrigin::Pep621 => 0,
            RequirementOrigin::Poetry(g) if g == "main" => 0,
            RequirementOrigin::SetupCfg | RequirementOrigin::SetupPy => 1,
            RequirementOrigin::RequirementsTxt => 2,
            RequirementOrigin::Pipfile | RequirementOrigin::Conda => 3,
            RequirementOrigin::Pep621Optional(_) => 4,
            RequirementOrigin::Poetry(_)
            | RequirementOrigin::Pdm(_)
            | RequirementOrigin::DependencyGroup(_)
            | RequirementOrigin::UvDev => 5,
            RequirementOrigin::Constraints | RequirementOrigin::InstallScript => 6,
            RequirementOrigin::Lock => 7,
        }
    }
}

/// A dependency as declared in one project file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeclaredRequirement {
    /// The name as written (`torch`, `pytorch`, `Torch_Vision`).
    pub name: String,
    /// The PEP 503 normalised name (`torch-vision`).
    pub normalized: String,
    /// Extras requested (`[cuda]`).
    pub extras: Vec<String>,
    /// The version specifier as written, PEP 440 style (`>=2.2,<2.5`), Poetry style (`^2.1`) or
    /// conda style (`=2.1`); empty when the requirement is unversioned.
    pub specifier: String,
    /// A direct URL (`name @ https://...`, a wheel URL, a VCS URL).
    pub url: Option<String>,
    /// The environment marker after `;`.
    pub marker: Option<String>,
    /// The file that declared it, relative to the project root when inside it.
    pub source: PathBuf,
    /// 1-based line in `source`.
    pub line: u32,
    /// Which kind of declaration this is.
    pub origin: RequirementOrigin,
    /// The exact version from a lock file, when one pins this package.
    pub locked_version: Option<String>,
    /// The source line, trimmed.
    pub text: String,
}

/// Normalise a distribution name as PEP 503 does (lowercase, runs of `-_.` become `-`).
pub fn normalize_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut sep = false;
    for c in name.trim().chars() {
        if c == '-' || c == '_' || c == '.' {
            sep = true;
        } else {
            if sep && !out.is_empty() {
                out.push('-');
            }
            sep = false;
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// A normalised name with the CPU/GPU variants of the old conda packages folded into the
/// package they build (`pytorch-cpu`, `torchvision-cpu`, `pytorch-gpu`: conda's channels
/// for torch 0.4 - 1.0).
fn canonical_name(normalized: String) -> String {
    match normalized.as_str() {
        "pytorch-cpu" | "pytorch-gpu" => "pytorch".to_string(),
        "torchvision-cpu" | "torchvision-gpu" => "torchvision".to_string(),
        _ => normalized,
    }
}

/// True when `normalized` names PyTorch itself (`torch`, or conda's `pytorch`).
pub(crate) fn is_torch(normalized: &str) -> bool {
    normalized == "torch" || normalized == "pytorch"
}

impl DeclaredRequirement {
    pub(crate) fn new(
        name: &str,
        specifier: &str,
        source: PathBuf,
        line: u32,
        origin: RequirementOrigin,
        text: &str,
    ) -> Self {
        DeclaredRequirement {
            name: name.to_string(),
            normalized: canonical_name(normalize_name(name)),
            extras: Vec::new(),
            specifier: specifier.trim().to_string(),
            url: None,
            marker: None,
            source,
            line,
            origin,
            locked_version: None,
            text: text.trim().to_string(),
        }
    }

    /// The specifier for display: `>=2.2,<2.5`, `@ URL`, or `*` when unversioned.
    pub fn display_specifier(&self) -> String {
        if !self.specifier.is_empty() {
            self.specifier.clone()
        } else if let Some(url) = &self.url {
            format!("@ {url}")
        } else {
            "*".to_string()
        }
    }

    /// The highest `(major, minor)` the specifier allows; `u32::MAX` as minor means "any minor of
    /// that major". `None` means unbounded (the latest release). A lock-file version, when
    /// known, bounds the result too.
    ///
    /// `==1.13.1` gives `(1, 13)`, `<2.0` gives `(1, u32::MAX)`, `~=1.13` gives `(1, u32::MAX)`,
    /// `~=1.13.1` gives `(1, 13)`, Poetry's `^2.1` gives `(2, u32::MAX)`, conda's `=2.1` gives
    /// `(2, 1)`.
    pub fn max_allowed_version(&self) -> Option<(u32, u32)> {
        let mut best = max_allowed(&self.specifier).or_else(|| self.url_version());
        if let Some(locked) = self.locked_version.as_deref().and_then(Version::parse) {
            let l = (locked.major(), locked.minor());
            best = Some(match best {
                Some(b) if b < l => b,
                _ => l,
            });
        }
        best
    }

    /// The `(major, minor)` a requirement that is the URL of one package file installs (a
    /// wheel, a conda package: `torch-2.1.0+cu118-...whl`).
    fn url_version(&self) -> Option<(u32, u32)> {
        let v = Version::parse(&version_from_url(self.url.as_deref()?)?)?;
        Some((v.major(), v.minor()))
    }

    /// The lowest `(major, minor)` the specifier allows, if it has a lower bound.
    pub fn min_allowed_version(&self) -> Option<(u32, u32)> {
        if let Some(locked) = self.locked_version.as_deref().and_then(Version::parse) {
            return Some((locked.major(), locked.minor()));
        }
        if self.specifier.is_empty() {
            if let Some(v) = self.url_version() {
                return Some(v);
            }
        }
        let mut best: Option<(u32, u32)> = None;
        for clause in split_clauses(&self.specifier) {
            let (op, v) = split_op(&clause);
            let Some(ver) = Version::parse(v.trim_end_matches(".*")) else {
                continue;
            };
            let lo = match op {
                ">=" | "==" | "===" | "~=" | "^" | "~" | "=" | "" => (ver.major(), ver.minor()),
                ">" => (ver.major(), ver.minor()),
                _ => continue,
            };
            best = Some(match best {
                Some(b) if b > lo => b,
                _ => lo,
            });
        }
        best
    }
}

/// A parsed release version (`2.1.0+cu118` → release `[2, 1, 0]`, local `cu118`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Version {
    pub release: Vec<u32>,
    pub pre: bool,
    pub local: Option<String>,
}

impl Version {
    pub(crate) fn parse(s: &str) -> Option<Version> {
        let s = s.trim().trim_start_matches(['v', 'V']);
        let (main, local) = match s.split_once('+') {
            Some((m, l)) => (m, Some(l.to_string())),
            None => (s, None),
        };
        let main = match main.split_once('!') {
            Some((_, rest)) => rest,
            None => main,
        };
        let mut release = Vec::new();
        let mut pre = false;
        for part in main.split('.') {
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            if digits.is_empty() {
                if part != "*" && !part.is_empty() {
                    pre = true;
                }
                break;
            }
            release.push(digits.parse().ok()?);
            if digits.len() != part.len() {
                let rest = &part[digits.len()..];
                if !rest.starts_with("post") {
                    pre = true;
                }
                break;
            }
        }
        if release.is_empty() {
            return None;
        }
        Some(Version {
            release,
            pre,
            local,
        })
    }

    pub(crate) fn major(&self) -> u32 {
        self.release.first().copied().unwrap_or(0)
    }

    pub(crate) fn minor(&self) -> u32 {
        self.release.get(1).copied().unwrap_or(0)
    }

    fn rest_nonzero(&self) -> bool {
        self.release.iter().skip(2).any(|&x| x != 0)
    }
}

fn split_clauses(spec: &str) -> Vec<String> {
    // PEP 440 uses commas; Poetry and conda also allow `||`/`|` alternatives, which we treat
    // as "any of", and spaces between clauses (`>=1.0 <2.0`).
    spec.split(',')
        .flat_map(|c| {
            let c = c.trim();
            // Split `>=1.0 <2.0` on whitespace that precedes an operator.
            let mut parts = Vec::new();
            let mut cur = String::new();
            let mut prev_space = false;
            for ch in c.chars() {
                if ch.is_whitespace() {
                    prev_space = true;
                    continue;
                }
                if prev_space
                    && "<>=!~^".contains(ch)
                    && !cur.is_empty()
                    && !cur.ends_with(['<', '>', '=', '!', '~', '^'])
                {
                    parts.push(std::mem::take(&mut cur));
                }
                prev_space = false;
                cur.push(ch);
            }
            if !cur.is_empty() {
                parts.push(cur);
            }
            parts
        })
        .filter(|c| !c.is_empty())
        .collect()
}

fn split_op(clause: &str) -> (&str, &str) {
    for op in ["===", "==", "~=", "!=", "<=", ">=", "<", ">", "^", "~", "="] {
        if let Some(rest) = clause.strip_prefix(op) {
            return (op, rest.trim());
        }
    }
    ("", clause.trim())
}

/// The highest `(major, minor)` allowed by one specifier string; see
/// [`DeclaredRequirement::max_allowed_version`].
pub fn max_allowed(spec: &str) -> Option<(u32, u32)> {
    let spec = spec.trim();
    if spec.is_empty() || spec == "*" {
        return None;
    }
    // Alternatives (`^1.13 || ^2.0`): the highest bound of any alternative.
    if spec.contains('|') {
        let mut best: Option<(u32, u32)> = Some((0, 0));
        for alt in spec.split('|').filter(|a| !a.trim().is_empty()) {
            match (max_allowed(alt), best) {
                (None, _) => return None,
                (Some(a), Some(b)) if a > b => best = Some(a),
                _ => {}
            }
        }
        return best;
    }
    let mut best: Option<(u32, u32)> = None;
    let mut tighten = |b: (u32, u32)| {
        best = Some(match best {
            Some(cur) if cur < b => cur,
            _ => b,
        });
    };
    for clause in split_clauses(spec) {
        let (op, raw) = split_op(&clause);
        let wildcard = raw.ends_with(".*") || raw == "*";
        let Some(v) = Version::parse(raw.trim_end_matches(".*")) else {
            continue;
        };
        let (maj, min) = (v.major(), v.minor());
        let n = v.release.len();
        match op {
            "==" | "===" | "" => {
                if wildcard && n == 1 {
                    tighten((maj, u32::MAX));
                } else {
                    tighten((maj, min));
                }
            }
            // conda: `=2.1` means 2.1.*, `=2` means 2.*
            "=" => tighten(if n == 1 { (maj, u32::MAX) } else { (maj, min) }),
            "<=" => tighten(if n == 1 { (maj, 0) } else { (maj, min) }),
            "<" => {
                if v.rest_nonzero() {
                    tighten((maj, min));
                } else if n >= 2 && min > 0 {
                    tighten((maj, min - 1));
                } else if maj > 0 {
                    tighten((maj - 1, u32::MAX));
                } else {
                    tighten((0, 0));
                }
            }
            "~=" => {
                if n <= 2 {
                    tighten((maj, u32::MAX));
                } else {
                    tighten((maj, min));
                }
            }
            // Poetry caret: ^1.2 -> <2.0; ^0.4 -> <0.5; ^0.0.3 -> <0.0.4
            "^" => tighten(if maj > 0 || n == 1 {
                (maj, u32::MAX)
            } else {
                (0, min)
            }),
            // Poetry tilde: ~1.2 -> <1.3; ~1 -> <2
            "~" => tighten(if n == 1 { (maj, u32::MAX) } else { (maj, min) }),
            _ => {}
        }
    }
    best
}

/// A conda package file's name and version (`pytorch-2.1.0-py3.11_cuda12.1_cudnn8_0.tar.bz2`,
/// `pytorch-cuda-12.1-hde6ce7c_5.conda`: name, version and build string joined by dashes;
/// the name may hold dashes, the version and build do not), as `conda list --explicit`
/// writes them into a requirements file.
fn conda_package_file(file: &str) -> Option<(&str, &str)> {
    let stem = file
        .strip_suffix(".tar.bz2")
        .or_else(|| file.strip_suffix(".conda"))?;
    let (rest, _build) = stem.rsplit_once('-')?;
    let (name, version) = rest.rsplit_once('-')?;
    (!name.is_empty() && Version::parse(version).is_some()).then_some((name, version))
}

/// A version embedded in a wheel URL or file name (`torch-2.1.0+cu118-cp310-...whl`), or in
/// a conda package's (`.../pytorch-2.1.0-py3.11_cuda12.1_cudnn8_0.tar.bz2`).
pub(crate) fn version_from_url(url: &str) -> Option<String> {
    let file = url.rsplit('/').next()?;
    let file = file.split(['#', '?']).next()?;
    if let Some((_, v)) = conda_package_file(file) {
        return Some(v.to_string());
    }
    let decoded = file.replace("%2B", "+").replace("%2b", "+");
    if !decoded.ends_with(".whl") && !decoded.ends_with(".tar.gz") && !decoded.ends_with(".zip") {
        return None;
    }
    let mut parts = decoded.split('-');
    parts.next()?;
    let v = parts.next()?;
    let v = v.trim_end_matches(".tar.gz").trim_end_matches(".zip");
    Version::parse(v).map(|_| v.to_string())
}

/// The distribution name in a wheel/sdist URL or a VCS URL's `#egg=` fragment.
pub(crate) fn name_from_url(url: &str) -> Option<String> {
    if let Some(idx) = url.find("#egg=") {
        let rest = &url[idx + 5..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || "-_.".contains(*c))
            .collect();
        if !name.is_empty() {
            return Some(name);
        }
    }
    let file = url.rsplit('/').next()?;
    let file = file.split(['#', '?']).next()?;
    if let Some((name, _)) = conda_package_file(file) {
        return Some(name.to_string());
    }
    if file.ends_with(".whl") || file.ends_with(".tar.gz") || file.ends_with(".zip") {
        let name = file.split('-').next()?;
        if !name.is_empty() {
            return Some(name.to_string());
        }
    }
    None
}

/// A PEP 508 requirement string, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pep508 {
    pub name: String,
    pub extras: Vec<String>,
    pub specifier: String,
    pub url: Option<String>,
    pub marker: Option<String>,
}

/// Parse `name[extra1,extra2] (>=1,<2) ; marker` / `name @ url ; marker` / a bare URL.
pub(crate) fn parse_pep508(input: &str) -> Option<Pep508> {
    let s = input.trim();
    if s.is_empty() {
        return None;
    }
    // A bare URL or path to a wheel/VCS checkout.
    let lower = s.to_ascii_lowercase();
    if lower.starts_with("http://")
        || lower.starts_with("https://")
        || lower.starts_with("git+")
        || lower.starts_with("hg+")
        || lower.starts_with("svn+")
        || lower.starts_with("bzr+")
        || lower.starts_with("file:")
        || lower.ends_with(".whl")
    {
        let (url, marker) = split_marker_url(s);
        let name = name_from_url(&url)?;
        return Some(Pep508 {
            name,
            extras: Vec::new(),
            specifier: String::new(),
            url: Some(url),
            marker,
        });
    }
    let name_end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_' || *c == '.'))
        .map_or(s.len(), |(i, _)| i);
    let name = &s[..name_end];
    if name.is_empty()
        || !name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
    {
        return None;
    }
    let mut rest = s[name_end..].trim_start();
    let mut extras = Vec::new();
    if let Some(after) = rest.strip_prefix('[') {
        let close = after.find(']')?;
        extras = after[..close]
            .split(',')
            .map(|e| e.trim().to_string())
            .filter(|e| !e.is_empty())
            .collect();
        rest = after[close + 1..].trim_start();
    }
    if let Some(after) = rest.strip_prefix('@') {
        let (url, marker) = split_marker_url(after.trim());
        return Some(Pep508 {
            name: name.to_string(),
            extras,
            specifier: String::new(),
            url: Some(url),
            marker,
        });
    }
    let (spec, marker) = match rest.split_once(';') {
        Some((a, b)) => (a, Some(b.trim().to_string()).filter(|m| !m.is_empty())),
        None => (rest, None),
    };
    let spec = spec.trim().trim_start_matches('(').trim_end_matches(')');
    let spec: String = spec.split(',').map(str::trim).collect::<Vec<_>>().join(",");
    Some(Pep508 {
        name: name.to_string(),
        extras,
        specifier: spec,
        url: None,
        marker,
    })
}

/// For URLs, a marker is separated by `; ` (a space is required after the URL, PEP 508).
fn split_marker_url(s: &str) -> (String, Option<String>) {
    if let Some(idx) = s.find(" ;").or_else(|| s.find("; ")) {
        let (u, m) = s.split_at(idx);
        let m = m.trim().trim_start_matches(';').trim();
        (
            u.trim().to_string(),
            Some(m.to_string()).filter(|m| !m.is_empty()),
        )
    } else {
        (s.trim().to_string(), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(spec: &str) -> DeclaredRequirement {
        DeclaredRequirement::new(
            "torch",
            spec,
            PathBuf::from("r.txt"),
            1,
            RequirementOrigin::RequirementsTxt,
            "",
        )
    }

    #[test]
    fn max_allowed_versions() {
        let m = u32::MAX;
        let cases: &[(&str, Option<(u32, u32)>)] = &[
            ("==1.13.1", Some((1, 13))),
            ("<2.0", Some((1, m))),
            ("<2", Some((1, m))),
            ("<2.0.0", Some((1, m))),
            ("<2.1", Some((2, 0))),
            ("<2.1.3", Some((2, 1))),
            ("<=2.1", Some((2, 1))),
            ("~=1.13", Some((1, m))),
            ("~=1.13.1", Some((1, 13))),
            (">=2.2,<2.5", Some((2, 4))),
            (">=2.2, !=2.3.0", None),
            (">=1.0", None),
            ("", None),
            ("*", None),
            ("^2.1", Some((2, m))),
            ("^0.4", Some((0, 4))),
            ("~1.13", Some((1, 13))),
            ("=2.1", Some((2, 1))),
            ("==2.*", Some((2, m))),
            ("==2.1.*", Some((2, 1))),
            (">=1.0 <2.0", Some((1, m))),
            ("^1.13 || ^2.0", Some((2, m))),
            ("==2.1.0+cu118", Some((2, 1))),
        ];
        for (spec, want) in cases {
            assert_eq!(req(spec).max_allowed_version(), *want, "spec {spec:?}");
        }
    }

    #[test]
    fn lock_bounds_the_maximum() {
        let mut r = req(">=2.0");
        r.locked_version = Some("2.3.1".into());
        assert_eq!(r.max_allowed_version(), Some((2, 3)));
        assert_eq!(r.min_allowed_version(), Some((2, 3)));
        assert_eq!(req(">=2.2,<2.5").min_allowed_version(), Some((2, 2)));
    }

    #[test]
    fn pep508_forms() {
        let p = parse_pep508("torch[cuda] >= 2.0 , <3 ; python_version >= '3.9'").unwrap();
        assert_eq!(p.name, "torch");
        assert_eq!(p.extras, vec!["cuda"]);
        assert_eq!(p.specifier, ">= 2.0,<3");
        assert_eq!(p.marker.as_deref(), Some("python_version >= '3.9'"));
        let p = parse_pep508("torch @ https://download.pytorch.org/whl/cu118/torch-2.1.0%2Bcu118-cp310-cp310-linux_x86_64.whl ; sys_platform == 'linux'").unwrap();
        assert_eq!(p.name, "torch");
        assert!(p.url.as_deref().unwrap().ends_with(".whl"));
        assert_eq!(p.marker.as_deref(), Some("sys_platform == 'linux'"));
        let p = parse_pep508("https://download.pytorch.org/whl/cu118/torch-2.1.0%2Bcu118-cp310-cp310-linux_x86_64.whl").unwrap();
        assert_eq!(p.name, "torch");
        assert_eq!(
            version_from_url(p.url.as_deref().unwrap()).as_deref(),
            Some("2.1.0+cu118")
        );
        // `conda list --explicit` output: package URLs of the conda channels.
        let p = parse_pep508(
            "https://conda.anaconda.org/pytorch/win-64/pytorch-2.1.0-py3.11_cuda12.1_cudnn8_0.tar.bz2",
        )
        .unwrap();
        assert_eq!(p.name, "pytorch");
        assert_eq!(
            version_from_url(p.url.as_deref().unwrap()).as_deref(),
            Some("2.1.0")
        );
        let p = parse_pep508(
            "https://conda.anaconda.org/pytorch/win-64/pytorch-cuda-12.1-hde6ce7c_5.conda",
        )
        .unwrap();
        assert_eq!(p.name, "pytorch-cuda");
        let p = parse_pep508(
            "https://repo.anaconda.com/pkgs/main/noarch/pytorch-mutex-1.0-cuda.tar.bz2",
        )
        .unwrap();
        assert_eq!(p.name, "pytorch-mutex");
        let p = parse_pep508("git+https://github.com/org/repo.git@v1#egg=my_pkg").unwrap();
        assert_eq!(p.name, "my_pkg");
        let p = parse_pep508("numpy (>=1.20)").unwrap();
        assert_eq!(p.specifier, ">=1.20");
        assert!(parse_pep508("--index-url x").is_none());
    }

    #[test]
    fn normalizes_names() {
        assert_eq!(normalize_name("Torch_Vision"), "torch-vision");
        assert_eq!(normalize_name("pytorch.lightning"), "pytorch-lightning");
    }
}

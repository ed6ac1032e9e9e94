//! The per-file result cache of `torchvet check` (`.torchvet_cache/`, `--no-cache` to skip).
//!
//! An entry holds one file's findings (before per-file-ignores, without the file name, which
//! is filled in on reading) under a key made of:
//! - the torchvet version and the effective lint settings (the directory the entries live in:
//!   `.torchvet_cache/<version>/<settings fingerprint>/`);
//! - the file's content (xxh3-128 of its bytes, and whether it is a notebook);
//! - the fingerprint of the facts the file's findings depend on from other files
//!   ([`DependencyFingerprint`]). With the per-file linter that is nothing; once rules read
//!   the whole-project model, it is the hash of the summaries of the modules the file
//!   depends on, so an edit elsewhere invalidates exactly the files that read it.
//!
//! Writes go through a temporary file renamed into place, so a reader never sees half an
//! entry; an entry that cannot be read or decoded is treated as missing and rewritten. Only
//! plain lint runs use the cache (never `--fix`, `--diff` or the benchmark modes).
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use torchvet_diagnostics::{Applicability, Diagnostic, Edit, Fix, Location, Related};
use torchvet_linter::{all_rules, find_rule, LintSettings, Linter};
use torchvet_python::SourceFile;
use xxhash_rust::xxh3::{xxh3_128, Xxh3};

/// Bumped when the entry format changes.
const FORMAT: u32 = 1;

/// What a file's findings depend on outside the file itself. The per-file linter depends on
/// nothing else (`None`); the project model supplies a hash of the summaries of the files
/// this one imports or calls into.
pub trait DependencyFingerprint: Sync {
    /// The fingerprint for `path`, or `None` when its findings depend on it alone.
    fn fingerprint(&self, path: &Path) -> Option<u128>;
}

/// The per-file linter: findings depend on the file alone.
pub struct NoDependencies;

impl DependencyFingerprint for NoDependencies {
    fn fingerprint(&self, _path: &Path) -> Option<u128> {
        None
    }
}

/// An open cache directory for one version and one set of settings.
pub struct Cache {
    dir: PathBuf,
}

/// Which build of the binary this is (its size and modification time): a rebuilt or
/// reinstalled torchvet of the same version (a development build with a changed rule) must
/// not read the entries of the previous one.
fn build_id() -> u64 {
    let meta = std::env::current_exe().and_then(std::fs::metadata);
    let mut h = Xxh3::new();
    if let Ok(m) = meta {
        h.update(&m.len().to_le_bytes());
        if let Ok(t) = m.modified() {
            let since = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            h.update(&since.as_nanos().to_le_bytes());
        }
    }
    h.digest()
}

/// A fingerprint of everything in the settings that changes findings.
fn settings_fingerprint(settings: &LintSettings) -> u128 {
    let mut h = Xxh3::new();
    h.update(&[u8::from(settings.preview)]);
    for &on in &settings.enabled {
        h.update(&[u8::from(on)]);
    }
    match settings.target_torch {
        Some(v) => h.update(format!("torch {v}").as_bytes()),
        None => h.update(b"torch latest"),
    }
    // The rule table itself (a rebuilt binary with a renamed or added rule).
    for r in all_rules() {
        h.update(r.code.as_bytes());
        h.update(r.name.as_bytes());
    }
    h.digest128()
}

impl Cache {
    /// The cache under `root/.torchvet_cache` for these settings. `None` when the directory
    /// cannot be created (read-only checkout...): the run goes on without a cache.
    pub fn open(root: &Path, settings: &LintSettings, version: &str) -> Option<Self> {
        let base = root.join(".torchvet_cache");
        let dir = base
            .join(format!("{version}-{:016x}", build_id()))
            .join(format!("{:032x}", settings_fingerprint(settings)));
        std::fs::create_dir_all(&dir).ok()?;
        // Keep the cache out of version control and backups, as other tools do.
        let ignore = base.join(".gitignore");
        if !ignore.exists() {
            let _ = std::fs::write(&ignore, "# Created by torchvet\n*\n");
        }
        let tag = base.join("CACHEDIR.TAG");
        if !tag.exists() {
            let _ = std::fs::write(
                &tag,
                "Signature: 8a477f597d28d172789f06886806bc55\n# torchvet's result cache\n",
            );
        }
        Some(Self { dir })
    }

    fn entry_path(&self, key: u128) -> PathBuf {
        let hex = format!("{key:032x}");
        self.dir.join(&hex[..2]).join(&hex[2..])
    }

    /// The key of a file's content (and what it depends on).
    pub fn key(bytes: &[u8], notebook: bool, deps: Option<u128>) -> u128 {
        let mut h = Xxh3::new();
        h.update(&xxh3_128(bytes).to_le_bytes());
        h.update(&[u8::from(notebook)]);
        if let Some(d) = deps {
            h.update(&d.to_le_bytes());
        }
        h.digest128()
    }

    /// The cached findings for `key`, with `filename` filled in; `None` when there is no
    /// entry or it is unreadable.
    pub fn get(&self, key: u128, filename: &str) -> Option<Vec<Diagnostic>> {
        let bytes = std::fs::read(self.entry_path(key)).ok()?;
        let entry: Entry = serde_json::from_slice(&bytes).ok()?;
        if entry.format != FORMAT {
            return None;
        }
        entry
            .diagnostics
            .into_iter()
            .map(|d| d.into_diagnostic(filename))
            .collect()
    }

    /// Store a file's findings (atomically; failures are ignored: the cache is an
    /// optimisation).
    pub fn put(&self, key: u128, diagnostics: &[Diagnostic]) {
        let entry = Entry {
            format: FORMAT,
            diagnostics: diagnostics.iter().map(CachedDiagnostic::from).collect(),
        };
        let path = self.entry_path(key);
        let Some(dir) = path.parent() else { return };
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
        let Ok(json) = serde_json::to_vec(&entry) else {
            return;
        };
        if let Ok(mut tmp) = tempfile::NamedTempFile::new_in(dir) {
            if tmp.write_all(&json).is_ok() {
                let _ = tmp.persist(&path);
            }
        }
    }
}

/// Lint one file through the cache: its findings from the cache when its content (and what
/// it depends on) is unchanged, else linted and stored. `None` when the file cannot be read
/// (the caller's normal path reports the error).
pub fn lint_cached(
    linter: &Linter,
    cache: &Cache,
    deps: &dyn DependencyFingerprint,
    path: &Path,
    filename: &str,
) -> Option<Result<Vec<Diagnostic>, String>> {
    let bytes = std::fs::read(path).ok()?;
    let notebook = path.extension().and_then(|e| e.to_str()) == Some("ipynb");
    let key = Cache::key(&bytes, notebook, deps.fingerprint(path));
    if let Some(hit) = cache.get(key, filename) {
        return Some(Ok(hit));
    }
    let source = match SourceFile::from_bytes(path.to_path_buf(), bytes, notebook) {
        Ok(s) => s,
        Err(e) => return Some(Err(e.to_string())),
    };
    let diagnostics = linter.lint(&source, filename);
    cache.put(key, &diagnostics);
    Some(Ok(diagnostics))
}

#[derive(Serialize, Deserialize)]
struct Entry {
    format: u32,
    diagnostics: Vec<CachedDiagnostic>,
}

#[derive(Serialize, Deserialize)]
struct CachedDiagnostic {
    code: String,
    message: String,
    location: (usize, usize),
    end_location: (usize, usize),
    cell: Option<usize>,
    fix: Option<CachedFix>,
    related: Vec<CachedRelated>,
    range: (usize, usize),
    source_line: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct CachedFix {
    applicability: u8,
    message: String,
    edits: Vec<CachedEdit>,
}

#[derive(Serialize, Deserialize)]
struct CachedEdit {
    content: String,
    start: usize,
    end: usize,
    location: (usize, usize),
    end_location: (usize, usize),
}

#[derive(Serialize, Deserialize)]
struct CachedRelated {
    message: String,
    location: (usize, usize),
    end_location: (usize, usize),
    cell: Option<usize>,
}

fn loc(l: Location) -> (usize, usize) {
    (l.row, l.column)
}

fn unloc((row, column): (usize, usize)) -> Location {
    Location { row, column }
}

impl From<&Diagnostic> for CachedDiagnostic {
    fn from(d: &Diagnostic) -> Self {
        Self {
            code: d.code.to_string(),
            message: d.message.clone(),
            location: loc(d.location),
            end_location: loc(d.end_location),
            cell: d.cell,
            fix: d.fix.as_ref().map(|f| CachedFix {
                applicability: match f.applicability {
                    Applicability::DisplayOnly => 0,
                    Applicability::Unsafe => 1,
                    Applicability::Safe => 2,
                },
                message: f.message.clone(),
                edits: f
                    .edits
                    .iter()
                    .map(|e| CachedEdit {
                        content: e.content.clone(),
                        start: e.start,
                        end: e.end,
                        location: loc(e.location),
                        end_location: loc(e.end_location),
                    })
                    .collect(),
            }),
            related: d
                .related
                .iter()
                .map(|r| CachedRelated {
                    message: r.message.clone(),
                    location: loc(r.location),
                    end_location: loc(r.end_location),
                    cell: r.cell,
                })
                .collect(),
            range: d.range,
            source_line: d.source_line.clone(),
        }
    }
}

impl CachedDiagnostic {
    /// Back to a finding; `None` for a rule this binary does not know (a stale entry).
    fn into_diagnostic(self, filename: &str) -> Option<Diagnostic> {
        let rule = all_rules()[find_rule(&self.code)?];
        if rule.code != self.code {
            return None;
        }
        Some(Diagnostic {
            code: rule.code,
            name: rule.name,
            severity: rule.severity,
            message: self.message,
            filename: filename.to_string(),
            location: unloc(self.location),
            end_location: unloc(self.end_location),
            cell: self.cell,
            fix: match self.fix {
                Some(f) => Some(Fix {
                    applicability: match f.applicability {
                        0 => Applicability::DisplayOnly,
                        1 => Applicability::Unsafe,
                        2 => Applicability::Safe,
                        _ => return None,
                    },
                    message: f.message,
                    edits: f
                        .edits
                        .into_iter()
                        .map(|e| Edit {
                            content: e.content,
                            start: e.start,
                            end: e.end,
                            location: unloc(e.location),
                            end_location: unloc(e.end_location),
                        })
                        .collect(),
                }),
                None => None,
            },
            url: torchvet_diagnostics::rule_url(rule.name),
            title: rule.title,
            related: self
                .related
                .into_iter()
                .map(|r| Related {
                    message: r.message,
                    location: unloc(r.location),
                    end_location: unloc(r.end_location),
                    cell: r.cell,
                })
                .collect(),
            range: self.range,
            source_line: self.source_line,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lint(text: &str) -> Vec<Diagnostic> {
        let src = SourceFile::from_bytes("t.py".into(), text.as_bytes().to_vec(), false).unwrap();
        Linter::new(LintSettings::default()).lint(&src, "t.py")
    }

    #[test]
    fn round_trip_keeps_every_field() {
        let d = tempfile::tempdir().unwrap();
        let cache = Cache::open(d.path(), &LintSettings::default(), "test").unwrap();
        let text = "import torch\nm = torch.load('x.pt')\nfor x, y in loader:\n    loss = model(x)\n    loss.backward()\n    opt.step()\n";
        let diags = lint(text);
        assert!(diags.iter().any(|d| d.fix.is_some()));
        let key = Cache::key(text.as_bytes(), false, None);
        assert!(cache.get(key, "t.py").is_none());
        cache.put(key, &diags);
        assert_eq!(cache.get(key, "t.py").unwrap(), diags);
        // Another name for the same content: same findings, that name.
        assert!(cache
            .get(key, "u.py")
            .unwrap()
            .iter()
            .all(|d| d.filename == "u.py"));
        assert!(d.path().join(".torchvet_cache/.gitignore").is_file());
    }

    #[test]
    fn keys_change_with_content_dependencies_and_settings() {
        let a = Cache::key(b"x = 1\n", false, None);
        assert_ne!(a, Cache::key(b"x = 2\n", false, None));
        assert_ne!(a, Cache::key(b"x = 1\n", true, None));
        assert_ne!(a, Cache::key(b"x = 1\n", false, Some(7)));
        let preview = LintSettings {
            preview: true,
            ..LintSettings::default()
        };
        assert_ne!(
            settings_fingerprint(&LintSettings::default()),
            settings_fingerprint(&preview)
        );
    }

    #[test]
    fn corrupt_entries_are_misses_and_get_rewritten() {
        let d = tempfile::tempdir().unwrap();
        let cache = Cache::open(d.path(), &LintSettings::default(), "test").unwrap();
        let key = Cache::key(b"import torch\n", false, None);
        let path = cache.entry_path(key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"{\"format\": 1, \"diagnostics\": [{\"code\": ").unwrap();
        assert!(cache.get(key, "t.py").is_none());
        std::fs::write(
            &path,
            br#"{"format":1,"diagnostics":[{"code":"TV99999","message":"","location":[1,1],"end_location":[1,1],"cell":null,"fix":null,"related":[],"range":[0,0],"source_line":null}]}"#,
        )
        .unwrap();
        assert!(
            cache.get(key, "t.py").is_none(),
            "unknown rule: stale entry"
        );
        cache.put(key, &[]);
        assert_eq!(cache.get(key, "t.py").unwrap(), vec![]);
    }
}

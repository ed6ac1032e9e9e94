//! The per-file result cache of `torchvet check` (`.torchvet_cache/`, `--no-cache` to skip).
//!
//! An entry holds one file's findings (before per-file-ignores, without the file name, which
//! is filled in on reading) under a key made of:
//! - the torchvet version and build, and the effective lint settings (the directory the
//!   entries live in: `.torchvet_cache/<version>-<build>/<settings fingerprint>/`);
//! - the file's content (xxh3-128 of its bytes, and whether it is a notebook);
//! - the fingerprint of the facts the file's findings depend on from other files
//!   ([`DependencyFingerprint`]). With the per-file linter that is nothing; once rules read
//!   the whole-project model, it is the hash of the summaries of the modules the file
//!   depends on, so an edit elsewhere invalidates exactly the files that read it.
//!
//! Entries live in 256 shard files (by key), each read at most once and written at most once
//! per run, through a temporary file renamed into place, so a reader never sees half a shard;
//! a shard that cannot be read or decoded counts as empty and is rewritten. Two runs at once
//! may each write a shard: the last one wins, and the other's new entries are simply missed
//! next time. Only plain lint runs use the cache (never `--fix`, `--diff` or the benchmark
//! modes).
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use torchvet_diagnostics::{Applicability, Diagnostic, Edit, Fix, Location, Related, Severity};
use torchvet_linter::{all_rules, find_rule, LintSettings};
use xxhash_rust::xxh3::{xxh3_128, Xxh3};

/// Bumped when the entry format changes.
const FORMAT: u32 = 2;

/// Entries are spread over this many shard files, each read once and written once per run
/// (one file per source file costs an inode creation each: slower than linting).
const SHARDS: usize = 256;

/// An open cache directory for one version and one set of settings.
pub struct Cache {
    dir: PathBuf,
    shards: Vec<Mutex<Shard>>,
}

/// One shard: its entries (loaded on first use), and whether it must be written back.
#[derive(Default)]
struct Shard {
    loaded: bool,
    dirty: bool,
    entries: HashMap<String, Vec<CachedDiagnostic>>,
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
    if let Some(v) = settings.min_torch {
        h.update(format!("torch min {v}").as_bytes());
    }
    if let Some(v) = settings.documented_min_torch {
        h.update(format!("torch documented {v}").as_bytes());
    }
    // The rule table itself (a rebuilt binary with a renamed or added rule).
    for r in all_rules() {
        h.update(r.code.as_bytes());
        h.update(r.name.as_bytes());
    }
    h.digest128()
}

impl Cache {
    /// The cache under `base` (by default `<project root>/.torchvet_cache`) for these
    /// settings. `None` when the directory cannot be created (read-only checkout...): the run
    /// goes on without a cache.
    pub fn open(base: &Path, settings: &LintSettings, version: &str) -> Option<Self> {
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
        Some(Self {
            dir,
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        })
    }

    fn shard_path(&self, shard: usize) -> PathBuf {
        self.dir.join(format!("{shard:02x}.json"))
    }

    /// The shard of a key, loaded from disk on first use (an unreadable or corrupt shard file
    /// counts as empty and is rewritten at the next flush).
    fn shard(&self, key: u128) -> MutexGuard<'_, Shard> {
        let i = (key as usize) % SHARDS;
        let mut shard = self.shards[i].lock().unwrap_or_else(|e| e.into_inner());
        if !shard.loaded {
            shard.loaded = true;
            if let Ok(bytes) = std::fs::read(self.shard_path(i)) {
                match serde_json::from_slice::<ShardFile>(&bytes) {
                    Ok(f) if f.format == FORMAT => shard.entries = f.entries,
                    _ => shard.dirty = true,
                }
            }
        }
        shard
    }

    /// The key of a file's content (and what it depends on).
    #[cfg(test)]
    pub fn key(bytes: &[u8], notebook: bool, deps: Option<u128>) -> u128 {
        Self::key_of_hash(xxh3_128(bytes), notebook, deps)
    }

    /// [`Cache::key`] from the content's hash.
    pub fn key_of_hash(content: u128, notebook: bool, deps: Option<u128>) -> u128 {
        let mut h = Xxh3::new();
        h.update(&content.to_le_bytes());
        h.update(&[u8::from(notebook)]);
        if let Some(d) = deps {
            h.update(&d.to_le_bytes());
        }
        h.digest128()
    }

    /// The cached findings for `key`, with `filename` filled in; `None` when there is no
    /// entry or it is unusable (a rule this binary does not know).
    pub fn get(&self, key: u128, filename: &str) -> Option<Vec<Diagnostic>> {
        let shard = self.shard(key);
        let entry = shard.entries.get(&format!("{key:032x}"))?;
        entry
            .iter()
            .map(|d| d.clone().into_diagnostic(filename))
            .collect()
    }

    /// Remember a file's findings; written by [`Cache::flush`].
    pub fn put(&self, key: u128, diagnostics: &[Diagnostic]) {
        let mut shard = self.shard(key);
        shard.entries.insert(
            format!("{key:032x}"),
            diagnostics.iter().map(CachedDiagnostic::from).collect(),
        );
        shard.dirty = true;
    }

    /// Write the shards that changed, each atomically (temporary file renamed into place).
    /// Failures are ignored: the cache is an optimisation.
    pub fn flush(&self) {
        for (i, shard) in self.shards.iter().enumerate() {
            let mut shard = shard.lock().unwrap_or_else(|e| e.into_inner());
            if !shard.dirty {
                continue;
            }
            let file = ShardFile {
                format: FORMAT,
                entries: std::mem::take(&mut shard.entries),
            };
            if let Ok(json) = serde_json::to_vec(&file) {
                if let Ok(mut tmp) = tempfile::NamedTempFile::new_in(&self.dir) {
                    if tmp.write_all(&json).is_ok() {
                        let _ = tmp.persist(self.shard_path(i));
                    }
                }
            }
            shard.entries = file.entries;
            shard.dirty = false;
        }
    }
}

/// The content hashes of every checked file, and one hash over all of them (with their
/// paths): when nothing in the checked tree changed since a cached run, every file's findings
/// are read back under that tree hash without parsing anything.
pub struct TreeState {
    /// Per file (in the order given): its content hash and whether it is a notebook; `None`
    /// when it cannot be read.
    pub files: Vec<Option<(u128, bool)>>,
    /// The hash of the whole tree (paths, contents, per-file context).
    pub tree: u128,
}

impl TreeState {
    /// Read and hash every file (in parallel); `context` adds what else a file's findings
    /// depend on besides the tree (its own target torch).
    pub fn read(files: &[PathBuf], context: &(dyn Fn(&Path) -> u64 + Sync)) -> Self {
        use rayon::prelude::*;
        let hashes: Vec<Option<(u128, bool)>> = files
            .par_iter()
            .map(|p| {
                let bytes = std::fs::read(p).ok()?;
                let notebook = p.extension().and_then(|e| e.to_str()) == Some("ipynb");
                let mut h = Xxh3::new();
                h.update(&xxh3_128(&bytes).to_le_bytes());
                h.update(&context(p).to_le_bytes());
                Some((h.digest128(), notebook))
            })
            .collect();
        let mut h = Xxh3::new();
        for (p, c) in files.iter().zip(&hashes) {
            h.update(p.to_string_lossy().as_bytes());
            h.update(&[0]);
            match c {
                Some((c, nb)) => {
                    h.update(&c.to_le_bytes());
                    h.update(&[u8::from(*nb)]);
                }
                None => h.update(&[2]),
            }
        }
        TreeState {
            files: hashes,
            tree: h.digest128(),
        }
    }

    /// The key of file `i` under the whole-tree hash.
    pub fn tree_key(&self, i: usize) -> Option<u128> {
        let (c, nb) = self.files.get(i).copied().flatten()?;
        Some(Cache::key_of_hash(c, nb, Some(self.tree)))
    }

    /// The key of file `i` under its own dependency fingerprint (the project model's digest
    /// of what its findings read from other files).
    pub fn file_key(&self, i: usize, deps: u128) -> Option<u128> {
        let (c, nb) = self.files.get(i).copied().flatten()?;
        Some(Cache::key_of_hash(c, nb, Some(deps)))
    }
}

#[derive(Serialize, Deserialize)]
struct ShardFile {
    format: u32,
    entries: HashMap<String, Vec<CachedDiagnostic>>,
}

#[derive(Clone, Serialize, Deserialize)]
struct CachedDiagnostic {
    code: String,
    /// The finding's own severity (some rules grade findings: `torch.load` of a downloaded
    /// file is critical, of a file the project wrote a warning).
    severity: u8,
    message: String,
    location: (usize, usize),
    end_location: (usize, usize),
    cell: Option<usize>,
    fix: Option<CachedFix>,
    related: Vec<CachedRelated>,
    range: (usize, usize),
    source_line: Option<String>,
}

#[derive(Clone, Serialize, Deserialize)]
struct CachedFix {
    applicability: u8,
    message: String,
    edits: Vec<CachedEdit>,
}

#[derive(Clone, Serialize, Deserialize)]
struct CachedEdit {
    content: String,
    start: usize,
    end: usize,
    location: (usize, usize),
    end_location: (usize, usize),
}

#[derive(Clone, Serialize, Deserialize)]
struct CachedRelated {
    message: String,
    location: (usize, usize),
    end_location: (usize, usize),
    cell: Option<usize>,
    filename: Option<String>,
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
            severity: match d.severity {
                Severity::Info => 0,
                Severity::Warning => 1,
                Severity::Critical => 2,
            },
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
                    filename: r.filename.clone(),
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
            severity: match self.severity {
                0 => Severity::Info,
                1 => Severity::Warning,
                2 => Severity::Critical,
                _ => return None,
            },
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
                    filename: r.filename,
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
    use torchvet_linter::Linter;
    use torchvet_python::SourceFile;

    fn lint(text: &str) -> Vec<Diagnostic> {
        let src = SourceFile::from_bytes("t.py".into(), text.as_bytes().to_vec(), false).unwrap();
        Linter::new(LintSettings::default()).lint(&src, "t.py")
    }

    #[test]
    fn round_trip_keeps_every_field() {
        let d = tempfile::tempdir().unwrap();
        let text = "# requires torch 2.0\nimport torch\nm = torch.load('x.pt', weights_only=False)\nfor x, y in loader:\n    loss = model(x)\n    loss.backward()\n    opt.step()\n";
        let diags = lint(text);
        assert!(diags.iter().any(|d| d.fix.is_some()));
        let key = Cache::key(text.as_bytes(), false, None);
        let cache = Cache::open(
            &d.path().join(".torchvet_cache"),
            &LintSettings::default(),
            "test",
        )
        .unwrap();
        assert!(cache.get(key, "t.py").is_none());
        cache.put(key, &diags);
        cache.flush();
        // A new run reads what the last one wrote.
        let cache = Cache::open(
            &d.path().join(".torchvet_cache"),
            &LintSettings::default(),
            "test",
        )
        .unwrap();
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
    fn corrupt_shards_and_stale_entries_are_misses_and_get_rewritten() {
        let d = tempfile::tempdir().unwrap();
        let key = Cache::key(b"import torch\n", false, None);
        let cache = Cache::open(
            &d.path().join(".torchvet_cache"),
            &LintSettings::default(),
            "test",
        )
        .unwrap();
        let path = cache.shard_path((key as usize) % SHARDS);
        std::fs::write(&path, b"{\"format\": 1, \"entries\": {\"").unwrap();
        assert!(cache.get(key, "t.py").is_none());
        cache.put(key, &[]);
        cache.flush();
        let cache = Cache::open(
            &d.path().join(".torchvet_cache"),
            &LintSettings::default(),
            "test",
        )
        .unwrap();
        assert_eq!(cache.get(key, "t.py").unwrap(), vec![]);
        let stale = format!(
            r#"{{"format":1,"entries":{{"{key:032x}":[{{"code":"TV99999","message":"","location":[1,1],"end_location":[1,1],"cell":null,"fix":null,"related":[],"range":[0,0],"source_line":null}}]}}}}"#
        );
        std::fs::write(&path, stale).unwrap();
        let cache = Cache::open(
            &d.path().join(".torchvet_cache"),
            &LintSettings::default(),
            "test",
        )
        .unwrap();
        assert!(
            cache.get(key, "t.py").is_none(),
            "unknown rule: stale entry"
        );
    }
}

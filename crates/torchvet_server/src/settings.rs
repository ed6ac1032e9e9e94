//! Settings for the servers: a configured [`Linter`] per configuration file, resolved from
//! `[tool.torchvet]` (pyproject.toml) or `torchvet.toml` the way `torchvet check` resolves them
//! without command-line overrides, and reloaded when the file changes on disk.
use globset::{Glob, GlobSet, GlobSetBuilder};
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;
use torchvet_diagnostics::Diagnostic;
use torchvet_linter::{expand_selector, LintSettings, Linter, Version};
use torchvet_workspace::{file_targets, find_config, ConfigFile};

/// A linter with everything a configuration file adds around it.
pub struct Workspace {
    /// The configured linter.
    pub linter: Linter,
    /// Rule indices ignored per glob (relative to `root`).
    pub per_file_ignores: Vec<(GlobSet, Vec<usize>)>,
    /// The directory patterns are relative to.
    pub root: PathBuf,
    /// The configuration file, if one was found.
    pub config: Option<PathBuf>,
}

impl Workspace {
    /// Resolve from a configuration file (or the defaults when `None`); `start` is the file
    /// or directory the settings are for (the declared torch version is looked up from it).
    pub fn resolve(config: Option<&ConfigFile>, start: &Path) -> Result<Self, String> {
        let opts = config.map(|c| c.options.clone()).unwrap_or_default();
        let settings_result = LintSettings::from_selectors(
            opts.select.as_deref(),
            opts.extend_select.as_deref().unwrap_or(&[]),
            opts.ignore.as_deref().unwrap_or(&[]),
            opts.preview.unwrap_or(false),
        );
        let mut settings = settings_result.map_err(|e| e.to_string())?;
        // As `check` does: without a configured target, the declared requirement gives the
        // target (its highest allowed torch) and the lowest allowed torch, which decides
        // whether a fix's new API exists on every torch the project supports.
        (settings.target_torch, settings.min_torch) = match &opts.target_torch {
            Some(v) => (Version::parse(v), None),
            None => {
                let declared = file_targets(start);
                (settings.target_torchvision, settings.min_torchvision) =
                    (declared.torchvision, declared.min_torchvision);
                settings.launches_with_rank_argument = declared.launches_with_rank_argument;
                settings.launches_with_env_rank = declared.launches_with_env_rank;
                settings.documented_min_torch = declared.documented_min_torch;
                (declared.torch, declared.min_torch)
            }
        };
        let root = match config {
            Some(c) => c.root().to_path_buf(),
            None => start
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(".")),
        };
        let mut per_file_ignores = Vec::new();
        for (pattern, sels) in opts.per_file_ignores.iter().flatten() {
            let set = glob_set(std::iter::once(pattern.as_str()))?;
            let mut idx = Vec::new();
            for s in sels {
                idx.extend(expand_selector(s).map_err(|e| e.to_string())?);
            }
            per_file_ignores.push((set, idx));
        }
        Ok(Self {
            linter: Linter::new(settings),
            per_file_ignores,
            root,
            config: config.map(|c| c.path.clone()),
        })
    }

    /// Drop the findings the per-file-ignores turn off for `path`.
    pub fn apply_per_file_ignores(&self, path: &Path, diagnostics: &mut Vec<Diagnostic>) {
        if self.per_file_ignores.is_empty() {
            return;
        }
        let rel = path.strip_prefix(&self.root).unwrap_or(path);
        let ignored: Vec<usize> = self
            .per_file_ignores
            .iter()
            .filter(|(set, _)| set.is_match(rel) || set.is_match(path))
            .flat_map(|(_, idx)| idx.iter().copied())
            .collect();
        if !ignored.is_empty() {
            let rules = torchvet_linter::all_rules();
            diagnostics.retain(|d| !ignored.iter().any(|&i| rules[i].code == d.code));
        }
    }
}

/// Bare names (`build`) match at any depth, as in `torchvet check`.
fn glob_set<'a>(patterns: impl Iterator<Item = &'a str>) -> Result<GlobSet, String> {
    let mut b = GlobSetBuilder::new();
    for pattern in patterns {
        let pat = if pattern.contains('/') {
            pattern.trim_start_matches("./").to_string()
        } else {
            format!("**/{pattern}")
        };
        b.add(Glob::new(&pat).map_err(|e| format!("bad glob `{pattern}`: {e}"))?);
    }
    b.build().map_err(|e| e.to_string())
}

/// Resolved settings per configuration file, reloaded when the file's modification time
/// changes, plus a directory -> configuration-file lookup cache.
#[derive(Default)]
pub struct SettingsCache {
    by_dir: FxHashMap<PathBuf, Option<PathBuf>>,
    by_config: FxHashMap<Option<PathBuf>, (Option<SystemTime>, Arc<Workspace>)>,
}

impl SettingsCache {
    /// Forget everything (a configuration file was created, changed or deleted).
    pub fn clear(&mut self) {
        self.by_dir.clear();
        self.by_config.clear();
    }

    /// The settings for a file. A configuration error is returned as text (the caller shows
    /// it) and the defaults are used meanwhile.
    pub fn for_file(&mut self, path: &Path) -> (Arc<Workspace>, Option<String>) {
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let mut error = None;
        let config_path = match self.by_dir.get(&dir) {
            Some(c) => c.clone(),
            None => {
                let found = match find_config(path) {
                    Ok(c) => c.map(|c| c.path),
                    Err(e) => {
                        error = Some(e.to_string());
                        None
                    }
                };
                if error.is_none() {
                    self.by_dir.insert(dir, found.clone());
                }
                found
            }
        };
        let mtime = config_path
            .as_ref()
            .and_then(|p| std::fs::metadata(p).ok())
            .and_then(|m| m.modified().ok());
        if let Some((seen, ws)) = self.by_config.get(&config_path) {
            if *seen == mtime {
                return (ws.clone(), error);
            }
        }
        let config = match &config_path {
            Some(p) => match torchvet_workspace::load_config(p) {
                Ok(c) => c,
                Err(e) => {
                    error = Some(e.to_string());
                    None
                }
            },
            None => None,
        };
        let ws = match Workspace::resolve(config.as_ref(), path) {
            Ok(ws) => ws,
            Err(e) => {
                error = Some(e);
                Workspace::resolve(None, path).expect("the default settings resolve")
            }
        };
        let ws = Arc::new(ws);
        if error.is_none() {
            self.by_config.insert(config_path, (mtime, ws.clone()));
        }
        (ws, error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reloads_when_the_config_changes() {
        let d = tempfile::tempdir().unwrap();
        let cfg = d.path().join("torchvet.toml");
        std::fs::write(&cfg, "ignore = [\"missing-zero-grad\"]\n").unwrap();
        let file = d.path().join("train.py");
        let mut cache = SettingsCache::default();
        let (ws, err) = cache.for_file(&file);
        assert!(err.is_none());
        let i = torchvet_linter::find_rule("missing-zero-grad").unwrap();
        assert!(!ws.linter.settings().is_enabled(i));
        // A different modification time makes the cache reload.
        std::fs::write(&cfg, "select = [\"ALL\"]\n").unwrap();
        let f = std::fs::File::options().write(true).open(&cfg).unwrap();
        f.set_modified(SystemTime::now() + std::time::Duration::from_secs(5))
            .unwrap();
        let (ws, _) = cache.for_file(&file);
        assert!(ws.linter.settings().is_enabled(i));
    }

    #[test]
    fn a_broken_config_is_reported_and_the_defaults_are_used() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("torchvet.toml"),
            "select = [\"no-such-rule\"]\n",
        )
        .unwrap();
        let mut cache = SettingsCache::default();
        let (ws, err) = cache.for_file(&d.path().join("a.py"));
        assert!(err.unwrap().contains("no-such-rule"));
        let i = torchvet_linter::find_rule("missing-zero-grad").unwrap();
        assert!(ws.linter.settings().is_enabled(i));
    }

    /// The editor marks a fix safe only when its API exists on every torch the project
    /// allows, as `check` does: GradScaler("cuda") needs torch 2.3.
    #[test]
    fn fixes_are_judged_against_the_lowest_declared_torch() {
        let src = "import torch\nscaler = torch.cuda.amp.GradScaler()\n";
        let applicability = |requirement: &str| {
            let d = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(d.path().join(".git")).unwrap();
            std::fs::write(d.path().join("requirements.txt"), requirement).unwrap();
            let file = d.path().join("train.py");
            let mut cache = SettingsCache::default();
            let (ws, _) = cache.for_file(&file);
            let source =
                torchvet_python::SourceFile::from_bytes(file.clone(), src.into(), false).unwrap();
            let diags = ws.linter.lint(&source, "train.py");
            let d = diags
                .iter()
                .find(|d| d.name == "deprecated-cuda-amp-autocast")
                .expect("the deprecated GradScaler is reported");
            d.fix.as_ref().map(|f| f.applicability)
        };
        assert_eq!(
            applicability("torch>=1.7,<2.5\n"),
            Some(torchvet_diagnostics::Applicability::Unsafe)
        );
        assert_eq!(
            applicability("torch>=2.3\n"),
            Some(torchvet_diagnostics::Applicability::Safe)
        );
    }

    #[test]
    fn per_file_ignores_apply_relative_to_the_config() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("torchvet.toml"),
            "[per-file-ignores]\n\"tests/*\" = [\"ALL\"]\n",
        )
        .unwrap();
        let mut cache = SettingsCache::default();
        let file = d.path().join("tests/t.py");
        let (ws, _) = cache.for_file(&file);
        let src = "import torch\nm = torch.load('x.pt', weights_only=False)\n";
        let source =
            torchvet_python::SourceFile::from_bytes(file.clone(), src.into(), false).unwrap();
        let mut diags = ws.linter.lint(&source, "tests/t.py");
        assert!(!diags.is_empty());
        ws.apply_per_file_ignores(&file, &mut diags);
        assert!(diags.is_empty());
    }
}

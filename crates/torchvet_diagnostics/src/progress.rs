//! Progress bars for long runs, on standard error, only when it is a terminal.
//!
//! Callers decide whether the run is long (many files, a large file) and whether the output
//! mode allows it (never for JSON-like output); [`Progress`] then draws only when stderr is a
//! terminal and `TORCHVET_NO_PROGRESS` is not set. A hidden bar costs an atomic add per step.
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// Show a bar for `check`/`review` from this many files on.
pub const MANY_FILES: usize = 2000;
/// Show a bar for `ckpt scan` from this many checkpoints on.
pub const MANY_CHECKPOINTS: usize = 16;
/// Show a bar for `ckpt convert` from this many bytes on.
pub const LARGE_FILE: u64 = 256 << 20;

/// A progress bar that may be hidden.
#[derive(Clone)]
pub struct Progress(Option<ProgressBar>);

/// Can a bar be drawn at all (stderr is a terminal, not turned off)?
pub fn terminal() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("TORCHVET_NO_PROGRESS").is_none()
}

impl Progress {
    /// A bar that is never drawn.
    pub fn hidden() -> Self {
        Progress(None)
    }

    /// A bar over `total` items (files, checkpoints), drawn when `wanted` and stderr is a
    /// terminal.
    pub fn items(total: usize, what: &str, wanted: bool) -> Self {
        Self::new(
            total as u64,
            wanted,
            &format!("{{prefix}} [{{bar:30}}] {{pos}}/{{len}} {what} ({{elapsed}}, ETA {{eta}})"),
        )
    }

    /// A bar over `total` bytes, drawn when `wanted` and stderr is a terminal.
    pub fn bytes(total: u64, wanted: bool) -> Self {
        Self::new(
            total,
            wanted,
            "{prefix} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, ETA {eta})",
        )
    }

    fn new(total: u64, wanted: bool, template: &str) -> Self {
        if !wanted || !terminal() {
            return Progress(None);
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress(Some(bar))
    }

    /// Label shown before the bar.
    pub fn with_prefix(self, prefix: &str) -> Self {
        if let Some(b) = &self.0 {
            b.set_prefix(prefix.to_string());
        }
        self
    }

    /// Is it drawn?
    pub fn is_visible(&self) -> bool {
        self.0.is_some()
    }

    /// Advance by `n`.
    pub fn inc(&self, n: u64) {
        if let Some(b) = &self.0 {
            b.inc(n);
        }
    }

    /// Set the position.
    pub fn set(&self, pos: u64) {
        if let Some(b) = &self.0 {
            b.set_position(pos);
        }
    }

    /// Remove the bar (before the results are printed).
    pub fn finish(&self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_when_not_wanted_or_not_a_terminal() {
        // Under `cargo test` stderr is captured or a pipe in CI; not wanted is never shown.
        assert!(!Progress::items(10_000, "files", false).is_visible());
        if !std::io::stderr().is_terminal() {
            assert!(!Progress::items(10_000, "files", true).is_visible());
            assert!(!Progress::bytes(LARGE_FILE * 4, true).is_visible());
        }
        let p = Progress::hidden();
        p.inc(5);
        p.finish();
    }
}

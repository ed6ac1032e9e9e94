//! Checkpoint files found by `torchvet check`, reported through the non-executing scanner
//! (rule group `checkpoint`).
use std::path::Path;
use torchvet_checkpoint::{scan_path, Level, ScanReport, Verdict};
use torchvet_diagnostics::{rule_url, Diagnostic, Location};
use torchvet_linter::{all_rules, find_rule, LintSettings};

/// Extensions `torchvet check` treats as checkpoints.
pub const EXTENSIONS: &[&str] = &[
    "pt",
    "pth",
    "ckpt",
    "bin",
    "pkl",
    "pickle",
    "npy",
    "npz",
    "safetensors",
    "pt2",
];

/// Are any checkpoint rules enabled?
pub fn enabled(settings: &LintSettings) -> bool {
    [
        "checkpoint-dangerous",
        "checkpoint-unsafe",
        "checkpoint-malformed",
    ]
    .iter()
    .any(|n| find_rule(n).is_some_and(|i| settings.is_enabled(i)))
}

fn describe(report: &ScanReport, level: Level) -> String {
    let worst: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.level == level)
        .collect();
    let Some(first) = worst.first() else {
        return String::new();
    };
    let mut where_ = Vec::new();
    if let Some(m) = &first.member {
        where_.push(format!("member `{m}`"));
    }
    if let Some(o) = first.offset {
        where_.push(format!("offset {o}"));
    }
    if let Some(op) = &first.opcode {
        where_.push(format!("opcode {op}"));
    }
    let mut s = first.message.clone();
    if !where_.is_empty() {
        s.push_str(&format!(" ({})", where_.join(", ")));
    }
    if worst.len() > 1 {
        s.push_str(&format!(
            "; {} more such finding(s): run `torchvet ckpt scan` for all",
            worst.len() - 1
        ));
    }
    s
}

/// Scan one checkpoint file and turn its verdict into at most one finding.
pub fn check(path: &Path, name: &str, settings: &LintSettings) -> Option<Diagnostic> {
    let report = scan_path(path);
    let (rule, message) = match report.verdict {
        Verdict::Safe => return None,
        Verdict::Dangerous => (
            "checkpoint-dangerous",
            format!(
                "loading this {} file would run code: {}",
                report.format,
                describe(&report, Level::Dangerous)
            ),
        ),
        Verdict::Unsafe => (
            "checkpoint-unsafe",
            format!(
                "loading this {} file needs {} (trust): {}",
                report.format,
                // NumPy's own switch for pickled object arrays.
                if matches!(report.format.as_str(), "npy" | "npz") {
                    "`numpy.load(..., allow_pickle=True)`"
                } else {
                    "`weights_only=False`"
                },
                describe(&report, Level::Unsafe)
            ),
        ),
        Verdict::Malformed => {
            // A `.bin` that is not a checkpoint at all is none of our business.
            if matches!(report.format.as_str(), "unknown" | "empty" | "unreadable") {
                return None;
            }
            (
                "checkpoint-malformed",
                format!(
                    "damaged {} file: {}",
                    report.format,
                    describe(&report, Level::Malformed)
                ),
            )
        }
    };
    let index = find_rule(rule)?;
    if !settings.is_enabled(index) {
        return None;
    }
    let r = all_rules()[index];
    let at = Location { row: 1, column: 1 };
    Some(Diagnostic {
        code: r.code,
        name: r.name,
        severity: r.severity,
        message,
        filename: name.to_string(),
        location: at,
        end_location: at,
        cell: None,
        fix: None,
        url: rule_url(r.name),
        title: r.title,
        related: Vec::new(),
        range: (0, 0),
        source_line: None,
    })
}

//! `torchvet_checkpoint`: read, scan, inspect, convert and compare PyTorch checkpoints without
//! ever executing them.
//!
//! * [`format`] decides the container from content (torch zip, TorchScript, legacy, tar, raw
//!   pickle, npy/npz, safetensors, 7z/gzip wrappers).
//! * [`zip`] reads zips the way torch does and reports every parser differential.
//! * [`pickle`] is a symbolic pickle machine (protocols 0-5) that builds a value graph only.
//! * [`scan`] turns imported names and structural findings into a verdict per file.
//! * [`model`] evaluates torch's allowlisted rebuild functions symbolically into tensor records;
//!   [`inspect`], [`convert`] and [`diff`] build on it.
//! * [`cli`] is the `torchvet ckpt` subcommand.
#![forbid(unsafe_code)]

pub mod against;
pub mod cli;
pub mod convert;
pub mod diff;
pub mod format;
pub mod inspect;
pub mod model;
pub mod output;
pub mod payloads;
pub mod pickle;
pub mod policy;
pub mod safetensors;
pub mod scan;
#[doc(hidden)]
pub mod testing;
pub mod walk;
pub mod zip;

use serde::Serialize;
use std::path::PathBuf;

pub use scan::{scan_bytes, scan_path, ScanOptions};

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Worth knowing; does not change the verdict.
    Info,
    /// The file is damaged or not what it claims; torch would fail to load it.
    Malformed,
    /// Loading needs trust: names outside torch's weights_only allowlist.
    Unsafe,
    /// Runs code, touches files, processes or the network, or hides what it does.
    Dangerous,
}

/// The verdict for one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Everything is within torch's weights_only allowlist.
    Safe,
    /// Not readable as a checkpoint.
    Malformed,
    /// Needs trust to load.
    Unsafe,
    /// Would run code or hides something.
    Dangerous,
}

impl Verdict {
    /// The verdict implied by the worst finding level.
    pub fn from_level(l: Level) -> Verdict {
        match l {
            Level::Info => Verdict::Safe,
            Level::Malformed => Verdict::Malformed,
            Level::Unsafe => Verdict::Unsafe,
            Level::Dangerous => Verdict::Dangerous,
        }
    }
    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Safe => "safe",
            Verdict::Malformed => "malformed",
            Verdict::Unsafe => "unsafe",
            Verdict::Dangerous => "dangerous",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One finding of a scan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Severity.
    pub level: Level,
    /// Stable short code (e.g. `dangerous-global`, `zip-crc-mismatch`).
    pub code: String,
    /// Human-readable message.
    pub message: String,
    /// Archive member (or pickle index) the finding is in.
    pub member: Option<String>,
    /// Byte offset inside the member (or file).
    pub offset: Option<u64>,
    /// Pickle opcode involved.
    pub opcode: Option<String>,
    /// Imported name involved (`module.name`).
    pub global: Option<String>,
}

/// The result of scanning one file.
#[derive(Debug, Clone, Serialize)]
pub struct ScanReport {
    /// The file.
    pub path: PathBuf,
    /// The verdict.
    pub verdict: Verdict,
    /// Detected format.
    pub format: String,
    /// File size.
    pub size: u64,
    /// Findings, worst first.
    pub findings: Vec<Finding>,
    /// Every distinct imported name, in order of first appearance.
    pub globals: Vec<String>,
}

impl ScanReport {
    /// A report for a file that could not be read at all.
    pub fn error(path: PathBuf, message: String) -> ScanReport {
        ScanReport {
            path,
            verdict: Verdict::Malformed,
            format: "unreadable".into(),
            size: 0,
            findings: vec![Finding {
                level: Level::Malformed,
                code: "io-error".into(),
                message,
                member: None,
                offset: None,
                opcode: None,
                global: None,
            }],
            globals: Vec::new(),
        }
    }
}

/// Errors of the reading APIs.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// I/O.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// Zip structure.
    #[error(transparent)]
    Zip(#[from] zip::ZipError),
    /// Pickle error.
    #[error("pickle error in {member}: {error}")]
    Pickle {
        /// Member.
        member: String,
        /// Cause.
        error: pickle::PickleError,
    },
    /// Something the format does not allow.
    #[error("{0}")]
    Invalid(String),
    /// Something we cannot do (e.g. dtype not storable).
    #[error("{0}")]
    Unsupported(String),
}

impl Error {
    /// An I/O error with its path.
    pub fn io(path: &std::path::Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.display().to_string(),
            source,
        }
    }
}

//! Directory walks pick files by content, not by name: every regular file is sniffed from its
//! first bytes (zip local or end-of-central-directory signatures, pickle protocols 0-5, tar, 7z,
//! gzip/bzip2/xz/zstd, npy/npz, safetensors). Plain text and source files are skipped after one
//! small read; `--extensions` may restrict the walk to some names.

use crate::format::{self, Format};
use crate::pickle::{self, opcodes, Limits, Machine};
use serde::Serialize;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// What a walk should consider.
#[derive(Debug, Clone, Default)]
pub struct WalkOptions {
    /// Only files with these extensions (lowercase, without the dot) are scanned, whatever their
    /// content. `None`: every file is sniffed.
    pub extensions: Option<Vec<String>>,
}

/// Files a walk skipped, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SkipCounts {
    /// Plain text or source code (not a protocol-0 pickle).
    pub text: usize,
    /// Binary data in no checkpoint format.
    pub not_a_checkpoint: usize,
    /// Empty files.
    pub empty: usize,
    /// Names not matching `--extensions`.
    pub extension: usize,
    /// Symbolic links, devices, sockets (not followed).
    pub not_regular: usize,
    /// Files or directories that could not be read.
    pub unreadable: usize,
    /// `.git`, `__pycache__`, `node_modules`, `.torchvet_cache` directories.
    pub ignored_dirs: usize,
}

impl SkipCounts {
    /// Total files skipped.
    pub fn total(&self) -> usize {
        self.text
            + self.not_a_checkpoint
            + self.empty
            + self.extension
            + self.not_regular
            + self.unreadable
    }

    /// One line: `skipped N files: 3 text or source, 1 empty, ...`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (n, what) in [
            (self.text, "text or source"),
            (self.not_a_checkpoint, "binary in no checkpoint format"),
            (self.empty, "empty"),
            (self.extension, "excluded by --extensions"),
            (self.not_regular, "not regular files (links, devices)"),
            (self.unreadable, "unreadable"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        let mut s = format!("skipped {} files", self.total());
        if !parts.is_empty() {
            s.push_str(": ");
            s.push_str(&parts.join(", "));
        }
        if self.ignored_dirs > 0 {
            s.push_str(&format!(
                " (and {} .git/__pycache__/node_modules directories)",
                self.ignored_dirs
            ));
        }
        s
    }
}

/// The result of a walk.
#[derive(Debug, Clone, Default)]
pub struct Walk {
    /// Files to scan, in walk order (paths given as files come first, as given).
    pub files: Vec<PathBuf>,
    /// What was skipped.
    pub skipped: SkipCounts,
}

/// Expand files and directories (recursively, sorted) into the files to scan. Files named
/// directly are always scanned; directory entries are sniffed ([`classify`]).
pub fn walk(paths: &[PathBuf], opts: &WalkOptions) -> Walk {
    let (entries, mut skipped) = list(paths, opts);
    let mut files = Vec::with_capacity(entries.len());
    for e in entries {
        if !e.sniff {
            files.push(e.path);
            continue;
        }
        match classify(&e.path) {
            Kind::Candidate(_) => files.push(e.path),
            k => skipped.add(k),
        }
    }
    Walk { files, skipped }
}

/// [`walk`] with default options: the files to scan.
pub fn collect_files(paths: &[PathBuf]) -> Vec<PathBuf> {
    walk(paths, &WalkOptions::default()).files
}

/// What a file's first bytes say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A format the scanner reads.
    Candidate(Format),
    /// Plain text or source.
    Text,
    /// Binary in no checkpoint format.
    Binary,
    /// Empty.
    Empty,
    /// Could not be read.
    Unreadable,
}

/// Bytes read from the start of each file.
pub const HEAD: usize = 4096;
/// A zip's end record lies within this many bytes of the end (22 + a 64 KiB comment).
const EOCD_WINDOW: u64 = 22 + 65535;

/// One file a walk lists.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The file.
    pub path: PathBuf,
    /// Found in a directory without an extension filter: scan it only if its content says so.
    pub sniff: bool,
}

impl SkipCounts {
    /// Count one file skipped for `k`.
    pub fn add(&mut self, k: Kind) {
        match k {
            Kind::Text => self.text += 1,
            Kind::Binary => self.not_a_checkpoint += 1,
            Kind::Empty => self.empty += 1,
            Kind::Unreadable => self.unreadable += 1,
            Kind::Candidate(_) => {}
        }
    }
}

/// List files without reading them: directory entries to sniff (or, with `--extensions`, the
/// matching names), and files named directly.
pub fn list(paths: &[PathBuf], opts: &WalkOptions) -> (Vec<Entry>, SkipCounts) {
    let exts: Option<Vec<String>> = opts.extensions.as_ref().map(|v| {
        v.iter()
            .map(|e| e.trim_start_matches('.').to_ascii_lowercase())
            .collect()
    });
    let mut out = Vec::new();
    let mut skipped = SkipCounts::default();
    for p in paths {
        if p.is_dir() {
            list_dir(p, &mut out, &mut skipped, exts.as_deref(), 0);
        } else {
            out.push(Entry {
                path: p.clone(),
                sniff: false,
            });
        }
    }
    (out, skipped)
}

fn list_dir(
    dir: &Path,
    out: &mut Vec<Entry>,
    skipped: &mut SkipCounts,
    exts: Option<&[String]>,
    depth: u32,
) {
    if depth > 64 {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        skipped.unreadable += 1;
        return;
    };
    let mut entries: Vec<_> = rd.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        let Ok(ft) = e.file_type() else {
            skipped.unreadable += 1;
            continue;
        };
        if ft.is_dir() {
            let name = e.file_name();
            let n = name.to_string_lossy();
            if n == ".git" || n == "node_modules" || n == "__pycache__" || n == ".torchvet_cache" {
                skipped.ignored_dirs += 1;
                continue;
            }
            list_dir(&p, out, skipped, exts, depth + 1);
            continue;
        }
        if !ft.is_file() {
            skipped.not_regular += 1;
            continue;
        }
        match exts {
            Some(exts) => {
                let ext = p
                    .extension()
                    .and_then(|x| x.to_str())
                    .map(|x| x.to_ascii_lowercase())
                    .unwrap_or_default();
                if exts.contains(&ext) {
                    out.push(Entry {
                        path: p,
                        sniff: false,
                    });
                } else {
                    skipped.extension += 1;
                }
            }
            None => out.push(Entry {
                path: p,
                sniff: true,
            }),
        }
    }
}

/// True when the last 64 KiB of an open file hold a zip end-of-central-directory record.
pub fn has_zip_end(f: &mut std::fs::File, len: u64) -> bool {
    if len < 22 {
        return false;
    }
    let n = len.min(EOCD_WINDOW);
    let mut tail = vec![0u8; n as usize];
    f.seek(SeekFrom::Start(len - n)).is_ok()
        && f.read_exact(&mut tail).is_ok()
        && memchr::memmem::rfind(&tail, b"PK\x05\x06").is_some()
}

/// Sniff one file.
pub fn classify(path: &Path) -> Kind {
    let Ok(mut f) = std::fs::File::open(path) else {
        return Kind::Unreadable;
    };
    let len = match f.metadata() {
        Ok(m) => m.len(),
        Err(_) => return Kind::Unreadable,
    };
    if len == 0 {
        return Kind::Empty;
    }
    let mut head = vec![0u8; len.min(HEAD as u64) as usize];
    if f.read_exact(&mut head).is_err() {
        return Kind::Unreadable;
    }
    let k = classify_head(&head, len);
    if k != Kind::Binary {
        return k;
    }
    // A zip with something before it (self-extracting archives, polyglots): its end record.
    if len > head.len() as u64 {
        if has_zip_end(&mut f, len) {
            return Kind::Candidate(Format::Zip);
        }
    } else if memchr::memmem::rfind(&head, b"PK\x05\x06").is_some() {
        return Kind::Candidate(Format::Zip);
    }
    Kind::Binary
}

/// Sniff the first bytes of a file of `len` bytes (without the end-record search).
pub fn classify_head(head: &[u8], len: u64) -> Kind {
    if len == 0 {
        return Kind::Empty;
    }
    let fmt = format::sniff(head, len);
    match fmt {
        Format::Zip
        | Format::SevenZip
        | Format::Gzip
        | Format::Npy
        | Format::Tar
        | Format::Safetensors
        | Format::TorchLegacy => return Kind::Candidate(fmt),
        // "BZh" alone is common in text: require the block size digit.
        Format::Compressed
            if !head.starts_with(b"BZh")
                || head.get(3).is_some_and(|b| (b'1'..=b'9').contains(b)) =>
        {
            return Kind::Candidate(fmt);
        }
        Format::Pickle => {
            if head.len() >= 3 && head[0] == opcodes::PROTO {
                return Kind::Candidate(fmt);
            }
            if probe_pickle(head, len) {
                return Kind::Candidate(fmt);
            }
        }
        _ => {}
    }
    if is_text(head) {
        Kind::Text
    } else {
        Kind::Binary
    }
}

/// Text: UTF-8 without NUL or control bytes other than tab, newline, carriage return and form
/// feed (a cut multi-byte sequence at the end is allowed).
fn is_text(head: &[u8]) -> bool {
    if head
        .iter()
        .any(|&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c))
    {
        return false;
    }
    match std::str::from_utf8(head) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none() && e.valid_up_to() + 4 > head.len(),
    }
}

/// Does data that starts with an opcode (protocol 0 text, protocol 1 binary) read as a pickle?
/// It must reach STOP, or import a well-formed name and run a few opcodes before the data ends.
pub fn probe_pickle(head: &[u8], len: u64) -> bool {
    if head.first().is_none_or(|&b| !opcodes::is_opcode(b)) {
        return false;
    }
    if pickle::looks_like_pickle(head) {
        return true;
    }
    let limits = Limits {
        max_ops: 20_000,
        max_nodes: 20_000,
        ..Limits::scan()
    };
    let mut m = Machine::new(head, 0, limits);
    let out = m.run();
    let named = m.globals.iter().any(|g| {
        let ok = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
        };
        ok(&g.module) && ok(&g.name)
    });
    match out.error {
        None => out.end >= 2,
        // Cut off by the sniffing window (the file goes on): a named import is enough.
        Some(_) if (head.len() as u64) < len && out.end + 64 >= head.len() => named,
        Some(_) => named && out.end >= 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_classified_by_content() {
        let c = |b: &[u8]| classify_head(b, b.len() as u64);
        assert_eq!(c(b"import torch\nx = 1\n"), Kind::Text);
        assert_eq!(c(b"class Foo:\n    pass\n"), Kind::Text);
        assert_eq!(c(b"# README\n\nSome text.\n"), Kind::Text);
        assert_eq!(
            c(b"cos\nsystem\n(S'echo hi'\ntR."),
            Kind::Candidate(Format::Pickle)
        );
        assert_eq!(
            c(b"(dp0\nS'a'\np1\nI1\ns."),
            Kind::Candidate(Format::Pickle)
        );
        assert_eq!(c(b"\x80\x02}q\x00."), Kind::Candidate(Format::Pickle));
        assert_eq!(
            c(b"}q\x00X\x01\x00\x00\x00aq\x01K\x01s."),
            Kind::Candidate(Format::Pickle)
        );
        assert_eq!(c(b"PK\x03\x04rest"), Kind::Candidate(Format::Zip));
        assert_eq!(c(b"BZh91AY&SY"), Kind::Candidate(Format::Compressed));
        assert_eq!(c(b"BZhello there\n"), Kind::Text);
        assert_eq!(
            c(b"\x28\xb5\x2f\xfd\x00"),
            Kind::Candidate(Format::Compressed)
        );
        assert_eq!(c(b"\xff\xd8\xff\xe0 jpeg"), Kind::Binary);
        assert_eq!(c(b"\x00\x01\x02\x03"), Kind::Binary);
        assert_eq!(classify_head(b"", 0), Kind::Empty);
    }
}

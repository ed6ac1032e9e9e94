//! The torch version a project's documentation says it supports: "PyTorch 1.7.0+",
//! "PyTorch >= 1.6", "tested on PyTorch 1.6.0/1.8.0", "developed for PyTorch 1.8.1",
//! `conda install pytorch==1.7.1`. Read from the README and INSTALL files at the project's
//! root and the text files under its `docs/` folder. Used only to keep fixes that write a
//! newer API from being called safe: a project that says it runs on an older torch than the
//! fix needs would break there, whatever its dependency files leave open.
use std::path::{Path, PathBuf};

/// Largest documentation file read (bytes).
const MAX_DOC: u64 = 1 << 20;

/// Is `path` (a file under `root`) documentation that may state the supported torch: a
/// README / INSTALL / GETTING_STARTED file directly in `root`, or a text file (`.md`, `.rst`,
/// `.txt`) under `root/docs` or `root/doc`?
fn is_doc(root: &Path, path: &Path) -> bool {
    let Ok(rel) = path.strip_prefix(root) else {
        return false;
    };
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let text_ext = matches!(ext.as_str(), "md" | "rst" | "txt" | "markdown");
    let mut parts = rel.components();
    let first = parts.next();
    if parts.next().is_none() {
        let upper = name.to_ascii_uppercase();
        return (text_ext || !name.contains('.'))
            && ["README", "INSTALL", "GETTING_STARTED", "GETTING-STARTED"]
                .iter()
                .any(|p| upper.starts_with(p));
    }
    text_ext
        && first.is_some_and(|c| {
            let c = c.as_os_str().to_string_lossy();
            c == "docs" || c == "doc"
        })
}

/// The lowest torch version (major, minor) the documentation among `all` mentions.
pub(crate) fn documented_torch_floor(root: &Path, all: &[PathBuf]) -> Option<(u32, u32)> {
    all.iter()
        .filter(|p| is_doc(root, p))
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() <= MAX_DOC))
        .filter_map(|p| std::fs::read(p).ok())
        .filter_map(|b| lowest_in(&String::from_utf8_lossy(&b)))
        .min()
}

/// The lowest torch version a text mentions: the word `torch` or `pytorch` (any case, not
/// part of a longer name, not `torch.xxx`), optionally `version` / `v`, an operator that
/// allows the version itself (`>=`, `==`, `=`, `~=`, `≥`, none) and `major.minor`. Upper
/// bounds (`<`, `<=`) and versions that are no torch release line (major above 2) are
/// skipped.
pub(crate) fn lowest_in(text: &str) -> Option<(u32, u32)> {
    let lower = text.to_ascii_lowercase();
    let b = lower.as_bytes();
    let mut best: Option<(u32, u32)> = None;
    let mut from = 0;
    while let Some(off) = lower[from..].find("torch") {
        let start = from + off;
        let end = start + "torch".len();
        from = end;
        // The word: `torch` or `pytorch`, not `libtorch`, `torchvision`, `torch.cuda`.
        let word_start = if start >= 2 && &b[start - 2..start] == b"py" {
            start - 2
        } else {
            start
        };
        if word_start > 0
            && (b[word_start - 1].is_ascii_alphanumeric() || b[word_start - 1] == b'_')
        {
            continue;
        }
        if end < b.len() && (b[end].is_ascii_alphabetic() || b[end] == b'_' || b[end] == b'.') {
            continue;
        }
        if let Some(v) = version_after(&lower[end..]) {
            best = Some(best.map_or(v, |b| b.min(v)));
        }
    }
    best
}

/// `[ ]*(version)?[ ]*(>=|==|=|~=|≥)?[ ]*v?MAJOR.MINOR` at the start of `s`.
fn version_after(s: &str) -> Option<(u32, u32)> {
    let mut s = s.trim_start_matches([' ', '\t']);
    if let Some(r) = s.strip_prefix("version") {
        s = r.trim_start_matches([' ', '\t', ':']);
    }
    for op in [">=", "==", "~=", "≥", "="] {
        if let Some(r) = s.strip_prefix(op) {
            s = r.trim_start_matches([' ', '\t']);
            break;
        }
    }
    let s = s.strip_prefix('v').unwrap_or(s);
    let digits = |t: &str| -> (usize, Option<u32>) {
        let n = t.bytes().take_while(u8::is_ascii_digit).count();
        (n, t[..n].parse().ok())
    };
    let (n, major) = digits(s);
    let major = major?;
    let rest = s[n..].strip_prefix('.')?;
    let (m, minor) = digits(rest);
    let minor = minor?;
    // `1.7.0`, `1.7+`, `1.7,`: no longer number glued on (`1.7a`, an IP address is fine).
    if rest[m..].starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    (major <= 2 && minor < 100).then_some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrases_of_real_readmes() {
        assert_eq!(
            lowest_in("- PyTorch 1.7.0+ and torchvision 0.8.1+"),
            Some((1, 7))
        );
        assert_eq!(
            lowest_in("* Linux with Python ≥ 3.6\n* PyTorch >= 1.6"),
            Some((1, 6))
        );
        assert_eq!(
            lowest_in("We tested on PyTorch 1.6.0/1.8.0; we recommend PyTorch >= 1.8.0."),
            Some((1, 6))
        );
        assert_eq!(
            lowest_in(
                "The code was developed for PyTorch 1.8.1 but should work with other versions"
            ),
            Some((1, 8))
        );
        assert_eq!(
            lowest_in("conda install pytorch==1.7.1 torchvision==0.8.2 -c pytorch"),
            Some((1, 7))
        );
        assert_eq!(lowest_in("pip install torch==1.10.0+cu113"), Some((1, 10)));
        assert_eq!(lowest_in("Requires torch version: 2.1"), Some((2, 1)));
        assert_eq!(lowest_in("PyTorch v1.9"), Some((1, 9)));
    }

    #[test]
    fn what_is_no_supported_torch() {
        // Python, CUDA and torchvision versions, API names, upper bounds, URLs.
        assert_eq!(lowest_in("Python 3.8, CUDA 11.3, torchvision 0.9"), None);
        assert_eq!(lowest_in("use torch.cuda.amp.autocast 1.6"), None);
        assert_eq!(lowest_in("torch<1.9 is not supported"), None);
        assert_eq!(lowest_in("see https://pytorch.org/get-started/"), None);
        assert_eq!(lowest_in("LibTorch 1.5 C++ API"), None);
        assert_eq!(lowest_in("PyTorch 2 days ago"), None);
        assert_eq!(lowest_in("a PyTorch implementation of ResNet-50"), None);
    }

    #[test]
    fn only_readme_install_and_docs_are_read() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join("docs/guide")).unwrap();
        std::fs::create_dir_all(root.join("third_party/lib")).unwrap();
        std::fs::write(root.join("README.md"), "Requirements: PyTorch >= 1.8\n").unwrap();
        std::fs::write(
            root.join("docs/guide/install.rst"),
            "Tested with PyTorch 1.7.1\n",
        )
        .unwrap();
        // A vendored library's README says nothing of this project.
        std::fs::write(root.join("third_party/lib/README.md"), "PyTorch 0.4\n").unwrap();
        std::fs::write(root.join("notes.md"), "PyTorch 1.0\n").unwrap();
        let all: Vec<PathBuf> = [
            "README.md",
            "docs/guide/install.rst",
            "third_party/lib/README.md",
            "notes.md",
        ]
        .iter()
        .map(|p| root.join(p))
        .collect();
        assert_eq!(documented_torch_floor(root, &all), Some((1, 7)));
        assert_eq!(documented_torch_floor(root, &all[..1]), Some((1, 8)));
        assert_eq!(documented_torch_floor(root, &all[2..]), None);
    }
}

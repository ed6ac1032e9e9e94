//! Open documents: their text, LSP positions (UTF-16 or UTF-8 code units) <-> byte offsets,
//! incremental edits, and `file://` URIs <-> paths.
use lsp_types::{Position, Range, Uri};
use std::path::{Path, PathBuf};

/// How `Position.character` counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// UTF-16 code units (the LSP default).
    Utf16,
    /// Bytes (negotiated with clients that offer `utf-8`).
    Utf8,
}

/// Byte offsets of line starts.
#[derive(Debug, Clone)]
pub struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    /// Index `text`.
    pub fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(memchr_newlines(text));
        Self { starts }
    }

    /// The 0-based line holding byte `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        self.starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1)
    }

    /// Byte range of a 0-based line, without its line ending.
    pub fn line_range(&self, text: &str, line: usize) -> (usize, usize) {
        let start = self.starts.get(line).copied().unwrap_or(text.len());
        let mut end = self.starts.get(line + 1).copied().unwrap_or(text.len());
        let bytes = text.as_bytes();
        while end > start && matches!(bytes[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        (start, end)
    }

    /// The LSP position of a byte offset (clamped to the text, and to a char boundary).
    pub fn position(&self, text: &str, offset: usize, enc: Encoding) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.line_of(offset);
        let start = self.starts[line];
        let prefix = &text[start..offset];
        let character = match enc {
            Encoding::Utf8 => prefix.len(),
            Encoding::Utf16 => prefix.chars().map(char::len_utf16).sum(),
        };
        Position::new(line as u32, character as u32)
    }

    /// The byte offset of an LSP position (clamped to the line and the text).
    pub fn offset(&self, text: &str, pos: Position, enc: Encoding) -> usize {
        let line = pos.line as usize;
        if line >= self.starts.len() {
            return text.len();
        }
        let (start, end) = self.line_range(text, line);
        let want = pos.character as usize;
        let mut units = 0;
        for (i, c) in text[start..end].char_indices() {
            if units >= want {
                return start + i;
            }
            units += match enc {
                Encoding::Utf8 => c.len_utf8(),
                Encoding::Utf16 => c.len_utf16(),
            };
        }
        end
    }

    /// The LSP position of a 1-based row and 1-based character column (as torchvet's
    /// display locations are given).
    pub fn position_of_row_col(
        &self,
        text: &str,
        row: usize,
        column: usize,
        enc: Encoding,
    ) -> Position {
        let line = row.saturating_sub(1);
        let (start, end) = self.line_range(text, line.min(self.starts.len() - 1));
        let offset = text[start..end]
            .char_indices()
            .nth(column.saturating_sub(1))
            .map(|(i, _)| start + i)
            .unwrap_or(end);
        self.position(text, offset, enc)
    }

    /// The LSP range of a byte range.
    pub fn range(&self, text: &str, start: usize, end: usize, enc: Encoding) -> Range {
        Range::new(
            self.position(text, start, enc),
            self.position(text, end, enc),
        )
    }
}

fn memchr_newlines(text: &str) -> impl Iterator<Item = usize> + '_ {
    text.bytes()
        .enumerate()
        .filter(|&(_, b)| b == b'\n')
        .map(|(i, _)| i + 1)
}

/// An open document.
#[derive(Debug, Clone)]
pub struct Document {
    /// Its text, as the editor has it.
    pub text: String,
    /// Its line index.
    pub lines: Lines,
    /// The editor's version number.
    pub version: i32,
}

impl Document {
    /// A document opened with this text.
    pub fn new(text: String, version: i32) -> Self {
        let lines = Lines::new(&text);
        Self {
            text,
            lines,
            version,
        }
    }

    /// Apply one `didChange` content change (a range edit, or the whole text when `range` is
    /// `None`).
    pub fn apply_change(&mut self, range: Option<Range>, new_text: &str, enc: Encoding) {
        match range {
            None => self.text = new_text.to_string(),
            Some(r) => {
                let start = self.lines.offset(&self.text, r.start, enc);
                let end = self.lines.offset(&self.text, r.end, enc).max(start);
                self.text.replace_range(start..end, new_text);
            }
        }
        self.lines = Lines::new(&self.text);
    }

    /// Position of a byte offset.
    pub fn position(&self, offset: usize, enc: Encoding) -> Position {
        self.lines.position(&self.text, offset, enc)
    }

    /// Range of a byte range.
    pub fn range(&self, start: usize, end: usize, enc: Encoding) -> Range {
        self.lines.range(&self.text, start, end, enc)
    }

    /// Byte offset of a position.
    pub fn offset(&self, pos: Position, enc: Encoding) -> usize {
        self.lines.offset(&self.text, pos, enc)
    }
}

/// The path of a `file://` URI (percent-decoded), or `None` for other schemes.
pub fn uri_to_path(uri: &Uri) -> Option<PathBuf> {
    let s = uri.as_str();
    let rest = s.strip_prefix("file://")?;
    // `file:///p` (empty authority) or `file://localhost/p`.
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    let bytes = percent_decode(path);
    let decoded = String::from_utf8(bytes).ok()?;
    Some(PathBuf::from(decoded))
}

/// A `file://` URI for an absolute path.
pub fn path_to_uri(path: &Path) -> Option<Uri> {
    let s = path.to_str()?;
    let mut out = String::from("file://");
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out.parse().ok()
}

fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_units() {
        let text = "a = 'é😀'\nb = 1\r\nc\n";
        let l = Lines::new(text);
        // after the emoji: `a = '` is 5 units, `é` 1 (2 bytes), the emoji 2 (4 bytes)
        let off = text.find("'\n").unwrap();
        assert_eq!(l.position(text, off, Encoding::Utf16), Position::new(0, 8));
        assert_eq!(l.position(text, off, Encoding::Utf8), Position::new(0, 11));
        assert_eq!(l.offset(text, Position::new(0, 8), Encoding::Utf16), off);
        assert_eq!(
            l.offset(text, Position::new(1, 99), Encoding::Utf16),
            text.find("\r\n").unwrap()
        );
        assert_eq!(
            l.offset(text, Position::new(9, 0), Encoding::Utf16),
            text.len()
        );
        assert_eq!(
            l.position_of_row_col(text, 3, 1, Encoding::Utf16),
            Position::new(2, 0)
        );
    }

    #[test]
    fn incremental_changes() {
        let mut d = Document::new("import torch\nx = 1\n".into(), 1);
        d.apply_change(
            Some(Range::new(Position::new(1, 4), Position::new(1, 5))),
            "torch.ones(2)",
            Encoding::Utf16,
        );
        assert_eq!(d.text, "import torch\nx = torch.ones(2)\n");
        d.apply_change(
            Some(Range::new(Position::new(2, 0), Position::new(2, 0))),
            "y = x\n",
            Encoding::Utf16,
        );
        assert_eq!(d.text, "import torch\nx = torch.ones(2)\ny = x\n");
        d.apply_change(None, "z", Encoding::Utf16);
        assert_eq!(d.text, "z");
    }

    #[test]
    fn file_uris_round_trip() {
        let p = Path::new("/tmp/my dir/ü.py");
        let uri = path_to_uri(p).unwrap();
        assert_eq!(uri.as_str(), "file:///tmp/my%20dir/%C3%BC.py");
        assert_eq!(uri_to_path(&uri).unwrap(), p);
        let u: Uri = "untitled:Untitled-1".parse().unwrap();
        assert!(uri_to_path(&u).is_none());
    }
}

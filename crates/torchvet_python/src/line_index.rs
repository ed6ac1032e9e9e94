use ruff_text_size::TextSize;

/// Line starts of a text, for offset -> (row, column) conversion.
#[derive(Debug, Clone)]
pub struct LineIndex {
    starts: Vec<u32>,
}

impl LineIndex {
    /// Index `text`. `\n`, `\r\n` and lone `\r` end lines.
    pub fn new(text: &str) -> Self {
        let bytes = text.as_bytes();
        let mut starts = Vec::with_capacity(bytes.len() / 32 + 1);
        starts.push(0);
        let mut i = 0;
        while let Some(pos) = memchr::memchr2(b'\n', b'\r', &bytes[i..]) {
            let p = i + pos;
            if bytes[p] == b'\r' && bytes.get(p + 1) == Some(&b'\n') {
                i = p + 2;
            } else {
                i = p + 1;
            }
            starts.push(i as u32);
        }
        Self { starts }
    }

    /// Where each line starts (the first is 0).
    pub fn starts(&self) -> &[u32] {
        &self.starts
    }

    /// Number of lines.
    pub fn line_count(&self) -> usize {
        self.starts.len()
    }

    /// 0-based line of an offset.
    pub fn line_of(&self, offset: TextSize) -> usize {
        let off = u32::from(offset);
        match self.starts.binary_search(&off) {
            Ok(i) => i,
            Err(i) => i - 1,
        }
    }

    /// Start offset of a 0-based line.
    pub fn line_start(&self, line: usize) -> usize {
        self.starts.get(line).copied().unwrap_or(u32::MAX) as usize
    }

    /// 1-based row and 1-based character column.
    pub fn row_col(&self, text: &str, offset: TextSize) -> (usize, usize) {
        let line = self.line_of(offset);
        let start = self.starts[line] as usize;
        let end = (u32::from(offset) as usize).min(text.len());
        let col = text
            .get(start..end)
            .map(|s| s.chars().count())
            .unwrap_or(end.saturating_sub(start));
        (line + 1, col + 1)
    }

    /// The text of the line containing `offset`, without its line ending.
    pub fn line_text<'a>(&self, text: &'a str, offset: TextSize) -> &'a str {
        let line = self.line_of(offset);
        let start = self.starts[line] as usize;
        let end = self
            .starts
            .get(line + 1)
            .map(|&e| e as usize)
            .unwrap_or(text.len());
        text.get(start..end)
            .unwrap_or("")
            .trim_end_matches(['\n', '\r'])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_columns() {
        let text = "a\r\nbé c\nd";
        let idx = LineIndex::new(text);
        assert_eq!(idx.line_count(), 3);
        assert_eq!(idx.row_col(text, TextSize::from(0)), (1, 1));
        assert_eq!(idx.row_col(text, TextSize::from(3)), (2, 1));
        // 'c' is after 'b', 'é' (2 bytes), ' '
        assert_eq!(idx.row_col(text, TextSize::from(7)), (2, 4));
        assert_eq!(idx.line_text(text, TextSize::from(4)), "bé c");
        assert_eq!(idx.row_col(text, TextSize::from(9)), (3, 1));
    }
}

//! The bytes a pickle machine reads: a slice held in memory, or a stream (an inflating zip
//! member, a gzip payload, a large file) read through a bounded window.
//!
//! In stream mode only the bytes the machine has not consumed yet are kept: the window grows to
//! the largest single value the machine asks for (bounded by [`super::Limits::max_value_bytes`])
//! plus one read chunk, so memory does not follow the size of the input, and a stream that fails
//! at its first byte costs one chunk of inflation.

use std::io::Read;

/// Bytes read from a stream at a time.
pub const CHUNK: usize = 32 * 1024;

/// The input of a [`super::Machine`].
pub struct Input<'a> {
    /// Slice mode: the whole data.
    slice: &'a [u8],
    /// Stream mode: the reader (None in slice mode).
    stream: Option<Box<dyn Read + 'a>>,
    /// Stream mode: the window.
    buf: Vec<u8>,
    eof: bool,
    /// Index of the next byte in the current bytes (slice or window).
    pos: usize,
    /// Logical offset of the current bytes' first byte.
    shift: u64,
    /// Logical length, when known.
    total: Option<u64>,
    /// Absolute offset (in its member or file) of logical byte 0.
    base: u64,
    /// The first read error of the stream.
    pub io_error: Option<String>,
    /// Largest window held (stream mode), for measurements and tests.
    pub peak_window: usize,
}

impl<'a> Input<'a> {
    /// Read `data`, whose first byte lies at absolute offset `base`.
    pub fn from_slice(data: &'a [u8], base: u64) -> Self {
        Input {
            slice: data,
            stream: None,
            buf: Vec::new(),
            eof: true,
            pos: 0,
            shift: 0,
            total: Some(data.len() as u64),
            base,
            io_error: None,
            peak_window: 0,
        }
    }

    /// Read a stream whose first byte lies at absolute offset `base`; `total` is its length when
    /// known (declared lengths beyond it are refused before anything is read).
    pub fn from_reader(r: impl Read + 'a, base: u64, total: Option<u64>) -> Self {
        Input {
            slice: &[],
            stream: Some(Box::new(r)),
            buf: Vec::new(),
            eof: false,
            pos: 0,
            shift: 0,
            total,
            base,
            io_error: None,
            peak_window: 0,
        }
    }

    #[inline]
    fn cur(&self) -> &[u8] {
        if self.stream.is_some() {
            &self.buf
        } else {
            self.slice
        }
    }

    #[inline]
    fn avail(&self) -> usize {
        self.cur().len() - self.pos
    }

    /// Bytes at hand after the position (without reading from the stream).
    #[inline]
    pub fn available(&self) -> usize {
        self.avail()
    }

    /// Logical position of the next byte.
    #[inline]
    pub fn position(&self) -> u64 {
        self.shift + self.pos as u64
    }

    /// Absolute offset of logical position `p`.
    #[inline]
    pub fn abs(&self, p: u64) -> u64 {
        self.base + p
    }

    /// Absolute offset of logical byte 0.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Slice mode: the bytes after the position, and the absolute offset of the first of them
    /// (`None` for a stream).
    pub fn rest_slice(&self) -> Option<(&'a [u8], u64)> {
        if self.stream.is_some() {
            return None;
        }
        Some((&self.slice[self.pos..], self.abs(self.position())))
    }

    /// Bytes that remain, when the length is known.
    pub fn remaining(&self) -> Option<u64> {
        self.total.map(|t| t.saturating_sub(self.position()))
    }

    /// True when the stream has been read to its end (always true for slices).
    pub fn exhausted(&self) -> bool {
        self.eof
    }

    /// Make at least `n` bytes available after the position (false at the end of the data).
    #[inline(never)]
    fn fill(&mut self, n: usize) -> bool {
        if self.avail() >= n {
            return true;
        }
        let Some(r) = self.stream.as_mut() else {
            return false;
        };
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.shift += self.pos as u64;
            self.pos = 0;
        }
        while self.buf.len() < n && !self.eof {
            let old = self.buf.len();
            let want = (n - old).max(CHUNK);
            self.buf.resize(old + want, 0);
            match r.read(&mut self.buf[old..]) {
                Ok(0) => {
                    self.buf.truncate(old);
                    self.eof = true;
                }
                Ok(k) => self.buf.truncate(old + k),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => self.buf.truncate(old),
                Err(e) => {
                    self.buf.truncate(old);
                    self.eof = true;
                    if self.io_error.is_none() {
                        self.io_error = Some(e.to_string());
                    }
                }
            }
        }
        self.peak_window = self.peak_window.max(self.buf.capacity());
        if self.eof && self.total.is_none() {
            self.total = Some(self.shift + self.buf.len() as u64);
        }
        self.buf.len() >= n
    }

    /// The next byte.
    #[inline(always)]
    pub fn byte(&mut self) -> Option<u8> {
        if self.pos < self.cur().len() || self.fill(1) {
            let b = self.cur()[self.pos];
            self.pos += 1;
            Some(b)
        } else {
            None
        }
    }

    /// The next byte, not consumed.
    pub fn peek(&mut self) -> Option<u8> {
        if self.fill(1) {
            Some(self.cur()[self.pos])
        } else {
            None
        }
    }

    /// The next `n` bytes (callers keep `n` small or bounded: the window grows to `n`).
    #[inline(always)]
    pub fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.avail() >= n || self.fill(n) {
            let s = self.pos;
            self.pos += n;
            Some(&self.cur()[s..s + n])
        } else {
            None
        }
    }

    /// Up to `n` bytes (fewer at the end of the data).
    pub fn take_upto(&mut self, n: usize) -> &[u8] {
        self.fill(n);
        let k = n.min(self.avail());
        let s = self.pos;
        self.pos += k;
        &self.cur()[s..s + k]
    }

    /// Skip `n` bytes; false when the data ends first (everything that was there is consumed).
    pub fn skip(&mut self, mut n: u64) -> bool {
        loop {
            let a = self.avail() as u64;
            if a >= n {
                self.pos += n as usize;
                return true;
            }
            self.pos += a as usize;
            n -= a;
            if !self.fill(1) {
                return false;
            }
        }
    }

    /// A line up to (not including) `\n`, which is consumed. Fails past `max` bytes.
    pub fn line(&mut self, max: usize) -> Result<&[u8], &'static str> {
        let mut from = 0usize;
        loop {
            let cur = &self.cur()[self.pos..];
            if let Some(i) = memchr::memchr(b'\n', &cur[from..]) {
                let end = from + i;
                if end > max {
                    return Err("line too long");
                }
                let s = self.pos;
                self.pos += end + 1;
                return Ok(&self.cur()[s..s + end]);
            }
            from = cur.len();
            if from > max {
                return Err("line too long");
            }
            if !self.fill(from + 1) {
                return Err("line not terminated by a newline");
            }
        }
    }

    /// Everything up to `max` bytes from the position, not consumed (for sweeps and sniffing).
    pub fn peek_upto(&mut self, max: usize) -> &[u8] {
        self.fill(max);
        let k = max.min(self.avail());
        &self.cur()[self.pos..self.pos + k]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out one byte per call (the worst case for window bookkeeping).
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() || buf.is_empty() {
                return Ok(0);
            }
            buf[0] = self.0[0];
            self.0 = &self.0[1..];
            Ok(1)
        }
    }

    #[test]
    fn slice_and_stream_agree() {
        let data = b"abc\ndefgh\nij";
        for mut inp in [
            Input::from_slice(data, 10),
            Input::from_reader(Trickle(data), 10, None),
            Input::from_reader(&data[..], 10, Some(data.len() as u64)),
        ] {
            assert_eq!(inp.byte(), Some(b'a'));
            assert_eq!(inp.line(100).unwrap(), b"bc");
            assert_eq!(inp.position(), 4);
            assert_eq!(inp.take(2).unwrap(), b"de");
            assert_eq!(inp.line(100).unwrap(), b"fgh");
            assert!(inp.skip(1));
            assert_eq!(inp.peek(), Some(b'j'));
            assert!(inp.line(100).is_err());
            assert_eq!(inp.take_upto(5), b"j");
            assert_eq!(inp.byte(), None);
            assert!(!inp.skip(1));
            assert_eq!(inp.abs(inp.position()), 10 + data.len() as u64);
        }
        // The line limit holds whether the newline is in the window or not.
        for mut inp in [
            Input::from_slice(b"abcdef\n", 0),
            Input::from_reader(Trickle(b"abcdef\n"), 0, None),
        ] {
            assert_eq!(inp.line(2), Err("line too long"));
        }
    }

    #[test]
    fn window_stays_small_on_long_streams() {
        let data = vec![b'x'; 4 << 20];
        let mut inp = Input::from_reader(&data[..], 0, None);
        while inp.take(7).is_some() {}
        assert!(inp.peak_window <= 2 * CHUNK, "{}", inp.peak_window);
        let mut inp = Input::from_reader(&data[..], 0, None);
        assert!(inp.skip(3 << 20));
        assert!(inp.peak_window <= 2 * CHUNK, "{}", inp.peak_window);
        assert_eq!(inp.remaining(), None);
        assert!(!inp.skip(2 << 20));
        assert_eq!(inp.position(), 4 << 20);
    }
}

//! A zip reader that reads like torch (miniz) does, and reports every place where other readers
//! would disagree.
//!
//! torch locates records through the central directory, names them `<prefix>/<name>` where the
//! prefix is the text before the first `/` of the first central entry, ignores CRC-32, ignores the
//! local header's name, and takes the first of duplicate names. We do the same, then compare local
//! headers, CRCs, flags, duplicates and coverage and report each difference as a [`ZipAnomaly`].

use crate::Level;
use std::io::{self, Read, Seek, SeekFrom};

/// CRC-32 (IEEE) of `data`, continuing from `crc`.
pub fn crc32_update(crc: u32, data: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial(crc);
    h.update(data);
    h.finalize()
}

/// A random-access byte source (a file or a slice).
pub trait Source {
    /// Total length.
    fn len(&self) -> u64;
    /// True when empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Read exactly `buf.len()` bytes at `offset`.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// All bytes, when the source holds them in memory (lets readers skip copies).
    fn as_slice(&self) -> Option<&[u8]> {
        None
    }
}

impl Source for [u8] {
    fn len(&self) -> u64 {
        <[u8]>::len(self) as u64
    }
    fn as_slice(&self) -> Option<&[u8]> {
        Some(self)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let end = start
            .checked_add(buf.len())
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        let s = self.get(start..end).ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(s);
        Ok(())
    }
}

impl Source for &[u8] {
    fn len(&self) -> u64 {
        <[u8]>::len(self) as u64
    }
    fn as_slice(&self) -> Option<&[u8]> {
        Some(self)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        (**self).read_at(offset, buf)
    }
}

impl Source for Vec<u8> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }
    fn as_slice(&self) -> Option<&[u8]> {
        Some(self)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.as_slice().read_at(offset, buf)
    }
}

/// A file opened for positioned reads.
pub struct FileSource {
    file: std::fs::File,
    len: u64,
    /// Small files are read once, whole: scanning then costs one read instead of dozens of
    /// small positioned reads (a directory of 1,000 small checkpoints is the common case).
    whole: Option<WholeFile>,
}

/// Files up to this size are read whole into memory.
pub const READ_WHOLE_LIMIT: u64 = 1 << 20;

thread_local! {
    /// Initialised bytes kept from the last file read whole on this thread: the next one is read
    /// into them, so a directory of small checkpoints costs neither an allocation nor zeroing
    /// per file (at most [`READ_WHOLE_LIMIT`] bytes are kept).
    static SPARE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The content of a file read whole. Its buffer goes back to a per-thread spare when dropped.
pub struct WholeFile {
    /// Initialised bytes, at least `len` of them (the rest is left from earlier files).
    buf: Vec<u8>,
    len: usize,
}

impl WholeFile {
    /// The bytes read.
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Bytes read.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing was read.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for WholeFile {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.buf);
        if buf.len() as u64 <= READ_WHOLE_LIMIT {
            // Keep the larger of the two buffers.
            let _ = SPARE.try_with(|s| {
                let old = s.take();
                s.set(if old.len() > buf.len() { old } else { buf });
            });
        }
    }
}

/// Read a regular file whose size `len` is already known, in one `read` (no size probe, no read
/// to confirm the end). A file that shrank since gives what it holds; bytes appended since are
/// not read.
pub fn read_known_len(file: &mut std::fs::File, len: u64) -> io::Result<WholeFile> {
    let want = usize::try_from(len).map_err(|_| io::ErrorKind::OutOfMemory)?;
    let mut buf = SPARE.try_with(|s| s.take()).unwrap_or_default();
    if buf.len() < want {
        buf.resize(want, 0);
    }
    let mut got = 0;
    while got < want {
        match file.read(&mut buf[got..want]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(WholeFile { buf, len: got })
}

impl FileSource {
    /// Open `path`.
    pub fn open(path: &std::path::Path) -> io::Result<Self> {
        let mut file = std::fs::File::open(path)?;
        let meta = file.metadata()?;
        let len = meta.len();
        let whole = if len <= READ_WHOLE_LIMIT && meta.is_file() {
            Some(read_known_len(&mut file, len)?)
        } else if len <= READ_WHOLE_LIMIT {
            // A pipe or device: its size says nothing; read what it gives.
            let mut buf = Vec::new();
            std::io::Read::read_to_end(&mut file, &mut buf)?;
            let len = buf.len();
            Some(WholeFile { buf, len })
        } else {
            None
        };
        Ok(Self::from_parts(file, len, whole))
    }

    /// A source from an open file of `len` bytes, with its content when already read whole.
    pub fn from_parts(file: std::fs::File, len: u64, whole: Option<WholeFile>) -> Self {
        let len = whole.as_ref().map(|w| w.len() as u64).unwrap_or(len);
        FileSource { file, len, whole }
    }
}

fn read_from_memory(data: &[u8], offset: u64, buf: &mut [u8]) -> io::Result<()> {
    let start =
        usize::try_from(offset).map_err(|_| io::Error::from(io::ErrorKind::UnexpectedEof))?;
    let end = start
        .checked_add(buf.len())
        .filter(|&e| e <= data.len())
        .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
    buf.copy_from_slice(&data[start..end]);
    Ok(())
}

impl Source for FileSource {
    fn len(&self) -> u64 {
        self.len
    }
    fn as_slice(&self) -> Option<&[u8]> {
        self.whole.as_ref().map(WholeFile::as_slice)
    }
    #[cfg(unix)]
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        if let Some(whole) = &self.whole {
            return read_from_memory(whole.as_slice(), offset, buf);
        }
        self.file.read_exact_at(buf, offset)
    }
    #[cfg(not(unix))]
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        if let Some(whole) = &self.whole {
            return read_from_memory(whole.as_slice(), offset, buf);
        }
        let mut f = &self.file;
        f.seek(SeekFrom::Start(offset))?;
        f.read_exact(buf)
    }
}

/// One central-directory entry, joined with what its local header says.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Name in the central directory (what torch uses).
    pub name: String,
    /// Name in the local header, when it differs from [`Entry::name`] (the common equal case
    /// costs no copy).
    pub local_name: Option<String>,
    /// Compression method (0 stored, 8 deflate).
    pub method: u16,
    /// Central-directory flags.
    pub flags: u16,
    /// Local-header flags.
    pub local_flags: u16,
    /// CRC-32 declared in the central directory.
    pub crc32: u32,
    /// Compressed size.
    pub compressed_size: u64,
    /// Uncompressed size.
    pub size: u64,
    /// Offset of the local header.
    pub header_offset: u64,
    /// Offset of the member's data (after the local header).
    pub data_offset: u64,
    /// Index in the central directory.
    pub index: usize,
}

/// Something that makes zip readers disagree, or is otherwise odd.
#[derive(Debug, Clone)]
pub struct ZipAnomaly {
    /// Severity.
    pub level: Level,
    /// Stable short code.
    pub code: &'static str,
    /// Message.
    pub message: String,
    /// Member concerned.
    pub member: Option<String>,
    /// Offset in the file.
    pub offset: Option<u64>,
}

/// A parsed archive.
#[derive(Debug, Clone)]
pub struct ZipArchive {
    /// Central-directory entries in order.
    pub entries: Vec<Entry>,
    /// The archive prefix (text before the first `/` of the first entry).
    pub prefix: String,
    /// Offset of the end-of-central-directory record.
    pub eocd_offset: u64,
    /// Offset of the first local header.
    pub first_local: u64,
    /// Differences and oddities found while reading.
    pub anomalies: Vec<ZipAnomaly>,
}

/// Zip reading errors.
#[derive(Debug, thiserror::Error)]
pub enum ZipError {
    /// No end-of-central-directory record.
    #[error("no end-of-central-directory record: not a zip archive")]
    NoEocd,
    /// Structure invalid.
    #[error("invalid zip structure: {0}")]
    Invalid(String),
    /// I/O.
    #[error(transparent)]
    Io(#[from] io::Error),
}

fn le16(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn le32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn le64(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

/// Bytes as text, invalid UTF-8 replaced (the common valid case is one copy, no scan per char).
fn lossy_string(b: &[u8]) -> String {
    if let Some(s) = crate::pickle::ascii_str(b) {
        return s.to_owned();
    }
    match std::str::from_utf8(b) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(b).into_owned(),
    }
}

/// Maximum number of central-directory entries we accept.
pub const MAX_ENTRIES: u64 = 1_000_000;

impl ZipArchive {
    /// Read the directory of a zip archive held by `src`.
    pub fn open<S: Source + ?Sized>(src: &S) -> Result<ZipArchive, ZipError> {
        let len = src.len();
        if len < 22 {
            return Err(ZipError::NoEocd);
        }
        let tail_len = len.min(22 + 65535);
        // In-memory archives are read in place; files through one read of the tail.
        let tail_buf;
        let tail: &[u8] = match src.as_slice() {
            Some(s) => &s[(len - tail_len) as usize..],
            None => {
                let mut t = vec![0u8; tail_len as usize];
                src.read_at(len - tail_len, &mut t)?;
                tail_buf = t;
                &tail_buf
            }
        };
        // The last end record that leaves room for its 22 bytes.
        let pos = memchr::memmem::rfind(&tail[..tail.len() - 18], b"PK\x05\x06")
            .ok_or(ZipError::NoEocd)?;
        let eocd_offset = len - tail_len + pos as u64;
        let e = &tail[pos..];
        let mut anomalies = Vec::new();
        let mut count = le16(e, 10) as u64;
        let mut cd_size = le32(e, 12) as u64;
        let mut cd_offset = le32(e, 16) as u64;
        let comment_len = le16(e, 20) as u64;
        let eocd_end = eocd_offset + 22 + comment_len;
        if eocd_end < len {
            anomalies.push(ZipAnomaly {
                level: Level::Info,
                code: "zip-trailing-data",
                message: format!(
                    "{} bytes after the end of the zip archive (torch ignores them)",
                    len - eocd_end
                ),
                member: None,
                offset: Some(eocd_end),
            });
        } else if eocd_end > len {
            anomalies.push(ZipAnomaly {
                level: Level::Info,
                code: "zip-comment-truncated",
                message: "zip comment runs past the end of the file".into(),
                member: None,
                offset: Some(eocd_offset),
            });
        }
        // ZIP64: the locator sits right before the end record, the zip64 end record (56 bytes
        // without extensible data) right before the locator.
        let mut cd_end = eocd_offset;
        if eocd_offset >= 20 + 56 {
            let mut loc = [0u8; 20];
            src.read_at(eocd_offset - 20, &mut loc)?;
            if loc[0..4] == *b"PK\x06\x07" {
                let at = eocd_offset - 20 - 56;
                let mut rec = [0u8; 56];
                src.read_at(at, &mut rec)?;
                if rec[0..4] == *b"PK\x06\x06" {
                    cd_end = at;
                    if count == 0xffff || cd_size == 0xffff_ffff || cd_offset == 0xffff_ffff {
                        count = le64(&rec, 32);
                        cd_size = le64(&rec, 40);
                        cd_offset = le64(&rec, 48);
                    }
                }
            }
        }
        if count > MAX_ENTRIES {
            return Err(ZipError::Invalid(format!("{count} entries declared")));
        }
        if cd_offset.checked_add(cd_size).is_none_or(|e| e > cd_end) {
            return Err(ZipError::Invalid(format!(
                "central directory [{cd_offset}, +{cd_size}) lies outside the file before the end record"
            )));
        }
        // Data prepended to an archive whose offsets are relative to its own start (a zip glued
        // behind something else): Python's zipfile shifts every offset; miniz does not.
        let mut shift = 0u64;
        let concat = cd_end - (cd_offset + cd_size);
        if concat > 0 && cd_size >= 4 {
            let mut sig = [0u8; 4];
            src.read_at(cd_offset, &mut sig)?;
            let mut sig2 = [0u8; 4];
            src.read_at(cd_offset + concat, &mut sig2)?;
            if sig != *b"PK\x01\x02" && sig2 == *b"PK\x01\x02" {
                shift = concat;
                anomalies.push(ZipAnomaly {
                    level: Level::Info,
                    code: "zip-offsets-shifted",
                    message: format!("zip offsets are relative to byte {concat}: something was prepended to the archive"),
                    member: None,
                    offset: Some(concat),
                });
            }
        }
        let cd_offset = cd_offset + shift;
        let cd_buf;
        let cd: &[u8] = match src.as_slice() {
            Some(s) => &s[cd_offset as usize..(cd_offset + cd_size) as usize],
            None => {
                let mut c = vec![0u8; cd_size as usize];
                src.read_at(cd_offset, &mut c)?;
                cd_buf = c;
                &cd_buf
            }
        };
        let mut entries = Vec::with_capacity(count.min(65536) as usize);
        let mut p = 0usize;
        for index in 0..count as usize {
            if p + 46 > cd.len() || cd[p..p + 4] != *b"PK\x01\x02" {
                return Err(ZipError::Invalid(format!(
                    "central directory entry {index} is damaged"
                )));
            }
            let flags = le16(cd, p + 8);
            let method = le16(cd, p + 10);
            let crc32 = le32(cd, p + 16);
            let mut compressed_size = le32(cd, p + 20) as u64;
            let mut size = le32(cd, p + 24) as u64;
            let nlen = le16(cd, p + 28) as usize;
            let xlen = le16(cd, p + 30) as usize;
            let clen = le16(cd, p + 32) as usize;
            let mut header_offset = le32(cd, p + 42) as u64;
            let end = p + 46 + nlen + xlen + clen;
            if end > cd.len() {
                return Err(ZipError::Invalid(format!(
                    "central directory entry {index} runs past the directory"
                )));
            }
            let name = lossy_string(&cd[p + 46..p + 46 + nlen]);
            // zip64 extra
            let extra = &cd[p + 46 + nlen..p + 46 + nlen + xlen];
            let mut q = 0;
            while q + 4 <= extra.len() {
                let id = le16(extra, q);
                let sz = le16(extra, q + 2) as usize;
                let body = &extra[q + 4..(q + 4 + sz).min(extra.len())];
                if id == 1 {
                    let mut r = 0;
                    if size == 0xffff_ffff && r + 8 <= body.len() {
                        size = le64(body, r);
                        r += 8;
                    }
                    if compressed_size == 0xffff_ffff && r + 8 <= body.len() {
                        compressed_size = le64(body, r);
                        r += 8;
                    }
                    if header_offset == 0xffff_ffff && r + 8 <= body.len() {
                        header_offset = le64(body, r);
                    }
                }
                q += 4 + sz;
            }
            header_offset = header_offset.saturating_add(shift);
            entries.push(Entry {
                name,
                local_name: None,
                method,
                flags,
                local_flags: 0,
                crc32,
                compressed_size,
                size,
                header_offset,
                data_offset: 0,
                index,
            });
            p = end;
        }
        if p != cd.len() {
            anomalies.push(ZipAnomaly {
                level: Level::Info,
                code: "zip-directory-slack",
                message: format!(
                    "{} unexplained bytes in the central directory",
                    cd.len() - p
                ),
                member: None,
                offset: Some(cd_offset + p as u64),
            });
        }
        let prefix = entries
            .first()
            .map(|e| match e.name.find('/') {
                Some(i) => e.name[..i].to_string(),
                None => String::new(),
            })
            .unwrap_or_default();
        // Local headers.
        let mut scratch: Vec<u8> = Vec::new();
        for e in entries.iter_mut() {
            let mut h = [0u8; 30];
            if e.header_offset.checked_add(30).is_none_or(|x| x > len) {
                anomalies.push(ZipAnomaly {
                    level: Level::Malformed,
                    code: "zip-bad-local-header",
                    message: format!(
                        "local header offset {} is outside the file",
                        e.header_offset
                    ),
                    member: Some(e.name.clone()),
                    offset: Some(e.header_offset),
                });
                e.data_offset = len;
                continue;
            }
            // One read for the header and the name it should hold (the central directory's):
            // a file source costs one positioned read per member, not two.
            let want = (30 + e.name.len() as u64).min(len - e.header_offset) as usize;
            let head: &[u8] = match src.as_slice() {
                Some(s) => &s[e.header_offset as usize..e.header_offset as usize + want],
                None => {
                    scratch.resize(want, 0);
                    src.read_at(e.header_offset, &mut scratch)?;
                    &scratch
                }
            };
            h.copy_from_slice(&head[..30]);
            if h[0..4] != *b"PK\x03\x04" {
                anomalies.push(ZipAnomaly {
                    level: Level::Malformed,
                    code: "zip-bad-local-header",
                    message: "no local header signature where the central directory points".into(),
                    member: Some(e.name.clone()),
                    offset: Some(e.header_offset),
                });
                e.data_offset = len;
                continue;
            }
            e.local_flags = le16(&h, 6);
            let lmethod = le16(&h, 8);
            let lcrc = le32(&h, 14);
            let lcsize = le32(&h, 18) as u64;
            let lsize = le32(&h, 22) as u64;
            let nlen = le16(&h, 26) as u64;
            let xlen = le16(&h, 28) as u64;
            // The local name is compared where it was read (no copy).
            let name_at = e.header_offset + 30;
            let in_file = name_at + nlen <= len;
            let same = in_file
                && nlen as usize == e.name.len()
                && head.get(30..30 + nlen as usize) == Some(e.name.as_bytes());
            let local_name = if same {
                None
            } else {
                let mut nb = vec![0u8; nlen as usize];
                if in_file {
                    src.read_at(name_at, &mut nb)?;
                }
                Some(lossy_string(&nb)).filter(|l| *l != e.name)
            };
            e.data_offset = e.header_offset + 30 + nlen + xlen;
            if let Some(local) = &local_name {
                anomalies.push(ZipAnomaly {
                    level: Level::Unsafe,
                    code: "zip-name-mismatch",
                    message: format!(
                        "local header names the member {:?} but the central directory says {:?} (torch uses the central name; Python's zipfile refuses)",
                        local, e.name
                    ),
                    member: Some(e.name.clone()),
                    offset: Some(e.header_offset),
                });
            }
            e.local_name = local_name;
            if lmethod != e.method {
                anomalies.push(ZipAnomaly {
                    level: Level::Unsafe,
                    code: "zip-method-mismatch",
                    message: format!(
                        "compression method {} in the local header, {} in the central directory",
                        lmethod, e.method
                    ),
                    member: Some(e.name.clone()),
                    offset: Some(e.header_offset),
                });
            }
            if e.local_flags != e.flags {
                let diff = e.local_flags ^ e.flags;
                let level = if diff & 0x61 != 0 {
                    Level::Unsafe
                } else {
                    Level::Info
                };
                anomalies.push(ZipAnomaly {
                    level,
                    code: "zip-flag-mismatch",
                    message: format!(
                        "general-purpose flags 0x{:04x} in the local header, 0x{:04x} in the central directory",
                        e.local_flags, e.flags
                    ),
                    member: Some(e.name.clone()),
                    offset: Some(e.header_offset),
                });
            }
            if (e.flags | e.local_flags) & 0x61 != 0 {
                anomalies.push(ZipAnomaly {
                    level: Level::Unsafe,
                    code: "zip-encryption-flags",
                    message: format!(
                        "encryption/patch flag bits set (0x{:04x}): readers disagree on whether this member can be read",
                        (e.flags | e.local_flags) & 0x61
                    ),
                    member: Some(e.name.clone()),
                    offset: Some(e.header_offset),
                });
            }
            if e.local_flags & 0x08 == 0
                && (lcrc != e.crc32 || lcsize != e.compressed_size || lsize != e.size)
                && lcsize != 0xffff_ffff
            {
                anomalies.push(ZipAnomaly {
                    level: Level::Info,
                    code: "zip-header-mismatch",
                    message: "CRC or sizes in the local header differ from the central directory"
                        .into(),
                    member: Some(e.name.clone()),
                    offset: Some(e.header_offset),
                });
            }
            if e.data_offset
                .checked_add(e.compressed_size)
                .is_none_or(|x| x > len)
            {
                anomalies.push(ZipAnomaly {
                    level: Level::Malformed,
                    code: "zip-member-truncated",
                    message: format!(
                        "member data [{}, +{}) runs past the end of the file",
                        e.data_offset, e.compressed_size
                    ),
                    member: Some(e.name.clone()),
                    offset: Some(e.data_offset),
                });
            }
        }
        // Duplicates and prefix.
        let mut seen: rustc_hash::FxHashMap<&str, usize> = rustc_hash::FxHashMap::default();
        seen.reserve(entries.len());
        for e in &entries {
            if let Some(first) = seen.insert(e.name.as_str(), e.index) {
                seen.insert(e.name.as_str(), first);
                anomalies.push(ZipAnomaly {
                    level: Level::Unsafe,
                    code: "zip-duplicate-name",
                    message: format!(
                        "duplicate member name {:?} (entries {} and {}): torch reads the first, Python's zipfile the last",
                        e.name, first, e.index
                    ),
                    member: Some(e.name.clone()),
                    offset: Some(e.header_offset),
                });
            }
            let under_prefix = !prefix.is_empty()
                && e.name.len() > prefix.len()
                && e.name.starts_with(&prefix)
                && e.name.as_bytes()[prefix.len()] == b'/';
            if !prefix.is_empty() && !under_prefix {
                anomalies.push(ZipAnomaly {
                    level: Level::Info,
                    code: "zip-outside-prefix",
                    message: format!(
                        "member {:?} is outside the archive directory {:?} (torch's getAllRecords refuses it)",
                        e.name, prefix
                    ),
                    member: Some(e.name.clone()),
                    offset: Some(e.header_offset),
                });
            }
            if e.name.contains("..") || e.name.starts_with('/') || e.name.contains('\\') {
                anomalies.push(ZipAnomaly {
                    level: Level::Info,
                    code: "zip-path-traversal",
                    message: format!(
                        "member name {:?} escapes its directory when extracted",
                        e.name
                    ),
                    member: Some(e.name.clone()),
                    offset: Some(e.header_offset),
                });
            }
        }
        let first_local = entries
            .iter()
            .map(|e| e.header_offset)
            .min()
            .unwrap_or(cd_offset);
        if first_local > 0 {
            anomalies.push(ZipAnomaly {
                level: Level::Info,
                code: "zip-leading-data",
                message: format!(
                    "{first_local} bytes before the first zip member (torch does not read this file as a zip)"
                ),
                member: None,
                offset: Some(0),
            });
        }
        // Coverage: bytes between members that no entry explains.
        let mut spans: Vec<(u64, u64)> = entries
            .iter()
            .map(|e| {
                (
                    e.header_offset,
                    e.data_offset.saturating_add(e.compressed_size),
                )
            })
            .collect();
        spans.sort_unstable();
        let mut cursor = first_local;
        let mut hidden = 0u64;
        for (s, e) in &spans {
            if *s > cursor {
                let gap = *s - cursor;
                // Data descriptors take 12-24 bytes after a member.
                if gap > 24 {
                    hidden += gap;
                }
            }
            cursor = cursor.max(*e);
        }
        if cd_offset > cursor + 24 {
            hidden += cd_offset - cursor;
        }
        if hidden > 0 {
            anomalies.push(ZipAnomaly {
                level: Level::Info,
                code: "zip-unlisted-data",
                message: format!(
                    "{hidden} bytes between members are not listed in the central directory"
                ),
                member: None,
                offset: None,
            });
        }
        Ok(ZipArchive {
            entries,
            prefix,
            eocd_offset,
            first_local,
            anomalies,
        })
    }

    /// The entry torch would read for `<prefix>/<name>` (the first of duplicates).
    pub fn record(&self, name: &str) -> Option<&Entry> {
        // `e.name == prefix + "/" + name` (or `== name` without a prefix), compared in place:
        // this runs a few times per archive over every entry.
        let p = &self.prefix;
        let full_len = if p.is_empty() {
            name.len()
        } else {
            p.len() + 1 + name.len()
        };
        self.entries.iter().find(|e| {
            let n = e.name.as_bytes();
            n.len() == full_len
                && n.ends_with(name.as_bytes())
                && (p.is_empty() || (n.starts_with(p.as_bytes()) && n[p.len()] == b'/'))
        })
    }

    /// All entries with this exact full name.
    pub fn all_named<'s>(&'s self, full: &'s str) -> impl Iterator<Item = &'s Entry> + 's {
        self.entries.iter().filter(move |e| e.name == full)
    }

    /// The name of an entry relative to the prefix.
    pub fn relative<'e>(&self, e: &'e Entry) -> &'e str {
        if !self.prefix.is_empty()
            && e.name.len() > self.prefix.len()
            && e.name.starts_with(&self.prefix)
            && e.name.as_bytes()[self.prefix.len()] == b'/'
        {
            // After an ASCII '/': always a character boundary (fuzz-found: a multi-byte
            // character right after the prefix made this slice panic).
            &e.name[self.prefix.len() + 1..]
        } else {
            &e.name
        }
    }
}

/// Read a whole member (decompressing deflate), refusing members above `max` bytes.
pub fn read_entry<S: Source + ?Sized>(src: &S, e: &Entry, max: u64) -> Result<Vec<u8>, ZipError> {
    if e.compressed_size > max || (e.method == 8 && e.size > max) {
        return Err(ZipError::Invalid(format!(
            "member {} is larger than the {} byte limit",
            e.name, max
        )));
    }
    if e.data_offset
        .checked_add(e.compressed_size)
        .is_none_or(|x| x > src.len())
    {
        return Err(ZipError::Invalid(format!(
            "member {} runs past the end of the file",
            e.name
        )));
    }
    let mut raw = vec![0u8; e.compressed_size as usize];
    src.read_at(e.data_offset, &mut raw)?;
    match e.method {
        0 => Ok(raw),
        8 => inflate(&raw, max).map_err(ZipError::Invalid),
        m => Err(ZipError::Invalid(format!(
            "member {} uses compression method {m}, which torch cannot read",
            e.name
        ))),
    }
}

/// Inflate raw deflate data with an output limit.
pub fn inflate(raw: &[u8], max: u64) -> Result<Vec<u8>, String> {
    miniz_oxide::inflate::decompress_to_vec_with_limit(
        raw,
        usize::try_from(max).unwrap_or(usize::MAX),
    )
    .map_err(|e| format!("deflate data is invalid or too large: {e:?}"))
}

/// A reader over a stored member's bytes, for streaming.
pub struct EntryReader<'a, S: Source + ?Sized> {
    src: &'a S,
    start: u64,
    pos: u64,
    end: u64,
}

impl<'a, S: Source + ?Sized> EntryReader<'a, S> {
    /// A reader over `[start, start+len)` of `src` (clipped to the source).
    pub fn new(src: &'a S, start: u64, len: u64) -> Self {
        let end = start.saturating_add(len).min(src.len());
        EntryReader {
            src,
            start: start.min(end),
            pos: start.min(end),
            end,
        }
    }
}

impl<S: Source + ?Sized> Read for EntryReader<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (self.end.saturating_sub(self.pos)).min(buf.len() as u64) as usize;
        if n == 0 {
            return Ok(0);
        }
        self.src.read_at(self.pos, &mut buf[..n])?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<S: Source + ?Sized> Seek for EntryReader<'_, S> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        let len = self.end - self.start;
        let rel = self.pos - self.start;
        let new = match pos {
            SeekFrom::Start(o) => Some(o),
            SeekFrom::Current(d) => rel.checked_add_signed(d),
            SeekFrom::End(d) => len.checked_add_signed(d),
        }
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        self.pos = self.start.saturating_add(new.min(len));
        Ok(new.min(len))
    }
}

/// A streaming reader of a member's uncompressed bytes (stored or deflate), at most `max` bytes:
/// nothing is inflated before it is read, so a bomb costs what the reader asks for.
pub fn entry_reader<'s, S: Source + ?Sized>(
    src: &'s S,
    e: &Entry,
    max: u64,
) -> Result<Box<dyn Read + 's>, ZipError> {
    let raw = EntryReader::new(src, e.data_offset, e.compressed_size);
    match e.method {
        0 => Ok(Box::new(raw.take(max))),
        8 => Ok(Box::new(flate2::read::DeflateDecoder::new(raw).take(max))),
        m => Err(ZipError::Invalid(format!(
            "member {} uses compression method {m}, which torch cannot read",
            e.name
        ))),
    }
}

/// The CRC-32 of a member's uncompressed bytes, streaming (at most `max` bytes are inflated;
/// `None` when the member is larger or cannot be read).
pub fn entry_crc<S: Source + ?Sized>(src: &S, e: &Entry) -> io::Result<u32> {
    entry_crc_max(src, e, u64::MAX)
}

/// [`entry_crc`] with a limit on the bytes inflated.
pub fn entry_crc_max<S: Source + ?Sized>(src: &S, e: &Entry, max: u64) -> io::Result<u32> {
    let mut r = entry_reader(src, e, max.saturating_add(1)).map_err(io::Error::other)?;
    let mut h = crc32fast::Hasher::new();
    let mut buf = vec![0u8; (e.size.min(e.compressed_size.max(e.size))).clamp(1, 1 << 16) as usize];
    let mut total = 0u64;
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > max {
            return Err(io::Error::other("member larger than the CRC limit"));
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::ZipBuilder;

    #[test]
    fn crc_known_value() {
        assert_eq!(crc32_update(0, b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn reads_torch_layout() {
        let mut z = ZipBuilder::new();
        z.add("lin/data.pkl", b"\x80\x02}q\x00.");
        z.add("lin/version", b"3\n");
        let bytes = z.finish();
        let a = ZipArchive::open(bytes.as_slice()).unwrap();
        assert_eq!(a.prefix, "lin");
        assert_eq!(a.entries.len(), 2);
        let e = a.record("data.pkl").unwrap();
        assert_eq!(
            read_entry(bytes.as_slice(), e, 1 << 20).unwrap(),
            b"\x80\x02}q\x00."
        );
        assert!(a.anomalies.is_empty(), "{:?}", a.anomalies);
        // Every data record is 64-byte aligned, like torch's writer.
        assert_eq!(e.data_offset % 64, 0);
    }

    #[test]
    fn reports_local_central_name_mismatch() {
        let mut z = ZipBuilder::new();
        z.add_with("a/data.pkl", b"\x80\x02N.", |o| {
            o.local_name = Some("a/datap.kl".into())
        });
        let bytes = z.finish();
        let a = ZipArchive::open(bytes.as_slice()).unwrap();
        assert!(a.anomalies.iter().any(|x| x.code == "zip-name-mismatch"));
        assert!(a.record("data.pkl").is_some());
    }

    #[test]
    fn duplicates_take_first() {
        let mut z = ZipBuilder::new();
        z.add("a/data.pkl", b"first");
        z.add("a/data.pkl", b"second");
        let bytes = z.finish();
        let a = ZipArchive::open(bytes.as_slice()).unwrap();
        let e = a.record("data.pkl").unwrap();
        assert_eq!(read_entry(bytes.as_slice(), e, 100).unwrap(), b"first");
        assert!(a.anomalies.iter().any(|x| x.code == "zip-duplicate-name"));
    }

    #[test]
    fn flags_and_outside_prefix_and_trailing() {
        let mut z = ZipBuilder::new();
        z.add("a/data.pkl", b"x");
        z.add_with("b/evil.pkl", b"y", |o| o.local_flags = Some(0x0809));
        let mut bytes = z.finish();
        bytes.extend_from_slice(b"trailing");
        let a = ZipArchive::open(bytes.as_slice()).unwrap();
        let codes: Vec<_> = a.anomalies.iter().map(|x| x.code).collect();
        assert!(codes.contains(&"zip-outside-prefix"), "{codes:?}");
        assert!(codes.contains(&"zip-flag-mismatch"), "{codes:?}");
        assert!(codes.contains(&"zip-encryption-flags"), "{codes:?}");
        assert!(codes.contains(&"zip-trailing-data"), "{codes:?}");
    }

    #[test]
    fn deflated_member() {
        let mut z = ZipBuilder::new();
        z.add_with("a/data.pkl", b"hello hello hello hello", |o| {
            o.deflate = true
        });
        let bytes = z.finish();
        let a = ZipArchive::open(bytes.as_slice()).unwrap();
        let e = a.record("data.pkl").unwrap();
        assert_eq!(e.method, 8);
        assert_eq!(
            read_entry(bytes.as_slice(), e, 100).unwrap(),
            b"hello hello hello hello"
        );
        assert_eq!(entry_crc(bytes.as_slice(), e).unwrap(), e.crc32);
    }

    #[test]
    fn garbage_is_not_a_zip() {
        assert!(ZipArchive::open(b"PK\x03\x04 not really".as_slice()).is_err());
        let mut v = b"PK\x05\x06".to_vec();
        v.extend_from_slice(&[0xff; 18]);
        assert!(ZipArchive::open(v.as_slice()).is_err());
    }
}

//! Format detection from content, and the small non-zip containers (tar, npy, safetensors
//! header).

use crate::pickle::opcodes;
use serde::Serialize;

/// A checkpoint container format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// torch.save zip format (torch >= 1.6).
    TorchZip,
    /// TorchScript archive (`constants.pkl`).
    TorchScript,
    /// numpy `.npz` (zip of `.npy`).
    Npz,
    /// Some other zip.
    Zip,
    /// Legacy non-zip torch format (magic number pickle first).
    TorchLegacy,
    /// Pre-1.0 tar format.
    TorchTar,
    /// Other tar archive.
    Tar,
    /// A raw pickle (or several).
    Pickle,
    /// numpy `.npy`.
    Npy,
    /// safetensors.
    Safetensors,
    /// 7z archive.
    SevenZip,
    /// gzip stream.
    Gzip,
    /// bzip2 / xz / zstd stream.
    Compressed,
    /// Empty file.
    Empty,
    /// Not recognised.
    Unknown,
}

impl Format {
    /// Kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::TorchZip => "torch-zip",
            Format::TorchScript => "torchscript",
            Format::Npz => "npz",
            Format::Zip => "zip",
            Format::TorchLegacy => "torch-legacy",
            Format::TorchTar => "torch-tar",
            Format::Tar => "tar",
            Format::Pickle => "pickle",
            Format::Npy => "npy",
            Format::Safetensors => "safetensors",
            Format::SevenZip => "7z",
            Format::Gzip => "gzip",
            Format::Compressed => "compressed",
            Format::Empty => "empty",
            Format::Unknown => "unknown",
        }
    }
}

/// The torch legacy magic number `0x1950a86a20f9469cfc6c` as LONG1 bytes (little-endian).
pub const LEGACY_MAGIC_LE: [u8; 10] = [0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19];

/// First guess from the leading bytes (zip members are refined by the scanner).
pub fn sniff(head: &[u8], len: u64) -> Format {
    if len == 0 {
        return Format::Empty;
    }
    if head.starts_with(b"PK\x03\x04") {
        return Format::Zip;
    }
    if head.starts_with(b"7z\xbc\xaf\x27\x1c") {
        return Format::SevenZip;
    }
    if head.starts_with(&[0x1f, 0x8b]) {
        return Format::Gzip;
    }
    if head.starts_with(b"BZh")
        || head.starts_with(b"\xfd7zXZ\x00")
        || head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
    {
        return Format::Compressed;
    }
    if head.starts_with(b"\x93NUMPY") {
        return Format::Npy;
    }
    if is_tar(head) {
        return Format::Tar;
    }
    if is_safetensors_head(head, len) {
        return Format::Safetensors;
    }
    if head.len() >= 2 && head[0] == opcodes::PROTO && (1..=5).contains(&head[1]) {
        if head.len() >= 14
            && head[2] == opcodes::LONG1
            && head[3] == 10
            && head[4..14] == LEGACY_MAGIC_LE
        {
            return Format::TorchLegacy;
        }
        return Format::Pickle;
    }
    if head.first().is_some_and(|&b| opcodes::is_opcode(b)) {
        return Format::Pickle;
    }
    Format::Unknown
}

/// True when a 512-byte tar header with a valid checksum starts the data.
pub fn is_tar(head: &[u8]) -> bool {
    if head.len() < 512 {
        return false;
    }
    if &head[257..262] != b"ustar" && head[257..263].iter().any(|&b| b != 0) {
        return false;
    }
    let stored = match parse_octal(&head[148..156]) {
        Some(v) => v,
        None => return false,
    };
    let mut sum: u64 = 0;
    for (i, &b) in head[..512].iter().enumerate() {
        sum += if (148..156).contains(&i) {
            32
        } else {
            b as u64
        };
    }
    sum == stored && head[0] != 0
}

fn parse_octal(f: &[u8]) -> Option<u64> {
    let s: Vec<u8> = f
        .iter()
        .copied()
        .skip_while(|&b| b == b' ')
        .take_while(|&b| b != 0 && b != b' ')
        .collect();
    if s.is_empty() {
        return Some(0);
    }
    let mut v: u64 = 0;
    for b in s {
        if !(b'0'..=b'7').contains(&b) {
            return None;
        }
        v = v.checked_mul(8)?.checked_add((b - b'0') as u64)?;
    }
    Some(v)
}

/// One tar member.
#[derive(Debug, Clone)]
pub struct TarMember {
    /// Name.
    pub name: String,
    /// Offset of the data.
    pub offset: u64,
    /// Size.
    pub size: u64,
    /// Type flag.
    pub kind: u8,
}

/// Parse one 512-byte tar header (None when it is not a valid header).
pub fn tar_header(h: &[u8]) -> Option<TarMember> {
    if h.len() < 512 || !is_tar(h) {
        return None;
    }
    let name_end = h[..100].iter().position(|&b| b == 0).unwrap_or(100);
    let mut name = String::from_utf8_lossy(&h[..name_end]).into_owned();
    if &h[257..262] == b"ustar" && h[345] != 0 {
        let pe = h[345..500].iter().position(|&b| b == 0).unwrap_or(155);
        name = format!("{}/{}", String::from_utf8_lossy(&h[345..345 + pe]), name);
    }
    let size = parse_octal(&h[124..136])?;
    Some(TarMember {
        name,
        offset: 0,
        size,
        kind: h[156],
    })
}

/// List tar members (regular files) from the whole file's bytes.
pub fn tar_members(data: &[u8]) -> Result<Vec<TarMember>, String> {
    let mut out = Vec::new();
    let mut p = 0usize;
    while p + 512 <= data.len() {
        let h = &data[p..p + 512];
        if h.iter().all(|&b| b == 0) {
            break;
        }
        let Some(mut m) = tar_header(h) else {
            return Err(format!("invalid tar header at byte {p}"));
        };
        let offset = (p + 512) as u64;
        if offset
            .checked_add(m.size)
            .is_none_or(|e| e > data.len() as u64)
        {
            return Err(format!(
                "tar member {} runs past the end of the file",
                m.name
            ));
        }
        let size = m.size;
        if m.kind == b'0' || m.kind == 0 {
            m.offset = offset;
            out.push(m);
        }
        let blocks = size.div_ceil(512) as usize;
        p = p + 512 + blocks * 512;
        if out.len() > 100_000 {
            return Err("too many tar members".into());
        }
    }
    Ok(out)
}

/// Looks like a safetensors header: u64 length that fits, then `{`.
pub fn is_safetensors_head(head: &[u8], len: u64) -> bool {
    if head.len() < 10 {
        return false;
    }
    let mut a = [0u8; 8];
    a.copy_from_slice(&head[..8]);
    let n = u64::from_le_bytes(a);
    n >= 2 && n <= len.saturating_sub(8) && head[8] == b'{'
}

/// The parsed header of a `.npy` file.
#[derive(Debug, Clone)]
pub struct NpyHeader {
    /// `descr` (dtype string).
    pub descr: String,
    /// Fortran order.
    pub fortran: bool,
    /// Shape.
    pub shape: Vec<u64>,
    /// Offset of the data.
    pub data_offset: usize,
}

/// Parse a `.npy` header (a Python dict literal).
pub fn npy_header(b: &[u8]) -> Result<NpyHeader, String> {
    if !b.starts_with(b"\x93NUMPY") || b.len() < 10 {
        return Err("not an npy file".into());
    }
    let major = b[6];
    let (hlen, start) = if major == 1 {
        (u16::from_le_bytes([b[8], b[9]]) as usize, 10usize)
    } else {
        if b.len() < 12 {
            return Err("npy header truncated".into());
        }
        (u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize, 12)
    };
    let end = start.checked_add(hlen).ok_or("npy header too long")?;
    let h = b.get(start..end).ok_or("npy header truncated")?;
    let h = String::from_utf8_lossy(h);
    let field = |key: &str| -> Option<String> {
        let k = format!("'{key}':");
        let i = h.find(&k)? + k.len();
        Some(h[i..].trim_start().to_string())
    };
    let descr = field("descr")
        .and_then(|s| {
            let q = s.chars().next()?;
            if q == '\'' || q == '"' {
                let rest = &s[1..];
                rest.find(q).map(|e| rest[..e].to_string())
            } else {
                // structured dtype (a list): keep the text
                Some(s.split("'fortran_order'").next().unwrap_or("").to_string())
            }
        })
        .ok_or("npy header has no descr")?;
    let fortran = field("fortran_order").is_some_and(|s| s.starts_with("True"));
    let shape = field("shape")
        .and_then(|s| {
            let s = s.strip_prefix('(')?;
            let e = s.find(')')?;
            Some(
                s[..e]
                    .split(',')
                    .map(str::trim)
                    .filter(|x| !x.is_empty())
                    .filter_map(|x| x.trim_end_matches('L').parse().ok())
                    .collect(),
            )
        })
        .unwrap_or_default();
    Ok(NpyHeader {
        descr,
        fortran,
        shape,
        data_offset: end,
    })
}

/// True when an npy dtype descriptor contains Python objects (`O`), which numpy loads by
/// unpickling.
pub fn npy_has_objects(descr: &str) -> bool {
    descr.contains('O')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_by_content() {
        assert_eq!(sniff(b"PK\x03\x04....", 100), Format::Zip);
        assert_eq!(sniff(b"\x80\x02}q\x00.", 6), Format::Pickle);
        assert_eq!(sniff(b"(dp0\n.", 6), Format::Pickle);
        assert_eq!(sniff(b"7z\xbc\xaf\x27\x1c\x00\x04", 8), Format::SevenZip);
        assert_eq!(sniff(b"\x93NUMPY\x01\x00", 8), Format::Npy);
        let mut legacy = vec![0x80, 0x02, 0x8a, 0x0a];
        legacy.extend_from_slice(&LEGACY_MAGIC_LE);
        legacy.push(b'.');
        assert_eq!(sniff(&legacy, legacy.len() as u64), Format::TorchLegacy);
        let mut st = 2u64.to_le_bytes().to_vec();
        st.extend_from_slice(b"{}");
        assert_eq!(sniff(&st, 10), Format::Safetensors);
        assert_eq!(sniff(b"", 0), Format::Empty);
        assert_eq!(sniff(b"\xff\xfe", 2), Format::Unknown);
    }

    #[test]
    fn npy_header_parses() {
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        let h = "{'descr': '|O', 'fortran_order': False, 'shape': (2, 3), }";
        b.extend_from_slice(&(h.len() as u16).to_le_bytes());
        b.extend_from_slice(h.as_bytes());
        let p = npy_header(&b).unwrap();
        assert_eq!(p.descr, "|O");
        assert_eq!(p.shape, vec![2, 3]);
        assert!(npy_has_objects(&p.descr));
        assert!(!p.fortran);
    }

    #[test]
    fn tar_roundtrip() {
        let mut h = [0u8; 512];
        h[..6].copy_from_slice(b"pickle");
        h[100..107].copy_from_slice(b"0000644");
        h[124..135].copy_from_slice(b"00000000003");
        h[156] = b'0';
        h[257..262].copy_from_slice(b"ustar");
        let sum: u32 = h.iter().map(|&b| b as u32).sum::<u32>() + 8 * 32;
        let s = format!("{sum:06o}\0 ");
        h[148..156].copy_from_slice(s.as_bytes());
        let mut data = h.to_vec();
        data.extend_from_slice(b"N.\n");
        data.resize(1024 + 1024, 0);
        assert!(is_tar(&data));
        let m = tar_members(&data).unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].name, "pickle");
        assert_eq!(m[0].size, 3);
    }
}

//! Scan verdicts: what torch (or numpy, or pickle) would execute when loading a file.

use crate::format::{self, Format};
use crate::pickle::{self, Limits, Machine, Value};
use crate::policy;
use crate::zip::{self, Source, ZipArchive};
use crate::{Finding, Level, ScanReport, Verdict};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Scanner settings.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// Largest pickle (or pickle region) read into memory.
    pub max_pickle_bytes: u64,
    /// Members up to this size get their CRC-32 checked.
    pub crc_check_max: u64,
    /// Pickle machine limits.
    pub limits: Limits,
    /// Maximum nesting of containers and nested pickles.
    pub max_depth: u32,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            max_pickle_bytes: 512 << 20,
            crc_check_max: 16 << 20,
            limits: Limits::default(),
            max_depth: 4,
        }
    }
}

struct Ctx<'o> {
    opts: &'o ScanOptions,
    findings: Vec<Finding>,
    globals: Vec<String>,
    seen: HashSet<String>,
    torchscript: bool,
}

impl Ctx<'_> {
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        level: Level,
        code: &str,
        message: String,
        member: Option<&str>,
        offset: Option<u64>,
        opcode: Option<&str>,
        global: Option<String>,
    ) {
        if self.findings.len() >= 5_000 {
            return;
        }
        self.findings.push(Finding {
            level,
            code: code.to_string(),
            message,
            member: member.map(str::to_string),
            offset,
            opcode: opcode.map(str::to_string),
            global,
        });
    }
}

/// Scan one file. Never panics: errors become a `malformed` verdict.
pub fn scan_path(path: &Path) -> ScanReport {
    scan_path_with(path, &ScanOptions::default())
}

/// Scan one file with options.
pub fn scan_path_with(path: &Path, opts: &ScanOptions) -> ScanReport {
    let p = path.to_path_buf();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let src = match zip::FileSource::open(path) {
            Ok(s) => s,
            Err(e) => return ScanReport::error(p.clone(), format!("cannot read: {e}")),
        };
        scan_source(p.clone(), &src, opts)
    }));
    match r {
        Ok(r) => r,
        Err(_) => ScanReport::error(p, "internal error while scanning (please report)".into()),
    }
}

/// Scan bytes held in memory (`name` is used as the report's path).
pub fn scan_bytes(name: &str, data: &[u8]) -> ScanReport {
    let opts = ScanOptions::default();
    let p = PathBuf::from(name);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        scan_source(p.clone(), &data, &opts)
    }));
    r.unwrap_or_else(|_| ScanReport::error(p, "internal error while scanning".into()))
}

fn scan_source(path: PathBuf, src: &dyn Source, opts: &ScanOptions) -> ScanReport {
    let mut ctx = Ctx {
        opts,
        findings: Vec::new(),
        globals: Vec::new(),
        seen: HashSet::new(),
        torchscript: false,
    };
    let fmt = scan_container(&mut ctx, src, None, 0);
    let mut findings = ctx.findings;
    findings.sort_by_key(|f| std::cmp::Reverse(f.level));
    let verdict = findings
        .iter()
        .map(|f| Verdict::from_level(f.level))
        .max()
        .unwrap_or(Verdict::Safe);
    ScanReport {
        path,
        verdict,
        format: fmt.as_str().to_string(),
        size: src.len(),
        findings,
        globals: ctx.globals,
    }
}

fn join(label: Option<&str>, member: &str) -> String {
    match label {
        Some(l) => format!("{l}!{member}"),
        None => member.to_string(),
    }
}

fn read_prefix(src: &dyn Source, max: u64) -> std::io::Result<Vec<u8>> {
    let n = src.len().min(max);
    let mut v = vec![0u8; n as usize];
    src.read_at(0, &mut v)?;
    Ok(v)
}

fn scan_container(ctx: &mut Ctx, src: &dyn Source, label: Option<&str>, depth: u32) -> Format {
    let len = src.len();
    let mut head = vec![0u8; len.min(1024) as usize];
    if let Err(e) = src.read_at(0, &mut head) {
        ctx.add(
            Level::Malformed,
            "io-error",
            format!("cannot read: {e}"),
            label,
            None,
            None,
            None,
        );
        return Format::Unknown;
    }
    let fmt = format::sniff(&head, len);
    match fmt {
        Format::Zip => scan_zip(ctx, src, label, depth),
        Format::SevenZip => {
            ctx.add(
                Level::Unsafe,
                "7z-archive",
                "7z archive: torch.load cannot read it, and its compressed content cannot be inspected (a known way to smuggle a pickle past scanners)".into(),
                label,
                Some(0),
                None,
                None,
            );
            embedded_search(ctx, src, label, depth);
            fmt
        }
        Format::Compressed => {
            ctx.add(
                Level::Unsafe,
                "compressed-stream",
                "bzip2/xz/zstd stream: content not inspected; decompress it and scan the result"
                    .into(),
                label,
                Some(0),
                None,
                None,
            );
            embedded_search(ctx, src, label, depth);
            fmt
        }
        Format::Gzip => {
            match read_prefix(src, ctx.opts.max_pickle_bytes) {
                Ok(raw) => match gunzip(&raw, ctx.opts.max_pickle_bytes) {
                    Ok(inner) => {
                        if depth < ctx.opts.max_depth {
                            let l = join(label, "gunzip");
                            scan_container(ctx, &inner, Some(&l), depth + 1);
                        }
                    }
                    Err(e) => ctx.add(Level::Malformed, "bad-gzip", e, label, Some(0), None, None),
                },
                Err(e) => ctx.add(
                    Level::Malformed,
                    "io-error",
                    e.to_string(),
                    label,
                    None,
                    None,
                    None,
                ),
            }
            fmt
        }
        Format::Npy => {
            match read_prefix(src, ctx.opts.max_pickle_bytes) {
                Ok(data) => scan_npy(ctx, &data, label, depth),
                Err(e) => ctx.add(
                    Level::Malformed,
                    "io-error",
                    e.to_string(),
                    label,
                    None,
                    None,
                    None,
                ),
            }
            fmt
        }
        Format::Tar => scan_tar(ctx, src, label, depth),
        Format::Safetensors => {
            if let Err(e) = crate::safetensors::SafeFile::open_source(src) {
                ctx.add(
                    Level::Malformed,
                    "bad-safetensors",
                    e.to_string(),
                    label,
                    Some(0),
                    None,
                    None,
                );
            }
            fmt
        }
        Format::Pickle | Format::TorchLegacy => scan_pickle_stream(ctx, src, label, depth),
        Format::Empty => {
            ctx.add(
                Level::Malformed,
                "empty",
                "empty file".into(),
                label,
                None,
                None,
                None,
            );
            fmt
        }
        Format::Unknown
        | Format::Npz
        | Format::TorchZip
        | Format::TorchScript
        | Format::TorchTar => {
            let found = embedded_search(ctx, src, label, depth);
            if !found {
                ctx.add(
                    Level::Malformed,
                    "unknown-format",
                    "not a recognised checkpoint format (no zip, pickle, npy, safetensors or tar header)".into(),
                    label,
                    Some(0),
                    None,
                    None,
                );
            }
            Format::Unknown
        }
    }
}

/// Inflate a gzip stream.
pub fn gunzip(raw: &[u8], max: u64) -> Result<Vec<u8>, String> {
    if raw.len() < 18 || raw[0] != 0x1f || raw[1] != 0x8b || raw[2] != 8 {
        return Err("not a deflate gzip stream".into());
    }
    let flg = raw[3];
    let mut p = 10usize;
    if flg & 4 != 0 {
        let x = u16::from_le_bytes([raw[p], raw[p + 1]]) as usize;
        p += 2 + x;
    }
    for bit in [8u8, 16] {
        if flg & bit != 0 {
            while p < raw.len() && raw[p] != 0 {
                p += 1;
            }
            p += 1;
        }
    }
    if flg & 2 != 0 {
        p += 2;
    }
    let body = raw.get(p..).ok_or("gzip header truncated")?;
    zip::inflate(body, max)
}

/// What one pickle run left behind that callers need.
pub(crate) struct PickleSummary {
    pub end: usize,
    pub error: bool,
    pub root_is_legacy_magic: bool,
}

fn analyze_pickle(
    ctx: &mut Ctx,
    data: &[u8],
    base: u64,
    member: &str,
    depth: u32,
    error_level: Level,
) -> PickleSummary {
    let mut m = Machine::new(data, base, ctx.opts.limits);
    let out = m.run();
    for g in &m.globals {
        let q = g.qualified();
        if ctx.seen.insert(q.clone()) && ctx.globals.len() < 10_000 {
            ctx.globals.push(q.clone());
        }
        if g.module == "?" {
            continue; // already reported as a computed STACK_GLOBAL
        }
        if ctx.torchscript && (g.module.starts_with("__torch__") || g.module == "torch.jit._pickle")
        {
            continue; // resolved by TorchScript's C++ type resolver, never imported from Python
        }
        let j = policy::judge(&g.module, &g.name);
        if j.level > Level::Info {
            let mut msg = j.reason;
            if let Some((wm, wn)) = &g.written {
                msg.push_str(&format!(
                    " (written as {wm}.{wn}, renamed by the unpickler)"
                ));
            }
            let code = if j.level == Level::Dangerous {
                "dangerous-global"
            } else {
                "unsafe-global"
            };
            ctx.add(
                j.level,
                code,
                msg,
                Some(member),
                Some(g.offset),
                Some(g.opcode),
                Some(q),
            );
        }
    }
    for f in &m.findings {
        ctx.add(
            f.level,
            f.code,
            f.message.clone(),
            Some(member),
            Some(f.offset),
            Some(f.opcode),
            f.global.clone(),
        );
    }
    check_trampolines(ctx, &m, member);
    if let Some(e) = &out.error {
        let suspicious = m
            .globals
            .iter()
            .any(|g| policy::judge(&g.module, &g.name).level > Level::Info);
        let msg = if suspicious {
            format!("pickle fails after importing names outside the allowlist ({}): a loader would already have run them", e.message)
        } else {
            format!("pickle cannot be read: {}", e.message)
        };
        ctx.add(
            error_level,
            "pickle-error",
            msg,
            Some(member),
            Some(e.offset),
            None,
            None,
        );
    }
    let root_is_legacy_magic = out.root.is_some_and(|r| match m.get(r) {
        Value::BigInt(b) => b.as_ref() == format::LEGACY_MAGIC_LE,
        _ => false,
    });
    let nested = std::mem::take(&mut m.nested);
    for n in nested {
        let l = format!("{member}!nested@{}", n.offset);
        ctx.add(
            Level::Info,
            "nested-pickle",
            format!(
                "{} bytes passed to {} are scanned as a nested checkpoint",
                n.data.len(),
                n.via
            ),
            Some(member),
            Some(n.offset),
            Some("REDUCE"),
            Some(n.via.clone()),
        );
        if depth < ctx.opts.max_depth {
            scan_container(ctx, &n.data, Some(&l), depth + 1);
        }
    }
    PickleSummary {
        end: out.end,
        error: out.error.is_some(),
        root_is_legacy_magic,
    }
}

/// `torch._tensor._rebuild_from_type_v2(func, ...)` calls `func`: it must be an allowlisted name.
fn check_trampolines(ctx: &mut Ctx, m: &Machine, member: &str) {
    let mut reported = 0;
    for v in &m.nodes {
        let Value::Object(o) = v else { continue };
        let Value::Global { module, name, .. } = m.get(o.callee) else {
            continue;
        };
        if !(&**module == "torch._tensor" && &**name == "_rebuild_from_type_v2") {
            continue;
        }
        let func = match m.get(o.args) {
            Value::Tuple(items) => items.first().copied(),
            _ => None,
        };
        let ok = func.is_some_and(|f| match m.get(f) {
            Value::Global { module, name, .. } => {
                policy::is_allowed(&crate::pickle::qualified(module, name))
            }
            _ => false,
        });
        if !ok && reported < 16 {
            reported += 1;
            ctx.add(
                Level::Dangerous,
                "trampoline",
                "torch._tensor._rebuild_from_type_v2 is given a function outside the allowlist: it calls it".into(),
                Some(member),
                Some(o.offset),
                Some("REDUCE"),
                Some("torch._tensor._rebuild_from_type_v2".into()),
            );
        }
    }
}

fn scan_pickle_stream(ctx: &mut Ctx, src: &dyn Source, label: Option<&str>, depth: u32) -> Format {
    // Pickles sit at the start of the file (legacy storages follow them): read a prefix and
    // grow it only when a pickle runs past its end, so memory does not follow the file size.
    let mut want = (4u64 << 20).min(ctx.opts.max_pickle_bytes);
    loop {
        let data = match read_prefix(src, want) {
            Ok(d) => d,
            Err(e) => {
                ctx.add(
                    Level::Malformed,
                    "io-error",
                    e.to_string(),
                    label,
                    None,
                    None,
                    None,
                );
                return Format::Unknown;
            }
        };
        let (nf, ng) = (ctx.findings.len(), ctx.globals.len());
        let seen = ctx.seen.clone();
        let (fmt, truncated) = scan_pickle_prefix(ctx, src, &data, label, depth);
        let full = data.len() as u64 >= src.len() || want >= ctx.opts.max_pickle_bytes;
        if !truncated || full {
            return fmt;
        }
        ctx.findings.truncate(nf);
        ctx.globals.truncate(ng);
        ctx.seen = seen;
        want = want.saturating_mul(4).min(ctx.opts.max_pickle_bytes);
    }
}

fn scan_pickle_prefix(
    ctx: &mut Ctx,
    src: &dyn Source,
    data: &[u8],
    label: Option<&str>,
    depth: u32,
) -> (Format, bool) {
    let mut truncated = false;
    let mut pos = 0usize;
    let mut legacy = false;
    let mut count = 0;
    let names = ["magic", "protocol", "sys_info", "object", "storage_keys"];
    let sniffed_legacy =
        format::sniff(&data[..data.len().min(64)], data.len() as u64) == Format::TorchLegacy;
    while pos < data.len() && count < 32 {
        let member = if legacy || (count == 0 && sniffed_legacy) {
            join(
                label,
                &format!("pickle[{}]", names.get(count).copied().unwrap_or("extra")),
            )
        } else if count == 0 {
            join(label, "pickle")
        } else {
            join(label, &format!("pickle[{count}]"))
        };
        // Only the pickles torch reads count as errors; later ones are informational.
        let err_level = if count == 0 || (legacy && count < 5) {
            Level::Malformed
        } else {
            Level::Info
        };
        if count > 0 && !(legacy && count < 5) && !pickle::opcodes::is_opcode(data[pos]) {
            break;
        }
        let s = analyze_pickle(ctx, &data[pos..], pos as u64, &member, depth, err_level);
        if count == 0 && s.root_is_legacy_magic {
            legacy = true;
        }
        count += 1;
        if s.error {
            truncated |= pos + s.end >= data.len().saturating_sub(1);
            break;
        }
        pos += s.end;
        if legacy && count == 5 {
            break;
        }
    }
    if !legacy && count > 1 {
        ctx.add(
            Level::Info,
            "stacked-pickles",
            format!("{count} pickles back to back: pickle.load reads the first, other loaders may read the rest (all were scanned)"),
            label,
            Some(0),
            None,
            None,
        );
    }
    // A zip glued behind a pickle (polyglot): scanners that read the zip miss the pickle.
    if src.len() > 22 {
        if let Ok(arch) = ZipArchive::open(src) {
            if !arch.entries.is_empty() {
                ctx.add(
                    Level::Unsafe,
                    "pickle-zip-polyglot",
                    format!("the file is both a pickle and a zip archive ({} members from byte {}): torch.load runs the pickle, zip-based scanners see only the archive", arch.entries.len(), arch.first_local),
                    label,
                    Some(arch.first_local),
                    None,
                    None,
                );
                if depth < ctx.opts.max_depth {
                    let l = join(label, "zip");
                    scan_zip_archive(ctx, src, &arch, Some(&l), depth + 1);
                }
            }
        }
    }
    let fmt = if legacy {
        Format::TorchLegacy
    } else {
        Format::Pickle
    };
    (fmt, truncated)
}

fn scan_zip(ctx: &mut Ctx, src: &dyn Source, label: Option<&str>, depth: u32) -> Format {
    match ZipArchive::open(src) {
        Ok(arch) => scan_zip_archive(ctx, src, &arch, label, depth),
        Err(e) => {
            ctx.add(
                Level::Malformed,
                "bad-zip",
                format!("starts like a zip but cannot be read as one: {e}"),
                label,
                Some(0),
                None,
                None,
            );
            embedded_search(ctx, src, label, depth);
            Format::Zip
        }
    }
}

fn is_data_record(rel: &str) -> bool {
    (rel.starts_with("data/") || rel.starts_with(".data/")) && !rel.ends_with(".pkl")
}

fn scan_zip_archive(
    ctx: &mut Ctx,
    src: &dyn Source,
    arch: &ZipArchive,
    label: Option<&str>,
    depth: u32,
) -> Format {
    for a in &arch.anomalies {
        let member = a.member.as_deref().map(|m| join(label, m));
        ctx.add(
            a.level,
            a.code,
            a.message.clone(),
            member.as_deref().or(label),
            a.offset,
            None,
            None,
        );
    }
    let is_ts = arch.record("constants.pkl").is_some();
    let was_ts = ctx.torchscript;
    ctx.torchscript = is_ts;
    if is_ts {
        ctx.add(
            Level::Info,
            "torchscript",
            "TorchScript archive: torch.load hands it to torch.jit.load (TorchScript code and types, not Python imports)".into(),
            label,
            None,
            None,
            None,
        );
    }
    let has_data = arch.record("data.pkl").is_some();
    let npz = !arch.entries.is_empty() && arch.entries.iter().all(|e| e.name.ends_with(".npy"));
    let fmt = if is_ts {
        Format::TorchScript
    } else if has_data {
        Format::TorchZip
    } else if npz {
        Format::Npz
    } else {
        Format::Zip
    };
    if has_data || is_ts {
        if arch.record("version").is_none() && arch.record(".data/version").is_none() {
            ctx.add(
                Level::Malformed,
                "missing-version",
                "no `version` record: torch refuses to load this archive".into(),
                label,
                None,
                None,
                None,
            );
        }
    } else if !npz {
        let any_pickle = arch.entries.iter().any(|e| e.name.ends_with(".pkl"));
        if !any_pickle {
            ctx.add(
                Level::Info,
                "zip-not-torch",
                format!("zip archive without `{}/data.pkl`: not a torch checkpoint; members scanned individually", arch.prefix),
                label,
                None,
                None,
                None,
            );
        }
    }
    for e in &arch.entries {
        let rel = arch.relative(e);
        let member = join(label, &e.name);
        let is_pickle = e.name.ends_with(".pkl") || e.name.ends_with(".debug_pkl");
        if (has_data || is_ts) && is_data_record(rel) {
            // Raw tensor bytes are never unpickled: their CRC is not a security question and
            // reading them would make scan time depend on the size of the weights.
            continue;
        }
        if is_pickle {
            match zip::read_entry(src, e, ctx.opts.max_pickle_bytes) {
                Ok(data) => {
                    let crc = zip::crc32_update(0, &data);
                    if crc != e.crc32 {
                        ctx.add(
                            Level::Unsafe,
                            "zip-crc-mismatch",
                            format!("CRC-32 of {} is 0x{crc:08x} but the archive says 0x{:08x}: Python's zipfile refuses it, torch loads it", e.name, e.crc32),
                            Some(&member),
                            Some(e.header_offset),
                            None,
                            None,
                        );
                    }
                    analyze_pickle(ctx, &data, 0, &member, depth, Level::Malformed);
                }
                Err(err) => ctx.add(
                    Level::Malformed,
                    "bad-member",
                    err.to_string(),
                    Some(&member),
                    Some(e.header_offset),
                    None,
                    None,
                ),
            }
            continue;
        }
        if e.name.ends_with(".npy") {
            match zip::read_entry(src, e, ctx.opts.max_pickle_bytes) {
                Ok(data) => scan_npy(ctx, &data, Some(&member), depth),
                Err(err) => ctx.add(
                    Level::Malformed,
                    "bad-member",
                    err.to_string(),
                    Some(&member),
                    Some(e.header_offset),
                    None,
                    None,
                ),
            }
            continue;
        }
        // Anything else: look at its content; nested archives and pickles are scanned.
        if e.size == 0 || depth >= ctx.opts.max_depth {
            continue;
        }
        if e.compressed_size <= ctx.opts.crc_check_max {
            check_crc(ctx, src, e, &member, Level::Info);
        }
        let head = match e.method {
            0 => {
                let mut h = vec![0u8; e.compressed_size.min(1024) as usize];
                if src.read_at(e.data_offset, &mut h).is_err() {
                    continue;
                }
                h
            }
            _ => match zip::read_entry(src, e, ctx.opts.max_pickle_bytes) {
                Ok(d) => d,
                Err(_) => continue,
            },
        };
        let f = format::sniff(&head, e.size);
        let interesting = matches!(
            f,
            Format::Zip
                | Format::SevenZip
                | Format::Gzip
                | Format::Npy
                | Format::Tar
                | Format::TorchLegacy
                | Format::Compressed
        ) || (f == Format::Pickle && pickle::looks_like_pickle(&head));
        if interesting {
            ctx.add(
                Level::Info,
                "nested-archive",
                format!("member {} is itself a {} file: scanned", e.name, f.as_str()),
                Some(&member),
                Some(e.header_offset),
                None,
                None,
            );
            if e.method == 0 {
                let sub = SubSource {
                    src,
                    start: e.data_offset,
                    len: e
                        .compressed_size
                        .min(src.len().saturating_sub(e.data_offset)),
                };
                scan_container(ctx, &sub, Some(&member), depth + 1);
            } else if let Ok(d) = zip::read_entry(src, e, ctx.opts.max_pickle_bytes) {
                scan_container(ctx, &d, Some(&member), depth + 1);
            }
        }
    }
    ctx.torchscript = was_ts;
    fmt
}

fn check_crc(ctx: &mut Ctx, src: &dyn Source, e: &zip::Entry, member: &str, level: Level) {
    if let Ok(crc) = zip::entry_crc(src, e) {
        if crc != e.crc32 {
            ctx.add(
                level,
                "zip-crc-mismatch",
                format!(
                    "CRC-32 of {} is 0x{crc:08x} but the archive says 0x{:08x}",
                    e.name, e.crc32
                ),
                Some(member),
                Some(e.header_offset),
                None,
                None,
            );
        }
    }
}

/// A window of another source.
pub struct SubSource<'a, S: Source + ?Sized> {
    /// The parent.
    pub src: &'a S,
    /// Start in the parent.
    pub start: u64,
    /// Length.
    pub len: u64,
}

impl<S: Source + ?Sized> Source for SubSource<'_, S> {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        if offset.saturating_add(buf.len() as u64) > self.len {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.src.read_at(self.start + offset, buf)
    }
}

fn scan_npy(ctx: &mut Ctx, data: &[u8], label: Option<&str>, depth: u32) {
    let member = label.unwrap_or("npy").to_string();
    match format::npy_header(data) {
        Ok(h) => {
            if format::npy_has_objects(&h.descr) {
                ctx.add(
                    Level::Unsafe,
                    "npy-object-array",
                    format!("object array (dtype {}): numpy.load(allow_pickle=True) unpickles its content", h.descr),
                    Some(&member),
                    Some(h.data_offset as u64),
                    None,
                    None,
                );
                if let Some(p) = data.get(h.data_offset..) {
                    analyze_pickle(
                        ctx,
                        p,
                        h.data_offset as u64,
                        &member,
                        depth,
                        Level::Malformed,
                    );
                }
            }
        }
        Err(e) => ctx.add(
            Level::Malformed,
            "bad-npy",
            e,
            Some(&member),
            Some(0),
            None,
            None,
        ),
    }
}

fn scan_tar(ctx: &mut Ctx, src: &dyn Source, label: Option<&str>, depth: u32) -> Format {
    let data = match read_prefix(src, ctx.opts.max_pickle_bytes) {
        Ok(d) => d,
        Err(e) => {
            ctx.add(
                Level::Malformed,
                "io-error",
                e.to_string(),
                label,
                None,
                None,
                None,
            );
            return Format::Tar;
        }
    };
    let members = match format::tar_members(&data) {
        Ok(m) => m,
        Err(e) => {
            ctx.add(Level::Malformed, "bad-tar", e, label, None, None, None);
            return Format::Tar;
        }
    };
    let torch =
        members.iter().any(|m| m.name == "pickle") && members.iter().any(|m| m.name == "sys_info");
    if torch {
        ctx.add(
            Level::Unsafe,
            "legacy-tar-format",
            "pre-1.0 torch tar format: torch.load reads it only with weights_only=False (all its pickles were scanned)".into(),
            label,
            Some(0),
            None,
            None,
        );
    }
    for m in &members {
        let body = &data[m.offset as usize..(m.offset + m.size) as usize];
        let member = join(label, &m.name);
        if torch && ["sys_info", "pickle", "storages", "tensors"].contains(&m.name.as_str()) {
            // `storages` and `tensors` interleave pickles with raw data; read the pickles we can.
            let mut pos = 0usize;
            let mut n = 0;
            while pos < body.len() && n < 100_000 {
                let lvl = if n == 0 {
                    Level::Malformed
                } else {
                    Level::Info
                };
                let s = analyze_pickle(ctx, &body[pos..], pos as u64, &member, depth, lvl);
                if s.error {
                    break;
                }
                pos += s.end;
                n += 1;
                if m.name == "sys_info" || m.name == "pickle" {
                    break;
                }
                // Skip raw data after a storage/tensor header pickle when we can find the next
                // pickle: search for the next PROTO.
                match memchr::memchr(pickle::opcodes::PROTO, &body[pos..]) {
                    Some(i) => pos += i,
                    None => break,
                }
            }
        } else if depth < ctx.opts.max_depth && m.size > 0 {
            scan_container(ctx, &body, Some(&member), depth + 1);
        }
    }
    if torch {
        Format::TorchTar
    } else {
        Format::Tar
    }
}

/// Look for binary pickles anywhere in the data (archives we cannot open, unknown formats).
/// Reports only names outside the allowlist; returns true when something was found.
fn embedded_search(ctx: &mut Ctx, src: &dyn Source, label: Option<&str>, depth: u32) -> bool {
    let Ok(data) = read_prefix(src, 64 << 20) else {
        return false;
    };
    let mut found = false;
    let mut tried = 0;
    let limits = Limits {
        max_ops: 1_000_000,
        ..ctx.opts.limits
    };
    for pos in memchr::memchr_iter(pickle::opcodes::PROTO, &data) {
        if tried >= 2_000 {
            break;
        }
        if !pickle::looks_like_pickle(&data[pos..]) {
            continue;
        }
        tried += 1;
        let mut m = Machine::new(&data[pos..], pos as u64, limits);
        let out = m.run();
        let bad: Vec<_> = m
            .globals
            .iter()
            .filter(|g| g.module != "?" && policy::judge(&g.module, &g.name).level > Level::Info)
            .cloned()
            .collect();
        if bad.is_empty() || (out.error.is_some() && m.globals.is_empty()) {
            continue;
        }
        found = true;
        let member = join(label, &format!("embedded@{pos}"));
        let _ = depth;
        for g in bad {
            let j = policy::judge(&g.module, &g.name);
            let code = if j.level == Level::Dangerous {
                "dangerous-global"
            } else {
                "unsafe-global"
            };
            let q = g.qualified();
            if ctx.seen.insert(q.clone()) {
                ctx.globals.push(q.clone());
            }
            ctx.add(
                j.level,
                code,
                format!("embedded pickle: {}", j.reason),
                Some(&member),
                Some(g.offset),
                Some(g.opcode),
                Some(q),
            );
        }
    }
    found
}

/// File names a directory walk treats as checkpoints even without a strong magic number.
pub const CHECKPOINT_EXTENSIONS: &[&str] = &[
    "pt",
    "pth",
    "bin",
    "ckpt",
    "pkl",
    "pickle",
    "npy",
    "npz",
    "safetensors",
    "tar",
    "joblib",
    "dat",
    "data",
    "model",
    "h5",
    "7z",
    "gz",
    "mar",
    "pt2",
    "onnx",
    "jit",
];

/// True when a directory walk should scan this file: a checkpoint extension, or content that
/// starts like a binary pickle, a torch zip, npy, safetensors or 7z.
pub fn is_candidate(path: &Path) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase());
    if ext
        .as_deref()
        .is_some_and(|e| CHECKPOINT_EXTENSIONS.contains(&e))
    {
        return true;
    }
    if ext.as_deref().is_some_and(|e| {
        [
            "py", "md", "txt", "json", "yaml", "yml", "toml", "cfg", "ini", "rs", "c", "h", "cpp",
            "js", "ts", "html", "css", "sh", "ipynb", "lock",
        ]
        .contains(&e)
    }) {
        return false;
    }
    let mut head = [0u8; 16];
    let n = match std::fs::File::open(path).and_then(|mut f| {
        use std::io::Read;
        f.read(&mut head)
    }) {
        Ok(n) => n,
        Err(_) => return false,
    };
    let h = &head[..n];
    pickle::looks_like_pickle(h)
        || h.starts_with(b"\x93NUMPY")
        || h.starts_with(b"7z\xbc\xaf\x27\x1c")
}

/// Expand files and directories (recursively, sorted) into the files to scan.
pub fn collect_files(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out, 0);
        } else {
            out.push(p.clone());
        }
    }
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>, depth: u32) {
    if depth > 64 {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            let name = e.file_name();
            let n = name.to_string_lossy();
            if n == ".git" || n == "node_modules" || n == "__pycache__" {
                continue;
            }
            walk(&p, out, depth + 1);
        } else if ft.is_file() && is_candidate(&p) {
            out.push(p);
        }
    }
}

/// Scan many files in parallel, results in input order.
pub fn scan_many(files: &[PathBuf], opts: &ScanOptions) -> Vec<ScanReport> {
    scan_many_with_progress(files, opts, &|| {})
}

/// [`scan_many`], calling `done()` after each file.
pub fn scan_many_with_progress(
    files: &[PathBuf],
    opts: &ScanOptions,
    done: &(dyn Fn() + Sync),
) -> Vec<ScanReport> {
    use rayon::prelude::*;
    files
        .par_iter()
        .map(|f| {
            let r = scan_path_with(f, opts);
            done();
            r
        })
        .collect()
}

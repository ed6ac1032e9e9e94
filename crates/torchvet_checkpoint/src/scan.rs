//! Scan verdicts: what torch (or numpy, or pickle) would execute when loading a file.
//!
//! Everything is read as a stream where the format allows it: pickles (raw, legacy, zip members,
//! npy object arrays, tar members) run on the symbolic machine through a bounded window, and
//! compressed payloads (deflate, gzip, bzip2, xz, zstd, 7z) are inflated only as far as the
//! machine reads. Memory therefore follows the machine's own state, not the size of the file, and
//! a bomb that fails at its first byte costs one inflated chunk.

use crate::format::{self, Format};
use crate::payloads;
use crate::pickle::{self, Input, Limits, Machine, Value};
use crate::policy;
use crate::zip::{self, Source, ZipArchive};
use crate::{Finding, Level, ScanReport, Verdict};
use rustc_hash::FxHashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

pub use crate::walk::{collect_files, walk, SkipCounts, Walk, WalkOptions};

/// Scanner settings.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// Most bytes decompressed from one member or stream (bomb limit; nothing is held in memory
    /// for it: the machine reads through a window).
    pub max_pickle_bytes: u64,
    /// Nested archives that need random access (a zip or 7z inside a compressed member) are held
    /// in memory up to this size; larger ones are reported as not inspected.
    pub max_nested_bytes: u64,
    /// Verify the CRC-32 of every zip member (default: only pickle members, whose CRC decides
    /// which loaders accept them).
    pub strict: bool,
    /// Pickle machine limits.
    pub limits: Limits,
    /// Maximum nesting of containers and nested pickles.
    pub max_depth: u32,
    /// Judge pickles held in memory with the pickle machine's value-free first pass when it can
    /// prove the report (`pickle::fast`); false runs the full machine on every pickle (the
    /// equivalence tests compare both).
    pub first_pass: bool,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            max_pickle_bytes: 1 << 30,
            max_nested_bytes: 64 << 20,
            strict: false,
            limits: Limits::scan(),
            max_depth: 4,
            first_pass: true,
        }
    }
}

/// Bytes of a pickle member whose CRC is still checked when the machine stopped early (reading
/// the rest only for the CRC).
const CRC_DRAIN_MAX: u64 = 16 << 20;

/// Bytes after a pickle error searched for dangerous names.
const SWEEP_BYTES: usize = 64 << 10;

thread_local! {
    /// Judgements of names already seen on this thread ([`policy::judge`] is a pure function of
    /// the name).
    static JUDGED: std::cell::RefCell<rustc_hash::FxHashMap<String, policy::Judgement>> =
        std::cell::RefCell::new(rustc_hash::FxHashMap::default());
}

pub(crate) struct Ctx<'o> {
    pub(crate) opts: &'o ScanOptions,
    pub(crate) findings: Vec<Finding>,
    pub(crate) globals: Vec<String>,
    pub(crate) seen: FxHashSet<String>,
    torchscript: bool,
    /// The next pickle run should collect its storage ids (legacy object pickle).
    want_storages: bool,
    /// Judgements of the names seen so far in this file.
    judged: rustc_hash::FxHashMap<String, policy::Judgement>,
}

impl Ctx<'_> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add(
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

    /// [`policy::judge`], once per name and file, and once per name and thread for the common
    /// names (a directory of checkpoints imports the same few dozen names in every file).
    fn judge(&mut self, q: &str, module: &str, name: &str) -> policy::Judgement {
        if let Some(j) = self.judged.get(q) {
            return j.clone();
        }
        let j = JUDGED.with(|cache| {
            let mut cache = cache.borrow_mut();
            if let Some(j) = cache.get(q) {
                return j.clone();
            }
            let j = policy::judge(module, name);
            if cache.len() < 1024 {
                cache.insert(q.to_string(), j.clone());
            }
            j
        });
        if self.judged.len() < 4096 {
            self.judged.insert(q.to_string(), j.clone());
        }
        j
    }

    fn note_global(&mut self, q: &str) {
        if self.globals.len() < 10_000 && !self.seen.contains(q) {
            self.seen.insert(q.to_string());
            self.globals.push(q.to_string());
        }
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
    scan_bytes_with(name, data, &ScanOptions::default())
}

/// [`scan_bytes`] with options.
pub fn scan_bytes_with(name: &str, data: &[u8], opts: &ScanOptions) -> ScanReport {
    let p = PathBuf::from(name);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        scan_source(p.clone(), &data, opts)
    }));
    r.unwrap_or_else(|_| ScanReport::error(p, "internal error while scanning".into()))
}

fn scan_source(path: PathBuf, src: &dyn Source, opts: &ScanOptions) -> ScanReport {
    let mut ctx = Ctx {
        opts,
        findings: Vec::new(),
        globals: Vec::new(),
        seen: FxHashSet::default(),
        torchscript: false,
        want_storages: false,
        judged: rustc_hash::FxHashMap::default(),
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

/// Read up to `n` bytes from a stream (fewer at its end). A read error after some data keeps
/// the data: loaders act on what they read before a stream turns out to be corrupt (a gzip
/// CRC is checked only at its end).
fn read_upto(r: &mut dyn Read, n: usize) -> std::io::Result<Vec<u8>> {
    let mut v = vec![0u8; n.min(1 << 16)];
    let mut got = 0;
    while got < n {
        if got == v.len() {
            v.resize((v.len() * 2).min(n), 0);
        }
        match r.read(&mut v[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if got == 0 => return Err(e),
            Err(_) => break,
        }
    }
    v.truncate(got);
    Ok(v)
}

/// Scan a container held by a random-access source.
fn scan_container(ctx: &mut Ctx, src: &dyn Source, label: Option<&str>, depth: u32) -> Format {
    let len = src.len();
    let mut head = vec![0u8; len.min(1024) as usize];
    if let Err(e) = src.read_at(0, &mut head) {
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
    let fmt = format::sniff(&head, len);
    let whole = || Box::new(zip::EntryReader::new(src, 0, len)) as Box<dyn Read + '_>;
    match fmt {
        Format::Zip => scan_zip(ctx, src, label, depth),
        Format::SevenZip => scan_7z(ctx, src, label, depth),
        Format::Gzip | Format::Compressed => {
            scan_compressed(ctx, whole(), &head, label, depth);
            fmt
        }
        Format::Npy => {
            scan_npy_stream(ctx, whole(), label, depth);
            fmt
        }
        Format::Tar => scan_tar_stream(ctx, whole(), label, depth),
        Format::Safetensors => {
            scan_safetensors(ctx, src, label);
            fmt
        }
        Format::Pickle | Format::TorchLegacy => {
            let inp = match src.as_slice() {
                Some(s) => Input::from_slice(s, 0),
                None => Input::from_reader(zip::EntryReader::new(src, 0, len), 0, Some(len)),
            };
            scan_pickle_stream(ctx, inp, Some(src), label, depth)
        }
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
            // A zip with something in front of it (self-extracting archives, polyglots): zip
            // readers find it from its end record, and so does this scan.
            if len > 22 {
                if let Ok(arch) = ZipArchive::open(src) {
                    if !arch.entries.is_empty() {
                        return scan_zip_archive(ctx, src, &arch, label, depth);
                    }
                }
            }
            let found = embedded_search(ctx, src, label, depth);
            if !found {
                ctx.add(
                    Level::Malformed,
                    "unknown-format",
                    "not a recognised checkpoint format (no zip, pickle, npy, safetensors, tar or compressed header)".into(),
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

/// Scan a container that can only be read front to back (a decompressed payload, an archive
/// member). Pickle-based formats are streamed; formats that need random access are held in
/// memory up to [`ScanOptions::max_nested_bytes`].
fn scan_stream(
    ctx: &mut Ctx,
    mut r: Box<dyn Read + '_>,
    size: Option<u64>,
    label: Option<&str>,
    depth: u32,
) -> Format {
    let head = match read_upto(&mut r, 1024) {
        Ok(h) => h,
        Err(e) => {
            ctx.add(
                Level::Malformed,
                "bad-stream",
                format!("cannot be read: {e}"),
                label,
                Some(0),
                None,
                None,
            );
            return Format::Unknown;
        }
    };
    let len_hint = size.unwrap_or(if head.len() < 1024 {
        head.len() as u64
    } else {
        u64::MAX
    });
    let fmt = format::sniff(&head, len_hint);
    let chained: Box<dyn Read + '_> = Box::new(std::io::Cursor::new(head.clone()).chain(r));
    match fmt {
        Format::Pickle | Format::TorchLegacy => {
            let inp = Input::from_reader(chained, 0, size);
            scan_pickle_stream(ctx, inp, None, label, depth)
        }
        Format::Gzip | Format::Compressed => {
            scan_compressed(ctx, chained, &head, label, depth);
            fmt
        }
        Format::Tar => scan_tar_stream(ctx, chained, label, depth),
        Format::Npy => {
            scan_npy_stream(ctx, chained, label, depth);
            fmt
        }
        Format::Empty => {
            ctx.add(
                Level::Malformed,
                "empty",
                "empty member".into(),
                label,
                None,
                None,
                None,
            );
            fmt
        }
        _ => {
            // Zip, 7z, safetensors, unknown: need random access.
            let cap = ctx.opts.max_nested_bytes;
            let mut chained = chained;
            match read_upto(&mut chained, cap.saturating_add(1) as usize) {
                Ok(data) if data.len() as u64 > cap => {
                    ctx.add(
                        Level::Unsafe,
                        "nested-too-large",
                        format!("a nested {} of more than {cap} bytes inside a compressed member: not inspected", fmt.as_str()),
                        label,
                        Some(0),
                        None,
                        None,
                    );
                    fmt
                }
                Ok(data) => scan_container(ctx, &data, label, depth),
                Err(e) => {
                    ctx.add(
                        Level::Malformed,
                        "bad-stream",
                        format!("cannot be read: {e}"),
                        label,
                        Some(0),
                        None,
                        None,
                    );
                    fmt
                }
            }
        }
    }
}

/// gzip, bzip2, xz or zstd: decompress as a stream and scan what is inside.
fn scan_compressed(
    ctx: &mut Ctx,
    r: Box<dyn Read + '_>,
    head: &[u8],
    label: Option<&str>,
    depth: u32,
) {
    let (kind, dec): (&str, Box<dyn Read + '_>) = if head.starts_with(&[0x1f, 0x8b]) {
        ("gzip", Box::new(flate2::read::MultiGzDecoder::new(r)))
    } else if head.starts_with(b"BZh") {
        ("bzip2", Box::new(bzip2::read::MultiBzDecoder::new(r)))
    } else if head.starts_with(b"\xfd7zXZ\x00") {
        ("xz", Box::new(lzma_rust2::XzReader::new(r, true)))
    } else {
        match ruzstd::decoding::StreamingDecoder::new(r) {
            Ok(d) => ("zstd", Box::new(d)),
            Err(e) => {
                ctx.add(
                    Level::Malformed,
                    "bad-compressed",
                    format!("zstd stream cannot be read: {e}"),
                    label,
                    Some(0),
                    None,
                    None,
                );
                return;
            }
        }
    };
    if depth >= ctx.opts.max_depth {
        ctx.add(
            Level::Unsafe,
            "nesting-too-deep",
            format!("{kind} payload nested too deep: not inspected"),
            label,
            Some(0),
            None,
            None,
        );
        return;
    }
    ctx.add(
        Level::Info,
        "compressed-stream",
        format!(
            "{kind} stream: unpacked (streaming, at most {} bytes) and scanned",
            ctx.opts.max_pickle_bytes
        ),
        label,
        Some(0),
        None,
        None,
    );
    let l = join(label, &format!("un{kind}"));
    let limited = Box::new(dec.take(ctx.opts.max_pickle_bytes));
    scan_stream(ctx, limited, None, Some(&l), depth + 1);
}

/// 7z: every member is unpacked (LZMA/LZMA2/BZip2/...) as a stream and scanned.
fn scan_7z(ctx: &mut Ctx, src: &dyn Source, label: Option<&str>, depth: u32) -> Format {
    let reader = zip::EntryReader::new(src, 0, src.len());
    let mut ar = match sevenz_rust2::ArchiveReader::new(reader, sevenz_rust2::Password::empty()) {
        Ok(a) => a,
        Err(e) => {
            ctx.add(
                Level::Malformed,
                "bad-7z",
                format!("7z archive cannot be read: {e}"),
                label,
                Some(0),
                None,
                None,
            );
            embedded_search(ctx, src, label, depth);
            return Format::SevenZip;
        }
    };
    ctx.add(
        Level::Info,
        "7z-archive",
        "7z archive: torch.load cannot read it directly; every member was unpacked and scanned"
            .into(),
        label,
        Some(0),
        None,
        None,
    );
    if depth >= ctx.opts.max_depth {
        return Format::SevenZip;
    }
    let max = ctx.opts.max_pickle_bytes;
    let total = ar.archive().files.len();
    let mut count = 0usize;
    let mut abandoned = false;
    let res = ar.for_each_entries_with_decision(|entry, r| {
        use sevenz_rust2::EntryDecision;
        count += 1;
        if count > 10_000 {
            return Ok(EntryDecision::Stop);
        }
        if entry.is_directory() {
            return Ok(EntryDecision::Continue);
        }
        let member = join(label, entry.name());
        let size = entry.size();
        let mut counted = Counting { inner: r, n: 0 };
        {
            let limited: Box<dyn Read + '_> = Box::new((&mut counted).take(max));
            scan_stream(ctx, limited, Some(size.min(max)), Some(&member), depth + 1);
        }
        // The library drains what the scan did not read; never a bomb's worth.
        if size.saturating_sub(counted.n) > CRC_DRAIN_MAX {
            abandoned = true;
            return Ok(EntryDecision::SkipBlock);
        }
        Ok(EntryDecision::Continue)
    });
    if let Err(e) = res {
        ctx.add(
            Level::Malformed,
            "bad-7z",
            format!("7z member cannot be unpacked: {e}"),
            label,
            Some(0),
            None,
            None,
        );
    }
    if abandoned && count < total {
        ctx.add(
            Level::Unsafe,
            "7z-members-not-scanned",
            format!("{} of {total} members were not scanned: they share a compressed block with a member whose scan stopped early, and unpacking past it would cost more than the bomb limit", total - count),
            label,
            Some(0),
            None,
            None,
        );
    }
    Format::SevenZip
}

fn scan_safetensors(ctx: &mut Ctx, src: &dyn Source, label: Option<&str>) {
    match crate::safetensors::SafeFile::open_source(src) {
        Ok(f) => {
            for (k, v) in &f.metadata {
                for (code, why) in payloads::metadata_findings(k, v) {
                    ctx.add(
                        Level::Unsafe,
                        code,
                        format!("safetensors __metadata__[{k:?}] {why}: safetensors never runs it, but whatever reads this metadata might"),
                        label,
                        Some(8),
                        None,
                        None,
                    );
                }
            }
        }
        Err(e) => ctx.add(
            Level::Malformed,
            "bad-safetensors",
            e.to_string(),
            label,
            Some(0),
            None,
            None,
        ),
    }
}

/// What one pickle run left behind that callers need.
pub(crate) struct PickleSummary {
    pub end: usize,
    pub error: bool,
    pub root_is_legacy_magic: bool,
    /// Persistent storage ids `(key, storage type)` (legacy object pickle).
    pub storages: Vec<(String, String)>,
    /// The root, when it is a list of strings (legacy storage keys).
    pub root_strings: Vec<String>,
    /// Qualified names imported.
    pub names: Vec<String>,
}

/// Run one pickle from the input's position and turn what it does into findings.
fn analyze_input<'a>(
    ctx: &mut Ctx,
    inp: Input<'a>,
    member: &str,
    depth: u32,
    error_level: Level,
    fast: bool,
) -> (PickleSummary, Input<'a>) {
    // The first pass: a pickle in memory whose report it can prove is judged from its
    // imported names alone (see `pickle::fast`). Not for the legacy format's pickles, whose
    // storages and keys are read from the values.
    if fast && ctx.opts.first_pass && !ctx.want_storages {
        if let Some(done) = inp
            .rest_slice()
            .and_then(|(data, abs0)| pickle::fast::run(data, abs0, ctx.opts.limits))
        {
            let mut inp = inp;
            inp.skip(done.end as u64);
            let names = judge_globals(ctx, &done.globals, member);
            let summary = PickleSummary {
                end: done.end,
                error: false,
                root_is_legacy_magic: false,
                storages: Vec::new(),
                root_strings: Vec::new(),
                names,
            };
            return (summary, inp);
        }
    }
    let mut m = Machine::with_input(inp, ctx.opts.limits);
    let out = m.run();
    let names = judge_globals(ctx, &m.globals, member);
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
    payloads::check_values(ctx, &m, member);
    if let Some(e) = &out.error {
        let suspicious = m
            .globals
            .iter()
            .any(|g| ctx.judge(&g.qualified(), &g.module, &g.name).level > Level::Info);
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
        // A dangerous name anywhere in the file makes it dangerous, even past the point where
        // this reader gave up (other unpicklers may disagree on where the pickle goes wrong).
        let at = m.input().position();
        let abs = m.input().abs(at);
        let rest = m.input().peek_upto(SWEEP_BYTES);
        for (off, module, name, opcode) in payloads::sweep_names(rest) {
            let j = policy::judge(&module, &name);
            if j.level == Level::Dangerous {
                let q = pickle::qualified(&module, &name);
                ctx.note_global(&q);
                ctx.add(
                    Level::Dangerous,
                    "dangerous-name-after-error",
                    format!("after the point where the pickle stops parsing, the bytes spell an import of {q}: {}", j.reason),
                    Some(member),
                    Some(abs + off as u64),
                    Some(opcode),
                    Some(q),
                );
            }
        }
    }
    let root_is_legacy_magic = out.root.is_some_and(|r| match m.get(r) {
        Value::BigInt(b) => b.as_ref() == format::LEGACY_MAGIC_LE,
        _ => false,
    });
    let storages = if std::mem::take(&mut ctx.want_storages) {
        storage_ids(&m)
    } else {
        Vec::new()
    };
    let root_strings = out
        .root
        .map(|r| match m.get(r) {
            Value::List(v) | Value::Tuple(v) => v
                .iter()
                .filter_map(|&k| match m.get(k) {
                    Value::Str(s) => Some(s.to_string()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        })
        .unwrap_or_default();
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
    let summary = PickleSummary {
        end: out.end,
        error: out.error.is_some(),
        root_is_legacy_magic,
        storages,
        root_strings,
        names,
    };
    (summary, m.into_input())
}

/// Record the names a pickle imports and report those outside the allowlist; returns the first
/// 64 distinct qualified names.
fn judge_globals(ctx: &mut Ctx, globals: &[pickle::GlobalUse], member: &str) -> Vec<String> {
    let mut names = Vec::new();
    for g in globals {
        let q = g.qualified();
        ctx.note_global(&q);
        if names.len() < 64 && !names.contains(&q) {
            names.push(q.clone());
        }
        if g.module == "?" {
            continue; // already reported as a computed STACK_GLOBAL
        }
        if ctx.torchscript && (g.module.starts_with("__torch__") || g.module == "torch.jit._pickle")
        {
            continue; // resolved by TorchScript's C++ type resolver, never imported from Python
        }
        let j = ctx.judge(&q, &g.module, &g.name);
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
    names
}

/// `(key, storage type)` of every `("storage", type, key, ...)` persistent id.
fn storage_ids(m: &Machine) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for v in &m.nodes {
        let Value::Persistent(pid) = v else { continue };
        let Value::Tuple(items) = m.get(*pid) else {
            continue;
        };
        if items.len() < 3 || !matches!(m.get(items[0]), Value::Str(s) if &**s == "storage") {
            continue;
        }
        let ty = match m.get(items[1]) {
            Value::Global { index, .. } => m.global_name(*index).1.to_string(),
            Value::Str(s) => s.to_string(),
            _ => continue,
        };
        let key = match m.get(items[2]) {
            Value::Str(s) => s.to_string(),
            Value::Int(i) => i.to_string(),
            _ => continue,
        };
        out.push((key, ty));
    }
    out
}

/// `torch._tensor._rebuild_from_type_v2(func, ...)` calls `func`: it must be an allowlisted name.
fn check_trampolines(ctx: &mut Ctx, m: &Machine, member: &str) {
    // Only a call of an imported name can be one: without the import, no node to look at.
    if !m
        .globals
        .iter()
        .any(|g| g.module == "torch._tensor" && g.name == "_rebuild_from_type_v2")
    {
        return;
    }
    let mut reported = 0;
    for v in &m.nodes {
        let Value::Object(o) = v else { continue };
        let Some((module, name)) = m.global_of(o.callee) else {
            continue;
        };
        if !(module == "torch._tensor" && name == "_rebuild_from_type_v2") {
            continue;
        }
        let func = match m.get(o.args) {
            Value::Tuple(items) => items.first().copied(),
            _ => None,
        };
        let ok = func.is_some_and(|f| match m.global_of(f) {
            Some((module, name)) => policy::is_allowed(&crate::pickle::qualified(module, name)),
            None => false,
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

/// Read the pickles at the start of a stream: one raw pickle (plus any stacked behind it), or
/// the five pickles of torch's legacy format followed by its storages.
fn scan_pickle_stream(
    ctx: &mut Ctx,
    inp: Input<'_>,
    src: Option<&dyn Source>,
    label: Option<&str>,
    depth: u32,
) -> Format {
    let mut inp = inp;
    let mut pos = 0usize;
    let mut legacy = false;
    let mut count = 0;
    let mut storages = Vec::new();
    let mut keys = Vec::new();
    let mut complete = false;
    let names = ["magic", "protocol", "sys_info", "object", "storage_keys"];
    let sniffed_legacy = {
        let h = inp.peek_upto(64);
        format::sniff(h, h.len() as u64) == Format::TorchLegacy
    };
    while count < 32 {
        if count > 0 {
            match inp.peek() {
                None => break,
                Some(b) if !(pickle::opcodes::is_opcode(b) || legacy && count < 5) => break,
                Some(_) => {}
            }
        }
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
        ctx.want_storages = legacy && count == 3;
        let (s, back) = analyze_input(ctx, inp, &member, depth, err_level, !legacy);
        inp = back;
        if count == 0 && s.root_is_legacy_magic {
            legacy = true;
        }
        if legacy && count == 3 {
            storages = s.storages;
        }
        if legacy && count == 4 {
            keys = s.root_strings;
        }
        count += 1;
        if s.error {
            break;
        }
        pos += s.end;
        if legacy && count == 5 {
            complete = true;
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
    if complete {
        legacy_storages(ctx, inp, src, pos as u64, &storages, &keys, label, depth);
    }
    // A zip glued behind a pickle (polyglot): scanners that read the zip miss the pickle.
    if let Some(src) = src {
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
    }
    if legacy {
        Format::TorchLegacy
    } else {
        Format::Pickle
    }
}

/// Walk the storages that follow torch's legacy pickles (each: int64 element count, then the
/// elements) and report whatever follows the last one: torch.load never reads it, so a pickle
/// hidden there only runs for a loader that looks for it.
#[allow(clippy::too_many_arguments)]
fn legacy_storages(
    ctx: &mut Ctx,
    mut inp: Input<'_>,
    src: Option<&dyn Source>,
    start: u64,
    storages: &[(String, String)],
    keys: &[String],
    label: Option<&str>,
    depth: u32,
) {
    let mut sizes: rustc_hash::FxHashMap<&str, u64> = rustc_hash::FxHashMap::default();
    for (k, t) in storages {
        if let Some(el) = crate::model::storage_dtype(t).and_then(crate::model::element_size) {
            sizes.entry(k.as_str()).or_insert(el);
        }
    }
    // With a random-access source the storages are skipped by offset (no tensor byte is read).
    let mut p = start;
    for k in keys {
        let Some(&el) = sizes.get(k.as_str()) else {
            ctx.add(
                Level::Info,
                "legacy-storage-unknown",
                format!("storage {k}: unknown element size; the data after it cannot be located"),
                label,
                Some(p),
                None,
                None,
            );
            return;
        };
        let mut nb = [0u8; 8];
        let ok = match src {
            Some(s) => s.read_at(p, &mut nb).is_ok(),
            None => match inp.take(8) {
                Some(b) => {
                    nb.copy_from_slice(b);
                    true
                }
                None => false,
            },
        };
        if !ok {
            ctx.add(
                Level::Malformed,
                "legacy-storage-truncated",
                format!("storage {k}: the file ends before its data"),
                label,
                Some(p),
                None,
                None,
            );
            return;
        }
        let numel = i64::from_le_bytes(nb);
        let len = (numel.max(0) as u64).saturating_mul(el);
        let fits = match src {
            Some(s) => p.saturating_add(8).saturating_add(len) <= s.len(),
            None => inp.skip(len),
        };
        if !fits {
            ctx.add(
                Level::Malformed,
                "legacy-storage-truncated",
                format!("storage {k}: {len} bytes run past the end of the file"),
                label,
                Some(p),
                None,
                None,
            );
            return;
        }
        p = p.saturating_add(8).saturating_add(len);
    }
    // What follows the last storage.
    let trailing: Option<Input<'_>> = match src {
        Some(s) if p < s.len() => Some(Input::from_reader(
            zip::EntryReader::new(s, p, s.len() - p),
            p,
            Some(s.len() - p),
        )),
        Some(_) => None,
        None => {
            if inp.peek().is_some() {
                let pos = inp.position();
                let _ = pos;
                Some(inp)
            } else {
                None
            }
        }
    };
    let Some(mut t) = trailing else { return };
    let extra = src.map(|s| s.len() - p);
    let mut names: Vec<String> = Vec::new();
    let mut n = 0;
    while n < 8 {
        match t.peek() {
            Some(b) if pickle::opcodes::is_opcode(b) => {}
            _ => break,
        }
        let member = join(label, &format!("trailing[{n}]"));
        let (s, back) = analyze_input(ctx, t, &member, depth, Level::Info, true);
        t = back;
        for q in s.names {
            if !names.contains(&q) {
                names.push(q);
            }
        }
        n += 1;
        if s.error {
            break;
        }
    }
    let what = if names.is_empty() {
        "no pickle that imports anything".to_string()
    } else {
        format!("a pickle importing {}", names.join(", "))
    };
    let size = match extra {
        Some(e) => format!("{e} bytes"),
        None => "data".to_string(),
    };
    ctx.add(
        Level::Unsafe,
        "trailing-data",
        format!("{size} after the last storage of this legacy checkpoint (torch.load never reads them): {what}"),
        label,
        Some(p),
        None,
        names.first().cloned(),
    );
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

/// A reader that hashes what passes through it.
struct CrcTap<R> {
    inner: R,
    state: std::rc::Rc<std::cell::RefCell<(crc32fast::Hasher, u64)>>,
}

impl<R: Read> Read for CrcTap<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut s = self.state.borrow_mut();
        s.0.update(&buf[..n]);
        s.1 += n as u64;
        Ok(n)
    }
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
    let max = ctx.opts.max_pickle_bytes;
    for e in &arch.entries {
        let rel = arch.relative(e);
        let is_pickle = e.name.ends_with(".pkl") || e.name.ends_with(".debug_pkl");
        if (has_data || is_ts) && is_data_record(rel) {
            // Raw tensor bytes are never unpickled: their CRC is not a security question and
            // reading them would make scan time depend on the size of the weights.
            if ctx.opts.strict {
                check_crc(ctx, src, e, &join(label, &e.name), Level::Info);
            }
            continue;
        }
        let member = join(label, &e.name);
        if is_pickle {
            scan_zip_pickle(ctx, src, e, &member, depth);
            continue;
        }
        if ctx.opts.strict {
            check_crc(ctx, src, e, &member, Level::Info);
        }
        if e.name.ends_with(".npy") {
            match zip::entry_reader(src, e, max) {
                Ok(r) => scan_npy_stream(ctx, r, Some(&member), depth),
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
        let head = match zip::entry_reader(src, e, 1024)
            .and_then(|mut r| read_upto(&mut r, 1024).map_err(zip::ZipError::Io))
        {
            Ok(h) => h,
            Err(_) => continue,
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
        ) || (f == Format::Pickle && crate::walk::probe_pickle(&head, e.size));
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
            } else if let Ok(r) = zip::entry_reader(src, e, max) {
                scan_stream(ctx, r, Some(e.size.min(max)), Some(&member), depth + 1);
            }
        }
    }
    ctx.torchscript = was_ts;
    fmt
}

/// A pickle member of a zip: streamed through the machine while its CRC is computed on the way
/// (read in place when the member is stored and the archive is in memory).
fn scan_zip_pickle(ctx: &mut Ctx, src: &dyn Source, e: &zip::Entry, member: &str, depth: u32) {
    if e.method == 0 && e.size == e.compressed_size {
        let bytes = src.as_slice().and_then(|s| {
            let a = usize::try_from(e.data_offset).ok()?;
            let b = usize::try_from(e.data_offset.checked_add(e.size)?).ok()?;
            s.get(a..b)
        });
        if let Some(bytes) = bytes {
            analyze_input(
                ctx,
                Input::from_slice(bytes, 0),
                member,
                depth,
                Level::Malformed,
                true,
            );
            let crc = zip::crc32_update(0, bytes);
            if crc != e.crc32 {
                ctx.add(
                    Level::Unsafe,
                    "zip-crc-mismatch",
                    format!("CRC-32 of {} is 0x{crc:08x} but the archive says 0x{:08x}: Python's zipfile refuses it, torch loads it", e.name, e.crc32),
                    Some(member),
                    Some(e.header_offset),
                    None,
                    None,
                );
            }
            return;
        }
    }
    let r = match zip::entry_reader(src, e, ctx.opts.max_pickle_bytes) {
        Ok(r) => r,
        Err(err) => {
            ctx.add(
                Level::Malformed,
                "bad-member",
                err.to_string(),
                Some(member),
                Some(e.header_offset),
                None,
                None,
            );
            return;
        }
    };
    let state = std::rc::Rc::new(std::cell::RefCell::new((crc32fast::Hasher::new(), 0u64)));
    let tap = CrcTap {
        inner: r,
        state: state.clone(),
    };
    let size = (e.method == 0).then_some(e.size.min(e.compressed_size));
    let inp = Input::from_reader(tap, 0, size);
    let (_, mut inp) = analyze_input(ctx, inp, member, depth, Level::Malformed, true);
    // The CRC needs every byte: read the rest when it is small (or --strict), never for a bomb.
    let read = state.borrow().1;
    let rest = e.size.saturating_sub(read);
    if rest > 0 && (ctx.opts.strict || rest <= CRC_DRAIN_MAX) {
        inp.skip(u64::MAX);
    }
    drop(inp);
    let (hasher, read) = {
        let s = state.borrow();
        (s.0.clone(), s.1)
    };
    if read >= e.size || rest == 0 {
        let crc = hasher.finalize();
        if crc != e.crc32 {
            ctx.add(
                Level::Unsafe,
                "zip-crc-mismatch",
                format!("CRC-32 of {} is 0x{crc:08x} but the archive says 0x{:08x}: Python's zipfile refuses it, torch loads it", e.name, e.crc32),
                Some(member),
                Some(e.header_offset),
                None,
                None,
            );
        }
    }
}

fn check_crc(ctx: &mut Ctx, src: &dyn Source, e: &zip::Entry, member: &str, level: Level) {
    if let Ok(crc) = zip::entry_crc_max(src, e, ctx.opts.max_pickle_bytes) {
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
    fn as_slice(&self) -> Option<&[u8]> {
        let s = self.src.as_slice()?;
        s.get(usize::try_from(self.start).ok()?..usize::try_from(self.start + self.len).ok()?)
    }
}

/// `.npy`: the header, then (object arrays only) the pickle numpy would load, streamed.
fn scan_npy_stream(ctx: &mut Ctx, mut r: Box<dyn Read + '_>, label: Option<&str>, depth: u32) {
    let member = label.unwrap_or("npy").to_string();
    let bad = |ctx: &mut Ctx, e: String| {
        ctx.add(
            Level::Malformed,
            "bad-npy",
            e,
            Some(&member),
            Some(0),
            None,
            None,
        )
    };
    let mut head = match read_upto(&mut r, 12) {
        Ok(h) => h,
        Err(e) => return bad(ctx, e.to_string()),
    };
    if head.len() < 10 || !head.starts_with(b"\x93NUMPY") {
        return bad(ctx, "not an npy file".into());
    }
    let (hlen, start) = if head[6] == 1 {
        (u16::from_le_bytes([head[8], head[9]]) as usize, 10usize)
    } else if head.len() >= 12 {
        (
            u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize,
            12,
        )
    } else {
        return bad(ctx, "npy header truncated".into());
    };
    if hlen > 1 << 20 {
        return bad(ctx, format!("npy header of {hlen} bytes"));
    }
    let want = (start + hlen).saturating_sub(head.len());
    match read_upto(&mut r, want) {
        Ok(more) => head.extend_from_slice(&more),
        Err(e) => return bad(ctx, e.to_string()),
    }
    // `head` may hold bytes past the header (a v1 header shorter than 2 bytes of the 12 read).
    let over = head.len().saturating_sub(start + hlen);
    let h = match format::npy_header(&head) {
        Ok(h) => h,
        Err(e) => return bad(ctx, e),
    };
    if !format::npy_has_objects(&h.descr) {
        return;
    }
    ctx.add(
        Level::Unsafe,
        "npy-object-array",
        format!(
            "object array (dtype {}): numpy.load(allow_pickle=True) unpickles its content",
            h.descr
        ),
        Some(&member),
        Some(h.data_offset as u64),
        None,
        None,
    );
    let tail = head[head.len() - over..].to_vec();
    let body = std::io::Cursor::new(tail).chain(r);
    let inp = Input::from_reader(body, h.data_offset as u64, None);
    analyze_input(ctx, inp, &member, depth, Level::Malformed, true);
}

/// Pre-1.0 torch tar format (`sys_info`, `pickle`, `storages`, `tensors`) and other tars, read
/// front to back: headers, then each member as a stream.
fn scan_tar_stream(
    ctx: &mut Ctx,
    r: Box<dyn Read + '_>,
    label: Option<&str>,
    depth: u32,
) -> Format {
    let mut r = Counting { inner: r, n: 0 };
    let mut seen_pickle = false;
    let mut seen_sysinfo = false;
    let mut members = 0usize;
    loop {
        let mut h = [0u8; 512];
        let at = r.n;
        match read_exact_or_eof(&mut r, &mut h) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                ctx.add(
                    Level::Malformed,
                    "bad-tar",
                    e.to_string(),
                    label,
                    Some(at),
                    None,
                    None,
                );
                break;
            }
        }
        if h.iter().all(|&b| b == 0) {
            break;
        }
        let Some(m) = format::tar_header(&h) else {
            ctx.add(
                Level::Malformed,
                "bad-tar",
                format!("invalid tar header at byte {at}"),
                label,
                Some(at),
                None,
                None,
            );
            break;
        };
        members += 1;
        if members > 100_000 {
            ctx.add(
                Level::Malformed,
                "bad-tar",
                "too many tar members".into(),
                label,
                Some(at),
                None,
                None,
            );
            break;
        }
        let data_start = r.n;
        let member = join(label, &m.name);
        let regular = m.kind == b'0' || m.kind == 0;
        let torch_name = ["sys_info", "pickle", "storages", "tensors"].contains(&m.name.as_str());
        if regular && m.size > 0 {
            seen_pickle |= m.name == "pickle";
            seen_sysinfo |= m.name == "sys_info";
            let body = (&mut r).take(m.size);
            if torch_name {
                scan_torch_tar_member(ctx, Box::new(body), &m.name, &member, depth);
            } else if depth < ctx.opts.max_depth {
                scan_stream(ctx, Box::new(body), Some(m.size), Some(&member), depth + 1);
            }
        }
        // Skip what the member's scan did not read, and the padding.
        let end = data_start + m.size.div_ceil(512) * 512;
        let left = end.saturating_sub(r.n);
        match std::io::copy(&mut (&mut r).take(left), &mut std::io::sink()) {
            Ok(k) if k == left => {}
            _ => {
                ctx.add(
                    Level::Malformed,
                    "bad-tar",
                    format!("tar member {} runs past the end of the file", m.name),
                    label,
                    Some(at),
                    None,
                    None,
                );
                break;
            }
        }
    }
    if seen_pickle && seen_sysinfo {
        ctx.add(
            Level::Unsafe,
            "legacy-tar-format",
            "pre-1.0 torch tar format: torch.load reads it only with weights_only=False (all its pickles were scanned)".into(),
            label,
            Some(0),
            None,
            None,
        );
        Format::TorchTar
    } else {
        Format::Tar
    }
}

/// The pickles of a torch tar member: `sys_info` and `pickle` hold one; `storages` and `tensors`
/// interleave small pickles with raw data (each next pickle starts at the next PROTO).
fn scan_torch_tar_member(
    ctx: &mut Ctx,
    body: Box<dyn Read + '_>,
    name: &str,
    member: &str,
    depth: u32,
) {
    let mut inp = Input::from_reader(body, 0, None);
    let mut n = 0;
    while n < 100_000 {
        let lvl = if n == 0 {
            Level::Malformed
        } else {
            Level::Info
        };
        let (s, back) = analyze_input(ctx, inp, member, depth, lvl, true);
        inp = back;
        n += 1;
        if s.error || name == "sys_info" || name == "pickle" {
            break;
        }
        // Skip raw data after a storage/tensor header pickle up to the next PROTO.
        loop {
            let buf = inp.peek_upto(1 << 16);
            if buf.is_empty() {
                return;
            }
            match memchr::memchr(pickle::opcodes::PROTO, buf) {
                Some(i) => {
                    inp.skip(i as u64);
                    break;
                }
                None => {
                    let k = buf.len() as u64;
                    inp.skip(k);
                }
            }
        }
    }
}

struct Counting<R> {
    inner: R,
    n: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n += k as u64;
        Ok(k)
    }
}

/// Fill `buf` completely (Ok(true)), or find the stream already at its end (Ok(false)).
fn read_exact_or_eof(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if got == 0 {
        Ok(false)
    } else if got < buf.len() {
        Err(std::io::ErrorKind::UnexpectedEof.into())
    } else {
        Ok(true)
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

/// Walk `paths` and scan what the walk finds, sniffing each file once: a directory's files are
/// opened once each, their first bytes decide whether they are scanned (see [`crate::walk`]).
/// Files named directly are always scanned. Returns the reports (in walk order) and what was
/// skipped.
pub fn scan_paths(
    paths: &[PathBuf],
    walk_opts: &WalkOptions,
    opts: &ScanOptions,
) -> (Vec<ScanReport>, SkipCounts) {
    scan_paths_with_progress(paths, walk_opts, opts, &|_| {})
}

/// [`scan_paths`], calling `done(total)` after each file (for a progress bar; `total` is the
/// number of files the walk found).
pub fn scan_paths_with_progress(
    paths: &[PathBuf],
    walk_opts: &WalkOptions,
    opts: &ScanOptions,
    done: &(dyn Fn(usize) + Sync),
) -> (Vec<ScanReport>, SkipCounts) {
    let (entries, mut skipped) = crate::walk::list(paths, walk_opts);
    let total = entries.len();
    let run = |e: &crate::walk::Entry| -> Result<ScanReport, crate::walk::Kind> {
        let r = if e.sniff {
            scan_path_sniffed(&e.path, opts)
        } else {
            Ok(scan_path_with(&e.path, opts))
        };
        done(total);
        r
    };
    let results: Vec<_> = if entries.len() <= SEQUENTIAL_MAX {
        entries.iter().map(run).collect()
    } else {
        use rayon::prelude::*;
        entries.par_iter().map(run).collect()
    };
    let mut reports = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Ok(r) => reports.push(r),
            Err(k) => skipped.add(k),
        }
    }
    (reports, skipped)
}

/// Up to this many files are scanned on the calling thread: starting a pool costs more than
/// they take.
const SEQUENTIAL_MAX: usize = 16;

/// Scan a file found by a directory walk if its content is a format the scanner reads.
fn scan_path_sniffed(path: &Path, opts: &ScanOptions) -> Result<ScanReport, crate::walk::Kind> {
    use crate::walk::Kind;
    let p = path.to_path_buf();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let Ok(mut f) = std::fs::File::open(path) else {
            return Err(Kind::Unreadable);
        };
        let len = f.metadata().map_err(|_| Kind::Unreadable)?.len();
        if len == 0 {
            return Err(Kind::Empty);
        }
        let (whole, head) = if len <= zip::READ_WHOLE_LIMIT {
            let buf = zip::read_known_len(&mut f, len).map_err(|_| Kind::Unreadable)?;
            (Some(buf), None)
        } else {
            let mut h = vec![0u8; crate::walk::HEAD];
            f.read_exact(&mut h).map_err(|_| Kind::Unreadable)?;
            (None, Some(h))
        };
        let kind = match (&whole, &head) {
            (Some(w), _) => {
                let w = w.as_slice();
                let k = crate::walk::classify_head(&w[..w.len().min(crate::walk::HEAD)], len);
                if k == Kind::Binary && memchr::memmem::rfind(w, b"PK\x05\x06").is_some() {
                    Kind::Candidate(Format::Zip)
                } else {
                    k
                }
            }
            (None, Some(h)) => match crate::walk::classify_head(h, len) {
                Kind::Binary if crate::walk::has_zip_end(&mut f, len) => {
                    Kind::Candidate(Format::Zip)
                }
                k => k,
            },
            _ => Kind::Unreadable,
        };
        if !matches!(kind, Kind::Candidate(_)) {
            return Err(kind);
        }
        let src = zip::FileSource::from_parts(f, len, whole);
        Ok(scan_source(p.clone(), &src, opts))
    }));
    match r {
        Ok(r) => r,
        Err(_) => Ok(ScanReport::error(
            path.to_path_buf(),
            "internal error while scanning (please report)".into(),
        )),
    }
}

/// Scan many files, results in input order. Small inputs are scanned on the calling thread (a
/// thread pool costs more to start than they take); larger ones in parallel.
pub fn scan_many(files: &[PathBuf], opts: &ScanOptions) -> Vec<ScanReport> {
    if files.len() <= 1 || small_input(files) {
        return files.iter().map(|f| scan_path_with(f, opts)).collect();
    }
    use rayon::prelude::*;
    files.par_iter().map(|f| scan_path_with(f, opts)).collect()
}

/// Few files with little data in total: parallelism would not pay for the pool.
fn small_input(files: &[PathBuf]) -> bool {
    if files.len() > 256 {
        return false;
    }
    let mut total = 0u64;
    for f in files {
        total += std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
        if total > 8 << 20 {
            return false;
        }
    }
    true
}

//! Test support: a pickle writer and a zip builder for synthetic and hostile checkpoints.
//!
//! Public (but hidden from docs) so integration tests and fuzz targets can use them.

use crate::pickle::opcodes as op;
use crate::zip::crc32_update;

/// Emits pickle opcodes one by one. Nothing is validated: hostile streams are the point.
#[derive(Debug, Default, Clone)]
pub struct PickleWriter {
    /// The bytes written so far.
    pub buf: Vec<u8>,
}

impl PickleWriter {
    /// Empty writer.
    pub fn new() -> Self {
        Self::default()
    }
    /// Writer that starts with `PROTO p`.
    pub fn proto(p: u8) -> Self {
        let mut w = Self::new();
        w.op(op::PROTO).byte(p);
        w
    }
    /// Raw opcode byte.
    pub fn op(&mut self, o: u8) -> &mut Self {
        self.buf.push(o);
        self
    }
    /// Raw byte.
    pub fn byte(&mut self, b: u8) -> &mut Self {
        self.buf.push(b);
        self
    }
    /// Raw bytes.
    pub fn raw(&mut self, b: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(b);
        self
    }
    /// `GLOBAL module\nname\n`.
    pub fn global(&mut self, module: &str, name: &str) -> &mut Self {
        self.op(op::GLOBAL);
        self.raw(module.as_bytes()).byte(b'\n');
        self.raw(name.as_bytes()).byte(b'\n')
    }
    /// SHORT_BINUNICODE or BINUNICODE depending on length.
    pub fn unicode(&mut self, s: &str) -> &mut Self {
        if s.len() < 256 {
            self.op(op::SHORT_BINUNICODE)
                .byte(s.len() as u8)
                .raw(s.as_bytes())
        } else {
            self.op(op::BINUNICODE)
                .raw(&(s.len() as u32).to_le_bytes())
                .raw(s.as_bytes())
        }
    }
    /// BINUNICODE (protocol 1+).
    pub fn binunicode(&mut self, s: &str) -> &mut Self {
        self.op(op::BINUNICODE)
            .raw(&(s.len() as u32).to_le_bytes())
            .raw(s.as_bytes())
    }
    /// SHORT_BINSTRING.
    pub fn short_binstring(&mut self, s: &str) -> &mut Self {
        self.op(op::SHORT_BINSTRING)
            .byte(s.len() as u8)
            .raw(s.as_bytes())
    }
    /// STACK_GLOBAL with two literal strings.
    pub fn stack_global(&mut self, module: &str, name: &str) -> &mut Self {
        self.unicode(module).unicode(name).op(op::STACK_GLOBAL)
    }
    /// A small int with the shortest opcode.
    pub fn int(&mut self, v: i64) -> &mut Self {
        if (0..256).contains(&v) {
            self.op(op::BININT1).byte(v as u8)
        } else if (0..65536).contains(&v) {
            self.op(op::BININT2).raw(&(v as u16).to_le_bytes())
        } else if i32::try_from(v).is_ok() {
            self.op(op::BININT).raw(&(v as i32).to_le_bytes())
        } else {
            self.op(op::LONG1).byte(8).raw(&v.to_le_bytes())
        }
    }
    /// BINFLOAT.
    pub fn float(&mut self, v: f64) -> &mut Self {
        self.op(op::BINFLOAT).raw(&v.to_be_bytes())
    }
    /// SHORT_BINBYTES / BINBYTES.
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        if b.len() < 256 {
            self.op(op::SHORT_BINBYTES).byte(b.len() as u8).raw(b)
        } else {
            self.op(op::BINBYTES)
                .raw(&(b.len() as u32).to_le_bytes())
                .raw(b)
        }
    }
    /// BINPUT.
    pub fn put(&mut self, i: u8) -> &mut Self {
        self.op(op::BINPUT).byte(i)
    }
    /// BINGET.
    pub fn get(&mut self, i: u8) -> &mut Self {
        self.op(op::BINGET).byte(i)
    }
    /// `MARK ... TUPLE` around the closure's output.
    pub fn tuple(&mut self, f: impl FnOnce(&mut Self)) -> &mut Self {
        self.op(op::MARK);
        f(self);
        self.op(op::TUPLE)
    }
    /// `callee args REDUCE`: the callee is a GLOBAL, the args built by the closure in a tuple.
    pub fn call(&mut self, module: &str, name: &str, args: impl FnOnce(&mut Self)) -> &mut Self {
        self.global(module, name);
        self.tuple(args);
        self.op(op::REDUCE)
    }
    /// STOP.
    pub fn stop(&mut self) -> &mut Self {
        self.op(op::STOP)
    }
    /// The bytes.
    pub fn finish(&self) -> Vec<u8> {
        self.buf.clone()
    }

    /// A torch zip-format persistent id for a storage:
    /// `MARK 'storage' GLOBAL(torch <ty>) key location numel TUPLE BINPERSID`.
    pub fn storage_pid(&mut self, ty: &str, key: &str, location: &str, numel: i64) -> &mut Self {
        self.op(op::MARK);
        self.binunicode("storage");
        self.global("torch", ty);
        self.binunicode(key).binunicode(location).int(numel);
        self.op(op::TUPLE).op(op::BINPERSID)
    }

    /// `torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())`.
    pub fn tensor_v2(
        &mut self,
        storage: (&str, &str, i64),
        offset: i64,
        size: &[i64],
        stride: &[i64],
    ) -> &mut Self {
        self.global("torch._utils", "_rebuild_tensor_v2");
        self.op(op::MARK);
        self.storage_pid(storage.0, storage.1, "cpu", storage.2);
        self.int(offset);
        self.op(op::MARK);
        for &s in size {
            self.int(s);
        }
        self.op(op::TUPLE);
        self.op(op::MARK);
        for &s in stride {
            self.int(s);
        }
        self.op(op::TUPLE);
        self.op(op::NEWFALSE);
        self.global("collections", "OrderedDict");
        self.op(op::EMPTY_TUPLE).op(op::REDUCE);
        self.op(op::TUPLE).op(op::REDUCE)
    }
}

/// Options for one zip member.
#[derive(Debug, Clone, Default)]
pub struct MemberOpts {
    /// Name written in the local header instead of the central name.
    pub local_name: Option<String>,
    /// Local flags instead of the default 0x0808.
    pub local_flags: Option<u16>,
    /// Central flags instead of the default 0x0808.
    pub central_flags: Option<u16>,
    /// CRC written instead of the real one.
    pub crc: Option<u32>,
    /// Deflate the data.
    pub deflate: bool,
    /// Leave out of the central directory (hidden local entry).
    pub hidden: bool,
}

/// Builds zip files the way torch's writer does (stored, 64-byte aligned data, data descriptors),
/// with knobs to produce every parser differential.
#[derive(Debug, Default)]
pub struct ZipBuilder {
    out: Vec<u8>,
    central: Vec<u8>,
    count: u64,
}

impl ZipBuilder {
    /// Empty archive.
    pub fn new() -> Self {
        Self::default()
    }
    /// Archive that starts after `prefix` bytes (for polyglots).
    pub fn with_leading(prefix: &[u8]) -> Self {
        ZipBuilder {
            out: prefix.to_vec(),
            ..Self::default()
        }
    }
    /// Add a stored member.
    pub fn add(&mut self, name: &str, data: &[u8]) {
        self.add_with(name, data, |_| {});
    }
    /// Add a deflate member from already-compressed bytes (`size` and `crc` of the inflated
    /// data), e.g. a bomb too large to build in memory.
    pub fn add_deflated(&mut self, name: &str, payload: &[u8], crc: u32, size: u32) {
        let header_offset = self.out.len() as u64;
        let mut h = Vec::new();
        h.extend_from_slice(b"PK\x03\x04");
        h.extend_from_slice(&20u16.to_le_bytes());
        h.extend_from_slice(&0u16.to_le_bytes());
        h.extend_from_slice(&8u16.to_le_bytes());
        h.extend_from_slice(&[0, 0, 0x21, 0]);
        h.extend_from_slice(&crc.to_le_bytes());
        h.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        h.extend_from_slice(&size.to_le_bytes());
        h.extend_from_slice(&(name.len() as u16).to_le_bytes());
        h.extend_from_slice(&0u16.to_le_bytes());
        h.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(&h);
        self.out.extend_from_slice(payload);
        let c = &mut self.central;
        c.extend_from_slice(b"PK\x01\x02");
        c.extend_from_slice(&20u16.to_le_bytes());
        c.extend_from_slice(&20u16.to_le_bytes());
        c.extend_from_slice(&0u16.to_le_bytes());
        c.extend_from_slice(&8u16.to_le_bytes());
        c.extend_from_slice(&[0, 0, 0x21, 0]);
        c.extend_from_slice(&crc.to_le_bytes());
        c.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        c.extend_from_slice(&size.to_le_bytes());
        c.extend_from_slice(&(name.len() as u16).to_le_bytes());
        c.extend_from_slice(&[0u8; 12]);
        c.extend_from_slice(&(header_offset as u32).to_le_bytes());
        c.extend_from_slice(name.as_bytes());
        self.count += 1;
    }
    /// Add a member with options.
    pub fn add_with(&mut self, name: &str, data: &[u8], f: impl FnOnce(&mut MemberOpts)) {
        let mut o = MemberOpts::default();
        f(&mut o);
        let crc = o.crc.unwrap_or_else(|| crc32_update(0, data));
        let (method, payload) = if o.deflate {
            (8u16, miniz_oxide::deflate::compress_to_vec(data, 6))
        } else {
            (0u16, data.to_vec())
        };
        let local_name = o.local_name.clone().unwrap_or_else(|| name.to_string());
        let lflags = o.local_flags.unwrap_or(0x0808);
        let cflags = o.central_flags.unwrap_or(0x0808);
        let header_offset = self.out.len() as u64;
        // Alignment padding through an extra field "FB", like torch.
        let base = header_offset as usize + 30 + local_name.len();
        let mut pad = (64 - (base + 4) % 64) % 64;
        if method != 0 {
            pad = 0;
        }
        let xlen = if method == 0 { 4 + pad } else { 0 };
        let mut h = Vec::new();
        h.extend_from_slice(b"PK\x03\x04");
        h.extend_from_slice(&20u16.to_le_bytes());
        h.extend_from_slice(&lflags.to_le_bytes());
        h.extend_from_slice(&method.to_le_bytes());
        h.extend_from_slice(&[0, 0, 0x21, 0]); // time, date
        let (lcrc, lcs, lus) = if lflags & 0x08 != 0 {
            (0, 0, 0)
        } else {
            (crc, payload.len() as u32, data.len() as u32)
        };
        h.extend_from_slice(&lcrc.to_le_bytes());
        h.extend_from_slice(&lcs.to_le_bytes());
        h.extend_from_slice(&lus.to_le_bytes());
        h.extend_from_slice(&(local_name.len() as u16).to_le_bytes());
        h.extend_from_slice(&(xlen as u16).to_le_bytes());
        h.extend_from_slice(local_name.as_bytes());
        if xlen > 0 {
            h.extend_from_slice(b"FB");
            h.extend_from_slice(&(pad as u16).to_le_bytes());
            h.extend(std::iter::repeat_n(b'Z', pad));
        }
        self.out.extend_from_slice(&h);
        self.out.extend_from_slice(&payload);
        if lflags & 0x08 != 0 {
            self.out.extend_from_slice(b"PK\x07\x08");
            self.out.extend_from_slice(&crc.to_le_bytes());
            self.out
                .extend_from_slice(&(payload.len() as u32).to_le_bytes());
            self.out
                .extend_from_slice(&(data.len() as u32).to_le_bytes());
        }
        if o.hidden {
            return;
        }
        let c = &mut self.central;
        c.extend_from_slice(b"PK\x01\x02");
        c.extend_from_slice(&20u16.to_le_bytes());
        c.extend_from_slice(&20u16.to_le_bytes());
        c.extend_from_slice(&cflags.to_le_bytes());
        c.extend_from_slice(&method.to_le_bytes());
        c.extend_from_slice(&[0, 0, 0x21, 0]);
        c.extend_from_slice(&crc.to_le_bytes());
        c.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        c.extend_from_slice(&(data.len() as u32).to_le_bytes());
        c.extend_from_slice(&(name.len() as u16).to_le_bytes());
        c.extend_from_slice(&[0u8; 12]); // extra len, comment len, disk, int attr, ext attr
        c.extend_from_slice(&(header_offset as u32).to_le_bytes());
        c.extend_from_slice(name.as_bytes());
        self.count += 1;
    }
    /// Finish: central directory and end record.
    pub fn finish(mut self) -> Vec<u8> {
        let cd_offset = self.out.len() as u32;
        let cd_size = self.central.len() as u32;
        self.out.extend_from_slice(&self.central);
        self.out.extend_from_slice(b"PK\x05\x06");
        self.out.extend_from_slice(&[0u8; 4]);
        self.out
            .extend_from_slice(&(self.count as u16).to_le_bytes());
        self.out
            .extend_from_slice(&(self.count as u16).to_le_bytes());
        self.out.extend_from_slice(&cd_size.to_le_bytes());
        self.out.extend_from_slice(&cd_offset.to_le_bytes());
        self.out.extend_from_slice(&0u16.to_le_bytes());
        self.out
    }
}

/// A minimal torch zip checkpoint: `state` is the data.pkl bytes, `records` the data/N payloads.
pub fn torch_zip(archive: &str, data_pkl: &[u8], records: &[(&str, &[u8])]) -> Vec<u8> {
    let mut z = ZipBuilder::new();
    z.add(&format!("{archive}/data.pkl"), data_pkl);
    z.add(&format!("{archive}/.format_version"), b"1");
    z.add(&format!("{archive}/.storage_alignment"), b"64");
    z.add(&format!("{archive}/byteorder"), b"little");
    for (k, v) in records {
        z.add(&format!("{archive}/data/{k}"), v);
    }
    z.add(&format!("{archive}/version"), b"3\n");
    z.finish()
}

/// A state_dict pickle `{name: tensor}` of float32 tensors, each on its own storage `i`.
pub fn state_dict_pickle(tensors: &[(&str, &[i64])]) -> Vec<u8> {
    let mut w = PickleWriter::proto(2);
    w.global("collections", "OrderedDict");
    w.op(op::EMPTY_TUPLE).op(op::REDUCE);
    w.op(op::MARK);
    for (i, (name, shape)) in tensors.iter().enumerate() {
        let numel: i64 = shape.iter().product();
        let mut stride = vec![1i64; shape.len()];
        for d in (0..shape.len().saturating_sub(1)).rev() {
            stride[d] = stride[d + 1] * shape[d + 1];
        }
        w.binunicode(name);
        let key = i.to_string();
        w.tensor_v2(("FloatStorage", &key, numel), 0, shape, &stride);
    }
    w.op(op::SETITEMS);
    w.stop();
    w.finish()
}

/// A raw deflate stream of `mib` MiB of zeros (about 1 KiB per MiB), and the CRC-32 of what it
/// inflates to: one sync-flushed block of 1 MiB of zeros, repeated, then an empty final block.
pub fn zero_bomb(mib: u32) -> (Vec<u8>, u32) {
    let chunk = vec![0u8; 1 << 20];
    let mut c = flate2::Compress::new(flate2::Compression::best(), false);
    let mut block = Vec::with_capacity(1 << 16);
    let _ = c.compress_vec(&chunk, &mut block, flate2::FlushCompress::Sync);
    let mut out = Vec::with_capacity(block.len() * mib as usize + 2);
    let mut crc = crc32fast::Hasher::new();
    for _ in 0..mib {
        out.extend_from_slice(&block);
        crc.update(&chunk);
    }
    out.extend_from_slice(&[0x03, 0x00]);
    (out, crc.finalize())
}

/// A reader that hands out at most `step` bytes per call (exercises stream windows).
pub struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl<'a> Trickle<'a> {
    /// Read `data` `step` bytes at a time (at least 1).
    pub fn new(data: &'a [u8], step: usize) -> Self {
        Trickle {
            data,
            step: step.max(1),
        }
    }
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.step).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// Fuzz harness (also run on every saved crash input by the regression tests): the machine must
/// finish within its limits, reading the same bytes from a slice or from a stream that hands
/// out a few bytes at a time must give the same result, and what the first pass
/// (`pickle::fast`) accepts the machine reads the same way.
pub fn fuzz_pickle_machine(data: &[u8]) {
    use crate::pickle::{Input, Limits, Machine};
    let limits = Limits {
        max_ops: 100_000,
        max_nodes: 100_000,
        max_value_bytes: 4096,
        max_retained_bytes: 1 << 16,
        max_line: 4096,
        ..Limits::default()
    };
    let mut a = Machine::new(data, 0, limits);
    let oa = a.run();
    if let Some(root) = oa.root {
        let _ = a.resolve(root);
    }
    assert!(oa.end <= data.len());
    let step = data.first().map_or(1, |&b| (b as usize % 7) + 1);
    let mut b = Machine::with_input(
        Input::from_reader(Trickle::new(data, step), 0, None),
        limits,
    );
    let ob = b.run();
    assert_eq!(
        oa.error.is_some(),
        ob.error.is_some(),
        "{:?} / {:?}",
        oa.error,
        ob.error
    );
    if let (Some(ea), Some(eb)) = (&oa.error, &ob.error) {
        assert_eq!(ea.offset, eb.offset, "{ea:?} / {eb:?}");
    }
    assert_eq!(oa.end, ob.end);
    assert_eq!(a.globals.len(), b.globals.len());
    assert_eq!(a.nodes.len(), b.nodes.len());
    for (x, y) in a.globals.iter().zip(&b.globals) {
        assert_eq!(x.qualified(), y.qualified());
        assert_eq!(x.offset, y.offset);
    }
    // The first pass proves only what the full machine agrees with: same end, same names,
    // nothing found and nothing nested.
    if let Some(f) = crate::pickle::fast::run(data, 0, limits) {
        assert!(oa.error.is_none(), "{:?}", oa.error);
        assert_eq!(f.end, oa.end);
        assert!(a.findings.is_empty(), "{:?}", a.findings);
        assert!(a.nested.is_empty());
        assert_eq!(format!("{:?}", f.globals), format!("{:?}", a.globals));
    }
    // The payload checks and the name sweep over the same bytes.
    let _ = crate::payloads::sweep_names(data);
}

/// Fuzz harness for the zip reader: directory parsing, whole and streamed member reads, CRCs,
/// and the scanner over the archive.
pub fn fuzz_zip_reader(data: &[u8]) {
    use crate::zip::{entry_crc_max, entry_reader, read_entry, ZipArchive};
    use std::io::Read;
    if let Ok(a) = ZipArchive::open(data) {
        for e in a.entries.iter().take(16) {
            let whole = read_entry(data, e, 1 << 20).ok();
            if let Ok(mut r) = entry_reader(data, e, 1 << 20) {
                let mut v = Vec::new();
                let streamed = r.read_to_end(&mut v).ok().map(|_| v);
                if let (Some(w), Some(s)) = (&whole, &streamed) {
                    if e.method == 0 {
                        assert_eq!(w, s);
                    }
                }
            }
            let _ = entry_crc_max(data, e, 1 << 20);
        }
        let _ = a.record("data.pkl");
    }
    let opts = crate::ScanOptions {
        max_pickle_bytes: 1 << 22,
        max_nested_bytes: 1 << 20,
        ..crate::ScanOptions::default()
    };
    let r = crate::scan::scan_bytes_with("fuzz.pt", data, &opts);
    assert!(!r.format.is_empty());
}

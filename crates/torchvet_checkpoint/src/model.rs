//! The object tree of a checkpoint, with torch's allowlisted rebuild functions evaluated
//! symbolically into tensor records. Reads only pickles and directories: tensor bytes are
//! streamed on demand by [`Checkpoint::stream_tensor`].

use crate::format::{self, Format};
use crate::pickle::{Id, Limits, Machine, Value};
use crate::safetensors::{safetensors_to_torch, SafeFile};
use crate::zip::{self, FileSource, Source, ZipArchive};
use crate::Error;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// A value of the object tree.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "lowercase")]
pub enum Node {
    /// None.
    None,
    /// bool.
    Bool(bool),
    /// int.
    Int(i64),
    /// Big int (decimal or hex text).
    BigInt(String),
    /// float.
    Float(f64),
    /// str.
    Str(String),
    /// bytes (length only).
    Bytes(usize),
    /// list / tuple / set.
    List(Vec<Node>),
    /// dict (keys rendered as text).
    Dict(Vec<(String, Node)>),
    /// A tensor: index into [`Checkpoint::tensors`].
    Tensor(usize),
    /// A name (dtype, class, function).
    Global(String),
    /// An object of a class that is not a container we know.
    Object {
        /// Class or callable.
        class: String,
        /// Fields (state, items).
        fields: Vec<(String, Node)>,
    },
    /// A cycle or something cut off by the size budget.
    Elided(String),
}

/// Where a storage's bytes are.
#[derive(Debug, Clone, Serialize)]
pub enum StorageLoc {
    /// A zip member (stored or deflated).
    Zip {
        /// Offset of the member's data.
        data_offset: u64,
        /// Stored size.
        compressed_size: u64,
        /// Uncompressed size.
        size: u64,
        /// Compression method.
        method: u16,
    },
    /// A plain range of the file.
    Range {
        /// Offset.
        offset: u64,
        /// Length.
        len: u64,
    },
    /// No bytes (meta tensors, raw pickles).
    Missing,
}

/// A storage reference from a persistent id.
#[derive(Debug, Clone, Serialize)]
pub struct StorageRef {
    /// Storage key (`data/<key>` in zips).
    pub key: String,
    /// Location tag (`cpu`, `cuda:0`).
    pub location: String,
    /// Storage class name (`FloatStorage`).
    pub storage_type: String,
    /// Declared numel (elements of the storage dtype; bytes for UntypedStorage).
    pub numel: i64,
    /// Extra element offset (legacy storage views).
    pub view_offset: i64,
}

/// Kind of tensor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TensorKind {
    /// Dense strided tensor.
    Dense,
    /// Quantized.
    Quantized,
    /// Meta tensor without data.
    Meta,
    /// safetensors tensor.
    Safetensors,
}

/// One tensor record.
#[derive(Debug, Clone, Serialize)]
pub struct TensorInfo {
    /// torch dtype name (`float32`).
    pub dtype: String,
    /// Shape.
    pub shape: Vec<i64>,
    /// Strides (elements).
    pub stride: Vec<i64>,
    /// Storage offset (elements).
    pub storage_offset: i64,
    /// Storage.
    pub storage: Option<StorageRef>,
    /// requires_grad.
    pub requires_grad: bool,
    /// Came through `_rebuild_parameter`.
    pub parameter: bool,
    /// Kind.
    pub kind: TensorKind,
    /// Rebuild function used.
    pub rebuild: String,
}

impl TensorInfo {
    /// Number of elements.
    pub fn numel(&self) -> u64 {
        self.shape.iter().map(|&d| d.max(0) as u64).product()
    }
    /// Bytes of the tensor's own elements.
    pub fn nbytes(&self) -> u64 {
        self.numel() * element_size(&self.dtype).unwrap_or(0)
    }
    /// Device tag.
    pub fn device(&self) -> &str {
        match (&self.storage, &self.kind) {
            (_, TensorKind::Meta) => "meta",
            (Some(s), _) => &s.location,
            (None, _) => "cpu",
        }
    }
    /// Row-major contiguous.
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1i64;
        for (s, st) in self.shape.iter().zip(&self.stride).rev() {
            if *s != 1 && *st != expected {
                return false;
            }
            expected = expected.saturating_mul(*s);
        }
        true
    }
}

/// Element size of a torch dtype name.
pub fn element_size(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "float64" | "int64" | "uint64" | "complex64" => 8,
        "float32" | "int32" | "uint32" | "qint32" | "complex32" | "bcomplex32" => 4,
        "float16" | "bfloat16" | "int16" | "uint16" | "bits16" => 2,
        "complex128" => 16,
        "int8" | "uint8" | "bool" | "qint8" | "quint8" | "quint4x2" | "quint2x4"
        | "float8_e4m3fn" | "float8_e4m3fnuz" | "float8_e5m2" | "float8_e5m2fnuz"
        | "float8_e8m0fnu" | "float4_e2m1fn_x2" | "bits8" | "bits1x8" | "bits2x4" | "bits4x2" => 1,
        _ => return None,
    })
}

/// dtype of a storage class name.
pub fn storage_dtype(storage_type: &str) -> Option<&'static str> {
    let n = storage_type.rsplit('.').next().unwrap_or(storage_type);
    Some(match n {
        "DoubleStorage" => "float64",
        "FloatStorage" => "float32",
        "HalfStorage" => "float16",
        "BFloat16Storage" => "bfloat16",
        "LongStorage" => "int64",
        "IntStorage" => "int32",
        "ShortStorage" => "int16",
        "CharStorage" => "int8",
        "ByteStorage" => "uint8",
        "BoolStorage" => "bool",
        "ComplexFloatStorage" => "complex64",
        "ComplexDoubleStorage" => "complex128",
        "QInt8Storage" => "qint8",
        "QUInt8Storage" => "quint8",
        "QInt32Storage" => "qint32",
        "QUInt4x2Storage" => "quint4x2",
        "QUInt2x4Storage" => "quint2x4",
        "UntypedStorage" => "uint8",
        _ => return None,
    })
}

/// A loaded checkpoint (metadata only).
#[derive(Debug)]
pub struct Checkpoint {
    /// File.
    pub path: PathBuf,
    /// Format.
    pub format: Format,
    /// Writer records (`version`, `byteorder`, legacy `sys_info` ...).
    pub records: Vec<(String, String)>,
    /// Object tree.
    pub root: Node,
    /// Tensor records referenced by [`Node::Tensor`].
    pub tensors: Vec<TensorInfo>,
    /// Storage locations by key.
    pub storages: FxHashMap<String, StorageLoc>,
    /// Data is big-endian.
    pub big_endian: bool,
    /// Notes (cut-offs, oddities).
    pub notes: Vec<String>,
    /// Pickle protocol of the object pickle.
    pub protocol: u8,
}

const MAX_PICKLE: u64 = 1 << 30;

impl Checkpoint {
    /// Read a checkpoint's pickle and directory.
    pub fn open(path: &Path) -> Result<Checkpoint, Error> {
        let src = FileSource::open(path).map_err(|e| Error::io(path, e))?;
        let mut head = vec![0u8; src.len().min(1024) as usize];
        src.read_at(0, &mut head).map_err(|e| Error::io(path, e))?;
        let fmt = format::sniff(&head, src.len());
        let mut ck = Checkpoint {
            path: path.to_path_buf(),
            format: fmt,
            records: Vec::new(),
            root: Node::None,
            tensors: Vec::new(),
            storages: FxHashMap::default(),
            big_endian: false,
            notes: Vec::new(),
            protocol: 0,
        };
        match fmt {
            Format::Zip => ck.open_zip(&src)?,
            Format::TorchLegacy | Format::Pickle => ck.open_pickle_stream(&src)?,
            Format::Safetensors => ck.open_safetensors(&src)?,
            other => {
                return Err(Error::Unsupported(format!(
                    "{}: {} files have no tensors to read (supported: torch zip, TorchScript, legacy, raw pickle, safetensors)",
                    path.display(),
                    other.as_str()
                )))
            }
        }
        Ok(ck)
    }

    fn open_zip(&mut self, src: &FileSource) -> Result<(), Error> {
        let arch = ZipArchive::open(src)?;
        let data = arch.record("data.pkl").ok_or_else(|| {
            Error::Invalid(format!("zip archive has no {}/data.pkl", arch.prefix))
        })?;
        self.format = if arch.record("constants.pkl").is_some() {
            Format::TorchScript
        } else {
            Format::TorchZip
        };
        for name in [
            "version",
            ".data/version",
            ".format_version",
            ".storage_alignment",
            "byteorder",
            ".data/serialization_id",
        ] {
            if let Some(e) = arch.record(name) {
                if e.size <= 256 {
                    if let Ok(b) = zip::read_entry(src, e, 256) {
                        self.records.push((
                            name.to_string(),
                            String::from_utf8_lossy(&b).trim().to_string(),
                        ));
                    }
                }
            }
        }
        self.big_endian = self
            .records
            .iter()
            .any(|(k, v)| k == "byteorder" && v == "big");
        let bytes = zip::read_entry(src, data, MAX_PICKLE)?;
        let mut m = Machine::new(&bytes, 0, Limits::default());
        let out = m.run();
        if let Some(e) = out.error {
            return Err(Error::Pickle {
                member: data.name.clone(),
                error: e,
            });
        }
        self.protocol = m.proto;
        let root = out.root.unwrap_or(0);
        self.root = Builder::new(&m, self).build(root);
        for e in &arch.entries {
            let rel = arch.relative(e);
            if let Some(key) = rel.strip_prefix("data/") {
                self.storages
                    .entry(key.to_string())
                    .or_insert(StorageLoc::Zip {
                        data_offset: e.data_offset,
                        compressed_size: e.compressed_size,
                        size: e.size,
                        method: e.method,
                    });
            }
        }
        Ok(())
    }

    fn open_pickle_stream(&mut self, src: &FileSource) -> Result<(), Error> {
        // Read a prefix; grow it only when a pickle runs past its end (legacy storages follow
        // the pickles, so memory stays independent of the tensor data).
        let mut want = 4u64 << 20;
        loop {
            let n = src.len().min(want);
            let mut data = vec![0u8; n as usize];
            src.read_at(0, &mut data)
                .map_err(|e| Error::io(&self.path, e))?;
            match self.open_pickle_data(src, &data) {
                Err(Error::Pickle { .. }) if n < src.len() && want < MAX_PICKLE => {
                    self.tensors.clear();
                    self.records.clear();
                    self.notes.clear();
                    self.storages.clear();
                    want = want.saturating_mul(4).min(MAX_PICKLE);
                }
                other => return other,
            }
        }
    }

    fn open_pickle_data(&mut self, src: &FileSource, data: &[u8]) -> Result<(), Error> {
        let mut m = Machine::new(data, 0, Limits::default());
        let first = m.run();
        if let Some(e) = first.error {
            return Err(Error::Pickle {
                member: "pickle".into(),
                error: e,
            });
        }
        let is_legacy = first.root.is_some_and(
            |r| matches!(m.get(r), Value::BigInt(b) if b.as_ref() == format::LEGACY_MAGIC_LE),
        );
        if !is_legacy {
            self.format = Format::Pickle;
            self.protocol = m.proto;
            let root = first.root.unwrap_or(0);
            self.root = Builder::new(&m, self).build(root);
            self.notes
                .push("raw pickle: tensors have no data records".into());
            return Ok(());
        }
        self.format = Format::TorchLegacy;
        let mut pos = first.end;
        let mut roots = Vec::new();
        for what in ["protocol", "sys_info", "object", "storage_keys"] {
            let slice = data.get(pos..).unwrap_or_default();
            let mut mm = Machine::new(slice, pos as u64, Limits::default());
            let out = mm.run();
            if let Some(e) = out.error {
                return Err(Error::Pickle {
                    member: format!("legacy {what} pickle"),
                    error: e,
                });
            }
            pos += out.end;
            roots.push((what, slice, out.root.unwrap_or(0), pos));
        }
        // protocol and sys_info records
        for (what, slice, root, _) in roots.iter().take(2) {
            let mm = rerun(slice);
            let node = Builder::new(&mm, self).build(*root);
            self.records.push((what.to_string(), render_short(&node)));
            if *what == "sys_info" {
                if let Node::Dict(items) = &node {
                    if items
                        .iter()
                        .any(|(k, v)| k == "little_endian" && matches!(v, Node::Bool(false)))
                    {
                        self.big_endian = true;
                    }
                }
            }
        }
        let (_, obj_slice, obj_root, _) = roots[2];
        let mm = rerun(obj_slice);
        self.protocol = mm.proto;
        self.root = Builder::new(&mm, self).build(obj_root);
        let (_, key_slice, key_root, end) = roots[3];
        let km = rerun(key_slice);
        let keys: Vec<String> = match km.get(key_root) {
            Value::List(v) | Value::Tuple(v) => v
                .iter()
                .filter_map(|&k| match km.get(k) {
                    Value::Str(s) => Some(s.to_string()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        // Raw storages follow, in key order: int64 numel, then numel * element size bytes.
        let mut types: FxHashMap<String, String> = FxHashMap::default();
        for t in &self.tensors {
            if let Some(s) = &t.storage {
                types
                    .entry(s.key.clone())
                    .or_insert_with(|| s.storage_type.clone());
            }
        }
        let mut p = end as u64;
        for k in keys {
            let Some(el) = types
                .get(&k)
                .and_then(|t| storage_dtype(t))
                .and_then(element_size)
            else {
                self.notes.push(format!(
                    "storage {k}: unknown element size; later storages cannot be located"
                ));
                break;
            };
            let mut nb = [0u8; 8];
            if src.read_at(p, &mut nb).is_err() {
                self.notes.push(format!("storage {k}: truncated"));
                break;
            }
            let numel = i64::from_le_bytes(nb);
            let len = (numel.max(0) as u64).saturating_mul(el);
            if p + 8 + len > src.len() {
                self.notes.push(format!(
                    "storage {k}: {len} bytes run past the end of the file"
                ));
                break;
            }
            self.storages
                .insert(k, StorageLoc::Range { offset: p + 8, len });
            p += 8 + len;
        }
        if p < src.len() && self.notes.is_empty() {
            self.notes
                .push(format!("{} bytes after the last storage", src.len() - p));
        }
        Ok(())
    }

    fn open_safetensors(&mut self, src: &FileSource) -> Result<(), Error> {
        let f = SafeFile::open_source(src)?;
        let mut items = Vec::new();
        for (i, t) in f.tensors.iter().enumerate() {
            let shape: Vec<i64> = t.shape.iter().map(|&d| d as i64).collect();
            let mut stride = vec![1i64; shape.len()];
            for d in (0..shape.len().saturating_sub(1)).rev() {
                stride[d] = stride[d + 1] * shape[d + 1];
            }
            let key = i.to_string();
            self.storages.insert(
                key.clone(),
                StorageLoc::Range {
                    offset: t.start,
                    len: t.len,
                },
            );
            let dtype = safetensors_to_torch(&t.dtype).to_string();
            let el = element_size(&dtype).unwrap_or(1).max(1);
            self.tensors.push(TensorInfo {
                dtype,
                shape,
                stride,
                storage_offset: 0,
                storage: Some(StorageRef {
                    key,
                    location: "cpu".into(),
                    storage_type: "UntypedStorage".into(),
                    numel: (t.len / el) as i64,
                    view_offset: 0,
                }),
                requires_grad: false,
                parameter: false,
                kind: TensorKind::Safetensors,
                rebuild: "safetensors".into(),
            });
            items.push((t.name.clone(), Node::Tensor(i)));
        }
        for (k, v) in f.metadata {
            self.records.push((format!("__metadata__.{k}"), v));
        }
        self.root = Node::Dict(items);
        Ok(())
    }

    /// Every (path, tensor index) in the tree, depth first. nn.Module containers
    /// (`_parameters`, `_buffers`, `_modules`) are flattened like `state_dict()` names.
    pub fn named_tensors(&self) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        walk_tensors(&self.root, String::new(), &mut out, 0);
        out
    }

    /// The subtree at a dotted key (`model_state_dict`, `state_dict`, `a.b`).
    pub fn select<'a>(&'a self, key: &str) -> Option<&'a Node> {
        select(&self.root, key)
    }

    /// Stream one tensor's elements in row-major order (little-endian) to `sink`.
    pub fn stream_tensor(
        &self,
        src: &dyn Source,
        t: &TensorInfo,
        sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    ) -> Result<(), Error> {
        stream_tensor(self, src, t, sink)
    }
}

fn rerun(slice: &[u8]) -> Machine<'_> {
    let mut m = Machine::new(slice, 0, Limits::default());
    let _ = m.run();
    m
}

fn render_short(n: &Node) -> String {
    match n {
        Node::Int(i) => i.to_string(),
        Node::Str(s) => s.clone(),
        Node::Bool(b) => b.to_string(),
        Node::Dict(items) => format!(
            "{{{}}}",
            items
                .iter()
                .map(|(k, v)| format!("{k}: {}", render_short(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Node::BigInt(s) => s.clone(),
        _ => "…".into(),
    }
}

fn select<'a>(root: &'a Node, key: &str) -> Option<&'a Node> {
    let fields = |n: &'a Node| -> Option<&'a Vec<(String, Node)>> {
        match n {
            Node::Dict(items) => Some(items),
            Node::Object { fields, .. } => Some(fields),
            _ => None,
        }
    };
    if let Some(items) = fields(root) {
        if let Some((_, v)) = items.iter().find(|(k, _)| k == key) {
            return Some(v);
        }
        // Dotted path: longest matching prefix first.
        for (k, v) in items {
            if let Some(rest) = key
                .strip_prefix(k.as_str())
                .and_then(|r| r.strip_prefix('.'))
            {
                if let Some(x) = select(v, rest) {
                    return Some(x);
                }
            }
        }
    }
    None
}

const MODULE_CONTAINERS: &[&str] = &["_parameters", "_buffers", "_modules", "__dict__"];

fn walk_tensors(n: &Node, path: String, out: &mut Vec<(String, usize)>, depth: u32) {
    if depth > 200 || out.len() > 10_000_000 {
        return;
    }
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match n {
        Node::Tensor(i) => out.push((path, *i)),
        Node::List(v) => {
            for (i, x) in v.iter().enumerate() {
                walk_tensors(x, join(&i.to_string()), out, depth + 1);
            }
        }
        Node::Dict(items) => {
            for (k, v) in items {
                walk_tensors(v, join(k), out, depth + 1);
            }
        }
        Node::Object { fields, .. } => {
            for (k, v) in fields {
                let p = if MODULE_CONTAINERS.contains(&k.as_str()) {
                    path.clone()
                } else {
                    join(k)
                };
                walk_tensors(v, p, out, depth + 1);
            }
        }
        _ => {}
    }
}

/// Converts the machine's graph into a [`Node`] tree, evaluating rebuild functions.
struct Builder<'m, 'c> {
    m: &'m Machine<'m>,
    ck: &'c mut Checkpoint,
    budget: u64,
    active: FxHashSet<Id>,
    tensor_ids: FxHashMap<Id, usize>,
}

impl<'m, 'c> Builder<'m, 'c> {
    fn new(m: &'m Machine<'m>, ck: &'c mut Checkpoint) -> Self {
        Builder {
            m,
            ck,
            budget: 5_000_000,
            active: FxHashSet::default(),
            tensor_ids: FxHashMap::default(),
        }
    }

    fn build(&mut self, id: Id) -> Node {
        self.node(id, 0)
    }

    fn key_text(&mut self, id: Id, depth: u32) -> String {
        match self.node(id, depth + 1) {
            Node::Str(s) => s,
            Node::Int(i) => i.to_string(),
            Node::Bool(b) => {
                if b {
                    "True".into()
                } else {
                    "False".into()
                }
            }
            Node::None => "None".into(),
            Node::Float(f) => f.to_string(),
            Node::Global(g) => g,
            Node::List(v) => format!(
                "({})",
                v.iter().map(render_short).collect::<Vec<_>>().join(", ")
            ),
            other => render_short(&other),
        }
    }

    fn node(&mut self, id: Id, depth: u32) -> Node {
        if self.budget == 0 {
            return Node::Elided("size budget exhausted".into());
        }
        self.budget -= 1;
        if depth > 256 {
            return Node::Elided("nesting too deep".into());
        }
        let id = self.m.resolve(id);
        if let Some(&t) = self.tensor_ids.get(&id) {
            return Node::Tensor(t);
        }
        if !self.active.insert(id) {
            return Node::Elided("cycle".into());
        }
        let n = self.node_inner(id, depth);
        self.active.remove(&id);
        n
    }

    fn node_inner(&mut self, id: Id, depth: u32) -> Node {
        match self.m.get(id) {
            Value::None => Node::None,
            Value::Bool(b) => Node::Bool(*b),
            Value::Int(i) => Node::Int(*i),
            Value::BigInt(b) => Node::BigInt(bigint_text(b)),
            Value::Float(f) => Node::Float(*f),
            Value::Str(s) => Node::Str(s.to_string()),
            Value::Bytes(b) => Node::Bytes(b.len()),
            Value::Tuple(v) | Value::List(v) | Value::Set(v) => {
                let v = v.clone();
                Node::List(v.into_iter().map(|x| self.node(x, depth + 1)).collect())
            }
            Value::Dict(items) => {
                let items = dedupe_pairs(items);
                Node::Dict(dedupe_nodes(
                    items
                        .into_iter()
                        .map(|(k, v)| (self.key_text(k, depth), self.node(v, depth + 1)))
                        .collect(),
                ))
            }
            Value::Global { index, .. } => {
                let (module, name) = self.m.global_name(*index);
                Node::Global(crate::pickle::qualified(module, name))
            }
            Value::Persistent(p) => Node::Object {
                class: "persistent".into(),
                fields: vec![("pid".into(), self.node(*p, depth + 1))],
            },
            Value::Ext(c) => Node::Global(format!("<extension {c}>")),
            Value::Buffer => Node::Elided("out-of-band buffer".into()),
            Value::Object(o) => {
                let o = (**o).clone();
                let callee = match self.m.global_of(o.callee) {
                    Some((module, name)) => crate::pickle::qualified(module, name),
                    None => "<computed>".into(),
                };
                let args = match self.m.get(o.args) {
                    Value::Tuple(v) | Value::List(v) => v.clone(),
                    _ => Vec::new(),
                };
                self.call(id, &callee, &args, &o, depth)
            }
        }
    }

    fn int(&self, id: Id) -> Option<i64> {
        match self.m.get(self.m.resolve(id)) {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(*b as i64),
            _ => None,
        }
    }

    fn ints(&self, id: Id) -> Option<Vec<i64>> {
        let id = self.m.resolve(id);
        match self.m.get(id) {
            Value::Tuple(v) | Value::List(v) => v.iter().map(|&x| self.int(x)).collect(),
            Value::Object(o) => {
                // torch.Size((...))
                match self.m.get(o.args) {
                    Value::Tuple(a) if a.len() == 1 => self.ints(a[0]),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    fn global_name(&self, id: Id) -> Option<String> {
        self.m
            .global_of(self.m.resolve(id))
            .map(|(module, name)| crate::pickle::qualified(module, name))
    }

    fn storage(&self, id: Id) -> Option<StorageRef> {
        let Value::Persistent(pid) = self.m.get(self.m.resolve(id)) else {
            return None;
        };
        let Value::Tuple(items) = self.m.get(*pid) else {
            return None;
        };
        let s = |i: usize| -> Option<String> {
            match self.m.get(*items.get(i)?) {
                Value::Str(s) => Some(s.to_string()),
                _ => None,
            }
        };
        if s(0).as_deref() != Some("storage") {
            return None;
        }
        let ty = self.global_name(*items.get(1)?)?;
        let key = s(2)?;
        let location = s(3).unwrap_or_else(|| "cpu".into());
        let numel = items.get(4).and_then(|&x| self.int(x)).unwrap_or(0);
        // Legacy view metadata: (view_key, offset, size).
        let view_offset = items
            .get(5)
            .and_then(|&v| match self.m.get(v) {
                Value::Tuple(t) if t.len() == 3 => self.int(t[1]),
                _ => None,
            })
            .unwrap_or(0);
        Some(StorageRef {
            key,
            location,
            storage_type: ty,
            numel,
            view_offset,
        })
    }

    fn tensor(&mut self, id: Id, t: TensorInfo) -> Node {
        let i = self.ck.tensors.len();
        self.ck.tensors.push(t);
        self.tensor_ids.insert(id, i);
        Node::Tensor(i)
    }

    fn call(
        &mut self,
        id: Id,
        callee: &str,
        args: &[Id],
        o: &crate::pickle::Object,
        depth: u32,
    ) -> Node {
        let arg = |i: usize| args.get(i).copied();
        match callee {
            "torch._utils._rebuild_tensor_v2"
            | "torch._utils._rebuild_tensor"
            | "torch._utils._rebuild_tensor_v3"
            | "torch._utils._rebuild_qtensor" => {
                let Some(st) = arg(0).and_then(|a| self.storage(a)) else {
                    return self.generic(callee, args, o, depth);
                };
                let offset = arg(1).and_then(|a| self.int(a)).unwrap_or(0);
                let shape = arg(2).and_then(|a| self.ints(a)).unwrap_or_default();
                let stride = arg(3).and_then(|a| self.ints(a)).unwrap_or_default();
                let (rg_idx, kind) = if callee.ends_with("qtensor") {
                    (5, TensorKind::Quantized)
                } else {
                    (4, TensorKind::Dense)
                };
                let requires_grad = arg(rg_idx).and_then(|a| self.int(a)).unwrap_or(0) != 0;
                let mut dtype = storage_dtype(&st.storage_type)
                    .unwrap_or("unknown")
                    .to_string();
                if callee.ends_with("_v3") {
                    if let Some(d) = arg(6).and_then(|a| self.global_name(a)) {
                        dtype = d.trim_start_matches("torch.").to_string();
                    }
                }
                let t = TensorInfo {
                    dtype,
                    shape,
                    stride,
                    storage_offset: offset,
                    storage: Some(st),
                    requires_grad,
                    parameter: false,
                    kind,
                    rebuild: callee.rsplit('.').next().unwrap_or(callee).to_string(),
                };
                self.tensor(id, t)
            }
            "torch._utils._rebuild_meta_tensor_no_storage" => {
                let dtype = arg(0).and_then(|a| self.global_name(a)).unwrap_or_default();
                let t = TensorInfo {
                    dtype: dtype.trim_start_matches("torch.").to_string(),
                    shape: arg(1).and_then(|a| self.ints(a)).unwrap_or_default(),
                    stride: arg(2).and_then(|a| self.ints(a)).unwrap_or_default(),
                    storage_offset: 0,
                    storage: None,
                    requires_grad: arg(3).and_then(|a| self.int(a)).unwrap_or(0) != 0,
                    parameter: false,
                    kind: TensorKind::Meta,
                    rebuild: "_rebuild_meta_tensor_no_storage".into(),
                };
                self.tensor(id, t)
            }
            "torch._utils._rebuild_parameter"
            | "torch._utils._rebuild_parameter_with_state"
            | "torch.nn.parameter.Parameter" => {
                let Some(inner) = arg(0) else {
                    return self.generic(callee, args, o, depth);
                };
                let n = self.node(inner, depth + 1);
                if let Node::Tensor(i) = n {
                    let rg = arg(1).and_then(|a| self.int(a)).unwrap_or(1) != 0;
                    if let Some(t) = self.ck.tensors.get_mut(i) {
                        t.parameter = true;
                        t.requires_grad = rg;
                    }
                    self.tensor_ids.insert(id, i);
                }
                n
            }
            "torch._tensor._rebuild_from_type_v2" => {
                // (func, new_type, args, state): the tensor is func(*args).
                let (Some(f), Some(a)) = (arg(0), arg(2)) else {
                    return self.generic(callee, args, o, depth);
                };
                let fname = self.global_name(f).unwrap_or_default();
                let inner_args = match self.m.get(self.m.resolve(a)) {
                    Value::Tuple(v) | Value::List(v) => v.clone(),
                    _ => Vec::new(),
                };
                let n = self.call(id, &fname, &inner_args, o, depth + 1);
                if let Node::Tensor(i) = n {
                    self.tensor_ids.insert(id, i);
                }
                n
            }
            "collections.OrderedDict"
            | "builtins.dict"
            | "collections.defaultdict"
            | "collections.Counter" => {
                let mut pairs: Vec<(Id, Id)> = Vec::new();
                if callee != "collections.defaultdict" {
                    if let Some(a) = arg(0) {
                        match self.m.get(self.m.resolve(a)) {
                            Value::List(v) | Value::Tuple(v) => {
                                for &p in v {
                                    if let Value::Tuple(kv) | Value::List(kv) = self.m.get(p) {
                                        if kv.len() == 2 {
                                            pairs.push((kv[0], kv[1]));
                                        }
                                    }
                                }
                            }
                            Value::Dict(d) => pairs.extend(d.iter().copied()),
                            _ => {}
                        }
                    }
                }
                pairs.extend(o.dict_items.iter().copied());
                let pairs = dedupe_pairs(&pairs);
                Node::Dict(dedupe_nodes(
                    pairs
                        .into_iter()
                        .map(|(k, v)| (self.key_text(k, depth), self.node(v, depth + 1)))
                        .collect(),
                ))
            }
            "torch.Size" => match arg(0).and_then(|a| self.ints(a)) {
                Some(v) => Node::List(v.into_iter().map(Node::Int).collect()),
                None => self.generic(callee, args, o, depth),
            },
            "torch.device" => {
                let parts: Vec<String> = args
                    .iter()
                    .map(|&a| match self.m.get(self.m.resolve(a)) {
                        Value::Str(s) => s.to_string(),
                        Value::Int(i) => i.to_string(),
                        _ => String::new(),
                    })
                    .filter(|s| !s.is_empty())
                    .collect();
                Node::Str(parts.join(":"))
            }
            "builtins.set" | "builtins.frozenset" => match arg(0) {
                Some(a) => self.node(a, depth + 1),
                None => Node::List(Vec::new()),
            },
            "torch.serialization._get_layout" => arg(0)
                .map(|a| self.node(a, depth + 1))
                .unwrap_or(Node::None),
            "copyreg._reconstructor" | "copyreg.__newobj__" => {
                let class = arg(0)
                    .and_then(|a| self.global_name(a))
                    .unwrap_or_else(|| callee.to_string());
                self.object(class, &[], o, depth)
            }
            _ => self.generic(callee, args, o, depth),
        }
    }

    fn generic(
        &mut self,
        callee: &str,
        args: &[Id],
        o: &crate::pickle::Object,
        depth: u32,
    ) -> Node {
        self.object(callee.to_string(), args, o, depth)
    }

    fn object(
        &mut self,
        class: String,
        args: &[Id],
        o: &crate::pickle::Object,
        depth: u32,
    ) -> Node {
        let mut fields = Vec::new();
        if !args.is_empty() {
            let a: Vec<Node> = args.iter().map(|&x| self.node(x, depth + 1)).collect();
            fields.push(("args".to_string(), Node::List(a)));
        }
        for &s in &o.state {
            // Common shapes: a dict (__dict__), or (dict, slots) tuple.
            let s = self.m.resolve(s);
            match self.m.get(s) {
                Value::Dict(items) => {
                    let items = dedupe_pairs(items);
                    for (k, v) in items {
                        let k = self.key_text(k, depth);
                        let v = self.node(v, depth + 1);
                        fields.push((k, v));
                    }
                }
                Value::Tuple(t) if t.len() == 2 => {
                    let t = t.clone();
                    for part in t {
                        if let Value::Dict(items) = self.m.get(part) {
                            let items = dedupe_pairs(items);
                            for (k, v) in items {
                                let k = self.key_text(k, depth);
                                let v = self.node(v, depth + 1);
                                fields.push((k, v));
                            }
                        }
                    }
                }
                _ => {
                    let v = self.node(s, depth + 1);
                    fields.push(("state".into(), v));
                }
            }
        }
        if !o.items.is_empty() {
            let items: Vec<Node> = o.items.iter().map(|&x| self.node(x, depth + 1)).collect();
            fields.push(("items".into(), Node::List(items)));
        }
        for &(k, v) in &o.dict_items {
            let k = self.key_text(k, depth);
            let v = self.node(v, depth + 1);
            fields.push((k, v));
        }
        Node::Object { class, fields }
    }
}

fn dedupe_pairs(items: &[(Id, Id)]) -> Vec<(Id, Id)> {
    items.to_vec()
}

/// Python dict semantics: a later SETITEM for the same key replaces the value in place.
fn dedupe_nodes(items: Vec<(String, Node)>) -> Vec<(String, Node)> {
    let mut pos: FxHashMap<String, usize> = FxHashMap::default();
    let mut out: Vec<(String, Node)> = Vec::with_capacity(items.len());
    for (k, v) in items {
        match pos.get(&k) {
            Some(&i) => out[i].1 = v,
            None => {
                pos.insert(k.clone(), out.len());
                out.push((k, v));
            }
        }
    }
    out
}

fn bigint_text(b: &[u8]) -> String {
    if b.iter().all(|c| c.is_ascii_digit() || *c == b'-') {
        return String::from_utf8_lossy(b).into_owned();
    }
    let hex: String = b.iter().rev().map(|x| format!("{x:02x}")).collect();
    format!("0x{hex}")
}

/// Bytes of a storage (for reading): returns (base offset into `src` or owned bytes, length).
enum StorageBytes {
    At(u64, u64),
    Owned(Vec<u8>),
}

fn storage_bytes(ck: &Checkpoint, src: &dyn Source, key: &str) -> Result<StorageBytes, Error> {
    match ck.storages.get(key) {
        Some(StorageLoc::Zip {
            data_offset,
            compressed_size,
            size,
            method,
        }) => match method {
            0 => Ok(StorageBytes::At(
                *data_offset,
                (*compressed_size).min(*size),
            )),
            8 => {
                let mut raw = vec![0u8; *compressed_size as usize];
                src.read_at(*data_offset, &mut raw)
                    .map_err(|e| Error::io(&ck.path, e))?;
                Ok(StorageBytes::Owned(
                    zip::inflate(&raw, *size).map_err(Error::Invalid)?,
                ))
            }
            m => Err(Error::Unsupported(format!(
                "storage {key} uses zip method {m}"
            ))),
        },
        Some(StorageLoc::Range { offset, len }) => Ok(StorageBytes::At(*offset, *len)),
        Some(StorageLoc::Missing) | None => {
            Err(Error::Invalid(format!("storage {key} has no data record")))
        }
    }
}

fn stream_tensor(
    ck: &Checkpoint,
    src: &dyn Source,
    t: &TensorInfo,
    sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
) -> Result<(), Error> {
    let el = element_size(&t.dtype)
        .ok_or_else(|| Error::Unsupported(format!("unknown element size for dtype {}", t.dtype)))?;
    let st = t
        .storage
        .as_ref()
        .ok_or_else(|| Error::Invalid("tensor has no storage (meta tensor)".into()))?;
    if t.shape.len() != t.stride.len() {
        return Err(Error::Invalid("shape and stride lengths differ".into()));
    }
    if t.shape.iter().any(|&d| d < 0) || t.stride.iter().any(|&d| d < 0) || t.storage_offset < 0 {
        return Err(Error::Invalid("negative size, stride or offset".into()));
    }
    let numel = t.numel();
    if numel == 0 {
        return Ok(());
    }
    let bytes = storage_bytes(ck, src, &st.key)?;
    let storage_len = match &bytes {
        StorageBytes::At(_, l) => *l,
        StorageBytes::Owned(v) => v.len() as u64,
    };
    let base_el = (t.storage_offset as u64)
        .checked_add(st.view_offset.max(0) as u64)
        .ok_or_else(|| Error::Invalid("offset overflow".into()))?;
    let mut max_el = base_el;
    for (&s, &d) in t.shape.iter().zip(&t.stride) {
        max_el = (s as u64 - 1)
            .checked_mul(d as u64)
            .and_then(|x| x.checked_add(max_el))
            .ok_or_else(|| Error::Invalid("view extent overflows".into()))?;
    }
    let span_end = (max_el + 1)
        .checked_mul(el)
        .ok_or_else(|| Error::Invalid("size overflow".into()))?;
    if span_end > storage_len {
        return Err(Error::Invalid(format!(
            "view reaches byte {span_end} of storage {} which holds only {storage_len} bytes",
            st.key
        )));
    }
    let read = |off: u64, buf: &mut [u8]| -> Result<(), Error> {
        match &bytes {
            StorageBytes::At(b, _) => src
                .read_at(b + off, buf)
                .map_err(|e| Error::io(&ck.path, e)),
            StorageBytes::Owned(v) => {
                let s = v
                    .get(off as usize..off as usize + buf.len())
                    .ok_or_else(|| Error::Invalid("read past storage".into()))?;
                buf.copy_from_slice(s);
                Ok(())
            }
        }
    };
    let swap = if ck.big_endian {
        if t.dtype.starts_with("complex") {
            el / 2
        } else {
            el
        }
    } else {
        1
    };
    let emit =
        |buf: &mut [u8], sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>| -> Result<(), Error> {
            if swap > 1 {
                for c in buf.chunks_mut(swap as usize) {
                    c.reverse();
                }
            }
            sink(buf).map_err(|e| Error::Invalid(format!("write failed: {e}")))
        };
    const CHUNK: u64 = 1 << 20;
    if t.is_contiguous() {
        let total = numel * el;
        let mut buf = vec![0u8; total.min(CHUNK) as usize];
        let mut done = 0u64;
        while done < total {
            let n = (total - done).min(CHUNK) as usize;
            read(base_el * el + done, &mut buf[..n])?;
            emit(&mut buf[..n], sink)?;
            done += n as u64;
        }
        return Ok(());
    }
    // Non-contiguous view: gather. Read the whole span once when it is not much larger than the
    // tensor; otherwise read run by run.
    let span_start = base_el * el;
    let span_len = span_end - span_start;
    let window: Option<Vec<u8>> = if span_len <= numel * el + (16 << 20) {
        let mut w = vec![0u8; span_len as usize];
        read(span_start, &mut w)?;
        Some(w)
    } else {
        None
    };
    let nd = t.shape.len();
    let last = nd - 1;
    let run = t.shape[last] as u64;
    let run_contig = t.stride[last] == 1;
    let mut idx = vec![0i64; nd];
    let mut out = Vec::with_capacity(CHUNK as usize + (run * el) as usize);
    let mut tmp = vec![0u8; el as usize];
    loop {
        let mut off_el = base_el;
        for (i, st) in idx.iter().zip(&t.stride).take(last) {
            off_el += (i * st) as u64;
        }
        if run_contig {
            let start = off_el * el;
            let n = (run * el) as usize;
            match &window {
                Some(w) => {
                    let s = (start - span_start) as usize;
                    out.extend_from_slice(&w[s..s + n]);
                }
                None => {
                    let l = out.len();
                    out.resize(l + n, 0);
                    read(start, &mut out[l..])?;
                }
            }
        } else {
            for j in 0..run {
                let start = (off_el + j * t.stride[last] as u64) * el;
                match &window {
                    Some(w) => {
                        let s = (start - span_start) as usize;
                        out.extend_from_slice(&w[s..s + el as usize]);
                    }
                    None => {
                        read(start, &mut tmp)?;
                        out.extend_from_slice(&tmp);
                    }
                }
            }
        }
        if out.len() as u64 >= CHUNK {
            emit(&mut out, sink)?;
            out.clear();
        }
        // advance outer index
        let mut d = last;
        loop {
            if d == 0 {
                if !out.is_empty() {
                    emit(&mut out, sink)?;
                }
                return Ok(());
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < t.shape[d] {
                break;
            }
            idx[d] = 0;
        }
        if nd == 1 {
            if !out.is_empty() {
                emit(&mut out, sink)?;
            }
            return Ok(());
        }
    }
}

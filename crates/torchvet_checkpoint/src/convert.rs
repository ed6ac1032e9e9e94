//! `torchvet ckpt convert`: torch checkpoints to safetensors, streaming tensor bytes.

use crate::model::{Checkpoint, Node, TensorInfo, TensorKind};
use crate::safetensors::{torch_to_safetensors, SafeFile};
use crate::zip::{FileSource, Source};
use crate::Error;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// What to do with names that share one storage view (tied weights).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SharedPolicy {
    /// Write the bytes once under the first name; record the aliases in `__metadata__`.
    Dedupe,
    /// Write a separate copy for every name.
    Copy,
    /// Refuse, naming the tensors that share.
    Error,
}

/// Conversion settings.
#[derive(Debug, Clone)]
pub struct ConvertOptions {
    /// Subtree to convert (`model_state_dict`, `state_dict`, dotted paths).
    pub key: Option<String>,
    /// Shared-storage policy.
    pub shared: SharedPolicy,
    /// Re-read the output and compare every tensor's bytes.
    pub verify: bool,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            key: None,
            shared: SharedPolicy::Dedupe,
            verify: false,
        }
    }
}

/// What a conversion did.
#[derive(Debug, Clone, Serialize, Default)]
pub struct ConvertSummary {
    /// Tensors written.
    pub tensors: usize,
    /// Data bytes written.
    pub bytes: u64,
    /// Notes (dedupes, materialised views).
    pub notes: Vec<String>,
    /// Verification result, if asked.
    pub verified: Option<bool>,
}

/// Tensors under a subtree, with their full names.
pub fn tensors_under(ck: &Checkpoint, key: Option<&str>) -> Result<Vec<(String, usize)>, Error> {
    let node = match key {
        Some(k) => ck.select(k).ok_or_else(|| {
            let keys = match &ck.root {
                Node::Dict(items) | Node::Object { fields: items, .. } => items
                    .iter()
                    .map(|(k, _)| k.clone())
                    .take(20)
                    .collect::<Vec<_>>()
                    .join(", "),
                _ => String::new(),
            };
            Error::Invalid(format!(
                "no key {k:?} in the checkpoint (top-level keys: {keys})"
            ))
        })?,
        None => &ck.root,
    };
    let sub = Checkpoint {
        path: ck.path.clone(),
        format: ck.format,
        records: Vec::new(),
        root: node.clone(),
        tensors: Vec::new(),
        storages: Default::default(),
        big_endian: ck.big_endian,
        notes: Vec::new(),
        protocol: ck.protocol,
    };
    Ok(sub.named_tensors())
}

/// Convert `input` to a safetensors file at `output`.
pub fn convert(
    input: &Path,
    output: &Path,
    opts: &ConvertOptions,
) -> Result<ConvertSummary, Error> {
    convert_with_progress(input, output, opts, &mut |_, _| {})
}

/// [`convert`], calling `progress(written, total)` as tensor bytes are written.
pub fn convert_with_progress(
    input: &Path,
    output: &Path,
    opts: &ConvertOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ConvertSummary, Error> {
    let ck = Checkpoint::open(input)?;
    let src = FileSource::open(input).map_err(|e| Error::io(input, e))?;
    let named = tensors_under(&ck, opts.key.as_deref())?;
    if named.is_empty() {
        return Err(Error::Invalid(format!(
            "{}: no tensors found{}",
            input.display(),
            if opts.key.is_some() {
                " under that key"
            } else {
                ""
            }
        )));
    }
    let mut summary = ConvertSummary::default();
    // Validate dtypes and kinds first: fail before writing anything.
    let mut seen_names = std::collections::HashSet::new();
    for (name, i) in &named {
        let t = &ck.tensors[*i];
        if !seen_names.insert(name.clone()) {
            return Err(Error::Invalid(format!(
                "two tensors are both named {name:?}"
            )));
        }
        if t.kind == TensorKind::Meta || t.storage.is_none() {
            return Err(Error::Unsupported(format!(
                "{name}: meta tensor without data cannot be converted"
            )));
        }
        if t.kind == TensorKind::Quantized || torch_to_safetensors(&t.dtype).is_none() {
            return Err(Error::Unsupported(format!(
                "{name}: dtype {} has no safetensors equivalent (safetensors stores bool, u8/i8-i64, u16-u64, f16, bf16, f32, f64, c64, float8 e4m3/e5m2/e8m0, f4)",
                t.dtype
            )));
        }
    }
    // Shared storages.
    let mut groups: BTreeMap<String, Vec<(String, usize)>> = BTreeMap::new();
    for (name, i) in &named {
        if let Some(s) = &ck.tensors[*i].storage {
            groups
                .entry(s.key.clone())
                .or_default()
                .push((name.clone(), *i));
        }
    }
    let mut aliases: BTreeMap<String, String> = BTreeMap::new();
    for (key, members) in &groups {
        if members.len() < 2 {
            continue;
        }
        let same = |a: &TensorInfo, b: &TensorInfo| {
            a.shape == b.shape
                && a.stride == b.stride
                && a.storage_offset == b.storage_offset
                && a.dtype == b.dtype
        };
        let first = &ck.tensors[members[0].1];
        let names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
        if members.iter().all(|(_, i)| same(first, &ck.tensors[*i])) {
            match opts.shared {
                SharedPolicy::Error => {
                    return Err(Error::Invalid(format!(
                        "tensors {} share storage {key} (tied weights); use --shared dedupe or --shared copy",
                        names.join(", ")
                    )))
                }
                SharedPolicy::Dedupe => {
                    for (n, _) in &members[1..] {
                        aliases.insert(n.clone(), members[0].0.clone());
                    }
                    summary.notes.push(format!(
                        "{} share one storage: written once as {}, the others recorded as aliases in __metadata__",
                        names.join(", "),
                        members[0].0
                    ));
                }
                SharedPolicy::Copy => summary.notes.push(format!("{} share one storage: each written as its own copy", names.join(", "))),
            }
        } else {
            summary.notes.push(format!(
                "{} are different views of storage {key}: each materialised separately",
                names.join(", ")
            ));
        }
    }
    let mut entries: Vec<(&str, &TensorInfo)> = named
        .iter()
        .filter(|(n, _)| !aliases.contains_key(n))
        .map(|(n, i)| (n.as_str(), &ck.tensors[*i]))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    for (n, t) in &entries {
        if !t.is_contiguous() {
            summary.notes.push(format!(
                "{n}: non-contiguous view materialised (strides {:?})",
                t.stride
            ));
        }
    }
    // Header.
    let mut header = serde_json::Map::new();
    let mut meta = serde_json::Map::new();
    meta.insert("format".into(), "pt".into());
    if !aliases.is_empty() {
        meta.insert(
            "torchvet.aliases".into(),
            serde_json::to_string(&aliases).unwrap_or_default().into(),
        );
    }
    header.insert("__metadata__".into(), serde_json::Value::Object(meta));
    let mut off = 0u64;
    for (n, t) in &entries {
        let nb = t.nbytes();
        header.insert(
            n.to_string(),
            serde_json::json!({
                "dtype": torch_to_safetensors(&t.dtype).unwrap_or("U8"),
                "shape": t.shape,
                "data_offsets": [off, off + nb],
            }),
        );
        off += nb;
    }
    let mut hbytes = serde_json::to_vec(&serde_json::Value::Object(header))
        .map_err(|e| Error::Invalid(e.to_string()))?;
    while hbytes.len() % 8 != 0 {
        hbytes.push(b' ');
    }
    let tmp = output.with_extension("safetensors.partial");
    let result = (|| -> Result<(), Error> {
        let f = std::fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        w.write_all(&(hbytes.len() as u64).to_le_bytes())
            .map_err(|e| Error::io(&tmp, e))?;
        w.write_all(&hbytes).map_err(|e| Error::io(&tmp, e))?;
        let total = off;
        let mut done = 0u64;
        progress(0, total);
        for (n, t) in &entries {
            let mut written = 0u64;
            ck.stream_tensor(&src, t, &mut |b: &[u8]| {
                written += b.len() as u64;
                done += b.len() as u64;
                progress(done, total);
                w.write_all(b)
            })
            .map_err(|e| Error::Invalid(format!("{n}: {e}")))?;
            if written != t.nbytes() {
                return Err(Error::Invalid(format!(
                    "{n}: wrote {written} bytes, expected {}",
                    t.nbytes()
                )));
            }
        }
        w.flush().map_err(|e| Error::io(&tmp, e))?;
        Ok(())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, output).map_err(|e| Error::io(output, e))?;
    summary.tensors = entries.len();
    summary.bytes = off;
    if opts.verify {
        summary.verified = Some(verify(&ck, &src, &entries, output)?);
    }
    Ok(summary)
}

fn verify(
    ck: &Checkpoint,
    src: &FileSource,
    entries: &[(&str, &TensorInfo)],
    output: &Path,
) -> Result<bool, Error> {
    let out = FileSource::open(output).map_err(|e| Error::io(output, e))?;
    let sf = SafeFile::open_source(&out)?;
    let by_name: BTreeMap<&str, _> = sf.tensors.iter().map(|t| (t.name.as_str(), t)).collect();
    for (n, t) in entries {
        let Some(o) = by_name.get(n) else {
            return Err(Error::Invalid(format!(
                "verify: {n} missing from the output"
            )));
        };
        let shape: Vec<u64> = t.shape.iter().map(|&d| d as u64).collect();
        if o.shape != shape
            || Some(o.dtype.as_str()) != torch_to_safetensors(&t.dtype)
            || o.len != t.nbytes()
        {
            return Err(Error::Invalid(format!(
                "verify: {n} has the wrong dtype, shape or size in the output"
            )));
        }
        let mut pos = o.start;
        let mut buf = Vec::new();
        let mut mismatch = false;
        ck.stream_tensor(src, t, &mut |b: &[u8]| {
            buf.resize(b.len(), 0);
            out.read_at(pos, &mut buf)?;
            if buf != b {
                mismatch = true;
            }
            pos += b.len() as u64;
            Ok(())
        })?;
        if mismatch {
            return Err(Error::Invalid(format!(
                "verify: bytes of {n} differ from the source"
            )));
        }
    }
    Ok(true)
}

//! `torchvet ckpt diff A B`: what `load_state_dict` would complain about, before calling it.

use crate::convert::tensors_under;
use crate::model::{Checkpoint, TensorInfo};
use crate::zip::FileSource;
use crate::Error;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// A shape or dtype mismatch.
#[derive(Debug, Clone, Serialize)]
pub struct Mismatch {
    /// Tensor name.
    pub name: String,
    /// In A.
    pub a: String,
    /// In B.
    pub b: String,
}

/// Value comparison of one tensor.
#[derive(Debug, Clone, Serialize)]
pub struct ValueDiff {
    /// Tensor name.
    pub name: String,
    /// Maximum absolute difference (null when not comparable).
    pub max_abs_diff: Option<f64>,
    /// Bitwise equal.
    pub identical: bool,
}

/// The diff report.
#[derive(Debug, Clone, Serialize)]
pub struct DiffReport {
    /// File A.
    pub a: String,
    /// File B.
    pub b: String,
    /// Keys in A but not in B (load_state_dict's `missing_keys` when A is the model).
    pub missing_keys: Vec<String>,
    /// Keys in B but not in A (`unexpected_keys`).
    pub unexpected_keys: Vec<String>,
    /// Shape mismatches.
    pub shape_mismatches: Vec<Mismatch>,
    /// dtype mismatches.
    pub dtype_mismatches: Vec<Mismatch>,
    /// Tensors compared by name.
    pub common: usize,
    /// Value differences (with `--values`).
    pub values: Vec<ValueDiff>,
}

impl DiffReport {
    /// True when the two agree on keys, shapes and dtypes (and values, when compared).
    pub fn is_clean(&self) -> bool {
        self.missing_keys.is_empty()
            && self.unexpected_keys.is_empty()
            && self.shape_mismatches.is_empty()
            && self.dtype_mismatches.is_empty()
            && self.values.iter().all(|v| v.identical)
    }
}

/// Compare two checkpoints.
pub fn diff(
    a: &Path,
    b: &Path,
    key_a: Option<&str>,
    key_b: Option<&str>,
    values: bool,
) -> Result<DiffReport, Error> {
    let ca = Checkpoint::open(a)?;
    let cb = Checkpoint::open(b)?;
    let na: BTreeMap<String, usize> = tensors_under(&ca, key_a)?.into_iter().collect();
    let nb: BTreeMap<String, usize> = tensors_under(&cb, key_b)?.into_iter().collect();
    let mut r = DiffReport {
        a: a.display().to_string(),
        b: b.display().to_string(),
        missing_keys: na
            .keys()
            .filter(|k| !nb.contains_key(*k))
            .cloned()
            .collect(),
        unexpected_keys: nb
            .keys()
            .filter(|k| !na.contains_key(*k))
            .cloned()
            .collect(),
        shape_mismatches: Vec::new(),
        dtype_mismatches: Vec::new(),
        common: 0,
        values: Vec::new(),
    };
    let (sa, sb) = if values {
        (
            Some(FileSource::open(a).map_err(|e| Error::io(a, e))?),
            Some(FileSource::open(b).map_err(|e| Error::io(b, e))?),
        )
    } else {
        (None, None)
    };
    for (name, &ia) in &na {
        let Some(&ib) = nb.get(name) else { continue };
        r.common += 1;
        let (ta, tb) = (&ca.tensors[ia], &cb.tensors[ib]);
        if ta.shape != tb.shape {
            r.shape_mismatches.push(Mismatch {
                name: name.clone(),
                a: format!("{:?}", ta.shape),
                b: format!("{:?}", tb.shape),
            });
        }
        if ta.dtype != tb.dtype {
            r.dtype_mismatches.push(Mismatch {
                name: name.clone(),
                a: ta.dtype.clone(),
                b: tb.dtype.clone(),
            });
        }
        if let (Some(sa), Some(sb)) = (&sa, &sb) {
            if ta.shape == tb.shape {
                let va = read_values(&ca, sa, ta);
                let vb = read_values(&cb, sb, tb);
                let (max, identical) = match (va, vb) {
                    (Ok((xa, ba)), Ok((xb, bb))) => {
                        let mut m = 0f64;
                        for (p, q) in xa.iter().zip(&xb) {
                            let d = if (p.is_nan() && q.is_nan()) || p == q {
                                0.0
                            } else {
                                (p - q).abs()
                            };
                            let d = if d.is_nan() { f64::INFINITY } else { d };
                            m = m.max(d);
                        }
                        (Some(m), ba == bb && ta.dtype == tb.dtype)
                    }
                    _ => (None, false),
                };
                r.values.push(ValueDiff {
                    name: name.clone(),
                    max_abs_diff: max,
                    identical,
                });
            }
        }
    }
    Ok(r)
}

fn read_values(
    ck: &Checkpoint,
    src: &FileSource,
    t: &TensorInfo,
) -> Result<(Vec<f64>, Vec<u8>), Error> {
    let mut bytes = Vec::with_capacity(t.nbytes() as usize);
    ck.stream_tensor(src, t, &mut |b: &[u8]| {
        bytes.extend_from_slice(b);
        Ok(())
    })?;
    let vals = decode(&t.dtype, &bytes)
        .ok_or_else(|| Error::Unsupported(format!("cannot compare values of dtype {}", t.dtype)))?;
    Ok((vals, bytes))
}

fn f16_to_f32(h: u16) -> f32 {
    let s = ((h >> 15) & 1) as u32;
    let e = ((h >> 10) & 0x1f) as i32;
    let m = (h & 0x3ff) as u32;
    let v = if e == 0 {
        (m as f32) * 2f32.powi(-24)
    } else if e == 31 {
        if m == 0 {
            f32::INFINITY
        } else {
            f32::NAN
        }
    } else {
        (1.0 + m as f32 / 1024.0) * 2f32.powi(e - 15)
    };
    if s == 1 {
        -v
    } else {
        v
    }
}

/// Decode little-endian elements of a dtype to f64 (complex: both components).
pub fn decode(dtype: &str, b: &[u8]) -> Option<Vec<f64>> {
    macro_rules! arr {
        ($t:ty, $n:expr) => {
            b.chunks_exact($n)
                .map(|c| <$t>::from_le_bytes(c.try_into().unwrap_or([0; $n])) as f64)
                .collect()
        };
    }
    Some(match dtype {
        "float32" | "complex64" => arr!(f32, 4),
        "float64" | "complex128" => arr!(f64, 8),
        "int64" => arr!(i64, 8),
        "uint64" => arr!(u64, 8),
        "int32" => arr!(i32, 4),
        "uint32" => arr!(u32, 4),
        "int16" => arr!(i16, 2),
        "uint16" => arr!(u16, 2),
        "int8" => b.iter().map(|&x| x as i8 as f64).collect(),
        "uint8" | "bool" => b.iter().map(|&x| x as f64).collect(),
        "float16" => b
            .chunks_exact(2)
            .map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]])) as f64)
            .collect(),
        "bfloat16" => b
            .chunks_exact(2)
            .map(|c| f32::from_bits((u16::from_le_bytes([c[0], c[1]]) as u32) << 16) as f64)
            .collect(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_precision_decoding() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(decode("bfloat16", &[0x80, 0x3f]).unwrap(), vec![1.0]);
        assert_eq!(decode("int8", &[0xff]).unwrap(), vec![-1.0]);
    }
}

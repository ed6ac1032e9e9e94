//! safetensors: header reader (validating) and the dtype names.

use crate::zip::Source;
use crate::Error;
use serde_json::Value as Json;

/// One tensor of a safetensors file.
#[derive(Debug, Clone)]
pub struct SafeTensor {
    /// Name.
    pub name: String,
    /// safetensors dtype (`F32`, `BF16`, ...).
    pub dtype: String,
    /// Shape.
    pub shape: Vec<u64>,
    /// Absolute byte offset in the file.
    pub start: u64,
    /// Byte length.
    pub len: u64,
}

/// A parsed safetensors file header.
#[derive(Debug, Clone)]
pub struct SafeFile {
    /// Tensors in header order.
    pub tensors: Vec<SafeTensor>,
    /// `__metadata__`.
    pub metadata: Vec<(String, String)>,
    /// Start of the data section.
    pub data_start: u64,
}

/// Byte size of a safetensors dtype.
pub fn dtype_size(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "BOOL" | "U8" | "I8" | "F8_E4M3" | "F8_E5M2" | "F8_E8M0" | "F8_E4M3FNUZ"
        | "F8_E5M2FNUZ" => 1,
        "F16" | "BF16" | "I16" | "U16" => 2,
        "F32" | "I32" | "U32" => 4,
        "F64" | "I64" | "U64" | "C64" => 8,
        "F4" => 1,
        _ => return None,
    })
}

impl SafeFile {
    /// Parse and validate the header of a safetensors source.
    pub fn open_source<S: Source + ?Sized>(src: &S) -> Result<SafeFile, Error> {
        let len = src.len();
        if len < 8 {
            return Err(Error::Invalid(
                "safetensors: file shorter than 8 bytes".into(),
            ));
        }
        let mut n = [0u8; 8];
        src.read_at(0, &mut n)
            .map_err(|e| Error::Invalid(e.to_string()))?;
        let n = u64::from_le_bytes(n);
        if n > len - 8 || n > 100 << 20 {
            return Err(Error::Invalid(format!(
                "safetensors: header length {n} exceeds the file"
            )));
        }
        let mut h = vec![0u8; n as usize];
        src.read_at(8, &mut h)
            .map_err(|e| Error::Invalid(e.to_string()))?;
        let j: Json = serde_json::from_slice(&h)
            .map_err(|e| Error::Invalid(format!("safetensors: header is not JSON: {e}")))?;
        let obj = j
            .as_object()
            .ok_or_else(|| Error::Invalid("safetensors: header is not an object".into()))?;
        let data_start = 8 + n;
        let data_len = len - data_start;
        let mut tensors = Vec::new();
        let mut metadata = Vec::new();
        for (k, v) in obj {
            if k == "__metadata__" {
                if let Some(m) = v.as_object() {
                    for (mk, mv) in m {
                        metadata.push((mk.clone(), mv.as_str().unwrap_or_default().to_string()));
                    }
                }
                continue;
            }
            let bad = |why: &str| Error::Invalid(format!("safetensors: tensor {k:?}: {why}"));
            let dtype = v
                .get("dtype")
                .and_then(Json::as_str)
                .ok_or_else(|| bad("no dtype"))?
                .to_string();
            let shape: Vec<u64> = v
                .get("shape")
                .and_then(Json::as_array)
                .ok_or_else(|| bad("no shape"))?
                .iter()
                .map(|x| x.as_u64().ok_or_else(|| bad("bad shape")))
                .collect::<Result<_, _>>()?;
            let offs = v
                .get("data_offsets")
                .and_then(Json::as_array)
                .ok_or_else(|| bad("no data_offsets"))?;
            if offs.len() != 2 {
                return Err(bad("data_offsets must have two entries"));
            }
            let b = offs[0].as_u64().ok_or_else(|| bad("bad offset"))?;
            let e = offs[1].as_u64().ok_or_else(|| bad("bad offset"))?;
            if b > e || e > data_len {
                return Err(bad("data_offsets outside the data section"));
            }
            if let Some(sz) = dtype_size(&dtype) {
                let numel = shape
                    .iter()
                    .try_fold(1u64, |a, &d| a.checked_mul(d))
                    .ok_or_else(|| bad("shape overflows"))?;
                let want = if dtype == "F4" {
                    numel.div_ceil(2)
                } else {
                    numel.checked_mul(sz).ok_or_else(|| bad("size overflows"))?
                };
                if want != e - b {
                    return Err(bad(&format!(
                        "{} bytes for shape {shape:?} {dtype}, expected {want}",
                        e - b
                    )));
                }
            }
            tensors.push(SafeTensor {
                name: k.clone(),
                dtype,
                shape,
                start: data_start + b,
                len: e - b,
            });
        }
        Ok(SafeFile {
            tensors,
            metadata,
            data_start,
        })
    }
}

/// The safetensors dtype for a torch dtype name (`float32`), or `None` when it has none.
pub fn torch_to_safetensors(dtype: &str) -> Option<&'static str> {
    Some(match dtype {
        "bool" => "BOOL",
        "uint8" => "U8",
        "int8" => "I8",
        "int16" => "I16",
        "uint16" => "U16",
        "int32" => "I32",
        "uint32" => "U32",
        "int64" => "I64",
        "uint64" => "U64",
        "float16" => "F16",
        "bfloat16" => "BF16",
        "float32" => "F32",
        "float64" => "F64",
        "complex64" => "C64",
        "float8_e4m3fn" => "F8_E4M3",
        "float8_e5m2" => "F8_E5M2",
        "float8_e8m0fnu" => "F8_E8M0",
        "float4_e2m1fn_x2" => "F4",
        _ => return None,
    })
}

/// The torch dtype name of a safetensors dtype.
pub fn safetensors_to_torch(dtype: &str) -> &'static str {
    match dtype {
        "BOOL" => "bool",
        "U8" => "uint8",
        "I8" => "int8",
        "I16" => "int16",
        "U16" => "uint16",
        "I32" => "int32",
        "U32" => "uint32",
        "I64" => "int64",
        "U64" => "uint64",
        "F16" => "float16",
        "BF16" => "bfloat16",
        "F32" => "float32",
        "F64" => "float64",
        "C64" => "complex64",
        "F8_E4M3" => "float8_e4m3fn",
        "F8_E5M2" => "float8_e5m2",
        "F8_E8M0" => "float8_e8m0fnu",
        "F4" => "float4_e2m1fn_x2",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(header: &str, data: &[u8]) -> Vec<u8> {
        let mut v = (header.len() as u64).to_le_bytes().to_vec();
        v.extend_from_slice(header.as_bytes());
        v.extend_from_slice(data);
        v
    }

    #[test]
    fn parses_and_validates() {
        let f = file(
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{"format":"pt"}}"#,
            &[0; 8],
        );
        let s = SafeFile::open_source(f.as_slice()).unwrap();
        assert_eq!(s.tensors.len(), 1);
        assert_eq!(s.tensors[0].len, 8);
        assert_eq!(s.metadata, vec![("format".into(), "pt".into())]);
        let bad = file(
            r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#,
            &[0; 8],
        );
        assert!(SafeFile::open_source(bad.as_slice()).is_err());
        let outside = file(
            r#"{"a":{"dtype":"U8","shape":[9],"data_offsets":[0,9]}}"#,
            &[0; 8],
        );
        assert!(SafeFile::open_source(outside.as_slice()).is_err());
    }
}

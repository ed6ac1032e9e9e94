//! `torchvet ckpt diff CKPT --against model.py::Net`: compare a checkpoint with the
//! `state_dict` a model class would produce (from static analysis of its source), before anyone
//! calls `load_state_dict`.

use crate::convert::tensors_under;
use crate::model::Checkpoint;
use crate::Error;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Prefixes that wrappers add to every key (DDP / DataParallel, `torch.compile`).
const WRAPPER_PREFIXES: [&str; 2] = ["module.", "_orig_mod."];

/// A shape that differs between the model and the checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShapeMismatch {
    /// Checkpoint key (after any stripped prefix).
    pub name: String,
    /// Shape the model class would create.
    pub model: Vec<u64>,
    /// Shape in the checkpoint.
    pub checkpoint: Vec<i64>,
}

/// The result of comparing a checkpoint with a model class.
#[derive(Debug, Clone, Serialize)]
pub struct AgainstReport {
    /// The checkpoint file.
    pub checkpoint: String,
    /// The model, as `FILE.py::Class`.
    pub model: String,
    /// The checkpoint subtree compared (`--key`).
    pub key: Option<String>,
    /// A wrapper prefix (`module.`, `_orig_mod.`) stripped from every checkpoint key.
    pub stripped_prefix: Option<String>,
    /// Keys the model expects that the checkpoint lacks (load_state_dict's `missing_keys`).
    pub missing_keys: Vec<String>,
    /// Keys of the checkpoint the model does not have (`unexpected_keys`).
    pub unexpected_keys: Vec<String>,
    /// Keys present on both sides with different shapes.
    pub shape_mismatches: Vec<ShapeMismatch>,
    /// Keys matched on both sides.
    pub common: usize,
    /// Of those, keys whose model-side shape is unknown (compared by name only).
    pub unknown_shapes: usize,
    /// Remarks: stripped prefixes, what the static analysis could not follow.
    pub notes: Vec<String>,
}

impl AgainstReport {
    /// True when the keys (after any stripped wrapper prefix) and known shapes agree.
    pub fn is_clean(&self) -> bool {
        // Keys that match only after stripping `module.`/`_orig_mod.` still make a strict
        // `load_state_dict` fail: that is a difference worth an exit code of 1.
        self.stripped_prefix.is_none()
            && self.missing_keys.is_empty()
            && self.unexpected_keys.is_empty()
            && self.shape_mismatches.is_empty()
    }

    /// Readable text report.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "checkpoint: {}{}\nmodel: {}\n{} tensors in common",
            self.checkpoint,
            self.key
                .as_deref()
                .map(|k| format!(" (key {k})"))
                .unwrap_or_default(),
            self.model,
            self.common
        );
        if self.unknown_shapes > 0 {
            s.push_str(&format!(
                " ({} compared by name only: shape unknown statically)",
                self.unknown_shapes
            ));
        }
        s.push('\n');
        for n in &self.notes {
            s.push_str(&format!("note: {n}\n"));
        }
        for k in &self.missing_keys {
            s.push_str(&format!("missing (in model, not in checkpoint): {k}\n"));
        }
        for k in &self.unexpected_keys {
            s.push_str(&format!("unexpected (in checkpoint, not in model): {k}\n"));
        }
        for m in &self.shape_mismatches {
            s.push_str(&format!(
                "shape mismatch: {}: model {:?} vs checkpoint {:?}\n",
                m.name, m.model, m.checkpoint
            ));
        }
        if self.is_clean() {
            s.push_str("no differences\n");
        }
        s
    }
}

/// Split `FILE.py::Class` into the file and the optional class.
pub fn parse_model_spec(spec: &str) -> (&str, Option<&str>) {
    match spec.rsplit_once("::") {
        Some((f, c)) if !c.is_empty() => (f, Some(c)),
        Some((f, _)) => (f, None),
        None => (spec, None),
    }
}

/// Compare checkpoint `ckpt` (or its subtree `key`) with the class named by `spec`
/// (`FILE.py::Class`; the class may be omitted when the file defines exactly one module).
pub fn diff_against(ckpt: &Path, key: Option<&str>, spec: &str) -> Result<AgainstReport, Error> {
    let (file, class) = parse_model_spec(spec);
    let path = Path::new(file);
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let source = String::from_utf8_lossy(&bytes);
    diff_against_source(ckpt, key, &source, class, spec)
}

/// Like [`diff_against`], with the Python source given directly; `label` names the model in the
/// report.
pub fn diff_against_source(
    ckpt: &Path,
    key: Option<&str>,
    source: &str,
    class: Option<&str>,
    label: &str,
) -> Result<AgainstReport, Error> {
    let cards = torchvet_summary::summarize(source, class)
        .map_err(|e| Error::Invalid(format!("{label}: {e}")))?;
    let card = match (class, cards.as_slice()) {
        (_, [one]) => one,
        (Some(c), many) => many.iter().find(|m| m.name == c).ok_or_else(|| {
            Error::Invalid(format!("{label}: no nn.Module class `{c}` in the file"))
        })?,
        (None, []) => {
            return Err(Error::Invalid(format!(
                "{label}: no nn.Module class in the file"
            )))
        }
        (None, many) => {
            let names: Vec<&str> = many.iter().map(|m| m.name.as_str()).collect();
            return Err(Error::Invalid(format!(
                "{label}: several nn.Module classes ({}); name one as FILE.py::Class",
                names.join(", ")
            )));
        }
    };
    let expected = torchvet_summary::expected_state_dict(card);
    let ck = Checkpoint::open(ckpt)?;
    let named = tensors_under(&ck, key)?;
    let keys: Vec<(String, Vec<i64>)> = named
        .into_iter()
        .filter_map(|(n, i)| ck.tensors.get(i).map(|t| (n, t.shape.clone())))
        .collect();

    // Strip wrapper prefixes (possibly stacked: `_orig_mod.module.`) while every key has one;
    // keep the depth with the fewest key differences (the unstripped keys win ties).
    let mut cmp = compare(&expected, &keys);
    let mut stripped = String::new();
    let mut prefix = String::new();
    let mut current = keys;
    while let Some(p) = WRAPPER_PREFIXES
        .iter()
        .find(|p| !current.is_empty() && current.iter().all(|(k, _)| k.starts_with(*p)))
    {
        current = current
            .iter()
            .map(|(k, s)| (k[p.len()..].to_string(), s.clone()))
            .collect();
        prefix.push_str(p);
        let c = compare(&expected, &current);
        if c.key_differences() < cmp.key_differences() {
            cmp = c;
            stripped.clone_from(&prefix);
        }
    }

    let mut notes = Vec::new();
    if !stripped.is_empty() {
        notes.push(format!(
            "every checkpoint key starts with `{stripped}` (added by DistributedDataParallel/\
             DataParallel or torch.compile); keys compared without it. load_state_dict needs the \
             prefix removed first (e.g. torch.nn.modules.utils.consume_prefix_in_state_dict_if_present)"
        ));
    }
    notes.extend(card.notes.iter().map(|n| format!("model analysis: {n}")));
    Ok(AgainstReport {
        checkpoint: ckpt.display().to_string(),
        model: label.to_string(),
        key: key.map(str::to_string),
        stripped_prefix: (!stripped.is_empty()).then_some(stripped),
        missing_keys: cmp.missing,
        unexpected_keys: cmp.unexpected,
        shape_mismatches: cmp.shapes,
        common: cmp.common,
        unknown_shapes: cmp.unknown,
        notes,
    })
}

#[derive(Debug, Default)]
struct Comparison {
    missing: Vec<String>,
    unexpected: Vec<String>,
    shapes: Vec<ShapeMismatch>,
    common: usize,
    unknown: usize,
}

impl Comparison {
    fn key_differences(&self) -> usize {
        self.missing.len() + self.unexpected.len()
    }
}

/// Does `key` match `pattern`, where a `*` segment matches any one segment?
fn wildcard_match(pattern: &str, key: &str) -> bool {
    let mut p = pattern.split('.');
    let mut k = key.split('.');
    loop {
        match (p.next(), k.next()) {
            (None, None) => return true,
            (Some(a), Some(b)) if a == b || (a == "*" && !b.is_empty()) => {}
            _ => return false,
        }
    }
}

fn same_shape(model: &[u64], ck: &[i64]) -> bool {
    model.len() == ck.len()
        && model
            .iter()
            .zip(ck)
            .all(|(&m, &c)| u64::try_from(c).is_ok_and(|c| c == m))
}

fn compare(expected: &[(String, Option<Vec<u64>>)], ck: &[(String, Vec<i64>)]) -> Comparison {
    let index: BTreeMap<&str, usize> = ck
        .iter()
        .enumerate()
        .map(|(i, (k, _))| (k.as_str(), i))
        .collect();
    let mut used = vec![false; ck.len()];
    let mut c = Comparison::default();
    let check = |c: &mut Comparison, name: &str, shape: &Option<Vec<u64>>, i: usize| {
        c.common += 1;
        match shape {
            None => c.unknown += 1,
            Some(m) => {
                if !same_shape(m, &ck[i].1) {
                    c.shapes.push(ShapeMismatch {
                        name: name.to_string(),
                        model: m.clone(),
                        checkpoint: ck[i].1.clone(),
                    });
                }
            }
        }
    };
    // Exact keys first, so a wildcard never steals a key that is named literally.
    for (k, shape) in expected.iter().filter(|(k, _)| !k.contains('*')) {
        match index.get(k.as_str()) {
            Some(&i) if !used[i] => {
                used[i] = true;
                check(&mut c, k, shape, i);
            }
            Some(_) => {}
            None => c.missing.push(k.clone()),
        }
    }
    for (pat, shape) in expected.iter().filter(|(k, _)| k.contains('*')) {
        let mut any = false;
        for (i, (k, _)) in ck.iter().enumerate() {
            if !used[i] && wildcard_match(pat, k) {
                used[i] = true;
                any = true;
                check(&mut c, k, shape, i);
            }
        }
        if !any {
            c.missing.push(pat.clone());
        }
    }
    c.unexpected = ck
        .iter()
        .zip(&used)
        .filter(|(_, &u)| !u)
        .map(|((k, _), _)| k.clone())
        .collect();
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_one_segment() {
        assert!(wildcard_match("blocks.*.weight", "blocks.12.weight"));
        assert!(!wildcard_match("blocks.*.weight", "blocks.1.2.weight"));
        assert!(!wildcard_match("blocks.*.weight", "blocks.1.bias"));
        assert!(wildcard_match("fc.bias", "fc.bias"));
    }

    #[test]
    fn spec_parsing() {
        assert_eq!(parse_model_spec("m.py::Net"), ("m.py", Some("Net")));
        assert_eq!(parse_model_spec("a/b.py"), ("a/b.py", None));
        assert_eq!(parse_model_spec("c:\\x.py::N"), ("c:\\x.py", Some("N")));
    }

    #[test]
    fn comparison_counts_unknown_and_wildcards() {
        let exp = vec![
            ("fc.weight".to_string(), Some(vec![2, 3])),
            ("blocks.*.weight".to_string(), Some(vec![4])),
            ("norm.weight".to_string(), None),
            ("gone".to_string(), Some(vec![1])),
        ];
        let ck = vec![
            ("fc.weight".to_string(), vec![3, 2]),
            ("blocks.0.weight".to_string(), vec![4]),
            ("blocks.1.weight".to_string(), vec![5]),
            ("norm.weight".to_string(), vec![7]),
            ("extra".to_string(), vec![1]),
        ];
        let c = compare(&exp, &ck);
        assert_eq!(c.missing, vec!["gone".to_string()]);
        assert_eq!(c.unexpected, vec!["extra".to_string()]);
        let names: Vec<&str> = c.shapes.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, vec!["fc.weight", "blocks.1.weight"]);
        assert_eq!((c.common, c.unknown), (4, 1));
    }
}

//! `torchvet ckpt diff CKPT --against FILE.py::Class`, on checkpoints built with the crate's
//! `testing` writer and small model classes written to a temporary directory.

use clap::Parser;
use std::path::{Path, PathBuf};
use torchvet_checkpoint::against::diff_against;
use torchvet_checkpoint::cli::{run, CkptArgs};
use torchvet_checkpoint::testing::{state_dict_pickle, torch_zip, PickleWriter};

const MODEL: &str = r#"
import torch.nn as nn

class Net(nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.blocks = nn.ModuleList([nn.Linear(3, 3) for _ in range(depth)])
        self.head = nn.Linear(3, 2, bias=False)

class Other(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(2, 2)
"#;

/// Write a float32 state_dict checkpoint with these keys and shapes; with `nest`, the
/// state_dict sits under that key of a top-level dict (`{"model_state_dict": {...}}`).
fn write_ckpt(path: &Path, tensors: &[(&str, &[i64])], nest: Option<&str>) {
    let mut pkl = state_dict_pickle(tensors);
    if let Some(key) = nest {
        // Drop the inner PROTO 2 and STOP, wrap in EMPTY_DICT key <state_dict> SETITEM STOP.
        let inner = pkl[2..pkl.len() - 1].to_vec();
        let mut w = PickleWriter::proto(2);
        w.raw(b"}").binunicode(key).raw(&inner).raw(b"s.");
        pkl = w.finish();
    }
    let data: Vec<(String, Vec<u8>)> = tensors
        .iter()
        .enumerate()
        .map(|(i, (_, s))| {
            (
                i.to_string(),
                vec![0u8; 4 * s.iter().product::<i64>() as usize],
            )
        })
        .collect();
    let recs: Vec<(&str, &[u8])> = data
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();
    std::fs::write(path, torch_zip("archive", &pkl, &recs)).unwrap();
}

fn good_keys(prefix: &str) -> Vec<(String, Vec<i64>)> {
    [
        ("fc.weight", vec![3, 4]),
        ("fc.bias", vec![3]),
        ("blocks.0.weight", vec![3, 3]),
        ("blocks.0.bias", vec![3]),
        ("blocks.1.weight", vec![3, 3]),
        ("blocks.1.bias", vec![3]),
        ("head.weight", vec![2, 3]),
    ]
    .into_iter()
    .map(|(k, s)| (format!("{prefix}{k}"), s))
    .collect()
}

fn write(path: &Path, keys: &[(String, Vec<i64>)]) {
    write_nested(path, keys, None)
}

fn write_nested(path: &Path, keys: &[(String, Vec<i64>)], nest: Option<&str>) {
    let t: Vec<(&str, &[i64])> = keys
        .iter()
        .map(|(k, s)| (k.as_str(), s.as_slice()))
        .collect();
    write_ckpt(path, &t, nest);
}

struct Env {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    spec: String,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let model = dir.join("model.py");
    std::fs::write(&model, MODEL).unwrap();
    let spec = format!("{}::Net", model.display());
    Env {
        _tmp: tmp,
        dir,
        spec,
    }
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: CkptArgs,
}

fn cli(args: &[&str]) -> i32 {
    let mut v = vec!["torchvet-ckpt"];
    v.extend_from_slice(args);
    run(&Cli::try_parse_from(v).unwrap().args)
}

#[test]
fn matching_checkpoint_is_clean() {
    let e = env();
    let ck = e.dir.join("good.pt");
    write(&ck, &good_keys(""));
    let r = diff_against(&ck, None, &e.spec).unwrap();
    assert!(r.is_clean(), "{}", r.to_text());
    assert_eq!(r.common, 7);
    assert!(r.stripped_prefix.is_none());
    assert!(r.to_text().contains("no differences"));
    let p = ck.to_string_lossy().to_string();
    assert_eq!(cli(&["diff", &p, "--against", &e.spec]), 0);
    assert_eq!(
        cli(&["diff", "--against", &e.spec, &p, "--format", "json"]),
        0
    );
}

#[test]
fn differences_are_named() {
    let e = env();
    let ck = e.dir.join("bad.pt");
    let mut keys = good_keys("");
    keys.retain(|(k, _)| k != "fc.bias");
    keys.push(("extra.weight".to_string(), vec![1]));
    for (k, s) in keys.iter_mut() {
        if k == "head.weight" {
            *s = vec![5, 3];
        }
    }
    write(&ck, &keys);
    let r = diff_against(&ck, None, &e.spec).unwrap();
    assert_eq!(r.missing_keys, vec!["fc.bias".to_string()]);
    assert_eq!(r.unexpected_keys, vec!["extra.weight".to_string()]);
    assert_eq!(r.shape_mismatches.len(), 1);
    assert_eq!(r.shape_mismatches[0].name, "head.weight");
    assert_eq!(r.shape_mismatches[0].model, vec![2, 3]);
    assert_eq!(r.shape_mismatches[0].checkpoint, vec![5, 3]);
    let text = r.to_text();
    for needle in [
        "missing (in model, not in checkpoint): fc.bias",
        "unexpected (in checkpoint, not in model): extra.weight",
        "shape mismatch: head.weight: model [2, 3] vs checkpoint [5, 3]",
    ] {
        assert!(text.contains(needle), "{needle:?} not in\n{text}");
    }
    let p = ck.to_string_lossy().to_string();
    assert_eq!(cli(&["diff", &p, "--against", &e.spec]), 1);
    assert_eq!(
        cli(&["diff", &p, "--against", &e.spec, "--format", "json"]),
        1
    );
}

#[test]
fn wrapper_prefixes_are_stripped_with_a_note() {
    let e = env();
    for prefix in ["module.", "_orig_mod.", "_orig_mod.module."] {
        let ck = e.dir.join("ddp.pt");
        write(&ck, &good_keys(prefix));
        let r = diff_against(&ck, None, &e.spec).unwrap();
        // Keys and shapes agree once the prefix is stripped, but a strict load_state_dict
        // would still fail: not clean, and nothing else is reported.
        assert!(!r.is_clean(), "{prefix}: {}", r.to_text());
        assert!(
            r.missing_keys.is_empty()
                && r.unexpected_keys.is_empty()
                && r.shape_mismatches.is_empty()
        );
        assert_eq!(r.stripped_prefix.as_deref(), Some(prefix));
        assert!(r.to_text().contains(&format!(
            "note: every checkpoint key starts with `{prefix}`"
        )));
    }
}

#[test]
fn nested_key_and_errors() {
    let e = env();
    // A training checkpoint whose state_dict sits under `model_state_dict`: --key selects it.
    let ck = e.dir.join("nested.pt");
    write_nested(&ck, &good_keys(""), Some("model_state_dict"));
    let p = ck.to_string_lossy().to_string();
    let r = diff_against(&ck, Some("model_state_dict"), &e.spec).unwrap();
    assert!(r.is_clean(), "{}", r.to_text());
    assert_eq!(r.common, 7);
    assert_eq!(
        cli(&[
            "diff",
            &p,
            "--against",
            &e.spec,
            "--key",
            "model_state_dict"
        ]),
        0
    );
    assert_eq!(cli(&["diff", &p, "--against", &e.spec, "--key", "nope"]), 2);
    // Unknown class, unknown file, ambiguous file, --values with --against.
    let model = e.dir.join("model.py").to_string_lossy().to_string();
    assert_eq!(
        cli(&["diff", &p, "--against", &format!("{model}::Nope")]),
        2
    );
    assert_eq!(cli(&["diff", &p, "--against", "/nonexistent/m.py::Net"]), 2);
    assert_eq!(cli(&["diff", &p, "--against", &model]), 2);
    assert!(Cli::try_parse_from(["t", "diff", &p, "--against", &e.spec, "--values"]).is_err());
    assert!(Cli::try_parse_from(["t", "diff", &p, &p, "--against", &e.spec]).is_err());
    assert!(Cli::try_parse_from(["t", "diff", &p]).is_err());
}

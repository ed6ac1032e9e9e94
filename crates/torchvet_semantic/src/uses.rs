//! How a value is used at the places it is read: facts about one read, judged from the
//! expression or statement around it.
//!
//! The question answered here is "can this read of a tensor meet another tensor's device?".
//! Some reads never can: asking for the shape (`t.size()`, `t.shape`, `len(t)`, `t.dim()`,
//! `t.ndim`, `t.numel()`) only reads metadata, and copying the tensor into another one
//! (`buf[i] = t`, `buf.copy_(t)`) works across devices because a copy moves the data. Every
//! other read (arithmetic, a torch function or a module call with other tensors, a method
//! that computes) may meet a tensor on another device.
use crate::bindings::Scopes;
use crate::helpers;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprContext, Stmt};

/// Does this call make the host wait for the device, by its spelling alone? It reads a
/// result back into Python (`t.item()`, `t.tolist()`, `t.numpy()`, `t.cpu()`, `t.to("cpu")`,
/// `float(t)` / `int(t)` / `bool(t)`, `torch.equal` / `torch.allclose`, decoding token ids
/// with `tokenizer.decode(ids)` / `batch_decode`), or synchronises explicitly
/// (`torch.cuda.synchronize()`, `stream.synchronize()`, `event.elapsed_time(...)`,
/// `event.wait()`, `torch.utils.benchmark`). `q` is the callee's qualified name, if the
/// caller's bindings resolve it (a builtin such as `float` resolves to nothing).
///
/// Calls whose waiting depends on what they are called on (a library model's `.generate()`,
/// `print` of a tensor) are for the caller to judge with its value facts.
pub fn waits_for_device(call: &ruff_python_ast::ExprCall, q: Option<&str>) -> bool {
    if let Some((m, recv)) = helpers::method_call(call) {
        if matches!(
            m,
            "synchronize" | "item" | "tolist" | "numpy" | "elapsed_time" | "wait" | "batch_decode"
        ) {
            return true;
        }
        // `tokenizer.decode(ids)` reads the ids back; `vae.decode(z)` is GPU work.
        if m == "decode"
            && helpers::dotted(recv).is_some_and(|r| {
                let r = r.to_ascii_lowercase();
                r.contains("tokenizer") || r.contains("processor")
            })
        {
            return true;
        }
        if m == "cpu" && call.arguments.args.is_empty() {
            return true;
        }
        if m == "to" {
            let target = helpers::argument(call, "device", 0);
            if target.and_then(helpers::str_value) == Some("cpu") {
                return true;
            }
        }
    }
    if let Expr::Name(n) = &*call.func {
        if matches!(n.id.as_str(), "float" | "int" | "bool") && q.is_none() {
            return true;
        }
    }
    q.is_some_and(|q| {
        q.starts_with("torch.utils.benchmark")
            || q.starts_with("torch.cuda.Event")
            || matches!(
                q,
                "torch.cuda.synchronize" | "torch.equal" | "torch.allclose"
            )
    })
}

/// Attributes that only describe a tensor's shape.
const SHAPE_ATTRIBUTES: &[&str] = &["shape", "ndim"];

/// Methods that only describe a tensor's shape.
const SHAPE_METHODS: &[&str] = &["size", "dim", "ndimension", "numel", "nelement"];

/// Does `body` (nested definitions included) read an expression matched by `is_target` in a
/// way that can meet another device? Shape reads and copies into another tensor do not
/// count; an augmented assignment to the target (`t += x`) does.
pub fn device_sensitive_read(body: &[Stmt], is_target: &dyn Fn(&Expr) -> bool) -> bool {
    device_sensitive_read_with(body, is_target, false)
}

/// [`device_sensitive_read`], where the caller knows whether the target is one-dimensional
/// (`torch.linspace(...)`): iterating it (`for f in self.freqs:`, `enumerate(self.freqs)`,
/// a comprehension over it) or indexing it with an integer (`self.freqs[i]` where `i` comes
/// from `for i in range(...)`, or a literal) then yields 0-dim tensors, which combine with
/// tensors on any device, so those are not device-sensitive reads.
pub fn device_sensitive_read_with(
    body: &[Stmt],
    is_target: &dyn Fn(&Expr) -> bool,
    one_dimensional: bool,
) -> bool {
    // Names bound by `for i in range(...)` anywhere in the body: integers.
    let mut range_vars = Vec::new();
    helpers::for_each_own_stmt(body, &mut |st| {
        if let Stmt::For(f) = st {
            if let (Expr::Name(n), Expr::Call(c)) = (&*f.target, &*f.iter) {
                if helpers::name_of(&c.func) == Some("range") {
                    range_vars.push(n.id.to_string());
                }
            }
        }
    });
    let mut finder = SensitiveRead {
        is_target,
        scalar_elements: one_dimensional,
        range_vars,
        found: false,
    };
    finder.visit_body(body);
    finder.found
}

/// Can the value of the local `name` outlive the function whose `body` this is? It does when
/// the function returns or yields it, stores it on an object or in a container
/// (`self.total = total`, `stats["loss"] = total`, `history.append(total)`), or declares it
/// `global` / `nonlocal`. Reads that keep only a number (`total.item()`, `float(total)`)
/// do not count.
pub fn local_outlives_function(body: &[Stmt], name: &str) -> bool {
    struct Finder<'n> {
        name: &'n str,
        found: bool,
    }
    impl Finder<'_> {
        /// Does `expr` hold the value itself (not only a number read from it)?
        fn holds(&self, expr: &Expr) -> bool {
            struct Holds<'n> {
                name: &'n str,
                found: bool,
            }
            impl<'x> Visitor<'x> for Holds<'_> {
                fn visit_expr(&mut self, e: &'x Expr) {
                    if self.found {
                        return;
                    }
                    match e {
                        Expr::Name(n) if n.id.as_str() == self.name => self.found = true,
                        Expr::Call(c)
                            if matches!(helpers::method_call(c), Some(("item" | "tolist", _)))
                                || matches!(
                                    helpers::name_of(&c.func),
                                    Some("float" | "int" | "print" | "len" | "bool")
                                ) => {}
                        _ => visitor::walk_expr(self, e),
                    }
                }
            }
            let mut h = Holds {
                name: self.name,
                found: false,
            };
            h.visit_expr(expr);
            h.found
        }
    }
    impl<'x> Visitor<'x> for Finder<'_> {
        fn visit_stmt(&mut self, stmt: &'x Stmt) {
            if self.found {
                return;
            }
            match stmt {
                Stmt::Return(r) => {
                    if r.value.as_deref().is_some_and(|v| self.holds(v)) {
                        self.found = true;
                    }
                }
                Stmt::Global(g) => {
                    self.found |= g.names.iter().any(|n| n.as_str() == self.name);
                }
                Stmt::Nonlocal(g) => {
                    self.found |= g.names.iter().any(|n| n.as_str() == self.name);
                }
                Stmt::Assign(a)
                    if a.targets.iter().any(|t| !matches!(t, Expr::Name(_)))
                        && self.holds(&a.value) =>
                {
                    self.found = true;
                }
                Stmt::AnnAssign(a)
                    if !matches!(&*a.target, Expr::Name(_))
                        && a.value.as_deref().is_some_and(|v| self.holds(v)) =>
                {
                    self.found = true;
                }
                Stmt::AugAssign(a)
                    if !matches!(&*a.target, Expr::Name(_)) && self.holds(&a.value) =>
                {
                    self.found = true;
                }
                _ => visitor::walk_stmt(self, stmt),
            }
        }
        fn visit_expr(&mut self, expr: &'x Expr) {
            if self.found {
                return;
            }
            match expr {
                Expr::Yield(y) if y.value.as_deref().is_some_and(|v| self.holds(v)) => {
                    self.found = true;
                }
                Expr::YieldFrom(y) if self.holds(&y.value) => self.found = true,
                Expr::Call(c)
                    if matches!(
                        helpers::method_call(c),
                        Some(("append" | "extend" | "insert" | "add" | "put" | "update", _))
                    ) && c.arguments.args.iter().any(|a| self.holds(a)) =>
                {
                    self.found = true;
                }
                _ => visitor::walk_expr(self, expr),
            }
        }
    }
    let mut f = Finder { name, found: false };
    f.visit_body(body);
    f.found
}

/// Is a tensor matched by `is_target` used as a *gradient leaf* in `body` after the offset
/// `after`: something that only works, or only makes sense, on the tensor that collects
/// gradients itself? That is handing it to an optimizer (`is_optimizer` judges a call) or to
/// `add_param_group`, or reading or resetting its `.grad` when nothing calls
/// `.retain_grad()` on it (which makes a non-leaf keep its `.grad`).
///
/// The search ends at a later statement of `body` itself that binds the target again.
///
/// Being differentiated through, summed into a loss, cloned, detached, compared, returned,
/// stored on `self`, or passed as the `gradient` of `backward` are not leaf uses: a non-leaf
/// tensor serves all of them (and `torch.autograd.grad(..., inputs=t)` accepts non-leaf
/// inputs). A value returned or stored is a leaf use only when what receives it shows one
/// (for `self.w`, an optimizer of `self.w` in the class).
pub fn used_as_gradient_leaf(
    body: &[Stmt],
    is_target: &dyn Fn(&Expr) -> bool,
    after: ruff_text_size::TextSize,
    is_optimizer: &dyn Fn(&ruff_python_ast::ExprCall) -> bool,
) -> bool {
    use ruff_text_size::Ranged;
    struct Finder<'t> {
        is_target: &'t dyn Fn(&Expr) -> bool,
        is_optimizer: &'t dyn Fn(&ruff_python_ast::ExprCall) -> bool,
        after: ruff_text_size::TextSize,
        /// Handed to an optimizer.
        found: bool,
        /// `.grad` read or written.
        grad: bool,
        /// `.retain_grad()` called on it.
        retains: bool,
    }
    impl Finder<'_> {
        /// Does `expr` mention the target anywhere (`[w]`, `[{"params": [w, b]}]`)?
        fn mentions(&self, expr: &Expr) -> bool {
            struct M<'t> {
                is_target: &'t dyn Fn(&Expr) -> bool,
                found: bool,
            }
            impl<'x> Visitor<'x> for M<'_> {
                fn visit_expr(&mut self, e: &'x Expr) {
                    if self.found || (self.is_target)(e) {
                        self.found = true;
                        return;
                    }
                    visitor::walk_expr(self, e);
                }
            }
            let mut m = M {
                is_target: self.is_target,
                found: false,
            };
            m.visit_expr(expr);
            m.found
        }
    }
    impl<'x> Visitor<'x> for Finder<'_> {
        fn visit_stmt(&mut self, stmt: &'x Stmt) {
            if self.found || stmt.end() <= self.after {
                return;
            }
            visitor::walk_stmt(self, stmt);
        }
        fn visit_expr(&mut self, expr: &'x Expr) {
            if self.found {
                return;
            }
            if expr.start() >= self.after {
                match expr {
                    Expr::Attribute(a)
                        if a.attr.as_str() == "grad" && (self.is_target)(&a.value) =>
                    {
                        self.grad = true;
                    }
                    Expr::Call(c) if matches!(helpers::method_call(c), Some(("retain_grad", recv)) if (self.is_target)(recv)) =>
                    {
                        self.retains = true;
                    }
                    Expr::Call(c) => {
                        let args = || {
                            c.arguments
                                .args
                                .iter()
                                .chain(c.arguments.keywords.iter().map(|k| &k.value))
                        };
                        let method = helpers::method_call(c);
                        let leaf_call = (self.is_optimizer)(c)
                            || matches!(method, Some(("add_param_group", _)));
                        if leaf_call && args().any(|a| self.mentions(a)) {
                            self.found = true;
                            return;
                        }
                    }
                    _ => {}
                }
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut f = Finder {
        is_target,
        is_optimizer,
        after,
        found: false,
        grad: false,
        retains: false,
    };
    for stmt in body {
        // A later statement of `body` itself that re-binds the target ends the search: what
        // follows uses another tensor (a notebook re-using `b` a few cells down).
        let rebinds = match stmt {
            Stmt::Assign(a) => a.targets.iter().any(is_target),
            Stmt::AnnAssign(a) => a.value.is_some() && is_target(&a.target),
            _ => false,
        };
        if rebinds && stmt.start() >= after {
            break;
        }
        f.visit_stmt(stmt);
        if f.found {
            break;
        }
    }
    f.found || (f.grad && !f.retains)
}

/// Is `expr` the target itself or an indexing of it (`t`, `t[i]`, `t[:, 0]`)?
fn target_or_part(expr: &Expr, is_target: &dyn Fn(&Expr) -> bool) -> bool {
    match expr {
        Expr::Subscript(s) => is_target(expr) || target_or_part(&s.value, is_target),
        _ => is_target(expr),
    }
}

struct SensitiveRead<'t> {
    is_target: &'t dyn Fn(&Expr) -> bool,
    /// Iterating the target yields 0-dim tensors.
    scalar_elements: bool,
    /// Integer loop variables (`for i in range(...)`).
    range_vars: Vec<String>,
    found: bool,
}

/// Methods that move a tensor to another device (when given one).
const DEVICE_MOVES: &[&str] = &["to", "cuda", "type_as"];

/// Methods that compute on one tensor alone (their arguments are shapes, dims or dtypes), so
/// `self.pe.detach().unsqueeze(0).to(x.device)` meets no other tensor before the move.
const UNARY_METHODS: &[&str] = &[
    "detach",
    "clone",
    "float",
    "double",
    "half",
    "bfloat16",
    "long",
    "int",
    "bool",
    "contiguous",
    "unsqueeze",
    "squeeze",
    "view",
    "reshape",
    "expand",
    "repeat",
    "t",
    "transpose",
    "permute",
    "flatten",
    "narrow",
    "requires_grad_",
];

/// Callees that wrap a tensor without computing with another one (`nn.Parameter(t, ...)`).
const WRAPPERS: &[&str] = &["Parameter", "Variable", "as_tensor", "tensor", "Tensor"];

/// Does `call` move its receiver to a device: `.cuda()`, `.type_as(x)`, `.to(device)`,
/// `.to(x)`, `.to(device=d)`, but not a dtype-only `.to(torch.float16)` / `.to(x.dtype)`?
fn moves_to_device(call: &ruff_python_ast::ExprCall) -> bool {
    let Some((m, _)) = helpers::method_call(call) else {
        return false;
    };
    if !DEVICE_MOVES.contains(&m) {
        return false;
    }
    if m != "to" {
        return true;
    }
    if helpers::keyword(call, "device").is_some() {
        return true;
    }
    call.arguments.args.first().is_some_and(|a| {
        let dtype = match a {
            Expr::Attribute(at) => {
                at.attr.as_str() == "dtype"
                    || helpers::dotted(a)
                        .is_some_and(|d| d.starts_with("torch.") && !d.ends_with("device"))
            }
            _ => false,
        };
        !dtype
    })
}

/// Is `expr` the target, seen through indexing, single-tensor methods and wrappers
/// (`self.pe[:, :n].detach()`, `nn.Parameter(self.pe, requires_grad=False)`)?
fn carries_target(expr: &Expr, is_target: &dyn Fn(&Expr) -> bool) -> bool {
    if target_or_part(expr, is_target) {
        return true;
    }
    let Expr::Call(c) = expr else { return false };
    if let Some((m, recv)) = helpers::method_call(c) {
        if UNARY_METHODS.contains(&m) {
            return carries_target(recv, is_target);
        }
    }
    let wrapper =
        helpers::dotted(&c.func).is_some_and(|d| WRAPPERS.contains(&helpers::last_segment(&d)));
    wrapper
        && c.arguments
            .args
            .first()
            .is_some_and(|a| carries_target(a, is_target))
}

impl SensitiveRead<'_> {
    /// `self.freqs` or `enumerate(self.freqs)`.
    fn iterates_target(&self, iter: &Expr) -> bool {
        match iter {
            Expr::Call(c) if helpers::name_of(&c.func) == Some("enumerate") => c
                .arguments
                .args
                .first()
                .is_some_and(|a| (self.is_target)(a)),
            e => (self.is_target)(e),
        }
    }
}

impl<'x> Visitor<'x> for SensitiveRead<'_> {
    fn visit_stmt(&mut self, stmt: &'x Stmt) {
        if self.found {
            return;
        }
        match stmt {
            Stmt::AugAssign(a) if (self.is_target)(&a.target) => {
                self.found = true;
                return;
            }
            // `buf[i] = t`: a copy into another tensor's storage.
            Stmt::Assign(a)
                if a.targets.iter().all(|t| matches!(t, Expr::Subscript(_)))
                    && target_or_part(&a.value, self.is_target) =>
            {
                for t in &a.targets {
                    self.visit_expr(t);
                }
                return;
            }
            // `for f in self.freqs:` over a one-dimensional target: 0-dim elements.
            Stmt::For(f) if self.scalar_elements && self.iterates_target(&f.iter) => {
                self.visit_expr(&f.target);
                self.visit_body(&f.body);
                self.visit_body(&f.orelse);
                return;
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'x Expr) {
        if self.found {
            return;
        }
        match expr {
            // `[f * x for f in self.freqs]` over a one-dimensional target.
            Expr::ListComp(ruff_python_ast::ExprListComp {
                elt, generators, ..
            })
            | Expr::SetComp(ruff_python_ast::ExprSetComp {
                elt, generators, ..
            })
            | Expr::Generator(ruff_python_ast::ExprGenerator {
                elt, generators, ..
            }) if self.scalar_elements
                && generators.iter().any(|g| self.iterates_target(&g.iter)) =>
            {
                for g in generators {
                    if !self.iterates_target(&g.iter) {
                        self.visit_expr(&g.iter);
                    }
                    self.visit_expr(&g.target);
                    for cond in &g.ifs {
                        self.visit_expr(cond);
                    }
                }
                self.visit_expr(elt);
                return;
            }
            // `self.freqs[i]` with an integer index, on a one-dimensional target: a 0-dim
            // element.
            Expr::Subscript(sub)
                if self.scalar_elements
                    && (self.is_target)(&sub.value)
                    && match &*sub.slice {
                        Expr::NumberLiteral(_) => true,
                        Expr::Name(n) => self.range_vars.iter().any(|v| v == n.id.as_str()),
                        _ => false,
                    } =>
            {
                return;
            }
            // A read moved at once to a device (`self.pe.to(x.device)`,
            // `nn.Parameter(self.pe, requires_grad=False).to(self.device)`) meets no tensor of
            // another device.
            Expr::Call(c)
                if moves_to_device(c)
                    && helpers::method_call(c)
                        .is_some_and(|(_, recv)| carries_target(recv, self.is_target)) =>
            {
                self.visit_arguments(&c.arguments);
                return;
            }
            Expr::Attribute(a)
                if SHAPE_ATTRIBUTES.contains(&a.attr.as_str())
                    && target_or_part(&a.value, self.is_target) =>
            {
                return;
            }
            Expr::Call(c) => {
                if let Some((m, recv)) = helpers::method_call(c) {
                    if SHAPE_METHODS.contains(&m) && target_or_part(recv, self.is_target) {
                        // The arguments (`t.size(dim)`) are visited on their own.
                        self.visit_arguments(&c.arguments);
                        return;
                    }
                    // `buf.copy_(t)`: a copy from the target into the receiver.
                    if m == "copy_" {
                        if let [src] = &*c.arguments.args {
                            if target_or_part(src, self.is_target) {
                                self.visit_expr(recv);
                                for k in &c.arguments.keywords {
                                    self.visit_expr(&k.value);
                                }
                                return;
                            }
                        }
                    }
                }
                if helpers::name_of(&c.func) == Some("len") {
                    if let [arg] = &*c.arguments.args {
                        if target_or_part(arg, self.is_target) {
                            return;
                        }
                    }
                }
            }
            _ => {}
        }
        let load = match expr {
            Expr::Attribute(a) => matches!(a.ctx, ExprContext::Load),
            Expr::Name(n) => matches!(n.ctx, ExprContext::Load),
            Expr::Subscript(s) => matches!(s.ctx, ExprContext::Load),
            _ => true,
        };
        if load && (self.is_target)(expr) {
            self.found = true;
            return;
        }
        visitor::walk_expr(self, expr);
    }
}

/// Is the local `name`, as the statement `at` of `body` (a function or module body) leaves
/// it, read on some path that runs after `at`? The paths are the structured ones: the rest
/// of `at`'s block, the next iterations of the loops around it (up to where they rebind the
/// name), then the code after each enclosing statement. The other clauses of an `if` that
/// holds `at` are not on them. A path ends where the name is certainly bound again before any
/// read. Reading it in a nested function or lambda counts, and so does `global` / `nonlocal`.
/// `false` when `at` is not in `body`.
pub fn read_after(body: &[Stmt], at: &Stmt, name: &str) -> bool {
    use ruff_text_size::Ranged;
    /// The blocks from `body` down to the one holding `at`: each block, the index in it, and
    /// whether the block is a loop's body.
    fn path<'a>(
        body: &'a [Stmt],
        at: &Stmt,
        is_loop: bool,
        out: &mut Vec<(&'a [Stmt], usize, bool)>,
    ) -> bool {
        for (i, s) in body.iter().enumerate() {
            if std::ptr::eq(s, at) {
                out.push((body, i, is_loop));
                return true;
            }
            if !s.range().contains_range(at.range()) {
                continue;
            }
            out.push((body, i, is_loop));
            let found = match s {
                Stmt::For(f) => path(&f.body, at, true, out) || path(&f.orelse, at, false, out),
                Stmt::While(w) => path(&w.body, at, true, out) || path(&w.orelse, at, false, out),
                Stmt::If(x) => {
                    path(&x.body, at, false, out)
                        || x.elif_else_clauses
                            .iter()
                            .any(|c| path(&c.body, at, false, out))
                }
                Stmt::With(w) => path(&w.body, at, false, out),
                Stmt::Try(t) => {
                    path(&t.body, at, false, out)
                        || t.handlers.iter().any(|h| {
                            let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                            path(&h.body, at, false, out)
                        })
                        || path(&t.orelse, at, false, out)
                        || path(&t.finalbody, at, false, out)
                }
                Stmt::Match(m) => m.cases.iter().any(|c| path(&c.body, at, false, out)),
                _ => false,
            };
            if found {
                return true;
            }
            out.pop();
        }
        false
    }
    let mut levels = Vec::new();
    if !path(body, at, false, &mut levels) {
        return false;
    }
    for (block, i, is_loop) in levels.iter().rev() {
        match reads_first(&block[i + 1..], name) {
            Some(true) => return true,
            Some(false) => return false,
            None => {}
        }
        // The next iteration runs the block again from its start (the statement holding
        // `at` included: another of its clauses may read the name).
        if *is_loop && reads_first(&block[..=*i], name) == Some(true) {
            return true;
        }
    }
    false
}

/// Run in order, do the statements read `name` before binding it (`Some(true)`), bind it on
/// every path before any read (`Some(false)`), or neither (`None`)?
fn reads_first(stmts: &[Stmt], name: &str) -> Option<bool> {
    stmts.iter().find_map(|s| stmt_reads_first(s, name))
}

fn stmt_reads_first(stmt: &Stmt, name: &str) -> Option<bool> {
    let reads = |e: &Expr| expr_reads(e, name);
    match stmt {
        Stmt::If(x) => {
            if reads(&x.test)
                || x.elif_else_clauses
                    .iter()
                    .any(|c| c.test.as_ref().is_some_and(reads))
            {
                return Some(true);
            }
            let mut all_bind = x.elif_else_clauses.last().is_some_and(|c| c.test.is_none());
            for r in std::iter::once(reads_first(&x.body, name)).chain(
                x.elif_else_clauses
                    .iter()
                    .map(|c| reads_first(&c.body, name)),
            ) {
                match r {
                    Some(true) => return Some(true),
                    Some(false) => {}
                    None => all_bind = false,
                }
            }
            all_bind.then_some(false)
        }
        Stmt::For(f) => {
            if reads(&f.iter)
                || reads_first(&f.body, name) == Some(true)
                || reads_first(&f.orelse, name) == Some(true)
            {
                return Some(true);
            }
            None
        }
        Stmt::While(w) => {
            if reads(&w.test)
                || reads_first(&w.body, name) == Some(true)
                || reads_first(&w.orelse, name) == Some(true)
            {
                return Some(true);
            }
            None
        }
        Stmt::With(w) => {
            if w.items.iter().any(|i| reads(&i.context_expr)) {
                return Some(true);
            }
            reads_first(&w.body, name)
        }
        Stmt::Try(t) => {
            let body = reads_first(&t.body, name);
            let others = t
                .handlers
                .iter()
                .map(|h| {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    reads_first(&h.body, name)
                })
                .chain([
                    reads_first(&t.orelse, name),
                    reads_first(&t.finalbody, name),
                ]);
            let mut any_read = body == Some(true);
            for r in others {
                any_read |= r == Some(true);
            }
            if any_read {
                Some(true)
            } else {
                body
            }
        }
        Stmt::Match(m) => {
            if reads(&m.subject)
                || m.cases.iter().any(|c| {
                    c.guard.as_deref().is_some_and(reads)
                        || reads_first(&c.body, name) == Some(true)
                })
            {
                return Some(true);
            }
            None
        }
        Stmt::Global(g) if g.names.iter().any(|n| n.as_str() == name) => Some(true),
        Stmt::Nonlocal(g) if g.names.iter().any(|n| n.as_str() == name) => Some(true),
        _ => {
            // A simple statement (or a definition): its reads come before its binding.
            if helpers::any_expr_in_stmt(stmt, |x| is_load_of(x, name)) {
                return Some(true);
            }
            let binds = match stmt {
                Stmt::Assign(a) => a.targets.iter().any(|t| helpers::binds(t, name)),
                Stmt::AnnAssign(a) => a.value.is_some() && helpers::binds(&a.target, name),
                Stmt::Delete(d) => d.targets.iter().any(|t| helpers::binds(t, name)),
                Stmt::FunctionDef(f) => f.name.as_str() == name,
                Stmt::ClassDef(c) => c.name.as_str() == name,
                _ => false,
            };
            binds.then_some(false)
        }
    }
}

fn expr_reads(e: &Expr, name: &str) -> bool {
    helpers::any_expr(e, |x| is_load_of(x, name))
}

/// A load of the name (in nested functions and lambdas too, as [`helpers::any_expr`] walks).
fn is_load_of(e: &Expr, name: &str) -> bool {
    matches!(e, Expr::Name(n) if n.id.as_str() == name && n.ctx == ExprContext::Load)
}

/// Does the class's own code read `self.<attr>` (a load, not the assignment): is the
/// attribute a flag of its own (`if self.requires_grad: ... else: with torch.no_grad(): ...`
/// in `forward`)? Nested definitions inside methods count; other classes do not.
pub fn class_reads_own_attribute(class: &ruff_python_ast::StmtClassDef, attr: &str) -> bool {
    helpers::any_expr_in(&class.body, |e| {
        matches!(e, Expr::Attribute(a) if a.ctx == ExprContext::Load
            && a.attr.as_str() == attr
            && helpers::name_of(&a.value) == Some("self"))
    })
}

/// The tensor a backward call differentiates (`loss` of `loss.backward()`,
/// `scaler.scale(loss).backward()`, `accelerator.backward(loss)` and
/// `torch.autograd.backward(loss)`), if the call is one.
pub fn backward_target<'a>(
    scopes: &Scopes,
    call: &'a ruff_python_ast::ExprCall,
) -> Option<&'a Expr> {
    let Some(("backward", recv)) = helpers::method_call(call) else {
        return None;
    };
    let wrapper = helpers::dotted(recv).is_some_and(|t| {
        let t = t.to_ascii_lowercase();
        t.ends_with("accelerator") || t.ends_with("fabric") || t.ends_with("engine")
    });
    if wrapper || scopes.resolve(recv).as_deref() == Some("torch.autograd") {
        return call.arguments.args.first();
    }
    // `scaler.scale(loss).backward()`
    if let Expr::Call(inner) = recv {
        if let Some(("scale", _)) = helpers::method_call(inner) {
            if let Some(a) = inner.arguments.args.first() {
                return Some(a);
            }
        }
    }
    Some(recv)
}

/// Does an expression mention the bare name `name` anywhere (load or store)?
pub fn mentions_name(expr: &Expr, name: &str) -> bool {
    helpers::any_expr(
        expr,
        |x| matches!(x, Expr::Name(n) if n.id.as_str() == name),
    )
}

/// The names whose value depends on `name` in `scope`, transitively, through plain and
/// augmented assignments to names (`local_loss = 0.01 * (loss_s + loss_t)`, then
/// `join_loss = ... + local_loss`, then `loss = soft + join_loss`). `name` itself excluded.
pub fn dependents<'s>(scope: &'s [Stmt], name: &str) -> Vec<&'s str> {
    let mut edges: Vec<(&'s str, &'s Expr)> = Vec::new();
    crate::helpers::for_each_own_stmt(scope, &mut |st: &'s Stmt| match st {
        Stmt::Assign(a) => {
            for t in &a.targets {
                if let Expr::Name(n) = t {
                    edges.push((n.id.as_str(), &a.value));
                }
            }
        }
        Stmt::AugAssign(a) => {
            if let Expr::Name(n) = &*a.target {
                edges.push((n.id.as_str(), &a.value));
            }
        }
        Stmt::AnnAssign(a) => {
            if let (Expr::Name(n), Some(v)) = (&*a.target, &a.value) {
                edges.push((n.id.as_str(), v));
            }
        }
        _ => {}
    });
    let mut out: Vec<&'s str> = Vec::new();
    loop {
        let mut changed = false;
        for (t, v) in &edges {
            if *t == name || out.contains(t) {
                continue;
            }
            if mentions_name(v, name) || out.iter().any(|d| mentions_name(v, d)) {
                out.push(t);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    out
}

/// The names that hold values computed from `from` at `before`, following the statements of
/// `scope` that start in `after..before` in source order: an assignment whose value mentions
/// one of them adds its targets (`policies_v = torch.cat(net_policies)`, then `log_prob_v =
/// F.log_softmax(policies_v)`, ...), a plain assignment or loop target from other values
/// rebinds its names to something else (`outputs = model(images)` in a later notebook cell).
/// Names bound by tuple unpacking count too; attribute and subscript targets do not.
pub fn derived_between(
    scope: &[Stmt],
    from: &[String],
    after: ruff_text_size::TextSize,
    before: ruff_text_size::TextSize,
) -> Vec<String> {
    let mut live: Vec<String> = from.to_vec();
    let mentions = |e: &Expr, live: &[String]| live.iter().any(|n| mentions_name(e, n));
    crate::helpers::for_each_own_stmt(scope, &mut |st: &Stmt| {
        use ruff_text_size::Ranged;
        if st.start() < after || st.start() >= before {
            return;
        }
        let (targets, value, rebinds): (Vec<&Expr>, &Expr, bool) = match st {
            Stmt::Assign(a) => (a.targets.iter().collect(), &a.value, true),
            Stmt::AnnAssign(a) => match &a.value {
                Some(v) => (vec![&*a.target], v, true),
                None => return,
            },
            // `x += y`: `x` keeps what it held and gains `y`.
            Stmt::AugAssign(a) => (vec![&*a.target], &a.value, false),
            Stmt::For(f) => (vec![&*f.target], &f.iter, true),
            _ => return,
        };
        let mut bound = Vec::new();
        targets
            .iter()
            .for_each(|t| crate::helpers::bound_names(t, &mut bound));
        if mentions(value, &live) {
            for b in bound {
                if !live.iter().any(|n| n == b) {
                    live.push(b.to_string());
                }
            }
        } else if rebinds {
            live.retain(|n| !bound.contains(&n.as_str()));
        }
    });
    live
}

/// Does a backward pass of `scope` differentiate an expression mentioning `name`
/// (`total.backward()`, `(total / n).backward()`, `scaler.scale(total).backward()`,
/// `torch.autograd.grad(total, ...)`)?
pub fn differentiates_name(scopes: &Scopes, scope: &[Stmt], name: &str) -> bool {
    helpers::own_calls(scope).into_iter().any(|call| {
        backward_target(scopes, call).is_some_and(|t| mentions_name(t, name))
            || (scopes.resolve(&call.func).as_deref() == Some("torch.autograd.grad")
                && call.arguments.args.iter().any(|a| mentions_name(a, name)))
    })
}

/// Is `name`, or a name computed from it ([`dependents`]), differentiated in `scope`
/// (`loss_s += ...; local_loss = 0.01 * (loss_s + loss_t); ...; loss.backward()`)?
pub fn reaches_differentiation(scopes: &Scopes, scope: &[Stmt], name: &str) -> bool {
    differentiates_name(scopes, scope, name)
        || dependents(scope, name)
            .into_iter()
            .any(|d| differentiates_name(scopes, scope, d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruff_text_size::Ranged;
    use torchvet_python::parser::parse_module;

    fn sensitive(src: &str) -> bool {
        let parsed = parse_module(src).expect("parses");
        device_sensitive_read(&parsed.syntax().body, &|e| {
            helpers::self_attribute(e) == Some("grid")
        })
    }

    #[test]
    fn shape_reads_and_copies_are_not_sensitive() {
        assert!(!sensitive(
            "buf = torch.zeros(torch.Size([n]) + self.grid.size())\n\
             for i in range(n):\n    buf[i] = self.grid\n\
             buf[0, :, :] = self.grid[:, :]\n\
             buf.copy_(self.grid)\nk = len(self.grid) + self.grid.shape[0] + self.grid.dim()\n\
             self.grid = make(x)\n"
        ));
    }

    fn outlives(src: &str) -> bool {
        let parsed = parse_module(src).expect("parses");
        local_outlives_function(&parsed.syntax().body, "total")
    }

    #[test]
    fn locals_that_stay_in_the_function() {
        assert!(!outlives(
            "total = torch.zeros([])\nfor _ in range(k):\n    total += loss\n\
             self.avg = float(total.item() / k)\nlog(total.item())\ndel total\n"
        ));
        assert!(outlives("return total\n"));
        assert!(outlives("return total / k, 3\n"));
        assert!(outlives("self.total = total\n"));
        assert!(outlives("history.append(total)\n"));
        assert!(outlives("global total\n"));
        assert!(outlives("yield total\n"));
    }

    fn leaf_use(src: &str) -> bool {
        let parsed = parse_module(src).expect("parses");
        let body = &parsed.syntax().body;
        let after = body[0].end();
        used_as_gradient_leaf(body, &|e| helpers::name_of(e) == Some("w"), after, &|c| {
            helpers::dotted(&c.func).is_some_and(|q| q.starts_with("torch.optim."))
        })
    }

    #[test]
    fn gradient_leaf_uses() {
        let w = "w = torch.randn(3, requires_grad=True).cuda()\n";
        assert!(leaf_use(&format!(
            "{w}opt = torch.optim.SGD([w], lr=0.1)\n"
        )));
        assert!(leaf_use(&format!(
            "{w}opt = torch.optim.Adam([{{'params': [w, b]}}])\n"
        )));
        assert!(leaf_use(&format!("{w}loss.backward()\nprint(w.grad)\n")));
        assert!(leaf_use(&format!("{w}w.grad.zero_()\n")));
        assert!(leaf_use(&format!(
            "{w}opt.add_param_group({{'params': w}})\n"
        )));
        // Returned or stored: what receives it decides, not this body.
        assert!(!leaf_use(&format!("{w}return w, b\n")));
        assert!(!leaf_use(&format!("{w}self.weight = w\n")));
        assert!(!leaf_use(&format!("{w}self.params.append(w)\n")));
        // `.grad` kept by `retain_grad()` on the non-leaf: not a leaf use; an optimizer still
        // is.
        assert!(!leaf_use(&format!(
            "{w}w.retain_grad()\nloss.backward()\nprint(w.grad)\n"
        )));
        assert!(leaf_use(&format!(
            "{w}w.retain_grad()\nopt = torch.optim.SGD([w], lr=0.1)\n"
        )));
        // Only differentiated through, copied, or used as a gradient.
        assert!(!leaf_use(&format!(
            "{w}a = w.clone().detach().requires_grad_(True)\n\
             out = f(w)\nout.backward(w)\ng = torch.autograd.grad(out, w)\n\
             return out\n"
        )));
        // A use after the name is bound again is another tensor's.
        assert!(!leaf_use(&format!(
            "{w}w = torch.zeros(2, requires_grad=True)\nprint(w.grad)\n"
        )));
        // A use before the creation does not count.
        let parsed = parse_module("g = w.grad\nw = make()\n").expect("parses");
        let body = &parsed.syntax().body;
        assert!(!used_as_gradient_leaf(
            body,
            &|e| helpers::name_of(e) == Some("w"),
            body[1].end(),
            &|_| false,
        ));
    }

    #[test]
    fn reads_moved_at_once_are_not_sensitive() {
        assert!(!sensitive("y = x + self.grid.to(x.device)\n"));
        assert!(!sensitive("y = x + self.grid[:, :n].detach().cuda()\n"));
        assert!(!sensitive(
            "y = x + nn.Parameter(self.grid, requires_grad=False).to(self.device)\n"
        ));
        assert!(!sensitive("y = x * self.grid.type_as(x)\n"));
        assert!(!sensitive("y = x * self.grid.to(device=x.device)\n"));
        // A dtype cast is not a move; a computation before the move already met `x`.
        assert!(sensitive("y = x * self.grid.to(torch.float16)\n"));
        assert!(sensitive("y = x * self.grid.to(x.dtype)\n"));
        assert!(sensitive("y = (self.grid * x).to(x.device)\n"));
        assert!(sensitive("y = self.grid.cpu() * x\n"));
    }

    #[test]
    fn iterating_a_vector_yields_scalars() {
        let vector = |src: &str| {
            let parsed = parse_module(src).expect("parses");
            device_sensitive_read_with(
                &parsed.syntax().body,
                &|e| helpers::self_attribute(e) == Some("freqs"),
                true,
            )
        };
        assert!(!vector(
            "for f in self.freqs:\n    out.append(torch.sin(f * x))\n"
        ));
        assert!(!vector(
            "for i, f in enumerate(self.freqs):\n    y = f * x\n"
        ));
        assert!(!vector(
            "y = torch.cat([torch.sin(f * x) for f in self.freqs], -1)\n"
        ));
        assert!(vector(
            "for f in self.freqs:\n    y = f * x\nz = x * self.freqs\n"
        ));
        // A matrix's rows are not scalars.
        assert!(sensitive("for row in self.grid:\n    y = row * x\n"));
    }

    #[test]
    fn arithmetic_and_calls_are_sensitive() {
        assert!(sensitive("y = x * self.grid\n"));
        assert!(sensitive("y = torch.cat([x, self.grid])\n"));
        assert!(sensitive("y = self.grid.sum()\n"));
        assert!(sensitive("self.grid += 1\n"));
        assert!(sensitive("y = x.size(self.grid)\n"));
        assert!(sensitive("buf[i] = self.grid * 2\n"));
    }
}

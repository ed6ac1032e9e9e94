use super::helpers::{class_method, self_attr_use};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::kinds::Kind;
use torchvet_semantic::{attr_rebound_after, helpers, uses, AttrRebinding};

crate::declare_rule! {
    /// ## What it does
    /// Checks for a constant tensor stored as a plain attribute in the `__init__` of an
    /// `nn.Module` (`self.mask = torch.tril(torch.ones(T, T))`) and used in `forward` where it
    /// can meet the input's device: arithmetic, a torch function or a method that computes
    /// with it. Reads that work on any device stay silent: its shape only (`self.grid.size()`,
    /// `self.grid.shape`, `len(self.grid)`), or a copy into a tensor that `forward` allocates
    /// (`buf[i] = self.grid`, `buf.copy_(self.grid)`), a read moved to a device on the spot
    /// (`self.pe.to(x.device)`, `nn.Parameter(self.pe, requires_grad=False).to(self.device)`),
    /// and iterating a one-dimensional tensor (`for f in self.freq_bands:` yields 0-dim
    /// tensors, which combine with tensors on any device). So does a `forward` that merely stores
    /// into the attribute (`self.att_mat = att_mat.detach()`, to expose the last value), an
    /// empty placeholder (`torch.Tensor()`), an attribute that `__init__` registers with
    /// `register_buffer` on another path, and one that `__init__` goes on to register or
    /// replace on every path after the assignment: `self.mask = nn.Parameter(self.mask,
    /// requires_grad=False)` (or `nn.Buffer(...)`, `register_buffer("mask", ...)`) after the
    /// loop that fills it, or `self.freqs = self.freqs.tolist()`. A later assignment in
    /// another arm of a branch does not count, and neither does one that keeps a plain
    /// tensor (`self.mask = self.mask.unsqueeze(0)`).
    ///
    /// ## Why is this bad?
    /// Only parameters and buffers belong to the module's state. A plain tensor attribute is
    /// not moved by `model.to(device)` / `model.cuda()` / `model.half()`, so `forward` fails
    /// with a device mismatch as soon as the model runs on a GPU. It is also missing from
    /// `state_dict()`, and DDP does not broadcast it. `register_buffer` fixes all of that.
    ///
    /// ## Example
    /// ```python
    /// def __init__(self, T):
    ///     super().__init__()
    ///     self.mask = torch.tril(torch.ones(T, T))
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def __init__(self, T):
    ///     super().__init__()
    ///     self.register_buffer("mask", torch.tril(torch.ones(T, T)), persistent=False)
    /// ```
    ///
    /// ## Fix safety
    /// The fix rewrites the assignment to `self.register_buffer("x", ..., persistent=False)`,
    /// so checkpoints keep their keys. The tensor now follows `model.to()` (and dtype casts
    /// such as `model.half()`), which changes behaviour, so the fix is unsafe.
    ///
    /// ## References
    /// - [nn.Module.register_buffer](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer)
    /// - [botorch PR 1035](https://github.com/meta-pytorch/botorch/pull/1035)
    /// - [torchaudio PR 457](https://github.com/pytorch/audio/pull/457)
    pub(crate) static TENSOR_ATTRIBUTE_NOT_BUFFER = {
        name: "tensor-attribute-not-buffer",
        code: "TV055",
        group: Correctness,
        severity: Warning,
        title: "Constant tensor stored as a plain attribute in __init__ (not moved by model.to()): use register_buffer",
        autofix: Yes,
        preview: true,
        hooks: { stmt: check_stmt },
    };
}

const CREATORS: &[&str] = &[
    "tensor",
    "as_tensor",
    "from_numpy",
    "Tensor",
    "FloatTensor",
    "LongTensor",
    "BoolTensor",
    "zeros",
    "ones",
    "full",
    "arange",
    "linspace",
    "logspace",
    "eye",
    "empty",
    "rand",
    "randn",
    "randint",
    "randperm",
    "tril",
    "triu",
    "tril_indices",
    "triu_indices",
    "hann_window",
    "hamming_window",
];

const CHAIN: &[&str] = &[
    "float",
    "long",
    "bool",
    "int",
    "double",
    "view",
    "reshape",
    "unsqueeze",
    "expand",
    "t",
    "transpose",
    "contiguous",
];

/// A tensor built from torch creation functions, without an explicit device.
fn is_constant_tensor(checker: &Checker, expr: &Expr) -> bool {
    let Expr::Call(call) = expr else { return false };
    if let Some(q) = checker.resolve(&call.func) {
        let Some(f) = q.strip_prefix("torch.") else {
            return false;
        };
        if !CREATORS.contains(&f) {
            return false;
        }
        return helpers::keyword(call, "device").is_none()
            && helpers::keyword(call, "requires_grad").is_none()
            && !helpers::has_kwargs_splat(call);
    }
    match helpers::method_call(call) {
        Some((m, recv)) if CHAIN.contains(&m) => is_constant_tensor(checker, recv),
        _ => false,
    }
}

/// Is the constant tensor one-dimensional (`torch.linspace(...)`, `torch.arange(n).float()`,
/// `torch.tensor([1.0, 2.0, 4.0])`)? Iterating it yields 0-dim tensors.
fn is_one_dimensional(checker: &Checker, expr: &Expr) -> bool {
    let Expr::Call(call) = expr else { return false };
    if let Some(q) = checker.resolve(&call.func) {
        return match q.strip_prefix("torch.") {
            Some("arange" | "linspace" | "logspace" | "randperm") => true,
            Some("tensor" | "as_tensor" | "Tensor" | "FloatTensor" | "LongTensor") => {
                match call.arguments.args.as_ref() {
                    [Expr::List(l)] => l.elts.iter().all(|e| {
                        matches!(e, Expr::NumberLiteral(_) | Expr::UnaryOp(_) | Expr::Name(_))
                    }),
                    _ => false,
                }
            }
            _ => false,
        };
    }
    match helpers::method_call(call) {
        Some(("float" | "long" | "int" | "double" | "contiguous", recv)) => {
            is_one_dimensional(checker, recv)
        }
        _ => false,
    }
}

/// Does `body` call `self.register_buffer("<name>", ...)` (e.g. in the other branch of an
/// `if`, the plain assignment being an empty placeholder)?
fn registers_buffer(body: &[Stmt], name: &str) -> bool {
    use ruff_python_ast::visitor::{self, Visitor};
    struct Finder<'n> {
        name: &'n str,
        found: bool,
    }
    impl<'x> Visitor<'x> for Finder<'_> {
        fn visit_expr(&mut self, expr: &'x Expr) {
            if let Expr::Call(c) = expr {
                if let Some(("register_buffer", recv)) = helpers::method_call(c) {
                    if helpers::name_of(recv) == Some("self")
                        && helpers::argument(c, "name", 0).and_then(helpers::str_value)
                            == Some(self.name)
                    {
                        self.found = true;
                    }
                }
            }
            if !self.found {
                visitor::walk_expr(self, expr);
            }
        }
    }
    let mut f = Finder { name, found: false };
    f.visit_body(body);
    f.found
}

/// Is the value a re-binding of `self.<name>` leaves a plain tensor: a tensor by its kind, or
/// a chain of tensor methods on the attribute itself (`self.mask.unsqueeze(0)`) that does not
/// turn it into Python data (`.tolist()`, `.numpy()`, `.item()`)?
fn still_plain_tensor(checker: &mut Checker, value: &Expr, name: &str) -> bool {
    if checker.kind_of(value) == Kind::Tensor {
        return true;
    }
    let mut e = value;
    loop {
        match e {
            Expr::Call(c) => match helpers::method_call(c) {
                Some(("tolist" | "numpy" | "item" | "size" | "dim" | "numel", _)) | None => {
                    return false
                }
                Some((_, recv)) => e = recv,
            },
            e => return helpers::self_attribute(e) == Some(name) && !std::ptr::eq(e, value),
        }
    }
}

/// A creator called without arguments (`torch.Tensor()`): an empty placeholder.
fn is_empty_placeholder(expr: &Expr) -> bool {
    matches!(expr, Expr::Call(c) if c.arguments.is_empty())
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::Assign(assign) = stmt else { return };
    let [target] = assign.targets.as_slice() else {
        return;
    };
    let Some(name) = helpers::self_attribute(target) else {
        return;
    };
    if !checker.in_module_method("__init__") || !is_constant_tensor(checker, &assign.value) {
        return;
    }
    let Some(class) = checker.module_method() else {
        return;
    };
    // A class that moves its own attributes (custom `_apply`/`to`) knows what it does.
    if ["_apply", "to", "cuda"]
        .iter()
        .any(|m| class_method(class.def, m).is_some())
    {
        return;
    }
    let Some(forward) = class_method(class.def, "forward") else {
        return;
    };
    // An empty placeholder (`torch.Tensor()`), or an attribute that `__init__` registers as a
    // buffer on another path, is not a constant kept out of the module's state.
    if is_empty_placeholder(&assign.value)
        || class_method(class.def, "__init__").is_some_and(|f| registers_buffer(&f.body, name))
    {
        return;
    }
    // What `__init__` then makes of it, on every path from this assignment (a later statement
    // of the same suite or of an enclosing one, not another arm of a branch): registered
    // (`self.mask = nn.Parameter(self.mask, requires_grad=False)`), or replaced by something
    // that is not a tensor (`self.freq_bands = self.freq_bands.numpy().tolist()`): forward
    // reads that instead. Only a re-binding that is still a plain tensor
    // (`self.mask = self.mask.unsqueeze(0)`) keeps the finding.
    if let Some(init) = class_method(class.def, "__init__") {
        match attr_rebound_after(init, name, stmt.range(), &|e| checker.resolve(e)) {
            Some(AttrRebinding::Registered) => return,
            Some(AttrRebinding::Value(v)) if !still_plain_tensor(checker, v, name) => return,
            _ => {}
        }
    }
    let usage = self_attr_use(&forward.body, name);
    // Only a read that can meet the input's device counts: a shape read (`self.grid.size()`)
    // or a copy into a tensor forward allocates (`buf[i] = self.grid`) works on any device,
    // and storing into the attribute (`self.att = att.detach()`) is not a read.
    if !usage.read
        || usage.moved
        || !uses::device_sensitive_read_with(
            &forward.body,
            &|e| helpers::self_attribute(e) == Some(name),
            is_one_dimensional(checker, &assign.value),
        )
    {
        return;
    }
    let value = checker.text(assign.value.range());
    checker
        .report(
            target.range(),
            format!("`self.{name}` is a plain tensor attribute read in forward(): `model.to(device)` does not move it (device mismatch on GPU) and it is not in state_dict(); register it with `self.register_buffer`"),
        )
        .set_fix(RawFix::unsafe_edit(
            "Register it as a non-persistent buffer",
            vec![RawEdit::replace(
                stmt.range(),
                format!("self.register_buffer(\"{name}\", {value}, persistent=False)"),
            )],
        ));
}

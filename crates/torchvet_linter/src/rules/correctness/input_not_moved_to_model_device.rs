use super::model_helpers::{
    analysed_body, binds_name, indentation_at, is_cpu_literal, is_cuda_device, is_plain_dataloader,
    loader_of, own_exprs, visit_exprs, walk_body,
};
use crate::checker::Checker;
use crate::fix::newline;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use rustc_hash::FxHashSet;
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;

crate::declare_rule! {
    /// ## What it does
    /// Checks for a model moved to CUDA (`model.cuda()`, `model.to("cuda")`, `model.to(device)`
    /// with a CUDA `device`, including `device = "cuda"` / `else: device = "cpu"` after
    /// `if torch.cuda.is_available():`) and then called, in the same function, on a batch
    /// taken from a `DataLoader` (or a tensor made by a torch factory without `device=`) that
    /// is never moved with `.to(...)` / `.cuda()`, or on a tensor put on the CPU by hand
    /// (`x.to("cpu")`, `x.cpu()`). The gradient given for the model's output counts too:
    /// `torch.autograd.grad(out, x, torch.ones(n, 1))`, `out.backward(g)`.
    ///
    /// ## Why is this bad?
    /// A DataLoader yields CPU tensors. Feeding them to a model whose weights live on the GPU
    /// fails on the first batch with "Expected all tensors to be on the same device". The rule
    /// stays silent when the batch passes through any helper call, re-assignment or
    /// comprehension before the model call (it may move it), when the model is wrapped in
    /// `DataParallel`/`DistributedDataParallel` (they move inputs themselves), when the loader
    /// has a custom `collate_fn`, when the model is put back on the CPU (`model.to("cpu")`),
    /// or when the file uses Accelerate, a device-moving loader wrapper or a Dataset that puts
    /// samples on the GPU. A file that changes the default device or tensor type
    /// (`torch.set_default_tensor_type(torch.cuda.FloatTensor)`) is only told about tensors
    /// it puts on the CPU by hand. The rule is in preview: it needs
    /// the device of values across statements, which a static check only sees in simple
    /// scripts.
    ///
    /// ## Example
    /// ```python
    /// model = Net().to("cuda")
    /// loader = DataLoader(dataset, batch_size=32)
    /// for x, y in loader:
    ///     loss = criterion(model(x), y)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model = Net().to("cuda")
    /// loader = DataLoader(dataset, batch_size=32)
    /// for x, y in loader:
    ///     x, y = x.to("cuda"), y.to("cuda")
    ///     loss = criterion(model(x), y)
    /// ```
    ///
    /// ## Fix safety
    /// The fix inserts `x = x.to(<device>)` (or `x = x.cuda()`) right before the statement that
    /// calls the model, with the device expression the model was moved with, and only when
    /// that is a literal or a name that does not change in the loop. The original code cannot
    /// run on a GPU, so the fix is safe. No fix is offered for `model(**batch)`.
    ///
    /// ## References
    /// - [CUDA semantics](https://pytorch.org/docs/stable/notes/cuda.html)
    /// - [Tensor.to](https://pytorch.org/docs/stable/generated/torch.Tensor.to.html)
    pub(crate) static INPUT_NOT_MOVED_TO_MODEL_DEVICE = {
        name: "input-not-moved-to-model-device",
        code: "TV006",
        group: Correctness,
        severity: Critical,
        title: "Model moved to GPU but batch tensors fed to it are not (device mismatch RuntimeError)",
        autofix: Yes,
        preview: true,
        hooks: { stmt: check_stmt },
    };
}

/// Tensor methods that keep the device.
const SAME_DEVICE: &[&str] = &[
    "float",
    "long",
    "int",
    "half",
    "double",
    "bool",
    "view",
    "reshape",
    "unsqueeze",
    "squeeze",
    "permute",
    "contiguous",
    "transpose",
    "flatten",
    "clone",
    "detach",
    "t",
];

/// A model moved to CUDA.
struct Move<'a> {
    name: &'a str,
    stmt: &'a Stmt,
    /// The device argument of `.to(...)`, `None` for `.cuda()`.
    device: Option<&'a Expr>,
}

/// The name a `x.to(..)`/`x.cuda()` statement or `x = ....to(..)` assignment moves.
fn moved_name(stmt: &Stmt) -> Option<&str> {
    let (name, value) = match stmt {
        Stmt::Expr(e) => {
            let Expr::Call(c) = &*e.value else {
                return None;
            };
            (helpers::name_of(helpers::method_call(c)?.1)?, &*e.value)
        }
        Stmt::Assign(a) => match &a.targets[..] {
            [Expr::Name(n)] => (n.id.as_str(), &*a.value),
            _ => return None,
        },
        _ => return None,
    };
    let Expr::Call(c) = value else { return None };
    matches!(helpers::method_call(c)?.0, "to" | "cuda").then_some(name)
}

/// `model.to(dev)` / `model.cuda()` / `model = X.to(dev)` statements moving a Module to CUDA.
fn cuda_move<'a>(checker: &mut Checker, stmt: &'a Stmt) -> Option<Move<'a>> {
    let (target, value): (&Expr, &Expr) = match stmt {
        Stmt::Expr(e) => {
            let Expr::Call(c) = &*e.value else {
                return None;
            };
            let (_, recv) = helpers::method_call(c)?;
            (recv, &*e.value)
        }
        Stmt::Assign(a) => match &a.targets[..] {
            [t @ Expr::Name(_)] => (t, &*a.value),
            _ => return None,
        },
        _ => return None,
    };
    let name = helpers::name_of(target)?;
    let Expr::Call(c) = value else { return None };
    let (method, _) = helpers::method_call(c)?;
    if !matches!(method, "cuda" | "to") || checker.kind_of(target) != Kind::Module {
        return None;
    }
    let device = match method {
        "cuda" => None,
        _ => {
            let d = helpers::argument(c, "device", 0)?;
            if !is_cuda_device(checker, d) {
                return None;
            }
            Some(d)
        }
    };
    Some(Move { name, stmt, device })
}

/// The file changes torch's default device or tensor type: factories, and perhaps batches,
/// are made on the GPU. A tensor put on the CPU by hand (`x.to("cpu")`) is still there.
fn file_sets_default_device(checker: &Checker) -> bool {
    let text = checker.source.text.as_bytes();
    memchr::memmem::find(text, b"set_default_device").is_some()
        || memchr::memmem::find(text, b"set_default_tensor_type").is_some()
}

/// File-level reasons to stay silent: something else moves batches to the device.
fn file_moves_batches(checker: &Checker) -> bool {
    let text = checker.source.text.as_ref();
    let has = |needle: &str| memchr::memmem::find(text.as_bytes(), needle.as_bytes()).is_some();
    if has("collate_fn")
        || has("DeviceDataLoader")
        || has("accelerate")
        || has("lightning")
        || has("DataParallel")
    {
        return true;
    }
    // A Dataset class whose __getitem__ mentions a device, or a TensorDataset of moved tensors.
    for stmt in &checker.module().body {
        if let Stmt::ClassDef(c) = stmt {
            if checker.classes.is_dataset(c.name.as_str()) {
                let t = checker.text(c.range());
                if t.contains("cuda") || t.contains("device") {
                    return true;
                }
            }
        }
    }
    let mut moved_dataset = false;
    walk_body(&checker.module().body, &mut |s, _| {
        for c in super::model_helpers::calls_in(s) {
            if checker.resolves_to(&c.func, &["torch.utils.data.TensorDataset"]) {
                let t = checker.text(c.range());
                moved_dataset |= t.contains("cuda") || t.contains(".to(") || t.contains("device");
            }
        }
    });
    moved_dataset
}

struct Finding {
    call: TextRange,
    arg: String,
    fix_stmt: Option<TextRange>,
    header: TextRange,
    origin: Origin,
    /// The tensor is the gradient given for the model's output (`autograd.grad(out, x,
    /// torch.ones(...))`, `out.backward(g)`), not an input of the model.
    gradient: bool,
}

/// Where a tensor on the CPU comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// A batch of a DataLoader.
    Loader,
    /// A torch factory without `device=`.
    Factory,
    /// `.to("cpu")` / `.cpu()`.
    MovedToCpu,
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Some(body) = analysed_body(checker, stmt) else {
        return;
    };
    // Cheap exit: no `.cuda(`/`.to(` in the body's text.
    let (Some(first), Some(last)) = (body.first(), body.last()) else {
        return;
    };
    let text = checker.text(TextRange::new(first.start(), last.end()));
    if !text.contains(".cuda(") && !text.contains(".to(") {
        return;
    }
    let mut stmts = Vec::new();
    walk_body(body, &mut |s, _| stmts.push(s));
    // Syntactic pre-filter: names called as functions in this body (`model(x)`); only a
    // move of one of them needs the value kinds.
    let mut called: FxHashSet<&str> = FxHashSet::default();
    for s in &stmts {
        for c in super::model_helpers::calls_in(s) {
            if let Some(n) = helpers::name_of(&c.func) {
                called.insert(n);
            }
        }
    }
    let mut moves = Vec::new();
    for s in &stmts {
        if !moved_name(s).is_some_and(|n| called.contains(n)) {
            continue;
        }
        if let Some(m) = cuda_move(checker, s) {
            moves.push(m);
        }
    }
    if moves.is_empty() || file_moves_batches(checker) {
        return;
    }
    let mut reported: FxHashSet<u32> = FxHashSet::default();
    for m in &moves {
        let Some(f) = scan(checker, &stmts, m) else {
            continue;
        };
        if f.origin != Origin::MovedToCpu && file_sets_default_device(checker) {
            continue;
        }
        if !reported.insert(f.call.start().to_u32()) {
            continue;
        }
        let fix = fix_for(checker, &stmts, m, &f);
        let move_text = checker.text(m.stmt.range()).to_string();
        let origin = match f.origin {
            Origin::Loader => "comes from the DataLoader on the CPU and is never moved",
            Origin::Factory => "is created on the CPU and is never moved",
            Origin::MovedToCpu => "is put on the CPU",
        };
        let call_text = checker.text(f.call).to_string();
        let call_text = if call_text.len() > 50 {
            // The callee as written: the model, or `torch.autograd.grad`.
            let callee = call_text.split('(').next().unwrap_or(m.name).trim();
            format!("{callee}(...)")
        } else {
            call_text
        };
        let message = if f.gradient {
            format!(
                "`{}` is moved to CUDA but `{}`, the gradient given for its output, {origin}: `{call_text}` fails with a device mismatch between the output and its gradient",
                m.name, f.arg
            )
        } else {
            format!(
                "`{}` is moved to CUDA but `{}` {origin}: `{call_text}` fails with \"Expected all tensors to be on the same device\"",
                m.name, f.arg
            )
        };
        let d = checker.report(f.call, message);
        d.add_related(
            m.stmt.range(),
            format!("`{move_text}` puts the model on the GPU"),
        );
        d.add_related(
            f.header,
            match f.origin {
                Origin::Loader => "the batch is produced here",
                Origin::Factory => "the tensor is created here",
                Origin::MovedToCpu => "the tensor is put on the CPU here",
            },
        );
        if let Some(fix) = fix {
            d.set_fix(fix);
        }
    }
}

/// Does `expr` hand over a raw (un-moved) name? Returns that name.
fn raw_arg<'e>(expr: &'e Expr, raw: &FxHashSet<String>) -> Option<&'e str> {
    match expr {
        Expr::Name(n) if raw.contains(n.id.as_str()) => Some(n.id.as_str()),
        Expr::Call(c) => {
            let (m, recv) = helpers::method_call(c)?;
            if SAME_DEVICE.contains(&m) {
                raw_arg(recv, raw)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Is `value` taken from a raw name by unpacking or indexing only (`batch[0]`, `batch["x"]`)?
fn derived_from_raw(value: &Expr, raw: &FxHashSet<String>) -> bool {
    match value {
        Expr::Name(n) => raw.contains(n.id.as_str()),
        Expr::Subscript(s) => {
            matches!(&*s.slice, Expr::NumberLiteral(_) | Expr::StringLiteral(_))
                && derived_from_raw(&s.value, raw)
        }
        Expr::Call(_) => raw_arg(value, raw).is_some(),
        _ => false,
    }
}

/// Is this a torch tensor factory call without `device=` (a CPU tensor)?
fn cpu_factory(checker: &Checker, value: &Expr) -> bool {
    let Expr::Call(c) = value else { return false };
    let Some(q) = checker.resolve(&c.func) else {
        return false;
    };
    matches!(
        q.as_str(),
        "torch.randn"
            | "torch.rand"
            | "torch.zeros"
            | "torch.ones"
            | "torch.empty"
            | "torch.tensor"
            | "torch.randint"
            | "torch.arange"
            | "torch.full"
    ) && helpers::keyword(c, "device").is_none()
        && !helpers::has_kwargs_splat(c)
}

/// The model's output: a call of the model, an element of it, a same-device method of it, or a
/// name bound to one.
fn is_model_output(e: &Expr, model: &str, outs: &FxHashSet<String>) -> bool {
    match e {
        Expr::Name(n) => outs.contains(n.id.as_str()),
        Expr::Call(c) if helpers::name_of(&c.func) == Some(model) => true,
        Expr::Call(c) => helpers::method_call(c).is_some_and(|(meth, recv)| {
            SAME_DEVICE.contains(&meth) && is_model_output(recv, model, outs)
        }),
        Expr::Subscript(sub) => is_model_output(&sub.value, model, outs),
        Expr::List(l) => l.elts.iter().any(|x| is_model_output(x, model, outs)),
        Expr::Tuple(t) => t.elts.iter().any(|x| is_model_output(x, model, outs)),
        _ => false,
    }
}

/// The differentiated outputs and the gradient given for them:
/// `torch.autograd.grad(outputs, inputs, grad_outputs)`,
/// `torch.autograd.backward(tensors, grad_tensors)`, `out.backward(gradient)`.
fn gradient_arguments<'e>(checker: &Checker, c: &'e ExprCall) -> Option<(&'e Expr, &'e Expr)> {
    if let Some(("backward", recv)) = helpers::method_call(c) {
        if checker.resolve(&c.func).is_none() {
            return Some((recv, helpers::argument(c, "gradient", 0)?));
        }
    }
    let q = checker.resolve(&c.func)?;
    match q.as_str() {
        "torch.autograd.grad" => Some((
            helpers::argument(c, "outputs", 0)?,
            helpers::argument(c, "grad_outputs", 2)?,
        )),
        "torch.autograd.backward" => Some((
            helpers::argument(c, "tensors", 0)?,
            helpers::argument(c, "grad_tensors", 1)?,
        )),
        _ => None,
    }
}

/// `x.cpu()`, `x.to("cpu")` or `x.to(torch.device("cpu"))`: a tensor put on the CPU.
fn to_cpu(checker: &Checker, value: &Expr) -> bool {
    let Expr::Call(c) = value else { return false };
    let Some((meth, _)) = helpers::method_call(c) else {
        return false;
    };
    match meth {
        "cpu" => c.arguments.is_empty(),
        "to" => {
            c.arguments.keywords.is_empty()
                && matches!(&c.arguments.args[..], [d] if is_cpu_literal(checker, d))
        }
        _ => false,
    }
}

fn scan(checker: &mut Checker, stmts: &[&Stmt], m: &Move) -> Option<Finding> {
    // The model must never be wrapped or re-bound to something else after the move.
    let mut raw: FxHashSet<String> = FxHashSet::default();
    let mut origin: rustc_hash::FxHashMap<String, (TextRange, Origin)> = Default::default();
    // Names bound to the model's output (`v = D(x)`, `out = model(x)[0]`).
    let mut outs: FxHashSet<String> = FxHashSet::default();
    let start = m.stmt.end();
    for s in stmts.iter().copied() {
        if s.start() < start {
            continue;
        }
        // 1. a model call with a raw argument.
        for e in own_exprs(s) {
            let mut found: Option<(TextRange, String)> = None;
            visit_exprs(e, &mut |x| {
                let Expr::Call(c) = x else { return };
                if found.is_some() || helpers::name_of(&c.func) != Some(m.name) {
                    return;
                }
                for a in &c.arguments.args {
                    if let Some(n) = raw_arg(a, &raw) {
                        found = Some((c.range(), n.to_string()));
                        return;
                    }
                }
                for k in &c.arguments.keywords {
                    if k.arg.is_none() {
                        if let Some(n) = helpers::name_of(&k.value).filter(|n| raw.contains(*n)) {
                            found = Some((c.range(), format!("**{n}")));
                            return;
                        }
                    } else if let Some(n) = raw_arg(&k.value, &raw) {
                        found = Some((c.range(), n.to_string()));
                        return;
                    }
                }
            });
            if let Some((call, arg)) = found {
                let key = arg.trim_start_matches('*').to_string();
                let (header, origin) = origin.get(&key).copied()?;
                return Some(Finding {
                    call,
                    arg,
                    fix_stmt: Some(s.range()),
                    header,
                    origin,
                    gradient: false,
                });
            }
        }
        // 1b. the model's output differentiated with a gradient on the CPU
        // (`autograd.grad(out, x, torch.ones(...))`, `out.backward(g)`).
        for c in super::model_helpers::calls_in(s) {
            let Some((outputs, grad)) = gradient_arguments(checker, c) else {
                continue;
            };
            if !is_model_output(outputs, m.name, &outs) {
                continue;
            }
            let elements: Vec<&Expr> = match grad {
                Expr::List(l) => l.elts.iter().collect(),
                Expr::Tuple(t) => t.elts.iter().collect(),
                g => vec![g],
            };
            for g in elements {
                let found = match g {
                    Expr::Name(n) if raw.contains(n.id.as_str()) => origin
                        .get(n.id.as_str())
                        .map(|&(h, o)| (n.id.to_string(), h, o)),
                    g if cpu_factory(checker, g) => Some((
                        checker.text(g.range()).to_string(),
                        g.range(),
                        Origin::Factory,
                    )),
                    _ => None,
                };
                if let Some((arg, header, origin)) = found {
                    let arg = if arg.len() > 40 {
                        "the gradient".to_string()
                    } else {
                        arg
                    };
                    return Some(Finding {
                        call: c.range(),
                        arg,
                        fix_stmt: None,
                        header,
                        origin,
                        gradient: true,
                    });
                }
            }
        }
        // 2. anything else that touches a raw name forgets it: helper calls, moves, use as an
        // argument of any other call (it may move it in place).
        for c in super::model_helpers::calls_in(s) {
            if let Some((meth, recv)) = helpers::method_call(c) {
                if !SAME_DEVICE.contains(&meth) {
                    if let Some(n) = helpers::name_of(recv) {
                        raw.remove(n);
                    }
                }
            }
            if helpers::name_of(&c.func) != Some(m.name) {
                for a in c
                    .arguments
                    .args
                    .iter()
                    .chain(c.arguments.keywords.iter().map(|k| &k.value))
                {
                    let mut names = Vec::new();
                    visit_exprs(a, &mut |x| {
                        if let Expr::Name(n) = x {
                            names.push(n.id.to_string());
                        }
                    });
                    for n in names {
                        raw.remove(&n);
                    }
                }
            }
        }
        // 3. bindings, and the model put back on the CPU in place (`model.cpu()`,
        // `model.to("cpu")`: a module moves itself).
        if binds_name(s, m.name) && cuda_move(checker, s).is_none() {
            return None;
        }
        if let Stmt::Expr(e) = s {
            if let Expr::Call(c) = &*e.value {
                if helpers::method_call(c).is_some_and(|(meth, recv)| {
                    helpers::name_of(recv) == Some(m.name) && matches!(meth, "cpu" | "to")
                }) && !c
                    .arguments
                    .args
                    .first()
                    .is_some_and(|d| is_cuda_device(checker, d))
                {
                    return None;
                }
            }
        }
        match s {
            Stmt::For(f) => {
                let mut names = Vec::new();
                helpers::for_each_bound_name(&f.target, &mut |n| names.push(n.to_string()));
                for n in &names {
                    raw.remove(n);
                }
                if let Some((loader, enumerated)) = loader_of(checker, &f.iter) {
                    if is_plain_dataloader(checker, loader) {
                        let batch = match (&*f.target, enumerated) {
                            (Expr::Tuple(t), true) if t.elts.len() == 2 => Some(&t.elts[1]),
                            (_, true) => None,
                            (t, false) => Some(t),
                        };
                        if let Some(b) = batch {
                            let mut names = Vec::new();
                            helpers::for_each_bound_name(b, &mut |n| names.push(n.to_string()));
                            for n in names {
                                origin.insert(n.clone(), (f.iter.range(), Origin::Loader));
                                raw.insert(n);
                            }
                        }
                    }
                }
            }
            Stmt::Assign(a) => {
                let mut names = Vec::new();
                for t in &a.targets {
                    helpers::for_each_bound_name(t, &mut |n| names.push(n.to_string()));
                }
                let output = is_model_output(&a.value, m.name, &outs);
                for n in &names {
                    if output && a.targets.len() == 1 && matches!(&a.targets[0], Expr::Name(_)) {
                        outs.insert(n.clone());
                    } else {
                        outs.remove(n);
                    }
                }
                let derived = derived_from_raw(&a.value, &raw);
                let parent_origin = {
                    let mut o = None;
                    visit_exprs(&a.value, &mut |x| {
                        if let Expr::Name(n) = x {
                            if o.is_none() {
                                o = origin.get(n.id.as_str()).copied();
                            }
                        }
                    });
                    o
                };
                let factory = (a.targets.len() == 1)
                    .then(|| {
                        if cpu_factory(checker, &a.value) {
                            Some(Origin::Factory)
                        } else if to_cpu(checker, &a.value) {
                            Some(Origin::MovedToCpu)
                        } else {
                            None
                        }
                    })
                    .flatten();
                for n in names {
                    if derived {
                        if let Some(o) = parent_origin {
                            origin.insert(n.clone(), o);
                            raw.insert(n);
                            continue;
                        }
                    }
                    if let Some(kind) = factory {
                        origin.insert(n.clone(), (a.value.range(), kind));
                        raw.insert(n);
                        continue;
                    }
                    raw.remove(&n);
                }
            }
            _ => {
                let bound: Vec<String> = raw.iter().filter(|n| binds_name(s, n)).cloned().collect();
                for n in bound {
                    raw.remove(&n);
                }
            }
        }
    }
    None
}

fn fix_for(checker: &Checker, stmts: &[&Stmt], m: &Move, f: &Finding) -> Option<RawFix> {
    if f.arg.starts_with('*') || f.origin != Origin::Loader {
        return None;
    }
    let stmt_range = f.fix_stmt?;
    let moved = match m.device {
        None => format!("{0} = {0}.cuda()", f.arg),
        Some(d) => {
            let ok = match d {
                Expr::StringLiteral(_) => true,
                Expr::Name(n) => {
                    // Not re-bound anywhere after the move.
                    !stmts
                        .iter()
                        .any(|s| s.start() > m.stmt.start() && binds_name(s, n.id.as_str()))
                }
                _ => false,
            };
            if !ok {
                return None;
            }
            format!("{0} = {0}.to({1})", f.arg, checker.text(d.range()))
        }
    };
    let (line_start, indent) = indentation_at(checker, stmt_range.start())?;
    Some(RawFix::safe(
        format!("Move `{}` to the model's device first", f.arg),
        vec![RawEdit::insert(
            line_start,
            format!("{indent}{moved}{}", newline(checker)),
        )],
    ))
}

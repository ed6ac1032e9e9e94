use super::model_helpers::{
    analysed_body, binds_name, indentation_at, is_cuda_device, is_plain_dataloader, loader_of,
    own_exprs, visit_exprs, walk_body,
};
use crate::checker::Checker;
use crate::fix::newline;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};
use rustc_hash::FxHashSet;
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;

crate::declare_rule! {
    /// ## What it does
    /// Checks for a model moved to CUDA (`model.cuda()`, `model.to("cuda")`, `model.to(device)`
    /// with a CUDA `device`) and then called, in the same function, on a batch taken from a
    /// `DataLoader` (or a tensor made by a torch factory without `device=`) that is never moved
    /// with `.to(...)` / `.cuda()`.
    ///
    /// ## Why is this bad?
    /// A DataLoader yields CPU tensors. Feeding them to a model whose weights live on the GPU
    /// fails on the first batch with "Expected all tensors to be on the same device". The rule
    /// stays silent when the batch passes through any helper call, re-assignment or
    /// comprehension before the model call (it may move it), when the model is wrapped in
    /// `DataParallel`/`DistributedDataParallel` (they move inputs themselves), when the loader
    /// has a custom `collate_fn`, or when the file uses Accelerate, a device-moving loader
    /// wrapper or a Dataset that puts samples on the GPU. The rule is in preview: it needs
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

/// File-level reasons to stay silent: something else moves batches to the device.
fn file_moves_batches(checker: &Checker) -> bool {
    let text = checker.source.text.as_str();
    let has = |needle: &str| memchr::memmem::find(text.as_bytes(), needle.as_bytes()).is_some();
    if has("collate_fn")
        || has("DeviceDataLoader")
        || has("accelerate")
        || has("lightning")
        || has("set_default_device")
        || has("set_default_tensor_type")
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
    from_loader: bool,
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
        if !reported.insert(f.call.start().to_u32()) {
            continue;
        }
        let fix = fix_for(checker, &stmts, m, &f);
        let move_text = checker.text(m.stmt.range()).to_string();
        let origin = if f.from_loader {
            "comes from the DataLoader on the CPU"
        } else {
            "is created on the CPU"
        };
        let call_text = checker.text(f.call).to_string();
        let call_text = if call_text.len() > 50 {
            format!("{}(...)", m.name)
        } else {
            call_text
        };
        let d = checker.report(
            f.call,
            format!(
                "`{}` is moved to CUDA but `{}` {origin} and is never moved: `{call_text}` fails with \"Expected all tensors to be on the same device\"",
                m.name, f.arg
            ),
        );
        d.add_related(
            m.stmt.range(),
            format!("`{move_text}` puts the model on the GPU"),
        );
        d.add_related(
            f.header,
            if f.from_loader {
                "the batch is produced here"
            } else {
                "the tensor is created here"
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

fn scan(checker: &mut Checker, stmts: &[&Stmt], m: &Move) -> Option<Finding> {
    // The model must never be wrapped or re-bound to something else after the move.
    let mut raw: FxHashSet<String> = FxHashSet::default();
    let mut origin: rustc_hash::FxHashMap<String, (TextRange, bool)> = Default::default();
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
                let (header, from_loader) = origin.get(&key).copied()?;
                return Some(Finding {
                    call,
                    arg,
                    fix_stmt: Some(s.range()),
                    header,
                    from_loader,
                });
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
        // 3. bindings.
        if binds_name(s, m.name) && cuda_move(checker, s).is_none() {
            return None;
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
                                origin.insert(n.clone(), (f.iter.range(), true));
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
                let factory = cpu_factory(checker, &a.value) && a.targets.len() == 1;
                for n in names {
                    if derived {
                        if let Some(o) = parent_origin {
                            origin.insert(n.clone(), o);
                            raw.insert(n);
                            continue;
                        }
                    }
                    if factory {
                        origin.insert(n.clone(), (a.value.range(), false));
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
    if f.arg.starts_with('*') || !f.from_loader {
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

use super::model_helpers::{
    analysed_body, binds_name, body_mentions, calls_in, indentation_at, stmt_reads, walk_body,
};
use crate::checker::Checker;
use crate::fix::newline;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{self as ast, ExceptHandler, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::dataflow::Prop;
use torchvet_semantic::kinds::Kind;
use torchvet_semantic::{helpers, uses};

crate::declare_rule! {
    /// ## What it does
    /// Checks for wall-clock timing (`time.time()`, `time.perf_counter()`,
    /// `time.monotonic()`, `timeit.default_timer()`) around GPU work (a model call,
    /// `backward()`, a torch compute op) in a file that uses CUDA, with no synchronisation
    /// point between the work and the second timer read. A synchronisation point is any call
    /// that makes the host wait for the device: `torch.cuda.synchronize()`, an event's or a
    /// stream's `synchronize()`, reading a result back (`.item()`, `.cpu()`, `.tolist()`,
    /// `.numpy()`, `.to("cpu")`, `float(t)`, `print(t)` of a tensor, `torch.equal`,
    /// `tokenizer.decode(ids)`), and a library model's `.generate(...)` (Hugging Face
    /// generation checks its stopping criteria on the host after every token, so it returns
    /// only when its kernels are done).
    ///
    /// ## Why is this bad?
    /// CUDA kernels run asynchronously: the Python call returns as soon as the kernels are
    /// queued. Reading the clock right after measures the launch overhead, not the work,
    /// and the real cost lands in whatever synchronises next. Timings that look 10-100x too
    /// fast lead to wrong conclusions about which model or setting is faster.
    /// A pair of time stamps from which no elapsed time is ever computed (`t1 = time.time()`
    /// where neither `t1` nor the first stamp is read on any later path: no difference, no
    /// print, no log) is not reported: nothing is measured, so nothing is misreported.
    /// Regions that call a project helper, a method of an object the class holds
    /// (`self.bbox_util.decode(out)`), or another library's function are not reported
    /// (the helper may synchronise, or its CPU work may dominate the time), and neither is
    /// work on tensors known to be on the CPU (`torch.randn(n, n)` never moved, then
    /// `y.sum().backward()`): CPU ops and CPU autograd run synchronously. A timer around a
    /// whole training run (a loop that calls `backward()` and steps an optimizer) is not
    /// reported either: what is left unsynchronised is at most one step. Neither is timing
    /// that runs only off CUDA: the `else` of `if torch.cuda.is_available():` or of `if
    /// x.device.type == "cuda" and use_events:` where every caller leaves `use_events` at its
    /// true default.
    ///
    /// ## Example
    /// ```python
    /// model = Net().cuda()
    /// t0 = time.perf_counter()
    /// y = model(x)
    /// elapsed = time.perf_counter() - t0
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model = Net().cuda()
    /// torch.cuda.synchronize()
    /// t0 = time.perf_counter()
    /// y = model(x)
    /// torch.cuda.synchronize()
    /// elapsed = time.perf_counter() - t0
    /// ```
    ///
    /// ## Fix safety
    /// The fix inserts `torch.cuda.synchronize()` (with the file's name for `torch`) on its
    /// own line before the statement that reads the timer, guarded by `if
    /// torch.cuda.is_available():` unless the timing sits inside a CUDA test (`if
    /// torch.cuda.is_available():`, `if x.device.type == "cuda":`). Unguarded, the call raises
    /// on a CPU-only torch build, so code that also runs on the CPU (a `--gpu -1` default)
    /// would crash where it ran before. Waiting for queued kernels changes no value, so the
    /// guarded fix is safe. No fix is offered when `torch` is not imported or the timer read
    /// shares its line with other statements.
    ///
    /// ## References
    /// - [CUDA semantics: asynchronous execution](https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution)
    /// - [torch.utils.benchmark](https://pytorch.org/docs/stable/benchmark_utils.html)
    /// - [pytorch/pytorch#23910](https://github.com/pytorch/pytorch/pull/23910)
    pub(crate) static CUDA_TIMING_WITHOUT_SYNCHRONIZE = {
        name: "cuda-timing-without-synchronize",
        code: "TV062",
        group: Correctness,
        severity: Warning,
        title: "Timing GPU work with time.time()/perf_counter() without torch.cuda.synchronize() (measures launch time only)",
        autofix: Yes,
        hooks: { stmt: check_stmt },
    };
}

const TIMERS: &[&str] = &[
    "time.time",
    "time.perf_counter",
    "time.monotonic",
    "time.perf_counter_ns",
    "time.time_ns",
    "time.monotonic_ns",
    "timeit.default_timer",
];

/// Torch compute functions that launch kernels.
const TORCH_OPS: &[&str] = &[
    "matmul", "mm", "bmm", "einsum", "conv1d", "conv2d", "conv3d", "softmax", "baddbmm", "addmm",
];

fn timer_call<'a>(checker: &Checker, expr: &'a Expr) -> Option<&'a ast::ExprCall> {
    match expr {
        Expr::Call(c) if checker.resolves_to(&c.func, TIMERS) => Some(c),
        _ => None,
    }
}

/// Does the file put anything on a CUDA device?
fn file_uses_cuda(checker: &Checker) -> bool {
    let t = checker.source.text.as_bytes();
    let has = |n: &str| memchr::memmem::find(t, n.as_bytes()).is_some();
    has(".cuda(") || has("\"cuda") || has("'cuda")
}

/// The first CUDA-work call and whether anything synchronises, in these statements (nested
/// suites included).
fn work_and_sync(checker: &mut Checker, stmts: &[&Stmt]) -> (Option<TextRange>, bool) {
    let mut all: Vec<&Stmt> = Vec::new();
    for s in stmts {
        walk_body(std::slice::from_ref(*s), &mut |x, _| all.push(x));
    }
    let mut work = None;
    // Names the region binds to the result of GPU work (`logits = model(x)`).
    let mut results: Vec<&str> = Vec::new();
    for x in all {
        let mut here = false;
        for c in calls_in(x) {
            let q = checker.resolve(&c.func);
            if uses::waits_for_device(c, q.as_deref())
                || waits_by_value(checker, c, q.as_deref(), &results)
            {
                return (work, true);
            }
            // A helper we cannot see into may synchronise or dominate the time: stay silent.
            if unknown_helper(checker, c, q.as_deref()) {
                return (work, true);
            }
            if is_work(checker, c, q.as_deref()) {
                here = true;
                work.get_or_insert(c.range());
            }
        }
        if let (true, Stmt::Assign(a)) = (here, x) {
            results.extend(a.targets.iter().filter_map(|t| helpers::name_of(t)));
        }
    }
    (work, false)
}

/// Does the call launch GPU work: a torch compute op on tensors not known to be on the CPU, a
/// model call, `backward()`?
fn is_work(checker: &mut Checker, c: &ast::ExprCall, q: Option<&str>) -> bool {
    match q {
        Some(q) => {
            (q.starts_with("torch.nn.functional.")
                || q.strip_prefix("torch.")
                    .is_some_and(|f| TORCH_OPS.contains(&f)))
                && !cpu_operands(checker, c)
        }
        None => match helpers::method_call(c) {
            Some(("backward", recv)) => !checker.taint_of(recv).has(Prop::OnCpu),
            // A module fed only CPU tensors runs on the CPU (on the GPU it would fail).
            Some(("forward", recv)) => {
                checker.kind_of(recv) == Kind::Module && !cpu_operands(checker, c)
            }
            // A generation loop of this project's own model (a library's waits, see
            // `waits_by_value`).
            Some(("generate", recv)) => checker.kind_of(recv) == Kind::Module,
            _ => checker.kind_of(&c.func) == Kind::Module && !cpu_operands(checker, c),
        },
    }
}

/// Does the call wait for the device because of what it is called on? `print` of a tensor
/// (known by its kind, or a name of `results`: bound in the region to the result of GPU
/// work) formats its values on the host; `model.generate(...)` of a library model (Hugging Face
/// `generate`, whose decoding loop checks its stopping criteria on the host after every
/// token) has finished all its kernels when it returns. A project's own `generate` (a class
/// of this file or of the project) is analysed as GPU work instead.
fn waits_by_value(
    checker: &mut Checker,
    c: &ast::ExprCall,
    q: Option<&str>,
    results: &[&str],
) -> bool {
    if q.is_none() && helpers::name_of(&c.func) == Some("print") {
        return c.arguments.args.iter().any(|a| {
            checker.kind_of(a) == Kind::Tensor
                || helpers::name_of(a).is_some_and(|n| results.contains(&n))
        });
    }
    let Some(("generate", recv)) = helpers::method_call(c) else {
        return false;
    };
    if checker.kind_of(recv) != Kind::Module {
        return false;
    }
    match checker.taint_of(recv).instance {
        Some(i) => {
            !i.local
                && !checker
                    .project_or_file()
                    .is_some_and(|p| p.is_module_class(&i.class))
        }
        None => true,
    }
}

/// Does a torch op run on CPU tensors only: every positional operand is known to be on the CPU
/// (or a plain number)? CPU ops run synchronously, so timing them needs no synchronize.
fn cpu_operands(checker: &mut Checker, c: &ast::ExprCall) -> bool {
    let mut any = false;
    for a in &c.arguments.args {
        if matches!(a, Expr::NumberLiteral(_) | Expr::StringLiteral(_)) {
            continue;
        }
        if !checker.taint_of(a).has(Prop::OnCpu) {
            return false;
        }
        any = true;
    }
    any
}

/// Python builtins that neither synchronise nor hide GPU work.
const BUILTINS: &[&str] = &[
    "print",
    "range",
    "len",
    "enumerate",
    "zip",
    "list",
    "tuple",
    "dict",
    "set",
    "min",
    "max",
    "sum",
    "isinstance",
    "iter",
    "next",
    "str",
    "sorted",
    "format",
    "repr",
    "round",
    "abs",
];

/// A call to a function whose body we do not see (a project helper or another library),
/// which may synchronise or do slow CPU work itself.
fn unknown_helper(checker: &mut Checker, c: &ast::ExprCall, q: Option<&str>) -> bool {
    if c.arguments.is_empty() && !matches!(&*c.func, Expr::Name(_)) {
        return false;
    }
    match q {
        Some(q) => ![
            "torch", "time", "timeit", "tqdm", "numpy", "math", "logging", "random",
        ]
        .iter()
        .any(|m| q == *m || q.starts_with(&format!("{m}."))),
        None => match &*c.func {
            Expr::Name(n) => {
                !BUILTINS.contains(&n.id.as_str()) && checker.kind_of(&c.func) != Kind::Module
            }
            Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => {
                checker.kind_of(&c.func) != Kind::Module
            }
            // A method of an object the class holds whose kind is not known (a project's
            // box decoder, `self.bbox_util.non_max_suppression(out)`, which copies to the host).
            Expr::Attribute(a)
                if matches!(&*a.value, Expr::Attribute(inner)
                    if helpers::name_of(&inner.value) == Some("self")) =>
            {
                checker.kind_of(&a.value) == Kind::Unknown
            }
            _ => false,
        },
    }
}

/// Where a suite runs, as its enclosing branch tests tell: `Some(true)` only on CUDA (inside
/// `if torch.cuda.is_available():`), `Some(false)` only off CUDA (its `else`, or `if
/// device.type == "cpu":`), `None` when they do not tell. The innermost device test wins.
type Device = Option<bool>;

fn suites<'a>(
    checker: &mut Checker,
    body: &'a [Stmt],
    dev: Device,
    out: &mut Vec<(&'a [Stmt], Device)>,
) {
    out.push((body, dev));
    for s in body {
        match s {
            Stmt::For(f) => {
                suites(checker, &f.body, dev, out);
                suites(checker, &f.orelse, dev, out);
            }
            Stmt::While(w) => {
                suites(checker, &w.body, dev, out);
                suites(checker, &w.orelse, dev, out);
            }
            Stmt::If(i) => {
                suites(
                    checker,
                    &i.body,
                    branch_device(checker, &i.test).or(dev),
                    out,
                );
                // Every later clause runs only when the `if` test is false.
                let otherwise = else_device(checker, &i.test).or(dev);
                for c in &i.elif_else_clauses {
                    let d = match &c.test {
                        Some(t) => branch_device(checker, t).or(otherwise),
                        None => otherwise,
                    };
                    suites(checker, &c.body, d, out);
                }
            }
            Stmt::With(w) => suites(checker, &w.body, dev, out),
            Stmt::Try(t) => {
                suites(checker, &t.body, dev, out);
                for h in &t.handlers {
                    let ExceptHandler::ExceptHandler(h) = h;
                    suites(checker, &h.body, dev, out);
                }
                suites(checker, &t.orelse, dev, out);
                suites(checker, &t.finalbody, dev, out);
            }
            _ => {}
        }
    }
}

/// The conjuncts of a test (`a and b and c` -> a, b, c).
fn conjuncts(test: &Expr) -> Vec<&Expr> {
    match test {
        Expr::BoolOp(b) if matches!(b.op, ast::BoolOp::And) => {
            b.values.iter().flat_map(conjuncts).collect()
        }
        t => vec![t],
    }
}

/// The device a branch runs on when its test holds: the first device test among its
/// conjuncts (see [`helpers::cuda_test`]).
fn branch_device(checker: &Checker, test: &Expr) -> Device {
    let is_available = |f: &Expr| checker.resolves_to(f, &["torch.cuda.is_available"]);
    conjuncts(test)
        .into_iter()
        .find_map(|c| helpers::cuda_test(c, &is_available))
}

/// The device the `else` of `if test:` runs on: off CUDA when the test is a CUDA test,
/// alone or in a conjunction whose other conjuncts hold as the project runs the code (flags
/// every caller leaves at a true default: `if device.type == "cuda" and use_events:`).
fn else_device(checker: &mut Checker, test: &Expr) -> Device {
    let mut cuda = false;
    let mut others = Vec::new();
    {
        let is_available = |f: &Expr| checker.resolves_to(f, &["torch.cuda.is_available"]);
        for c in conjuncts(test) {
            match helpers::cuda_test(c, &is_available) {
                Some(true) if !cuda => cuda = true,
                _ => others.push(c),
            }
        }
    }
    if !cuda {
        return None;
    }
    others
        .into_iter()
        .all(|c| flag_true_as_run(checker, c))
        .then_some(false)
}

/// Is `e` a parameter of the enclosing function with a true default (`use_events=True`) that
/// every call in the project leaves at that default, and that the function never rebinds?
fn flag_true_as_run(checker: &mut Checker, e: &Expr) -> bool {
    let Some(p) = checker.project_or_file().cloned() else {
        return false;
    };
    crate::rules::facts::unrebound_param(checker, &p, e).is_some_and(|(func, i, default)| {
        default.and_then(helpers::is_truthy) == Some(true) && p.model.param_left_default(func, i)
    })
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Some(body) = analysed_body(checker, stmt) else {
        return;
    };
    // Every CUDA spelling `file_uses_cuda` accepts contains "cuda": one cached scan per file.
    if !checker.mentions("cuda") {
        return;
    }
    // Cheap exit on the body's text; the file-wide CUDA test runs only for a candidate.
    if ![
        "time()",
        "time_ns()",
        "perf_counter",
        "monotonic",
        "default_timer",
    ]
    .iter()
    .any(|n| body_mentions(checker, body, n))
    {
        return;
    }
    let mut all = Vec::new();
    suites(checker, body, None, &mut all);
    for (suite, dev) in all {
        // Work that runs only off CUDA (the `else` of a CUDA test) is synchronous.
        if dev == Some(false) {
            continue;
        }
        for (i, s) in suite.iter().enumerate() {
            let Stmt::Assign(a) = s else { continue };
            let [Expr::Name(start)] = &a.targets[..] else {
                continue;
            };
            if timer_call(checker, &a.value).is_none() {
                continue;
            }
            check_pair(
                checker,
                body,
                suite,
                i,
                start.id.as_str(),
                dev == Some(true),
            );
        }
    }
}

fn check_pair(
    checker: &mut Checker,
    body: &[Stmt],
    suite: &[Stmt],
    i: usize,
    start: &str,
    on_cuda: bool,
) {
    for j in i + 1..suite.len() {
        let s = &suite[j];
        // The second read: a timer call in a statement that uses the start (`t1 - t0`) or
        // stores a second time stamp.
        let read = calls_in(s)
            .into_iter()
            .find(|c| checker.resolves_to(&c.func, TIMERS));
        let stores_stamp = matches!(s, Stmt::Assign(a) if a.targets.len() == 1 && timer_call(checker, &a.value).is_some());
        match read {
            Some(read) if stores_stamp || stmt_reads(s, start) => {
                let between: Vec<&Stmt> = suite[i + 1..j].iter().collect();
                if between
                    .iter()
                    .any(|b| matches!(b, Stmt::FunctionDef(_) | Stmt::ClassDef(_)))
                {
                    return;
                }
                // A timer around a whole training run (a loop that steps an optimizer): the
                // unsynchronised tail is at most one step of minutes, not "only the launches".
                if times_training_run(checker, &between) {
                    return;
                }
                let (work, synced) = work_and_sync(checker, &between);
                let (_, synced_here) = work_and_sync(checker, &[s]);
                let Some(work) = work else { return };
                // A second time stamp (`t1 = time.time()`) with no elapsed time computed
                // from it: unless both stamps are read afterwards (a difference, a print, a
                // log), nothing is measured and nothing is misreported.
                if !stmt_reads(s, start) && !stamps_read_after(body, s, start) {
                    return;
                }
                if !file_uses_cuda(checker) {
                    return;
                }
                if synced || synced_here {
                    return;
                }
                report(checker, &suite[i], s, read.range(), work, start, on_cuda);
                return;
            }
            _ => {}
        }
        if binds_name(s, start) {
            return;
        }
    }
}

/// `t1 = time.time()` after `t0 = time.time()`: are both stamps read on a path after the
/// second one (`elapsed = t1 - t0`, `print(t0, t1)`, `times.append(t1 - t0)`)? A second stamp
/// stored elsewhere than in a plain name (`self.t1 = ...`) counts as read.
fn stamps_read_after(body: &[Stmt], second: &Stmt, start: &str) -> bool {
    let Stmt::Assign(a) = second else {
        return true;
    };
    let [Expr::Name(stamp)] = &a.targets[..] else {
        return true;
    };
    uses::read_after(body, second, stamp.id.as_str()) && uses::read_after(body, second, start)
}

/// Does one of the timed statements hold a training loop (backward and an optimizer step in
/// its iteration)?
fn times_training_run(checker: &Checker, stmts: &[&Stmt]) -> bool {
    let mut found = false;
    for s in stmts {
        walk_body(std::slice::from_ref(*s), &mut |x, _| {
            if !found
                && matches!(x, Stmt::For(_) | Stmt::While(_))
                && torchvet_semantic::modes::loop_is_training(checker, x)
            {
                found = true;
            }
        });
    }
    found
}

fn report(
    checker: &mut Checker,
    start_stmt: &Stmt,
    read_stmt: &Stmt,
    read: TextRange,
    work: TextRange,
    start: &str,
    on_cuda: bool,
) {
    let timer = checker.text(read).to_string();
    let work_text = checker.text(work);
    let work_text = if work_text.len() > 40 {
        format!("{}...", work_text.chars().take(37).collect::<String>())
    } else {
        work_text.to_string()
    };
    let fix = sync_fix(checker, read_stmt, on_cuda);
    let d = checker.report(
        read,
        format!(
            "`{timer}` is read right after `{work_text}` with no torch.cuda.synchronize() in between: CUDA kernels run asynchronously, so the time since `{start}` measures only the kernel launches"
        ),
    );
    d.add_related(work, "the GPU work being timed");
    d.add_related(start_stmt.range(), format!("`{start}` is taken here"));
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

/// The fix: `torch.cuda.synchronize()` before the timer read, guarded by
/// `torch.cuda.is_available()` unless the suite runs only on CUDA (inside a CUDA test): an
/// unguarded call raises on a CPU-only torch build ("Torch not compiled with CUDA enabled")
/// and in code that also runs on the CPU.
fn sync_fix(checker: &Checker, read_stmt: &Stmt, on_cuda: bool) -> Option<RawFix> {
    let torch = checker.module_alias("torch")?;
    let (line_start, indent) = indentation_at(checker, read_stmt.start())?;
    let line = if on_cuda {
        format!("{indent}{torch}.cuda.synchronize(){}", newline(checker))
    } else {
        format!(
            "{indent}if {torch}.cuda.is_available():{nl}{indent}    {torch}.cuda.synchronize(){nl}",
            nl = newline(checker)
        )
    };
    Some(RawFix::safe(
        "Insert `torch.cuda.synchronize()` before reading the timer",
        vec![RawEdit::insert(line_start, line)],
    ))
}

use crate::checker::Checker;
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `os.environ["CUDA_VISIBLE_DEVICES"] = ...` (or `os.putenv` /
    /// `os.environ.setdefault` of it) after a call that initialises CUDA in the same function
    /// or script: `.cuda()`, `.to("cuda")`, a `device="cuda"` tensor, `torch.cuda.device_count()`,
    /// `torch.cuda.set_device(...)`, `torch.cuda.get_device_name()`, ... An assignment inside a
    /// function also counts as late when module-level code before the function initialised
    /// CUDA.
    ///
    /// ## Why is this bad?
    /// The CUDA runtime reads `CUDA_VISIBLE_DEVICES` once, when it initialises. Changing the
    /// variable afterwards has no effect: the process keeps seeing every GPU, jobs meant for
    /// GPU 2 land on GPU 0, and several "isolated" processes end up sharing one device.
    ///
    /// `torch.cuda.is_available()` alone is not reported (recent versions can answer it
    /// without initialising CUDA). The rule is in preview: it follows source order, not calls
    /// between functions.
    ///
    /// ## Example
    /// ```python
    /// import torch
    /// n = torch.cuda.device_count()
    /// os.environ["CUDA_VISIBLE_DEVICES"] = "2"
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// import os
    /// os.environ["CUDA_VISIBLE_DEVICES"] = "2"
    /// import torch
    /// n = torch.cuda.device_count()
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: set the variable before anything touches CUDA (ideally before
    /// importing torch, or in the launcher's environment).
    ///
    /// ## References
    /// - [CUDA environment variables](https://pytorch.org/docs/stable/notes/cuda.html)
    /// - [pytorch/pytorch#9158](https://github.com/pytorch/pytorch/issues/9158)
    /// - [pytorch/pytorch#23544](https://github.com/pytorch/pytorch/issues/23544)
    pub(crate) static CUDA_VISIBLE_DEVICES_AFTER_CUDA_INIT = {
        name: "cuda-visible-devices-after-cuda-init",
        code: "TV063",
        group: Distributed,
        severity: Warning,
        title: "os.environ['CUDA_VISIBLE_DEVICES'] set after CUDA was initialised (no effect)",
        autofix: Suggest,
        preview: true,
        hooks: { stmt: check_stmt, call: check_call, end: clear },
    };
}

const VAR: &str = "CUDA_VISIBLE_DEVICES";

/// `torch.cuda` functions that initialise CUDA.
const INIT: &[&str] = &[
    "device_count",
    "current_device",
    "set_device",
    "get_device_name",
    "get_device_properties",
    "get_device_capability",
    "synchronize",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "max_memory_allocated",
    "empty_cache",
    "init",
    "Stream",
    "current_stream",
];

#[derive(Default)]
struct State {
    /// Whether the file mentions the variable at all (computed on the first call).
    relevant: Option<bool>,
    /// First CUDA-initialising call per frame (function start; `u32::MAX` for the module).
    inits: FxHashMap<TextSize, (TextRange, String)>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

fn frame_key(checker: &Checker) -> TextSize {
    checker
        .function()
        .map_or(TextSize::new(u32::MAX), Ranged::start)
}

fn relevant(checker: &Checker) -> bool {
    STATE.with_borrow_mut(|s| {
        *s.relevant
            .get_or_insert_with(|| checker.source.text.contains(VAR))
    })
}

fn is_cuda_string(e: &Expr) -> bool {
    helpers::str_value(e).is_some_and(|s| s.starts_with("cuda"))
}

/// Does this call initialise CUDA? A description of it.
fn initialises(checker: &Checker, call: &ExprCall, name: Option<&str>) -> Option<String> {
    if let Some(q) = name {
        if let Some(f) = q.strip_prefix("torch.cuda.") {
            if INIT.contains(&f) {
                return Some(format!("`{}()`", checker.text(call.func.range())));
            }
        }
        if q.starts_with("torch.") && helpers::keyword(call, "device").is_some_and(is_cuda_string) {
            return Some(format!(
                "`{}(..., device=\"cuda\")`",
                checker.text(call.func.range())
            ));
        }
        return None;
    }
    match helpers::method_call(call)? {
        ("cuda", recv) => Some(format!("`{}.cuda()`", short(checker.text(recv.range())))),
        ("to", recv) if helpers::argument(call, "device", 0).is_some_and(is_cuda_string) => Some(
            format!("`{}.to(\"cuda\")`", short(checker.text(recv.range()))),
        ),
        _ => None,
    }
}

fn short(t: &str) -> &str {
    if t.len() <= 30 && !t.contains('\n') {
        t
    } else {
        "..."
    }
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if !relevant(checker) {
        return;
    }
    // os.putenv("CUDA_VISIBLE_DEVICES", ...) / os.environ.setdefault(...)
    if matches!(name, Some("os.putenv" | "os.environ.setdefault"))
        && call.arguments.args.first().and_then(helpers::str_value) == Some(VAR)
    {
        late_assignment(checker, call.range());
        return;
    }
    let Some(what) = initialises(checker, call, name) else {
        return;
    };
    let key = frame_key(checker);
    let range = call.range();
    STATE.with_borrow_mut(|s| {
        s.inits.entry(key).or_insert((range, what));
    });
}

fn is_var_target(checker: &Checker, target: &Expr) -> bool {
    let Expr::Subscript(s) = target else {
        return false;
    };
    helpers::str_value(&s.slice) == Some(VAR) && checker.resolves_to(&s.value, &["os.environ"])
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::Assign(a) = stmt else { return };
    if !relevant(checker) || !a.targets.iter().any(|t| is_var_target(checker, t)) {
        return;
    }
    late_assignment(checker, stmt.range());
}

fn late_assignment(checker: &mut Checker, at: TextRange) {
    let key = frame_key(checker);
    // The outermost function, for module-level code that ran before it was defined.
    let outer_def = checker
        .frames()
        .get(1)
        .and_then(|f| f.function)
        .map(Ranged::start);
    let init = STATE.with_borrow(|s| {
        s.inits.get(&key).cloned().or_else(|| {
            let def = outer_def?;
            s.inits
                .get(&TextSize::new(u32::MAX))
                .filter(|(r, _)| r.end() <= def)
                .cloned()
        })
    });
    let Some((range, what)) = init else { return };
    if range.start() >= at.start() {
        return;
    }
    checker
        .report(
            at,
            format!("`{VAR}` is set after {what} initialised CUDA: the CUDA runtime has already read it, so this has no effect and the process still sees every GPU"),
        )
        .add_related(range, "CUDA is initialised here");
}

fn clear(_checker: &mut Checker) {
    STATE.with_borrow_mut(|s| *s = State::default());
}

use super::helpers::{loader_kind, Loader};
use super::worker_helpers::{worker_loader, WorkerLoader};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use std::cell::RefCell;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `Dataset.__getitem__` / `__iter__` methods, and functions passed as
    /// `collate_fn`, that move tensors to the GPU (`.cuda()`, `.to("cuda")`, `.to(device)` with
    /// a CUDA `device` defined at module level, `device="cuda"` factories) when a `DataLoader`
    /// of the same file runs them in worker processes (`num_workers` not 0).
    ///
    /// ## Why is this bad?
    /// Worker processes are forked from the training process, which has usually initialised
    /// CUDA already (the model is on the GPU). CUDA cannot be used in a forked child: the first
    /// CUDA call in a worker raises "Cannot re-initialize CUDA in forked subprocess". With the
    /// `spawn` start method it works but every worker creates its own CUDA context (hundreds
    /// of MB each) and the transfer is not overlapped with compute. Load on the CPU, pass
    /// `pin_memory=True`, and move each batch in the training loop.
    ///
    /// Only datasets and collate functions that a `DataLoader` of the same file uses with
    /// workers (or with a `num_workers` known only at run time) are reported; datasets that no
    /// loader of the file uses stay silent. The rule is in preview.
    ///
    /// ## Example
    /// ```python
    /// class Pairs(Dataset):
    ///     def __getitem__(self, i):
    ///         return self.x[i].cuda(), self.y[i].cuda()
    ///
    /// loader = DataLoader(Pairs(), batch_size=32, num_workers=4)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// class Pairs(Dataset):
    ///     def __getitem__(self, i):
    ///         return self.x[i], self.y[i]
    ///
    /// loader = DataLoader(Pairs(), batch_size=32, num_workers=4, pin_memory=True)
    /// for x, y in loader:
    ///     x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    /// ```
    ///
    /// ## Fix safety
    /// The suggested fix (display-only) drops the `.cuda()` / `.to(...)` call and keeps its
    /// receiver; the training loop must then move the batch, which the fix cannot add.
    ///
    /// ## References
    /// - [CUDA in multiprocessing](https://pytorch.org/docs/stable/notes/multiprocessing.html#cuda-in-multiprocessing)
    /// - [pytorch/pytorch#77159](https://github.com/pytorch/pytorch/issues/77159)
    /// - [pytorch/pytorch#40403](https://github.com/pytorch/pytorch/issues/40403)
    pub(crate) static CUDA_IN_DATASET_GETITEM = {
        name: "cuda-in-dataset-getitem",
        code: "TV029",
        group: DataLoading,
        severity: Critical,
        title: "Dataset.__getitem__/collate_fn moves tensors to CUDA (fails in forked DataLoader workers)",
        autofix: Suggest,
        preview: true,
        hooks: { call: check_call, end: check_end },
    };
}

/// Where a CUDA move happens.
#[derive(Clone, PartialEq, Eq)]
enum Owner {
    /// A method of this Dataset class.
    Dataset(String),
    /// A module-level function (possibly a collate_fn).
    Function(String),
}

struct Site {
    owner: Owner,
    method: String,
    call: TextRange,
    what: String,
    fix: Option<RawFix>,
}

#[derive(Default)]
struct State {
    sites: Vec<Site>,
    loaders: Vec<WorkerLoader>,
    /// Whether the file can have findings (computed on first need).
    relevant: Option<bool>,
    /// Module-level names bound to a CUDA device (computed on first need).
    cuda_names: Option<Vec<String>>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// Does the expression's source mention a CUDA device string?
fn mentions_cuda_literal(expr: &Expr) -> bool {
    use ruff_python_ast::visitor::{self, Visitor};
    struct V(bool);
    impl<'x> Visitor<'x> for V {
        fn visit_expr(&mut self, e: &'x Expr) {
            if let Expr::StringLiteral(s) = e {
                self.0 |= s.value.to_str().starts_with("cuda");
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut v = V(false);
    v.visit_expr(expr);
    v.0
}

fn cuda_names(checker: &Checker) -> Vec<String> {
    let mut out = Vec::new();
    for stmt in &checker.module().body {
        if let Stmt::Assign(a) = stmt {
            if let [Expr::Name(n)] = a.targets.as_slice() {
                if mentions_cuda_literal(&a.value) {
                    out.push(n.id.to_string());
                }
            }
        }
    }
    out
}

/// Is this device expression (evidently, or possibly) CUDA?
fn is_cuda_device(checker: &Checker, expr: &Expr) -> bool {
    match expr {
        Expr::StringLiteral(s) => s.value.to_str().starts_with("cuda"),
        Expr::Call(c) => {
            checker.resolves_to(&c.func, &["torch.device"])
                && c.arguments.args.first().is_some_and(mentions_cuda_literal)
        }
        Expr::Name(n) => {
            // A module-level name, not shadowed locally.
            if checker.function().is_some_and(|f| {
                f.parameters
                    .iter()
                    .any(|p| p.name().as_str() == n.id.as_str())
            }) {
                return false;
            }
            STATE.with_borrow_mut(|s| {
                s.cuda_names
                    .get_or_insert_with(|| cuda_names(checker))
                    .iter()
                    .any(|c| c == n.id.as_str())
            })
        }
        _ => false,
    }
}

/// The CUDA move a call makes, if any: a description and the receiver (for the fix).
fn cuda_move<'a>(
    checker: &Checker,
    call: &'a ExprCall,
    q: Option<&str>,
) -> Option<(String, Option<&'a Expr>)> {
    if let Some(("cuda", recv)) = helpers::method_call(call) {
        if q.is_none()
            && call
                .arguments
                .keywords
                .iter()
                .all(|k| k.arg.as_deref() != Some("device"))
        {
            return Some(("`.cuda()`".to_string(), Some(recv)));
        }
    }
    if let Some(("to", recv)) = helpers::method_call(call) {
        let dev = helpers::argument(call, "device", 0);
        if q.is_none() && dev.is_some_and(|d| is_cuda_device(checker, d)) {
            return Some((format!("`.to({})`", checker.text(dev?.range())), Some(recv)));
        }
    }
    // torch.zeros(..., device="cuda")
    if q.is_some_and(|q| q.starts_with("torch.")) {
        if let Some(d) = helpers::keyword(call, "device") {
            if is_cuda_device(checker, d) {
                return Some((format!("`device={}`", checker.text(d.range())), None));
            }
        }
    }
    None
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if let Some(loader) = name.and_then(loader_kind) {
        if relevant(checker) {
            record_loader(checker, call, loader);
        }
        return;
    }
    let Some(func) = checker.function() else {
        return;
    };
    let owner = match checker.frame().method_of {
        Some(c) if c.is_dataset => {
            if !matches!(
                func.name.as_str(),
                "__getitem__" | "__iter__" | "__getitems__"
            ) {
                return;
            }
            Owner::Dataset(c.def.name.to_string())
        }
        Some(_) => return,
        None if checker.frames().len() == 2 => Owner::Function(func.name.to_string()),
        None => return,
    };
    let Some((what, recv)) = cuda_move(checker, call, name) else {
        return;
    };
    let fix = recv.map(|r| {
        RawFix::display_only(
            "Keep the tensor on the CPU here and move the batch in the training loop",
            vec![RawEdit::replace(
                call.range(),
                checker.text(r.range()).to_string(),
            )],
        )
    });
    let method = func.name.to_string();
    STATE.with_borrow_mut(|s| {
        s.sites.push(Site {
            owner,
            method,
            call: call.range(),
            what,
            fix,
        });
    });
}

/// Only files that define a dataset or pass a collate function can have findings.
fn relevant(checker: &Checker) -> bool {
    STATE.with_borrow_mut(|s| {
        *s.relevant.get_or_insert_with(|| {
            let t = &checker.source.text;
            t.contains("Dataset") || t.contains("collate_fn")
        })
    })
}

fn record_loader(checker: &mut Checker, call: &ExprCall, loader: Loader) {
    if let Some(l) = worker_loader(checker, call, loader) {
        STATE.with_borrow_mut(|s| s.loaders.push(l));
    }
}

fn check_end(checker: &mut Checker) {
    let state = STATE.with_borrow_mut(std::mem::take);
    if state.sites.is_empty() || state.loaders.is_empty() {
        return;
    }
    for site in state.sites {
        let loader = state.loaders.iter().find(|l| match &site.owner {
            Owner::Dataset(c) => l.may_run(c),
            Owner::Function(f) => l.collate.as_deref() == Some(f.as_str()),
        });
        // A dataset used by no visible loader, or only by loaders of other classes: silent.
        let Some(loader) = loader else { continue };
        let workers = loader.workers_text();
        let (place, who) = match &site.owner {
            Owner::Dataset(c) => (format!("`{c}.{}`", site.method), "the dataset"),
            Owner::Function(f) => (format!("`{f}`"), "the collate function"),
        };
        let message = format!(
            "{} in {place} runs inside the DataLoader worker processes ({workers}): forked workers cannot use CUDA and fail with 'Cannot re-initialize CUDA in forked subprocess'",
            site.what
        );
        let d = checker.report(site.call, message);
        d.add_related(
            loader.call,
            format!("the DataLoader that runs {who} in workers"),
        );
        if let Some(fix) = site.fix {
            d.set_fix(fix);
        }
    }
}

//! DataLoaders that run code in worker processes, for the rules about what dataset code may
//! do in a worker (CUDA, global RNG state, pickling).
use super::helpers::{known_workers, loader_arg, Loader};
use crate::checker::Checker;
use crate::rules::style::values::{with_frame, Bound};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers;

/// A DataLoader call that may use worker processes.
pub(crate) struct WorkerLoader {
    /// The callee (for secondary locations).
    pub call: TextRange,
    /// `num_workers` when known (never 0 here); `None` when chosen at run time.
    pub workers: Option<i64>,
    /// The dataset's class name, when evident (`DS(...)`, or a name bound to it).
    pub dataset: Option<String>,
    /// The `collate_fn` when it is a plain name.
    pub collate: Option<String>,
    /// A `worker_init_fn` is given.
    pub worker_init: bool,
}

impl WorkerLoader {
    /// "`num_workers=4`" / "a `num_workers` chosen at run time".
    pub(crate) fn workers_text(&self) -> String {
        match self.workers {
            Some(n) => format!("`num_workers={n}`"),
            None => "a `num_workers` chosen at run time".to_string(),
        }
    }

    /// May this loader run the dataset class `class`?
    pub(crate) fn may_run(&self, class: &str) -> bool {
        self.dataset.as_deref().is_none_or(|d| d == class)
    }
}

/// The class a dataset expression instantiates (`DS(...)`, or a name bound to it).
pub(crate) fn dataset_class(checker: &Checker, expr: &Expr) -> Option<String> {
    match expr {
        Expr::Name(n) => match checker.binding_at(n.id.as_str(), n.start()) {
            Some(Bound::Value(Expr::Call(c))) => helpers::name_of(&c.func).map(str::to_string),
            _ => None,
        },
        Expr::Call(c) => helpers::name_of(&c.func).map(str::to_string),
        _ => None,
    }
}

/// The loader, unless it is known to load in the main process (`num_workers` 0 or missing).
pub(crate) fn worker_loader(
    checker: &Checker,
    call: &ExprCall,
    loader: Loader,
) -> Option<WorkerLoader> {
    let workers = with_frame(checker, |env| known_workers(checker, env, call, loader));
    if workers == Some(0) {
        return None;
    }
    Some(WorkerLoader {
        call: call.func.range(),
        workers,
        dataset: loader_arg(call, loader, "dataset").and_then(|d| dataset_class(checker, d)),
        collate: loader_arg(call, loader, "collate_fn")
            .and_then(helpers::name_of)
            .map(str::to_string),
        worker_init: helpers::keyword(call, "worker_init_fn")
            .is_some_and(|v| !v.is_none_literal_expr())
            || helpers::has_kwargs_splat(call),
    })
}

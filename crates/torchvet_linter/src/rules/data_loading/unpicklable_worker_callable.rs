use super::helpers::{loader_arg, loader_kind};
use super::worker_helpers::worker_loader;
use crate::checker::Checker;
use crate::rules::style::values::Bound;
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};

crate::declare_rule! {
    /// ## What it does
    /// Checks for DataLoaders that may use worker processes (`num_workers` not 0) and get a
    /// `collate_fn` or `worker_init_fn` that is a lambda or a function defined inside another
    /// function, or a dataset constructed with a lambda argument (`transform=lambda x: ...`).
    ///
    /// ## Why is this bad?
    /// With the `spawn` (and `forkserver`) start method, each worker receives the dataset,
    /// the collate function and the init function by pickling. Pickle stores functions by
    /// their importable name: lambdas and nested functions have none, so creating the
    /// iterator fails with "Can't pickle <function <lambda>>" or "Can't pickle local object".
    /// `spawn` is the default on Windows and macOS, and on Linux from Python 3.14, so code
    /// that works on a Linux workstation breaks elsewhere.
    ///
    /// Module-level functions, `functools.partial` of them, and bound methods stay silent, and
    /// so do loaders without workers. The rule is in preview: the failure depends on the
    /// platform.
    ///
    /// ## Example
    /// ```python
    /// loader = DataLoader(ds, num_workers=4, collate_fn=lambda b: pad(b, 0))
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def collate(batch):
    ///     return pad(batch, 0)
    ///
    /// loader = DataLoader(ds, num_workers=4, collate_fn=collate)
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: move the function to module level (or use `functools.partial` of a
    /// module-level function to bind its arguments).
    ///
    /// ## References
    /// - [DataLoader platform-specific behaviours](https://pytorch.org/docs/stable/data.html#platform-specific-behaviors)
    /// - [arm/neural-graphics-model-gym#29](https://github.com/arm/neural-graphics-model-gym/pull/29)
    pub(crate) static UNPICKLABLE_WORKER_CALLABLE = {
        name: "unpicklable-worker-callable",
        code: "TV095",
        group: DataLoading,
        severity: Warning,
        title: "lambda / nested function as collate_fn, worker_init_fn or Dataset argument with num_workers>0 (fails to pickle under spawn)",
        autofix: Suggest,
        preview: true,
        hooks: { call: check_call },
    };
}

/// What makes a callable unpicklable.
enum Why {
    Lambda,
    /// A function defined inside the current function: its definition.
    Nested(TextRange),
}

/// Is `expr` a lambda, a name bound to a lambda, or a function nested in the current one?
fn unpicklable(checker: &Checker, expr: &Expr) -> Option<Why> {
    match expr {
        Expr::Lambda(_) => Some(Why::Lambda),
        Expr::Name(n) => {
            let func = checker.function()?;
            if let Some(def) = nested_def(&func.body, n.id.as_str()) {
                return Some(Why::Nested(def));
            }
            match checker.binding_at(n.id.as_str(), n.start()) {
                Some(Bound::Value(Expr::Lambda(_))) => Some(Why::Lambda),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A `def name` among the statements of a function body (not in nested classes).
fn nested_def(body: &[Stmt], name: &str) -> Option<TextRange> {
    for stmt in body {
        match stmt {
            Stmt::FunctionDef(f) if f.name.as_str() == name => {
                return Some(TextRange::new(f.start(), f.parameters.end()))
            }
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
            s => {
                for b in crate::rules::distributed::rank_helpers::child_blocks(s) {
                    if let Some(r) = nested_def(b, name) {
                        return Some(r);
                    }
                }
            }
        }
    }
    None
}

/// The dataset's constructor call (inline, or bound to a name in this frame).
fn dataset_call<'a: 'e, 'e>(checker: &Checker<'a>, expr: &'e Expr) -> Option<&'e ExprCall> {
    match expr {
        Expr::Call(c) => Some(c),
        Expr::Name(n) => match checker.binding_at(n.id.as_str(), n.start()) {
            Some(Bound::Value(Expr::Call(c))) => Some(c),
            _ => None,
        },
        _ => None,
    }
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let Some(loader) = name.and_then(loader_kind) else {
        return;
    };
    let has_candidate = ["collate_fn", "worker_init_fn"]
        .iter()
        .any(|k| loader_arg(call, loader, k).is_some())
        || loader_arg(call, loader, "dataset").is_some();
    if !has_candidate {
        return;
    }
    let mut findings: Vec<(TextRange, String, Option<TextRange>)> = Vec::new();
    for kw in ["collate_fn", "worker_init_fn"] {
        let Some(v) = loader_arg(call, loader, kw) else {
            continue;
        };
        match unpicklable(checker, v) {
            Some(Why::Lambda) => findings.push((v.range(), format!("`{kw}` is a lambda"), None)),
            Some(Why::Nested(def)) => findings.push((
                v.range(),
                format!(
                    "`{kw}` is `{}`, a function defined inside `{}`",
                    checker.text(v.range()),
                    checker.function().map_or("", |f| f.name.as_str())
                ),
                Some(def),
            )),
            None => {}
        }
    }
    if let Some(ds) = loader_arg(call, loader, "dataset").and_then(|d| dataset_call(checker, d)) {
        for k in &ds.arguments.keywords {
            if matches!(k.value, Expr::Lambda(_)) {
                let arg = k.arg.as_ref().map_or("an argument", |a| a.as_str());
                findings.push((
                    k.value.range(),
                    format!("the dataset keeps a lambda (`{arg}=`)"),
                    None,
                ));
            }
        }
    }
    if findings.is_empty() {
        return;
    }
    let Some(workers) = worker_loader(checker, call, loader) else {
        return;
    };
    let workers = workers.workers_text();
    let loader_range = call.func.range();
    for (range, what, def) in findings {
        let d = checker.report(
            range,
            format!("{what}: with {workers} and the `spawn` start method (default on Windows and macOS) the DataLoader must pickle it for each worker and fails with \"Can't pickle\""),
        );
        d.add_related(loader_range, "the DataLoader that sends it to its workers");
        if let Some(def) = def {
            d.add_related(def, "defined here, with no importable name");
        }
    }
}

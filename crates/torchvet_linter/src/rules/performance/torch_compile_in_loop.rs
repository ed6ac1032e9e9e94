use super::helpers::{conditional_inside_loop, names_bound_in_loop, names_read};
use crate::checker::Checker;
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `torch.compile(...)` called inside a loop on the same object every
    /// iteration, or inside a method that runs on every batch (`forward`, `training_step`,
    /// ...) without caching the result.
    ///
    /// ## Why is this bad?
    /// Each `torch.compile` call builds a new wrapper with its own cache of compiled graphs,
    /// so calling it per iteration or per batch throws the compiled code away and pays
    /// tracing (and often full recompilation) again and again; compiling a compiled module
    /// nests wrappers. Compile once during setup and reuse the result. Loops that compile a
    /// different object or configuration each iteration, and calls behind a condition (the
    /// lazy `if self._compiled is None:` pattern), are not reported.
    ///
    /// ## Example
    /// ```python
    /// for x in loader:
    ///     y = torch.compile(model)(x)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// compiled = torch.compile(model)
    /// for x in loader:
    ///     y = compiled(x)
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: where to keep the compiled object is a design choice.
    ///
    /// ## References
    /// - [torch.compile](https://pytorch.org/docs/stable/generated/torch.compile.html)
    /// - [torch.compile troubleshooting: recompilation](https://pytorch.org/docs/stable/torch.compiler_troubleshooting.html)
    pub(crate) static TORCH_COMPILE_IN_LOOP = {
        name: "torch-compile-in-loop",
        code: "TV093",
        group: Performance,
        severity: Warning,
        title: "torch.compile(...) called inside a loop or per-call function (recompiles / re-wraps each time)",
        autofix: Suggest,
        hooks: { call: check_call },
    };
}

const PER_BATCH_METHODS: &[&str] = &[
    "forward",
    "training_step",
    "validation_step",
    "test_step",
    "predict_step",
];

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if name != Some("torch.compile") {
        return;
    }
    let Some(target) = helpers::argument(call, "model", 0) else {
        return;
    };
    let target_text = checker.text(target.range());
    // An imported function (`torch.compile(fused_step)`): dynamo caches compiled code on the
    // function's code object, so re-wrapping it is cheap; some libraries do it on purpose.
    if checker.resolve(target).is_some() {
        return;
    }
    if checker.in_loop() {
        if conditional_inside_loop(checker, call.range()) {
            return;
        }
        let skip = checker.current_stmt().map(Ranged::range);
        let varies = checker.frame().loops.iter().any(|l| {
            let bound = names_bound_in_loop(l, skip);
            let reads_bound = |e: &Expr| names_read(e).iter().any(|n| bound.contains(*n));
            call.arguments.args.iter().any(reads_bound)
                || call
                    .arguments
                    .keywords
                    .iter()
                    .any(|k| reads_bound(&k.value))
        });
        if varies {
            return;
        }
        checker.report(
            call.range(),
            format!(
                "`torch.compile({target_text})` runs on every loop iteration: each call builds a new compiled wrapper and traces (or recompiles) again; compile once before the loop"
            ),
        );
        return;
    }
    let Some(func) = checker.function() else {
        return;
    };
    let method = func.name.as_str();
    if checker.module_method().is_none() || !PER_BATCH_METHODS.contains(&method) {
        return;
    }
    // Lazy caching (`if self._compiled is None: self._compiled = torch.compile(...)`).
    let after_def = checker
        .stmt_stack()
        .iter()
        .skip_while(|s| s.range() != func.range())
        .skip(1);
    let gated = after_def
        .clone()
        .any(|s| matches!(s, Stmt::If(_) | Stmt::Match(_) | Stmt::Try(_)));
    let cached = checker.current_stmt().is_some_and(|s| match s {
        Stmt::Assign(a) => a.targets.iter().any(|t| !matches!(t, Expr::Name(_))),
        Stmt::AnnAssign(a) => !matches!(&*a.target, Expr::Name(_)),
        _ => false,
    });
    if gated || cached {
        return;
    }
    checker.report(
        call.range(),
        format!(
            "`torch.compile({target_text})` runs on every call of `{method}`: each batch builds a new compiled wrapper and traces again; compile once in setup and reuse it"
        ),
    );
}

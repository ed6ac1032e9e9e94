use super::helpers::{is_test_file, suite_calls_method};
use crate::checker::Checker;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{ExprCall, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for autograd anomaly detection switched on unconditionally:
    /// `torch.autograd.set_detect_anomaly(True)` with a literal `True`, or a
    /// `with torch.autograd.detect_anomaly():` block wrapped around a training loop or a
    /// backward pass.
    ///
    /// ## Why is this bad?
    /// Anomaly detection records a stack trace for every operation of the forward pass and
    /// checks every backward function for NaNs. It is a debugging tool: left on, it slows
    /// training down several times over. A switch that depends on a variable
    /// (`set_detect_anomaly(args.debug)`) or that sits behind an `if` is a deliberate choice
    /// and is not reported; neither are test files.
    ///
    /// ## Example
    /// ```python
    /// torch.autograd.set_detect_anomaly(True)
    /// train(model, loader)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// torch.autograd.set_detect_anomaly(args.debug)
    /// train(model, loader)
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: whether to delete the call or gate it behind a debug flag is the
    /// author's choice.
    ///
    /// ## References
    /// - [Performance tuning guide: disable debugging APIs](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html)
    /// - [Anomaly detection](https://pytorch.org/docs/stable/autograd.html#anomaly-detection)
    pub(crate) static DETECT_ANOMALY_LEFT_ENABLED = {
        name: "detect-anomaly-left-enabled",
        code: "TV090",
        group: Performance,
        severity: Warning,
        title: "torch.autograd.set_detect_anomaly(True)/detect_anomaly() left on in training code",
        autofix: Suggest,
        hooks: { call: check_call, stmt: check_stmt },
    };
}

const SET_DETECT: &[&str] = &[
    "torch.autograd.set_detect_anomaly",
    "torch.autograd.anomaly_mode.set_detect_anomaly",
];
const DETECT: &[&str] = &[
    "torch.autograd.detect_anomaly",
    "torch.autograd.anomaly_mode.detect_anomaly",
];

/// Is the current statement behind an `if` (other than the `__main__` guard) in this file?
fn gated(checker: &Checker) -> bool {
    checker.stmt_stack().iter().any(|s| match s {
        Stmt::If(i) => !is_main_guard_test(&i.test),
        Stmt::Match(_) => true,
        _ => false,
    })
}

fn is_main_guard_test(test: &ruff_python_ast::Expr) -> bool {
    let ruff_python_ast::Expr::Compare(c) = test else {
        return false;
    };
    let sides = [&*c.left, c.comparators.first().unwrap_or(&c.left)];
    sides
        .iter()
        .any(|e| helpers::name_of(e) == Some("__name__"))
        && sides
            .iter()
            .any(|e| helpers::str_value(e) == Some("__main__"))
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let Some(name) = name else { return };
    if !SET_DETECT.contains(&name) {
        return;
    }
    let Some(flag) = helpers::argument(call, "mode", 0) else {
        return;
    };
    if !matches!(flag, ruff_python_ast::Expr::BooleanLiteral(b) if b.value) {
        return;
    }
    if gated(checker) || is_test_file(checker) {
        return;
    }
    let text = checker.text(call.func.range());
    checker.report(
        call.range(),
        format!(
            "`{text}(True)` turns on anomaly detection for every following forward and backward pass: each op records a traceback and each backward is checked for NaNs, which slows training several times"
        ),
    );
}

/// Does the suite contain a loop (not in nested functions)?
fn has_loop(body: &[Stmt]) -> bool {
    struct Finder(bool);
    impl<'x> Visitor<'x> for Finder {
        fn visit_stmt(&mut self, stmt: &'x Stmt) {
            match stmt {
                Stmt::For(_) | Stmt::While(_) => self.0 = true,
                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
                _ if self.0 => {}
                _ => visitor::walk_stmt(self, stmt),
            }
        }
    }
    let mut f = Finder(false);
    f.visit_body(body);
    f.0
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::With(w) = stmt else { return };
    for item in &w.items {
        let ruff_python_ast::Expr::Call(call) = &item.context_expr else {
            continue;
        };
        if !checker.resolves_to(&call.func, DETECT) {
            continue;
        }
        if gated(checker) || is_test_file(checker) {
            return;
        }
        let around_training = has_loop(&w.body) || suite_calls_method(&w.body, &["backward"], true);
        if !around_training {
            return;
        }
        let text = checker.text(call.range());
        checker.report(
            call.range(),
            format!(
                "`with {text}:` wraps training code: anomaly detection records a traceback for every op and checks every backward for NaNs, which slows each step several times"
            ),
        );
        return;
    }
}

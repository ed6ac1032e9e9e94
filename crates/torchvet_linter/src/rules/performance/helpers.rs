//! Small helpers shared by the performance rules (candidates for the checker).
use crate::checker::Checker;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};

/// `torch.<name>` tensor factories that take a `device=` argument.
pub(crate) const DEVICE_FACTORIES: &[&str] = &[
    "tensor",
    "zeros",
    "ones",
    "empty",
    "empty_strided",
    "full",
    "rand",
    "randn",
    "randint",
    "randperm",
    "arange",
    "linspace",
    "logspace",
    "eye",
    "scalar_tensor",
];
use rustc_hash::FxHashSet;

/// Is the file unit-test code ([`Checker::is_test_file`])?
pub(crate) fn is_test_file(checker: &Checker) -> bool {
    checker.is_test_file()
}

/// Finds method calls by name in a suite, without entering nested functions, classes and
/// lambdas; nested loops are entered only when `nested_loops` is set.
struct MethodFinder<'n> {
    names: &'n [&'n str],
    nested_loops: bool,
    found: bool,
}

impl<'x> Visitor<'x> for MethodFinder<'_> {
    fn visit_stmt(&mut self, stmt: &'x Stmt) {
        if self.found {
            return;
        }
        match stmt {
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
            Stmt::For(_) | Stmt::While(_) if !self.nested_loops => {}
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'x Expr) {
        if self.found {
            return;
        }
        match expr {
            Expr::Lambda(_) => {}
            Expr::Call(c) => {
                if let Expr::Attribute(a) = &*c.func {
                    if self.names.contains(&a.attr.as_str()) {
                        self.found = true;
                        return;
                    }
                }
                visitor::walk_expr(self, expr);
            }
            _ => visitor::walk_expr(self, expr),
        }
    }
}

/// Does the suite call a method named in `names` (`x.backward()`, `opt.step()`)?
pub(crate) fn suite_calls_method(body: &[Stmt], names: &[&str], nested_loops: bool) -> bool {
    let mut f = MethodFinder {
        names,
        nested_loops,
        found: false,
    };
    f.visit_body(body);
    f.found
}

/// The body of a `for`/`while` loop statement.
pub(crate) fn loop_body(stmt: &Stmt) -> &[Stmt] {
    match stmt {
        Stmt::For(f) => &f.body,
        Stmt::While(w) => &w.body,
        _ => &[],
    }
}

/// Names bound by a loop: its target (for `for` loops) and every name assigned in its body
/// (including nested blocks, not nested functions), except by the statement at `skip`.
pub(crate) fn names_bound_in_loop(stmt: &Stmt, skip: Option<TextRange>) -> FxHashSet<String> {
    struct Binder {
        names: FxHashSet<String>,
        skip: Option<TextRange>,
    }
    impl Binder {
        fn target(&mut self, e: &Expr) {
            match e {
                Expr::Name(n) => {
                    self.names.insert(n.id.to_string());
                }
                Expr::Tuple(t) => t.elts.iter().for_each(|e| self.target(e)),
                Expr::List(l) => l.elts.iter().for_each(|e| self.target(e)),
                Expr::Starred(s) => self.target(&s.value),
                _ => {}
            }
        }
    }
    impl<'x> Visitor<'x> for Binder {
        fn visit_stmt(&mut self, stmt: &'x Stmt) {
            if self.skip == Some(stmt.range()) {
                return;
            }
            match stmt {
                Stmt::FunctionDef(f) => {
                    self.names.insert(f.name.to_string());
                }
                Stmt::ClassDef(c) => {
                    self.names.insert(c.name.to_string());
                }
                Stmt::Assign(a) => {
                    a.targets.iter().for_each(|t| self.target(t));
                    visitor::walk_stmt(self, stmt);
                }
                Stmt::AnnAssign(a) => {
                    self.target(&a.target);
                    visitor::walk_stmt(self, stmt);
                }
                Stmt::AugAssign(a) => {
                    self.target(&a.target);
                    visitor::walk_stmt(self, stmt);
                }
                Stmt::For(f) => {
                    self.target(&f.target);
                    visitor::walk_stmt(self, stmt);
                }
                Stmt::With(w) => {
                    for item in &w.items {
                        if let Some(v) = &item.optional_vars {
                            self.target(v);
                        }
                    }
                    visitor::walk_stmt(self, stmt);
                }
                _ => visitor::walk_stmt(self, stmt),
            }
        }

        fn visit_expr(&mut self, expr: &'x Expr) {
            match expr {
                Expr::Named(n) => {
                    self.target(&n.target);
                    visitor::walk_expr(self, expr);
                }
                Expr::Lambda(_) => {}
                _ => visitor::walk_expr(self, expr),
            }
        }
    }
    let mut b = Binder {
        names: FxHashSet::default(),
        skip,
    };
    b.visit_stmt(stmt);
    b.names
}

/// Every bare name an expression reads.
pub(crate) fn names_read(expr: &Expr) -> Vec<&str> {
    struct Reader<'x> {
        names: Vec<&'x str>,
    }
    impl<'x> Visitor<'x> for Reader<'x> {
        fn visit_expr(&mut self, expr: &'x Expr) {
            if let Expr::Name(n) = expr {
                self.names.push(n.id.as_str());
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut r = Reader { names: Vec::new() };
    r.visit_expr(expr);
    r.names
}

/// Is the statement `stmt` (found at `depth` in the checker's statement stack) nested in an
/// `if`/`match`/`try` handler between the innermost loop of the current frame and itself?
/// Used to treat guarded code (`if step % 100 == 0:`, `except OutOfMemoryError:`) as not
/// running every iteration.
pub(crate) fn conditional_inside_loop(checker: &Checker, range: TextRange) -> bool {
    let Some(innermost) = checker.frame().loops.last() else {
        return false;
    };
    let loop_range = innermost.range();
    for s in checker.stmt_stack().iter().rev() {
        if s.range() == loop_range {
            return false;
        }
        match s {
            Stmt::If(_) | Stmt::Match(_) => return true,
            Stmt::Try(t) => {
                let in_handler = t.handlers.iter().any(|h| h.range().contains_range(range));
                if in_handler {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// Qualified names of `DataLoader`.
pub(crate) const DATALOADER: &[&str] = &[
    "torch.utils.data.DataLoader",
    "torch.utils.data.dataloader.DataLoader",
];

/// Every `DataLoader(...)` call of the file (complete in `end` hooks).
pub(crate) fn dataloader_calls<'a>(checker: &Checker<'a>) -> Vec<&'a ast::ExprCall> {
    DATALOADER
        .iter()
        .flat_map(|q| checker.facts.calls_of(q).iter().copied())
        .collect()
}

/// The dataset a `DataLoader(...)` call loads: its `dataset` argument, or the one value the
/// name it passes holds there (`train_ds = TensorDataset(x, y)`; `DataLoader(train_ds)`).
pub(crate) fn loader_dataset<'a>(
    checker: &Checker<'a>,
    call: &'a ast::ExprCall,
) -> Option<&'a Expr> {
    let arg = torchvet_semantic::helpers::argument(call, "dataset", 0)?;
    Some(torchvet_semantic::reaching::value_or_self(
        &checker.module().body,
        arg,
        call.start(),
    ))
}

/// The `TensorDataset(...)` call a dataset expression is, if it is one.
pub(crate) fn tensor_dataset<'a>(
    checker: &Checker<'a>,
    dataset: &'a Expr,
) -> Option<&'a ast::ExprCall> {
    match dataset {
        Expr::Call(c)
            if checker.resolves_to(
                &c.func,
                &[
                    "torch.utils.data.TensorDataset",
                    "torch.utils.data.dataset.TensorDataset",
                ],
            ) =>
        {
            Some(c)
        }
        _ => None,
    }
}

/// A `TensorDataset` whose every tensor was moved to a device where it was built
/// (`TensorDataset(x.to(device), y.to(device))`, or names bound to such values): its batches
/// come out on that device already, and there is no host memory to pin.
pub(crate) fn device_tensor_dataset(checker: &Checker, dataset: &ast::ExprCall) -> bool {
    let moved = |e: &Expr| {
        let e =
            torchvet_semantic::reaching::value_or_self(&checker.module().body, e, dataset.start());
        matches!(
            e,
            Expr::Call(c) if matches!(torchvet_semantic::helpers::method_call(c), Some(("to" | "cuda", _)))
        )
    };
    !dataset.arguments.args.is_empty()
        && dataset.arguments.keywords.is_empty()
        && dataset.arguments.args.iter().all(moved)
}

/// Does the file look like it trains: it calls both `.backward()` and `.step()`?
pub(crate) fn file_trains(checker: &Checker) -> bool {
    (!checker.facts.method_calls_of("backward").is_empty()
        || !checker.facts.calls_of("torch.autograd.backward").is_empty())
        && !checker.facts.method_calls_of("step").is_empty()
}

/// Test support: lint `src` with only `rule` enabled and apply every fix of every finding
/// (edits in reverse order); returns the number of findings and the fixed text.
#[cfg(test)]
pub(crate) fn apply_fixes(rule: &str, src: &str) -> (usize, String) {
    let source = torchvet_python::SourceFile::from_python("t.py", src.to_string());
    let linter = crate::Linter::new(crate::settings::LintSettings::only(rule));
    let diags = linter.lint(&source, "t.py");
    let mut edits: Vec<(usize, usize, String)> = diags
        .iter()
        .filter_map(|d| d.fix.as_ref())
        .flat_map(|f| f.edits.iter().map(|e| (e.start, e.end, e.content.clone())))
        .collect();
    edits.sort_by_key(|e| std::cmp::Reverse((e.0, e.1)));
    let mut out = src.to_string();
    for (start, end, content) in edits {
        out.replace_range(start..end, &content);
    }
    (diags.len(), out)
}

/// Test support: the number of findings of `rule` alone on `src` read from `path`.
#[cfg(test)]
pub(crate) fn count_findings(rule: &str, path: &str, src: &str) -> usize {
    let source = torchvet_python::SourceFile::from_python(path, src.to_string());
    let linter = crate::Linter::new(crate::settings::LintSettings::only(rule));
    linter.lint(&source, path).len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use torchvet_python::SourceFile;

    fn parse(src: &str) -> ast::ModModule {
        SourceFile::from_python("t.py", src.to_string())
            .parse()
            .into_syntax()
    }

    #[test]
    fn finds_step_loops_but_not_epoch_loops() {
        let m = parse(
            "for e in range(3):\n    for b in dl:\n        loss.backward()\n        opt.step()\n",
        );
        let Stmt::For(outer) = &m.body[0] else {
            panic!("not a for")
        };
        let own = |st: &Stmt| suite_calls_method(loop_body(st), &["backward", "step"], false);
        assert!(!own(&m.body[0]));
        assert!(own(&outer.body[0]));
    }

    #[test]
    fn recognises_test_files() {
        use std::path::Path;
        use torchvet_semantic::project::is_test_path;
        assert!(is_test_path(Path::new("tests/test_train.py")));
        assert!(is_test_path(Path::new("tests/helpers.py")));
        assert!(is_test_path(Path::new("loader_test.py")));
        assert!(is_test_path(Path::new("conftest.py")));
        assert!(!is_test_path(Path::new("train.py")));
        assert!(!is_test_path(Path::new("contest.py")));
    }

    #[test]
    fn collects_loop_bindings() {
        let m = parse("for x, (y, z) in it:\n    a = 1\n    with f() as b:\n        c += 1\n    def g(): q = 1\n");
        let names = names_bound_in_loop(&m.body[0], None);
        for n in ["x", "y", "z", "a", "b", "c", "g"] {
            assert!(names.contains(n), "{n}");
        }
        assert!(!names.contains("q"));
    }
}

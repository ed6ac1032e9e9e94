//! Private helpers of the tensor-op rules (discarded results, in-place updates of leaves,
//! numpy conversions, graph cuts): where statements sit, for messages and fixes. The facts
//! these rules need are semantic queries: batch and parameter loops
//! (`torchvet_semantic::iterables::{batch_loop, parameter_loop}`), module paths
//! (`torchvet_semantic::kinds::module_path`), where a requires-grad value comes from
//! (`torchvet_semantic::grad_source`).
//!
//! - [`enclosing_suite`] / [`stmts_after`] / [`first_read`]: "what comes next in this block".
//! - [`stmt_owns_lines`]: text layout for statement-inserting
//!   fixes.
use crate::checker::Checker;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprContext, Stmt};
use ruff_text_size::{Ranged, TextRange};

/// The statement lists directly held by a compound statement (or a function/class body):
/// [`torchvet_semantic::helpers::suites_of`], and the bodies of definitions.
pub(crate) fn suites_of(stmt: &Stmt) -> Vec<&[Stmt]> {
    match stmt {
        Stmt::FunctionDef(f) => vec![&f.body],
        Stmt::ClassDef(c) => vec![&c.body],
        s => torchvet_semantic::helpers::suites_of(s),
    }
}

/// The statement list that holds `stmt` (which must be on the checker's statement stack or be
/// the statement being visited): its parent's suite, or the module body.
pub(crate) fn enclosing_suite<'a>(checker: &Checker<'a>, stmt: &Stmt) -> Option<&'a [Stmt]> {
    let stack = checker.stmt_stack();
    let pos = stack.iter().rposition(|s| s.range() == stmt.range())?;
    let suites: Vec<&'a [Stmt]> = if pos == 0 {
        vec![checker.module().body.as_slice()]
    } else {
        suites_of(stack[pos - 1])
    };
    suites
        .into_iter()
        .find(|suite| suite.iter().any(|s| s.range() == stmt.range()))
}

/// The statements after `stmt` in its suite.
pub(crate) fn stmts_after<'s>(suite: &'s [Stmt], stmt: &Stmt) -> &'s [Stmt] {
    match suite.iter().position(|s| s.range() == stmt.range()) {
        Some(i) => &suite[i + 1..],
        None => &[],
    }
}

/// The first read of the bare name `name` in `body` (nested blocks included, nested
/// functions and classes not).
pub(crate) fn first_read(body: &[Stmt], name: &str) -> Option<TextRange> {
    struct Reader<'n> {
        name: &'n str,
        found: Option<TextRange>,
    }
    impl<'x> Visitor<'x> for Reader<'_> {
        fn visit_stmt(&mut self, stmt: &'x Stmt) {
            if self.found.is_some() || matches!(stmt, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                return;
            }
            visitor::walk_stmt(self, stmt);
        }
        fn visit_expr(&mut self, expr: &'x Expr) {
            if self.found.is_some() {
                return;
            }
            if let Expr::Name(n) = expr {
                if n.id.as_str() == self.name && n.ctx == ExprContext::Load {
                    self.found = Some(n.range());
                    return;
                }
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut r = Reader { name, found: None };
    r.visit_body(body);
    r.found
}

/// Is the statement alone on its lines (nothing but whitespace before it on its first line,
/// and nothing but an optional comment after it on its last)?
pub(crate) fn stmt_owns_lines(checker: &Checker, stmt: &Stmt) -> bool {
    if crate::fix::own_line_indent(checker, stmt.start()).is_none() {
        return false;
    }
    let text = checker.source.text.as_ref();
    let rest = text.get(stmt.end().to_usize()..).unwrap_or("");
    let line = rest.split('\n').next().unwrap_or("").trim();
    line.is_empty() || line.starts_with('#')
}

/// Is the current statement inside an expected-error context (`with pytest.raises(...)`,
/// `with self.assertRaises(...)`) or the body of a `try` that handles exceptions? Code there
/// may run a call just to see it fail.
pub(crate) fn in_error_probe(checker: &Checker) -> bool {
    let current = checker.current_stmt().map(Ranged::range);
    checker.stmt_stack().iter().any(|s| match s {
        Stmt::With(w) => w.items.iter().any(|i| {
            let Expr::Call(c) = &i.context_expr else {
                return false;
            };
            let callee = match &*c.func {
                Expr::Attribute(a) => a.attr.as_str(),
                Expr::Name(n) => n.id.as_str(),
                _ => "",
            };
            callee == "raises" || callee.starts_with("assertRaises")
        }),
        Stmt::Try(t) => {
            !t.handlers.is_empty()
                && current.is_some_and(|r| t.body.iter().any(|b| b.range().contains_range(r)))
        }
        _ => false,
    })
}

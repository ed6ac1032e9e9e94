//! Which assignments of a name may reach a use, in statement order.
//!
//! Kinds and values keyed by name alone ignore order: `net = Net(); torch.save(net, p);
//! net = torch.load(p)` joins a module and a loaded object into "unknown" at the save. This
//! answers with the assignments that may reach one point of a body (a function's or the
//! module's, nested blocks included, nested functions and classes not): the last one before
//! it on a straight path, the union of the branches of an `if`/`try` before it, a loop's
//! body joined with the way around it (zero iterations), and for a use inside a loop the
//! assignments later in that loop too (the next iteration sees them). Flow-insensitive inside
//! expressions; `at` is the offset of the use.
use crate::helpers::binds;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextSize};

/// One assignment that may reach the use.
#[derive(Clone, Copy, Debug)]
pub enum Def<'a> {
    /// `name = value` / `name: T = value`: the value.
    Value(&'a Expr),
    /// Any other binding: unpacking, a loop or `with` target, `+=`, an import, a `def`,
    /// `del`.
    Other,
}

/// The assignments of `name` in `body` that may reach offset `at`. `None` when none does
/// (the name is not bound in this body before `at`: a parameter, a module-level name seen
/// from a function, or a use before any assignment).
pub fn reaching<'a>(body: &'a [Stmt], name: &str, at: TextSize) -> Option<Vec<Def<'a>>> {
    let mut cur = Vec::new();
    walk(body, name, at, &mut cur);
    (!cur.is_empty()).then_some(cur)
}

fn union<'a>(into: &mut Vec<Def<'a>>, from: &[Def<'a>]) {
    for d in from {
        let seen = into.iter().any(|e| match (e, d) {
            (Def::Value(a), Def::Value(b)) => std::ptr::eq(*a, *b),
            (Def::Other, Def::Other) => true,
            _ => false,
        });
        if !seen {
            into.push(*d);
        }
    }
}

/// Walk `stmts` up to `at`, updating the reaching set; true once `at` is reached.
fn walk<'a>(stmts: &'a [Stmt], name: &str, at: TextSize, cur: &mut Vec<Def<'a>>) -> bool {
    for stmt in stmts {
        if stmt.start() >= at {
            return true;
        }
        if stmt.end() > at {
            inside(stmt, name, at, cur);
            return true;
        }
        apply(stmt, name, cur);
    }
    false
}

/// `at` lies inside `stmt`: walk into the part that holds it.
fn inside<'a>(stmt: &'a Stmt, name: &str, at: TextSize, cur: &mut Vec<Def<'a>>) {
    let holds = |b: &[Stmt]| {
        b.first().is_some_and(|s| s.start() <= at) && b.last().is_some_and(|s| s.end() > at)
    };
    match stmt {
        Stmt::If(i) => {
            if holds(&i.body) {
                walk(&i.body, name, at, cur);
            }
            for c in &i.elif_else_clauses {
                if holds(&c.body) {
                    walk(&c.body, name, at, cur);
                }
            }
        }
        Stmt::For(f) if holds(&f.body) => {
            // The next iteration sees what the rest of the body assigns.
            let mut around = cur.clone();
            if binds(&f.target, name) {
                around = vec![Def::Other];
            } else {
                let mut end = cur.clone();
                apply_suite(&f.body, name, &mut end);
                union(&mut around, &end);
            }
            *cur = around;
            walk(&f.body, name, at, cur);
        }
        Stmt::While(w) if holds(&w.body) => {
            let mut end = cur.clone();
            apply_suite(&w.body, name, &mut end);
            union(cur, &end);
            walk(&w.body, name, at, cur);
        }
        Stmt::For(ast::StmtFor { orelse, .. }) | Stmt::While(ast::StmtWhile { orelse, .. })
            if holds(orelse) =>
        {
            apply(stmt, name, cur);
            // `apply` ran the else block too; the union over-approximates.
        }
        Stmt::With(w) => {
            for item in &w.items {
                if item
                    .optional_vars
                    .as_deref()
                    .is_some_and(|v| binds(v, name))
                {
                    *cur = vec![Def::Other];
                }
            }
            walk(&w.body, name, at, cur);
        }
        Stmt::Try(t) => {
            if holds(&t.body) {
                walk(&t.body, name, at, cur);
                return;
            }
            // A handler, `else` or `finally`: anything the body assigned may have run.
            let mut after_body = cur.clone();
            apply_suite(&t.body, name, &mut after_body);
            let mut all = cur.clone();
            union(&mut all, &after_body);
            for h in &t.handlers {
                let ast::ExceptHandler::ExceptHandler(h) = h;
                if holds(&h.body) {
                    *cur = all;
                    walk(&h.body, name, at, cur);
                    return;
                }
            }
            if holds(&t.orelse) {
                *cur = after_body;
                walk(&t.orelse, name, at, cur);
                return;
            }
            for h in &t.handlers {
                let ast::ExceptHandler::ExceptHandler(h) = h;
                let mut end = all.clone();
                apply_suite(&h.body, name, &mut end);
                union(&mut all, &end);
            }
            *cur = all;
            walk(&t.finalbody, name, at, cur);
        }
        // A simple statement holding the use (`net = f(net)`: its own binding comes after),
        // or a nested scope.
        _ => {}
    }
}

fn apply_suite<'a>(stmts: &'a [Stmt], name: &str, cur: &mut Vec<Def<'a>>) {
    for s in stmts {
        apply(s, name, cur);
    }
}

/// The effect of a statement that ends before the use.
#[allow(clippy::collapsible_match)]
fn apply<'a>(stmt: &'a Stmt, name: &str, cur: &mut Vec<Def<'a>>) {
    match stmt {
        Stmt::Assign(a) => {
            if a.targets
                .iter()
                .any(|t| matches!(t, Expr::Name(n) if n.id.as_str() == name))
            {
                *cur = vec![Def::Value(&a.value)];
            } else if a.targets.iter().any(|t| binds(t, name)) {
                *cur = vec![Def::Other];
            }
        }
        Stmt::AnnAssign(a) => {
            if let (Some(v), true) = (&a.value, binds(&a.target, name)) {
                *cur = vec![Def::Value(v)];
            }
        }
        Stmt::AugAssign(a) => {
            if binds(&a.target, name) {
                *cur = vec![Def::Other];
            }
        }
        Stmt::Delete(d) => {
            if d.targets.iter().any(|t| binds(t, name)) {
                *cur = vec![Def::Other];
            }
        }
        Stmt::FunctionDef(f) => {
            if f.name.as_str() == name {
                *cur = vec![Def::Other];
            }
        }
        Stmt::ClassDef(c) => {
            if c.name.as_str() == name {
                *cur = vec![Def::Other];
            }
        }
        Stmt::Import(i) => {
            if i.names.iter().any(|a| {
                a.asname.as_ref().map_or_else(
                    || a.name.as_str().split('.').next() == Some(name),
                    |n| n.as_str() == name,
                )
            }) {
                *cur = vec![Def::Other];
            }
        }
        Stmt::ImportFrom(i) => {
            if i.names
                .iter()
                .any(|a| a.asname.as_ref().map_or(a.name.as_str(), |n| n.as_str()) == name)
            {
                *cur = vec![Def::Other];
            }
        }
        Stmt::If(i) => {
            let start = cur.clone();
            let mut out = Vec::new();
            let mut body = start.clone();
            apply_suite(&i.body, name, &mut body);
            union(&mut out, &body);
            let mut has_else = false;
            for c in &i.elif_else_clauses {
                has_else |= c.test.is_none();
                let mut b = start.clone();
                apply_suite(&c.body, name, &mut b);
                union(&mut out, &b);
            }
            if !has_else {
                union(&mut out, &start);
            }
            *cur = out;
        }
        Stmt::For(f) => {
            let mut body = cur.clone();
            if binds(&f.target, name) {
                body = vec![Def::Other];
            }
            apply_suite(&f.body, name, &mut body);
            union(cur, &body);
            apply_suite(&f.orelse, name, cur);
        }
        Stmt::While(w) => {
            let mut body = cur.clone();
            apply_suite(&w.body, name, &mut body);
            union(cur, &body);
            apply_suite(&w.orelse, name, cur);
        }
        Stmt::With(w) => {
            for item in &w.items {
                if item
                    .optional_vars
                    .as_deref()
                    .is_some_and(|v| binds(v, name))
                {
                    *cur = vec![Def::Other];
                }
            }
            apply_suite(&w.body, name, cur);
        }
        Stmt::Try(t) => {
            let start = cur.clone();
            let mut after_body = start.clone();
            apply_suite(&t.body, name, &mut after_body);
            let mut all = start;
            union(&mut all, &after_body);
            let mut out = after_body.clone();
            apply_suite(&t.orelse, name, &mut out);
            for h in &t.handlers {
                let ast::ExceptHandler::ExceptHandler(h) = h;
                let mut b = all.clone();
                apply_suite(&h.body, name, &mut b);
                union(&mut out, &b);
            }
            apply_suite(&t.finalbody, name, &mut out);
            *cur = out;
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torchvet_python::SourceFile;

    /// The source text of each reaching value at the offset of `marker` (`Other` as `?`).
    fn at(src: &str, name: &str, marker: &str) -> Option<Vec<String>> {
        let source = SourceFile::from_python("t.py", src.to_string());
        let module = source.parse().into_syntax();
        let body = &module.body;
        let off = TextSize::try_from(src.find(marker).unwrap()).unwrap();
        reaching(body, name, off).map(|defs| {
            defs.iter()
                .map(|d| match d {
                    Def::Value(e) => src[e.range()].to_string(),
                    Def::Other => "?".to_string(),
                })
                .collect()
        })
    }

    #[test]
    fn the_last_assignment_before_the_use_on_a_straight_path() {
        let src = "net = Net()\ntorch.save(net, p)\nnet = torch.load(p)\nuse(net)\n";
        assert_eq!(at(src, "net", "torch.save"), Some(vec!["Net()".into()]));
        assert_eq!(at(src, "net", "use("), Some(vec!["torch.load(p)".into()]));
        assert_eq!(at(src, "other", "use("), None);
    }

    #[test]
    fn branches_join_and_loops_see_the_next_iteration() {
        let src = "m = A()\nif c:\n    m = B()\nsave(m)\n";
        assert_eq!(at(src, "m", "save"), Some(vec!["B()".into(), "A()".into()]));
        let src = "m = A()\nif c:\n    m = B()\nelse:\n    m = C()\nsave(m)\n";
        assert_eq!(at(src, "m", "save"), Some(vec!["B()".into(), "C()".into()]));
        let src = "m = A()\nfor x in y:\n    save(m)\n    m = B()\n";
        assert_eq!(at(src, "m", "save"), Some(vec!["A()".into(), "B()".into()]));
        let src = "for m in models:\n    save(m)\n";
        assert_eq!(at(src, "m", "save"), Some(vec!["?".into()]));
        let src = "net = f(net)\n";
        assert_eq!(at(src, "net", "f("), None);
    }
}

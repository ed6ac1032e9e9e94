//! What a container's entry holds at a read: the last store to it.
//!
//! `d["loss"]` read after `d = criterion(...)` holds what the criterion put there, unless the
//! entry was stored again in between: by the same key (`d["loss"] = d["loss"].item()`), or by
//! a loop that rewrites every entry (`for k, v in d.items(): d[k] = v.item()`, also over
//! `enumerate(d.items())`, `d` or `d.keys()`). Logging code converts a dict of loss tensors to
//! numbers this way before summing them; the entry then holds a Python number, not the
//! tensor.
use crate::helpers;
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::{Ranged, TextSize};

/// The last store to an entry of a container before a read.
#[derive(Clone, Copy, Debug)]
pub struct EntryStore<'a> {
    /// The stored value (`v.item()` of `d[k] = v.item()`).
    pub value: &'a Expr,
    /// Where the storing statement starts (names in `value` are looked up before it).
    pub at: TextSize,
    /// True when a loop rewrote every entry (the value names the loop's variables).
    pub every_entry: bool,
}

/// The last store to `container[key]` in `scope` (statements ending before `before`, nested
/// definitions excluded) made after the last plain binding of `container`: `container[key] =
/// v` with the same literal key, or an unconditional `container[k] = v` at the top of a loop
/// over all of its keys. `None` when the container is bound again after it, when the entry
/// is never stored, or when `key` is not a literal.
pub fn last_entry_store<'a>(
    scope: &'a [Stmt],
    container: &str,
    key: &Expr,
    before: TextSize,
) -> Option<EntryStore<'a>> {
    let key_text = literal_key(key)?;
    let mut last: Option<EntryStore<'a>> = None;
    helpers::for_each_own_stmt(scope, &mut |st: &'a Stmt| {
        if st.end() > before {
            return;
        }
        match st {
            Stmt::Assign(a) => {
                for t in &a.targets {
                    if binds_name(t, container) {
                        last = None;
                    } else if let Expr::Subscript(s) = t {
                        if helpers::name_of(&s.value) == Some(container)
                            && literal_key(&s.slice).as_deref() == Some(key_text.as_str())
                        {
                            last = Some(EntryStore {
                                value: &a.value,
                                at: a.range.start(),
                                every_entry: false,
                            });
                        }
                    }
                }
            }
            Stmt::AnnAssign(a) if binds_name(&a.target, container) => last = None,
            Stmt::AugAssign(a) if binds_name(&a.target, container) => last = None,
            Stmt::With(w)
                if w.items.iter().any(|i| {
                    i.optional_vars
                        .as_deref()
                        .is_some_and(|v| binds_name(v, container))
                }) =>
            {
                last = None;
            }
            Stmt::For(f) => {
                if binds_name(&f.target, container) {
                    last = None;
                } else if let Some(store) = rewrites_every_entry(f, container) {
                    last = Some(store);
                }
            }
            _ => {}
        }
    });
    last
}

/// A subscript key written as a literal (`"loss"`, `0`), as its source-independent text.
fn literal_key(key: &Expr) -> Option<String> {
    if let Some(s) = helpers::str_value(key) {
        return Some(format!("s:{s}"));
    }
    helpers::int_value(key).map(|i| format!("i:{i}"))
}

fn binds_name(target: &Expr, name: &str) -> bool {
    match target {
        Expr::Name(n) => n.id.as_str() == name,
        Expr::Tuple(t) => t.elts.iter().any(|e| binds_name(e, name)),
        Expr::List(l) => l.elts.iter().any(|e| binds_name(e, name)),
        Expr::Starred(s) => binds_name(&s.value, name),
        _ => false,
    }
}

/// `for k, v in d.items(): d[k] = E` (or over `enumerate(d.items())`, `d`, `d.keys()`): the
/// store of `E` to every entry, when it is a top-level statement of the loop body that no
/// `continue` / `break` / `return` before it can skip.
fn rewrites_every_entry<'a>(
    f: &'a ruff_python_ast::StmtFor,
    container: &str,
) -> Option<EntryStore<'a>> {
    let key_var = loop_key_var(&f.target, &f.iter, container)?;
    for st in &f.body {
        if let Stmt::Assign(a) = st {
            if let [Expr::Subscript(s)] = &a.targets[..] {
                if helpers::name_of(&s.value) == Some(container)
                    && helpers::name_of(&s.slice) == Some(key_var)
                {
                    return Some(EntryStore {
                        value: &a.value,
                        at: a.range.start(),
                        every_entry: true,
                    });
                }
            }
        }
        if may_leave_iteration(st) {
            return None;
        }
    }
    None
}

/// The loop variable that takes every key of `container`.
fn loop_key_var<'a>(target: &'a Expr, iter: &Expr, container: &str) -> Option<&'a str> {
    // `enumerate(X)`: the second element of the target walks X.
    if let Expr::Call(c) = iter {
        if helpers::name_of(&c.func) == Some("enumerate") && c.arguments.args.len() == 1 {
            let Expr::Tuple(t) = target else {
                return None;
            };
            let [_, inner] = &t.elts[..] else {
                return None;
            };
            return loop_key_var(inner, &c.arguments.args[0], container);
        }
    }
    let over = |m: &str| -> bool {
        matches!(iter, Expr::Call(c) if c.arguments.is_empty()
        && helpers::method_call(c).is_some_and(|(name, recv)| {
            name == m && helpers::name_of(recv) == Some(container)
        }))
    };
    if over("items") {
        let Expr::Tuple(t) = target else {
            return None;
        };
        return match &t.elts[..] {
            [Expr::Name(k), _] => Some(k.id.as_str()),
            _ => None,
        };
    }
    if helpers::name_of(iter) == Some(container) || over("keys") {
        return match target {
            Expr::Name(k) => Some(k.id.as_str()),
            _ => None,
        };
    }
    None
}

/// Can this statement end the current iteration early (a `continue`, `break`, `return` or
/// `raise` in it, outside nested loops and definitions)?
fn may_leave_iteration(st: &Stmt) -> bool {
    let mut found = false;
    visit_leaving(std::slice::from_ref(st), &mut found);
    found
}

fn visit_leaving(body: &[Stmt], found: &mut bool) {
    for st in body {
        match st {
            Stmt::Continue(_) | Stmt::Break(_) | Stmt::Return(_) | Stmt::Raise(_) => {
                *found = true;
            }
            Stmt::If(i) => {
                visit_leaving(&i.body, found);
                for c in &i.elif_else_clauses {
                    visit_leaving(&c.body, found);
                }
            }
            Stmt::With(w) => visit_leaving(&w.body, found),
            Stmt::Try(t) => {
                visit_leaving(&t.body, found);
                for h in &t.handlers {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    visit_leaving(&h.body, found);
                }
                visit_leaving(&t.orelse, found);
                visit_leaving(&t.finalbody, found);
            }
            Stmt::Match(m) => {
                for c in &m.cases {
                    visit_leaving(&c.body, found);
                }
            }
            // A nested loop's `continue` / `break` stays in it; its `return` does not.
            Stmt::For(ruff_python_ast::StmtFor { body, orelse, .. })
            | Stmt::While(ruff_python_ast::StmtWhile { body, orelse, .. }) => {
                visit_returns(body, found);
                visit_returns(orelse, found);
            }
            _ => {}
        }
    }
}

fn visit_returns(body: &[Stmt], found: &mut bool) {
    helpers::for_each_own_stmt(body, &mut |s| {
        if matches!(s, Stmt::Return(_) | Stmt::Raise(_)) {
            *found = true;
        }
    });
}

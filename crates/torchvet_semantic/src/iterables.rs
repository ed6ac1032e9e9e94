//! What a `for` loop draws its items from, through the wrappers real code puts around a
//! DataLoader: `enumerate(loader)`, `tqdm(enumerate(loader), total=len(loader))`, `iter(dl)`,
//! and the same wrapper held in a variable first (`progress_bar = tqdm(enumerate(loader))`,
//! then `for i, data in progress_bar:`).
//!
//! One question for every loop-aware rule and for the eval-region evidence, so a loop over a
//! progress bar is the same loop as one over the loader. The project facts
//! ([`crate::project::facts`]) record the same link for the flow analysis
//! (`UseHow::Wrapped`).
use crate::helpers;
use crate::reaching::{reaching, Def};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::Ranged;

/// Last segments of calls that iterate their first argument without consuming it
/// (`tqdm.tqdm`, `tqdm.auto.tqdm`, `rich.progress.track` resolve to these).
pub const LOOP_WRAPPERS: &[&str] = &["enumerate", "tqdm", "iter", "track"];

/// Is this call a loop wrapper (its items are its first argument's)? `resolve` gives the
/// qualified name of a callee when the file binds it (`from tqdm import tqdm as bar`).
pub fn is_loop_wrapper(call: &ExprCall, resolve: &dyn Fn(&Expr) -> Option<String>) -> bool {
    if call.arguments.args.is_empty() {
        return false;
    }
    let resolved = resolve(&call.func);
    let name = match resolved.as_deref() {
        Some(q) => helpers::last_segment(q),
        None => match helpers::name_of(&call.func) {
            Some(n) => n,
            None => return false,
        },
    };
    // A project function named `track` or `iter` is not a wrapper: only builtins and the
    // progress-bar libraries.
    let known = match resolved.as_deref() {
        None => true,
        Some(q) => {
            !q.contains('.')
                || q.starts_with("tqdm.")
                || q.starts_with("rich.progress.")
                || q.starts_with("builtins.")
        }
    };
    known && LOOP_WRAPPERS.contains(&name)
}

/// The expression a loop over `iter` draws from: wrappers unwrapped to their first argument,
/// and a local name followed to the wrapper it holds when that assignment is the only one
/// reaching the loop (`body` is the function's or the module's; a name bound in several
/// branches, or to something else than a wrapper, stays as it is). `iter` itself when there is
/// nothing to follow.
pub fn loop_source<'a>(
    iter: &'a Expr,
    body: &'a [Stmt],
    resolve: &dyn Fn(&Expr) -> Option<String>,
) -> &'a Expr {
    let at = iter.start();
    let mut cur = iter;
    let mut hops = 0;
    loop {
        match cur {
            Expr::Call(c) if is_loop_wrapper(c, resolve) => cur = &c.arguments.args[0],
            Expr::Name(n) if hops < 3 => {
                let Some(defs) = reaching(body, n.id.as_str(), at) else {
                    return cur;
                };
                match defs.as_slice() {
                    [Def::Value(v @ Expr::Call(c))] if is_loop_wrapper(c, resolve) => {
                        hops += 1;
                        cur = v;
                    }
                    _ => return cur,
                }
            }
            _ => return cur,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torchvet_python::parser::parse_module;

    fn source_of(src: &str) -> String {
        let parsed = parse_module(src).unwrap();
        let body = &parsed.syntax().body;
        let Some(Stmt::FunctionDef(f)) = body.first() else {
            panic!()
        };
        let mut found = None;
        helpers::for_each_own_stmt(&f.body, &mut |s| {
            if let Stmt::For(l) = s {
                if found.is_none() {
                    found = Some(&*l.iter);
                }
            }
        });
        let e = loop_source(found.unwrap(), &f.body, &|_| None);
        src[e.range()].to_string()
    }

    #[test]
    fn follows_a_wrapper_held_in_a_variable() {
        let src = "def f(dataloader):\n    progress_bar = tqdm(enumerate(dataloader), total=len(dataloader))\n    for i, data in progress_bar:\n        pass\n";
        assert_eq!(source_of(src), "dataloader");
        let src = "def f(loader):\n    for i, data in enumerate(tqdm(loader)):\n        pass\n";
        assert_eq!(source_of(src), "loader");
    }

    #[test]
    fn stays_at_names_bound_twice_or_to_other_values() {
        let src = "def f(a, b, c):\n    bar = tqdm(a)\n    if c:\n        bar = tqdm(b)\n    for x in bar:\n        pass\n";
        assert_eq!(source_of(src), "bar");
        let src = "def f(a):\n    bar = make(a)\n    for x in bar:\n        pass\n";
        assert_eq!(source_of(src), "bar");
        let src =
            "def f(a):\n    bar = tqdm(a)\n    bar = other()\n    for x in bar:\n        pass\n";
        assert_eq!(source_of(src), "bar");
    }
}

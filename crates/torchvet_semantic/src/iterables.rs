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
pub const LOOP_WRAPPERS: &[&str] = &["enumerate", "tqdm", "tqdm_notebook", "iter", "track"];

/// Which loop wrapper this call is (its items are its first argument's), by its last segment
/// (`enumerate`, `tqdm`, ...). `resolve` gives the qualified name of a callee when the file
/// binds it (`from tqdm import tqdm as bar`). The one answer for every rule that looks through
/// the wrappers of a loop's iterable.
pub fn loop_wrapper(
    call: &ExprCall,
    resolve: &dyn Fn(&Expr) -> Option<String>,
) -> Option<&'static str> {
    if call.arguments.args.is_empty() {
        return None;
    }
    let resolved = resolve(&call.func);
    let name = match resolved.as_deref() {
        Some(q) => helpers::last_segment(q),
        None => helpers::name_of(&call.func)?,
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
    if !known {
        return None;
    }
    LOOP_WRAPPERS.iter().copied().find(|w| *w == name)
}

/// Is this call a loop wrapper ([`loop_wrapper`])?
pub fn is_loop_wrapper(call: &ExprCall, resolve: &dyn Fn(&Expr) -> Option<String>) -> bool {
    loop_wrapper(call, resolve).is_some()
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

    #[test]
    fn names_the_wrapper_and_rejects_project_look_alikes() {
        let wrapper = |src: &str, q: Option<&str>| {
            let parsed = parse_module(src).unwrap();
            let Some(Stmt::Expr(e)) = parsed.syntax().body.first() else {
                panic!()
            };
            let Expr::Call(c) = &*e.value else { panic!() };
            let q = q.map(str::to_string);
            loop_wrapper(c, &|_| q.clone())
        };
        assert_eq!(wrapper("enumerate(loader)\n", None), Some("enumerate"));
        assert_eq!(
            wrapper("bar(loader)\n", Some("tqdm.auto.tqdm")),
            Some("tqdm")
        );
        assert_eq!(
            wrapper("tqdm_notebook(loader)\n", Some("tqdm.tqdm_notebook")),
            Some("tqdm_notebook")
        );
        // A project function that happens to be called `track`, and a call with no argument.
        assert_eq!(
            wrapper("track(loader)\n", Some("utils.metrics.track")),
            None
        );
        assert_eq!(wrapper("enumerate()\n", None), None);
        assert_eq!(wrapper("zip(a, b)\n", None), None);
    }
}

/// A loop variable that ranges over parameters (a requires-grad leaf).
#[derive(Clone, Copy, Debug)]
pub struct ParameterLoop<'a> {
    /// The `for` statement.
    pub stmt: &'a Stmt,
    /// The loop's `for` header (target and iterable), for secondary locations.
    pub header: ruff_text_size::TextRange,
}

/// Does `iter` produce parameters (`X.parameters()`, `X.named_parameters()` with a
/// `(name, p)` target, `group["params"]`)? `Some(true)` for named pairs.
fn parameter_iter(iter: &Expr) -> Option<bool> {
    match iter {
        Expr::Call(c) => match helpers::method_call(c)? {
            ("parameters", _) => Some(false),
            ("named_parameters", _) => Some(true),
            _ => None,
        },
        Expr::Subscript(s) if helpers::str_value(&s.slice) == Some("params") => Some(false),
        _ => None,
    }
}

/// When the bare name `name` is the variable of one of the enclosing `loops` (outermost
/// first) that ranges over parameters (`for p in model.parameters()`, `for n, p in
/// m.named_parameters()`, `for p in group["params"]`): that loop. The innermost loop binding
/// `name` decides.
pub fn parameter_loop<'a>(loops: &[&'a Stmt], name: &str) -> Option<ParameterLoop<'a>> {
    for &stmt in loops.iter().rev() {
        let Stmt::For(f) = stmt else { continue };
        if !helpers::binds(&f.target, name) {
            continue;
        }
        let named = parameter_iter(&f.iter)?;
        let ok = match &*f.target {
            Expr::Name(_) => !named,
            Expr::Tuple(t) => {
                named && t.elts.len() == 2 && helpers::name_of(&t.elts[1]) == Some(name)
            }
            _ => false,
        };
        return ok.then(|| ParameterLoop {
            stmt,
            header: ruff_text_size::TextRange::new(f.target.start(), f.iter.end()),
        });
    }
    None
}

/// The per-batch part of a loop target and the iterable, through `enumerate(...)` (whose
/// target is `(i, batch)`), `tqdm(...)` and `iter(...)`.
fn batch_target<'e>(
    mut target: &'e Expr,
    mut iter: &'e Expr,
    resolve: &dyn Fn(&Expr) -> Option<String>,
) -> Option<(&'e Expr, &'e Expr)> {
    while let Expr::Call(c) = iter {
        let Some(first) = c.arguments.args.first() else {
            break;
        };
        match loop_wrapper(c, resolve) {
            Some("enumerate") => {
                let Expr::Tuple(t) = target else { return None };
                if t.elts.len() != 2 {
                    return None;
                }
                target = &t.elts[1];
                iter = first;
            }
            Some(_) => iter = first,
            None => break,
        }
    }
    Some((target, iter))
}

/// Does the name of an iterable say it is a data loader (`train_loader`, `dataloader`,
/// `self.val_dl`, `dl`)?
pub fn named_like_loader(iter: &Expr) -> bool {
    let last = match iter {
        Expr::Name(n) => n.id.as_str(),
        Expr::Attribute(a) => a.attr.as_str(),
        _ => return false,
    };
    let lower = last.to_ascii_lowercase();
    lower.ends_with("loader") || lower.ends_with("_dl") || lower == "dl"
}

/// When `name` is unpacked from the batches of a loop over a data loader, one of the
/// enclosing `loops` (outermost first): `for x, y in loader`, `for i, (x, y) in
/// enumerate(tqdm(loader))`, or `for data in loader: x, y = data` (first statements of the
/// body); that loop and its iterable. With the default collate such a name holds a tensor when
/// the iterable is a `DataLoader` (by kind, or by name: [`named_like_loader`]); the caller
/// checks the iterable. A plain `for batch in loader: batch.to(d)` does not count (a batch may
/// be a dict or a `BatchEncoding`, whose `.to()` works in place).
pub fn batch_loop<'a>(
    loops: &[&'a Stmt],
    name: &str,
    resolve: &dyn Fn(&Expr) -> Option<String>,
) -> Option<(&'a Stmt, &'a Expr)> {
    for &stmt in loops.iter().rev() {
        let Stmt::For(f) = stmt else { continue };
        let Some((batch, loader)) = batch_target(&f.target, &f.iter, resolve) else {
            if helpers::binds(&f.target, name) {
                return None;
            }
            continue;
        };
        let unpacked = if helpers::binds(batch, name) {
            if matches!(batch, Expr::Name(_)) {
                return None;
            }
            true
        } else if helpers::binds(&f.target, name) {
            return None; // the `enumerate` counter
        } else {
            // `for data in loader: inputs, labels = data`
            let Some(batch_name) = helpers::name_of(batch) else {
                continue;
            };
            f.body.iter().take(3).any(|s| match s {
                Stmt::Assign(a) => {
                    helpers::name_of(&a.value) == Some(batch_name)
                        && a.targets.iter().any(|t| {
                            matches!(t, Expr::Tuple(_) | Expr::List(_)) && helpers::binds(t, name)
                        })
                }
                _ => false,
            })
        };
        if !unpacked {
            continue;
        }
        return Some((stmt, loader));
    }
    None
}

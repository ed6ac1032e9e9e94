use super::helpers::{has_splat, known_workers, loader_kind};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::style::values::{frame_binding, with_frame, Bound, Env};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use torchvet_python::SourceKind;

crate::declare_rule! {
    /// ## What it does
    /// Checks for multi-worker `DataLoader`s iterated at module level outside an
    /// `if __name__ == "__main__":` block.
    ///
    /// ## Why is this bad?
    /// On Windows and macOS, worker processes are started with the *spawn* method: each
    /// worker imports the main script again. Module-level code runs again in every worker,
    /// reaches the loop, tries to start workers of its own and fails with
    /// `RuntimeError: An attempt has been made to start a new process before the current
    /// process has finished its bootstrapping phase`. The same script works on Linux (fork),
    /// so the bug shows up only for some users.
    ///
    /// Loops written at module level are reported, and so are module-level calls of a function
    /// of the same file whose body iterates such a loader (`train()` without a guard). Only
    /// loaders whose `num_workers` is known to be above 0 are reported; notebooks are skipped.
    ///
    /// ## Example
    /// ```python
    /// loader = DataLoader(ds, batch_size=32, num_workers=4)
    /// for x, y in loader:
    ///     train_step(x, y)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def main():
    ///     loader = DataLoader(ds, batch_size=32, num_workers=4)
    ///     for x, y in loader:
    ///         train_step(x, y)
    ///
    /// if __name__ == "__main__":
    ///     main()
    /// ```
    ///
    /// ## Fix safety
    /// A display-only fix shows the statement moved under an `if __name__ == "__main__":` guard.
    /// It is not applied automatically: code after the loop may depend on it, and a `main()`
    /// function is usually the better structure.
    ///
    /// ## References
    /// - [Windows FAQ: multiprocessing error without if-clause protection](https://pytorch.org/docs/stable/notes/windows.html#multiprocessing-error-without-if-clause-protection)
    /// - [torch.utils.data: platform-specific behaviours](https://pytorch.org/docs/stable/data.html#platform-specific-behaviors)
    pub(crate) static DATALOADER_WORKERS_WITHOUT_MAIN_GUARD = {
        name: "dataloader-workers-without-main-guard",
        code: "TV048",
        group: DataLoading,
        severity: Warning,
        title: "Multi-worker DataLoader iterated at module level without an if __name__ == '__main__' guard",
        autofix: Suggest,
        hooks: { stmt: check_stmt },
    };
}

/// The iterated loader expression: `X`, `enumerate(X)`, `tqdm(X)`, `iter(X)` (the wrappers of
/// [`Checker::loop_wrapper`]), `zip(X, ...)`.
fn iterated<'e>(checker: &Checker, expr: &'e Expr) -> Vec<&'e Expr> {
    match expr {
        Expr::Call(c) if checker.loop_wrapper(c).is_some() => {
            c.arguments.args.first().into_iter().collect()
        }
        Expr::Call(c) if torchvet_semantic::helpers::name_of(&c.func) == Some("zip") => {
            c.arguments.args.iter().collect()
        }
        e => vec![e],
    }
}

/// A loader construction with known workers > 0: the worker count.
fn multi_worker(checker: &Checker, env: Env<'_>, call: &ExprCall) -> Option<i64> {
    let loader = checker.resolve(&call.func).and_then(|q| loader_kind(&q))?;
    if has_splat(call) {
        return None;
    }
    known_workers(checker, env, call, loader).filter(|&n| n > 0)
}

/// The multi-worker loader a `for` loop iterates: its range and worker count.
fn loop_loader(checker: &Checker, env: Env<'_>, iter: &Expr) -> Option<(TextRange, i64)> {
    iterated(checker, iter).into_iter().find_map(|e| match e {
        Expr::Call(c) => multi_worker(checker, env, c).map(|n| (e.range(), n)),
        Expr::Name(n) if checker.scopes.lookup(n.id.as_str()).is_none() => {
            match frame_binding(env, n.id.as_str(), n.start()) {
                Some(Bound::Value(Expr::Call(c))) => {
                    multi_worker(checker, env, c).map(|w| (e.range(), w))
                }
                _ => None,
            }
        }
        _ => None,
    })
}

/// The first `for` loop of a function body (not descending into nested defs) that iterates a
/// multi-worker loader.
fn function_loop(checker: &Checker, env: Env<'_>, body: &[Stmt]) -> Option<(TextRange, i64)> {
    body.iter().find_map(|stmt| match stmt {
        Stmt::For(f) => {
            loop_loader(checker, env, &f.iter).or_else(|| function_loop(checker, env, &f.body))
        }
        Stmt::While(w) => function_loop(checker, env, &w.body),
        Stmt::If(i) => function_loop(checker, env, &i.body).or_else(|| {
            i.elif_else_clauses
                .iter()
                .find_map(|c| function_loop(checker, env, &c.body))
        }),
        Stmt::With(w) => function_loop(checker, env, &w.body),
        Stmt::Try(t) => function_loop(checker, env, &t.body),
        _ => None,
    })
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    if !matches!(stmt, Stmt::For(_) | Stmt::Expr(_) | Stmt::Assign(_)) {
        return;
    }
    if checker.frames().len() != 1 || checker.in_main_guard() || checker.class().is_some() {
        return;
    }
    if matches!(checker.source.kind, SourceKind::Notebook(_)) {
        return;
    }
    // Cheap exit: a loader must have been constructed earlier in the file.
    if !checker.facts.any_call(|q| loader_kind(q).is_some()) {
        return;
    }
    match stmt {
        Stmt::For(f) => check_loop(checker, stmt, &f.iter),
        Stmt::Expr(e) => check_entry_call(checker, stmt, &e.value),
        Stmt::Assign(a) => check_entry_call(checker, stmt, &a.value),
        _ => {}
    }
}

fn shown<'a>(checker: &Checker<'a>, range: TextRange) -> &'a str {
    let text = checker.text(range);
    if text.len() <= 40 && !text.contains('\n') {
        text
    } else {
        "the DataLoader"
    }
}

fn check_loop(checker: &mut Checker, stmt: &Stmt, iter: &Expr) {
    let plausible = iterated(checker, iter).iter().any(|e| match e {
        Expr::Call(c) => checker
            .resolve(&c.func)
            .is_some_and(|q| loader_kind(&q).is_some()),
        Expr::Name(n) => checker.scopes.lookup(n.id.as_str()).is_none(),
        _ => false,
    });
    if !plausible {
        return;
    }
    let Some((loader, workers)) = with_frame(checker, |env| loop_loader(checker, env, iter)) else {
        return;
    };
    let text = shown(checker, loader);
    let fix = guard_fix(checker, stmt);
    let diagnostic = checker.report(
        loader,
        format!("`{text}` (num_workers={workers}) is iterated at module level without an `if __name__ == \"__main__\":` guard: with the spawn start method (Windows, macOS) every worker re-runs this script and loading fails with a bootstrapping RuntimeError"),
    );
    if let Some(fix) = fix {
        diagnostic.set_fix(fix);
    }
}

/// `train()` at module level, where `train` is a function of this file that iterates a
/// multi-worker loader.
fn check_entry_call(checker: &mut Checker, stmt: &Stmt, value: &Expr) {
    let Expr::Call(call) = value else { return };
    let Expr::Name(func) = &*call.func else {
        return;
    };
    let name = func.id.as_str();
    // Only names this module binds (a `def`), not imports or builtins such as `print`.
    if checker.scopes.lookup(name).is_some()
        || !checker
            .scopes
            .current()
            .is_some_and(|s| s.binds_locally(name))
    {
        return;
    }
    let at = call.start();
    let found = with_frame(checker, |module| {
        let def = module.body.iter().rev().find_map(|s| match s {
            Stmt::FunctionDef(f) if f.name.as_str() == name && f.end() <= at => Some(f),
            _ => None,
        })?;
        let env = Env {
            body: &def.body,
            params: Some(&def.parameters),
            module_class: None,
        };
        function_loop(checker, env, &def.body)
    });
    let Some((loader, workers)) = found else {
        return;
    };
    let text = shown(checker, loader);
    let fix = guard_fix(checker, stmt);
    let diagnostic = checker.report(
        call.range(),
        format!("`{name}()` runs at module level without an `if __name__ == \"__main__\":` guard and iterates `{text}` (num_workers={workers}): with the spawn start method (Windows, macOS) every worker re-runs this script and loading fails with a bootstrapping RuntimeError"),
    );
    diagnostic.add_related(loader, "the multi-worker loader iterated here");
    if let Some(fix) = fix {
        diagnostic.set_fix(fix);
    }
}

/// Show the loop indented under a `__main__` guard (only for a loop starting in column 0).
fn guard_fix(checker: &Checker, stmt: &Stmt) -> Option<RawFix> {
    let text = &checker.source.text;
    let start = stmt.start().to_usize();
    if start != 0 && text.as_bytes().get(start - 1) != Some(&b'\n') {
        return None;
    }
    let body = text.get(start..stmt.end().to_usize())?;
    let mut edits = vec![RawEdit::insert(
        stmt.start(),
        "if __name__ == \"__main__\":\n",
    )];
    let mut offset = start;
    for line in body.split_inclusive('\n') {
        if !line.trim().is_empty() {
            edits.push(RawEdit::insert(TextSize::try_from(offset).ok()?, "    "));
        }
        offset += line.len();
    }
    // The guard text and the first indent insert at the same offset: merge them.
    let first_indent = edits.remove(1);
    edits[0] = RawEdit::insert(
        first_indent.range.start(),
        "if __name__ == \"__main__\":\n    ",
    );
    Some(RawFix::display_only(
        "Move this statement under `if __name__ == \"__main__\":`",
        edits,
    ))
}

#[cfg(test)]
mod tests {
    use crate::{LintSettings, Linter};
    use torchvet_python::SourceFile;

    #[test]
    fn the_same_loop_under_a_main_guard_stays_silent() {
        let linter = Linter::new(LintSettings::only("dataloader-workers-without-main-guard"));
        let src = "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=2)\nfor b in loader:\n    pass\n";
        let file = SourceFile::from_python("train.py", src.to_string());
        assert_eq!(linter.lint(&file, "train.py").len(), 1);
        let guarded = src
            .replace("for b", "if __name__ == '__main__':\n  for b")
            .replace("    pass", "      pass");
        let file = SourceFile::from_python("train.py", guarded);
        assert_eq!(linter.lint(&file, "train.py").len(), 0);
    }
}

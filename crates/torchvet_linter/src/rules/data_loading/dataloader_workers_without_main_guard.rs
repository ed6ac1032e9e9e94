use super::helpers::{has_splat, known_workers, loader_kind};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::style::values::{frame_binding, with_frame, Bound};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextSize};
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
    /// Only loaders whose `num_workers` is known to be above 0 are reported; notebooks are
    /// skipped.
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
    /// A display-only fix shows the loop moved under an `if __name__ == "__main__":` guard.
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

/// The iterated loader expression: `X`, `enumerate(X)`, `tqdm(X)`, `iter(X)`, `zip(X, ...)`.
fn iterated(expr: &Expr) -> Vec<&Expr> {
    match expr {
        Expr::Call(c) => {
            let name = match &*c.func {
                Expr::Name(n) => n.id.as_str(),
                Expr::Attribute(a) => a.attr.as_str(),
                _ => return vec![expr],
            };
            match name {
                "enumerate" | "tqdm" | "iter" | "track" => {
                    c.arguments.args.first().into_iter().collect()
                }
                "zip" => c.arguments.args.iter().collect(),
                _ => vec![expr],
            }
        }
        e => vec![e],
    }
}

/// A loader construction with known workers > 0: the worker count.
fn multi_worker(
    checker: &Checker,
    env: crate::rules::style::values::Env<'_>,
    call: &ExprCall,
) -> Option<i64> {
    let loader = checker.resolve(&call.func).and_then(|q| loader_kind(&q))?;
    if has_splat(call) {
        return None;
    }
    known_workers(checker, env, call, loader).filter(|&n| n > 0)
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::For(f) = stmt else { return };
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
    let mut candidates = iterated(&f.iter);
    candidates.retain(|e| match e {
        Expr::Call(c) => checker
            .resolve(&c.func)
            .is_some_and(|q| loader_kind(&q).is_some()),
        Expr::Name(n) => checker.scopes.lookup(n.id.as_str()).is_none(),
        _ => false,
    });
    if candidates.is_empty() {
        return;
    }
    let found = with_frame(checker, |env| {
        candidates.iter().find_map(|e| match e {
            Expr::Call(c) => multi_worker(checker, env, c).map(|n| (*e, n)),
            Expr::Name(n) => match frame_binding(env, n.id.as_str(), n.start()) {
                Some(Bound::Value(Expr::Call(c))) => multi_worker(checker, env, c).map(|w| (*e, w)),
                _ => None,
            },
            _ => None,
        })
    });
    let Some((loader, workers)) = found else {
        return;
    };
    let text = checker.text(loader.range());
    let text = if text.len() <= 40 && !text.contains('\n') {
        text
    } else {
        "the DataLoader"
    };
    let fix = guard_fix(checker, stmt);
    let diagnostic = checker.report(
        loader.range(),
        format!("`{text}` (num_workers={workers}) is iterated at module level without an `if __name__ == \"__main__\":` guard: with the spawn start method (Windows, macOS) every worker re-runs this script and loading fails with a bootstrapping RuntimeError"),
    );
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
        "Move the loop under `if __name__ == \"__main__\":`",
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

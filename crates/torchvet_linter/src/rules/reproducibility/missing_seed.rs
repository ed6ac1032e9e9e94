use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::performance::helpers::is_test_file;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_python::SourceKind;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for a training entry point (a script with an `if __name__ == "__main__":`
    /// guard or an argument parser, or a notebook, that calls `.backward()` and `.step()`)
    /// that never seeds its random number generators; and for
    /// `torch.backends.cudnn.benchmark = True` set next to
    /// `torch.backends.cudnn.deterministic = True`.
    ///
    /// ## Why is this bad?
    /// Without `torch.manual_seed` (and `random.seed` / `numpy.random.seed` when those are
    /// used), weight initialisation, shuffling, dropout and augmentation differ on every run,
    /// so results cannot be reproduced or compared across changes. Separately,
    /// `cudnn.benchmark = True` lets cuDNN pick convolution algorithms by timing them, and
    /// that choice can differ between runs, which defeats `cudnn.deterministic = True`.
    /// Files that mention a seed anywhere (a `set_seed` helper, `seed_everything`, a `--seed`
    /// option) are not reported.
    ///
    /// ## Example
    /// ```python
    /// torch.backends.cudnn.deterministic = True
    /// torch.backends.cudnn.benchmark = True
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// torch.manual_seed(0)
    /// torch.backends.cudnn.deterministic = True
    /// torch.backends.cudnn.benchmark = False
    /// ```
    ///
    /// ## Fix safety
    /// For the cuDNN flags, the fix (unsafe) sets `benchmark = False`: results become
    /// repeatable, but convolutions may get slower. A missing seed has no automatic fix:
    /// where to seed, and with which value, is the author's choice.
    ///
    /// ## References
    /// - [Reproducibility](https://pytorch.org/docs/stable/notes/randomness.html)
    /// - [pytorch/examples imagenet: seed, deterministic=True, benchmark=False](https://github.com/pytorch/examples/blob/main/imagenet/main.py)
    pub(crate) static MISSING_SEED = {
        name: "missing-seed",
        code: "TV116",
        group: Reproducibility,
        severity: Info,
        title: "Training entry point never seeds torch; or cudnn.benchmark=True alongside deterministic=True",
        autofix: Suggest,
        hooks: { end: check_end, stmt: check_stmt },
    };
}

/// Calls that mark a script as an entry point.
const ENTRY_POINTS: &[&str] = &[
    "argparse.ArgumentParser",
    "hydra.main",
    "fire.Fire",
    "click.command",
];

/// Does the text mention a seed in code (`set_seed(`, `manual_seed`, `args.seed`,
/// `seed=`)? A conservative check that also sees local helpers the facts cannot resolve.
fn mentions_seed(text: &str) -> bool {
    ["seed(", "seed=", "seed =", ".seed", "_seed", "seed_"]
        .iter()
        .any(|p| text.contains(p))
}

fn check_end(checker: &mut Checker) {
    let facts = &checker.facts;
    let Some(first_backward) = facts
        .method_calls_of("backward")
        .iter()
        .chain(facts.calls_of("torch.autograd.backward"))
        .map(|c| c.range())
        .min_by_key(|r| r.start())
    else {
        return;
    };
    if facts.method_calls_of("step").is_empty() || is_test_file(checker) {
        return;
    }
    // Seeding through resolved APIs (torch.manual_seed, seed_everything, set_seed, ...).
    let seeded_api = facts
        .calls
        .keys()
        .any(|q| helpers::last_segment(q).contains("seed"))
        || facts.method_calls().keys().any(|m| m.contains("seed"));
    // A local helper (`def set_seed(...)`) or a `--seed` option: stay silent.
    if seeded_api || mentions_seed(&checker.source.text) {
        return;
    }
    let entry = matches!(checker.source.kind, SourceKind::Notebook(_))
        || ENTRY_POINTS.iter().any(|q| !facts.calls_of(q).is_empty())
        || checker.source.text.contains("__main__");
    if !entry {
        return;
    }
    checker.report(
        first_backward,
        "this training script never seeds its random generators (no `torch.manual_seed`, `random.seed` or `numpy.random.seed`): initial weights, shuffling and dropout differ on every run, so results cannot be reproduced",
    );
}

/// `torch.backends.cudnn.<flag> = True`: the flag name.
fn cudnn_flag_set_true<'s>(checker: &Checker, stmt: &'s Stmt) -> Option<(&'s str, &'s Expr)> {
    let Stmt::Assign(a) = stmt else { return None };
    let [target] = &a.targets[..] else {
        return None;
    };
    if !matches!(&*a.value, Expr::BooleanLiteral(b) if b.value) {
        return None;
    }
    let Expr::Attribute(attr) = target else {
        return None;
    };
    let q = checker.resolve(target)?;
    let flag = q.strip_prefix("torch.backends.cudnn.")?;
    (flag == attr.attr.as_str()).then_some((attr.attr.as_str(), &*a.value))
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Some(("benchmark", value)) = cudnn_flag_set_true(checker, stmt) else {
        return;
    };
    let value_range = value.range();
    let stmt_range = stmt.range();
    // The statements of the same block.
    let deterministic = {
        let stack = checker.stmt_stack();
        let parent = stack.len().checked_sub(2).and_then(|i| stack.get(i));
        match parent {
            Some(p) => block_of(p, stmt_range).and_then(|b| deterministic_in(checker, b)),
            None => {
                // A module-level statement: the checker does not expose the module body, so
                // parse it again (rare: only for a module-level `cudnn.benchmark = True`).
                let parsed = checker.source.parse();
                deterministic_in(checker, &parsed.syntax().body)
            }
        }
    };
    let Some(det) = deterministic else { return };
    let text = checker.text(stmt.range());
    checker
        .report(
            stmt_range,
            format!("`{text}` lets cuDNN choose convolution algorithms by timing them, which can differ between runs and defeats `cudnn.deterministic = True`"),
        )
        .add_related(det, "deterministic mode is requested here")
        .set_fix(RawFix::unsafe_edit(
            "Set `benchmark = False`",
            vec![RawEdit::replace(value_range, "False")],
        ));
}

/// The block of `parent` that holds the statement at `range`.
fn block_of(parent: &Stmt, range: TextRange) -> Option<&[Stmt]> {
    let holds = |b: &[Stmt]| b.iter().any(|s| s.range() == range);
    let blocks: Vec<&[Stmt]> = match parent {
        Stmt::FunctionDef(f) => vec![&f.body],
        Stmt::ClassDef(c) => vec![&c.body],
        Stmt::For(f) => vec![&f.body, &f.orelse],
        Stmt::While(w) => vec![&w.body, &w.orelse],
        Stmt::With(w) => vec![&w.body],
        Stmt::If(i) => {
            let mut v: Vec<&[Stmt]> = vec![&i.body];
            v.extend(i.elif_else_clauses.iter().map(|c| c.body.as_slice()));
            v
        }
        Stmt::Try(t) => {
            let mut v: Vec<&[Stmt]> = vec![&t.body, &t.orelse, &t.finalbody];
            v.extend(t.handlers.iter().map(|h| {
                let ast::ExceptHandler::ExceptHandler(h) = h;
                h.body.as_slice()
            }));
            v
        }
        _ => return None,
    };
    blocks.into_iter().find(|b| holds(b))
}

/// The range of a `cudnn.deterministic = True` statement in the block.
fn deterministic_in(checker: &Checker, block: &[Stmt]) -> Option<TextRange> {
    block
        .iter()
        .find_map(|s| match cudnn_flag_set_true(checker, s) {
            Some(("deterministic", _)) => Some(s.range()),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use crate::rules::performance::helpers::count_findings;

    const TRAIN: &str = "import torch\nfor x in dl:\n    m(x).sum().backward()\n    opt.step()\n";

    #[test]
    fn seeded_and_library_files_stay_silent() {
        let rule = "missing-seed";
        let script = format!("{TRAIN}if __name__ == '__main__':\n    pass\n");
        assert_eq!(count_findings(rule, "train.py", &script), 1);
        let pytest_module = format!("{script}\ndef test_one_step():\n    pass\n");
        assert_eq!(count_findings(rule, "test_train.py", &pytest_module), 0);
        // A library module without an entry point.
        assert_eq!(count_findings(rule, "engine.py", TRAIN), 0);
        for seeded in [
            "torch.manual_seed(0)\n",
            "import lightning as L\nL.seed_everything(1)\n",
            "def set_seed(s):\n    pass\nset_seed(1)\n",
            "from transformers import set_seed\nset_seed(3)\n",
        ] {
            let src = format!("{seeded}{script}");
            assert_eq!(count_findings(rule, "train.py", &src), 0, "{seeded}");
        }
    }

    #[test]
    fn cudnn_flags_at_module_level() {
        let rule = "missing-seed";
        let both = "import torch\ntorch.backends.cudnn.deterministic = True\nx = 1\ntorch.backends.cudnn.benchmark = True\n";
        assert_eq!(count_findings(rule, "m.py", both), 1);
        let only = "import torch\ntorch.backends.cudnn.benchmark = True\n";
        assert_eq!(count_findings(rule, "m.py", only), 0);
    }
}

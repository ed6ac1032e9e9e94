use super::helpers::{dataloader_calls, file_trains, is_test_file, loader_dataset, tensor_dataset};
use crate::checker::Checker;
use crate::fix::{add_keyword_argument, RawEdit, RawFix};
use crate::rules::facts::loader_used_only_for_evaluation;
use ruff_python_ast::Expr;
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for a `DataLoader` built without `num_workers` (or with `num_workers=0`) in a
    /// file that trains (calls `.backward()` and `.step()`).
    ///
    /// ## Why is this bad?
    /// With no workers, every batch is loaded, decoded and augmented in the main process
    /// while the GPU waits; the next batch is only prepared after the training step
    /// finishes. Worker processes prepare batches in parallel with training, which often
    /// speeds up input-bound training several times. Loaders over in-memory
    /// `TensorDataset`s, loaders the project uses only for evaluation (every loop over them
    /// evaluates, in whichever file they are passed to), and test files (where
    /// `num_workers=0` is a common, deliberate choice), are not reported. This advice is contested for small data sets, so the rule is off by
    /// default.
    ///
    /// ## Example
    /// ```python
    /// loader = DataLoader(train_ds, batch_size=64, shuffle=True)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// loader = DataLoader(train_ds, batch_size=64, shuffle=True, num_workers=8,
    ///                     pin_memory=True, persistent_workers=True)
    /// ```
    ///
    /// ## Fix safety
    /// The suggested fix (display only) sets `num_workers`. It is never applied
    /// automatically: worker processes need a picklable dataset, an
    /// `if __name__ == "__main__":` guard on spawn-based platforms, and per-worker seeding
    /// for random augmentations, and the right count depends on the machine.
    ///
    /// ## References
    /// - [Performance tuning guide: enable asynchronous data loading](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html)
    /// - [torch.utils.data: multi-process data loading](https://pytorch.org/docs/stable/data.html#multi-process-data-loading)
    pub(crate) static DATALOADER_NUM_WORKERS_ZERO = {
        name: "dataloader-num-workers-zero",
        code: "TV060",
        group: Performance,
        severity: Info,
        title: "Training DataLoader with default num_workers=0 (synchronous loading in the main process)",
        autofix: Suggest,
        torchfix: ["TOR401"],
        hooks: { end: check_end },
    };
}

/// Position of `num_workers` in `DataLoader(...)`.
const NUM_WORKERS_POS: usize = 5;

fn check_end(checker: &mut Checker) {
    if !file_trains(checker) || is_test_file(checker) {
        return;
    }
    let value = if checker.scopes.lookup("os").as_deref() == Some("os") {
        "min(8, os.cpu_count() or 1)"
    } else {
        "4"
    };
    let mut found: Vec<(TextRange, TextRange, RawEdit, bool)> = Vec::new();
    let project = checker.project_or_file().cloned();
    for call in dataloader_calls(checker) {
        if helpers::has_kwargs_splat(call) {
            continue;
        }
        // In memory: a `TensorDataset`, passed directly or through the name holding it.
        if loader_dataset(checker, call).is_some_and(|d| tensor_dataset(checker, d).is_some()) {
            continue;
        }
        // Used only for evaluation, wherever the project takes it: no training step waits
        // for its batches.
        if project
            .as_ref()
            .is_some_and(|p| loader_used_only_for_evaluation(checker, p, call).is_some())
        {
            continue;
        }
        match helpers::argument(call, "num_workers", NUM_WORKERS_POS) {
            None if helpers::has_args_splat(call) => {}
            None => found.push((
                call.range(),
                call.func.range(),
                add_keyword_argument(call, &format!("num_workers={value}")),
                false,
            )),
            Some(v)
                if helpers::int_value(v) == Some(0) && !matches!(v, Expr::BooleanLiteral(_)) =>
            {
                found.push((
                    call.range(),
                    call.func.range(),
                    RawEdit::replace(v.range(), value),
                    true,
                ));
            }
            Some(_) => {}
        }
    }
    for (range, func, edit, explicit) in found {
        let head = checker.text(func);
        let how = if explicit {
            "with `num_workers=0`"
        } else {
            "without `num_workers`"
        };
        checker
            .report(
                range,
                format!("`{head}(...)` {how} loads every batch in the main process while the training step waits; worker processes would prepare batches in parallel"),
            )
            .set_fix(RawFix::display_only(
                format!("Set `num_workers={value}`"),
                vec![edit],
            ));
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::performance::helpers::count_findings;

    const TRAIN: &str = "from torch.utils.data import DataLoader\ndl = DataLoader(ds)\nfor x in dl:\n    m(x).sum().backward()\n    opt.step()\n";

    #[test]
    fn only_training_files_outside_tests() {
        let rule = "dataloader-num-workers-zero";
        assert_eq!(count_findings(rule, "train.py", TRAIN), 1);
        assert_eq!(count_findings(rule, "tests/test_data.py", TRAIN), 0);
        // A pytest module (it holds a test function) is test code; a script that is only
        // named like one (an evaluation or training script) is not.
        let pytest_module = format!("{TRAIN}\ndef test_loader():\n    pass\n");
        assert_eq!(count_findings(rule, "data_test.py", &pytest_module), 0);
        assert_eq!(count_findings(rule, "data_test.py", TRAIN), 1);
        let no_training = "from torch.utils.data import DataLoader\ndl = DataLoader(ds)\nfor x in dl:\n    print(x)\n";
        assert_eq!(count_findings(rule, "eval.py", no_training), 0);
    }

    #[test]
    fn loaders_used_only_for_evaluation() {
        let rule = "dataloader-num-workers-zero";
        let src = "import torch\nfrom torch.utils.data import DataLoader\ntrain_dl = DataLoader(train_ds, batch_size=32, shuffle=True)\nval_dl = DataLoader(val_ds, batch_size=32)\ndef evaluate(model, loader):\n    model.eval()\n    with torch.no_grad():\n        for x, y in loader:\n            print(model(x))\nfor epoch in range(3):\n    for x, y in train_dl:\n        opt.zero_grad()\n        loss_fn(model(x), y).backward()\n        opt.step()\n    evaluate(model, val_dl)\n";
        // The training loader only: the validation one is iterated by an evaluation loop.
        assert_eq!(count_findings(rule, "train.py", src), 1);
        // A loader that a training loop also iterates is a training loader.
        let both = src.replace("for x, y in train_dl:", "for x, y in val_dl:");
        assert_eq!(count_findings(rule, "train.py", &both), 2);
    }

    #[test]
    fn tensor_datasets_passed_by_name() {
        let rule = "dataloader-num-workers-zero";
        let named = "import torch\ndef loaders(x, y):\n    ds = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))\n    return torch.utils.data.DataLoader(ds, batch_size=32)\nfor xb, yb in loaders(a, b):\n    m(xb).sum().backward()\n    opt.step()\n";
        assert_eq!(count_findings(rule, "train.py", named), 0);
        // A name rebound to another dataset before the loader is built is not that one.
        let rebound = named.replace(
            "    return torch",
            "    ds = ImageFolder(root)\n    return torch",
        );
        assert_eq!(count_findings(rule, "train.py", &rebound), 1);
    }
}

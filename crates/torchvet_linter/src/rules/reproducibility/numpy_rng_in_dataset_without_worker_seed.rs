use crate::checker::Checker;
use crate::rules::data_loading::helpers::loader_kind;
use crate::rules::data_loading::worker_helpers::{worker_loader, WorkerLoader};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use std::cell::RefCell;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `Dataset.__getitem__` / `__iter__` methods that draw from NumPy's global
    /// random generator (`np.random.rand()`, `np.random.randint(...)`, ...) when a
    /// `DataLoader` of the same file runs them in worker processes without a
    /// `worker_init_fn`, on a target torch older than 1.9.
    ///
    /// ## Why is this bad?
    /// Before torch 1.9 the DataLoader seeded `random` and `torch` in each worker but not
    /// NumPy. Forked workers inherit the parent's NumPy state, so every worker produces the
    /// same "random" augmentations, and with the default non-persistent workers the same
    /// sequence comes back every epoch. Since torch 1.9 (pytorch/pytorch#56488) the workers
    /// seed NumPy themselves, so the rule only reports when the target torch version is
    /// declared older than 1.9.
    ///
    /// Code under a reseeding context manager (`with numpy_seed(...)`), datasets that call
    /// `np.random.seed` themselves, `np.random.default_rng(...)` generators, and loaders with a
    /// `worker_init_fn` stay silent. The rule is in preview.
    ///
    /// ## Example
    /// ```python
    /// class Jitter(Dataset):
    ///     def __getitem__(self, i):
    ///         return self.x[i] + np.random.rand()
    ///
    /// loader = DataLoader(Jitter(), num_workers=4)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def seed_worker(_):
    ///     np.random.seed(torch.initial_seed() % 2**32)
    ///
    /// loader = DataLoader(Jitter(), num_workers=4, worker_init_fn=seed_worker)
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: add a `worker_init_fn` that seeds NumPy from `torch.initial_seed()`,
    /// or draw the random numbers from `torch` (seeded per worker) instead.
    ///
    /// ## References
    /// - [DataLoader randomness](https://pytorch.org/docs/stable/data.html#randomness-in-multi-process-data-loading)
    /// - [pytorch/pytorch#5059](https://github.com/pytorch/pytorch/issues/5059)
    /// - [facebookresearch/fairseq#1383](https://github.com/facebookresearch/fairseq/issues/1383)
    pub(crate) static NUMPY_RNG_IN_DATASET_WITHOUT_WORKER_SEED = {
        name: "numpy-rng-in-dataset-without-worker-seed",
        code: "TV015",
        group: Reproducibility,
        severity: Warning,
        title: "np.random in Dataset.__getitem__ with num_workers>0 and no worker_init_fn (same numbers in every worker)",
        autofix: Suggest,
        preview: true,
        hooks: { call: check_call, end: check_end },
    };
}

/// `numpy.random` functions that do not draw from the global generator.
const NOT_DRAWS: &[&str] = &[
    "seed",
    "default_rng",
    "RandomState",
    "Generator",
    "SeedSequence",
    "get_state",
    "set_state",
    "PCG64",
    "PCG64DXSM",
    "MT19937",
    "Philox",
    "SFC64",
    "BitGenerator",
];

struct Site {
    class: String,
    call: TextRange,
    text: String,
}

#[derive(Default)]
struct State {
    sites: Vec<Site>,
    /// Dataset classes that call `np.random.seed` in a method.
    reseeding: Vec<String>,
    loaders: Vec<WorkerLoader>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// Under `with numpy_seed(...)` / `with temp_seed(...)`?
fn under_seed_context(checker: &Checker) -> bool {
    checker.stmt_stack().iter().any(|s| {
        let Stmt::With(w) = s else { return false };
        w.items.iter().any(|i| {
            let target = match &i.context_expr {
                Expr::Call(c) => &*c.func,
                e => e,
            };
            helpers::dotted(target).is_some_and(|t| t.to_ascii_lowercase().contains("seed"))
        })
    })
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if checker.torch_at_least(1, 9) {
        return;
    }
    let Some(q) = name else { return };
    if let Some(loader) = loader_kind(q) {
        if let Some(l) = worker_loader(checker, call, loader) {
            STATE.with_borrow_mut(|s| s.loaders.push(l));
        }
        return;
    }
    let Some(f) = q.strip_prefix("numpy.random.") else {
        return;
    };
    let Some(class) = checker.frame().method_of.filter(|c| c.is_dataset) else {
        return;
    };
    let class = class.def.name.to_string();
    if f == "seed" {
        STATE.with_borrow_mut(|s| s.reseeding.push(class));
        return;
    }
    if NOT_DRAWS.contains(&f) || f.contains('.') {
        return;
    }
    let in_getitem = checker.function().is_some_and(|func| {
        matches!(
            func.name.as_str(),
            "__getitem__" | "__iter__" | "__getitems__"
        )
    });
    if !in_getitem || under_seed_context(checker) {
        return;
    }
    let text = checker.text(call.func.range()).to_string();
    STATE.with_borrow_mut(|s| {
        s.sites.push(Site {
            class,
            call: call.range(),
            text,
        });
    });
}

fn check_end(checker: &mut Checker) {
    let state = STATE.with_borrow_mut(std::mem::take);
    for site in &state.sites {
        if state.reseeding.contains(&site.class) {
            continue;
        }
        let Some(loader) = state
            .loaders
            .iter()
            .find(|l| !l.worker_init && l.may_run(&site.class))
        else {
            continue;
        };
        let message = format!(
            "`{}()` in `{}` draws from NumPy's global generator, which torch < 1.9 does not reseed in DataLoader workers ({}, no `worker_init_fn`): every worker returns the same random values, epoch after epoch",
            site.text,
            site.class,
            loader.workers_text()
        );
        checker.report(site.call, message).add_related(
            loader.call,
            "the DataLoader whose workers share the NumPy state",
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::settings::Version;
    use crate::{LintSettings, Linter};
    use torchvet_python::SourceFile;

    const SRC: &str = concat!(
        "import numpy as np\n",
        "from torch.utils.data import DataLoader, Dataset\n",
        "class DS(Dataset):\n",
        "    def __getitem__(self, i):\n",
        "        return np.random.rand()\n",
        "loader = DataLoader(DS(), num_workers=4)\n",
    );

    fn count(target: Option<Version>) -> usize {
        let mut settings = LintSettings::only("numpy-rng-in-dataset-without-worker-seed");
        settings.target_torch = target;
        let linter = Linter::new(settings);
        let file = SourceFile::from_python("ds.py", SRC.to_string());
        linter.lint(&file, "ds.py").len()
    }

    #[test]
    fn only_torch_before_1_9_is_affected() {
        assert_eq!(count(Some(Version::new(1, 8))), 1);
        assert_eq!(count(Some(Version::new(1, 9))), 0);
        assert_eq!(count(None), 0);
    }
}

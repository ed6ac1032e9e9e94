use crate::checker::Checker;
use crate::registry::Severity;
use crate::rules::facts::{load_info, site, weights_only_failure, weights_only_in_effect};
use ruff_python_ast::ExprCall;
use ruff_text_size::Ranged;
use torchvet_semantic::saves::RejectedKind;

crate::declare_rule! {
    /// ## What it does
    /// Checks `torch.load` calls that use the weights-only unpickler (`weights_only=True`, or
    /// no `weights_only` when the target torch is 2.6 or later, where it is the default)
    /// against the project's own `torch.save` calls for that checkpoint, in any file. It
    /// reports a load whose checkpoint holds an object the weights-only unpickler rejects: a
    /// whole `nn.Module`, an optimizer or scheduler object (not its `state_dict()`), a
    /// `GradScaler`, an `argparse.Namespace` (`args`), a NumPy value, or an instance of one of
    /// the project's classes (a vocabulary, a config object). The message names the object,
    /// its key and the save.
    ///
    /// A load is paired with the saves it may read: the same path (a literal, a module-level
    /// constant such as `config.MODEL_PATH`, a format template, a file name joined to a
    /// directory), a save helper and a load helper of the same module that both take the
    /// path, saves whose keys include every key the load reads (here, or in the callers of a
    /// load helper), or, for a load used as a model, saves of whole modules. A save helper
    /// that saves its parameter is resolved through its callers. Pairings by keys alone must
    /// all fail; when the load tests whether a key it reads is there (`if "model" in sd:
    /// sd = sd["model"]`, a load that takes a bare state dict or a training checkpoint),
    /// every save of the project holding those keys must fail, not only the nearest, and when
    /// the program also saves bare weights (`torch.save(model.state_dict(), path)`), the keys
    /// are no evidence of which file it reads and it is not reported. Saves and loads
    /// pair only within one program: files of one directory (or one above the other's), or
    /// files connected through the project's imports; the independent code bases of a
    /// collection repository never pair. The retry without `weights_only` in the `except
    /// TypeError:` of a `try: torch.load(p, weights_only=True)` runs only on a torch older
    /// than 1.13 and is not reported. Projects that allow-list classes with
    /// `torch.serialization.add_safe_globals` / `safe_globals` are not checked.
    ///
    /// Without a bounded torch version (none declared, or only a lower bound such as
    /// `torch>=2.0`) the target is the latest torch, where `weights_only=True` is the
    /// default: a load without the argument is then reported as a warning (the project may
    /// well run on an older torch); explicit `weights_only=True`, and targets declared up to
    /// 2.6 or later (`torch==2.6.*`, `--target-torch 2.7`), are critical.
    ///
    /// ## Why is this bad?
    /// The load raises `_pickle.UnpicklingError: Weights only load failed ... Unsupported
    /// global` on every checkpoint the project writes: evaluation, inference and resume
    /// scripts that worked before torch 2.6 stop at their first line of real work.
    ///
    /// ## Example
    /// ```python
    /// # train.py
    /// torch.save({"model": model.state_dict(), "args": args}, "ckpt.pt")
    /// # evaluate.py
    /// ckpt = torch.load("ckpt.pt", weights_only=True)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// # train.py
    /// torch.save({"model": model.state_dict(), "args": vars(args)}, "ckpt.pt")
    /// # evaluate.py
    /// ckpt = torch.load("ckpt.pt", weights_only=True)
    /// ```
    ///
    /// ## Fix safety
    /// No fix is applied: the remedy changes what the checkpoint holds at the save (often in
    /// another file) and what the loading code reads from it (`vars(args)` is a dict, not a
    /// Namespace), or allow-lists classes for the unpickler; existing checkpoint files keep
    /// the old content.
    ///
    /// ## Known problems
    /// Content that goes through containers built elsewhere, or objects whose kind the
    /// project does not show, are not known and not reported.
    ///
    /// ## References
    /// - [torch.load](https://pytorch.org/docs/stable/generated/torch.load.html)
    /// - [Serialization semantics: weights_only](https://pytorch.org/docs/stable/notes/serialization.html#weights-only)
    /// - [torch.serialization.add_safe_globals](https://pytorch.org/docs/stable/notes/serialization.html#torch.serialization.add_safe_globals)
    pub(crate) static CHECKPOINT_FAILS_WEIGHTS_ONLY_LOAD = {
        name: "checkpoint-fails-weights-only-load",
        code: "TV127",
        group: Correctness,
        severity: Critical,
        title: "torch.load with weights_only (explicit, or the torch >= 2.6 default) of a checkpoint the project saves with objects the weights-only unpickler rejects",
        autofix: Suggest,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if !name.is_some_and(torchvet_semantic::helpers::is_torch_load) {
        return;
    }
    let Some(explicit) = weights_only_in_effect(checker, call) else {
        return;
    };
    if checker.mentions("safe_globals") {
        return;
    }
    let Some(info) = load_info(checker, call) else {
        return;
    };
    let p = &info.project;
    if p.model.allows_safe_globals() {
        return;
    }
    let Some(failure) = weights_only_failure(&info) else {
        return;
    };
    let paired = failure.pair;
    let kind = &failure.kind;
    let save = paired.call(&p.model);
    let what = match (&failure.key, failure.from_use) {
        (Some(k), _) => format!("{} under \"{k}\"", kind.describe()),
        (None, true) => format!(
            "{} (this code uses what it loads as a model)",
            kind.describe()
        ),
        (None, false) => kind.describe(),
    };
    let save_file = paired.func.file;
    let where_ = site(p, save_file, save.call);
    let mode = if explicit {
        "`weights_only=True`".to_string()
    } else {
        match checker.settings.target_torch {
            Some(v) => format!("the weights-only default of torch 2.6+ (target torch {v})"),
            None => "the weights-only default of torch 2.6+ (target: latest torch)".to_string(),
        }
    };
    let remedy = match kind {
        RejectedKind::Namespace => "save `vars(args)` instead".to_string(),
        RejectedKind::CustomClass(c) => format!(
            "save plain data (a dict, a list of strings) instead, or allow-list `{c}` with `torch.serialization.add_safe_globals`"
        ),
        k => format!("{} instead", k.remedy()),
    };
    let message = format!(
        "this load uses {mode} but the checkpoint saved at {where_} holds {what}, which the weights-only unpickler rejects (`UnpicklingError`): {remedy}"
    );
    let origin = paired.content.origin;
    let undeclared = !explicit && checker.settings.target_torch.is_none();
    let d = checker.report(call.range(), message);
    if undeclared {
        d.set_severity(Severity::Warning);
    }
    if save_file == p.file {
        d.add_related(save.call, "the checkpoint is written here");
    } else {
        d.add_remote(p, save_file, save.call, "the checkpoint is written here");
    }
    if let Some((file, range)) = origin {
        if file == p.file {
            d.add_related(
                range,
                format!("{} is passed to the save here", kind.describe()),
            );
        } else {
            d.add_remote(
                p,
                file,
                range,
                format!("{} is passed to the save here", kind.describe()),
            );
        }
    }
}

use crate::checker::Checker;
use crate::fix::{add_keyword_argument, RawFix};
use ruff_python_ast::ExprCall;
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `torch.load(...)` calls that do not pass `weights_only`.
    ///
    /// ## Why is this bad?
    /// Before torch 2.6, `torch.load` unpickles whatever the file contains, and unpickling
    /// runs code: a checkpoint downloaded from the internet can execute arbitrary commands on
    /// the machine that loads it. `weights_only=True` restricts loading to tensors, primitive
    /// containers and allow-listed types. Torch 2.6 made `True` the default, so code that
    /// relies on the old default also breaks on upgrade.
    ///
    /// ## Example
    /// ```python
    /// state = torch.load(ckpt_path, map_location="cpu")
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// state = torch.load(ckpt_path, map_location="cpu", weights_only=True)
    /// ```
    ///
    /// ## Fix safety
    /// The fix adds `weights_only=True`. When the target torch is 2.6 or later (the default
    /// target), that is the default already and the fix only makes it explicit: safe. For an
    /// older target it changes behaviour (checkpoints holding custom classes stop loading until
    /// they are registered with `torch.serialization.add_safe_globals`), so it is unsafe.
    ///
    /// ## References
    /// - [torch.load](https://pytorch.org/docs/stable/generated/torch.load.html)
    /// - [Serialization semantics: weights_only](https://pytorch.org/docs/stable/notes/serialization.html)
    pub(crate) static TORCH_LOAD_WITHOUT_WEIGHTS_ONLY = {
        name: "torch-load-without-weights-only",
        code: "TV007",
        group: Security,
        severity: Critical,
        title: "torch.load without weights_only=True (pickle can run arbitrary code)",
        autofix: Yes,
        torchfix: ["TOR102"],
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if !matches!(name, Some("torch.load" | "torch.serialization.load")) {
        return;
    }
    if helpers::keyword(call, "weights_only").is_some() || helpers::has_kwargs_splat(call) {
        return;
    }
    let edit = add_keyword_argument(call, "weights_only=True");
    let fix = if checker.torch_at_least(2, 6) {
        RawFix::safe("Add `weights_only=True`", vec![edit])
    } else {
        RawFix::unsafe_edit(
            "Add `weights_only=True` (changes behaviour before torch 2.6)",
            vec![edit],
        )
    };
    checker
        .report(
            call.func.range(),
            "`torch.load` without `weights_only=True` unpickles arbitrary objects: a malicious checkpoint runs code when loaded",
        )
        .set_fix(fix);
}

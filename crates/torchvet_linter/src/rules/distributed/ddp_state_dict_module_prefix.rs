use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::style::values::{module_kind, with_frame, ModuleKind};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `torch.save` of the `state_dict()` of a `DataParallel`,
    /// `DistributedDataParallel` or `torch.compile` wrapper, directly or as a value of a dict
    /// that is saved.
    ///
    /// ## Why is this bad?
    /// A wrapper holds the real model as a submodule, so every key of its state dict carries a
    /// prefix: `module.` for DataParallel/DDP, `_orig_mod.` for `torch.compile`. Loading such a
    /// checkpoint into the bare model (for evaluation, export or fine-tuning on one GPU)
    /// fails with "Missing key(s) / Unexpected key(s) in state_dict". Saving the inner model's
    /// state dict gives checkpoints that load anywhere.
    ///
    /// The receiver must be bound to the wrapper in the same function (or module), e.g.
    /// `model = DDP(model, ...)`; `model.module if hasattr(model, "module") else model` and
    /// other unwrapping stays silent. It also stays silent when the project's own loads take
    /// the prefixed keys: every `load_state_dict` of a model in the project loads into a
    /// model wrapped the same way (`model = nn.DataParallel(model)` before
    /// `model.load_state_dict(torch.load(path))`), or some file strips the prefix
    /// (`k.replace("module.", "")`, `consume_prefix_in_state_dict_if_present`; for
    /// `torch.compile`, a `"_orig_mod."` prefix). The loads of the very path a save writes
    /// decide for that save: when every `m.load_state_dict(torch.load(path))` that reads what
    /// it writes loads into a wrapped model, the save is silent even if another checkpoint of
    /// the project (another cell of a notebook) goes into a bare model. In the save's own
    /// script or notebook, a load reads the file only after the save and before the next save
    /// of the same path.
    ///
    /// ## Example
    /// ```python
    /// model = DDP(model, device_ids=[rank])
    /// torch.save(model.state_dict(), "ckpt.pt")
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model = DDP(model, device_ids=[rank])
    /// torch.save(model.module.state_dict(), "ckpt.pt")
    /// ```
    ///
    /// ## Fix safety
    /// The fix inserts `.module` (or `._orig_mod`) before `.state_dict()`. The keys of the
    /// written checkpoint change, so code that loads it back into a wrapped model must change
    /// too: unsafe.
    ///
    /// ## References
    /// - [Saving and loading models: DataParallel](https://pytorch.org/tutorials/beginner/saving_loading_models.html#saving-torch-nn-dataparallel-models)
    /// - [pytorch/pytorch#3805](https://github.com/pytorch/pytorch/issues/3805)
    pub(crate) static DDP_STATE_DICT_MODULE_PREFIX = {
        name: "ddp-state-dict-module-prefix",
        code: "TV049",
        group: Distributed,
        severity: Warning,
        title: "Saving a DataParallel/DDP/compiled wrapper's state_dict (keys prefixed 'module.'/'_orig_mod.')",
        autofix: Yes,
        hooks: { call: check_call },
    };
}

/// `X.state_dict()` calls in a saved object: the object itself, dict display values, `dict(...)`
/// keyword values (one level of nesting).
fn state_dict_calls<'b>(expr: &'b Expr, depth: u32, out: &mut Vec<&'b ExprCall>) {
    match expr {
        Expr::Call(c) => {
            if let Some(("state_dict", _)) = helpers::method_call(c) {
                if c.arguments.is_empty() {
                    out.push(c);
                }
            } else if depth < 2 && helpers::name_of(&c.func) == Some("dict") {
                for k in &c.arguments.keywords {
                    state_dict_calls(&k.value, depth + 1, out);
                }
            }
        }
        Expr::Dict(d) if depth < 2 => {
            for item in &d.items {
                state_dict_calls(&item.value, depth + 1, out);
            }
        }
        _ => {}
    }
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if !name.is_some_and(torchvet_semantic::helpers::is_torch_save) {
        return;
    }
    let Some(obj) = helpers::argument(call, "obj", 0) else {
        return;
    };
    let mut calls = Vec::new();
    state_dict_calls(obj, 0, &mut calls);
    if calls.is_empty() {
        return;
    }
    let found: Vec<(&ExprCall, ModuleKind)> = with_frame(checker, |env| {
        calls
            .iter()
            .filter_map(|c| {
                let (_, receiver) = helpers::method_call(c)?;
                let kind = module_kind(checker, env, receiver)?;
                matches!(
                    kind,
                    ModuleKind::DataParallel | ModuleKind::Ddp | ModuleKind::Compiled
                )
                .then_some((*c, kind))
            })
            .collect()
    });
    if found.is_empty() {
        return;
    }
    // The project's own loads take the prefixed keys: it loads state dicts only into wrapped
    // models, or strips the prefix when loading.
    let (prefixed_ok, compiled_ok) = checker.project_or_file().map_or((false, false), |p| {
        (
            p.model.loads_wrapper_prefixed_state_dicts(),
            p.model.strips_compile_prefix(),
        )
    });
    // The loads of the path this save writes, judged on their own: a checkpoint that only
    // goes back into wrapped models loads fine whatever other checkpoints of the project do
    // (a notebook that also loads another file into a bare model).
    let pair_ok = checker.project_or_file().and_then(|p| {
        let func = crate::rules::facts::current_function(checker, p)?;
        let save = p
            .model
            .function(func)
            .facts
            .saves
            .iter()
            .find(|s| s.call == call.range())?;
        let loads = p
            .model
            .state_dict_loads_of_path(func, save.call, &save.path);
        (!loads.is_empty()).then(|| loads.iter().all(|w| *w))
    });
    for (sd, kind) in found {
        let handled = match kind {
            ModuleKind::Compiled => compiled_ok,
            _ => prefixed_ok || pair_ok == Some(true),
        };
        if handled {
            continue;
        }
        let Some((_, receiver)) = helpers::method_call(sd) else {
            continue;
        };
        let recv = checker.text(receiver.range());
        let recv = if recv.len() <= 40 && !recv.contains('\n') {
            recv
        } else {
            "the model"
        };
        let (wrapper, prefix, inner) = match kind {
            ModuleKind::DataParallel => ("a DataParallel wrapper", "module.", "module"),
            ModuleKind::Ddp => ("a DistributedDataParallel wrapper", "module.", "module"),
            _ => ("a torch.compile wrapper", "_orig_mod.", "_orig_mod"),
        };
        checker
            .report(
                sd.range(),
                format!("`{recv}` is {wrapper}: every key of its saved state_dict starts with `{prefix}`, so loading it into the bare model fails with missing/unexpected keys"),
            )
            .set_fix(RawFix::unsafe_edit(
                format!("Save `{recv}.{inner}.state_dict()`"),
                vec![RawEdit::insert(receiver.end(), format!(".{inner}"))],
            ));
    }
}

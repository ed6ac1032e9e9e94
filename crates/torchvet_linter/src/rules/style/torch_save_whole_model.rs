use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::style::values::{module_kind, project_module, with_frame};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `torch.save(model, ...)` where `model` is an `nn.Module` (rather than its
    /// `state_dict()`), including a module stored as a value of a saved dict.
    ///
    /// ## Why is this bad?
    /// Saving a module pickles the object, and a pickle refers to classes by their import
    /// path: renaming or moving the model class, or loading from another project, breaks the
    /// checkpoint. Since torch 2.6, `torch.load` defaults to `weights_only=True` and refuses
    /// such files unless the caller opts back into unpickling arbitrary code. A state dict
    /// holds only tensors and loads anywhere.
    ///
    /// Only values evidently modules are reported: instances of `nn` classes, of
    /// `nn.Module` subclasses of the same file, torchvision/timm/transformers builders, and
    /// wrappers, bound in the same function; `self` inside a module's method.
    ///
    /// ## Example
    /// ```python
    /// model = Net()
    /// torch.save(model, "model.pt")
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model = Net()
    /// torch.save(model.state_dict(), "model.pt")
    /// # later: model.load_state_dict(torch.load("model.pt", weights_only=True))
    /// ```
    ///
    /// ## Fix safety
    /// A display-only fix shows `model.state_dict()` in place of `model`. It is never applied
    /// automatically: the code that loads the file must change as well.
    ///
    /// ## References
    /// - [Saving and loading models](https://pytorch.org/tutorials/beginner/saving_loading_models.html)
    /// - [torch.load weights_only](https://pytorch.org/docs/stable/notes/serialization.html)
    pub(crate) static TORCH_SAVE_WHOLE_MODEL = {
        name: "torch-save-whole-model",
        code: "TV085",
        group: Style,
        severity: Warning,
        title: "torch.save(model) pickles the whole Module (save its state_dict instead)",
        autofix: Suggest,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if !name.is_some_and(torchvet_semantic::helpers::is_torch_save) {
        return;
    }
    let Some(obj) = helpers::argument(call, "obj", 0) else {
        return;
    };
    let mut candidates: Vec<&Expr> = Vec::new();
    match obj {
        Expr::Dict(d) => candidates.extend(d.items.iter().map(|i| &i.value)),
        Expr::Call(c) if helpers::name_of(&c.func) == Some("dict") => {
            candidates.extend(c.arguments.keywords.iter().map(|k| &k.value));
        }
        e => candidates.push(e),
    }
    candidates.retain(|e| matches!(e, Expr::Name(_) | Expr::Attribute(_)));
    if candidates.is_empty() {
        return;
    }
    let known: Vec<(&Expr, bool)> = with_frame(checker, |env| {
        candidates
            .into_iter()
            .map(|e| (e, module_kind(checker, env, e).is_some()))
            .collect()
    });
    // What the file's syntax does not tell, the project model may (`project_module`).
    let modules: Vec<&Expr> = known
        .into_iter()
        .filter(|&(e, k)| k || project_module(checker, e))
        .map(|(e, _)| e)
        .collect();
    for m in modules {
        let text = checker.text(m.range());
        checker
            .report(
                m.range(),
                format!("`torch.save` pickles the whole module `{text}`: the file breaks when the class moves or is renamed, and needs `weights_only=False` to load on torch 2.6+; save `{text}.state_dict()`"),
            )
            .set_fix(RawFix::display_only(
                format!("Save `{text}.state_dict()`"),
                vec![RawEdit::insert(m.end(), ".state_dict()")],
            ));
    }
}

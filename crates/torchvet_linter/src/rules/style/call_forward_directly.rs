use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::style::values::{module_kind, project_module, with_frame, ModuleKind};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `model.forward(x)` calls on `nn.Module` instances, instead of `model(x)`.
    ///
    /// ## Why is this bad?
    /// Calling the module runs `forward` *and* everything PyTorch attaches around it in
    /// `__call__`: forward pre-hooks and hooks (feature extractors, pruning and quantization
    /// observers, profilers). `forward` called directly skips them, so the hooks silently do
    /// nothing. On a `DistributedDataParallel` / `FullyShardedDataParallel` wrapper, the
    /// gradient synchronisation and parameter gathering live in the wrapper's own `forward`, so
    /// `ddp.forward(x)` still synchronises; what it skips is the hooks registered on the wrapper.
    /// Calling the wrapped module (`ddp.module.forward(x)`, or `ddp.module(x)`) is different:
    /// it runs outside the wrapper, without its synchronisation set-up.
    ///
    /// Only receivers known to be modules are reported: names bound to `nn` constructors,
    /// `nn.Module` subclasses of the same file, torchvision/timm/transformers builders or
    /// DDP/DataParallel/compile wrappers, `self.<attr>` assigned such a module in `__init__`,
    /// and `wrapper.module`; and what the project model knows to be a module: a parameter
    /// every call site passes a module, `self.<attr>` of any class built from a project
    /// module class (an RL agent's `self.policy`). `super().forward(x)` and
    /// `self.forward(x)` stay silent.
    ///
    /// ## Example
    /// ```python
    /// model = ResNet()
    /// outputs = model.forward(images)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model = ResNet()
    /// outputs = model(images)
    /// ```
    ///
    /// ## Fix safety
    /// The fix removes `.forward`. Registered hooks (and wrapper logic) now run, which is the
    /// point but changes behaviour: unsafe.
    ///
    /// ## References
    /// - [torch.nn.Module.forward](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.forward)
    /// - [pytorch/pytorch#20089](https://github.com/pytorch/pytorch/issues/20089)
    pub(crate) static CALL_FORWARD_DIRECTLY = {
        name: "call-forward-directly",
        code: "TV061",
        group: Style,
        severity: Warning,
        title: "model.forward(x) instead of model(x) (skips the module's forward hooks)",
        autofix: Yes,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    let Some(("forward", receiver)) = helpers::method_call(call) else {
        return;
    };
    match receiver {
        Expr::Name(n) if n.id.as_str() == "self" => return,
        Expr::Name(_) | Expr::Attribute(_) => {}
        _ => return,
    }
    // `nn.Linear.forward(self, x)`, `Parent.forward(self, x)`: a class, not an instance.
    if checker.resolve(receiver).is_some() {
        return;
    }
    // A wrapper's `forward` handing everything on (`return self.model.forward(*args,
    // **kwargs)`, as adapters and metric wrappers do) delegates on purpose: the wrapper's
    // own call already ran its hooks.
    let only_splats = !call.arguments.is_empty()
        && call
            .arguments
            .args
            .iter()
            .all(|a| matches!(a, Expr::Starred(_)))
        && call.arguments.keywords.iter().all(|k| k.arg.is_none());
    let delegates = only_splats
        && checker
            .function()
            .is_some_and(|f| f.name.as_str() == "forward");
    if delegates {
        return;
    }
    let kind = with_frame(checker, |env| match receiver {
        Expr::Attribute(a) if a.attr.as_str() == "module" => module_kind(checker, env, &a.value)
            .filter(|k| {
                matches!(
                    k,
                    ModuleKind::Ddp | ModuleKind::DataParallel | ModuleKind::Fsdp
                )
            })
            .map(|k| (k, true)),
        _ => module_kind(checker, env, receiver).map(|k| (k, false)),
    });
    // What the file's syntax does not tell, the project model may: a parameter's kind from
    // its call sites, `self.<attr>` of a plain class (an RL agent's `self.policy =
    // GaussianPolicy(...)` built from another file), a local bound to such an attribute.
    let kind =
        kind.or_else(|| project_module(checker, receiver).then_some((ModuleKind::Plain, false)));
    let Some((kind, inner)) = kind else {
        return;
    };
    let text = checker.text(receiver.range());
    let text = if text.len() <= 40 && !text.contains('\n') {
        text
    } else {
        "the module"
    };
    let msg = match (kind, inner) {
        (ModuleKind::Ddp | ModuleKind::Fsdp, false) => format!(
            "`{text}.forward(...)` bypasses the DDP/FSDP wrapper's `__call__`: the forward hooks and pre-hooks registered on the wrapper do not run (its gradient synchronisation, which lives in `forward`, still does); call `{text}(...)`"
        ),
        (_, true) => format!(
            "`{text}.forward(...)` skips the inner module's hooks: call `{text}(...)` (and it runs outside the DDP/DataParallel wrapper, without gradient synchronisation: call the wrapper itself when training)"
        ),
        _ => format!("`{text}.forward(...)` skips the module's forward hooks and pre-hooks: call `{text}(...)`"),
    };
    let edit = RawEdit::delete(TextRange::new(receiver.end(), call.func.end()));
    let diagnostic = checker.report(call.func.range(), msg);
    diagnostic.set_fix(RawFix::unsafe_edit(
        "Call the module instead of `.forward`",
        vec![edit],
    ));
}

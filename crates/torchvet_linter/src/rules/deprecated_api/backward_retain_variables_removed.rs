use super::helpers;
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::ExprCall;
use ruff_text_size::Ranged;
use torchvet_semantic::helpers as sem;

crate::declare_rule! {
    /// ## What it does
    /// Checks for the `retain_variables=` keyword of `backward`: `loss.backward(retain_variables=True)`
    /// and `torch.autograd.backward(tensors, retain_variables=True)`.
    ///
    /// ## Why is this bad?
    /// torch 0.2 renamed `retain_variables` to `retain_graph` (it keeps the autograd graph, not
    /// variables, alive after the backward pass) and kept the old name with a deprecation
    /// warning. torch 0.4 removed it: the call now fails with `TypeError: backward() got an
    /// unexpected keyword argument 'retain_variables'`, typically in the first training step
    /// of GAN and multi-loss scripts written for torch 0.1-0.3.
    ///
    /// A method named `backward` of the project's own classes that takes a
    /// `retain_variables` parameter is not reported.
    ///
    /// ## Example
    /// ```python
    /// loss.backward(retain_variables=True)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// loss.backward(retain_graph=True)
    /// ```
    ///
    /// ## Fix safety
    /// The fix renames the keyword to `retain_graph`, the parameter the old name was an alias
    /// of: the same value keeps the graph alive exactly as before. Safe.
    ///
    /// ## References
    /// - [torch.Tensor.backward](https://pytorch.org/docs/stable/generated/torch.Tensor.backward.html)
    /// - [pytorch#2107: retain_variables -> retain_graph](https://github.com/pytorch/pytorch/pull/2107)
    pub(crate) static BACKWARD_RETAIN_VARIABLES_REMOVED = {
        name: "backward-retain-variables-removed",
        code: "TV130",
        group: DeprecatedApi,
        severity: Critical,
        title: "backward(retain_variables=...) (removed in torch 0.4: TypeError; the keyword is retain_graph)",
        autofix: Yes,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let Some(kw) = call.arguments.find_keyword("retain_variables") else {
        return;
    };
    let is_backward = match name {
        Some(q) => matches!(q, "torch.autograd.backward" | "torch.autograd.grad"),
        None => matches!(sem::method_call(call), Some(("backward", _))),
    };
    if !is_backward || !helpers::active(checker, 0, 4) {
        return;
    }
    if call.arguments.find_keyword("retain_graph").is_some() || own_backward_takes_it(checker, call)
    {
        return;
    }
    let Some(arg) = &kw.arg else { return };
    checker
        .report(
            kw.range(),
            "`retain_variables=` was removed in torch 0.4 (`TypeError: backward() got an unexpected keyword argument`): the keyword is `retain_graph=`",
        )
        .set_fix(RawFix::safe(
            "Rename to `retain_graph=`",
            vec![RawEdit::replace(arg.range(), "retain_graph")],
        ));
}

/// Is the receiver an instance of a project class whose own `backward` method takes
/// `retain_variables` (the project's API, not torch's)?
fn own_backward_takes_it(checker: &Checker, call: &ExprCall) -> bool {
    use torchvet_semantic::project::{ClassRef, Entity};
    let Some((_, recv)) = sem::method_call(call) else {
        return false;
    };
    let Some(p) = checker.project_or_file() else {
        return false;
    };
    let Some(func) = crate::rules::facts::current_function(checker, p) else {
        return false;
    };
    let takes_it = |c| {
        p.model.method(c, "backward", 0).is_some_and(|m| {
            p.model
                .function(m)
                .params
                .iter()
                .any(|n| &**n == "retain_variables")
        })
    };
    let Some(name) = sem::name_of(recv) else {
        return false;
    };
    if name == "self" {
        return p.model.class_of(func).is_some_and(takes_it);
    }
    let g = p.model.function(func);
    if let Some(i) = g.params.iter().position(|n| &**n == name) {
        return matches!(p.model.param(func, i).class, Some(ClassRef::Project(c)) if takes_it(c));
    }
    let Some((at, bindings)) = p.model.bindings_of(func, name) else {
        return false;
    };
    bindings.iter().any(|b| {
        b.project
            && p.model
                .function(at)
                .calls
                .iter()
                .find(|c| c.range == b.call)
                .and_then(|c| p.model.callee_entity(at, &c.callee))
                .is_some_and(|e| matches!(e, Entity::Class(c) if takes_it(c)))
    })
}

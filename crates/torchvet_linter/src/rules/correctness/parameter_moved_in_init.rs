use super::helpers::is_parameter_class;
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `self.p = nn.Parameter(...).cuda()` (or `.to(...)`, `.double()`, ...) in the
    /// methods of an `nn.Module`, including `setattr(self, name, ...)` and
    /// `self.params.append(...)` with such a value.
    ///
    /// ## Why is this bad?
    /// `Parameter.cuda()` and friends return a plain `Tensor` (the result of an autograd op),
    /// not a `Parameter`. The module stores it as an ordinary attribute: it is not in
    /// `model.parameters()`, so the optimizer never updates it, and it is missing from
    /// `state_dict()`. Nothing warns; the value just stays at its initialisation.
    ///
    /// A conversion that changes nothing returns the Parameter itself and is not reported:
    /// `nn.Parameter(torch.ones(n)).float()` on float32 data (no `dtype=`, and the file does
    /// not change the default dtype).
    ///
    /// ## Example
    /// ```python
    /// self.alpha = nn.Parameter(torch.randn(1)).cuda()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// self.alpha = nn.Parameter(torch.randn(1))  # model.to(device) moves it
    /// ```
    ///
    /// ## Fix safety
    /// The fix moves the call inside: `nn.Parameter(torch.randn(1).cuda())`, so the value
    /// keeps its device and dtype and is registered. The parameter then starts being trained
    /// and saved, which changes results, so the fix is unsafe.
    ///
    /// ## References
    /// - [torch.nn.parameter.Parameter](https://pytorch.org/docs/stable/generated/torch.nn.parameter.Parameter.html)
    /// - [pytorch issue 17484](https://github.com/pytorch/pytorch/issues/17484)
    /// - [pytorch issue 94828](https://github.com/pytorch/pytorch/issues/94828)
    pub(crate) static PARAMETER_MOVED_IN_INIT = {
        name: "parameter-moved-in-init",
        code: "TV020",
        group: Correctness,
        severity: Critical,
        title: "self.p = nn.Parameter(...).cuda()/.to(...): the result is a plain Tensor, not registered",
        autofix: Yes,
        hooks: { stmt: check_stmt },
    };
}

const MOVES: &[&str] = &[
    "cuda", "to", "cpu", "double", "half", "float", "bfloat16", "type",
];

/// `nn.Parameter(x).cuda()`: the outer call and the Parameter call.
fn moved_parameter<'a>(checker: &Checker, value: &'a Expr) -> Option<(&'a ExprCall, &'a ExprCall)> {
    let Expr::Call(outer) = value else {
        return None;
    };
    let (method, receiver) = helpers::method_call(outer)?;
    if !MOVES.contains(&method) {
        return None;
    }
    let Expr::Call(param) = receiver else {
        return None;
    };
    let q = checker.resolve(&param.func)?;
    is_parameter_class(&q).then_some((outer, param))
}

/// Factories that build a tensor of the default dtype (float32) when no `dtype=` is given.
const FLOAT_FACTORIES: &[&str] = &[
    "torch.ones",
    "torch.zeros",
    "torch.randn",
    "torch.rand",
    "torch.empty",
    "torch.eye",
    "torch.Tensor",
    "torch.FloatTensor",
];

/// `nn.Parameter(torch.ones(n)).float()`: the data is float32 already, so `Tensor.float()`
/// returns the Parameter itself (a no-op), which stays registered. Not when the file changes
/// the default dtype.
fn float32_already(checker: &Checker, param: &ExprCall) -> bool {
    if checker.mentions("set_default_dtype") || checker.mentions("set_default_tensor_type") {
        return false;
    }
    let Some(Expr::Call(data)) = helpers::argument(param, "data", 0) else {
        return false;
    };
    helpers::keyword(data, "dtype").is_none()
        && checker
            .resolve(&data.func)
            .is_some_and(|q| FLOAT_FACTORIES.contains(&q.as_str()))
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    if checker.module_method().is_none() {
        return;
    }
    let value: &Expr = match stmt {
        Stmt::Assign(a)
            if a.targets
                .iter()
                .any(|t| helpers::self_attribute(t).is_some()) =>
        {
            &a.value
        }
        Stmt::AnnAssign(a) if helpers::self_attribute(&a.target).is_some() => {
            match a.value.as_deref() {
                Some(v) => v,
                None => return,
            }
        }
        Stmt::Expr(e) => {
            let Expr::Call(call) = &*e.value else { return };
            match &*call.func {
                // setattr(self, name, value)
                Expr::Name(n)
                    if n.id.as_str() == "setattr"
                        && call.arguments.args.len() == 3
                        && helpers::name_of(&call.arguments.args[0]) == Some("self") =>
                {
                    &call.arguments.args[2]
                }
                // self.params.append(value)
                Expr::Attribute(a)
                    if a.attr.as_str() == "append"
                        && helpers::self_attribute(&a.value).is_some()
                        && call.arguments.args.len() == 1 =>
                {
                    &call.arguments.args[0]
                }
                _ => return,
            }
        }
        _ => return,
    };
    let Some((outer, param)) = moved_parameter(checker, value) else {
        return;
    };
    let Some((method, _)) = helpers::method_call(outer) else {
        return;
    };
    if method == "float" && float32_already(checker, param) {
        return;
    }
    let mut fix = None;
    // nn.Parameter(x).cuda() -> nn.Parameter(x.cuda())
    if param.arguments.args.len() == 1 && !helpers::has_args_splat(param) {
        let inner = &param.arguments.args[0];
        let suffix = checker.text(TextRange::new(param.end(), outer.end()));
        let atom = matches!(
            inner,
            Expr::Name(_) | Expr::Attribute(_) | Expr::Call(_) | Expr::Subscript(_)
        );
        let mut edits = vec![RawEdit::delete(TextRange::new(param.end(), outer.end()))];
        if atom {
            edits.push(RawEdit::insert(inner.end(), suffix));
        } else {
            edits.push(RawEdit::insert(inner.start(), "("));
            edits.push(RawEdit::insert(inner.end(), format!("){suffix}")));
        }
        fix = Some(RawFix::unsafe_edit(
            format!("Move `{suffix}` inside the Parameter"),
            edits,
        ));
    }
    let diag = checker.report(
        outer.range(),
        format!("`Parameter.{method}(...)` returns a plain Tensor, not a Parameter: it is not registered, so the optimizer never updates it and it is missing from state_dict()"),
    );
    if let Some(fix) = fix {
        diag.set_fix(fix);
    }
}

use super::helpers;
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Operator, Stmt, UnaryOp};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers as sem;

crate::declare_rule! {
    /// ## What it does
    /// Checks for other deprecated torch APIs: `torch.nn.utils.weight_norm` (2.1),
    /// `torch.backends.cuda.sdp_kernel` (2.3), `functorch` (2.0, now `torch.func`),
    /// `torch.testing.assert_allclose` (1.12), `torch.utils._pytree._register_pytree_node`
    /// (2.2), `torch.TypedStorage` and `Tensor.storage()` (2.0),
    /// `Module.register_backward_hook` (1.8), the `add_(scalar, tensor)` /
    /// `addcmul_(scalar, a, b)` overloads (1.5) and `torchvision.transforms.v2.ToTensor`.
    ///
    /// ## Why is this bad?
    /// Each of these warns when used and has a documented replacement; several are slated for
    /// removal. Some old forms are also subtly wrong: `register_backward_hook` reports gradients
    /// of the module's last operation only, not of its inputs.
    ///
    /// ## Example
    /// ```python
    /// p.data.add_(-lr, p.grad)
    /// from functorch import vmap
    /// conv = nn.utils.weight_norm(nn.Conv1d(8, 8, 3))
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// p.data.add_(p.grad, alpha=-lr)
    /// from torch.func import vmap
    /// conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(8, 8, 3))
    /// ```
    ///
    /// ## Fix safety
    /// Safe fixes: `add_(a, t)` -> `add_(t, alpha=a)` (and `sub_`, `addcmul_`, `addcdiv_`
    /// with `value=`), which is what the deprecated overload computes; `from functorch import
    /// vmap, grad, ...` -> `from torch.func import ...` and `functorch.vmap` -> `torch.func.vmap`
    /// for the functions `torch.func` provides unchanged; `_register_pytree_node(cls, flatten,
    /// unflatten)` -> `register_pytree_node(...)`; `v2.ToTensor()` -> `v2.Compose([v2.ToImage(),
    /// v2.ToDtype(torch.float32, scale=True)])`. Unsafe fixes (behaviour differs):
    /// `weight_norm` -> `parametrizations.weight_norm` (state-dict keys change),
    /// `assert_allclose` -> `assert_close` (stricter dtype checks), `register_backward_hook` ->
    /// `register_full_backward_hook`, `storage()` -> `untyped_storage()` (byte-based sizes).
    /// `sdp_kernel` and `TypedStorage` have no automatic fix. A safe rewrite to an API newer
    /// than the lowest torch (or torchvision, for `v2.ToImage`: 0.16) the project declares or
    /// documents is offered as unsafe.
    ///
    /// ## References
    /// - [torch.nn.utils.parametrizations.weight_norm](https://pytorch.org/docs/stable/generated/torch.nn.utils.parametrizations.weight_norm.html)
    /// - [torch.nn.attention.sdpa_kernel](https://pytorch.org/docs/stable/generated/torch.nn.attention.sdpa_kernel.html)
    /// - [Migrating from functorch to torch.func](https://pytorch.org/docs/stable/func.migrating.html)
    /// - [torch.testing.assert_close](https://pytorch.org/docs/stable/testing.html)
    /// - [Module.register_full_backward_hook](https://pytorch.org/docs/stable/generated/torch.nn.Module.html)
    pub(crate) static DEPRECATED_API_MISC = {
        name: "deprecated-api-misc",
        code: "TV100",
        group: DeprecatedApi,
        severity: Info,
        title: "Other deprecated APIs (weight_norm, sdp_kernel, functorch, assert_allclose, storage(), add_(scalar, tensor), v2.ToTensor, ...)",
        autofix: Yes,
        torchfix: ["TOR101", "TOR103", "TOR202"],
        hooks: { stmt: check_import, expr: check_reference, expr_on: crate::registry::ExprKinds::REFERENCE, end: helpers::bindings::clear },
    };
}

/// functorch functions that `torch.func` provides under the same name and signature.
const FUNC_SAME: &[&str] = &[
    "vmap",
    "grad",
    "grad_and_value",
    "vjp",
    "jvp",
    "jacrev",
    "jacfwd",
    "hessian",
    "functionalize",
];

const NAMES: &[&str] = &[
    "weight_norm",
    "sdp_kernel",
    "assert_allclose",
    "_register_pytree_node",
    "TypedStorage",
    "ToTensor",
];

/// (since, replacement) of a deprecated qualified name.
fn deprecated(q: &str) -> Option<((u32, u32), &'static str)> {
    Some(match q {
        "torch.nn.utils.weight_norm" | "torch.nn.utils.weight_norm.weight_norm" => {
            ((2, 1), "torch.nn.utils.parametrizations.weight_norm")
        }
        "torch.backends.cuda.sdp_kernel" => ((2, 3), "torch.nn.attention.sdpa_kernel"),
        "torch.testing.assert_allclose" => ((1, 12), "torch.testing.assert_close"),
        "torch.utils._pytree._register_pytree_node" => {
            ((2, 2), "torch.utils._pytree.register_pytree_node")
        }
        "torch.TypedStorage" | "torch.storage.TypedStorage" => {
            ((2, 0), "torch.UntypedStorage / Tensor.untyped_storage()")
        }
        "torchvision.transforms.v2.ToTensor" => (
            (0, 0),
            "v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])",
        ),
        _ => return None,
    })
}

fn check_import(checker: &mut Checker, stmt: &Stmt) {
    if matches!(stmt, Stmt::Import(_) | Stmt::ImportFrom(_)) {
        helpers::note_imports(checker, stmt, NAMES);
    }
    if !matches!(stmt, Stmt::Import(_) | Stmt::ImportFrom(_)) {
        return;
    }
    let names = helpers::imported_names(stmt);
    // functorch: the whole `from functorch import ...` is rewritten when every name is in torch.func.
    if let Stmt::ImportFrom(imp) = stmt {
        if let Some(module) = imp
            .module
            .as_ref()
            .filter(|m| m.as_str() == "functorch" && imp.level == 0)
        {
            if !helpers::active(checker, 2, 0) {
                return;
            }
            let all_same = names.iter().all(|n| FUNC_SAME.contains(&n.member.as_str()));
            let import_fix = checker.fix_needs_torch(
                RawFix::safe(
                    "Import from `torch.func`",
                    vec![RawEdit::replace(module.range, "torch.func")],
                ),
                2,
                0,
            );
            let mut first = true;
            for n in &names {
                let d = checker.report(
                    n.range,
                    format!(
                        "`functorch.{}` is deprecated since torch 2.0: use `torch.func.{}`",
                        n.member, n.member
                    ),
                );
                if first && all_same {
                    d.set_fix(import_fix.clone());
                }
                first = false;
            }
            return;
        }
    }
    for n in names {
        if n.qualified == "functorch" || n.qualified.starts_with("functorch.") {
            if helpers::active(checker, 2, 0) {
                checker.report(
                    n.range,
                    "`functorch` is deprecated since torch 2.0: use `torch.func`",
                );
            }
            continue;
        }
        if !matches!(stmt, Stmt::ImportFrom(_)) {
            continue;
        }
        if let Some(((major, minor), replacement)) = deprecated(&n.qualified) {
            if helpers::active(checker, major, minor) {
                let fix = helpers::same_module_rename(&n.qualified, replacement)
                    .and_then(|new| helpers::rename_imported_member(checker, &n, new))
                    .map(|f| checker.fix_needs_torch(f, major, minor));
                let d = checker.report(
                    n.range,
                    format!("`{}` is deprecated: use `{replacement}`", n.qualified),
                );
                if let Some(fix) = fix {
                    d.set_fix(fix);
                }
            }
        }
    }
}

fn check_reference(checker: &mut Checker, expr: &Expr) {
    // Method forms (`p.add_(-lr, g)`, `m.register_backward_hook(h)`, `t.storage()`), seen at
    // their callee.
    if let Expr::Attribute(a) = expr {
        if matches!(
            a.attr.as_str(),
            "add_" | "sub_" | "addcmul_" | "addcdiv_" | "register_backward_hook" | "storage"
        ) {
            if let Some(call) = helpers::callee_of(checker, expr) {
                let name = checker.resolve(&call.func);
                check_method(checker, call, name.as_deref());
            }
            return;
        }
    }
    if let Expr::Attribute(a) = expr {
        if FUNC_SAME.contains(&a.attr.as_str()) || a.attr.as_str() == "make_functional" {
            check_functorch_attribute(checker, expr);
            return;
        }
    }
    let Some(q) = helpers::reference_to(checker, expr, NAMES) else {
        return;
    };
    let Some(((major, minor), replacement)) = deprecated(&q) else {
        return;
    };
    if !helpers::active(checker, major, minor) {
        return;
    }
    let call = helpers::callee_of(checker, expr);
    let fix = reference_fix(checker, expr, &q, call).map(|f| {
        if q == "torchvision.transforms.v2.ToTensor" {
            // `v2.ToImage` / `v2.ToDtype(..., scale=True)`: torchvision 0.16.
            checker.fix_needs_torchvision(f, 0, 16)
        } else {
            checker.fix_needs_torch(f, major, minor)
        }
    });
    let text = checker.text(expr.range()).to_string();
    let d = checker.report(
        expr.range(),
        format!("`{text}` is deprecated: use `{replacement}`"),
    );
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

fn reference_fix(
    checker: &Checker,
    expr: &Expr,
    q: &str,
    call: Option<&ExprCall>,
) -> Option<RawFix> {
    let Expr::Attribute(a) = expr else {
        return None;
    };
    match q {
        "torch.nn.utils.weight_norm" => Some(RawFix::unsafe_edit(
            "Use `parametrizations.weight_norm` (the state-dict keys change)",
            vec![RawEdit::replace(
                a.attr.range,
                "parametrizations.weight_norm",
            )],
        )),
        "torch.testing.assert_allclose" => Some(RawFix::unsafe_edit(
            "Use `assert_close` (stricter dtype and device checks)",
            vec![RawEdit::replace(a.attr.range, "assert_close")],
        )),
        "torch.utils._pytree._register_pytree_node" => {
            let call = call?;
            if call.arguments.args.len() > 3
                || !call.arguments.keywords.is_empty()
                || sem::has_args_splat(call)
            {
                return None;
            }
            Some(RawFix::safe(
                "Use `register_pytree_node`",
                vec![RawEdit::replace(a.attr.range, "register_pytree_node")],
            ))
        }
        "torchvision.transforms.v2.ToTensor" => {
            let call = call?;
            if !call.arguments.is_empty() {
                return None;
            }
            let torch = helpers::torch_alias(checker)?;
            let v2 = checker.text(a.value.range());
            let new = format!(
                "{v2}.Compose([{v2}.ToImage(), {v2}.ToDtype({torch}.float32, scale=True)])"
            );
            Some(RawFix::safe(
                format!("Replace with `{new}`"),
                vec![RawEdit::replace(call.range(), new)],
            ))
        }
        _ => None,
    }
}

/// `functorch.vmap` (attribute of the functorch module).
fn check_functorch_attribute(checker: &mut Checker, expr: &Expr) {
    let Expr::Attribute(a) = expr else { return };
    if !helpers::is_load_reference(expr)
        || checker.resolve(&a.value).is_none_or(|q| q != "functorch")
    {
        return;
    }
    if !helpers::active(checker, 2, 0) {
        return;
    }
    let attr = a.attr.as_str();
    let fix = if FUNC_SAME.contains(&attr) {
        helpers::torch_alias(checker).map(|t| {
            RawFix::safe(
                format!("Use `{t}.func.{attr}`"),
                vec![RawEdit::replace(expr.range(), format!("{t}.func.{attr}"))],
            )
        })
    } else {
        None
    };
    let fix = fix.map(|f| checker.fix_needs_torch(f, 2, 0));
    let replacement = if attr == "make_functional" {
        "torch.func.functional_call"
    } else {
        attr
    };
    let text = checker.text(expr.range()).to_string();
    let d = checker.report(
        expr.range(),
        format!("`{text}` is deprecated since torch 2.0 (functorch moved into torch): use `torch.func.{}`", replacement.trim_start_matches("torch.func.")),
    );
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

/// Number-like first argument of the deprecated `add_(scalar, tensor)` overload: a numeric
/// literal, a negation, `group["lr"]`, or arithmetic on those.
fn is_scalar_like(expr: &Expr) -> bool {
    match expr {
        Expr::NumberLiteral(_) => true,
        Expr::UnaryOp(u) => matches!(u.op, UnaryOp::USub),
        Expr::Subscript(s) => sem::str_value(&s.slice).is_some(),
        Expr::BinOp(b) => {
            matches!(
                b.op,
                Operator::Mult | Operator::Div | Operator::Sub | Operator::Add
            ) && (is_scalar_like(&b.left) || is_scalar_like(&b.right))
        }
        _ => false,
    }
}

fn check_method(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let Some((method, receiver)) = sem::method_call(call) else {
        return;
    };
    if !matches!(
        method,
        "add_" | "sub_" | "addcmul_" | "addcdiv_" | "register_backward_hook" | "storage"
    ) {
        return;
    }
    if name.is_some() || checker.resolve(receiver).is_some() {
        return;
    }
    let Expr::Attribute(func) = &*call.func else {
        return;
    };
    let args = &call.arguments;
    match method {
        "add_" | "sub_" | "addcmul_" | "addcdiv_" => {
            let (n, kw) = if method.starts_with("addc") {
                (3, "value")
            } else {
                (2, "alpha")
            };
            if args.args.len() != n || !args.keywords.is_empty() || sem::has_args_splat(call) {
                return;
            }
            let scalar = &args.args[0];
            if !is_scalar_like(scalar) || !helpers::active(checker, 1, 5) {
                return;
            }
            let text = checker.text(scalar.range()).to_string();
            let fix = (!checker
                .text(TextRange::new(scalar.start(), args.args[1].start()))
                .contains('#'))
            .then(|| {
                RawFix::safe(
                    format!("Pass the scalar as `{kw}=`"),
                    vec![
                        RawEdit::delete(TextRange::new(scalar.start(), args.args[1].start())),
                        RawEdit::insert(args.args[n - 1].end(), format!(", {kw}={text}")),
                    ],
                )
            });
            let d = checker.report(
                call.func.range(),
                format!("`{method}({text}, ...)` uses the overload with the scalar first, deprecated since torch 1.5: pass it as `{kw}={text}` after the tensor(s)"),
            );
            if let Some(fix) = fix {
                d.set_fix(fix);
            }
        }
        "register_backward_hook" => {
            if !helpers::active(checker, 1, 8) {
                return;
            }
            let recv = checker.text(receiver.range()).to_string();
            checker
                .report(
                    call.func.range(),
                    format!("`{recv}.register_backward_hook` is deprecated since torch 1.8 and reports the gradients of the module's last operation only: use `register_full_backward_hook`"),
                )
                .set_fix(RawFix::unsafe_edit(
                    "Use `register_full_backward_hook` (the hook then receives the module's input and output gradients)",
                    vec![RawEdit::replace(func.attr.range, "register_full_backward_hook")],
                ));
        }
        _ => {
            // `x.storage()` with no arguments, on something that is not `self`.
            if !args.is_empty()
                || sem::name_of(receiver) == Some("self")
                || !helpers::active(checker, 2, 0)
            {
                return;
            }
            let recv = checker.text(receiver.range()).to_string();
            checker
                .report(
                    call.func.range(),
                    format!("`{recv}.storage()` returns a TypedStorage, deprecated since torch 2.0 (warns): use `{recv}.untyped_storage()`"),
                )
                .set_fix(RawFix::unsafe_edit(
                    "Use `untyped_storage()` (sizes and indexing are in bytes)",
                    vec![RawEdit::replace(func.attr.range, "untyped_storage")],
                ));
        }
    }
}

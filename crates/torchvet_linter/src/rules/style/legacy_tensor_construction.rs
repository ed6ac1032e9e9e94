use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::style::values::{frame_binding, with_frame, Bound};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for the legacy tensor constructors `torch.Tensor(...)`, `torch.FloatTensor(...)`
    /// (and the other typed classes, including `torch.cuda.*Tensor`), and for
    /// `torch.tensor(t)` where `t` is already a tensor.
    ///
    /// ## Why is this bad?
    /// The legacy constructors mean two different things depending on their arguments:
    /// `torch.FloatTensor([3])` is the one-element tensor `[3.]`, while `torch.FloatTensor(3)`
    /// is an *uninitialised* tensor of three elements holding whatever was in memory. They
    /// also ignore `device=`/`requires_grad=` conventions of the factory functions.
    /// `torch.tensor(t)` on a tensor copies it and warns ("To copy construct from a tensor,
    /// it is recommended to use sourceTensor.clone().detach()").
    ///
    /// ## Example
    /// ```python
    /// t = torch.FloatTensor([1, 2])
    /// buf = torch.Tensor(3, 4)
    /// u = torch.tensor(t)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// t = torch.tensor([1, 2], dtype=torch.float32)
    /// buf = torch.empty(3, 4)
    /// u = t.clone().detach()
    /// ```
    ///
    /// ## Fix safety
    /// Fixes are offered for the unambiguous forms and are safe: a typed constructor of one
    /// list/tuple becomes `torch.tensor(data, dtype=...)` (plus `device="cuda"` for
    /// `torch.cuda.*`), a typed constructor of integer literals becomes
    /// `torch.empty(sizes, dtype=...)`, and `torch.tensor(t)` without other arguments becomes
    /// `t.clone().detach()`. `torch.Tensor(...)` depends on the default dtype and gets no fix.
    ///
    /// ## References
    /// - [torch.tensor](https://pytorch.org/docs/stable/generated/torch.tensor.html)
    /// - [Tensor attributes: dtypes](https://pytorch.org/docs/stable/tensor_attributes.html)
    /// - [pytorch/pytorch#23495](https://github.com/pytorch/pytorch/issues/23495)
    pub(crate) static LEGACY_TENSOR_CONSTRUCTION = {
        name: "legacy-tensor-construction",
        code: "TV088",
        group: Style,
        severity: Info,
        title: "Legacy tensor constructors (torch.Tensor(...), torch.FloatTensor, ...) and torch.tensor(tensor)",
        autofix: Yes,
        hooks: { call: check_call },
    };
}

/// The dtype of a typed legacy class.
fn legacy_dtype(class: &str) -> Option<&'static str> {
    Some(match class {
        "FloatTensor" => "float32",
        "DoubleTensor" => "float64",
        "HalfTensor" => "float16",
        "BFloat16Tensor" => "bfloat16",
        "LongTensor" => "int64",
        "IntTensor" => "int32",
        "ShortTensor" => "int16",
        "CharTensor" => "int8",
        "ByteTensor" => "uint8",
        "BoolTensor" => "bool",
        _ => return None,
    })
}

/// Torch functions whose result is a tensor (for `torch.tensor(t)`).
fn is_tensor_factory(q: &str) -> bool {
    let Some(name) = q.strip_prefix("torch.") else {
        return false;
    };
    matches!(
        name,
        "tensor"
            | "as_tensor"
            | "from_numpy"
            | "zeros"
            | "ones"
            | "empty"
            | "full"
            | "rand"
            | "randn"
            | "randint"
            | "randperm"
            | "arange"
            | "linspace"
            | "logspace"
            | "eye"
            | "zeros_like"
            | "ones_like"
            | "empty_like"
            | "full_like"
            | "rand_like"
            | "randn_like"
            | "stack"
            | "cat"
            | "concat"
            | "where"
            | "matmul"
    )
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let Some(q) = name else { return };
    if q == "torch.tensor" {
        check_copy_construct(checker, call);
        return;
    }
    let (cuda, class) = if let Some(c) = q.strip_prefix("torch.cuda.") {
        (true, c)
    } else if let Some(c) = q.strip_prefix("torch.") {
        (false, c)
    } else {
        return;
    };
    let dtype = legacy_dtype(class);
    if dtype.is_none() && (class != "Tensor" || cuda) {
        return;
    }
    if call.arguments.is_empty() {
        // `torch.Tensor()` / `torch.FloatTensor()`: an empty tensor, not ambiguous.
        return;
    }
    let args = &call.arguments.args;
    let sizes = !args.is_empty()
        && args
            .iter()
            .all(|a| matches!(helpers::literal(a), Some(helpers::Literal::Int(_))));
    let data =
        args.len() == 1 && matches!(args[0], Expr::List(_) | Expr::Tuple(_) | Expr::ListComp(_));
    let shown = checker.text(call.func.range());
    let msg = if sizes {
        format!("`{shown}(...)` with integer arguments allocates an uninitialised tensor of that shape (not a tensor holding those numbers): use `torch.empty(...)` or `torch.tensor([...])`")
    } else {
        format!("`{shown}(...)` is a legacy constructor whose meaning depends on its arguments: use `torch.tensor(data, dtype=...)` or a factory such as `torch.empty`/`torch.zeros`")
    };
    // The fix spells `torch.` through the callee's own root, which must be the torch module.
    let root = torch_root(checker, &call.func);
    let fix = match (dtype, root, call.arguments.keywords.is_empty()) {
        (Some(dtype), Some(root), true) if data || sizes => {
            let device = if cuda { ", device=\"cuda\"" } else { "" };
            let inner = args
                .iter()
                .map(|a| checker.text(a.range()))
                .collect::<Vec<_>>()
                .join(", ");
            let func = if data { "tensor" } else { "empty" };
            Some(RawFix::safe(
                format!("Use `{root}.{func}(..., dtype={root}.{dtype})`"),
                vec![RawEdit::replace(
                    call.range(),
                    format!("{root}.{func}({inner}, dtype={root}.{dtype}{device})"),
                )],
            ))
        }
        _ => None,
    };
    let diagnostic = checker.report(call.func.range(), msg);
    if let Some(fix) = fix {
        diagnostic.set_fix(fix);
    }
}

/// The root name of the callee when it is bound to the torch module (`th.cuda.FloatTensor`
/// -> `th`).
fn torch_root(checker: &Checker, func: &Expr) -> Option<String> {
    let mut e = func;
    while let Expr::Attribute(a) = e {
        e = &a.value;
    }
    if std::ptr::eq(e, func) {
        // A bare imported name (`from torch import FloatTensor`).
        return None;
    }
    let name = helpers::name_of(e)?;
    checker.name_is(name, "torch").then(|| name.to_string())
}

fn check_copy_construct(checker: &mut Checker, call: &ExprCall) {
    let Some(arg) = call.arguments.args.first() else {
        return;
    };
    if call.arguments.args.len() != 1 || helpers::has_kwargs_splat(call) {
        return;
    }
    let is_tensor = with_frame(checker, |env| {
        let value = match arg {
            Expr::Name(n) => match frame_binding(env, n.id.as_str(), n.start()) {
                Some(Bound::Value(v)) => v,
                _ => return false,
            },
            e => e,
        };
        match value {
            Expr::Call(c) => checker
                .resolve(&c.func)
                .is_some_and(|q| is_tensor_factory(&q)),
            _ => false,
        }
    });
    if !is_tensor {
        return;
    }
    let src = checker.text(arg.range());
    let diagnostic = checker.report(
        call.func.range(),
        if matches!(arg, Expr::Name(_)) {
            format!("`torch.tensor({src})` copy-constructs from a tensor (torch warns about it): use `{src}.clone().detach()`")
        } else {
            "`torch.tensor(...)` of a tensor copy-constructs it (torch warns about it): use the tensor itself, or `.clone().detach()` for a copy".to_string()
        },
    );
    if call.arguments.keywords.is_empty() && matches!(arg, Expr::Name(_)) {
        diagnostic.set_fix(RawFix::safe(
            "Use `.clone().detach()`",
            vec![RawEdit::replace(
                call.range(),
                format!("{src}.clone().detach()"),
            )],
        ));
    }
}

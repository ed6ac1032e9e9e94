use crate::checker::Checker;
use crate::fix::{add_keyword_argument, RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for a tensor built by a torch factory and moved at once:
    /// `torch.zeros(n).to(device)`, `torch.randn(b, c).cuda()`, `torch.arange(n).to("cuda")`.
    /// A positional `.to(x)` argument is taken as a device only when it is a string,
    /// `torch.device(...)`, a `.device` attribute or a name containing `device`: `.to(dtype)`
    /// casts and `.to(other_tensor)` are not reported. Tensors built from host data
    /// (`torch.tensor(...)`, `torch.as_tensor(...)`, `torch.from_numpy(...)`) are not reported:
    /// the data is in CPU memory first anyway, so `device=` saves no copy. Neither are moves
    /// that pass anything besides the device and dtype (`non_blocking=True`, `copy=`,
    /// `memory_format=`), which ask for something a factory's `device=` cannot express.
    ///
    /// ## Why is this bad?
    /// The factory first allocates and fills the tensor in CPU memory, then `.to()` / `.cuda()`
    /// allocates a second tensor on the device and copies the data across the bus. Passing
    /// `device=` to the factory allocates (and fills) the tensor where it is needed in one
    /// step, with no host allocation and no copy.
    ///
    /// ## Example
    /// ```python
    /// noise = torch.randn(batch, dim).to(device)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// noise = torch.randn(batch, dim, device=device)
    /// ```
    ///
    /// ## Fix safety
    /// The fix moves the device (and dtype) of `.to(...)` / `.cuda()` into the factory call.
    /// It is safe when the target is clearly a device (a string, `torch.device(...)`, a
    /// `.device` attribute, an index for `.cuda()`, or a `device=` keyword). It is unsafe when
    /// `.to()` receives a bare name such as `device`, because `x.to(other)` also accepts a tensor, whose device and dtype would be
    /// copied, while a factory's `device=` does not accept a tensor. It is also unsafe for
    /// random factories (`rand`, `randn`, `randint`, `randperm`): they then draw from the
    /// device's generator instead of the CPU one, so seeded values change.
    ///
    /// ## References
    /// - [Performance tuning guide: create tensors directly on the target device](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html)
    /// - [Tensor creation ops](https://pytorch.org/docs/stable/torch.html#creation-ops)
    pub(crate) static TENSOR_CREATED_THEN_MOVED = {
        name: "tensor-created-then-moved",
        code: "TV109",
        group: Performance,
        severity: Info,
        title: "torch.<factory>(...).to(device)/.cuda() allocates on CPU then copies: pass device= to the factory",
        autofix: Yes,
        hooks: { call: check_call },
    };
}

const DTYPES: &[&str] = &[
    "float",
    "float32",
    "float16",
    "half",
    "bfloat16",
    "float64",
    "double",
    "int64",
    "long",
    "int32",
    "int",
    "int16",
    "short",
    "int8",
    "uint8",
    "bool",
    "complex64",
    "complex128",
    "cfloat",
    "cdouble",
];

fn is_dtype(checker: &Checker, e: &Expr) -> bool {
    checker.resolve(e).is_some_and(|q| {
        q.strip_prefix("torch.")
            .is_some_and(|d| DTYPES.contains(&d))
    })
}

/// The device / dtype a `.to(...)` / `.cuda(...)` call moves to.
struct Target {
    /// Source text of the device expression for `device=`.
    device: String,
    /// Source text of the dtype, if any.
    dtype: Option<String>,
    /// The device is certainly a device (not possibly a tensor).
    certain: bool,
}

fn to_target(checker: &Checker, call: &ExprCall) -> Option<Target> {
    if helpers::has_args_splat(call) || helpers::has_kwargs_splat(call) {
        return None;
    }
    let args = &call.arguments.args;
    let mut device: Option<(&Expr, bool)> = None;
    let mut dtype: Option<&Expr> = None;
    match &args[..] {
        [] => {}
        [first, rest @ ..] => {
            if is_dtype(checker, first) || rest.len() > 1 {
                // `.to(dtype[, non_blocking])` casts only: not this rule.
                return None;
            }
            // A positional argument may be a device, a dtype or a tensor: require evidence
            // that it is a device.
            if !looks_like_device(checker, first) {
                return None;
            }
            device = Some((first, false));
            if let Some(second) = rest.first() {
                if !is_dtype(checker, second) {
                    return None;
                }
                dtype = Some(second);
            }
        }
    }
    for k in &call.arguments.keywords {
        let Some(arg) = &k.arg else { return None };
        match arg.as_str() {
            "device" if device.is_none() => device = Some((&k.value, true)),
            "dtype" if dtype.is_none() => dtype = Some(&k.value),
            // `non_blocking=`, `copy=`, `memory_format=`: more than a device/dtype move.
            _ => return None,
        }
    }
    let (dev, keyword) = device?;
    if helpers::str_value(dev).is_some_and(|s| s == "cpu") {
        return None;
    }
    let certain = keyword
        || helpers::str_value(dev).is_some()
        || is_device_call(checker, dev)
        || matches!(dev, Expr::Attribute(a) if a.attr.as_str() == "device");
    Some(Target {
        device: checker.text(dev.range()).to_string(),
        dtype: dtype.map(|d| checker.text(d.range()).to_string()),
        certain,
    })
}

/// A positional `.to(...)` argument that is certainly or very likely a device: a string, a
/// `torch.device(...)` call, a `.device` attribute, or a name such as `device` / `self.device`.
fn looks_like_device(checker: &Checker, e: &Expr) -> bool {
    let last_name = match e {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Attribute(a) => Some(a.attr.as_str()),
        _ => None,
    };
    helpers::str_value(e).is_some()
        || is_device_call(checker, e)
        || last_name.is_some_and(|n| n.to_ascii_lowercase().contains("device"))
}

fn is_device_call(checker: &Checker, e: &Expr) -> bool {
    matches!(e, Expr::Call(c) if checker.resolves_to(&c.func, &["torch.device"]))
}

fn cuda_target(checker: &Checker, call: &ExprCall) -> Option<Target> {
    if helpers::has_args_splat(call) || helpers::has_kwargs_splat(call) {
        return None;
    }
    // `non_blocking=` / `memory_format=` ask for more than a device move: not reported.
    if call
        .arguments
        .keywords
        .iter()
        .any(|k| k.arg.as_ref().map(|a| a.as_str()) != Some("device"))
    {
        return None;
    }
    let device = match helpers::argument(call, "device", 0) {
        None => "\"cuda\"".to_string(),
        Some(e) => match helpers::int_value(e) {
            Some(i) if !matches!(e, Expr::BooleanLiteral(_)) => format!("\"cuda:{i}\""),
            _ => checker.text(e.range()).to_string(),
        },
    };
    if call.arguments.args.len() > 1 {
        return None;
    }
    Some(Target {
        device,
        dtype: None,
        certain: true,
    })
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    let Some((method, receiver)) = helpers::method_call(call) else {
        return;
    };
    if !matches!(method, "to" | "cuda") {
        return;
    }
    let Expr::Call(factory) = receiver else {
        return;
    };
    let Some(q) = checker.resolve(&factory.func) else {
        return;
    };
    let Some(short) = q.strip_prefix("torch.") else {
        return;
    };
    // `torch.tensor(host_data).to(dev)` copies host data once either way: not reported.
    if short == "tensor" || !super::helpers::DEVICE_FACTORIES.contains(&short) {
        return;
    }
    if helpers::has_kwargs_splat(factory)
        || ["device", "out", "requires_grad", "pin_memory"]
            .iter()
            .any(|k| helpers::keyword(factory, k).is_some())
    {
        return;
    }
    let target = if method == "to" {
        to_target(checker, call)
    } else {
        cuda_target(checker, call)
    };
    let Some(target) = target else { return };
    let conflicting_dtype = target.dtype.is_some() && helpers::keyword(factory, "dtype").is_some();
    let factory_text = checker.text(factory.func.range());
    let move_text = checker.text(TextRange::new(factory.end(), call.end()));
    let move_text = if move_text.contains('\n') {
        format!(".{method}(...)")
    } else {
        move_text.to_string()
    };
    let fix = (!conflicting_dtype).then(|| {
        let mut kw = format!("device={}", target.device);
        if let Some(d) = &target.dtype {
            kw.push_str(", dtype=");
            kw.push_str(d);
        }
        let edits = vec![
            add_keyword_argument(factory, &kw),
            RawEdit::delete(TextRange::new(factory.end(), call.end())),
        ];
        let msg = format!("Pass `{kw}` to `{factory_text}`");
        let random = matches!(short, "rand" | "randn" | "randint" | "randperm");
        if target.certain && !random {
            RawFix::safe(msg, edits)
        } else {
            RawFix::unsafe_edit(msg, edits)
        }
    });
    let d = checker.report(
        call.range(),
        format!(
            "`{factory_text}(...)` allocates its tensor in CPU memory and `{move_text}` then copies it to the device; pass `device={}` to the factory instead",
            target.device
        ),
    );
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::performance::helpers::apply_fixes;

    #[test]
    fn fixes() {
        let src = "import torch\na = torch.zeros(3, 4).to(\"cuda\")\nb = torch.randn(2).cuda(1)\nc = torch.ones(2).to(device, torch.half)\nd = torch.arange(5, dtype=torch.long).to(device=dev)\n";
        let (n, out) = apply_fixes("tensor-created-then-moved", src);
        assert_eq!(n, 4);
        assert_eq!(
            out,
            "import torch\na = torch.zeros(3, 4, device=\"cuda\")\nb = torch.randn(2, device=\"cuda:1\")\nc = torch.ones(2, device=device, dtype=torch.half)\nd = torch.arange(5, dtype=torch.long, device=dev)\n"
        );
    }
}

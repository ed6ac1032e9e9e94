use super::model_helpers::is_optimizer_call;
use crate::checker::Checker;
use crate::fix::{add_keyword_argument, RawEdit, RawFix};
use ruff_python_ast::{self as ast, Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use torchvet_semantic::reaching::Def;
use torchvet_semantic::{helpers, uses};

crate::declare_rule! {
    /// ## What it does
    /// Checks for a tensor created with `requires_grad=True` (or `.requires_grad_()`) and then
    /// moved or cast with `.to(...)`, `.cuda()`, `.double()`, ... in the same expression, or
    /// by re-binding the same name (`w = w.cuda()`), when the code relies on the moved copy
    /// being a gradient leaf: it is handed to an optimizer or `add_param_group` (for
    /// `self.w`, anywhere in the class), or its `.grad` is read without a `.retain_grad()`
    /// call on it.
    ///
    /// A moved copy that is only differentiated through, summed into a loss, cloned,
    /// detached, returned, passed as the `gradient` of `backward`, or used as an input of
    /// `torch.autograd.grad` (which accepts non-leaf inputs) behaves the same as the leaf
    /// would; so does one whose `.grad` is read after `t.retain_grad()`, which makes a non-leaf
    /// keep its gradient. There the rule stays silent, in unit tests as elsewhere (a kernel
    /// test that builds `torch.randn(..., requires_grad=True).cuda()` inputs and only copies
    /// them loses nothing; `loss = torch.tensor([0.0], requires_grad=True).to(device)` as
    /// the starting value of a sum loses nothing either).
    ///
    /// ## Why is this bad?
    /// A move or cast that copies is an autograd operation: its result is a *non-leaf*
    /// tensor. The leaf that collects gradients is the original, which nothing refers to any
    /// more. `w.grad` stays `None` (with a warning), and handing `w` to an optimizer fails
    /// with "can't optimize a non-leaf Tensor"; on a CPU-only machine `.to(device)` returns the
    /// same tensor, so the bug only shows up on the GPU.
    ///
    /// ## Example
    /// ```python
    /// w = torch.randn(3, requires_grad=True).to(device)
    /// opt = torch.optim.SGD([w], lr=0.1)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// w = torch.randn(3, device=device, requires_grad=True)
    /// opt = torch.optim.SGD([w], lr=0.1)
    /// ```
    ///
    /// ## Fix safety
    /// For `.cuda()` and `.to(<device>)` the fix moves the device into the factory call.
    /// Random factories then draw from the device's generator, so the values differ from
    /// before: the fix is unsafe.
    ///
    /// ## References
    /// - [Autograd mechanics: leaf tensors](https://pytorch.org/docs/stable/notes/autograd.html)
    /// - [torch.Tensor.is_leaf](https://pytorch.org/docs/stable/generated/torch.Tensor.is_leaf.html)
    /// - [randomCNN-voice-transfer issue 16](https://github.com/mazzzystar/randomCNN-voice-transfer/issues/16)
    pub(crate) static REQUIRES_GRAD_LEAF_THEN_MOVED = {
        name: "requires-grad-leaf-then-moved",
        code: "TV039",
        group: Correctness,
        severity: Critical,
        title: "Tensor created with requires_grad=True then moved/cast: the bound name is a non-leaf copy",
        autofix: Yes,
        hooks: { stmt: check_stmt, call: check_call },
    };
}

const FACTORIES: &[&str] = &[
    "tensor",
    "zeros",
    "ones",
    "full",
    "empty",
    "rand",
    "randn",
    "arange",
    "linspace",
    "logspace",
    "eye",
    "zeros_like",
    "ones_like",
    "rand_like",
    "randn_like",
    "full_like",
    "empty_like",
    "normal",
];

/// A `torch.<factory>(...)` call.
fn is_factory(checker: &Checker, call: &ExprCall) -> bool {
    checker.resolve(&call.func).is_some_and(|q| {
        q.strip_prefix("torch.")
            .is_some_and(|f| FACTORIES.contains(&f))
    })
}

/// The expression creates a leaf that requires grad: returns the factory call, if any.
fn leaf_creation<'a>(checker: &Checker, expr: &'a Expr) -> Option<&'a ExprCall> {
    let Expr::Call(call) = expr else { return None };
    let requires =
        helpers::keyword(call, "requires_grad").and_then(helpers::is_truthy) == Some(true);
    if requires {
        if is_factory(checker, call) {
            return Some(call);
        }
        let q = checker.resolve(&call.func)?;
        return matches!(
            q.as_str(),
            "torch.autograd.Variable" | "torch.autograd.variable.Variable"
        )
        .then_some(call);
    }
    // torch.zeros(3).requires_grad_()
    let (method, receiver) = helpers::method_call(call)?;
    if method != "requires_grad_"
        || call.arguments.args.first().and_then(helpers::is_truthy) == Some(false)
    {
        return None;
    }
    let Expr::Call(inner) = receiver else {
        return None;
    };
    is_factory(checker, inner).then_some(inner)
}

fn dtype_is(factory: &ExprCall, names: &[&str]) -> bool {
    helpers::keyword(factory, "dtype")
        .and_then(helpers::dotted)
        .is_some_and(|d| names.contains(&helpers::last_segment(&d)))
}

/// Does `.method(args)` copy the freshly created tensor (so the result is not the leaf)?
fn copies(factory: &ExprCall, method: &str, call: &ExprCall) -> bool {
    let has = |k: &str| helpers::keyword(factory, k).is_some();
    match method {
        "cuda" | "type" => true,
        "cpu" => has("device"),
        "float" => has("dtype") && !dtype_is(factory, &["float32", "float"]),
        "double" => !dtype_is(factory, &["float64", "double"]),
        "half" => !dtype_is(factory, &["float16", "half"]),
        "bfloat16" => !dtype_is(factory, &["bfloat16"]),
        "to" => {
            let target = call
                .arguments
                .args
                .first()
                .or_else(|| helpers::keyword(call, "device"));
            target.and_then(helpers::str_value) != Some("cpu") || has("device")
        }
        _ => false,
    }
}

/// Is the moved copy later used as a gradient leaf (handed to an optimizer, its `.grad` read
/// with no `.retain_grad()`: [`uses::used_as_gradient_leaf`])? Only then is the lost leaf a
/// bug. A tensor that is only differentiated through, summed into a loss, cloned, detached,
/// returned, or passed as the `gradient` of `backward` works the same as a non-leaf (the
/// `requires_grad=True` is merely pointless), and `torch.autograd.grad(..., inputs=t)`
/// accepts a non-leaf (the gradient penalty of WGAN-GP).
fn used_as_leaf(checker: &Checker, target: &Expr, after: TextSize) -> bool {
    let is_optimizer = |c: &ExprCall| is_optimizer_call(checker, c);
    if let Expr::Name(n) = target {
        let body: &[Stmt] = checker.scope_body();
        let name = n.id.as_str();
        return uses::used_as_gradient_leaf(
            body,
            &|e| helpers::name_of(e) == Some(name),
            after,
            &is_optimizer,
        );
    }
    // `self.w = ...`: any method of the class may use it (its body from the start).
    if let (Some(attr), Some(class)) = (helpers::self_attribute(target), checker.class()) {
        return uses::used_as_gradient_leaf(
            &class.def.body,
            &|e| helpers::self_attribute(e) == Some(attr),
            class.def.start(),
            &is_optimizer,
        );
    }
    false
}

/// A creation-and-move not bound to a name: is it handed straight to an optimizer
/// (`SGD([torch.zeros(1, requires_grad=True).cuda()], lr=0.1)`)? One that is returned is
/// judged by what the caller does with it, which this file does not show: silent.
fn inline_leaf_use(checker: &Checker, call: &ExprCall) -> bool {
    checker
        .expr_stack()
        .iter()
        .any(|e| matches!(e, Expr::Call(c) if c.range() != call.range() && is_optimizer_call(checker, c)))
}

/// The leaf creation `name` holds before `stmt` (`w = torch.randn(..., requires_grad=True)`):
/// the one assignment that reaches it, other than `stmt`'s own value (which a loop would carry
/// round to the next iteration).
fn created_leaf(checker: &Checker, name: &str, stmt: &ast::StmtAssign) -> Option<TextRange> {
    let defs = checker.reaching_defs(name, stmt.start())?;
    let mut earlier = defs
        .iter()
        .filter(|d| !matches!(d, Def::Value(v) if std::ptr::eq(*v, &*stmt.value)));
    match (earlier.next(), earlier.next()) {
        (Some(Def::Value(v)), None) => leaf_creation(checker, v).map(|_| v.range()),
        _ => None,
    }
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    // w = w.cuda() after w = torch.randn(..., requires_grad=True)
    if let Stmt::Assign(a) = stmt {
        if let ([Expr::Name(target)], Expr::Call(call)) = (a.targets.as_slice(), &*a.value) {
            if let Some((method, Expr::Name(recv))) = helpers::method_call(call) {
                if recv.id == target.id
                    && matches!(
                        method,
                        "to" | "cuda" | "double" | "half" | "bfloat16" | "type"
                    )
                {
                    if let Some(created) = created_leaf(checker, target.id.as_str(), a)
                        .filter(|_| used_as_leaf(checker, &a.targets[0], stmt.end()))
                    {
                        let name = target.id.as_str();
                        let text = checker.text(call.range());
                        checker
                            .report(
                                a.value.range(),
                                format!("`{name}` required grad as a leaf; `{text}` returns a non-leaf copy and re-binds the name, so `{name}.grad` stays None and optimizers reject it; create it on the target device/dtype instead"),
                            )
                            .add_related(created, "the leaf is created here");
                    }
                }
            }
        }
    }
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    let Some((method, receiver)) = helpers::method_call(call) else {
        return;
    };
    if !matches!(
        method,
        "to" | "cuda" | "cpu" | "float" | "double" | "half" | "bfloat16" | "type"
    ) {
        return;
    }
    let Some(factory) = leaf_creation(checker, receiver) else {
        return;
    };
    if !copies(factory, method, call) {
        return;
    }
    let leaf = match checker.current_stmt() {
        Some(Stmt::Assign(a)) if a.value.range() == call.range() => match a.targets.as_slice() {
            [t] => used_as_leaf(checker, t, a.end()),
            _ => false,
        },
        _ => inline_leaf_use(checker, call),
    };
    if !leaf {
        return;
    }
    // Move a device into the factory: `.cuda()`, `.to("cuda")`, `.to(device=d)`.
    let direct_factory = matches!(receiver, Expr::Call(c) if std::ptr::eq(c, factory));
    let fixable = direct_factory
        && is_factory(checker, factory)
        && helpers::keyword(factory, "device").is_none()
        && !helpers::has_kwargs_splat(factory);
    let device = match method {
        _ if !fixable => None,
        "cuda" if call.arguments.is_empty() => Some("\"cuda\"".to_string()),
        "to" if call.arguments.keywords.is_empty() && call.arguments.args.len() == 1 => {
            call.arguments.args[0]
                .as_string_literal_expr()
                .map(|s| checker.text(s.range()).to_string())
        }
        "to" if call.arguments.args.is_empty() && call.arguments.keywords.len() == 1 => {
            helpers::keyword(call, "device").map(|d| checker.text(d.range()).to_string())
        }
        _ => None,
    };
    let diag = checker.report(
        call.range(),
        format!("`.{method}(...)` on a tensor created with requires_grad=True returns a non-leaf copy: the leaf that collects gradients is lost, `.grad` of the result stays None and optimizers reject it"),
    );
    if let Some(device) = device {
        diag.set_fix(RawFix::unsafe_edit(
            format!("Create the tensor with `device={device}`"),
            vec![
                add_keyword_argument(factory, &format!("device={device}")),
                RawEdit::delete(TextRange::new(factory.end(), call.end())),
            ],
        ));
    }
}

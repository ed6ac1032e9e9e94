use super::helpers::LocalKinds;
use crate::checker::Checker;
use crate::fix::{add_keyword_argument, RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use std::cell::RefCell;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for a tensor created with `requires_grad=True` (or `.requires_grad_()`) and then
    /// moved or cast with `.to(...)`, `.cuda()`, `.double()`, ... in the same expression, or
    /// by re-binding the same name (`w = w.cuda()`).
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
        hooks: { stmt: check_stmt, call: check_call, end: clear },
    };
}

thread_local! {
    static KINDS: RefCell<LocalKinds<TextRange>> = RefCell::new(LocalKinds::default());
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

/// Is the tensor bound to `name` by `stmt` used only as an input of `torch.autograd.grad`
/// (and as an operand, a call argument, ...) after `stmt`, never for its `.grad`, an
/// optimizer, a return or a store? A non-leaf is fine there: the gradient penalty of
/// WGAN-GP (`interpolated = Variable(x, requires_grad=True).cuda()`, then
/// `autograd.grad(outputs=D(interpolated), inputs=interpolated)`).
fn only_differentiated_against(checker: &Checker, stmt: &Stmt, name: &str) -> bool {
    use ruff_python_ast::visitor::{self, Visitor};
    let body: &[Stmt] = match checker.function() {
        Some(f) => &f.body,
        None => &checker.module().body,
    };
    struct Uses<'c, 'a, 'n> {
        checker: &'c Checker<'a>,
        name: &'n str,
        after: ruff_text_size::TextSize,
        grad_input: bool,
        harmful: bool,
    }
    impl<'x> Visitor<'x> for Uses<'_, '_, '_> {
        fn visit_stmt(&mut self, st: &'x Stmt) {
            if st.start() < self.after {
                // Only what follows the binding (compound statements may contain it).
                if st.end() <= self.after {
                    return;
                }
            }
            match st {
                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
                Stmt::Return(r) => {
                    // The tensor itself returned (alone or in a tuple/list).
                    let returned = |v: &Expr| helpers::name_of(v) == Some(self.name);
                    if r.value.as_deref().is_some_and(|v| match v {
                        Expr::Tuple(t) => t.elts.iter().any(returned),
                        Expr::List(t) => t.elts.iter().any(returned),
                        v => returned(v),
                    }) {
                        self.harmful = true;
                    }
                    if let Some(v) = r.value.as_deref() {
                        self.visit_expr(v);
                    }
                }
                Stmt::Assign(a)
                    if a.targets.iter().any(|t| !matches!(t, Expr::Name(_)))
                        && super::super::memory::graph_helpers::mentions_name(
                            &a.value, self.name,
                        ) =>
                {
                    self.harmful = true;
                }
                _ => visitor::walk_stmt(self, st),
            }
        }
        fn visit_expr(&mut self, e: &'x Expr) {
            if e.start() < self.after {
                visitor::walk_expr(self, e);
                return;
            }
            match e {
                Expr::Attribute(a)
                    if a.attr.as_str() == "grad"
                        && helpers::name_of(&a.value) == Some(self.name) =>
                {
                    self.harmful = true;
                }
                Expr::Call(c) => {
                    let mentioned = c
                        .arguments
                        .args
                        .iter()
                        .chain(c.arguments.keywords.iter().map(|k| &k.value))
                        .any(|a| super::super::memory::graph_helpers::mentions_name(a, self.name));
                    if mentioned {
                        if let Some(q) = self.checker.resolve(&c.func) {
                            if q == "torch.autograd.grad" {
                                let inputs = helpers::argument(c, "inputs", 1);
                                if inputs.is_some_and(|i| {
                                    super::super::memory::graph_helpers::mentions_name(i, self.name)
                                }) {
                                    self.grad_input = true;
                                }
                            } else if q.starts_with("torch.optim.") || q.ends_with("Parameter") {
                                self.harmful = true;
                            }
                        }
                        if let Some(("append" | "extend" | "add_param_group", _)) =
                            helpers::method_call(c)
                        {
                            self.harmful = true;
                        }
                    }
                    visitor::walk_expr(self, e);
                }
                _ => visitor::walk_expr(self, e),
            }
        }
    }
    let mut u = Uses {
        checker,
        name,
        after: stmt.end(),
        grad_input: false,
        harmful: false,
    };
    for st in body {
        u.visit_stmt(st);
    }
    u.grad_input && !u.harmful
}

fn classify(checker: &Checker, _kinds: &LocalKinds<TextRange>, value: &Expr) -> Option<TextRange> {
    leaf_creation(checker, value).map(|_| value.range())
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
                    if let Some(created) = KINDS
                        .with_borrow(|k| k.get(checker, &a.targets[0]))
                        .filter(|_| !only_differentiated_against(checker, stmt, &target.id))
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
    KINDS.with_borrow_mut(|k| k.observe(checker, stmt, classify));
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
    if let Some(Stmt::Assign(a)) = checker.current_stmt() {
        if let ([Expr::Name(t)], true) = (a.targets.as_slice(), a.value.range() == call.range()) {
            let stmt = checker.current_stmt().expect("matched above");
            if only_differentiated_against(checker, stmt, &t.id) {
                return;
            }
        }
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

fn clear(_checker: &mut Checker) {
    KINDS.with_borrow_mut(LocalKinds::clear);
}

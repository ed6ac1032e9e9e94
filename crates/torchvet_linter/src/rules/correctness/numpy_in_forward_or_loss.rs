use super::helpers::for_each_stmt;
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprCall, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextRange};
use rustc_hash::{FxHashMap, FxHashSet};
use std::cell::RefCell;
use std::rc::Rc;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks `forward()` methods of `nn.Module` subclasses (models and custom losses) for
    /// NumPy or `math` calls on the input data (`np.tanh(h)`, `math.exp(x)`) and for
    /// `.numpy()` conversions of it, when the result flows into the returned value.
    ///
    /// ## Why is this bad?
    /// Autograd only sees torch operations. Going through NumPy (or `math`, or `.numpy()`)
    /// produces values with no history: the output of `forward` is cut off from the
    /// parameters before that point, so they receive no gradient and stop learning (or
    /// `backward()` raises because nothing requires grad). It also forces a device-to-host
    /// copy and a synchronisation on every call. The torch equivalents (`torch.tanh`,
    /// `torch.exp`, ...) keep the graph. Code under `torch.no_grad()`, values that do not
    /// reach the return value (shapes, logging), and modules that wrap an inference runtime
    /// (ONNX Runtime, TensorRT, OpenVINO, CoreML, ...: their `forward` hands NumPy arrays to
    /// the runtime and nothing is trained through it) are not reported. This rule is in preview:
    /// it tracks data only through the assignments of `forward` itself.
    ///
    /// ## Example
    /// ```python
    /// def forward(self, x):
    ///     h = self.fc(x)
    ///     return torch.from_numpy(np.tanh(h.detach().numpy()))
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def forward(self, x):
    ///     return torch.tanh(self.fc(x))
    /// ```
    ///
    /// ## Fix safety
    /// For `np.<f>(t)` where torch has a function of the same name and meaning (`exp`, `log`,
    /// `tanh`, `sqrt`, `abs`, ...), the suggested fix calls `torch.<f>(t)` instead. It is
    /// unsafe: NumPy and torch differ in dtype promotion and in keyword names (`axis` vs
    /// `dim`), so review the result. `.numpy()` round-trips get no fix.
    ///
    /// ## References
    /// - [Autograd mechanics](https://pytorch.org/docs/stable/notes/autograd.html)
    /// - [pytorch/pytorch#44023](https://github.com/pytorch/pytorch/issues/44023)
    /// - [xiaxin1998/DHCN#8](https://github.com/xiaxin1998/DHCN/issues/8)
    pub(crate) static NUMPY_IN_FORWARD_OR_LOSS = {
        name: "numpy-in-forward-or-loss",
        code: "TV019",
        group: Correctness,
        severity: Critical,
        title: "NumPy/.numpy()/math on tensors inside forward() (breaks autograd)",
        autofix: Suggest,
        preview: true,
        hooks: { call: check_call, end: clear },
    };
}

/// NumPy/math functions with a torch function of the same name and meaning.
const SAME_IN_TORCH: &[&str] = &[
    "exp", "log", "tanh", "sqrt", "abs", "sin", "cos", "sigmoid", "log1p", "expm1", "square",
    "floor", "ceil", "sign",
];

/// Per-`forward` facts: names holding input data, names feeding the return value.
#[derive(Default)]
struct ForwardFacts {
    data: FxHashSet<String>,
    returned: FxHashSet<String>,
    first_return: Option<TextRange>,
}

thread_local! {
    static CACHE: RefCell<FxHashMap<u32, Rc<ForwardFacts>>> = RefCell::new(FxHashMap::default());
}

fn facts_of(checker: &mut Checker, f: &StmtFunctionDef) -> Rc<ForwardFacts> {
    let key = f.range().start().to_u32();
    if let Some(hit) = CACHE.with(|c| c.borrow().get(&key).cloned()) {
        return hit;
    }
    let mut facts = ForwardFacts::default();
    // Data: the first parameter after `self`, parameters annotated as tensors, and locals
    // computed from data (not through shape queries).
    let params: Vec<_> = f.parameters.iter().collect();
    for (i, p) in params.iter().enumerate() {
        let name = p.name().as_str();
        if name == "self" {
            continue;
        }
        let annotated = p.annotation().is_some_and(|a| {
            checker
                .resolve(a)
                .is_some_and(|q| q == "torch.Tensor" || q == "torch.FloatTensor")
        });
        if i == 1 || annotated {
            facts.data.insert(name.to_string());
        }
    }
    let mut stmts: Vec<&Stmt> = Vec::new();
    for_each_stmt(&f.body, &mut |s| stmts.push(s));
    for s in &stmts {
        if let Stmt::Assign(a) = s {
            if derives_from_data(&a.value, &facts.data) {
                for t in &a.targets {
                    helpers::for_each_bound_name(t, &mut |n| {
                        facts.data.insert(n.to_string());
                    });
                }
            }
        }
    }
    // Names feeding the return value, walking backwards.
    for s in stmts.iter().rev() {
        match s {
            Stmt::Return(r) => {
                if let Some(v) = &r.value {
                    collect_reads(v, &mut facts.returned);
                }
                facts.first_return = Some(r.range());
            }
            Stmt::Assign(a) => {
                let feeds = a.targets.iter().any(|t| {
                    let mut bound = FxHashSet::default();
                    helpers::for_each_bound_name(t, &mut |n| {
                        bound.insert(n.to_string());
                    });
                    bound.iter().any(|n| facts.returned.contains(n))
                });
                if feeds {
                    collect_reads(&a.value, &mut facts.returned);
                }
            }
            Stmt::AugAssign(a) => {
                let mut bound = FxHashSet::default();
                helpers::for_each_bound_name(&a.target, &mut |n| {
                    bound.insert(n.to_string());
                });
                if bound.iter().any(|n| facts.returned.contains(n)) {
                    collect_reads(&a.value, &mut facts.returned);
                }
            }
            _ => {}
        }
    }
    let rc = Rc::new(facts);
    CACHE.with(|c| c.borrow_mut().insert(key, rc.clone()));
    rc
}

fn collect_reads(e: &Expr, out: &mut FxHashSet<String>) {
    struct R<'o>(&'o mut FxHashSet<String>);
    impl<'x> Visitor<'x> for R<'_> {
        fn visit_expr(&mut self, e: &'x Expr) {
            if let Expr::Name(n) = e {
                self.0.insert(n.id.to_string());
            }
            visitor::walk_expr(self, e);
        }
    }
    R(out).visit_expr(e);
}

/// Does the expression compute from data names (not through `.shape`, `.size()`, `len()`,
/// `.item()`, `.dim()`)?
fn derives_from_data(e: &Expr, data: &FxHashSet<String>) -> bool {
    struct D<'d> {
        data: &'d FxHashSet<String>,
        hit: bool,
    }
    impl<'x> Visitor<'x> for D<'_> {
        fn visit_expr(&mut self, e: &'x Expr) {
            if self.hit {
                return;
            }
            match e {
                Expr::Attribute(a)
                    if matches!(a.attr.as_str(), "shape" | "device" | "dtype" | "ndim") =>
                {
                    return
                }
                Expr::Call(c) => {
                    if let Some((m, _)) = helpers::method_call(c) {
                        if matches!(
                            m,
                            "size" | "dim" | "item" | "numel" | "tolist" | "get_device"
                        ) {
                            return;
                        }
                    }
                    if matches!(
                        helpers::name_of(&c.func),
                        Some("len" | "isinstance" | "int")
                    ) {
                        return;
                    }
                }
                Expr::Name(n) if self.data.contains(n.id.as_str()) => {
                    self.hit = true;
                    return;
                }
                _ => {}
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut d = D { data, hit: false };
    d.visit_expr(e);
    d.hit
}

/// Does the expression contain a `.numpy()` call?
fn contains_numpy_call(e: &Expr) -> bool {
    let mut cur = e;
    loop {
        match cur {
            Expr::Call(c) => match helpers::method_call(c) {
                Some(("numpy", _)) => return true,
                Some((_, recv)) => cur = recv,
                None => return false,
            },
            Expr::Attribute(a) => cur = &a.value,
            Expr::Subscript(s) => cur = &s.value,
            _ => return false,
        }
    }
}

/// The name a method chain / attribute path / subscript starts from.
fn chain_root(mut e: &Expr) -> Option<&str> {
    loop {
        match e {
            Expr::Name(n) => return Some(n.id.as_str()),
            Expr::Attribute(a) => e = &a.value,
            Expr::Subscript(s) => e = &s.value,
            Expr::Call(c) => match &*c.func {
                Expr::Attribute(a) => e = &a.value,
                _ => return None,
            },
            _ => return None,
        }
    }
}

fn check_call(checker: &mut Checker, call: &ExprCall, q: Option<&str>) {
    if !checker.in_module_method("forward") || checker.in_no_grad() {
        return;
    }
    let numpy_method = matches!(helpers::method_call(call), Some(("numpy", _)));
    let lib_fn = q.and_then(|q| {
        q.strip_prefix("numpy.")
            .map(|f| ("np", f))
            .or_else(|| q.strip_prefix("math.").map(|f| ("math", f)))
    });
    if !numpy_method && lib_fn.is_none() {
        return;
    }
    let Some(func) = checker.function() else {
        return;
    };
    if checker
        .module_method()
        .is_some_and(|c| is_inference_backend(checker, c.def))
    {
        return;
    }
    let facts = facts_of(checker, func);
    // The data value involved.
    let value: &Expr = if numpy_method {
        match helpers::method_call(call) {
            Some((_, recv)) => recv,
            None => return,
        }
    } else {
        match call.arguments.args.first() {
            Some(a) => a,
            None => return,
        }
    };
    // `np.tanh(h.numpy())`: the `.numpy()` call is the one reported.
    if !numpy_method && contains_numpy_call(value) {
        return;
    }
    let is_data = chain_root(value).is_some_and(|r| facts.data.contains(r))
        && derives_from_data(value, &facts.data);
    if !is_data {
        return;
    }
    // Does the result reach the return value?
    let Some(stmt) = checker.current_stmt() else {
        return;
    };
    let reaches = match stmt {
        Stmt::Return(_) => true,
        Stmt::Assign(a) => a.targets.iter().any(|t| {
            let mut bound = FxHashSet::default();
            helpers::for_each_bound_name(t, &mut |n| {
                bound.insert(n.to_string());
            });
            bound.iter().any(|n| facts.returned.contains(n))
        }),
        Stmt::AugAssign(a) => {
            let mut bound = FxHashSet::default();
            helpers::for_each_bound_name(&a.target, &mut |n| {
                bound.insert(n.to_string());
            });
            bound.iter().any(|n| facts.returned.contains(n))
        }
        _ => false,
    };
    if !reaches {
        return;
    }
    let class = checker
        .module_method()
        .map(|c| c.def.name.to_string())
        .unwrap_or_default();
    let value_text = checker.text(value.range());
    let what = if numpy_method {
        format!("`{value_text}.numpy()`")
    } else {
        format!("`{}(...)`", checker.text(call.func.range()))
    };
    let message = format!(
        "{what} in `{class}.forward` leaves autograd: the returned value has no history through this step, so the layers before it get no gradient from it"
    );
    let fix = lib_fn.and_then(|(_, f)| {
        if !SAME_IN_TORCH.contains(&f) || call.arguments.len() != 1 {
            return None;
        }
        let torch = checker.module_alias("torch")?;
        Some(RawFix::unsafe_edit(
            format!("Use `{torch}.{f}`, which autograd tracks"),
            vec![RawEdit::replace(call.func.range(), format!("{torch}.{f}"))],
        ))
    });
    let ret = facts.first_return;
    let d = checker.report(call.range(), message);
    if let Some(r) = ret {
        d.add_related(r, "the value forward() returns");
    }
    if let Some(f) = fix {
        d.set_fix(f);
    }
}

/// Words that name an inference runtime a module can wrap: ONNX Runtime, TensorRT, OpenVINO,
/// CoreML, TFLite, Triton, ncnn. Their sessions take NumPy arrays.
const BACKEND_WORDS: &[&str] = &[
    "onnxruntime",
    "InferenceSession",
    "tensorrt",
    "create_execution_context",
    "execute_v2",
    "execute_async",
    "openvino",
    "compile_model",
    "infer_request",
    "coremltools",
    "MLModel",
    "tflite",
    "tritonclient",
    "ncnn",
];

/// Is this nn.Module a wrapper around an inference runtime (its body or the file's imports
/// name one)? Nothing is trained through such a `forward`: it hands NumPy arrays to the
/// runtime by design.
fn is_inference_backend(checker: &Checker, class: &ruff_python_ast::StmtClassDef) -> bool {
    if !BACKEND_WORDS.iter().any(|w| checker.mentions(w)) {
        return false;
    }
    let body = checker.text(class.range());
    if BACKEND_WORDS.iter().any(|w| body.contains(w)) {
        return true;
    }
    // `import onnxruntime as ort` at the top, `self.session = ort.InferenceSession(...)`.
    let mut found = false;
    for_each_stmt(&class.body, &mut |s| {
        if found {
            return;
        }
        if let Stmt::Assign(a) = s {
            if let Expr::Call(c) = &*a.value {
                found = checker.resolve(&c.func).is_some_and(|q| {
                    let root = q.split('.').next().unwrap_or("");
                    matches!(
                        root,
                        "onnxruntime" | "tensorrt" | "openvino" | "coremltools" | "tflite_runtime"
                    )
                });
            }
        }
    });
    found
}

fn clear(_checker: &mut Checker) {
    CACHE.with(|c| c.borrow_mut().clear());
}

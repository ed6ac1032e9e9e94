use super::model_helpers::{
    analysed_body, binds_name, body_mentions, own_exprs, visit_exprs, walk_body,
};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{self as ast, Expr, Number, Stmt};
use ruff_text_size::{Ranged, TextRange};
use rustc_hash::{FxHashMap, FxHashSet};
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;

crate::declare_rule! {
    /// ## What it does
    /// Checks for NumPy arrays that are float64 by construction (`np.random.rand/randn/
    /// normal/uniform`, `np.zeros/ones/empty/linspace/loadtxt` without `dtype`, `np.array`
    /// of float literals, `.astype(np.float64)`) converted with `torch.from_numpy`,
    /// `torch.tensor` or `torch.as_tensor` without a dtype and then passed to a module
    /// (a model or a loss) in the same function.
    ///
    /// ## Why is this bad?
    /// NumPy's default float type is float64 and these conversions keep it, while modules
    /// hold float32 weights. The call fails with "expected scalar type Float but found
    /// Double" (or "mat1 and mat2 must have the same dtype"), and a float64 target makes
    /// `backward()` fail. Files that use float64 models (`.double()`,
    /// `torch.set_default_dtype`) are not checked. The rule is in preview: it follows values
    /// only through plain assignments inside one function.
    ///
    /// ## Example
    /// ```python
    /// x = torch.from_numpy(np.random.rand(64, 10))
    /// out = model(x)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// x = torch.from_numpy(np.random.rand(64, 10)).float()
    /// out = model(x)
    /// ```
    ///
    /// ## Fix safety
    /// The fix appends `.float()` to the conversion, which is what the float32 module needs;
    /// the original call cannot succeed, so the fix is safe.
    ///
    /// ## References
    /// - [torch.from_numpy](https://pytorch.org/docs/stable/generated/torch.from_numpy.html)
    /// - [OUCML#24](https://github.com/OUCMachineLearning/OUCML/issues/24)
    /// - [Dive-into-DL-PyTorch#31](https://github.com/ShusenTang/Dive-into-DL-PyTorch/issues/31)
    pub(crate) static FLOAT64_NUMPY_INTO_MODEL = {
        name: "float64-numpy-into-model",
        code: "TV051",
        group: Correctness,
        severity: Warning,
        title: "float64 NumPy data converted with torch.from_numpy/torch.tensor and fed to a float32 model (dtype mismatch RuntimeError)",
        autofix: Yes,
        preview: true,
        hooks: { stmt: check_stmt },
    };
}

/// NumPy functions whose result is float64 unless `dtype=` says otherwise.
const F64_PRODUCERS: &[&str] = &[
    "numpy.random.rand",
    "numpy.random.randn",
    "numpy.random.random",
    "numpy.random.random_sample",
    "numpy.random.uniform",
    "numpy.random.normal",
    "numpy.random.standard_normal",
    "numpy.zeros",
    "numpy.ones",
    "numpy.empty",
    "numpy.linspace",
    "numpy.loadtxt",
    "numpy.genfromtxt",
    "numpy.eye",
    "numpy.identity",
];

/// Tensor methods that keep the dtype.
const SAME_DTYPE: &[&str] = &[
    "cuda",
    "cpu",
    "unsqueeze",
    "squeeze",
    "view",
    "reshape",
    "requires_grad_",
    "contiguous",
    "permute",
    "transpose",
    "clone",
    "detach",
    "flatten",
];

fn float_literals(e: &Expr) -> bool {
    match e {
        Expr::List(l) => !l.elts.is_empty() && l.elts.iter().all(float_literals),
        Expr::Tuple(t) => !t.elts.is_empty() && t.elts.iter().all(float_literals),
        Expr::NumberLiteral(n) => matches!(n.value, Number::Float(_)),
        Expr::UnaryOp(u) => float_literals(&u.operand),
        _ => false,
    }
}

fn f64_dtype(checker: &Checker, e: &Expr) -> bool {
    helpers::name_of(e) == Some("float") && checker.scopes.lookup("float").is_none()
        || checker.resolves_to(e, &["numpy.float64", "numpy.double"])
        || matches!(helpers::str_value(e), Some("float64" | "double" | "f8"))
}

/// Is `e` a float64 NumPy array by construction? Returns the producing expression.
fn f64_array(
    checker: &Checker,
    e: &Expr,
    arrays: &FxHashMap<String, TextRange>,
) -> Option<TextRange> {
    match e {
        Expr::Name(n) => arrays.get(n.id.as_str()).copied(),
        Expr::Call(c) => {
            if let Some(("astype", _)) = helpers::method_call(c) {
                return c
                    .arguments
                    .args
                    .first()
                    .is_some_and(|a| f64_dtype(checker, a))
                    .then(|| e.range());
            }
            let q = checker.resolve(&c.func)?;
            if let Some(d) = helpers::keyword(c, "dtype") {
                return f64_dtype(checker, d).then(|| e.range());
            }
            if helpers::has_kwargs_splat(c) {
                return None;
            }
            if F64_PRODUCERS.contains(&q.as_str()) {
                return Some(e.range());
            }
            if matches!(q.as_str(), "numpy.array" | "numpy.asarray") {
                return c
                    .arguments
                    .args
                    .first()
                    .is_some_and(float_literals)
                    .then(|| e.range());
            }
            None
        }
        _ => None,
    }
}

/// `torch.from_numpy(A)` / `torch.tensor(A)` / `torch.as_tensor(A)` without dtype on a
/// float64 array: the conversion call and the array's producer.
fn f64_conversion<'a>(
    checker: &Checker,
    e: &'a Expr,
    arrays: &FxHashMap<String, TextRange>,
) -> Option<(&'a ast::ExprCall, TextRange)> {
    let Expr::Call(c) = e else { return None };
    if !checker.resolves_to(
        &c.func,
        &["torch.from_numpy", "torch.tensor", "torch.as_tensor"],
    ) {
        return None;
    }
    if helpers::keyword(c, "dtype").is_some()
        || helpers::has_kwargs_splat(c)
        || c.arguments.args.len() != 1
    {
        return None;
    }
    let producer = f64_array(checker, &c.arguments.args[0], arrays)?;
    Some((c, producer))
}

/// A float64 tensor: a tracked name, a conversion, or a dtype-keeping method chain on one.
/// Returns the conversion call range and the producer.
fn f64_tensor(
    checker: &Checker,
    e: &Expr,
    arrays: &FxHashMap<String, TextRange>,
    tensors: &FxHashMap<String, (TextRange, TextRange)>,
) -> Option<(TextRange, TextRange)> {
    match e {
        Expr::Name(n) => tensors.get(n.id.as_str()).copied(),
        Expr::Call(c) => {
            if let Some((conv, producer)) = f64_conversion(checker, e, arrays) {
                return Some((conv.range(), producer));
            }
            let (m, recv) = helpers::method_call(c)?;
            let keeps = SAME_DTYPE.contains(&m)
                || (m == "to"
                    && c.arguments.keywords.iter().all(|k| {
                        k.arg
                            .as_ref()
                            .is_some_and(|a| a.as_str() == "device" || a.as_str() == "non_blocking")
                    })
                    && c.arguments.args.iter().all(|a| {
                        matches!(a, Expr::StringLiteral(_))
                            || helpers::name_of(a)
                                .is_some_and(|n| n.contains("device") || n == "dev")
                    }));
            if keeps {
                f64_tensor(checker, recv, arrays, tensors)
            } else {
                None
            }
        }
        _ => None,
    }
}

fn file_uses_float64_models(checker: &Checker) -> bool {
    let t = checker.source.text.as_bytes();
    let has = |n: &str| memchr::memmem::find(t, n.as_bytes()).is_some();
    has(".double()")
        || has("torch.float64")
        || has("torch.double")
        || has("set_default_dtype")
        || has("set_default_tensor_type")
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Some(body) = analysed_body(checker, stmt) else {
        return;
    };
    if !body_mentions(checker, body, "from_numpy") && !body_mentions(checker, body, "tensor(") {
        return;
    }
    let mut stmts = Vec::new();
    walk_body(body, &mut |s, _| stmts.push(s));
    let mut arrays: FxHashMap<String, TextRange> = FxHashMap::default();
    let mut tensors: FxHashMap<String, (TextRange, TextRange)> = FxHashMap::default();
    let mut reported: FxHashSet<u32> = FxHashSet::default();
    for s in stmts {
        // Module calls with a float64 tensor argument.
        let mut hits: Vec<(TextRange, TextRange, TextRange)> = Vec::new();
        let mut module_calls = Vec::new();
        for e in own_exprs(s) {
            visit_exprs(e, &mut |x| {
                if let Expr::Call(c) = x {
                    module_calls.push(c);
                }
            });
        }
        for c in module_calls {
            if matches!(&*c.func, Expr::Name(_) | Expr::Attribute(_))
                && helpers::method_call(c).is_none_or(|(_, r)| helpers::name_of(r) == Some("self"))
                && checker.kind_of(&c.func) == Kind::Module
            {
                for a in &c.arguments.args {
                    if let Some((conv, producer)) = f64_tensor(checker, a, &arrays, &tensors) {
                        hits.push((conv, producer, c.range()));
                    }
                }
            }
        }
        if !hits.is_empty() && file_uses_float64_models(checker) {
            return;
        }
        for (conv, producer, call) in hits {
            if reported.insert(conv.start().to_u32()) {
                report(checker, conv, producer, call);
            }
        }
        // Bindings.
        if let Stmt::Assign(a) = s {
            if let [Expr::Name(n)] = &a.targets[..] {
                let name = n.id.to_string();
                let array = f64_array(checker, &a.value, &arrays);
                let tensor = f64_tensor(checker, &a.value, &arrays, &tensors);
                arrays.remove(&name);
                tensors.remove(&name);
                if let Some(p) = array {
                    arrays.insert(name.clone(), p);
                }
                if let Some(t) = tensor {
                    tensors.insert(name, t);
                }
                continue;
            }
        }
        arrays.retain(|k, _| !binds_name(s, k));
        tensors.retain(|k, _| !binds_name(s, k));
    }
}

fn report(checker: &mut Checker, conv: TextRange, producer: TextRange, call: TextRange) {
    let conv_text = checker.text(conv).to_string();
    let call_text = checker.text(call);
    let call_text = if call_text.len() > 40 {
        "the module call".to_string()
    } else {
        format!("`{call_text}`")
    };
    let d = checker.report(
        conv,
        format!(
            "`{conv_text}` keeps NumPy's float64 dtype, so {call_text} receives a Double tensor while the module works in float32: it fails with \"expected scalar type Float but found Double\" (or, for a loss target, in backward())"
        ),
    );
    d.add_related(producer, "this NumPy array is float64");
    d.add_related(call, "the float32 module that receives it");
    d.set_fix(RawFix::safe(
        "Convert to float32 with `.float()`",
        vec![RawEdit::insert(conv.end(), ".float()")],
    ));
}

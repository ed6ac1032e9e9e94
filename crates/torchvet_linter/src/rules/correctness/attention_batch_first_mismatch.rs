use super::model_helpers::{analysed_body, own_exprs, visit_exprs, walk_body};
use crate::checker::Checker;
use crate::fix::RawFix;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};
use rustc_hash::{FxHashMap, FxHashSet};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks `nn.MultiheadAttention`, `nn.TransformerEncoderLayer`,
    /// `nn.TransformerDecoderLayer` and `nn.Transformer` attributes built without
    /// `batch_first=True` whose call in `forward` receives a tensor that is visibly
    /// batch-major: it was unpacked as `B, T, C = x.shape` (or `x.size()`) or reshaped with
    /// `x.view(B, ...)` / `x.reshape(B, ...)` with a batch-size name first, and not
    /// transposed or permuted before the call.
    ///
    /// ## Why is this bad?
    /// These layers default to `batch_first=False` and read their input as
    /// `(seq, batch, feature)`. A `(batch, seq, feature)` tensor runs without any error, but
    /// attention then mixes different samples of the batch at the same position instead of
    /// the tokens of one sequence: the model trains on garbage and evaluation leaks
    /// information across samples. The rule is in preview: it relies on the names used for
    /// shapes (`B`, `bs`, `batch_size`, ...).
    ///
    /// ## Example
    /// ```python
    /// class Block(nn.Module):
    ///     def __init__(self):
    ///         super().__init__()
    ///         self.attn = nn.MultiheadAttention(512, 8)
    ///
    ///     def forward(self, x):
    ///         B, T, C = x.shape
    ///         out, _ = self.attn(x, x, x)
    ///         return out
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// class Block(nn.Module):
    ///     def __init__(self):
    ///         super().__init__()
    ///         self.attn = nn.MultiheadAttention(512, 8, batch_first=True)
    ///
    ///     def forward(self, x):
    ///         B, T, C = x.shape
    ///         out, _ = self.attn(x, x, x)
    ///         return out
    /// ```
    ///
    /// ## Fix safety
    /// The fix adds `batch_first=True` to the layer's constructor. It is unsafe: other call
    /// sites of the layer may pass sequence-major tensors, and pretrained weights or manual
    /// transposes elsewhere may rely on the old layout.
    ///
    /// ## References
    /// - [nn.MultiheadAttention](https://pytorch.org/docs/stable/generated/torch.nn.MultiheadAttention.html)
    /// - [nn.TransformerEncoderLayer](https://pytorch.org/docs/stable/generated/torch.nn.TransformerEncoderLayer.html)
    /// - [pytorch/pytorch#141107](https://github.com/pytorch/pytorch/issues/141107)
    pub(crate) static ATTENTION_BATCH_FIRST_MISMATCH = {
        name: "attention-batch-first-mismatch",
        code: "TV023",
        group: Correctness,
        severity: Warning,
        title: "nn.MultiheadAttention/Transformer*Layer built with default batch_first=False but fed (batch, seq, feature) tensors",
        autofix: Suggest,
        preview: true,
        hooks: { stmt: check_stmt },
    };
}

const LAYERS: &[&str] = &[
    "torch.nn.MultiheadAttention",
    "torch.nn.modules.activation.MultiheadAttention",
    "torch.nn.TransformerEncoderLayer",
    "torch.nn.TransformerDecoderLayer",
    "torch.nn.Transformer",
];

/// Names people give the batch size.
const BATCH_NAMES: &[&str] = &[
    "B",
    "b",
    "bs",
    "bsz",
    "batch",
    "batch_size",
    "n_batch",
    "nbatch",
    "bsize",
];

fn is_batch_name(e: &Expr) -> bool {
    helpers::name_of(e).is_some_and(|n| BATCH_NAMES.contains(&n))
}

/// The layers of the class built without `batch_first`: attribute -> constructor call.
fn layers<'a>(
    checker: &Checker,
    class: &'a ast::StmtClassDef,
) -> FxHashMap<&'a str, &'a ast::ExprCall> {
    let mut out = FxHashMap::default();
    for s in &class.body {
        let Stmt::FunctionDef(f) = s else { continue };
        walk_body(&f.body, &mut |st, _| {
            let Stmt::Assign(a) = st else { return };
            let [t] = &a.targets[..] else { return };
            let Some(attr) = helpers::self_attribute(t) else {
                return;
            };
            let Expr::Call(c) = &*a.value else { return };
            if checker.resolves_to(&c.func, LAYERS)
                && helpers::keyword(c, "batch_first").is_none()
                && !helpers::has_kwargs_splat(c)
                && !helpers::has_args_splat(c)
            {
                out.insert(attr, c);
            }
        });
    }
    out
}

/// `B, T, C = x.shape` / `x.size()`: the tensor name, when the first name is a batch size.
fn shape_unpack(a: &ast::StmtAssign) -> Option<&str> {
    let [Expr::Tuple(t)] = &a.targets[..] else {
        return None;
    };
    if t.elts.len() != 3 || !is_batch_name(&t.elts[0]) {
        return None;
    }
    let src = match &*a.value {
        Expr::Attribute(at) if at.attr.as_str() == "shape" => &at.value,
        Expr::Call(c) => match helpers::method_call(c) {
            Some(("size", recv)) if c.arguments.is_empty() => recv,
            _ => return None,
        },
        _ => return None,
    };
    helpers::name_of(src)
}

/// Does `value` keep a batch-major layout of one of `major` (`x + pos`, `self.norm(x)`,
/// `self.drop(x)`), or make one (`y.view(B, ...)`)?
fn keeps_layout(value: &Expr, major: &FxHashMap<String, TextRange>) -> Option<TextRange> {
    match value {
        Expr::Name(n) => major.get(n.id.as_str()).copied(),
        Expr::BinOp(b) => keeps_layout(&b.left, major).or_else(|| keeps_layout(&b.right, major)),
        Expr::Call(c) => match helpers::method_call(c) {
            Some(("view" | "reshape", _))
                if c.arguments.args.first().is_some_and(is_batch_name) =>
            {
                Some(value.range())
            }
            Some((_, recv)) if helpers::name_of(recv) == Some("self") => {
                // A sub-module call (norm, dropout, linear, embedding) on a batch-major input.
                c.arguments
                    .args
                    .first()
                    .and_then(|a| keeps_layout(a, major))
            }
            Some(("contiguous" | "float" | "to", recv)) => keeps_layout(recv, major),
            _ => None,
        },
        _ => None,
    }
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    if !checker.in_module_method("forward") {
        return;
    }
    let Some(body) = analysed_body(checker, stmt) else {
        return;
    };
    let Some(class) = checker.module_method() else {
        return;
    };
    let layers = layers(checker, class.def);
    if layers.is_empty() {
        return;
    }
    let mut stmts = Vec::new();
    walk_body(body, &mut |s, _| stmts.push(s));
    // Batch-major names and the statement showing it.
    let mut major: FxHashMap<String, TextRange> = FxHashMap::default();
    let mut done: FxHashSet<&str> = FxHashSet::default();
    let mut findings = Vec::new();
    for s in stmts {
        // Layer calls first (the statement's right-hand side runs before its binding).
        for e in own_exprs(s) {
            visit_exprs(e, &mut |x| {
                let Expr::Call(c) = x else { return };
                let Some(attr) = helpers::self_attribute(&c.func) else {
                    return;
                };
                let Some((name, ctor)) = layers.get_key_value(attr) else {
                    return;
                };
                if done.contains(name) {
                    return;
                }
                let Some(arg) = c.arguments.args.first() else {
                    return;
                };
                let Some(arg_name) = helpers::name_of(arg) else {
                    return;
                };
                if let Some(evidence) = major.get(arg_name) {
                    done.insert(name);
                    findings.push((c.range(), *name, *ctor, arg_name.to_string(), *evidence));
                }
            });
        }
        match s {
            Stmt::Assign(a) => {
                if let Some(x) = shape_unpack(a) {
                    major.insert(x.to_string(), a.range());
                    continue;
                }
                let kept = keeps_layout(&a.value, &major);
                for t in &a.targets {
                    let mut names = Vec::new();
                    helpers::for_each_bound_name(t, &mut |n| names.push(n.to_string()));
                    for n in names {
                        match (kept, t) {
                            (Some(r), Expr::Name(_)) => {
                                major.insert(n, r);
                            }
                            _ => {
                                major.remove(&n);
                            }
                        }
                    }
                }
            }
            _ => {
                let bound: Vec<String> = major
                    .keys()
                    .filter(|k| super::model_helpers::binds_name(s, k))
                    .cloned()
                    .collect();
                for k in bound {
                    major.remove(&k);
                }
            }
        }
    }
    for (call, attr, ctor, arg, evidence) in findings {
        let layer = checker.text(ctor.func.range()).to_string();
        let fix = RawFix::unsafe_edit(
            "Build the layer with `batch_first=True`",
            vec![crate::fix::add_keyword_argument(ctor, "batch_first=True")],
        );
        let d = checker.report(
            call,
            format!(
                "`self.{attr}` is a `{layer}` built without batch_first=True, so it reads `{arg}` as (seq, batch, feature), but `{arg}` is (batch, seq, feature): attention mixes different samples instead of the tokens of each sequence"
            ),
        );
        d.add_related(
            ctor.range(),
            "built here with the default batch_first=False",
        );
        d.add_related(evidence, format!("`{arg}` is batch-major here"));
        d.set_fix(fix);
    }
}

use super::model_helpers::{calls_in, is_optimizer_call, values_at, walk_body};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{self as ast, Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers::{self, Literal};

crate::declare_rule! {
    /// ## What it does
    /// Checks for an optimizer built with `weight_decay > 0` over `model.parameters()` as a
    /// single group, where the model visibly has normalization layers, embeddings or biased
    /// `Linear`/`Conv` layers (a module class of this file, `self` in its own method, or a
    /// torchvision/timm model).
    ///
    /// ## Why is this bad?
    /// Weight decay pulls every decayed parameter toward zero. For weight matrices that is the
    /// intended regularisation, but LayerNorm/BatchNorm scales and shifts, biases and
    /// (often) embeddings are not over-fitting capacity: decaying them shrinks the
    /// normalisation gains and measurably hurts accuracy in transformers and CNNs. The usual
    /// recipe decays only parameters with two or more dimensions. The rule is in preview and
    /// off by default (advice).
    ///
    /// ## Example
    /// ```python
    /// opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// decay = [p for p in model.parameters() if p.ndim >= 2]
    /// no_decay = [p for p in model.parameters() if p.ndim < 2]
    /// opt = torch.optim.AdamW(
    ///     [{"params": decay}, {"params": no_decay, "weight_decay": 0.0}],
    ///     lr=3e-4,
    ///     weight_decay=0.1,
    /// )
    /// ```
    ///
    /// ## Fix safety
    /// The fix replaces `model.parameters()` with two parameter groups (parameters with
    /// `ndim >= 2` keep the optimizer's weight decay, the others get `0.0`). It changes the
    /// training dynamics, so it is unsafe. A model whose only such layer is an `nn.Embedding`
    /// gets no fix: its table has `ndim == 2`, so the split would not exclude it.
    ///
    /// ## References
    /// - [Per-parameter options](https://pytorch.org/docs/stable/optim.html#per-parameter-options)
    /// - [nanoGPT configure_optimizers](https://github.com/karpathy/nanoGPT/blob/master/model.py)
    /// - [MEDS_EIC_AR#30](https://github.com/mmcdermott/MEDS_EIC_AR/issues/30)
    pub(crate) static WEIGHT_DECAY_ON_NORM_AND_BIAS = {
        name: "weight-decay-on-norm-and-bias",
        code: "TV105",
        group: Correctness,
        severity: Info,
        title: "Weight decay applied uniformly to biases and normalization weights",
        autofix: Suggest,
        preview: true,
        hooks: { call: check_call },
    };
}

const NORMS: &[&str] = &[
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "LayerNorm",
    "GroupNorm",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "RMSNorm",
    "SyncBatchNorm",
    "Embedding",
];
const BIASED: &[&str] = &["Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose2d"];

fn positive(e: &Expr) -> bool {
    match helpers::literal(e) {
        Some(Literal::Int(i)) => i > 0,
        Some(Literal::Float(f)) => f > 0.0,
        _ => false,
    }
}

/// A layer in `class` (or a module class of this file it builds, two levels deep) that
/// should not be decayed: its constructor call and class name.
fn undecayed_layer<'a>(
    checker: &Checker<'a>,
    class: &'a ast::StmtClassDef,
    depth: u32,
) -> Option<(&'a ExprCall, String)> {
    let mut found: Option<(&'a ExprCall, String)> = None;
    let mut biased: Option<(&'a ExprCall, String)> = None;
    let mut embedding: Option<(&'a ExprCall, String)> = None;
    let mut nested: Vec<String> = Vec::new();
    for s in &class.body {
        let Stmt::FunctionDef(f) = s else { continue };
        walk_body(&f.body, &mut |st, _| {
            for c in calls_in(st) {
                if found.is_some() {
                    return;
                }
                if let Some(q) = checker.resolve(&c.func) {
                    let Some(last) = q.strip_prefix("torch.nn.") else {
                        continue;
                    };
                    if last == "Embedding" {
                        // Named only when no norm or biased layer is: the split the fix
                        // offers (ndim < 2) covers those, not an embedding table.
                        embedding.get_or_insert((c, last.to_string()));
                    } else if NORMS.contains(&last) {
                        found = Some((c, last.to_string()));
                    } else if biased.is_none()
                        && BIASED.contains(&last)
                        && helpers::keyword(c, "bias")
                            .is_none_or(|b| helpers::is_truthy(b) == Some(true))
                        && !helpers::has_kwargs_splat(c)
                    {
                        biased = Some((c, format!("{last} (with bias)")));
                    }
                } else if let Expr::Name(n) = &*c.func {
                    if checker.classes.is_module(n.id.as_str()) {
                        nested.push(n.id.to_string());
                    }
                }
            }
        });
    }
    if found.is_some() {
        return found;
    }
    if depth < 2 {
        for name in &nested {
            if let Some(c) = class_def(checker, name) {
                if let Some(f) = undecayed_layer(checker, c, depth + 1) {
                    return Some(f);
                }
            }
        }
    }
    biased.or(embedding)
}

fn class_def<'a>(checker: &Checker<'a>, name: &str) -> Option<&'a ast::StmtClassDef> {
    checker.module().body.iter().find_map(|s| match s {
        Stmt::ClassDef(c) if c.name.as_str() == name => Some(c),
        _ => None,
    })
}

/// Why the model has parameters that should not be decayed: the evidence range and text.
fn model_evidence(checker: &Checker, model: &Expr) -> Option<(TextRange, String)> {
    if helpers::name_of(model) == Some("self") {
        let class = checker.module_method()?;
        let (c, what) = undecayed_layer(checker, class.def, 0)?;
        return Some((c.range(), what));
    }
    let name = helpers::name_of(model)?;
    let values = values_at(checker, name, model.start())?;
    let [value] = values.as_slice() else {
        return None;
    };
    let mut root = *value;
    while let Expr::Call(c) = root {
        match helpers::method_call(c) {
            Some(("to" | "cuda" | "train", recv)) => root = recv,
            _ => break,
        }
    }
    let Expr::Call(c) = root else { return None };
    if let Expr::Name(n) = &*c.func {
        if checker.classes.is_module(n.id.as_str())
            && checker.scopes.lookup(n.id.as_str()).is_none()
        {
            let class = class_def(checker, n.id.as_str())?;
            let (layer, what) = undecayed_layer(checker, class, 0)?;
            return Some((layer.range(), what));
        }
    }
    let q = checker.resolve(&c.func)?;
    let pretrained_zoo = q == "timm.create_model"
        || q.strip_prefix("torchvision.models.").is_some_and(|rest| {
            let last = helpers::last_segment(rest);
            last.starts_with(|ch: char| ch.is_ascii_lowercase())
                && !matches!(last, "get_model_weights" | "get_weight" | "list_models")
        });
    pretrained_zoo.then(|| (c.range(), "BatchNorm/LayerNorm layers".to_string()))
}

fn check_call(checker: &mut Checker, call: &ExprCall, _q: Option<&str>) {
    let Some(wd) = helpers::keyword(call, "weight_decay") else {
        return;
    };
    if !positive(wd) || !is_optimizer_call(checker, call) {
        return;
    }
    let Some(params) = helpers::argument(call, "params", 0) else {
        return;
    };
    let Expr::Call(pc) = params else { return };
    let Some(("parameters", model)) = helpers::method_call(pc) else {
        return;
    };
    if !pc.arguments.is_empty() {
        return;
    }
    let Some((evidence, what)) = model_evidence(checker, model) else {
        return;
    };
    let model_text = checker.text(model.range()).to_string();
    let wd_text = checker.text(wd.range()).to_string();
    let ps = checker.text(pc.range()).to_string();
    let fix = RawFix::unsafe_edit(
        "Split into a decayed group (ndim >= 2) and a group with weight_decay=0.0",
        vec![RawEdit::replace(
            pc.range(),
            format!(
                "[{{\"params\": [p for p in {ps} if p.ndim >= 2]}}, {{\"params\": [p for p in {ps} if p.ndim < 2], \"weight_decay\": 0.0}}]"
            ),
        )],
    );
    if what == "Embedding" {
        // The ndim split does not take an embedding table out of the decay: no fix.
        let d = checker.report(
            pc.range(),
            format!(
                "weight_decay={wd_text} is applied to every parameter of `{model_text}`, including the table of its Embedding: the rows of rare tokens are pulled toward zero between their updates; give the embedding's weight a group with weight_decay=0"
            ),
        );
        d.add_related(evidence, "an embedding table that gets decayed");
        d.add_related(wd.range(), "the uniform weight decay");
        return;
    }
    let d = checker.report(
        pc.range(),
        format!(
            "weight_decay={wd_text} is applied to every parameter of `{model_text}`, including the biases and normalization weights of its {what}: they are pulled toward zero, which shrinks normalization gains and usually costs accuracy; give parameters with ndim < 2 a group with weight_decay=0"
        ),
    );
    d.add_related(
        evidence,
        "a layer whose bias/normalization parameters get decayed",
    );
    d.add_related(wd.range(), "the uniform weight decay");
    d.set_fix(fix);
}

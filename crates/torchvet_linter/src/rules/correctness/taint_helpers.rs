//! Helpers of the loss-input rules built on the taint analysis (`Checker::taint_of`): which
//! calls are loss calls (functional or a loss object), and how to describe a producer.
use crate::checker::{Checker, RawDiagnostic};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::dataflow::{Certainty, Fact, Prop, Value};
use torchvet_semantic::helpers;
use torchvet_semantic::project::{FileId, ProjectFile};

/// The losses these rules know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Loss {
    /// `nn.CrossEntropyLoss` / `F.cross_entropy`.
    CrossEntropy,
    /// `nn.NLLLoss` / `F.nll_loss`.
    Nll,
    /// `nn.BCELoss` / `F.binary_cross_entropy`.
    Bce,
    /// `nn.BCEWithLogitsLoss` / `F.binary_cross_entropy_with_logits`.
    BceWithLogits,
    /// Elementwise regression losses: MSE, L1, smooth L1, Huber.
    Regression,
}

impl Loss {
    fn functional(name: &str) -> Option<Loss> {
        Some(match name {
            "cross_entropy" => Loss::CrossEntropy,
            "nll_loss" => Loss::Nll,
            "binary_cross_entropy" => Loss::Bce,
            "binary_cross_entropy_with_logits" => Loss::BceWithLogits,
            "mse_loss" | "l1_loss" | "smooth_l1_loss" | "huber_loss" => Loss::Regression,
            _ => return None,
        })
    }

    fn class(name: &str) -> Option<Loss> {
        Some(match name {
            "CrossEntropyLoss" => Loss::CrossEntropy,
            "NLLLoss" => Loss::Nll,
            "BCELoss" => Loss::Bce,
            "BCEWithLogitsLoss" => Loss::BceWithLogits,
            "MSELoss" | "L1Loss" | "SmoothL1Loss" | "HuberLoss" => Loss::Regression,
            _ => return None,
        })
    }

    /// The class name (for the cheap text check).
    pub(crate) fn class_name(self) -> &'static str {
        match self {
            Loss::CrossEntropy => "CrossEntropyLoss",
            Loss::Nll => "NLLLoss",
            Loss::Bce => "BCELoss",
            Loss::BceWithLogits => "BCEWithLogitsLoss",
            Loss::Regression => "Loss",
        }
    }
}

/// A loss call: which loss, its input argument, and the loss object's constructor (for a
/// loss object).
pub(crate) struct LossCall<'c> {
    /// Argument 0 (`input`).
    pub input: &'c Expr,
    /// The constructor call of the loss object, when the loss is an object.
    pub ctor: Option<TextRange>,
}

/// Is `call` a call of `wanted` (functional form or a loss object)? Cheap checks first: the
/// dataflow runs only for calls whose callee could be a loss object of a class the file
/// mentions.
pub(crate) fn loss_call<'c>(
    checker: &mut Checker,
    call: &'c ExprCall,
    q: Option<&str>,
    wanted: Loss,
) -> Option<LossCall<'c>> {
    let input = helpers::argument(call, "input", 0)?;
    if let Some(q) = q {
        let loss = match q.strip_prefix("torch.nn.functional.") {
            Some(name) => Loss::functional(name),
            None => None,
        }?;
        return (loss == wanted).then_some(LossCall { input, ctor: None });
    }
    if !matches!(
        &*call.func,
        Expr::Name(_) | Expr::Attribute(_) | Expr::Call(_)
    ) {
        return None;
    }
    if let Expr::Attribute(a) = &*call.func {
        // `x.softmax(...)`-style method calls are never loss objects.
        if helpers::name_of(&a.value) != Some("self") {
            return None;
        }
    }
    // Loss objects take an input and a target: single-argument calls are never losses.
    if call.arguments.args.len() + call.arguments.keywords.len() < 2 {
        return None;
    }
    // Every class name contains "Loss": one search rejects a file without any loss for all
    // five (cached per file).
    if !checker.mentions("Loss") || !checker.mentions(wanted.class_name()) {
        return None;
    }
    let callee = checker.taint_of(&call.func);
    let inst = callee.instance.as_deref()?;
    let class = inst.class.strip_prefix("torch.nn.")?;
    let loss = Loss::class(helpers::last_segment(class))?;
    (loss == wanted).then_some(LossCall {
        input,
        ctor: Some(inst.ctor),
    })
}

/// The definite probabilities fact of a value whose producer is one of `ops`.
pub(crate) fn probabilities<'v>(v: &'v Value, ops: &[&str]) -> Option<&'v Fact> {
    if v.get(Prop::LogProbabilities).is_some() {
        return None;
    }
    v.definite(Prop::Probabilities)
        .filter(|f| ops.contains(&f.op))
}

/// The probabilities fact of a model output that holds for one of the classes the model may
/// be ([`Certainty::OneOf`]: `net` is an `MLP` or a `CNN` by configuration, and `MLP.forward`
/// ends in softmax), with that class's name. Not when log-probabilities reach the value on
/// any path other than another class's output.
pub(crate) fn one_of_probabilities<'v>(v: &'v Value, ops: &[&str]) -> Option<(&'v Fact, &'v str)> {
    if v.get(Prop::LogProbabilities)
        .is_some_and(|f| f.certainty != Certainty::OneOf)
    {
        return None;
    }
    let f = v
        .get(Prop::Probabilities)
        .filter(|f| f.certainty == Certainty::OneOf && ops.contains(&f.op))?;
    let class = f.through.as_deref()?.strip_suffix(".forward")?;
    Some((f, class))
}

/// "`probs` is a softmax output" / "`out` is a softmax output (returned by `Net.forward`)".
pub(crate) fn describe_input(checker: &Checker, input: &Expr, f: &Fact) -> String {
    let text = short(checker.text(input.range()));
    match &f.through {
        Some(through) => format!("`{text}` is a {} output (returned by `{through}`)", f.op),
        None => format!("`{text}` is a {} output", f.op),
    }
}

/// The secondary-location label for a producer.
fn producer_label(f: &Fact) -> String {
    match &f.through {
        Some(through) => format!("the {} that `{through}` applies", f.op),
        None => format!("the {} that produces it", f.op),
    }
}

/// Where a finding points for the producer of a fact: in this file, or, when the value comes
/// from a class or function of another file ([`Fact::remote`]), at the producing expression in
/// that file (not at the place where the value enters this one). Taken before the finding is
/// reported, attached after.
pub(crate) struct ProducerNote {
    label: String,
    at: NoteAt,
}

enum NoteAt {
    Here(TextRange),
    Remote(ProjectFile, FileId, TextRange),
}

/// The producer note of `f` for a finding on `input`; `None` when the producer is the flagged
/// input itself.
pub(crate) fn producer_note(checker: &Checker, input: TextRange, f: &Fact) -> Option<ProducerNote> {
    let at = match f.remote {
        Some((file, range)) => match checker.project_or_file() {
            Some(p) if p.file != file => NoteAt::Remote(p.clone(), file, range),
            Some(_) => NoteAt::Here(range),
            None => return None,
        },
        None if f.origin == input => return None,
        None => NoteAt::Here(f.origin),
    };
    Some(ProducerNote {
        label: producer_label(f),
        at,
    })
}

impl ProducerNote {
    pub(crate) fn attach(self, diag: &mut RawDiagnostic) {
        match self.at {
            NoteAt::Here(range) => diag.add_related(range, self.label),
            NoteAt::Remote(p, file, range) => diag.add_remote(&p, file, range, self.label),
        };
    }
}

/// Source text shortened for messages.
pub(crate) fn short(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 40 {
        let mut s: String = one_line.chars().take(37).collect();
        s.push_str("...");
        s
    } else {
        one_line
    }
}

/// When `input` is itself the producing call (`F.softmax(z, dim=1)`, `z.softmax(1)`,
/// `torch.sigmoid(z)`, `nn.Softmax(dim=1)(z)`), the operand `z`.
pub(crate) fn inline_operand<'e>(checker: &Checker, input: &'e Expr, f: &Fact) -> Option<&'e Expr> {
    if f.through.is_some() || f.origin != input.range() {
        return None;
    }
    let Expr::Call(c) = input else { return None };
    match &*c.func {
        Expr::Attribute(a) if checker.resolve(&a.value).is_none() => {
            // Method form: `z.softmax(1)` / `z.sigmoid()`.
            matches!(a.attr.as_str(), "softmax" | "sigmoid").then_some(&*a.value)
        }
        Expr::Attribute(_) | Expr::Name(_) if checker.resolve(&c.func).is_some() => c
            .arguments
            .args
            .first()
            .filter(|_| c.arguments.args.len() <= 2),
        Expr::Call(_) if c.arguments.args.len() == 1 && c.arguments.keywords.is_empty() => {
            c.arguments.args.first()
        }
        _ => None,
    }
    .filter(|e| !matches!(e, Expr::Starred(_)))
}

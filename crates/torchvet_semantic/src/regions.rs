//! Evaluation regions: the words and shapes that say code evaluates a model rather than
//! training it. The linter's `Checker::eval_region` combines these with the flow analysis (no
//! backward or optimizer step in the loop, none after it in the same iteration or function)
//! to decide, wherever the loop is written (a standalone function, a notebook cell, or nested
//! in the epoch loop right after the training loop), that a loop is an evaluation region.
use ruff_python_ast::{Expr, Stmt};

/// Does an identifier name an evaluation routine (`validate`, `eval_epoch`, `run_test`,
/// `test`, `predict`, `inference`)? `test_*` / `_test*` names are pytest-style tests, not
/// evaluation routines.
pub fn is_eval_name(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "val",
        "valid",
        "validate",
        "validation",
        "eval",
        "evaluate",
        "evaluation",
        "test",
        "testing",
        "predict",
        "prediction",
        "predictions",
        "infer",
        "inference",
    ];
    let b = name.as_bytes();
    let starts = |p: &[u8]| b.len() >= p.len() && b[..p.len()].eq_ignore_ascii_case(p);
    if starts(b"test_") || starts(b"_test") {
        return false;
    }
    name.split('_')
        .any(|tok| WORDS.iter().any(|w| tok.eq_ignore_ascii_case(w)))
}

/// Does a name say evaluation data (`val_loader`, `test_dl`, `valid_data`, `dev_set`,
/// `eval_dataloader`, `loader_val`, `testloader`)?
pub fn is_eval_data_name(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    if l.contains("train") {
        return false;
    }
    l.split(|c: char| c == '_' || c == '.' || c.is_ascii_digit())
        .any(|tok| {
            matches!(
                tok,
                "val"
                    | "valid"
                    | "validation"
                    | "test"
                    | "testing"
                    | "eval"
                    | "evaluation"
                    | "dev"
                    | "holdout"
            ) || ((tok.starts_with("val") || tok.starts_with("test") || tok.starts_with("eval"))
                && (tok.ends_with("loader")
                    || tok.ends_with("dl")
                    || tok.ends_with("set")
                    || tok.ends_with("data")
                    || tok.ends_with("iter")))
        })
}

/// Does a loop's iterable name evaluation data: `val_loader`, `self.test_loader`,
/// `loaders["val"]`, `tqdm(val_loader)`, `enumerate(dev_loader)`, `zip(x, val_y)`?
pub fn iterates_eval_data(iter: &Expr) -> bool {
    match iter {
        Expr::Name(n) => is_eval_data_name(n.id.as_str()),
        Expr::Attribute(a) => is_eval_data_name(a.attr.as_str()),
        Expr::Subscript(s) => {
            crate::helpers::str_value(&s.slice).is_some_and(is_eval_data_name)
                || iterates_eval_data(&s.value)
        }
        Expr::Call(c) => {
            let wrapper = match &*c.func {
                Expr::Name(n) => n.id.as_str(),
                Expr::Attribute(a) => a.attr.as_str(),
                _ => "",
            };
            matches!(
                wrapper,
                "tqdm" | "enumerate" | "zip" | "iter" | "track" | "progress_bar"
            ) && c.arguments.args.iter().any(iterates_eval_data)
        }
        _ => false,
    }
}

/// Words in a loop's text that say it computes a metric or a loss from outputs (the second kind
/// of evidence for an evaluation loop).
const METRIC_WORDS: &[&str] = &[
    "argmax",
    "correct",
    "accura",
    "loss",
    "crit",
    "metric",
    ".eq(",
    "==",
    "score",
    "precision",
    "recall",
    "f1",
    "iou",
    "psnr",
    "bleu",
    "perplexity",
    "confusion",
    "topk",
];

/// Does a loop's source text compute a metric or a loss?
pub fn computes_metric(text: &str) -> bool {
    let l = text.to_ascii_lowercase();
    METRIC_WORDS.iter().any(|w| l.contains(w))
}

/// Words that say the code uses gradients on purpose (saliency, adversarial examples,
/// test-time adaptation): such loops are not evaluation regions for the grad-mode rules.
pub fn uses_gradients(text: &str) -> bool {
    [
        "requires_grad",
        "autograd.grad",
        "enable_grad",
        "set_grad_enabled(True",
        ".grad(",
    ]
    .iter()
    .any(|w| text.contains(w))
}

/// The body of a `for`/`while` loop.
pub fn loop_body(stmt: &Stmt) -> &[Stmt] {
    match stmt {
        Stmt::For(f) => &f.body,
        Stmt::While(w) => &w.body,
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluation_data_names() {
        for n in [
            "val_loader",
            "valid_dl",
            "test_loader",
            "testloader",
            "eval_dataloader",
            "dev_set",
            "loader_val",
            "val",
        ] {
            assert!(is_eval_data_name(n), "{n}");
        }
        for n in [
            "train_loader",
            "loader",
            "data",
            "batches",
            "interval",
            "trainval_loader",
        ] {
            assert!(!is_eval_data_name(n), "{n}");
        }
        assert!(is_eval_name("validate"));
        assert!(is_eval_name("test"));
        assert!(!is_eval_name("test_forward_shape"));
        assert!(computes_metric("correct += (out.argmax(1) == y).sum()"));
        assert!(!computes_metric("outs.append(model(x))"));
    }
}

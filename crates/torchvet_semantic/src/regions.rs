//! Evaluation regions: the words and shapes that say code evaluates a model rather than
//! training it. The linter's `Checker::eval_region` combines these with the flow analysis (no
//! backward or optimizer step in the loop, none after it in the same iteration or function)
//! to decide, wherever the loop is written (a standalone function, a notebook cell, or nested
//! in the epoch loop right after the training loop), that a loop is an evaluation region.
use crate::helpers;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;

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
    has_word(name, WORDS)
}

/// Is one of the `_`-separated words of an identifier one of `words` (any case)?
fn has_word(name: &str, words: &[&str]) -> bool {
    name.split('_')
        .any(|tok| words.iter().any(|w| tok.eq_ignore_ascii_case(w)))
}

/// Does an identifier name a routine that runs a model only to look at what it makes
/// (`sample_images`, `generate`, `visualize_predictions`, `plot_reconstructions`,
/// `show_samples`, `greedy_decode`, `beam_search`, `translate`)? Such a routine that trains
/// nowhere and only reads the output is inference.
pub fn is_sampling_name(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "sample",
        "samples",
        "sampling",
        "generate",
        "generation",
        "visualize",
        "visualise",
        "visualization",
        "visualisation",
        "plot",
        "show",
        "display",
        "draw",
        // Sequence decoding at inference (`greedy_decode`, `beam_search`, `translate`).
        "decode",
        "greedy",
        "beam",
        "translate",
    ];
    has_word(name, WORDS)
}

/// Is a function named for choosing an agent's action (`act`, `select_action`,
/// `choose_action`, `get_action`)? A reinforcement-learning agent picks its action with a
/// forward pass whose output is only read (`q_values.argmax().item()`); a policy-gradient
/// agent keeps the log-probability for its update, which the region's callers check.
pub fn is_action_name(name: &str) -> bool {
    has_word(name, &["act", "action"])
}

/// Does a function name say it computes predictions under their short name (`get_pred`,
/// `preds_of`, `pred_fn`)? [`is_eval_name`] takes the long forms (`predict`, `predictions`).
pub fn is_pred_name(name: &str) -> bool {
    has_word(name, &["pred", "preds"])
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
    "miou",
    "psnr",
    "bleu",
    "perplexity",
    "confusion",
    "topk",
];

/// Does a loop's source text compute a metric or a loss? Comments do not count ("the correct
/// slice"). An equality test counts when it compares two computed values
/// (`(pred == y).sum()`); one against a constant (`if i == -1:`, `mode == "train"`,
/// `x == None`), or the test of an `if` / `elif` / `while` / `assert` line
/// (`elif layout == torch.sparse_csc:`), is control flow or a check, not a count of correct
/// predictions.
pub fn computes_metric(text: &str) -> bool {
    let l = text.to_ascii_lowercase();
    let found = text_lines(&l).any(|line| {
        let code = without_comment(line);
        METRIC_WORDS.iter().any(|w| match *w {
            "==" => !is_test_line(code) && compares_values(code),
            // A word of its own (`iou`, `mean_iou`), not inside another ("previous").
            "iou" => code.match_indices(w).any(|(i, _)| {
                !code[..i].ends_with(|c: char| c.is_ascii_alphabetic())
                    && !code[i + w.len()..].starts_with(|c: char| c.is_ascii_alphabetic())
            }),
            _ => code.contains(w),
        })
    });
    found
}

fn text_lines(text: &str) -> impl Iterator<Item = &str> {
    text.split(['\n', '\r'])
}

/// A line without its `#` comment (a `#` inside a one-line string literal is kept).
fn without_comment(line: &str) -> &str {
    let mut quote = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '#' => return &line[..i],
                '\'' | '"' => quote = Some(c),
                _ => {}
            },
        }
    }
    line
}

/// Is the line the test of an `if` / `elif` / `while` or an `assert`?
fn is_test_line(line: &str) -> bool {
    let t = line.trim_start();
    ["if ", "elif ", "while ", "assert "]
        .iter()
        .any(|k| t.starts_with(k))
}

/// Is there an `==` in `text` with no literal constant on either side?
fn compares_values(text: &str) -> bool {
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(i) = text[from..].find("==").map(|i| i + from) {
        from = i + 2;
        let after = text[i + 2..].trim_start_matches([' ', '\t']);
        let before = text[..i].trim_end_matches([' ', '\t']);
        if !(constant_start(after) || constant_end(before)) {
            return true;
        }
        if from >= b.len() {
            break;
        }
    }
    false
}

/// Does `s` start with a literal constant (a number, possibly negative, a string, `none`,
/// `true` or `false`, as the lower-cased text spells them)?
fn constant_start(s: &str) -> bool {
    let s = s.strip_prefix('-').map_or(s, str::trim_start);
    let word_is = |w: &str| {
        s.strip_prefix(w)
            .is_some_and(|r| !r.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
    };
    s.starts_with(|c: char| c.is_ascii_digit() || c == '\'' || c == '"')
        || word_is("none")
        || word_is("true")
        || word_is("false")
}

/// Does `s` end with a literal constant (a number or a string)?
fn constant_end(s: &str) -> bool {
    if s.ends_with(['\'', '"']) {
        return true;
    }
    let token: &str = {
        let start = s
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .map_or(0, |i| i + 1);
        &s[start..]
    };
    token.starts_with(|c: char| c.is_ascii_digit())
}

/// Does an identifier name a training routine (`forward_train`, `train_step`, `train`,
/// `training_epoch`)? Its loops build what a loss is computed from; words of a metric in
/// them (`loss`, `acc`) do not make them evaluation.
pub fn is_train_name(name: &str) -> bool {
    has_word(name, &["train", "training"])
}

/// Words of an identifier that name a running best (`best_acc`, `min_loss`, `is_best`,
/// `lowest_val`).
const BEST_WORDS: &[&str] = &[
    "best",
    "min",
    "max",
    "lowest",
    "highest",
    "top",
    "record",
    "improved",
    "improvement",
];

/// Words of an identifier that name a quality measure (`val_acc`, `epoch_loss`, `score`).
const MEASURE_WORDS: &[&str] = &[
    "acc",
    "accuracy",
    "loss",
    "score",
    "metric",
    "metrics",
    "err",
    "error",
    "f1",
    "auc",
    "psnr",
    "ssim",
    "bleu",
    "rouge",
    "iou",
    "miou",
    "map",
    "dice",
    "perf",
    "fid",
    "ppl",
    "perplexity",
    "reward",
    "mae",
    "mse",
    "rmse",
    "precision",
    "recall",
    "val",
    "valid",
    "validation",
    "wer",
    "cer",
];

/// Words of an identifier that count iterations (`max_epochs`, `num_steps`): a comparison
/// with them is periodic, not best-tracking.
const COUNTER_WORDS: &[&str] = &[
    "epoch",
    "epochs",
    "step",
    "steps",
    "iter",
    "iters",
    "iteration",
    "iterations",
    "it",
    "batch",
    "batches",
    "len",
    "count",
    "round",
    "rounds",
    "episode",
    "episodes",
    "i",
    "n",
];

/// The lower-case words of an identifier (`bestValAcc` -> best, val, acc).
fn identifier_words(id: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for ch in id.chars() {
        if !ch.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if ch.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = ch.is_ascii_lowercase() || ch.is_ascii_digit();
        cur.push(ch.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// Does an identifier name a running best (`best_acc`, `min_val_loss`, `is_best`)?
pub fn names_running_best(id: &str) -> bool {
    let words = identifier_words(id);
    words.iter().any(|w| BEST_WORDS.contains(&w.as_str()))
        && !words.iter().any(|w| COUNTER_WORDS.contains(&w.as_str()))
}

/// Does a branch condition track a running best: compare a quality measure or a running best
/// (`acc > best_acc`, `val_loss < self.min_loss`, `score >= best`, `loss == min(history)`), or
/// test a flag that says so (`if is_best:`)? A periodic condition (`epoch % 10 == 9`,
/// `epoch >= n_epochs * 0.8`, `step == last`) compares no measure and does not.
pub fn tracks_running_best(test: &Expr) -> bool {
    use ruff_python_ast::CmpOp;
    /// The identifier words of an operand: names, attribute names, called names, string
    /// keys of subscripts (`stats["val_acc"]`).
    fn operand_words(e: &Expr, out: &mut Vec<String>) {
        struct W<'o>(&'o mut Vec<String>);
        impl<'x> Visitor<'x> for W<'_> {
            fn visit_expr(&mut self, e: &'x Expr) {
                match e {
                    Expr::Name(n) => self.0.extend(identifier_words(n.id.as_str())),
                    Expr::Attribute(a) => self.0.extend(identifier_words(a.attr.as_str())),
                    Expr::Subscript(s) => {
                        if let Expr::StringLiteral(k) = &*s.slice {
                            self.0.extend(identifier_words(k.value.to_str()));
                        }
                    }
                    _ => {}
                }
                visitor::walk_expr(self, e);
            }
        }
        W(out).visit_expr(e);
    }
    struct F {
        found: bool,
    }
    impl<'x> Visitor<'x> for F {
        fn visit_expr(&mut self, e: &'x Expr) {
            if self.found {
                return;
            }
            match e {
                Expr::Compare(c) => {
                    let ordered = c
                        .ops
                        .iter()
                        .any(|op| matches!(op, CmpOp::Lt | CmpOp::LtE | CmpOp::Gt | CmpOp::GtE));
                    for operand in std::iter::once(&*c.left).chain(c.comparators.iter()) {
                        let mut words = Vec::new();
                        operand_words(operand, &mut words);
                        if words.iter().any(|w| COUNTER_WORDS.contains(&w.as_str())) {
                            continue;
                        }
                        let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
                        if has(BEST_WORDS) || (ordered && has(MEASURE_WORDS)) {
                            self.found = true;
                        }
                    }
                    return;
                }
                Expr::Name(n) if names_running_best(n.id.as_str()) => self.found = true,
                Expr::Attribute(a) if names_running_best(a.attr.as_str()) => self.found = true,
                _ => {}
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut f = F { found: false };
    f.visit_expr(test);
    f.found
}

/// Does a loop (or comprehension) use gradients on purpose (saliency, adversarial examples,
/// test-time adaptation)? Such loops are not evaluation regions for the grad-mode rules. Read
/// from the syntax tree, so comments do not count: it reads or enables `requires_grad`
/// (`x.requires_grad_()`, `requires_grad=True`, `if p.requires_grad`), or calls
/// `autograd.grad(...)` (any `.grad(...)` method), reads a tensor's `grad_fn` (walking the
/// recorded graph), a meta-learner's `learner.adapt(loss)`
/// (learn2learn's MAML / MetaSGD adapt by differentiating the loss), `enable_grad()` or
/// `set_grad_enabled(True)`, or runs an adversarial attack on the model (`adversary.perturb(x,
/// y)`, `pgd_attack(model, x, y)`, `self.attacker(x, y)`: a call whose name or receiver names
/// an attack, an adversary or a perturbation, which back-propagates to the input). Freezing
/// (`requires_grad_(False)`, `requires_grad=False`, `p.requires_grad = False`) is not a use of
/// gradients. [`may_use_gradients`] is a cheap pre-test on the source text.
pub fn uses_gradients_stmt(stmt: &Stmt) -> bool {
    let mut f = GradientUse::default();
    f.visit_stmt(stmt);
    f.found
}

/// [`uses_gradients_stmt`] for an expression (a comprehension).
pub fn uses_gradients_expr(expr: &Expr) -> bool {
    let mut f = GradientUse::default();
    f.visit_expr(expr);
    f.found
}

/// Can the source text of a region use gradients at all (see [`uses_gradients_stmt`])? Every
/// spelling names `grad`, or an attack / adversary / perturbation.
pub fn may_use_gradients(text: &str) -> bool {
    let b = text.as_bytes();
    [
        "grad", "ttack", "dvers", "erturb", "fgsm", "FGSM", "pgd", "PGD", ".adapt(", "atk",
    ]
    .iter()
    .any(|w| memchr::memmem::find(b, w.as_bytes()).is_some())
}

/// Does an argument name a loss (`support_loss`, `adaptation_error`, `self.loss(x, y)`,
/// `criterion(pred, y)`)? The adapted quantity of a meta-learner's `adapt(...)`.
fn names_loss(e: &Expr) -> bool {
    let name = match e {
        Expr::Name(n) => n.id.as_str(),
        Expr::Attribute(a) => a.attr.as_str(),
        Expr::Call(c) => match &*c.func {
            Expr::Name(n) => n.id.as_str(),
            Expr::Attribute(a) => a.attr.as_str(),
            _ => return false,
        },
        _ => return false,
    };
    let l = name.to_ascii_lowercase();
    l.contains("loss") || l.contains("err") || l.contains("crit") || l.contains("objective")
}

/// Does a callee's name (a function, a method, or the object it is called on) name an
/// adversarial attack (`perturb`, `pgd_attack`, `adversary`, `FGSM`, `attacker`, torchattacks'
/// customary `atk`)?
fn names_attack(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    l.contains("attack")
        || l.contains("advers")
        || l.starts_with("perturb")
        || l.contains("fgsm")
        || l.split('_').any(|w| w == "pgd" || w == "atk")
}

#[derive(Default)]
struct GradientUse {
    found: bool,
}

fn is_false(e: &Expr) -> bool {
    matches!(e, Expr::BooleanLiteral(b) if !b.value)
}

fn is_true(e: &Expr) -> bool {
    matches!(e, Expr::BooleanLiteral(b) if b.value)
}

impl<'a> Visitor<'a> for GradientUse {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if self.found {
            return;
        }
        // `p.requires_grad = False`: a freeze, not a use (the value is still visited).
        if let Stmt::Assign(a) = stmt {
            let freezes = is_false(&a.value)
                && a.targets
                    .iter()
                    .all(|t| matches!(t, Expr::Attribute(x) if x.attr.as_str() == "requires_grad"));
            if freezes {
                for t in &a.targets {
                    if let Expr::Attribute(x) = t {
                        self.visit_expr(&x.value);
                    }
                }
                return;
            }
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.found {
            return;
        }
        match expr {
            Expr::Call(c) => {
                let name = match &*c.func {
                    Expr::Attribute(a) => Some(a.attr.as_str()),
                    Expr::Name(n) => Some(n.id.as_str()),
                    // An attack kept in a configuration (`adversarial_args["attack"](**kw)`,
                    // `attacks[name](net, x, y)`): the key, else the container, names it.
                    Expr::Subscript(sub) => match &*sub.slice {
                        Expr::StringLiteral(k) => Some(k.value.to_str()),
                        _ => match &*sub.value {
                            Expr::Name(n) => Some(n.id.as_str()),
                            Expr::Attribute(a) => Some(a.attr.as_str()),
                            _ => None,
                        },
                    },
                    _ => None,
                };
                let first = c.arguments.args.first();
                let is_method = matches!(&*c.func, Expr::Attribute(_));
                let receiver = match &*c.func {
                    Expr::Attribute(a) => match &*a.value {
                        Expr::Name(n) => Some(n.id.as_str()),
                        Expr::Attribute(r) => Some(r.attr.as_str()),
                        _ => None,
                    },
                    _ => None,
                };
                if name.is_some_and(names_attack) || receiver.is_some_and(names_attack) {
                    self.found = true;
                    return;
                }
                match name {
                    Some("requires_grad_") => {
                        let off = first.is_some_and(is_false)
                            || c.arguments.keywords.iter().any(|k| {
                                k.arg
                                    .as_ref()
                                    .is_some_and(|a| a.as_str() == "requires_grad")
                                    && is_false(&k.value)
                            });
                        if !off {
                            self.found = true;
                            return;
                        }
                        // Still look inside the receiver and the arguments.
                        if let Expr::Attribute(a) = &*c.func {
                            self.visit_expr(&a.value);
                        }
                        for a in &c.arguments.args {
                            self.visit_expr(a);
                        }
                        return;
                    }
                    Some("grad") if is_method => {
                        self.found = true;
                        return;
                    }
                    // learn2learn's `learner.adapt(loss)` (MAML, MetaSGD, GBML): a library
                    // method that differentiates the loss (`torch.autograd.grad`) to take
                    // the inner adaptation step.
                    Some("adapt") if is_method && first.is_some_and(names_loss) => {
                        self.found = true;
                        return;
                    }
                    Some("enable_grad") => {
                        self.found = true;
                        return;
                    }
                    Some("set_grad_enabled") if first.is_some_and(is_true) => {
                        self.found = true;
                        return;
                    }
                    _ => {}
                }
                for k in &c.arguments.keywords {
                    if k.arg
                        .as_ref()
                        .is_some_and(|a| a.as_str() == "requires_grad")
                        && !is_false(&k.value)
                    {
                        self.found = true;
                        return;
                    }
                }
            }
            // `if p.requires_grad`; `out.grad_fn` (walking the recorded graph, as pruning
            // tools trace a model: it exists only with autograd on).
            Expr::Attribute(a) if matches!(a.attr.as_str(), "requires_grad" | "grad_fn") => {
                self.found = true;
                return;
            }
            _ => {}
        }
        visitor::walk_expr(self, expr);
    }
}

/// Does the suite call a hand-written training step named `train` (`model.train(X, y)`,
/// `agent.train(batch, lr=lr)`): two or more arguments, which `nn.Module.train(mode)` never
/// takes? A loop that makes one trains, whatever metric it also prints.
pub fn runs_custom_train_step(body: &[Stmt]) -> bool {
    let mut found = false;
    helpers::for_each_own_call(body, false, &mut |c| {
        if matches!(helpers::method_call(c), Some(("train", _)))
            && c.arguments.args.len() + c.arguments.keywords.len() >= 2
        {
            found = true;
        }
    });
    found
}

/// The body of a `for`/`while` loop.
pub fn loop_body(stmt: &Stmt) -> &[Stmt] {
    match stmt {
        Stmt::For(f) => &f.body,
        Stmt::While(w) => &w.body,
        _ => &[],
    }
}

/// Does a `for`/`while` loop run its body at most once: every path through the body ends in
/// an unconditional `break`, `return` or `raise` of this loop, and no `continue` of this loop
/// starts another iteration? (`for data in tqdm(loader): out = net(x); print(out.shape);
/// break`: a one-batch smoke test.) A `break` inside a nested loop ends only that loop.
pub fn runs_at_most_once(stmt: &Stmt) -> bool {
    /// Does the suite contain a `continue` of the enclosing loop (not of a nested loop, not
    /// in a nested definition)?
    fn continues(suite: &[Stmt]) -> bool {
        suite.iter().any(|s| match s {
            Stmt::Continue(_) => true,
            Stmt::For(_) | Stmt::While(_) | Stmt::FunctionDef(_) | Stmt::ClassDef(_) => false,
            Stmt::If(i) => {
                continues(&i.body) || i.elif_else_clauses.iter().any(|c| continues(&c.body))
            }
            Stmt::With(w) => continues(&w.body),
            Stmt::Try(t) => {
                continues(&t.body)
                    || continues(&t.orelse)
                    || continues(&t.finalbody)
                    || t.handlers.iter().any(|h| {
                        let ast::ExceptHandler::ExceptHandler(h) = h;
                        continues(&h.body)
                    })
            }
            Stmt::Match(m) => m.cases.iter().any(|c| continues(&c.body)),
            _ => false,
        })
    }
    /// Does every path through the suite leave the loop (or the function)?
    fn exits(suite: &[Stmt]) -> bool {
        suite.iter().any(|s| match s {
            Stmt::Break(_) | Stmt::Return(_) | Stmt::Raise(_) => true,
            Stmt::If(i) => {
                exits(&i.body)
                    && i.elif_else_clauses.last().is_some_and(|c| c.test.is_none())
                    && i.elif_else_clauses.iter().all(|c| exits(&c.body))
            }
            Stmt::With(w) => exits(&w.body),
            Stmt::Try(t) => {
                exits(&t.finalbody)
                    || ((exits(&t.body) || exits(&t.orelse))
                        && t.handlers.iter().all(|h| {
                            let ast::ExceptHandler::ExceptHandler(h) = h;
                            exits(&h.body)
                        }))
            }
            _ => false,
        })
    }
    let body = match stmt {
        Stmt::For(f) => &f.body,
        Stmt::While(w) => &w.body,
        _ => return false,
    };
    exits(body) && !continues(body)
}

/// Is a `with torch.no_grad():` block part of a training step: does a value it binds (a
/// momentum / teacher network's output, the stop-gradient target of BYOL or distillation)
/// meet, after the block in the same function, a value computed with autograd on, in one call
/// or one arithmetic operation (`loss = regression_loss(online(x), target)`,
/// `F.mse_loss(student(x), soft)`, `pred - target`)? Such a forward is not an evaluation: the
/// network's training-mode behaviour (BatchNorm batch statistics) is intended.
/// `graph_call` tells whether a call builds a graph (a module's forward). Names are matched
/// by spelling, without ordering beyond "after the block".
pub fn no_grad_block_feeds_loss(
    body: &[Stmt],
    block: &ast::StmtWith,
    graph_call: &mut dyn FnMut(&ast::ExprCall) -> bool,
) -> bool {
    use crate::helpers::for_each_own_stmt;
    let graph_call = std::cell::RefCell::new(graph_call);
    let graph_call = |c: &ast::ExprCall| (graph_call.borrow_mut())(c);
    fn assigned(st: &Stmt) -> Option<(Vec<&Expr>, &Expr)> {
        match st {
            Stmt::Assign(a) => Some((a.targets.iter().collect(), &a.value)),
            Stmt::AugAssign(a) => Some((vec![&*a.target], &a.value)),
            Stmt::AnnAssign(a) => a.value.as_deref().map(|v| (vec![&*a.target], v)),
            _ => None,
        }
    }
    let mut targets: Vec<&str> = Vec::new();
    for_each_own_stmt(&block.body, &mut |st: &Stmt| {
        if let Some((ts, _)) = assigned(st) {
            ts.into_iter()
                .for_each(|t| crate::helpers::bound_names(t, &mut targets));
        }
    });
    if targets.is_empty() {
        return false;
    }
    let builds_graph = |e: &Expr| {
        let mut f = CallFinder {
            pred: &graph_call,
            found: false,
        };
        f.visit_expr(e);
        f.found
    };
    // Names bound outside the block from a graph-building call.
    let mut with_grad: Vec<&str> = Vec::new();
    for_each_own_stmt(body, &mut |st: &Stmt| {
        if block.range().contains_range(st.range()) {
            return;
        }
        if let Some((ts, v)) = assigned(st) {
            if builds_graph(v) {
                ts.into_iter()
                    .for_each(|t| crate::helpers::bound_names(t, &mut with_grad));
            }
        }
    });
    let mentions = |e: &Expr, names: &[&str]| {
        let mut f = NameFinder {
            names,
            found: false,
        };
        f.visit_expr(e);
        f.found
    };
    let grad_side = |e: &Expr| mentions(e, &with_grad) || builds_graph(e);
    let meets = |a: &Expr, b: &Expr| {
        (mentions(a, &targets) && grad_side(b)) || (mentions(b, &targets) && grad_side(a))
    };
    let mut found = false;
    for_each_own_stmt(body, &mut |st: &Stmt| {
        if found || st.start() < block.end() {
            return;
        }
        let value = match st {
            Stmt::Return(r) => r.value.as_deref(),
            _ => assigned(st).map(|(_, v)| v),
        };
        let Some(value) = value else { return };
        let mut pairs = PairFinder {
            meets: &meets,
            found: false,
        };
        pairs.visit_expr(value);
        found = pairs.found;
    });
    found
}

struct CallFinder<'p> {
    pred: &'p dyn Fn(&ast::ExprCall) -> bool,
    found: bool,
}

impl<'a> Visitor<'a> for CallFinder<'_> {
    fn visit_expr(&mut self, e: &'a Expr) {
        if self.found {
            return;
        }
        if let Expr::Call(c) = e {
            if (self.pred)(c) {
                self.found = true;
                return;
            }
        }
        visitor::walk_expr(self, e);
    }
}

struct NameFinder<'n> {
    names: &'n [&'n str],
    found: bool,
}

impl<'a> Visitor<'a> for NameFinder<'_> {
    fn visit_expr(&mut self, e: &'a Expr) {
        if self.found {
            return;
        }
        if let Expr::Name(n) = e {
            if self.names.contains(&n.id.as_str()) {
                self.found = true;
                return;
            }
        }
        visitor::walk_expr(self, e);
    }
}

/// Finds a call with two arguments, or a binary operation with two sides, that `meets`.
struct PairFinder<'m> {
    meets: &'m dyn Fn(&Expr, &Expr) -> bool,
    found: bool,
}

impl<'a> Visitor<'a> for PairFinder<'_> {
    fn visit_expr(&mut self, e: &'a Expr) {
        if self.found {
            return;
        }
        match e {
            Expr::Call(c) => {
                let args: Vec<&Expr> = c
                    .arguments
                    .args
                    .iter()
                    .chain(c.arguments.keywords.iter().map(|k| &k.value))
                    .collect();
                for (i, a) in args.iter().enumerate() {
                    for b in &args[i + 1..] {
                        if (self.meets)(a, b) {
                            self.found = true;
                            return;
                        }
                    }
                }
            }
            Expr::BinOp(b) if (self.meets)(&b.left, &b.right) => {
                self.found = true;
                return;
            }
            _ => {}
        }
        visitor::walk_expr(self, e);
    }
}

/// The statement `key.load_state_dict(...)` that loads saved weights into the object `key`
/// before offset `at` in `body` (the suite and the blocks nested in it, not nested
/// definitions), the last one when there are several: the one-shot inference of a script
/// (`net.load_state_dict(torch.load(path)); out = net(x)`). A copy of another object's
/// in-memory weights (`target.load_state_dict(policy.state_dict())`) is not a load.
pub fn weights_loaded_before<'a>(
    body: &'a [Stmt],
    key: &str,
    at: ruff_text_size::TextSize,
) -> Option<&'a ast::StmtExpr> {
    let mut found = None;
    for stmt in body {
        if stmt.start() >= at {
            break;
        }
        let inner: Option<&'a ast::StmtExpr> = match stmt {
            Stmt::Expr(e) => {
                let loads = matches!(&*e.value, Expr::Call(c)
                    if matches!(&*c.func, Expr::Attribute(a)
                        if a.attr.as_str() == "load_state_dict"
                            && crate::flow::object_key(&a.value).as_deref() == Some(key))
                        && !c.arguments.args.first().is_some_and(|arg| matches!(arg,
                            Expr::Call(s) if matches!(&*s.func, Expr::Attribute(m)
                                if m.attr.as_str() == "state_dict"))));
                loads.then_some(e)
            }
            Stmt::If(s) => std::iter::once(&s.body[..])
                .chain(s.elif_else_clauses.iter().map(|c| &c.body[..]))
                .filter_map(|b| weights_loaded_before(b, key, at))
                .next_back(),
            Stmt::With(s) => weights_loaded_before(&s.body, key, at),
            Stmt::Try(s) => weights_loaded_before(&s.body, key, at),
            Stmt::For(s) => weights_loaded_before(&s.body, key, at),
            Stmt::While(s) => weights_loaded_before(&s.body, key, at),
            _ => None,
        };
        if inner.is_some() {
            found = inner;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn best(src: &str) -> bool {
        let parsed = torchvet_python::parser::parse_expression(src).expect("parses");
        tracks_running_best(parsed.expr())
    }

    #[test]
    fn running_best_conditions() {
        assert!(best("acc > best_acc"));
        assert!(best("phase == 'val' and epoch_acc > best_acc"));
        assert!(best("val_loss < self.min_loss"));
        assert!(best("score >= best"));
        assert!(best("loss < lowest"));
        assert!(best("stats['val_acc'] > top"));
        assert!(best("is_best"));
        assert!(best("loss == min(history)"));
        assert!(best("bestAcc < acc"));
        assert!(!best("epoch % 10 == 9"));
        assert!(!best("phase == 'val' and epoch % 10 == 9"));
        assert!(!best("(epoch + 1) % 10 == 0 or epoch == num_epochs - 1"));
        assert!(!best("epoch >= num_epochs * 0.8"));
        assert!(!best("epoch == max_epoch - 1"));
        assert!(!best("step > self.max_steps"));
        assert!(!best("rank == 0"));
        assert!(names_running_best("best_model_wts"));
        assert!(!names_running_best("last_model_wts"));
        assert!(!names_running_best("max_epochs"));
    }

    #[test]
    fn phases_from_the_comparisons_of_the_loop_body() {
        let phases = |src: &str| {
            let file = torchvet_python::SourceFile::from_python("t.py", src.to_string());
            let module = file.parse().into_syntax();
            let Stmt::For(f) = &module.body[0] else {
                panic!("a for loop")
            };
            phase_loop_from_tests(&f.target, &f.body).map(|p| {
                let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
                (own(&p.train), own(&p.eval))
            })
        };
        let kaggle = "for phase in phases:\n    if phase == 'train':\n        m.train(True)\n    if phase in ('valid',) and acc > best:\n        best = acc\n";
        assert_eq!(
            phases(kaggle),
            Some((vec!["train".to_string()], vec!["valid".to_string()]))
        );
        // Only a training phase compared; a stage name that is no phase; another operand.
        assert_eq!(
            phases("for p in ps:\n    if p == 'train':\n        pass\n"),
            None
        );
        assert_eq!(
            phases(
                "for p in ps:\n    if p == 'train' or p == 'warmup' or p == 'val':\n        pass\n"
            ),
            None
        );
        assert_eq!(
            phases(
                "for p in ps:\n    if p == 'train' or p == other or p == 'val':\n        pass\n"
            ),
            None
        );
    }

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
        assert!(is_pred_name("get_pred"));
        assert!(is_pred_name("preds_of"));
        assert!(!is_pred_name("predator"));
        assert!(is_eval_name("validate"));
        assert!(is_eval_name("test"));
        assert!(!is_eval_name("test_forward_shape"));
        assert!(computes_metric("correct += (out.argmax(1) == y).sum()"));
        assert!(!computes_metric("outs.append(model(x))"));
        assert!(computes_metric(
            "acc += (logits.argmax(-1) == labels).float().mean()"
        ));
        for t in [
            "for i in range(-1, n):\n    if i == -1:\n        h = self.rnn(x)",
            "if mode == 'train': y = f(x)",
            "if mask == None: pass",
            "if 0 == step: out = m(x)",
            // A metric word in a comment, an equality that picks a branch.
            "for g in sizes:\n    # the correct slice of the table\n    e += emb(ids + g)",
            "for layout in layouts:\n    if layout == 'csr':\n        a = f(x)\n    elif layout == torch.sparse_csc:\n        a = g(x)\n    out = module(x, a)",
            "for x in xs:\n    assert model(x).shape == ref.shape",
        ] {
            assert!(!computes_metric(t), "{t}");
        }
        assert!(computes_metric(
            "for x, y in pairs:\n    n += 1  # count\n    hits += int(model(x) == y)"
        ));
        assert!(computes_metric("print('# acc', (p == y).float().mean())"));
        assert!(computes_metric("miou += iou(pred, mask)"));
        assert!(computes_metric("total_miou += batch_miou"));
        assert!(!computes_metric("out = torch.cat((previous, sample), -2)"));
        assert!(is_train_name("forward_train"));
        assert!(is_train_name("train"));
        assert!(is_train_name("Training_step"));
        assert!(!is_train_name("pretrain"));
        assert!(!is_train_name("strain_gauge"));
    }

    #[test]
    fn attacks_use_gradients() {
        let uses = |src: &str| {
            let parsed = torchvet_python::parser::parse_expression(src).expect("parses");
            uses_gradients_expr(parsed.expr())
        };
        assert!(uses("adversary.perturb(batch, y)"));
        assert!(uses("pgd_attack(model, x, y, eps)"));
        assert!(uses("self.attacker(x, y)"));
        assert!(uses(
            "adversarial_args['attack'](**adversarial_args['attack_args'])"
        ));
        assert!(uses("attacks[name](net, x, y)"));
        assert!(uses("atk(images, labels)"));
        assert!(!uses("heads['cls'](x)"));
        assert!(uses("fgsm(model, x, eps)"));
        assert!(!uses("model(x_adv)"));
        assert!(!uses("torch.load(path)"));
        assert!(may_use_gradients("x = adversary.perturb(x)"));
        assert!(!may_use_gradients("out = model(x_adv)"));
    }

    #[test]
    fn loops_that_run_once() {
        let once = |src: &str| {
            let parsed = torchvet_python::parser::parse_module(src).expect("parses");
            runs_at_most_once(&parsed.syntax().body[0])
        };
        assert!(once(
            "for d in loader:\n    out = net(d)\n    print(out.shape)\n    break\n"
        ));
        assert!(once(
            "while True:\n    x = f()\n    if x:\n        return x\n    else:\n        raise E\n"
        ));
        assert!(once(
            "for d in loader:\n    try:\n        y = net(d)\n    finally:\n        break\n"
        ));
        // A break of a nested loop, a conditional break, a continue: several iterations.
        assert!(!once(
            "for d in loader:\n    for x in d:\n        break\n    net(d)\n"
        ));
        assert!(!once(
            "for d in loader:\n    net(d)\n    if i > 3:\n        break\n"
        ));
        assert!(!once(
            "for d in loader:\n    if d is None:\n        continue\n    net(d)\n    break\n"
        ));
        assert!(!once("for d in loader:\n    net(d)\n"));
    }
}

/// A loop over phase names (`for phase in ["train", "val"]:`, the transfer-learning
/// tutorial's epoch body): its variable, and the names of its training and evaluation
/// phases. Every element of the literal is a string that names one or the other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhaseLoop<'a> {
    /// The loop variable (`phase`).
    pub var: &'a str,
    /// Training phases (`"train"`, `"training"`).
    pub train: Vec<&'a str>,
    /// Evaluation phases (`"val"`, `"valid"`, `"test"`, `"eval"`, `"dev"`).
    pub eval: Vec<&'a str>,
}

/// Does a phase name say training?
fn is_train_phase(s: &str) -> bool {
    s.eq_ignore_ascii_case("train") || s.eq_ignore_ascii_case("training")
}

/// Does a phase name say evaluation?
fn is_eval_phase(s: &str) -> bool {
    [
        "val",
        "valid",
        "validation",
        "test",
        "testing",
        "eval",
        "evaluation",
        "dev",
    ]
    .iter()
    .any(|w| s.eq_ignore_ascii_case(w))
}

/// The phases of a `for` loop whose target is a name and whose iterable is `iter` (the
/// literal itself, or the one value a name of the iterable is bound to): a list or tuple of
/// string literals, at least one naming a training phase and one an evaluation phase, and
/// none anything else.
pub fn phase_loop<'a>(target: &'a Expr, iter: &'a Expr) -> Option<PhaseLoop<'a>> {
    let Expr::Name(var) = target else {
        return None;
    };
    let elts = match iter {
        Expr::List(l) => &l.elts,
        Expr::Tuple(t) => &t.elts,
        _ => return None,
    };
    let names = elts
        .iter()
        .map(helpers::str_value)
        .collect::<Option<Vec<&str>>>()?;
    PhaseLoop::of_names(var.id.as_str(), names)
}

/// The phases of a `for` loop over values the code does not spell (`for phase in
/// dataset_names:`, a parameter), from the comparisons of its target with string literals in
/// its body (`if phase == "train":`, `if phase == "valid" and acc > best:`): at least one
/// names a training phase and one an evaluation phase, and none anything else.
pub fn phase_loop_from_tests<'a>(target: &'a Expr, body: &'a [Stmt]) -> Option<PhaseLoop<'a>> {
    use ruff_python_ast::visitor::{self, Visitor};
    let Expr::Name(var) = target else {
        return None;
    };
    struct Lits<'a> {
        var: &'a str,
        found: Vec<&'a str>,
        other: bool,
    }
    impl<'a> Visitor<'a> for Lits<'a> {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            if !matches!(stmt, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                visitor::walk_stmt(self, stmt);
            }
        }
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Compare(c) = expr {
                let operands: Vec<&'a Expr> = std::iter::once(&*c.left)
                    .chain(c.comparators.iter())
                    .collect();
                if operands
                    .iter()
                    .any(|e| helpers::name_of(e) == Some(self.var))
                {
                    for e in operands {
                        let lits: Vec<&'a Expr> = match e {
                            Expr::Tuple(t) => t.elts.iter().collect(),
                            Expr::List(l) => l.elts.iter().collect(),
                            Expr::Set(s) => s.elts.iter().collect(),
                            e => vec![e],
                        };
                        for l in lits {
                            match helpers::str_value(l) {
                                Some(s) => self.found.push(s),
                                None if helpers::name_of(l) == Some(self.var) => {}
                                None => self.other = true,
                            }
                        }
                    }
                }
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut v = Lits {
        var: var.id.as_str(),
        found: Vec::new(),
        other: false,
    };
    v.visit_body(body);
    if v.other {
        return None;
    }
    PhaseLoop::of_names(var.id.as_str(), v.found)
}

impl<'a> PhaseLoop<'a> {
    /// The phases of loop variable `var` from phase names: each a training or an evaluation
    /// phase (once each), at least one of both; `None` for any other name.
    fn of_names(var: &'a str, names: Vec<&'a str>) -> Option<Self> {
        let mut phases = PhaseLoop {
            var,
            train: Vec::new(),
            eval: Vec::new(),
        };
        for s in names {
            let side = if is_train_phase(s) {
                &mut phases.train
            } else if is_eval_phase(s) {
                &mut phases.eval
            } else {
                return None;
            };
            if !side.contains(&s) {
                side.push(s);
            }
        }
        (!phases.train.is_empty() && !phases.eval.is_empty()).then_some(phases)
    }
}

impl PhaseLoop<'_> {
    /// Is `test` true exactly in the training phases (`Some(true)`: `phase == "train"`,
    /// `"train" == phase`, `phase in ("train",)`, `phase != "val"` with one evaluation phase)
    /// or exactly in the evaluation phases (`Some(false)`)? `None` for any other test.
    pub fn test(&self, test: &Expr) -> Option<bool> {
        let Expr::Compare(c) = test else {
            return None;
        };
        let ([op], [right]) = (&*c.ops, &*c.comparators) else {
            return None;
        };
        let other = match (helpers::name_of(&c.left), helpers::name_of(right)) {
            (Some(v), _) if v == self.var => right,
            (_, Some(v)) if v == self.var && matches!(op, ast::CmpOp::Eq | ast::CmpOp::NotEq) => {
                &*c.left
            }
            _ => return None,
        };
        // Which phases a set of names covers: all the training ones, or all the evaluation
        // ones (and nothing else).
        let side = |names: &[&str]| -> Option<bool> {
            let train = names.iter().filter(|n| self.train.contains(n)).count();
            let eval = names.iter().filter(|n| self.eval.contains(n)).count();
            if train == names.len() && train == self.train.len() {
                Some(true)
            } else if eval == names.len() && eval == self.eval.len() {
                Some(false)
            } else {
                None
            }
        };
        match op {
            ast::CmpOp::Eq => side(&[helpers::str_value(other)?]),
            ast::CmpOp::NotEq => side(&[helpers::str_value(other)?]).map(|t| !t),
            ast::CmpOp::In | ast::CmpOp::NotIn => {
                let elts = match other {
                    Expr::List(l) => &l.elts,
                    Expr::Tuple(t) => &t.elts,
                    Expr::Set(s) => &s.elts,
                    _ => return None,
                };
                let names: Option<Vec<&str>> = elts.iter().map(helpers::str_value).collect();
                let t = side(&names?)?;
                Some(if matches!(op, ast::CmpOp::In) { t } else { !t })
            }
            _ => None,
        }
    }
}

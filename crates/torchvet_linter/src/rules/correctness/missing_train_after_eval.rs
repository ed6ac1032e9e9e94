use super::modes_helpers::{
    calls_in, events_of, is_training, local_function, loop_body, next_line_start, own_line_indent,
    summary, Event, Found,
};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextRange};
use std::cell::RefCell;

crate::declare_rule! {
    /// ## What it does
    /// Checks for training loops that put the model in evaluation mode (`model.eval()`, often
    /// inside a `validate(model)` helper called every N steps or every epoch) and never call
    /// `model.train()` again before the next optimizer step.
    ///
    /// ## Why is this bad?
    /// `model.eval()` switches Dropout off and makes BatchNorm use (and stop updating) its
    /// running statistics. If the loop keeps training after the periodic validation without
    /// `model.train()`, every later step trains a different model than intended: no dropout
    /// regularisation, frozen normalisation statistics, and in distributed runs ranks that
    /// validated and ranks that did not diverge. Nothing fails; the accuracy is just worse.
    ///
    /// This rule is in preview: whether a call really puts the trained model in eval mode is
    /// inferred from same-file functions only.
    ///
    /// ## Example
    /// ```python
    /// model.train()
    /// for epoch in range(epochs):
    ///     for x, y in loader:
    ///         optimizer.zero_grad()
    ///         criterion(model(x), y).backward()
    ///         optimizer.step()
    ///     validate(model)  # calls model.eval()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// for epoch in range(epochs):
    ///     model.train()
    ///     for x, y in loader:
    ///         optimizer.zero_grad()
    ///         criterion(model(x), y).backward()
    ///         optimizer.step()
    ///     validate(model)  # calls model.eval()
    /// ```
    ///
    /// ## Fix safety
    /// The fix inserts `model.train()` right after the validation call (or at the end of the
    /// block that starts with `model.eval()`), so the following optimizer steps run in training
    /// mode again. It is offered only when no optimizer step runs between that point and the
    /// evaluation, and it only restores the mode the model had before: safe.
    ///
    /// ## References
    /// - [Module.train / Module.eval](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.train)
    /// - [wkentaro/pytorch-fcn issue 57](https://github.com/wkentaro/pytorch-fcn/issues/57)
    /// - [huggingface/lerobot issue 3668](https://github.com/huggingface/lerobot/issues/3668)
    pub(crate) static MISSING_TRAIN_AFTER_EVAL = {
        name: "missing-train-after-eval",
        code: "TV014",
        group: Correctness,
        severity: Warning,
        title: "model.eval() inside a training loop and model.train() never restored",
        autofix: Yes,
        preview: true,
        hooks: { stmt: check_stmt, end: finish },
    };
}

/// A finding waiting for whole-file facts.
struct Candidate {
    /// The call in the loop that puts the model in eval mode.
    eval: Found,
    /// The model's text in the loop.
    model: String,
    /// The first optimizer step of the loop.
    step: TextRange,
}

thread_local! {
    static PENDING: RefCell<Vec<Candidate>> = const { RefCell::new(Vec::new()) };
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    if !matches!(stmt, Stmt::For(_) | Stmt::While(_)) {
        return;
    }
    if !checker.mentions("eval(") && !checker.mentions(".train(") {
        return;
    }
    // Cheap pre-check: an eval in the loop's own text, or a local function that evals.
    let text = checker.text(stmt.range());
    if !text.contains("eval(")
        && !text.contains(".train(")
        && !calls_in(loop_body(stmt)).into_iter().any(|c| {
            local_function(checker, c).is_some_and(|f| !summary(checker, f).evals.is_empty())
        })
    {
        return;
    }
    let events = events_of(checker, loop_body(stmt));
    if !events.iter().any(|f| matches!(f.event, Event::Eval(_))) || !is_training(&events) {
        return;
    }
    // Any train() in the loop (direct or in a called function) restores the mode.
    if events.iter().any(|f| matches!(f.event, Event::Train(_))) {
        return;
    }
    let Some(step) = events
        .iter()
        .find(|f| f.event == Event::OptStep)
        .map(|f| f.call)
    else {
        return;
    };
    PENDING.with_borrow_mut(|p| {
        for f in &events {
            let Event::Eval(model) = &f.event else {
                continue;
            };
            if model == "self" || model.is_empty() || p.iter().any(|c| c.eval.call == f.call) {
                continue;
            }
            p.push(Candidate {
                eval: f.clone(),
                model: model.clone(),
                step,
            });
        }
    });
}

/// Is `model` the trained model: its parameters are handed to something (an optimizer) or
/// its mode is toggled with `train()` somewhere in the file?
fn is_trained_model(checker: &Checker, model: &str) -> bool {
    ["parameters", "named_parameters", "train"]
        .iter()
        .flat_map(|m| checker.facts.method_calls_of(m).iter())
        .any(|c| match &*c.func {
            ruff_python_ast::Expr::Attribute(a) => checker.text(a.value.range()) == model,
            _ => false,
        })
}

/// The suite holding the simple statement that contains `range`, and that statement's index.
fn find_suite(body: &[Stmt], range: TextRange) -> Option<(&[Stmt], usize)> {
    for (i, st) in body.iter().enumerate() {
        if !st.range().contains_range(range) {
            continue;
        }
        let nested: Vec<&[Stmt]> = match st {
            Stmt::For(s) => vec![&s.body, &s.orelse],
            Stmt::While(s) => vec![&s.body, &s.orelse],
            Stmt::If(s) => std::iter::once(&s.body[..])
                .chain(s.elif_else_clauses.iter().map(|c| &c.body[..]))
                .collect(),
            Stmt::With(s) => vec![&s.body],
            Stmt::Try(s) => {
                let mut v: Vec<&[Stmt]> = vec![&s.body, &s.orelse, &s.finalbody];
                for h in &s.handlers {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    v.push(&h.body);
                }
                v
            }
            Stmt::FunctionDef(StmtFunctionDef { body, .. }) => vec![body],
            Stmt::ClassDef(c) => vec![&c.body],
            _ => return Some((body, i)),
        };
        return nested.into_iter().find_map(|b| find_suite(b, range));
    }
    None
}

fn build_fix(checker: &Checker, c: &Candidate) -> Option<RawFix> {
    let (suite, i) = find_suite(&checker.module().body, c.eval.call)?;
    let stmt = suite.get(i)?;
    if !matches!(stmt, Stmt::Expr(_) | Stmt::Assign(_) | Stmt::AnnAssign(_)) {
        return None;
    }
    let indent = own_line_indent(checker, stmt.start())?;
    let after = if c.eval.inner.is_some() {
        // `validate(model)`: restore right after the call.
        stmt
    } else {
        // Inline `model.eval()`: restore at the end of its block, if no step runs in between.
        let last = suite.last()?;
        if matches!(
            last,
            Stmt::Continue(_) | Stmt::Break(_) | Stmt::Return(_) | Stmt::Raise(_)
        ) {
            return None;
        }
        let block = TextRange::new(stmt.start(), last.end());
        if block.contains_range(c.step) {
            return None;
        }
        last
    };
    let (at, newline_first) = next_line_start(checker, after.end());
    let nl = if checker.source.text.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let text = if newline_first {
        format!("{nl}{indent}{}.train(){nl}", c.model)
    } else {
        format!("{indent}{}.train(){nl}", c.model)
    };
    Some(RawFix::safe(
        format!("Call `{}.train()` after the evaluation", c.model),
        vec![RawEdit::insert(at, text)],
    ))
}

fn finish(checker: &mut Checker) {
    report_pending(checker);
    super::modes_helpers::reset(checker);
}

fn report_pending(checker: &mut Checker) {
    let pending = PENDING.with_borrow_mut(std::mem::take);
    for c in pending {
        if !is_trained_model(checker, &c.model) {
            continue;
        }
        let call_text = checker.text(c.eval.call);
        let model = &c.model;
        let message = if c.eval.inner.is_some() {
            format!(
                "`{call_text}` puts `{model}` in eval mode inside this training loop and `{model}.train()` is never called again: the following optimizer steps train with Dropout off and BatchNorm frozen to its running statistics"
            )
        } else {
            format!(
                "`{model}` is put in eval mode inside this training loop and `{model}.train()` is never called again: the following optimizer steps train with Dropout off and BatchNorm frozen to its running statistics"
            )
        };
        let fix = build_fix(checker, &c);
        let d = checker.report(c.eval.call, message);
        if let Some(inner) = c.eval.inner {
            d.add_related(inner, "`eval()` is called here");
        }
        d.add_related(c.step, "this optimizer step then runs in eval mode");
        if let Some(fix) = fix {
            d.set_fix(fix);
        }
    }
}

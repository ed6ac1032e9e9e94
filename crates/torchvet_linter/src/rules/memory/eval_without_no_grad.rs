use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::correctness::modes_helpers::{
    assigned_values, classify, frame_is_eval_named, grad_off_here, in_loop_or_comprehension,
    in_model_class, in_test_code, is_framework_hook, loop_has_backward, own_line_indent,
    result_discarded, summary, Event,
};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::{Ranged, TextRange, TextSize};
use rustc_hash::{FxHashMap, FxHashSet};
use std::cell::RefCell;
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;

crate::declare_rule! {
    /// ## What it does
    /// Checks for evaluation or inference code (after `model.eval()`, or in a function named
    /// like `validate`, `evaluate`, `test` or `predict`) that runs the model with autograd
    /// still enabled: no `torch.no_grad()` / `torch.inference_mode()` around it, no such
    /// decorator, and no caller that wraps it in one.
    ///
    /// ## Why is this bad?
    /// `model.eval()` changes how Dropout and BatchNorm behave; it does not turn off gradient
    /// tracking. With autograd on, every forward pass records its graph and keeps the
    /// activations needed for a backward pass that never comes: evaluation uses several
    /// times more memory (often running out of GPU memory on batch sizes that train fine) and
    /// runs slower. Outputs kept across iterations (metrics, predictions) keep their graphs
    /// alive too.
    ///
    /// This rule is in preview: whether a function is evaluation is inferred from its name
    /// and its `eval()` calls, and callers in other files are not seen.
    ///
    /// ## Example
    /// ```python
    /// def evaluate(model, loader):
    ///     model.eval()
    ///     for x, y in loader:
    ///         out = model(x)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// @torch.no_grad()
    /// def evaluate(model, loader):
    ///     model.eval()
    ///     for x, y in loader:
    ///         out = model(x)
    /// ```
    ///
    /// ## Fix safety
    /// In a function, the fix adds a `@torch.no_grad()` decorator; at module level it wraps
    /// the evaluation loop in `with torch.no_grad():`. Functions that call `backward()`,
    /// `torch.autograd.grad`, `enable_grad` or `requires_grad_` are never reported. The fix is
    /// safe when the function calls `model.eval()` (it is clearly evaluation); it is unsafe when
    /// evaluation is inferred from the function's name alone, and for the re-indented
    /// module-level loop, since a caller could still differentiate the returned tensors.
    ///
    /// ## References
    /// - [torch.no_grad](https://pytorch.org/docs/stable/generated/torch.no_grad.html)
    /// - [Performance tuning guide: disable gradient calculation for validation or inference](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html)
    /// - [Zhenye-Na/DA-RNN issue 30](https://github.com/Zhenye-Na/DA-RNN/issues/30)
    pub(crate) static EVAL_WITHOUT_NO_GRAD = {
        name: "eval-without-no-grad",
        code: "TV025",
        group: Memory,
        severity: Warning,
        title: "Evaluation forward pass executed with autograd enabled",
        autofix: Yes,
        preview: true,
        hooks: { call: check_call, end: finish },
    };
}

struct Candidate {
    call: TextRange,
    model: String,
    eval_call: Option<TextRange>,
    /// The function (name, def range, first decorator start) or `None` at module level.
    function: Option<(String, TextRange, TextSize)>,
    /// The outermost loop at module level (for the `with` fix).
    module_loop: Option<TextRange>,
}

#[derive(Default)]
struct State {
    /// Last mode call per (frame, model text): `Some(eval call)` or `None` after `train()`.
    modes: FxHashMap<(u32, String), Option<TextRange>>,
    /// Names of functions called somewhere under no_grad / inference_mode.
    no_grad_callees: FxHashSet<String>,
    /// Frames where some model was put in eval mode.
    eval_frames: FxHashSet<u32>,
    /// Frames already reported.
    done: FxHashSet<u32>,
    pending: Vec<Candidate>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

fn frame_key(checker: &Checker) -> u32 {
    checker
        .function()
        .map_or(u32::MAX, |f| f.range().start().to_u32())
}

fn loss_like(checker: &Checker, func: &Expr) -> bool {
    let text = checker.text(func.range()).to_ascii_lowercase();
    let last = text.rsplit('.').next().unwrap_or(&text);
    if last.contains("loss") || last.contains("crit") {
        return true;
    }
    assigned_values(checker, func).iter().any(|(v, _)| {
        matches!(v, Expr::Call(c) if checker.resolve(&c.func).is_some_and(|q| q.starts_with("torch.nn.") && q.ends_with("Loss")))
    })
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    // Only calls of names and `self.<attr>` matter below (models, local functions).
    let callee = match &*call.func {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => Some(a.attr.as_str()),
        Expr::Attribute(a) if matches!(a.attr.as_str(), "eval" | "train") => None,
        _ => return,
    };
    let in_no_grad = grad_off_here(checker);
    // Remember functions that callers run under no_grad.
    if let (true, Some(c)) = (in_no_grad, callee) {
        STATE.with_borrow_mut(|s| {
            if !s.no_grad_callees.contains(c) {
                s.no_grad_callees.insert(c.to_string());
            }
        });
    }
    let frame = frame_key(checker);
    // Track eval()/train() calls in visiting order.
    match classify(checker, call) {
        Event::Eval(m) => {
            STATE.with_borrow_mut(|s| {
                s.modes.insert((frame, m), Some(call.range()));
                s.eval_frames.insert(frame);
            });
            return;
        }
        Event::Train(m) => {
            STATE.with_borrow_mut(|s| {
                s.modes.insert((frame, m), None);
            });
            return;
        }
        _ => {}
    }
    if in_no_grad {
        return;
    }
    let func = &*call.func;
    match func {
        Expr::Name(_) => {}
        Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => {}
        _ => return,
    }
    let fdef = checker.function();
    let named = frame_is_eval_named(checker);
    if STATE.with_borrow(|s| s.done.contains(&frame) || (!named && !s.eval_frames.contains(&frame)))
    {
        return;
    }
    let model = checker.text(func.range()).to_string();
    let eval_call = STATE.with_borrow(|s| s.modes.get(&(frame, model.clone())).copied().flatten());
    if eval_call.is_none() && !named {
        return;
    }
    if fdef.is_some_and(|f| is_framework_hook(f.name.as_str()))
        || in_model_class(checker)
        || in_test_code(checker)
    {
        return;
    }
    // Evaluation loops only; single calls whose result is dropped are warm-up or calibration.
    if !in_loop_or_comprehension(checker) || result_discarded(checker, call) {
        return;
    }
    if eval_call.is_none() && checker.kind_of(func) != Kind::Module {
        return;
    }
    if loss_like(checker, func) {
        return;
    }
    // Gradient-based evaluation (saliency, adversarial examples, TTA with updates).
    let loops = checker.frame().loops.clone();
    if loops.iter().any(|l| loop_has_backward(checker, l)) {
        return;
    }
    match fdef {
        Some(f) => {
            let s = summary(checker, f);
            if s.backward.is_some() || s.uses_grad || s.opt_step.is_some() {
                return;
            }
        }
        // Module level: only evaluation loops.
        None if loops.is_empty() => return,
        None => {}
    }
    let function = fdef.map(|f| {
        let first = f
            .decorator_list
            .first()
            .map_or(f.range().start(), |d| d.range().start());
        (f.name.to_string(), f.range(), first)
    });
    let module_loop = if fdef.is_none() {
        loops.first().map(|l| l.range())
    } else {
        None
    };
    STATE.with_borrow_mut(|s| {
        s.done.insert(frame);
        s.pending.push(Candidate {
            call: call.range(),
            model,
            eval_call,
            function,
            module_loop,
        });
    });
}

fn decorator_fix(checker: &Checker, c: &Candidate) -> Option<RawFix> {
    let (_, _, at) = c.function.as_ref()?;
    let indent = own_line_indent(checker, *at)?;
    let line_start = *at - TextSize::of(indent);
    let (torch, import) = checker.import_module("torch");
    let nl = if checker.source.text.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let mut edits = vec![RawEdit::insert(
        line_start,
        format!("{indent}@{torch}.no_grad(){nl}"),
    )];
    edits.extend(import);
    let msg = format!("Decorate with `@{torch}.no_grad()`");
    Some(if c.eval_call.is_some() {
        RawFix::safe(msg, edits)
    } else {
        RawFix::unsafe_edit(msg, edits)
    })
}

fn with_fix(checker: &Checker, loop_range: TextRange) -> Option<RawFix> {
    let indent = own_line_indent(checker, loop_range.start())?;
    if indent.contains('\t') {
        return None;
    }
    let text = checker.text(loop_range);
    if text.contains("\"\"\"") || text.contains("'''") || text.contains('\r') {
        return None;
    }
    let (torch, import) = checker.import_module("torch");
    let mut out = format!("with {torch}.no_grad():\n");
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if line.trim().is_empty() {
            out.push_str(line);
            continue;
        }
        out.push_str(indent);
        out.push_str("    ");
        out.push_str(if i == 0 {
            line
        } else {
            line.strip_prefix(indent)?
        });
    }
    let mut edits = vec![RawEdit::replace(loop_range, out)];
    edits.extend(import);
    Some(RawFix::unsafe_edit(
        format!("Wrap the loop in `with {torch}.no_grad():`"),
        edits,
    ))
}

fn finish(checker: &mut Checker) {
    report_pending(checker);
    crate::rules::correctness::modes_helpers::reset(checker);
}

fn report_pending(checker: &mut Checker) {
    let state = STATE.with_borrow_mut(std::mem::take);
    for c in &state.pending {
        if let Some((name, _, _)) = &c.function {
            if state.no_grad_callees.contains(name) {
                continue;
            }
        }
        let model = &c.model;
        let place = match &c.function {
            Some((name, _, _)) => format!("`{name}()`"),
            None => "this loop".to_string(),
        };
        let head = if c.eval_call.is_some() {
            format!("`{model}` is in eval mode, but {place} still runs it")
        } else {
            format!("{place} looks like evaluation but runs `{model}`")
        };
        let message = format!(
            "{head} with autograd enabled: every forward pass records a graph and keeps its activations for a backward pass that never comes, using several times the memory; wrap it in `torch.no_grad()`"
        );
        let fix = match (&c.function, c.module_loop) {
            (Some(_), _) => decorator_fix(checker, c),
            (None, Some(l)) => with_fix(checker, l),
            _ => None,
        };
        let d = checker.report(c.call, message);
        if let Some(e) = c.eval_call {
            d.add_related(
                e,
                format!("`{model}` is put in eval mode here, but grad mode stays on"),
            );
        }
        if let Some(fix) = fix {
            d.set_fix(fix);
        }
    }
}

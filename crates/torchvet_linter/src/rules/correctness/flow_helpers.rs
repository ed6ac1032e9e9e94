//! Helpers shared by the training-loop ordering rules (built on `torchvet_semantic::flow`):
//! which events clear an optimizer's gradients, and line-based edits that insert, delete or
//! move one statement while keeping the file's indentation.
use crate::checker::Checker;
use crate::fix::{newline, own_line_indent, RawEdit};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::{Ranged, TextSize};
use torchvet_semantic::flow::{Event, EventKind, LoopFlow, Role};

/// The flow of the loop statement being visited, unless the file has no training calls or a
/// framework owns the loop.
pub(crate) fn current_flow<'a>(
    checker: &mut Checker<'a>,
    stmt: &Stmt,
) -> Option<std::rc::Rc<LoopFlow<'a>>> {
    if !matches!(stmt, Stmt::For(_) | Stmt::While(_)) {
        return None;
    }
    let flow = checker.loop_flow()?;
    if flow.events.is_empty() || checker.in_framework_hook() {
        return None;
    }
    Some(flow)
}

/// Distinct keys of the optimizers stepped in the loop.
pub(crate) fn stepped_optimizers(flow: &LoopFlow) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for (_, e) in flow.of_kind(EventKind::Step) {
        if let Some(k) = e.target_key() {
            if !keys.iter().any(|x| x == k) {
                keys.push(k.to_string());
            }
        }
    }
    keys
}

/// Does this event (possibly) clear the gradients `opt` steps on? Generous: a `zero_grad()` on
/// a model or an unknown object, `p.grad = None`, a hand-written `p.grad = ...`, or a
/// `zero_grad()` on an optimizer that is not one of the loop's stepped optimizers (an alias).
pub(crate) fn may_clear(e: &Event, opt: &str, stepped: &[String]) -> bool {
    match e.kind {
        EventKind::GradWrite => true,
        EventKind::ZeroGrad => match &e.target {
            None => true,
            Some(t) => t.key == opt || t.role != Role::Optimizer || !stepped.contains(&t.key),
        },
        _ => false,
    }
}

/// Does this event certainly clear `opt`'s gradients: `opt.zero_grad()`, or a model's
/// `zero_grad()` when the loop steps a single optimizer and zeroes a single model?
pub(crate) fn surely_clears(flow: &LoopFlow, e: &Event, opt: &str) -> bool {
    if e.kind != EventKind::ZeroGrad {
        return false;
    }
    let Some(t) = &e.target else { return false };
    if t.key == opt {
        return true;
    }
    if !matches!(t.role, Role::Module) {
        return false;
    }
    let single_opt = stepped_optimizers(flow).len() == 1;
    let mut modules = flow
        .of_kind(EventKind::ZeroGrad)
        .filter_map(|(_, z)| z.target.as_ref())
        .filter(|o| o.role != Role::Optimizer)
        .map(|o| o.key.as_str());
    let first = modules.next();
    single_opt && first.is_some() && modules.all(|k| Some(k) == first)
}

/// Text of an expression, parenthesised unless atomic.
pub(crate) fn atom_text(checker: &Checker, expr: &Expr) -> String {
    let t = checker.text(expr.range());
    match expr {
        Expr::Name(_) | Expr::Attribute(_) | Expr::Call(_) | Expr::Subscript(_) => t.to_string(),
        _ => format!("({t})"),
    }
}

fn line_start(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .and_then(|s| s.rfind('\n'))
        .map_or(0, |i| i + 1)
}

/// The offset of the line after `end` when only whitespace or a comment follows `end` on its
/// line (the end of the file when there is no next line).
fn next_line(checker: &Checker, end: TextSize) -> Option<usize> {
    let text = checker.source.text.as_ref();
    let end = end.to_usize();
    let rest = text.get(end..)?;
    let nl = rest.find('\n');
    let tail = rest[..nl.unwrap_or(rest.len())].trim();
    if !(tail.is_empty() || tail.starts_with('#')) {
        return None;
    }
    Some(nl.map_or(text.len(), |n| end + n + 1))
}

/// Is `stmt` alone on its lines (nothing else before it or after it but a comment)?
pub(crate) fn stmt_alone(checker: &Checker, stmt: &Stmt) -> bool {
    own_line_indent(checker, stmt.start()).is_some() && next_line(checker, stmt.end()).is_some()
}

/// Insert the line `line` before `stmt`, at its indentation.
pub(crate) fn insert_before(checker: &Checker, stmt: &Stmt, line: &str) -> Option<RawEdit> {
    let indent = own_line_indent(checker, stmt.start())?;
    Some(RawEdit::insert(
        stmt.start(),
        format!("{line}{}{indent}", newline(checker)),
    ))
}

/// Insert the line `line` after `stmt`, at `stmt`'s indentation (or `indent` when given).
pub(crate) fn insert_after(
    checker: &Checker,
    stmt: &Stmt,
    line: &str,
    indent: Option<&str>,
) -> Option<RawEdit> {
    let own = own_line_indent(checker, stmt.start())?;
    let indent = indent.unwrap_or(own);
    let pos = next_line(checker, stmt.end())?;
    let text = checker.source.text.as_ref();
    let nl = newline(checker);
    let at = TextSize::try_from(pos).ok()?;
    if pos == text.len() && !text.ends_with('\n') {
        Some(RawEdit::insert(at, format!("{nl}{indent}{line}")))
    } else {
        Some(RawEdit::insert(at, format!("{indent}{line}{nl}")))
    }
}

/// Delete the lines of `stmt` (alone on its lines and not the only statement of its block).
pub(crate) fn delete_stmt(checker: &Checker, stmt: &Stmt) -> Option<RawEdit> {
    let text = checker.source.text.as_ref();
    let indent = own_line_indent(checker, stmt.start())?;
    let start = line_start(text, stmt.start().to_usize());
    let end = next_line(checker, stmt.end())?;
    // The only statement of its block: the previous code line opens the block and the next
    // code line is dedented.
    let prev_opens = text[..start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .is_some_and(|l| l.ends_with(':'));
    let next_dedented = text[end..]
        .lines()
        .find(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with('#')
        })
        .is_none_or(|l| l.len() - l.trim_start().len() < indent.len());
    if prev_opens && next_dedented {
        return None;
    }
    Some(RawEdit::delete(ruff_text_size::TextRange::new(
        TextSize::try_from(start).ok()?,
        TextSize::try_from(end).ok()?,
    )))
}

/// Does an event come from the loop itself (not a helper), with its call as a whole
/// expression statement (`opt.zero_grad()` alone on its lines)?
pub(crate) fn movable(checker: &Checker, e: &Event) -> bool {
    e.via.is_none()
        && matches!(e.stmt, Stmt::Expr(x) if e.call.is_some_and(|c| x.value.range() == c.range()))
        && stmt_alone(checker, e.stmt)
}

/// How to name an event's call in a message: its source text, plus the local function it runs
/// in when inlined (`` `optimizer.step()` (in `train_step(...)`) ``).
pub(crate) fn describe(checker: &Checker, e: &Event) -> String {
    // An event of a project function in another file sits at the call that reaches it: the
    // call's text is not the event's, so name the event by its kind.
    if let (Some(_), Some(v)) = (e.remote, e.via) {
        let callee = checker.text(v.func.range());
        return format!("{} (in `{callee}(...)`)", remote_event_name(e));
    }
    let text = match e.call {
        Some(c) => {
            let full = checker.text(c.range());
            if full.contains('\n') || full.len() > 60 {
                format!("{}(...)", checker.text(c.func.range()))
            } else {
                full.to_string()
            }
        }
        None => checker.text(e.range).to_string(),
    };
    match e.via {
        Some(v) => {
            let callee = checker.text(v.func.range());
            format!("`{text}` (in `{callee}(...)`)")
        }
        None => format!("`{text}`"),
    }
}

/// How a message names an event it cannot quote (one inside a function of another file).
fn remote_event_name(e: &Event) -> String {
    let on = |method: &str| match e.target_key() {
        Some(t) => format!("`{t}.{method}()`"),
        None => format!("a `{method}()`"),
    };
    match e.kind {
        EventKind::Backward => "a `backward()`".to_string(),
        EventKind::Step => match e.target_key() {
            Some(t) if e.scaler.is_some() => format!("the step of `{t}` (through the GradScaler)"),
            _ => on("step"),
        },
        EventKind::ZeroGrad => on("zero_grad"),
        EventKind::GradWrite => "a write of `.grad`".to_string(),
        EventKind::GradScale => "an in-place scaling of `.grad`".to_string(),
        EventKind::SchedulerStep => on("step"),
        EventKind::ScalerScale => "a `scaler.scale(...)`".to_string(),
        EventKind::ScalerUnscale => "a `scaler.unscale_(...)`".to_string(),
        EventKind::ScalerUpdate => "a `scaler.update()`".to_string(),
        EventKind::ClipGrad => "a gradient clipping".to_string(),
        EventKind::Eval => on("eval"),
        EventKind::Train => on("train"),
        EventKind::OptimizerCreated => "the creation of an optimizer".to_string(),
        EventKind::Escape => "a call that receives the optimizer".to_string(),
    }
}

/// Is the event's periodic guard Accelerate's `sync_gradients` flag (the framework then skips
/// `zero_grad()` and divides the loss on non-update steps)?
pub(crate) fn framework_sync_guard(checker: &Checker, e: &Event) -> bool {
    e.periodic_guard().is_some_and(|g| {
        let text = match g {
            torchvet_semantic::flow::Guard::If { test: Some(t), .. }
            | torchvet_semantic::flow::Guard::AfterExit { test: t, .. } => checker.text(t.range()),
            _ => "",
        };
        text.contains("sync_gradients")
    })
}

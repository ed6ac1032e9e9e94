use crate::checker::Checker;
use crate::rules::facts::{current_function, fates_of, origin_of, site, Origin};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::{qualified_call_kind, Kind};
use torchvet_semantic::project::facts::{Fate, UseHow, HARMLESS_CALLEES};
use torchvet_semantic::project::FuncId;

crate::declare_rule! {
    /// ## What it does
    /// Checks for a learning-rate scheduler (`torch.optim.lr_scheduler.*`, or a
    /// `transformers` `get_*_schedule*` helper) that is created and never stepped anywhere in
    /// the project. The scheduler is followed wherever it goes: through names, into project
    /// functions and classes it is passed to (`Trainer(..., scheduler=scheduler)` storing it
    /// as `self.scheduler`), through every method of that class, its bases and subclasses,
    /// and through the callers a factory returns it to.
    ///
    /// It stays silent as soon as anything may step the scheduler: a `.step()` (or any
    /// method other than `get_last_lr()`, `get_lr()`, `state_dict()`, `load_state_dict()`),
    /// a call the analysis cannot see into (a library trainer, `SequentialLR([...])`), a
    /// container, a closure, a framework hook that takes it over (`configure_optimizers`),
    /// or a `self` handed to other code. A scheduler bound at module level in a file that
    /// never trains (no backward pass, optimizer step or `zero_grad` in its module body, its
    /// functions, or the project functions they call) is a configuration module's, which a
    /// runner imports by name: it is left alone. So is a scheduler built on an optimizer that
    /// nothing steps and that goes to scheduler constructors only (torch's, or another
    /// library's: timm's `CosineLRScheduler`, `create_scheduler`, ...): a settings stub whose
    /// optimizer never trains.
    ///
    /// In unit-test code, a scheduler whose only uses read or restore its state
    /// (`state_dict()`, `load_state_dict()`, `get_last_lr()`) is a test of checkpointing, not
    /// a run whose learning rate never changes: it is left alone.
    ///
    /// When every `.step()` of a scheduler built under `if cfg["scheduler"] == "A":` sits
    /// under `if cfg["scheduler"] == "B":` tests of the same setting for other values, the
    /// scheduler is never stepped either, and reported.
    ///
    /// ## Why is this bad?
    /// The schedule never applies: the learning rate stays at its initial value for the
    /// whole run (no warm-up, no decay, no milestones), while logs of `get_last_lr()` and the
    /// configuration suggest otherwise. Models train worse, or diverge at a learning rate
    /// meant only for the first epochs.
    ///
    /// ## Example
    /// ```python
    /// scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.95)
    /// for epoch in range(epochs):
    ///     train_one_epoch(model, loader, optimizer)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.95)
    /// for epoch in range(epochs):
    ///     train_one_epoch(model, loader, optimizer)
    ///     scheduler.step()
    /// ```
    ///
    /// ## Fix safety
    /// No fix is offered: where the `.step()` belongs (once per epoch, per batch for
    /// per-iteration schedules such as `OneCycleLR`, with the validation metric for
    /// `ReduceLROnPlateau`) depends on the schedule and the loop.
    ///
    /// ## References
    /// - [How to adjust the learning rate](https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate)
    pub(crate) static SCHEDULER_NEVER_STEPPED = {
        name: "scheduler-never-stepped",
        code: "TV125",
        group: Correctness,
        severity: Warning,
        title: "An LR scheduler is created and never stepped anywhere in the project (the schedule silently never applies)",
        autofix: No,
        hooks: { call: check_call },
    };
}

/// Scheduler methods that only read or restore it.
const READ_ONLY: &[&str] = &[
    "get_last_lr",
    "get_lr",
    "state_dict",
    "load_state_dict",
    "print_lr",
];

fn is_scheduler(q: &str) -> bool {
    matches!(qualified_call_kind(q), Kind::Scheduler(_))
        || (q.starts_with("transformers.")
            && helpers::last_segment(q).starts_with("get_")
            && q.contains("schedule"))
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let Some(q) = name else { return };
    if !is_scheduler(q) {
        return;
    }
    let Some(origin) = origin_of(checker, call) else {
        return;
    };
    let Some(p) = checker.project_or_file().cloned() else {
        return;
    };
    // A module-level scheduler in a file that never trains (no backward pass, optimizer step
    // or zero_grad, at module level, in its functions or in the project functions they
    // call): a config module that a runner imports by name (`config.lr_scheduler`), which
    // the project model cannot follow.
    if checker.function().is_none() && matches!(origin, Origin::Bound(_)) && !p.model.trains(p.file)
    {
        return;
    }
    let Some(func) = current_function(checker, &p) else {
        return;
    };
    let fates = fates_of(&p, func, &origin, call);
    let guard = construction_guard(checker);
    let mut notes: Vec<(FuncId, TextRange, String)> = Vec::new();
    for f in &fates {
        match f {
            Fate::Use {
                func: at,
                how,
                at: r,
            } => match how {
                UseHow::Method(m) if READ_ONLY.contains(&&**m) => {}
                UseHow::Method(m) if &**m == "step" => {
                    // A step under an exclusive test of the same setting does not run.
                    if *at == func && guard.as_ref().is_some_and(|g| excluded_by(checker, g, *r)) {
                        notes.push((
                            *at,
                            *r,
                            "stepped only when the setting has another value".into(),
                        ));
                        continue;
                    }
                    return;
                }
                UseHow::Method(_) | UseHow::Called | UseHow::Key(_) => return,
                UseHow::Attribute(a) if &**a == "step" => return,
                UseHow::Attribute(_) | UseHow::Tested | UseHow::KeyTested(_) | UseHow::Operand => {}
                UseHow::Arg { callee, .. } if HARMLESS_CALLEES.contains(&&**callee) => {}
                UseHow::Arg { .. } => return,
                _ => return,
            },
            Fate::Loop { .. } | Fate::Framework { .. } | Fate::Unknown { .. } => return,
        }
    }
    if optimizer_never_used(checker, &p, func, call) {
        return;
    }
    if notes.is_empty() && state_test(checker, &fates) {
        return;
    }
    let class = helpers::last_segment(q);
    let bound = match &origin {
        Origin::Bound(_) => checker
            .text(match checker.current_stmt() {
                Some(Stmt::Assign(a)) => a.targets[0].range(),
                Some(Stmt::AnnAssign(a)) => a.target.range(),
                _ => call.range(),
            })
            .to_string(),
        Origin::Returned(_) => "the returned scheduler".to_string(),
    };
    let reach = match (&guard, notes.is_empty()) {
        (Some(g), false) => format!(
            " (its `.step()` runs only when `{}` is not \"{}\", the value that builds it)",
            g.subject, g.value
        ),
        _ => reach_note(&p, func, &fates),
    };
    let message = format!(
        "`{bound}` ({class}) is created but never stepped anywhere in the project{reach}: the learning rate stays at its initial value for the whole run; call `.step()` (once per epoch, or per batch for per-iteration schedules)"
    );
    let d = checker.report(call.range(), message);
    for (f, r, note) in notes {
        if f.file == p.file {
            d.add_related(r, note);
        }
    }
    for fate in fates.iter().take(4) {
        if let Fate::Use {
            func: f,
            how: UseHow::Method(m),
            at,
        } = fate
        {
            let note = format!("only `.{m}()` is called on it here");
            if f.file == p.file {
                d.add_related(*at, note);
            } else {
                d.add_remote(&p, f.file, *at, note);
            }
        }
    }
}

/// A unit test that builds the scheduler to exercise its state (`state_dict()`,
/// `load_state_dict()` of a checkpoint, `last_epoch` inspected): its only uses read or restore
/// state, and none is a step. Such a test runs no training whose learning rate could stay
/// put.
fn state_test(checker: &Checker, fates: &[Fate]) -> bool {
    checker.is_test_file()
        && fates.iter().any(
            |f| matches!(f, Fate::Use { how: UseHow::Method(m), .. } if READ_ONLY.contains(&&**m)),
        )
}

/// " (it goes to `Trainer` in trainer.py, which never steps it)" style note.
fn reach_note(p: &torchvet_semantic::project::ProjectFile, func: FuncId, fates: &[Fate]) -> String {
    let others: Vec<FuncId> = fates
        .iter()
        .map(|f| f.place().0)
        .filter(|f| *f != func)
        .collect();
    let Some(first) = others.first() else {
        return String::new();
    };
    let g = p.model.function(*first);
    let (owner, at) = match p.model.class_of(*first) {
        Some(c) => (
            p.model.class_name(c).0.to_string(),
            p.model.file(c.file).classes[c.index as usize].range,
        ),
        None => (g.name.to_string(), g.range),
    };
    let file = if first.file == p.file {
        String::new()
    } else {
        format!(" ({})", site(p, first.file, at))
    };
    format!(" (it reaches `{owner}`{file}, which does not step it either)")
}

/// The test the construction sits under: `subject == "value"` (the innermost `if`/`elif`
/// whose branch holds the statement).
struct Guard {
    subject: String,
    value: String,
}

fn construction_guard(checker: &Checker) -> Option<Guard> {
    let stmt = checker.current_stmt()?;
    for outer in checker.stmt_stack().iter().rev() {
        let Stmt::If(i) = outer else { continue };
        let mut branches = vec![(Some(&*i.test), &i.body)];
        for c in &i.elif_else_clauses {
            branches.push((c.test.as_ref(), &c.body));
        }
        for (test, body) in branches {
            let inside = body
                .first()
                .zip(body.last())
                .is_some_and(|(a, b)| a.start() <= stmt.start() && stmt.end() <= b.end());
            if inside {
                return test
                    .and_then(|t| equality(checker, t))
                    .map(|(subject, value)| Guard { subject, value });
            }
        }
    }
    None
}

/// `subject == "literal"` (either side).
fn equality(checker: &Checker, test: &Expr) -> Option<(String, String)> {
    let Expr::Compare(c) = test else { return None };
    if c.ops.len() != 1 || !matches!(c.ops[0], ruff_python_ast::CmpOp::Eq) {
        return None;
    }
    let (l, r) = (&*c.left, &c.comparators[0]);
    match (helpers::str_value(l), helpers::str_value(r)) {
        (None, Some(v)) => Some((checker.text(l.range()).to_string(), v.to_string())),
        (Some(v), None) => Some((checker.text(r.range()).to_string(), v.to_string())),
        _ => None,
    }
}

/// Is the statement at `r` (in the current function) only reached when the guard's subject
/// equals another value: inside the branch of an `if subject == "other":`?
fn excluded_by(checker: &Checker, g: &Guard, r: TextRange) -> bool {
    let body: &[Stmt] = checker.scope_body();
    let mut excluded = false;
    crate::rules::correctness::helpers::for_each_stmt(body, &mut |s| {
        let Stmt::If(i) = s else { return };
        let mut branches = vec![(Some(&*i.test), &i.body)];
        for c in &i.elif_else_clauses {
            branches.push((c.test.as_ref(), &c.body));
        }
        for (test, b) in branches {
            let inside = b
                .first()
                .zip(b.last())
                .is_some_and(|(x, y)| x.start() <= r.start() && r.end() <= y.end());
            if !inside {
                continue;
            }
            if let Some((subject, value)) = test.and_then(|t| equality(checker, t)) {
                if subject == g.subject && value != g.value {
                    excluded = true;
                }
            }
        }
    });
    excluded
}

/// The optimizer the scheduler is built on is a name of this function (or of a notebook's
/// cells) that nothing steps,
/// returns, stores or hands to anything but a scheduler constructor (a `model_config()` that
/// builds an optimizer and a scheduler and drops both): no training runs with either, so the
/// learning rate the scheduler would change is never used.
fn optimizer_never_used(
    checker: &Checker,
    p: &torchvet_semantic::project::ProjectFile,
    func: FuncId,
    call: &ExprCall,
) -> bool {
    let arg = call.arguments.args.first().or_else(|| {
        call.arguments
            .keywords
            .iter()
            .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "optimizer"))
            .map(|k| &k.value)
    });
    let Some(Expr::Name(n)) = arg else {
        return false;
    };
    let target = torchvet_semantic::project::Target::Local(n.id.as_str().into());
    let fates = p.model.fates(func, &target);
    !fates.is_empty()
        && fates.iter().all(|f| match f {
            Fate::Use { how, .. } => match how {
                UseHow::Arg { callee, .. } => {
                    torchvet_semantic::kinds::is_scheduler_constructor(callee)
                }
                UseHow::Method(m) => READ_ONLY.contains(&&**m) || &**m == "zero_grad",
                UseHow::Attribute(a) => &**a != "step",
                UseHow::Tested | UseHow::KeyTested(_) | UseHow::Operand => true,
                _ => false,
            },
            _ => false,
        })
        // At module level a runner may import the optimizer by name (`config.optimizer`),
        // which the model cannot follow; nothing imports a notebook.
        && (checker.function().is_some()
            || matches!(checker.source.kind, torchvet_python::SourceKind::Notebook(_)))
}

#[cfg(test)]
mod tests {

    fn count(src: &str) -> usize {
        crate::test_support::count_findings("scheduler-never-stepped", src)
    }

    #[test]
    fn a_config_module_scheduler_is_left_to_its_runner() {
        let config = "import torch\nimport torch.optim.lr_scheduler as lrs\nmodel = torch.nn.Linear(2, 2)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\nlr_scheduler = lrs.MultiStepLR(optimizer, milestones=[30, 60], gamma=0.1)\n";
        assert_eq!(count(config), 0);
        // The same module-level scheduler in a script that trains and never steps it.
        let script = format!(
            "{config}for x in range(10):\n    optimizer.zero_grad()\n    model(torch.ones(2)).sum().backward()\n    optimizer.step()\n"
        );
        assert_eq!(count(&script), 1);
    }
}

use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::facts::{current_function, load_info_at, site, Origin};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::flow::EventKind;
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;
use torchvet_semantic::project::facts::{Fate, PairBy, StateRole, UseHow};
use torchvet_semantic::project::{FuncId, Target, Val};

crate::declare_rule! {
    /// ## What it does
    /// Checks resume code: a function that restores a model from a checkpoint loaded with
    /// `torch.load` (`model.load_state_dict(ckpt["model"])`), takes the training position from
    /// it (`start_epoch = ckpt["epoch"] + 1`) and goes on training, while the checkpoint, as
    /// the project's own `torch.save` writes it (in any file, directly or through a
    /// `save_checkpoint(state, ...)` helper), also holds optimizer, LR-scheduler or GradScaler
    /// state that the resume never restores (no `ckpt["optimizer"]` read, no
    /// `optimizer.load_state_dict(...)`).
    ///
    /// Loads that only evaluate or fine-tune (no training position read, or nothing trained
    /// afterwards) are not resumes and are not reported; neither are loads whose checkpoint
    /// the project does not write, nor checkpoints handed whole to other code.
    ///
    /// ## Why is this bad?
    /// The weights continue where they stopped, but SGD momentum buffers and Adam's moment
    /// estimates restart from zero and the learning-rate schedule restarts from its first
    /// step (a warm-up runs again, a decayed rate jumps back up). The resumed run silently
    /// differs from an uninterrupted one, often with a loss spike right after resuming.
    ///
    /// ## Example
    /// ```python
    /// ckpt = torch.load(args.resume, weights_only=True)
    /// model.load_state_dict(ckpt["model"])
    /// start_epoch = ckpt["epoch"] + 1
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// ckpt = torch.load(args.resume, weights_only=True)
    /// model.load_state_dict(ckpt["model"])
    /// optimizer.load_state_dict(ckpt["optimizer"])
    /// scheduler.load_state_dict(ckpt["scheduler"])
    /// start_epoch = ckpt["epoch"] + 1
    /// ```
    ///
    /// ## Fix safety
    /// When the optimizer whose state the checkpoint holds is named in the resume code (the
    /// same `self.<attr>`, or the one optimizer of the function), a display-only fix shows
    /// the `load_state_dict` line to add. It is not applied: restoring the state changes the
    /// resumed run (as intended), and the checkpoint must match the optimizer's parameters.
    ///
    /// ## References
    /// - [Saving and loading a general checkpoint for inference and/or resuming training](https://pytorch.org/tutorials/beginner/saving_loading_models.html#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training)
    /// - [torch.optim.Optimizer.load_state_dict](https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.load_state_dict.html)
    pub(crate) static RESUME_WITHOUT_OPTIMIZER_STATE = {
        name: "resume-without-optimizer-state",
        code: "TV126",
        group: Correctness,
        severity: Warning,
        title: "Resume restores model weights from a checkpoint that also holds optimizer/scheduler state, but never restores those",
        autofix: Suggest,
        hooks: { call: check_call },
    };
}

/// Checkpoint keys that hold the training position.
const PROGRESS_KEYS: &[&str] = &[
    "epoch",
    "epochs",
    "start_epoch",
    "last_epoch",
    "cur_epoch",
    "current_epoch",
    "iteration",
    "iter",
    "iters",
    "it",
    "step",
    "steps",
    "global_step",
    "num_updates",
    "n_iter",
];

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    let Some(("load_state_dict", recv)) = helpers::method_call(call) else {
        return;
    };
    if !checker.mentions("torch.load") && !checker.mentions("load(") {
        return;
    }
    if matches!(
        checker.kind_of(recv),
        Kind::Optimizer(_) | Kind::Scheduler(_) | Kind::GradScaler
    ) {
        return;
    }
    let Some(arg) = helpers::argument(call, "state_dict", 0) else {
        return;
    };
    let Some(ckpt) = checkpoint_name(checker, arg) else {
        return;
    };
    let Some(p) = checker.project_or_file().cloned() else {
        return;
    };
    let Some(func) = current_function(checker, &p) else {
        return;
    };
    // The checkpoint is loaded here: `ckpt = torch.load(...)`.
    let Some((at, bindings)) = p.model.bindings_of(func, &ckpt) else {
        return;
    };
    let [b] = bindings else { return };
    if at != func || b.element.is_some() || !torchvet_semantic::helpers::is_torch_load(&b.callee) {
        return;
    }
    let body: &[Stmt] = checker.scope_body();
    let Some(load) = find_call(body, b.call) else {
        return;
    };
    let Some(info) = load_info_at(
        checker,
        load,
        Some(Origin::Bound(Target::Local(ckpt.as_str().into()))),
        None,
    ) else {
        return;
    };
    // Every use of the checkpoint must be known (handed whole to other code: it may restore).
    if info.fates.iter().any(|f| match f {
        Fate::Unknown { .. } | Fate::Loop { .. } | Fate::Framework { .. } => true,
        Fate::Use { how, .. } => matches!(how, UseHow::Arg { .. } | UseHow::Called),
    }) {
        return;
    }
    // A resume: the training position is taken from the checkpoint.
    let progress = info
        .key_uses
        .iter()
        .find(|(f, k, r)| *f == func && PROGRESS_KEYS.contains(&&**k) && assigned_from(body, *r));
    let Some((_, progress_key, progress_at)) = progress.cloned() else {
        return;
    };
    // ... and training goes on.
    if !trains(checker, &p, func) {
        return;
    }
    // Optimizer / scheduler state restored some other way.
    if restores_state_elsewhere(checker, body) {
        return;
    }
    let read: Vec<&str> = info.key_uses.iter().map(|(_, k, _)| &**k).collect();
    let pairs: Vec<_> = info
        .pairs
        .iter()
        .filter(|ps| matches!(ps.by, PairBy::Path | PairBy::Helper | PairBy::Keys))
        .collect();
    if pairs.is_empty() {
        return;
    }
    // Every paired save must hold state this resume leaves out.
    let mut missing: Option<Vec<(Box<str>, StateRole)>> = None;
    for ps in &pairs {
        let Some(keys) = &ps.content.keys else { return };
        let m: Vec<(Box<str>, StateRole)> = keys
            .iter()
            .filter(|(k, _, role)| {
                matches!(
                    role,
                    StateRole::Optimizer | StateRole::Scheduler | StateRole::Scaler
                ) && !read.contains(&&**k)
            })
            .map(|(k, _, role)| (k.clone(), *role))
            .collect();
        if m.is_empty() {
            return;
        }
        missing.get_or_insert(m);
    }
    let Some(missing) = missing else { return };
    let first = pairs[0];
    let save = first.call(&p.model).call;
    let save_file = first.func.file;
    let where_ = site(&p, save_file, save);
    let what: Vec<String> = missing
        .iter()
        .map(|(k, role)| {
            let who = match role {
                StateRole::Optimizer => "optimizer",
                StateRole::Scheduler => "LR scheduler",
                _ => "GradScaler",
            };
            format!("the {who} state (\"{k}\")")
        })
        .collect();
    let consequence = if missing.iter().any(|(_, r)| *r == StateRole::Scheduler) {
        "momentum / Adam moments and the learning-rate schedule restart from scratch"
    } else {
        "momentum / Adam moments restart from scratch"
    };
    let message = format!(
        "this resume restores the model and \"{progress_key}\" from `{ckpt}` but not {} that the checkpoint saved at {where_} holds: {consequence}",
        join(&what)
    );
    let fix = suggestion(checker, &p, first, &missing, &ckpt, call);
    let d = checker.report(call.range(), message);
    d.add_related(progress_at, "the training position is read here");
    if save_file == p.file {
        d.add_related(save, "the checkpoint is written here");
    } else {
        d.add_remote(&p, save_file, save, "the checkpoint is written here");
    }
    if let Some((file, range)) = first.content.origin {
        let note = "with this content (optimizer and scheduler state included)";
        if file == p.file {
            d.add_related(range, note);
        } else {
            d.add_remote(&p, file, range, note);
        }
    }
    if let Some(f) = fix {
        d.set_fix(f);
    }
}

fn join(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `ckpt["model"]`, `ckpt.get("model")`, or a name assigned one of those: `ckpt`.
fn checkpoint_name(checker: &Checker, arg: &Expr) -> Option<String> {
    let from = |e: &Expr| -> Option<String> {
        match e {
            Expr::Subscript(s) if helpers::str_value(&s.slice).is_some() => {
                helpers::name_of(&s.value).map(str::to_string)
            }
            Expr::Call(c) => match helpers::method_call(c) {
                Some(("get", recv)) => helpers::name_of(recv).map(str::to_string),
                _ => None,
            },
            _ => None,
        }
    };
    if let Some(n) = from(arg) {
        return Some(n);
    }
    // `state = ckpt["model"]; model.load_state_dict(state)`: the one assignment before.
    let name = helpers::name_of(arg)?;
    let body: &[Stmt] = checker.scope_body();
    let mut found: Vec<&Expr> = Vec::new();
    crate::rules::correctness::helpers::for_each_stmt(body, &mut |s| {
        if let Stmt::Assign(a) = s {
            if a.start() < arg.start()
                && a.targets.iter().any(|t| helpers::name_of(t) == Some(name))
            {
                found.push(&a.value);
            }
        }
    });
    match found.as_slice() {
        [one] => from(one),
        _ => None,
    }
}

/// The call with this range in a body.
fn find_call(body: &[Stmt], range: TextRange) -> Option<&ExprCall> {
    struct F<'a> {
        range: TextRange,
        found: Option<&'a ExprCall>,
    }
    impl<'a> Visitor<'a> for F<'a> {
        fn visit_expr(&mut self, e: &'a Expr) {
            if self.found.is_some() {
                return;
            }
            if let Expr::Call(c) = e {
                if c.range() == self.range {
                    self.found = Some(c);
                    return;
                }
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut f = F { range, found: None };
    f.visit_body(body);
    f.found
}

/// Is the expression at `r` (part of) the value of an assignment of the body?
fn assigned_from(body: &[Stmt], r: TextRange) -> bool {
    let mut hit = false;
    crate::rules::correctness::helpers::for_each_stmt(body, &mut |s| {
        let value = match s {
            Stmt::Assign(a) => Some(&*a.value),
            Stmt::AnnAssign(a) => a.value.as_deref(),
            Stmt::AugAssign(a) => Some(&*a.value),
            _ => None,
        };
        if value.is_some_and(|v| v.range().contains_range(r)) {
            hit = true;
        }
    });
    hit
}

/// Does the code around the resume go on training: the function (or the methods of its
/// class) steps an optimizer, or (at module level) the file trains?
fn trains(checker: &Checker, p: &torchvet_semantic::project::ProjectFile, func: FuncId) -> bool {
    let steps = |f: FuncId| {
        p.model
            .events(f)
            .iter()
            .any(|e| matches!(e.kind, EventKind::Step | EventKind::Backward))
    };
    if steps(func) {
        return true;
    }
    if let Some(c) = p.model.class_of(func) {
        return p
            .model
            .class_family(c)
            .into_iter()
            .flat_map(|c| p.model.class_methods(c))
            .any(steps);
    }
    func.index == 0 && (p.model.trains(p.file) || checker.mentions(".backward("))
}

/// Does the function restore an optimizer, scheduler or scaler with `load_state_dict` (from
/// any source)?
fn restores_state_elsewhere(checker: &mut Checker, body: &[Stmt]) -> bool {
    let mut receivers: Vec<&Expr> = Vec::new();
    struct V<'a, 'o> {
        out: &'o mut Vec<&'a Expr>,
    }
    impl<'a> Visitor<'a> for V<'a, '_> {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            if !matches!(s, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                visitor::walk_stmt(self, s);
            }
        }
        fn visit_expr(&mut self, e: &'a Expr) {
            if let Expr::Call(c) = e {
                if let Some(("load_state_dict", recv)) = helpers::method_call(c) {
                    self.out.push(recv);
                }
            }
            visitor::walk_expr(self, e);
        }
    }
    V {
        out: &mut receivers,
    }
    .visit_body(body);
    receivers.into_iter().any(|r| {
        let text = helpers::dotted(r).unwrap_or_default().to_ascii_lowercase();
        matches!(
            checker.kind_of(r),
            Kind::Optimizer(_) | Kind::Scheduler(_) | Kind::GradScaler
        ) || text.contains("optim")
            || text.contains("sched")
            || text.contains("scaler")
    })
}

/// A display-only fix: `<optimizer>.load_state_dict(ckpt["optimizer"])` after the model's
/// restore, when the saved state's owner is named here (`self.optimizer`).
fn suggestion(
    checker: &Checker,
    p: &torchvet_semantic::project::ProjectFile,
    paired: &torchvet_semantic::project::facts::PairedSave,
    missing: &[(Box<str>, StateRole)],
    ckpt: &str,
    call: &ExprCall,
) -> Option<RawFix> {
    let save = paired.call(&p.model);
    let keys = save.content.keys.as_ref()?;
    let stmt = checker.current_stmt()?;
    if !matches!(stmt, Stmt::Expr(_))
        || p.model.class_of(paired.func)
            != current_function(checker, p).and_then(|f| p.model.class_of(f))
    {
        return None;
    }
    let indent = {
        let line_start = checker
            .source
            .line_index
            .line_start(checker.source.line_index.line_of(stmt.start()));
        checker
            .source
            .text
            .get(line_start..stmt.start().to_usize())
            .unwrap_or("")
            .to_string()
    };
    if !indent.chars().all(char::is_whitespace) {
        return None;
    }
    let mut lines = String::new();
    for (k, _) in missing {
        let kc = keys.iter().find(|kc| kc.key == *k)?;
        let Some(Val::SelfAttr(attr)) = &kc.state_of else {
            return None;
        };
        lines.push_str(&format!(
            "\n{indent}self.{attr}.load_state_dict({ckpt}[\"{k}\"])"
        ));
    }
    let _ = call;
    Some(RawFix::display_only(
        "Restore the saved optimizer / scheduler state too",
        vec![RawEdit::insert(stmt.end(), lines)],
    ))
}

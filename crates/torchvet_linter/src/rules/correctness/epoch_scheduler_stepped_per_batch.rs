use crate::checker::Checker;
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers::{self, Literal};
use torchvet_semantic::kinds::Kind;
use torchvet_semantic::modes::{assigned_values, calls_in, classify, Event};

crate::declare_rule! {
    /// ## What it does
    /// Checks for epoch-based learning-rate schedulers (`StepLR`, `MultiStepLR`,
    /// `ExponentialLR`, `CosineAnnealingLR`) whose horizon is counted in epochs (a small
    /// literal or a value named after epochs) but whose `step()` is called inside the
    /// per-batch loop over a DataLoader.
    ///
    /// ## Why is this bad?
    /// These schedulers count calls to `step()`. With `StepLR(step_size=30)` meant as "every
    /// 30 epochs", calling `step()` every batch decays the learning rate every 30 batches: it
    /// reaches almost zero within the first epoch and the model stops learning.
    /// `CosineAnnealingLR(T_max=epochs)` finishes its cosine after `epochs` batches and then
    /// oscillates, and `ExponentialLR` multiplies the LR by `gamma` every batch. Nothing fails;
    /// training just goes badly.
    ///
    /// This rule is in preview: whether the horizon means epochs is inferred from literals and
    /// names.
    ///
    /// ## Example
    /// ```python
    /// scheduler = StepLR(optimizer, step_size=30)
    /// for epoch in range(epochs):
    ///     for x, y in loader:
    ///         train_step(x, y)
    ///         optimizer.step()
    ///         scheduler.step()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// scheduler = StepLR(optimizer, step_size=30)
    /// for epoch in range(epochs):
    ///     for x, y in loader:
    ///         train_step(x, y)
    ///         optimizer.step()
    ///     scheduler.step()
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: either `step()` moves to the epoch loop or the horizon is rescaled by
    /// the number of batches per epoch, and only the author knows which was meant.
    ///
    /// ## References
    /// - [How to adjust learning rate](https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate)
    /// - [StepLR](https://pytorch.org/docs/stable/generated/torch.optim.lr_scheduler.StepLR.html)
    /// - [mittagessen/kraken issue 635](https://github.com/mittagessen/kraken/issues/635)
    pub(crate) static EPOCH_SCHEDULER_STEPPED_PER_BATCH = {
        name: "epoch-scheduler-stepped-per-batch",
        code: "TV066",
        group: Correctness,
        severity: Warning,
        title: "Epoch-based LR scheduler stepped inside the per-batch loop",
        autofix: No,
        preview: true,
        hooks: { call: check_call },
    };
}

/// Does a horizon expression count epochs (`Some(true)`), iterations (`Some(false)`), or is
/// it unknown?
fn epoch_scale(expr: &Expr, max_literal: i64) -> Option<bool> {
    match expr {
        Expr::NumberLiteral(_) => match helpers::literal(expr)? {
            Literal::Int(i) => Some(i <= max_literal),
            Literal::Float(f) => Some(f <= max_literal as f64),
            _ => None,
        },
        Expr::List(l) if !l.elts.is_empty() => all_epochs(&l.elts, max_literal),
        Expr::Tuple(t) if !t.elts.is_empty() => all_epochs(&t.elts, max_literal),
        Expr::BinOp(b) => {
            let (l, r) = (
                epoch_scale(&b.left, max_literal),
                epoch_scale(&b.right, max_literal),
            );
            match (l, r) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), _) | (_, Some(true)) => Some(true),
                _ => None,
            }
        }
        Expr::Call(c) => {
            // `int(0.5 * epochs)`, `round(epochs / 3)`
            if matches!(
                helpers::name_of(&c.func),
                Some("int" | "round" | "max" | "min")
            ) {
                let v: Vec<Option<bool>> = c
                    .arguments
                    .args
                    .iter()
                    .map(|a| epoch_scale(a, max_literal))
                    .collect();
                if v.contains(&Some(false)) {
                    return Some(false);
                }
                return v.contains(&Some(true)).then_some(true);
            }
            Some(false).filter(|_| helpers::name_of(&c.func) == Some("len"))
        }
        Expr::Name(_) | Expr::Attribute(_) | Expr::Subscript(_) => {
            let text = helpers::dotted(expr)
                .or_else(|| match expr {
                    Expr::Subscript(s) => helpers::dotted(&s.value),
                    _ => None,
                })?
                .to_ascii_lowercase();
            if ["step", "iter", "batch", "total", "len", "sample"]
                .iter()
                .any(|w| text.contains(w))
            {
                Some(false)
            } else if text.contains("epoch") {
                Some(true)
            } else {
                None
            }
        }
        _ => None,
    }
}

fn all_epochs(elts: &[Expr], max_literal: i64) -> Option<bool> {
    let v: Vec<Option<bool>> = elts.iter().map(|e| epoch_scale(e, max_literal)).collect();
    if v.iter().all(|x| *x == Some(true)) {
        Some(true)
    } else if v.contains(&Some(false)) {
        Some(false)
    } else {
        None
    }
}

/// Is the loop's iterable a DataLoader (`loader`, `enumerate(train_loader)`, `tqdm(dl)`, a
/// `pbar = tqdm(enumerate(loader))` held in a variable)?
fn iterates_loader<'a>(checker: &mut Checker<'a>, iter: &'a Expr) -> Option<TextRange> {
    let cur = checker.loop_source(iter);
    if matches!(cur, Expr::Call(_)) {
        return None;
    }
    if checker.kind_of(cur) == Kind::DataLoader {
        return Some(cur.range());
    }
    let text = helpers::dotted(cur)?.to_ascii_lowercase();
    let last = text.rsplit('.').next().unwrap_or(&text);
    (last.contains("loader") || last == "dl" || last.ends_with("_dl")).then(|| cur.range())
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    let Some(("step", recv)) = helpers::method_call(call) else {
        return;
    };
    if !call.arguments.is_empty() || !checker.in_loop() {
        return;
    }
    let Kind::Scheduler(kind) = checker.kind_of(recv) else {
        return;
    };
    let (param, pos, max) = match kind.as_str() {
        "StepLR" => ("step_size", 1, 100),
        "MultiStepLR" => ("milestones", 1, 300),
        "CosineAnnealingLR" => ("T_max", 1, 500),
        "ExponentialLR" => ("gamma", 1, 0),
        _ => return,
    };
    let Some(&inner) = checker.frame().loops.last() else {
        return;
    };
    let Stmt::For(for_stmt) = inner else { return };
    // The call runs every iteration: no `if` between the loop and the call.
    let stack = checker.stmt_stack();
    let Some(at) = stack.iter().position(|s| std::ptr::eq(*s, inner)) else {
        return;
    };
    if stack[at + 1..]
        .iter()
        .any(|s| !matches!(s, Stmt::Expr(_) | Stmt::With(_)))
    {
        return;
    }
    let Some(loader) = iterates_loader(checker, &for_stmt.iter) else {
        return;
    };
    // A batch loop: the optimizer steps in it.
    let opt_step = calls_in(&for_stmt.body)
        .into_iter()
        .find(|c| classify(checker, c) == Event::OptStep)
        .map(Ranged::range);
    let Some(opt_step) = opt_step else { return };
    // The scheduler's construction and its horizon.
    let values = assigned_values(checker, recv);
    let [(Expr::Call(ctor), created)] = values.as_slice() else {
        return;
    };
    let Some(arg) = helpers::argument(ctor, param, pos) else {
        return;
    };
    let detail = if kind == "ExponentialLR" {
        match helpers::literal(arg) {
            Some(Literal::Float(g)) if g <= 0.99 => {
                format!("multiplies the learning rate by gamma={g} at every batch, so it vanishes within a few hundred batches")
            }
            _ => return,
        }
    } else {
        if epoch_scale(arg, max) != Some(true) {
            return;
        }
        let a = checker.text(arg.range());
        match kind.as_str() {
            "StepLR" => format!("decays the learning rate every {a} batches instead of every {a} epochs, so it collapses early in training"),
            "MultiStepLR" => format!("reaches its milestones {a} after that many batches instead of epochs, so the learning rate collapses early in training"),
            _ => format!("completes its cosine after T_max={a} batches instead of epochs and then oscillates back up"),
        }
    };
    let sched = checker.text(recv.range());
    let loader_text = checker.text(loader);
    let message = format!(
        "`{sched}` ({kind}) is set up in epochs, but `{sched}.step()` runs once per batch of `{loader_text}`: it {detail}; step it once per epoch (after this loop) or scale the horizon by the number of batches"
    );
    let created = *created;
    checker
        .report(call.range(), message)
        .add_related(created, format!("`{sched}` is created here"))
        .add_related(opt_step, "the per-batch optimizer step");
}

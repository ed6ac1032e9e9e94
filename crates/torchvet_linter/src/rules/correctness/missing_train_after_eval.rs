use crate::checker::Checker;
use crate::fix::{next_line_start, own_line_indent, RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt, StmtFunctionDef};
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
    /// The evaluation and training helpers may live in other files: the project model follows
    /// the calls (a `train_one_epoch` in `engine.py` that calls `model.train()` at its start
    /// restores the mode; a `validate` in `evaluation.py` that calls `model.eval()` switches
    /// it). The helper may also be a closure of the function that encloses the loop's
    /// (`_eval_epoch()` called from `_train_epoch()`, both defined in `main()`), acting on
    /// the model that function holds. A method of the model's class restores it too: `model.start_head_training()`
    /// whose body calls `self.head.train()` (a method name only one module class of the
    /// project defines).
    ///
    /// Not reported: an `eval()` that a helper makes only under a condition of its own
    /// (`select_action()` that calls `self.dqn.eval()` only `if self.is_test:`), and an
    /// `eval()` under the opposite value of a test the loop never changes from its optimizer
    /// step (`if not train: ... model.eval()` and `if train: optimizer.step()` in one epoch
    /// function for training and validation), nor one that runs only on the last iteration of
    /// the batch loop (`if i == len(loader) - 1: validate(model)`): it comes after that loop's
    /// last step, and whether the next epoch restores the mode is the epoch loop's question.
    /// Nor one in a loop that runs once (its body always ends in `break`: an epoch loop whose
    /// stopping test was commented out) when no step follows it in that iteration. Nor one of
    /// a model that runs in eval mode anyway: its only Dropout/BatchNorm sits in a sub-module
    /// its constructor put in eval mode (a linear probe on a pretrained network loaded and
    /// switched to eval mode in `__init__`), and the file never calls `train()` on it. An
    /// `eval()` under `elif epoch == epochs - 1:` after a periodic `if` is the last
    /// iteration's; the periodic one is the finding.
    /// An `eval()` under a periodic condition (`if epoch % 5 == 0:`) is still a switch.
    /// Several switches of one model in one statement of the loop (a validation block that
    /// calls `perform_val(model, ...)` once per benchmark) are one finding, at the last of
    /// them, with the others as related locations. In a
    /// script or notebook, a helper redefined later (`def val_loss` in a later cell) is the
    /// definition before the loop that calls it.
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
    /// evaluation. It is unsafe: it changes the mode every later use of the model sees, and
    /// code after the loop that relied on the model being left in eval mode (a final test
    /// pass that reports accuracy) would then run with Dropout and batch statistics on.
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
        autofix: Suggest,
        preview: false,
        hooks: { stmt: check_stmt, end: finish },
    };
}

/// A finding waiting for whole-file facts.
/// An eval() that leaves the trained model in eval mode.
struct Candidate {
    /// Where the loop switches the mode: the `eval()` call, or the helper call carrying it.
    site: TextRange,
    /// The `eval()` call inside a same-file helper, when it comes through one.
    inner: Option<TextRange>,
    /// The `eval()` call in another file, when it comes through a project helper.
    remote: Option<(torchvet_semantic::project::FileId, TextRange)>,
    model: String,
    step: TextRange,
    /// The statement of the loop body that holds the switch: switches of one model in one
    /// such statement (seven `perform_val(..., backbone, ...)` calls in one validation block)
    /// are one finding, at the last of them.
    top: TextRange,
    /// The earlier switches of that statement.
    earlier: Vec<TextRange>,
    /// The model's train/eval-sensitive layer families, when known.
    layers: Option<&'static str>,
}

thread_local! {
    static PENDING: RefCell<Vec<Candidate>> = const { RefCell::new(Vec::new()) };
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    use torchvet_semantic::flow::EventKind;
    if !matches!(stmt, Stmt::For(_) | Stmt::While(_)) {
        return;
    }
    let Some(flow) = checker.loop_flow() else {
        return;
    };
    if !flow.has(EventKind::Eval) || !flow.has(EventKind::Backward) {
        return;
    }
    // Any train() in the iteration (direct, in a helper, at the top of the epoch or after the
    // validation) restores the mode.
    if flow.has(EventKind::Train) {
        return;
    }
    let Some(step) = flow.of_kind(EventKind::Step).map(|(_, e)| e.site()).next() else {
        return;
    };
    // Models that a training call of this loop receives (`train_one_epoch(model, ...)`).
    let trained_args: Vec<String> = flow
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Backward | EventKind::Step))
        .filter_map(|e| e.via)
        .flat_map(|c| c.arguments.args.iter())
        .filter_map(torchvet_semantic::flow::object_key)
        .collect();
    // Calls that both switch to eval mode and train (`train()` of a linear probe that keeps
    // BatchNorm frozen on purpose) are deliberate.
    let training_calls: Vec<TextRange> = flow
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Backward | EventKind::Step))
        .filter_map(|e| e.via.map(|c| c.range()))
        .collect();
    // The training call sets the mode itself: the eval() of a validation is overridden.
    if flow
        .of_kind(EventKind::Eval)
        .any(|(_, e)| e.via.is_some_and(|c| training_calls.contains(&c.range())))
    {
        return;
    }
    // Only models with Dropout / BatchNorm change behaviour in eval mode: per switch, `None`
    // for a model known to have none, else the layer families when known.
    let sensitive: Vec<Option<Option<&'static str>>> = flow
        .of_kind(EventKind::Eval)
        .map(|(_, e)| {
            let Some(target) = &e.target else {
                return None;
            };
            let model = match e.via {
                Some(call) => call.arguments.args.iter().find(|a| {
                    torchvet_semantic::flow::object_key(a).as_deref() == Some(target.key.as_str())
                }),
                None => find_expr(stmt, &|x| x.range() == target.range),
            }
            .or_else(|| {
                // Some mention of the same object in the loop (`self.model(x)`).
                find_expr(stmt, &|x| {
                    matches!(x, Expr::Name(_) | Expr::Attribute(_))
                        && torchvet_semantic::flow::object_key(x).as_deref()
                            == Some(target.key.as_str())
                })
            });
            // Unknown models (a library's `fit(model, ...)`, a backbone picked from a dict of
            // instances) may well have such layers; a model known to have none (built here from
            // torch layers or project classes without Dropout / BatchNorm) does not.
            match model {
                None => Some(None),
                Some(m) => {
                    (crate::rules::correctness::missing_eval_mode::mode_sensitivity(checker, m)
                        != Some(false))
                    .then(|| {
                        crate::rules::correctness::missing_eval_mode::mode_layer_of(checker, m)
                    })
                }
            }
        })
        .collect();
    let loop_range = stmt.range();
    PENDING.with_borrow_mut(|p| {
        for (n, (_, e)) in flow.of_kind(EventKind::Eval).enumerate() {
            let Some(layers) = sensitive[n] else {
                continue;
            };
            // `select_action()` that calls `eval()` only `if self.is_test:`, a shared epoch
            // function that evaluates only `if not train:`: the training path does not switch.
            if e.conditional_in_callee(loop_range) {
                continue;
            }
            // `if i == len(loader) - 1: validate(model)`: after this loop's last step; whether
            // the next epoch restores the mode is the enclosing loop's question.
            if e.only_on_last_iteration(stmt) {
                continue;
            }
            // A loop whose body always ends in `break` (an epoch loop whose stopping test was
            // commented out) runs once: only a step after the eval in that one iteration
            // would train in eval mode.
            if torchvet_semantic::regions::runs_at_most_once(stmt)
                && flow
                    .of_kind(EventKind::Step)
                    .all(|(_, s)| s.site().start() < e.site().start())
            {
                continue;
            }
            // `if not train: model.eval()` ... `if train: optimizer.step()` with a `train`
            // the loop never changes: no step of this loop runs after the eval.
            if flow
                .of_kind(EventKind::Step)
                .all(|(_, s)| e.never_in_same_loop_as(s, stmt))
            {
                continue;
            }
            let Some(model) = e.target.as_ref().map(|o| o.key.clone()) else {
                continue;
            };
            if model == "self"
                || model.is_empty()
                || e.target.as_ref().is_some_and(|o| o.helper_local)
            {
                continue;
            }
            if p.iter()
                .any(|c| c.site == e.site() || c.earlier.contains(&e.site()))
            {
                continue;
            }
            let inner = e.via.filter(|_| e.remote.is_none()).map(|_| e.range);
            if let Some(c) = p
                .iter_mut()
                .find(|c| c.model == model && c.top == e.top.range())
            {
                if e.site().start() > c.site.start() {
                    c.earlier.push(c.site);
                    c.site = e.site();
                    c.inner = inner;
                    c.remote = e.remote;
                } else {
                    c.earlier.push(e.site());
                }
                continue;
            }
            p.push(Candidate {
                site: e.site(),
                inner,
                remote: e.remote,
                model: model.clone(),
                step,
                top: e.top.range(),
                earlier: Vec::new(),
                layers,
            });
            if trained_args.contains(&model) {
                TRAINED.with_borrow_mut(|t| t.push(model));
            }
        }
    });
}

thread_local! {
    /// Models passed to a training call of some loop of the file.
    static TRAINED: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// The first expression of `stmt` (in source order) that satisfies `pred`.
fn find_expr<'a>(stmt: &'a Stmt, pred: &dyn Fn(&Expr) -> bool) -> Option<&'a Expr> {
    use ruff_python_ast::visitor::{self, Visitor};
    struct F<'a, 'p> {
        pred: &'p dyn Fn(&Expr) -> bool,
        found: Option<&'a Expr>,
    }
    impl<'a> Visitor<'a> for F<'a, '_> {
        fn visit_expr(&mut self, e: &'a Expr) {
            if self.found.is_some() {
                return;
            }
            if (self.pred)(e) {
                self.found = Some(e);
                return;
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut f = F { pred, found: None };
    f.visit_stmt(stmt);
    f.found
}

fn is_trained_model(checker: &Checker, model: &str) -> bool {
    if TRAINED.with_borrow(|t| t.iter().any(|m| m == model)) {
        return true;
    }
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
    let (suite, i) = find_suite(&checker.module().body, c.site)?;
    let stmt = suite.get(i)?;
    if !matches!(stmt, Stmt::Expr(_) | Stmt::Assign(_) | Stmt::AnnAssign(_)) {
        return None;
    }
    let indent = own_line_indent(checker, stmt.start())?;
    let after = if c.inner.is_some() || c.remote.is_some() {
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
    let nl = crate::fix::newline(checker);
    let text = if newline_first {
        format!("{nl}{indent}{}.train(){nl}", c.model)
    } else {
        format!("{indent}{}.train(){nl}", c.model)
    };
    Some(RawFix::unsafe_edit(
        format!("Call `{}.train()` after the evaluation", c.model),
        vec![RawEdit::insert(at, text)],
    ))
}

fn finish(checker: &mut Checker) {
    report_pending(checker);
    TRAINED.with_borrow_mut(Vec::clear);
}

fn report_pending(checker: &mut Checker) {
    let pending = PENDING.with_borrow_mut(std::mem::take);
    for c in pending {
        if !is_trained_model(checker, &c.model) {
            continue;
        }
        let call_text = checker.text(c.site);
        let model = &c.model;
        // What eval mode changes, for the families the model has (both when not known).
        let effect = match c.layers.map(torchvet_semantic::mode_layer_effects) {
            Some((true, false)) => "with Dropout off",
            Some((false, true)) => "with BatchNorm frozen to its running statistics",
            _ => "with Dropout off and BatchNorm frozen to its running statistics",
        };
        let message = if c.inner.is_some() || c.remote.is_some() {
            format!(
                "`{call_text}` puts `{model}` in eval mode inside this training loop and `{model}.train()` is not called before the following optimizer steps, which train {effect}"
            )
        } else {
            format!(
                "`{model}` is put in eval mode inside this training loop and `{model}.train()` is not called before the following optimizer steps, which train {effect}"
            )
        };
        let fix = build_fix(checker, &c);
        let project = checker.project().cloned();
        let d = checker.report(c.site, message);
        if let Some(inner) = c.inner {
            d.add_related(inner, "`eval()` is called here");
        }
        if let (Some((file, range)), Some(p)) = (c.remote, &project) {
            d.add_remote(p, file, range, "`eval()` is called here");
        }
        for at in &c.earlier {
            d.add_related(*at, format!("`{model}` is also switched to eval mode here"));
        }
        d.add_related(c.step, "this optimizer step then runs in eval mode");
        if let Some(fix) = fix {
            d.set_fix(fix);
        }
    }
}

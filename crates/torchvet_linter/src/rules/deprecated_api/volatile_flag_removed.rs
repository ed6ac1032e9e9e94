use super::helpers;
use crate::checker::Checker;
use crate::fix::RawFix;
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::Ranged;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `volatile=` passed to `torch.autograd.Variable(...)` and for assignments
    /// `x.volatile = ...`.
    ///
    /// ## Why is this bad?
    /// `volatile=True` was the pre-0.4 way to run inference without recording a graph. Since
    /// torch 0.4 it has no effect (apart from a warning): inference code that relies on it
    /// records the whole autograd graph, using far more memory and time than intended.
    /// `torch.no_grad()` or `torch.inference_mode()` is the replacement.
    ///
    /// `volatile=False` is not reported (it never did anything, and torch warns only on a true
    /// value), nor `volatile=flag` where `flag` is a parameter of the enclosing function that
    /// defaults to false and that no call in the project passes anything else for. Nor a
    /// `Variable` whose value never reaches a call that could record a graph (a model, a
    /// `forward`, a function of the project), through local names or the `self.<attr>` it is
    /// stored in: a constant weight (`Variable(torch.from_numpy(w), volatile=True)`) used only
    /// in arithmetic whose `.data` is read records nothing where it is made.
    ///
    /// ## Example
    /// ```python
    /// x = Variable(img, volatile=True)
    /// out = model(x)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// with torch.no_grad():
    ///     out = model(img)
    /// ```
    ///
    /// ## Fix safety
    /// The suggested fix only removes the `volatile=` argument, which is ignored anyway; the
    /// inference still has to be wrapped in `torch.no_grad()` by hand, so the fix is display-only.
    ///
    /// ## References
    /// - [PyTorch 0.4.0 migration guide (volatile flag)](https://pytorch.org/blog/pytorch-0_4_0-migration-guide/)
    /// - [torch.no_grad](https://pytorch.org/docs/stable/generated/torch.no_grad.html)
    pub(crate) static VOLATILE_FLAG_REMOVED = {
        name: "volatile-flag-removed",
        code: "TV071",
        group: DeprecatedApi,
        severity: Warning,
        title: "Variable(x, volatile=True) no longer disables autograd (inference builds graphs)",
        autofix: Suggest,
        hooks: { call: check_call, stmt: check_assign },
    };
}

const MESSAGE: &str = "has had no effect since torch 0.4: autograd still records the graph here; run the inference under `torch.no_grad()` instead";

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if !matches!(
        name,
        Some("torch.autograd.Variable" | "torch.autograd.variable.Variable")
    ) {
        return;
    }
    let Some(kw) = call.arguments.find_keyword("volatile") else {
        return;
    };
    if !helpers::active(checker, 0, 4) {
        return;
    }
    // `volatile=False` never did anything and torch only warns on a true value: nothing to
    // say. Likewise a parameter of the enclosing function that is false on every call the
    // project makes (`def to_var(x, volatile=False)` never called with `True`).
    if never_true(checker, &kw.value) {
        return;
    }
    // Under `torch.no_grad()` here, or in a function every caller runs without grad, the
    // graph is not recorded: the argument is dead, not a leak.
    let off_here = checker.in_no_grad()
        || checker
            .function()
            .is_some_and(|f| checker.called_only_without_grad(f.range.start()));
    // Or only the calls that pass a true value run without grad.
    let by_callers = !off_here && true_only_without_grad(checker, &kw.value);
    let off = off_here || by_callers;
    let frozen = if off {
        None
    } else {
        frozen_consumer(checker, call)
    };
    // A wrapped value that never reaches a model or function call (a constant weight used in
    // arithmetic whose `.data` is read) records no graph here, whatever the flag says.
    if !off && frozen.is_none() && !checker.reaches_graph_call(call) {
        return;
    }
    let message = if by_callers {
        format!("`volatile=` has had no effect since torch 0.4, and every call that sets `{}` runs under `torch.no_grad()` already: the argument is dead; remove it", checker.text(kw.value.range()))
    } else if off {
        "`volatile=` has had no effect since torch 0.4, and autograd is already off here (`torch.no_grad()`): the argument is dead; remove it".to_string()
    } else if let Some(model) = &frozen {
        format!("`volatile=` has had no effect since torch 0.4; no graph is recorded here anyway, because `{model}` is frozen (its parameters do not require grad) and this input does not require grad either: the argument is dead; remove it (and use `torch.no_grad()` for inference that runs a trainable model)")
    } else if !matches!(&kw.value, Expr::BooleanLiteral(b) if b.value) {
        format!("`volatile=` has had no effect since torch 0.4: whenever `{}` is meant to be true, autograd still records the graph; run that inference under `torch.no_grad()` instead", checker.text(kw.value.range()))
    } else {
        format!("`volatile=` {MESSAGE}")
    };
    let title = if off || frozen.is_some() {
        "Remove `volatile=`"
    } else {
        "Remove `volatile=` and wrap the inference in `torch.no_grad()`"
    };
    let fix = helpers::delete_argument(checker, call, kw.range())
        .map(|e| RawFix::display_only(title, vec![e]));
    let d = checker.report(kw.range(), message);
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

/// Is the `volatile=` value false wherever this runs: a falsy literal, or a parameter of the
/// enclosing function with a falsy default that no known call passes anything else for?
fn never_true(checker: &Checker, value: &Expr) -> bool {
    if helpers_literal_falsy(value) {
        return true;
    }
    checker.project_or_file().is_some_and(|p| {
        crate::rules::facts::unrebound_param(checker, p, value)
            .is_some_and(|(func, i, _)| p.model.param_always_falsy(func, i))
    })
}

/// Is the `volatile=` value a parameter of the enclosing function that only calls running
/// with autograd off pass a true value for (`slice_batch(..., inference=True)` only inside
/// `with torch.no_grad():`)?
fn true_only_without_grad(checker: &Checker, value: &Expr) -> bool {
    checker.project_or_file().is_some_and(|p| {
        crate::rules::facts::unrebound_param(checker, p, value)
            .is_some_and(|(func, i, _)| p.model.param_true_only_without_grad(func, i))
    })
}

fn helpers_literal_falsy(e: &Expr) -> bool {
    torchvet_semantic::helpers::is_truthy(e) == Some(false)
}

/// The frozen model that every use of the Variable feeds, when there is one: `x =
/// Variable(t, volatile=True)` used only as the input of calls of a frozen module (`model(x)`)
/// or of calls that also take one (`forward(model, x)`), where the module is frozen whole
/// before the call (the model's frozen-module facts). A frozen model on an input that needs
/// no grad records no graph, so the only effect left of `volatile=` is its warning.
fn frozen_consumer(checker: &mut Checker, call: &ExprCall) -> Option<String> {
    use ruff_python_ast::visitor::{self, Visitor};
    if call.arguments.find_keyword("requires_grad").is_some() {
        return None;
    }
    let Some(Stmt::Assign(a)) = checker.current_stmt() else {
        return None;
    };
    let [Expr::Name(var)] = &a.targets[..] else {
        return None;
    };
    if a.value.range() != call.range() {
        return None;
    }
    let body: &[Stmt] = checker.scope_body();
    struct Uses<'b> {
        var: &'b str,
        after: ruff_text_size::TextSize,
        calls: Vec<&'b ExprCall>,
        other: bool,
    }
    impl<'b> Visitor<'b> for Uses<'b> {
        fn visit_stmt(&mut self, s: &'b Stmt) {
            if !matches!(s, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                visitor::walk_stmt(self, s);
            }
        }
        fn visit_expr(&mut self, e: &'b Expr) {
            if e.range().start() < self.after {
                return visitor::walk_expr(self, e);
            }
            match e {
                Expr::Call(c)
                    if c.arguments
                        .args
                        .iter()
                        .any(|x| helpers_name(x) == Some(self.var)) =>
                {
                    self.calls.push(c);
                    visitor::walk_expr(&mut *self, &c.func);
                    for x in &c.arguments.args {
                        if helpers_name(x) != Some(self.var) {
                            self.visit_expr(x);
                        }
                    }
                    for k in &c.arguments.keywords {
                        self.visit_expr(&k.value);
                    }
                }
                Expr::Name(n) if n.id.as_str() == self.var => self.other = true,
                _ => visitor::walk_expr(self, e),
            }
        }
    }
    fn helpers_name(e: &Expr) -> Option<&str> {
        match e {
            Expr::Name(n) => Some(n.id.as_str()),
            _ => None,
        }
    }
    let mut u = Uses {
        var: var.id.as_str(),
        after: a.end(),
        calls: Vec::new(),
        other: false,
    };
    u.visit_body(body);
    if u.other || u.calls.is_empty() {
        return None;
    }
    let mut first = None;
    for c in u.calls {
        let models: Vec<&Expr> = std::iter::once(&*c.func)
            .chain(c.arguments.args.iter())
            .filter(|e| matches!(e, Expr::Name(_) | Expr::Attribute(_)))
            .collect();
        // Freezing (`X.requires_grad_(False)`, or over `X.parameters()`) says X is a module.
        let frozen = models
            .into_iter()
            .find(|m| crate::rules::facts::module_frozen_at(checker, m, c.start()))?;
        first.get_or_insert_with(|| checker.text(frozen.range()).to_string());
    }
    first
}

fn check_assign(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::Assign(assign) = stmt else { return };
    for target in &assign.targets {
        let Expr::Attribute(a) = target else { continue };
        if a.attr.as_str() != "volatile" {
            continue;
        }
        // `self.volatile = ...` is an ordinary attribute of the user's own class.
        if matches!(&*a.value, Expr::Name(n) if n.id.as_str() == "self")
            || checker.resolve(&a.value).is_some()
        {
            continue;
        }
        if !helpers::active(checker, 0, 4) {
            return;
        }
        let text = checker.text(target.range()).to_string();
        checker.report(target.range(), format!("`{text} = ...` {MESSAGE}"));
    }
}

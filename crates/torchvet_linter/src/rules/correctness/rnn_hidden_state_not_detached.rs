use super::helpers::{for_each_stmt, self_assignments};
use super::tensor_helpers::stmt_owns_lines;
use crate::checker::Checker;
use crate::fix::{newline, own_line_indent};
use crate::fix::{RawEdit, RawFix};
use crate::rules::performance::helpers::suite_calls_method;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for a recurrent hidden state carried from one iteration of a training loop to the
    /// next without being detached: `out, hidden = model(x, hidden)` (or `self.lstm(x,
    /// self.hidden)`) in a loop that calls `.backward()`, where nothing in the loop detaches,
    /// re-creates or re-assigns `hidden`.
    ///
    /// ## Why is this bad?
    /// The returned hidden state is attached to the graph of the current batch. Fed back as the
    /// input of the next batch, it links every batch's graph to all previous ones: the second
    /// `backward()` fails with "Trying to backward through the graph a second time", or, with
    /// `retain_graph=True`, backpropagation runs through the whole history and memory grows
    /// without bound. Truncated backpropagation through time detaches the state between
    /// batches (`hidden = hidden.detach()`, or `repackage_hidden(hidden)` for LSTM tuples).
    /// This rule is in preview: it recognises the recurrent call by its shape (a module called
    /// with the state it returns), which may also match non-recurrent code.
    ///
    /// ## Example
    /// ```python
    /// hidden = model.init_hidden(batch_size)
    /// for x, y in loader:
    ///     out, hidden = model(x, hidden)
    ///     loss = criterion(out, y)
    ///     loss.backward()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// hidden = model.init_hidden(batch_size)
    /// for x, y in loader:
    ///     hidden = hidden.detach()
    ///     out, hidden = model(x, hidden)
    ///     loss = criterion(out, y)
    ///     loss.backward()
    /// ```
    ///
    /// ## Fix safety
    /// The fix inserts a detach of the state (`tuple(h.detach() for h in hidden)` for an LSTM,
    /// `hidden.detach()` for GRU/RNN, a form handling both for other modules) before the call.
    /// The detach is guarded by `if hidden is not None:` (states often start as `None`). It is
    /// unsafe: it truncates backpropagation at the batch boundary, the intended behaviour in
    /// nearly all cases, but a change of what the gradients cover.
    ///
    /// ## References
    /// - [Word language model example: repackage_hidden](https://github.com/pytorch/examples/blob/main/word_language_model/main.py)
    /// - [torch.nn.LSTM](https://pytorch.org/docs/stable/generated/torch.nn.LSTM.html)
    /// - [MorvanZhou/PyTorch-Tutorial#57](https://github.com/MorvanZhou/PyTorch-Tutorial/issues/57)
    pub(crate) static RNN_HIDDEN_STATE_NOT_DETACHED = {
        name: "rnn-hidden-state-not-detached",
        code: "TV046",
        group: Correctness,
        severity: Warning,
        title: "RNN/LSTM/GRU hidden state carried across batches without detach",
        autofix: Yes,
        preview: true,
        hooks: { stmt: check_stmt },
    };
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::Assign(assign) = stmt else { return };
    if assign.targets.len() != 1 || !checker.in_loop() || checker.in_no_grad() {
        return;
    }
    let Expr::Tuple(targets) = &assign.targets[0] else {
        return;
    };
    let Expr::Call(call) = &*assign.value else {
        return;
    };
    // The state: a target that is also passed to the call.
    let Some(state) = targets.elts.iter().find_map(|t| {
        let d = helpers::dotted(t)?;
        call.arguments
            .args
            .iter()
            .chain(call.arguments.keywords.iter().map(|k| &k.value))
            .find(|a| helpers::dotted(a).as_deref() == Some(d.as_str()))
            .map(|a| (t, a, d))
    }) else {
        return;
    };
    let (_, state_arg, state_text) = state;
    if !torchvet_semantic::kinds::module_path(&call.func, &mut |e| checker.kind_of(e)) {
        return;
    }
    let Some(&inner) = checker.frame().loops.last() else {
        return;
    };
    let body: &[Stmt] = match inner {
        Stmt::For(f) => &f.body,
        Stmt::While(w) => &w.body,
        _ => return,
    };
    if !suite_calls_method(body, &["backward"], true) {
        return;
    }
    if touched_elsewhere(body, &state_text, stmt.range()) {
        return;
    }
    let class = rnn_class(checker, &call.func);
    let callee = checker.text(call.func.range()).to_string();
    let backward = first_backward(body);
    let message = format!(
        "`{state_text}` returned by `{callee}(...)` is fed back into it on the next iteration without `.detach()`: each batch's graph stays linked to the previous ones, so `backward()` fails on the second batch (or, with retain_graph, runs through the whole history)"
    );
    let fix = make_fix(checker, stmt, &state_text, class);
    let d = checker.report(state_arg.range(), message);
    if let Some(b) = backward {
        d.add_related(b, "the backward() that will reach into earlier batches");
    }
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

/// Is the state assigned, detached or passed to another call anywhere else in the loop body?
fn touched_elsewhere(body: &[Stmt], state: &str, skip: TextRange) -> bool {
    struct Finder<'s> {
        state: &'s str,
        skip: TextRange,
        found: bool,
    }
    impl Finder<'_> {
        fn mentions(&self, e: &Expr) -> bool {
            let mut hit = false;
            let mut m = Mention {
                state: self.state,
                hit: &mut hit,
            };
            m.visit_expr(e);
            hit
        }
    }
    struct Mention<'s, 'h> {
        state: &'s str,
        hit: &'h mut bool,
    }
    impl<'x> Visitor<'x> for Mention<'_, '_> {
        fn visit_expr(&mut self, e: &'x Expr) {
            if helpers::dotted(e).as_deref() == Some(self.state) {
                *self.hit = true;
                return;
            }
            visitor::walk_expr(self, e);
        }
    }
    impl<'x> Visitor<'x> for Finder<'_> {
        fn visit_stmt(&mut self, s: &'x Stmt) {
            if self.found || s.range() == self.skip {
                return;
            }
            let targets: Vec<&Expr> = match s {
                Stmt::Assign(a) => a.targets.iter().collect(),
                Stmt::AugAssign(a) => vec![&a.target],
                Stmt::AnnAssign(a) => vec![&a.target],
                Stmt::For(f) => vec![&f.target],
                _ => Vec::new(),
            };
            if targets.iter().any(|t| self.mentions(t)) {
                self.found = true;
                return;
            }
            visitor::walk_stmt(self, s);
        }
        fn visit_expr(&mut self, e: &'x Expr) {
            if self.found {
                return;
            }
            if let Expr::Call(c) = e {
                let involved = c.arguments.args.iter().any(|a| self.mentions(a))
                    || c.arguments.keywords.iter().any(|k| self.mentions(&k.value))
                    || matches!(&*c.func, Expr::Attribute(a) if self.mentions(&a.value));
                if involved {
                    self.found = true;
                    return;
                }
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut f = Finder {
        state,
        skip,
        found: false,
    };
    f.visit_body(body);
    f.found
}

fn first_backward(body: &[Stmt]) -> Option<TextRange> {
    let mut out = None;
    for_each_stmt(body, &mut |s| {
        if out.is_some() {
            return;
        }
        if let Stmt::Expr(e) = s {
            if let Expr::Call(c) = &*e.value {
                if matches!(helpers::method_call(c), Some(("backward", _))) {
                    out = Some(c.range());
                }
            }
        }
    });
    out
}

/// The recurrent layer class behind a callee (`nn.LSTM` assigned to the name or to
/// `self.<attr>`), when known.
fn rnn_class(checker: &Checker, callee: &Expr) -> Option<&'static str> {
    let classify = |v: &Expr| -> Option<&'static str> {
        let Expr::Call(c) = v else { return None };
        match checker.resolve(&c.func).as_deref()? {
            "torch.nn.LSTM" | "torch.nn.modules.rnn.LSTM" => Some("LSTM"),
            "torch.nn.GRU" | "torch.nn.modules.rnn.GRU" => Some("GRU"),
            "torch.nn.RNN" | "torch.nn.modules.rnn.RNN" => Some("RNN"),
            _ => None,
        }
    };
    if let Some(attr) = helpers::self_attribute(callee) {
        let class = checker.frame().method_of?;
        let mut found = None;
        for s in &class.def.body {
            let Stmt::FunctionDef(f) = s else { continue };
            for (name, value, _) in self_assignments(&f.body) {
                if name == attr {
                    found = classify(value);
                }
            }
        }
        return found;
    }
    let name = helpers::name_of(callee)?;
    let body: &[Stmt] = checker.scope_body();
    let mut found = None;
    for_each_stmt(body, &mut |s| {
        if let Stmt::Assign(a) = s {
            if a.targets.iter().any(|t| helpers::name_of(t) == Some(name)) {
                found = classify(&a.value);
            }
        }
    });
    found
}

fn make_fix(
    checker: &Checker,
    stmt: &Stmt,
    state: &str,
    class: Option<&'static str>,
) -> Option<RawFix> {
    if !stmt_owns_lines(checker, stmt) {
        return None;
    }
    let indent = own_line_indent(checker, stmt.start())?;
    let nl = newline(checker);
    let step = if indent.contains('\t') { "\t" } else { "    " };
    let value = match class {
        Some("LSTM") => format!("tuple(h.detach() for h in {state})"),
        Some(_) => format!("{state}.detach()"),
        None => format!(
            "tuple(h.detach() for h in {state}) if isinstance({state}, tuple) else {state}.detach()"
        ),
    };
    Some(RawFix::unsafe_edit(
        format!("Detach `{state}` before the call"),
        vec![RawEdit::insert(
            stmt.start(),
            format!("if {state} is not None:{nl}{indent}{step}{state} = {value}{nl}{indent}"),
        )],
    ))
}

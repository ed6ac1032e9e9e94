use super::helpers::{conditional_inside_loop, names_bound_in_loop, names_read};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::correctness::helpers::constructs_module;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `model.to(device)` / `model.cuda()` executed on every iteration of a loop,
    /// where `model` is built from an `nn.Module` constructor in the same function (or
    /// module) and neither the model nor the device changes inside the loop.
    ///
    /// ## Why is this bad?
    /// Moving a module walks all of its parameters and buffers; after the first iteration
    /// the model is already on the device, so every later call is pure overhead, and a
    /// `.cuda()` / `.to()` that does move something in the middle of training also drops the
    /// optimizer's link to the old parameter tensors. Move the model once, before the loop.
    /// Tensors moved inside a loop are normal and are not reported, nor are models
    /// rebuilt or chosen inside the loop, moves behind a condition, or moves to a device that
    /// changes per iteration, nor moves in loops that run their body at most once (a
    /// one-batch smoke test that ends with `break`).
    ///
    /// ## Example
    /// ```python
    /// model = Net()
    /// for x, y in loader:
    ///     model.to(device)
    ///     loss = criterion(model(x.to(device)), y.to(device))
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model = Net()
    /// model.to(device)
    /// for x, y in loader:
    ///     loss = criterion(model(x.to(device)), y.to(device))
    /// ```
    ///
    /// ## Fix safety
    /// The fix moves the statement (a single line) in front of the outermost loop. It is safe
    /// when the statement is the first of the loop body, so nothing in the loop ran before it;
    /// otherwise code earlier in the first iteration would see the model already moved, so
    /// the fix is unsafe.
    ///
    /// ## References
    /// - [Performance tuning guide](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html)
    /// - [nn.Module.to](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.to)
    pub(crate) static MODEL_TO_DEVICE_IN_LOOP = {
        name: "model-to-device-in-loop",
        code: "TV110",
        group: Performance,
        severity: Warning,
        title: "model.to(device)/model.cuda() or criterion.to(device) executed every iteration",
        autofix: Yes,
        hooks: { call: check_call },
    };
}

/// Methods that return the module itself (usable in a constructor chain).
const SELF_RETURNING: &[&str] = &[
    "to",
    "cuda",
    "cpu",
    "train",
    "eval",
    "half",
    "float",
    "double",
    "bfloat16",
    "requires_grad_",
];

/// How a name is bound in the scope.
#[derive(Default)]
struct Bindings {
    /// Assignments from an `nn.Module` constructor.
    modules: usize,
    /// `x = x.to(...)` style re-bindings.
    moves: usize,
    /// Any other binding (parameter, loop target, other value).
    other: usize,
}

/// Strip a chain of self-returning method calls: `Net().cuda().eval()` -> `Net()`.
fn chain_root(mut e: &Expr) -> &Expr {
    while let Expr::Call(c) = e {
        match helpers::method_call(c) {
            Some((m, recv)) if SELF_RETURNING.contains(&m) => e = recv,
            _ => break,
        }
    }
    e
}

/// A module built by a constructor call, possibly followed by methods returning it
/// (`Net().to(device)`).
fn is_module_constructor(checker: &Checker, e: &Expr) -> bool {
    matches!(chain_root(e), Expr::Call(c) if constructs_module(checker, c))
}

struct Collector<'c, 'a> {
    checker: &'c Checker<'a>,
    name: &'c str,
    b: Bindings,
}

impl Collector<'_, '_> {
    fn binds(&self, target: &Expr) -> bool {
        match target {
            Expr::Name(n) => n.id.as_str() == self.name,
            Expr::Tuple(t) => t.elts.iter().any(|e| self.binds(e)),
            Expr::List(l) => l.elts.iter().any(|e| self.binds(e)),
            Expr::Starred(s) => self.binds(&s.value),
            _ => false,
        }
    }

    fn classify(&mut self, value: &Expr) {
        if is_module_constructor(self.checker, value) {
            self.b.modules += 1;
        } else if helpers::name_of(chain_root(value)) == Some(self.name) {
            self.b.moves += 1;
        } else {
            self.b.other += 1;
        }
    }
}

impl<'x> Visitor<'x> for Collector<'_, '_> {
    fn visit_stmt(&mut self, stmt: &'x Stmt) {
        match stmt {
            Stmt::FunctionDef(f) => {
                if f.name.as_str() == self.name {
                    self.b.other += 1;
                }
                return;
            }
            Stmt::ClassDef(c) => {
                if c.name.as_str() == self.name {
                    self.b.other += 1;
                }
                return;
            }
            Stmt::Assign(a) => {
                if let [Expr::Name(n)] = &a.targets[..] {
                    if n.id.as_str() == self.name {
                        self.classify(&a.value);
                    }
                } else if a.targets.iter().any(|t| self.binds(t)) {
                    self.b.other += 1;
                }
            }
            Stmt::AnnAssign(a) if self.binds(&a.target) => match &a.value {
                Some(v) => self.classify(v),
                None => self.b.other += 1,
            },
            Stmt::AugAssign(a) if self.binds(&a.target) => self.b.other += 1,
            Stmt::For(f) if self.binds(&f.target) => self.b.other += 1,
            Stmt::With(w)
                if w.items
                    .iter()
                    .any(|i| i.optional_vars.as_deref().is_some_and(|v| self.binds(v))) =>
            {
                self.b.other += 1
            }
            Stmt::Import(i) => {
                let binds = i.names.iter().any(|a| {
                    let bound = a.asname.as_ref().unwrap_or(&a.name).as_str();
                    bound.split('.').next() == Some(self.name)
                });
                if binds {
                    self.b.other += 1;
                }
            }
            Stmt::ImportFrom(i) => {
                let binds = i
                    .names
                    .iter()
                    .any(|a| a.asname.as_ref().unwrap_or(&a.name).as_str() == self.name);
                if binds {
                    self.b.other += 1;
                }
            }
            Stmt::Global(g) if g.names.iter().any(|n| n.as_str() == self.name) => self.b.other += 1,
            Stmt::Nonlocal(g) if g.names.iter().any(|n| n.as_str() == self.name) => {
                self.b.other += 1
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'x Expr) {
        match expr {
            Expr::Named(n) if self.binds(&n.target) => self.b.other += 1,
            Expr::Lambda(_) => return,
            _ => {}
        }
        visitor::walk_expr(self, expr);
    }
}

/// Is `name` bound only to `nn.Module` objects in this body?
fn bound_to_module(checker: &Checker, body: &[Stmt], name: &str) -> bool {
    let mut c = Collector {
        checker,
        name,
        b: Bindings::default(),
    };
    c.visit_body(body);
    c.b.modules > 0 && c.b.other == 0
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    let Some((method, receiver)) = helpers::method_call(call) else {
        return;
    };
    if !matches!(method, "to" | "cuda") || !checker.in_loop() {
        return;
    }
    let Some(name) = helpers::name_of(receiver) else {
        return;
    };
    let Some(stmt) = checker.current_stmt() else {
        return;
    };
    // `model.to(device)` or `model = model.to(device)` as a whole statement.
    let whole = match stmt {
        Stmt::Expr(e) => e.value.range() == call.range(),
        Stmt::Assign(a) => {
            a.value.range() == call.range()
                && matches!(&a.targets[..], [Expr::Name(n)] if n.id.as_str() == name)
        }
        _ => false,
    };
    if !whole || conditional_inside_loop(checker, call.range()) {
        return;
    }
    // Loops that each run their body at most once (a one-batch smoke test ending in
    // `break`) run the move once.
    if checker
        .frame()
        .loops
        .iter()
        .all(|l| torchvet_semantic::regions::runs_at_most_once(l))
    {
        return;
    }
    if helpers::has_args_splat(call) || helpers::has_kwargs_splat(call) {
        return;
    }
    // Loop-invariant: neither the model nor the arguments are re-bound in any enclosing loop.
    let stmt_range = stmt.range();
    let invariant = checker.frame().loops.iter().all(|l| {
        let bound = names_bound_in_loop(l, Some(stmt_range));
        !bound.contains(name)
            && call
                .arguments
                .args
                .iter()
                .chain(call.arguments.keywords.iter().map(|k| &k.value))
                .all(|a| names_read(a).iter().all(|n| !bound.contains(*n)))
    });
    if !invariant {
        return;
    }
    let is_module = match checker.function() {
        Some(f) => {
            !f.parameters.iter().any(|p| p.name().as_str() == name)
                && bound_to_module(checker, &f.body, name)
        }
        None => {
            // Module level: the checker does not expose the module body, so parse it again
            // (rare: a move of a plain name as a whole statement in a module-level loop).
            let parsed = checker.source.parse();
            bound_to_module(checker, &parsed.syntax().body, name)
        }
    };
    if !is_module {
        return;
    }
    let fix = hoist_fix(checker, stmt);
    let text = checker.text(call.range());
    let d = checker.report(
        call.range(),
        format!("`{text}` runs on every iteration although `{name}` is an nn.Module that does not change in the loop: after the first move it only walks all parameters again; move it once before the loop"),
    );
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

/// Move a one-line statement in front of the outermost loop of the frame.
fn hoist_fix(checker: &Checker, stmt: &Stmt) -> Option<RawFix> {
    let outer = *checker.frame().loops.first()?;
    let stack = checker.stmt_stack();
    let start = stack.iter().position(|s| s.range() == outer.range())?;
    let chain = &stack[start..];
    // Only loops and `with` blocks between the outer loop and the statement.
    let (last, between) = chain.split_last()?;
    if last.range() != stmt.range()
        || !between
            .iter()
            .all(|s| matches!(s, Stmt::For(_) | Stmt::While(_) | Stmt::With(_)))
    {
        return None;
    }
    let parent_body = match between.last()? {
        Stmt::For(f) => &f.body,
        Stmt::While(w) => &w.body,
        Stmt::With(w) => &w.body,
        _ => return None,
    };
    if parent_body.len() < 2 {
        return None;
    }
    let text = checker.source.text.as_ref();
    let line_start = |o: usize| {
        text.get(..o)
            .and_then(|t| t.rfind('\n'))
            .map_or(0, |i| i + 1)
    };
    let s_start = stmt.start().to_usize();
    let s_line = line_start(s_start);
    let rest = text.get(s_line..)?;
    let line_len = rest.find('\n').map_or(rest.len(), |i| i + 1);
    let line = &rest[..line_len];
    let after = text.get(stmt.end().to_usize()..s_line + line_len)?;
    let only_stmt = text.get(s_line..s_start)?.trim().is_empty()
        && (after.trim().is_empty() || after.trim_start().starts_with('#'));
    if !only_stmt || !line.ends_with('\n') {
        return None;
    }
    let o_start = outer.start().to_usize();
    let o_line = line_start(o_start);
    let outer_indent = text.get(o_line..o_start)?;
    if !outer_indent.trim().is_empty() {
        return None;
    }
    let moved = format!("{outer_indent}{}", line.trim_start());
    let first_everywhere = chain.windows(2).all(|w| {
        let body = match w[0] {
            Stmt::For(f) => &f.body,
            Stmt::While(wh) => &wh.body,
            Stmt::With(wi) => &wi.body,
            _ => return false,
        };
        body.first().is_some_and(|s| s.range() == w[1].range())
    });
    let edits = vec![
        RawEdit::insert(TextSize::try_from(o_line).ok()?, moved),
        RawEdit::delete(TextRange::new(
            TextSize::try_from(s_line).ok()?,
            TextSize::try_from(s_line + line_len).ok()?,
        )),
    ];
    let msg = "Move the statement before the loop";
    Some(if first_everywhere {
        RawFix::safe(msg, edits)
    } else {
        RawFix::unsafe_edit(msg, edits)
    })
}

#[cfg(test)]
mod tests {
    use crate::rules::performance::helpers::apply_fixes;

    #[test]
    fn hoists() {
        let src = "from torch import nn\ndef f(dl, device):\n    model = nn.Linear(2, 2)\n    for x in dl:\n        model.to(device)  # move\n        model(x)\n";
        let (n, out) = apply_fixes("model-to-device-in-loop", src);
        assert_eq!(n, 1);
        assert_eq!(
            out,
            "from torch import nn\ndef f(dl, device):\n    model = nn.Linear(2, 2)\n    model.to(device)  # move\n    for x in dl:\n        model(x)\n"
        );
    }
}

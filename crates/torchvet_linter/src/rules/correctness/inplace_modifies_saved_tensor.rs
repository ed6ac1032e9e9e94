use super::helpers::for_each_stmt;
use super::tensor_helpers::{enclosing_suite, stmts_after};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::performance::helpers::suite_calls_method;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprCall, ExprContext, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers;
use torchvet_semantic::helpers::binds as target_binds;

crate::declare_rule! {
    /// ## What it does
    /// Checks for a tensor produced by an op that autograd saves the *output* of
    /// (`torch.sigmoid`, `tanh`, `exp`, `softmax`, `relu`, or an `nn.ReLU`/`Sigmoid`/`Tanh`/
    /// `Softmax` module such as `self.relu = nn.ReLU(inplace=True)`), used by another
    /// computation (directly or through an alias, `path = x`), and then modified in place
    /// (`y += 1`, `y.mul_(2)`, `y[mask] = 0`) in code that backpropagates (a module's
    /// `forward`, or a function calling `.backward()`).
    ///
    /// ## Why is this bad?
    /// The backward formulas of these ops use their output, so autograd keeps a reference to
    /// it and checks its version counter when gradients are computed. Modifying it in place
    /// bumps the counter and `backward()` fails with "one of the variables needed for gradient
    /// computation has been modified by an inplace operation". The error names an internal
    /// op, far from the line that caused it. Use the out-of-place form (`y = y + 1`) or clone
    /// before mutating. This rule is in preview: it looks at one block of one function and
    /// does not know whether backward really runs through the value.
    ///
    /// ## Example
    /// ```python
    /// a = torch.sigmoid(x)
    /// b = a * w
    /// a += 1
    /// (a + b).sum().backward()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// a = torch.sigmoid(x)
    /// b = a * w
    /// a = a + 1
    /// (a + b).sum().backward()
    /// ```
    ///
    /// ## Fix safety
    /// For `y op= v` and `y.op_(v)` the suggested fix rewrites the statement out of place
    /// (`y = y op v`, `y = y.op(v)`). It is unsafe: other names that alias the same tensor
    /// no longer see the change. Index assignments get no fix (clone first, by hand).
    ///
    /// ## References
    /// - [Autograd mechanics: in-place correctness checks](https://pytorch.org/docs/stable/notes/autograd.html#in-place-correctness-checks)
    /// - [dreamgonfly/GAN-tutorial#1](https://github.com/dreamgonfly/GAN-tutorial/issues/1)
    pub(crate) static INPLACE_MODIFIES_SAVED_TENSOR = {
        name: "inplace-modifies-saved-tensor",
        code: "TV044",
        group: Correctness,
        severity: Warning,
        title: "In-place op on a tensor autograd saved for backward (sigmoid/tanh/exp/softmax/relu output)",
        autofix: Suggest,
        preview: true,
        hooks: { stmt: check_stmt },
    };
}

/// Ops whose backward uses their output.
fn saves_output(q: &str) -> bool {
    matches!(
        q,
        "torch.sigmoid"
            | "torch.tanh"
            | "torch.exp"
            | "torch.softmax"
            | "torch.relu"
            | "torch.nn.functional.sigmoid"
            | "torch.nn.functional.tanh"
            | "torch.nn.functional.softmax"
            | "torch.nn.functional.relu"
    )
}

/// The call runs an activation module whose backward uses its output
/// (`self.relu = nn.ReLU(inplace=True)`, then `x = self.relu(x)`), as the dataflow knows the
/// object called.
fn activation_module(checker: &mut Checker, call: &ExprCall) -> bool {
    matches!(
        checker.taint_of(&call.func).class(),
        Some("torch.nn.ReLU" | "torch.nn.Sigmoid" | "torch.nn.Tanh" | "torch.nn.Softmax")
    )
}

/// In-place methods and their out-of-place counterparts.
fn out_of_place(m: &str) -> Option<&'static str> {
    Some(match m {
        "add_" => "add",
        "sub_" => "sub",
        "mul_" => "mul",
        "div_" => "div",
        "clamp_" => "clamp",
        "pow_" => "pow",
        "masked_fill_" => "masked_fill",
        "fill_" | "zero_" | "copy_" | "exp_" | "sigmoid_" | "relu_" => return Some(""),
        _ => return None,
    })
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::Assign(a) = stmt else { return };
    let [Expr::Name(target)] = &a.targets[..] else {
        return;
    };
    let Expr::Call(call) = &*a.value else { return };
    // A torch function by name, or an object (`self.relu`, `act`) the dataflow is asked about
    // once the cheaper tests pass.
    let by_name = checker.resolve(&call.func).map(|q| saves_output(&q));
    if checker.in_no_grad()
        || by_name == Some(false)
        || (by_name.is_none() && !matches!(&*call.func, Expr::Name(_) | Expr::Attribute(_)))
    {
        return;
    }
    let backprops = checker.in_module_method("forward")
        || checker
            .function()
            .is_some_and(|f| suite_calls_method(&f.body, &["backward"], true));
    if !backprops {
        return;
    }
    if by_name.is_none() && !activation_module(checker, call) {
        return;
    }
    let Some(suite) = enclosing_suite(checker, stmt) else {
        return;
    };
    let name = target.id.as_str();
    let mut consumed: Option<TextRange> = None;
    let mut mutation: Option<(&Stmt, TextRange, String)> = None;
    let mut rebound = false;
    // The tensor's names: its own, and aliases bound to it (`path = x`, then
    // `path = self.pool(path)` uses it).
    let mut names: Vec<String> = vec![name.to_string()];
    for_each_stmt(stmts_after(suite, stmt), &mut |s| {
        if rebound || mutation.is_some() {
            return;
        }
        if let Some((r, n)) = names
            .iter()
            .find_map(|n| inplace_on(s, n).map(|r| (r, n.clone())))
        {
            if consumed.is_some() {
                mutation = Some((s, r, n));
            } else {
                rebound = true; // modified before any use: nothing saved it yet
            }
            return;
        }
        if let Stmt::Assign(a) = s {
            if let ([Expr::Name(t)], Expr::Name(v)) = (&a.targets[..], &*a.value) {
                if t.id.as_str() != name && names.iter().any(|n| n == v.id.as_str()) {
                    names.push(t.id.to_string());
                    return;
                }
            }
        }
        if consumed.is_none() {
            consumed = names.iter().find_map(|n| consumer(s, n));
        }
        if rebinds(s, name) {
            rebound = true;
            return;
        }
        names.retain(|n| n == name || !rebinds(s, n));
    });
    let (Some(used), Some((mstmt, mrange, mutated))) = (consumed, mutation) else {
        return;
    };
    let func = checker.text(call.func.range());
    let mtext = checker.text(mrange);
    let held = if mutated == name {
        format!("`{name}`")
    } else {
        format!("`{mutated}` (the same tensor as `{name}`)")
    };
    let message = format!(
        "`{mtext}` modifies {held} in place, but autograd saved `{name}` (the output of `{func}`) for backward: backward() will fail with \"one of the variables needed for gradient computation has been modified by an inplace operation\""
    );
    let fix = make_fix(checker, mstmt, &mutated);
    let d = checker.report(mrange, message);
    d.add_related(
        a.range(),
        format!("`{name}` is produced here and saved for backward"),
    );
    d.add_related(
        used,
        format!("`{name}` is used here before the in-place change"),
    );
    if let Some(f) = fix {
        d.set_fix(f);
    }
}

/// `name op= v`, `name.op_(...)`, `name[...] = v` as this statement.
fn inplace_on(s: &Stmt, name: &str) -> Option<TextRange> {
    match s {
        Stmt::AugAssign(a) if helpers::name_of(&a.target) == Some(name) => Some(a.range()),
        Stmt::Assign(a) => a.targets.iter().find_map(|t| match t {
            Expr::Subscript(sub) if helpers::name_of(&sub.value) == Some(name) => Some(a.range()),
            _ => None,
        }),
        Stmt::Expr(e) => {
            let Expr::Call(c) = &*e.value else {
                return None;
            };
            let (m, recv) = helpers::method_call(c)?;
            (helpers::name_of(recv) == Some(name) && out_of_place(m).is_some()).then(|| c.range())
        }
        _ => None,
    }
}

fn rebinds(s: &Stmt, name: &str) -> bool {
    match s {
        Stmt::Assign(a) => a.targets.iter().any(|t| target_binds(t, name)),
        Stmt::AnnAssign(a) => target_binds(&a.target, name),
        Stmt::For(f) => target_binds(&f.target, name),
        Stmt::With(w) => w.items.iter().any(|i| {
            i.optional_vars
                .as_deref()
                .is_some_and(|v| target_binds(v, name))
        }),
        Stmt::FunctionDef(_) | Stmt::ClassDef(_) => false,
        _ => false,
    }
}

/// A differentiable use of `name` in the statement's own expressions (an operand or an
/// argument; not `name.shape`, `len(name)`, `print(name)`).
fn consumer(s: &Stmt, name: &str) -> Option<TextRange> {
    let exprs: Vec<&Expr> = match s {
        Stmt::Assign(a) => vec![&a.value],
        Stmt::AugAssign(a) => vec![&a.value],
        Stmt::Return(r) => r.value.as_deref().into_iter().collect(),
        Stmt::Expr(e) => vec![&e.value],
        _ => Vec::new(),
    };
    struct F<'n> {
        name: &'n str,
        found: Option<TextRange>,
    }
    impl<'x> Visitor<'x> for F<'_> {
        fn visit_expr(&mut self, e: &'x Expr) {
            if self.found.is_some() {
                return;
            }
            match e {
                Expr::BinOp(b) => {
                    let direct = [&*b.left, &*b.right].iter().any(|o| is_name(o, self.name));
                    if direct {
                        self.found = Some(e.range());
                        return;
                    }
                }
                Expr::Call(c) => {
                    let skip = matches!(
                        helpers::name_of(&c.func),
                        Some("print" | "len" | "isinstance" | "type" | "id")
                    );
                    if !skip && c.arguments.args.iter().any(|a| is_name(a, self.name)) {
                        self.found = Some(e.range());
                        return;
                    }
                    if let Some((_, recv)) = helpers::method_call(c) {
                        if is_name(recv, self.name) {
                            self.found = Some(e.range());
                            return;
                        }
                    }
                }
                _ => {}
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut f = F { name, found: None };
    for e in exprs {
        f.visit_expr(e);
    }
    f.found
}

fn is_name(e: &Expr, name: &str) -> bool {
    matches!(e, Expr::Name(n) if n.id.as_str() == name && n.ctx == ExprContext::Load)
}

fn make_fix(checker: &Checker, s: &Stmt, name: &str) -> Option<RawFix> {
    match s {
        Stmt::AugAssign(a) => {
            let value = checker.text(a.value.range());
            let atomic = matches!(
                &*a.value,
                Expr::Name(_)
                    | Expr::NumberLiteral(_)
                    | Expr::Attribute(_)
                    | Expr::Call(_)
                    | Expr::Subscript(_)
            );
            let value = if atomic {
                value.to_string()
            } else {
                format!("({value})")
            };
            let op = a.op.as_str();
            Some(RawFix::unsafe_edit(
                format!("Rewrite out of place: `{name} = {name} {op} ...`"),
                vec![RawEdit::replace(
                    a.range(),
                    format!("{name} = {name} {op} {value}"),
                )],
            ))
        }
        Stmt::Expr(e) => {
            let Expr::Call(c) = &*e.value else {
                return None;
            };
            let (m, _) = helpers::method_call(c)?;
            let new = out_of_place(m).filter(|n| !n.is_empty())?;
            let args = checker.text(c.arguments.range());
            Some(RawFix::unsafe_edit(
                format!("Rewrite out of place: `{name} = {name}.{new}(...)`"),
                vec![RawEdit::replace(
                    c.range(),
                    format!("{name} = {name}.{new}{args}"),
                )],
            ))
        }
        _ => None,
    }
}

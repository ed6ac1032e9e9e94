use super::tensor_helpers::{enclosing_suite, stmts_after};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::grad_source::grad_source;
use torchvet_semantic::helpers;
use torchvet_semantic::uses;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `torch.tensor(...)`, `torch.as_tensor(...)`, `torch.Tensor(...)` or
    /// `torch.FloatTensor(...)` built from values that carry gradients (model outputs, losses,
    /// a list of them) when the result is what `backward()` is called on, or what a
    /// module's `forward` returns.
    ///
    /// ## Why is this bad?
    /// These constructors copy the data into a brand-new leaf tensor: the copy has no history,
    /// so backpropagation stops there. `loss = torch.tensor([l1, l2]).sum(); loss.backward()`
    /// either raises "element 0 of tensors does not require grad" or, with
    /// `requires_grad=True`, computes gradients for the copy only: the model's weights get
    /// no gradient and the loss curve stays flat. `torch.stack`/`torch.cat` or plain tensor
    /// arithmetic keep the graph. Wrapping data that has no graph (NumPy arrays, `.tolist()`
    /// or `.item()` values, detached tensors, shapes, a batch from a data loader's loop: `for
    /// items, targets in loader: targets = torch.tensor(targets).long()`) is not reported, nor
    /// is a copy that only
    /// scales what is backpropagated (REINFORCE returns, advantages or importance weights
    /// multiplying log-probabilities, which are meant to be constants). When no source of a
    /// graph is known, the copy is reported only when it is itself what `backward()`
    /// differentiates (through arithmetic, tensor methods and torch functions): a replay
    /// buffer's states wrapped and fed to a Q-network are inputs, not a cut graph. This rule
    /// is in preview: it follows values through simple assignments of one function only.
    ///
    /// ## Example
    /// ```python
    /// loss = torch.tensor([l1, l2]).sum()
    /// loss.backward()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// loss = torch.stack([l1, l2]).sum()
    /// loss.backward()
    /// ```
    ///
    /// ## Fix safety
    /// The suggested fix replaces the constructor with `torch.stack([...])` for a list or
    /// tuple of tensors, or with the expression itself otherwise. It is unsafe: `torch.tensor`
    /// also converts dtype and device, and the elements must have matching shapes for
    /// `stack`.
    ///
    /// ## References
    /// - [torch.tensor always copies and detaches](https://pytorch.org/docs/stable/generated/torch.tensor.html)
    /// - [torch.stack](https://pytorch.org/docs/stable/generated/torch.stack.html)
    /// - [pytorch/pytorch#59800](https://github.com/pytorch/pytorch/issues/59800)
    pub(crate) static TENSOR_REWRAP_BREAKS_GRAPH = {
        name: "tensor-rewrap-breaks-graph",
        code: "TV021",
        group: Correctness,
        severity: Critical,
        title: "torch.tensor()/torch.Tensor()/torch.FloatTensor() built from grad-carrying tensors (graph cut)",
        autofix: Suggest,
        preview: true,
        hooks: { call: check_call },
    };
}

const CONSTRUCTORS: &[&str] = &[
    "torch.tensor",
    "torch.as_tensor",
    "torch.Tensor",
    "torch.FloatTensor",
    "torch.cuda.FloatTensor",
    "torch.DoubleTensor",
];

/// A value that carries gradients (see [`grad_source`]), looked up before `at`.
fn carrying(checker: &mut Checker, e: &Expr, at: ruff_text_size::TextSize) -> Option<TextRange> {
    let body: &[Stmt] = checker.scope_body();
    grad_source(checker, body, e, at, 0)
}

fn check_call(checker: &mut Checker, call: &ExprCall, q: Option<&str>) {
    let Some(q) = q else { return };
    if !CONSTRUCTORS.contains(&q) || checker.in_no_grad() {
        return;
    }
    let [arg] = &call.arguments.args[..] else {
        return;
    };
    let is_seq = matches!(arg, Expr::List(_) | Expr::Tuple(_));
    // `torch.as_tensor(t)` returns `t` itself (graph kept) when dtype and device match.
    if q == "torch.as_tensor" && !is_seq {
        return;
    }
    let elements: Vec<&Expr> = match arg {
        Expr::List(l) => l.elts.iter().collect(),
        Expr::Tuple(t) => t.elts.iter().collect(),
        e => vec![e],
    };
    // NumPy data, `.tolist()`/`.item()` values, detached tensors and shapes carry no graph:
    // wrapping them cuts nothing.
    if elements.iter().all(|e| graphless(checker, e)) {
        return;
    }
    let Some(stmt) = checker.current_stmt() else {
        return;
    };
    // Cheap syntactic test first: the value must reach a backward() or a forward's return.
    let Some(sink) = sink_of(checker, stmt) else {
        return;
    };
    let source = elements
        .iter()
        .find_map(|e| carrying(checker, e, call.start()));
    let sink = Some(sink);
    let (source, sink) = match (source, sink) {
        (Some(s), Some(k)) => (s, (k.0, k.1)),
        // Built from plain names and backpropagated: nothing flows back through the copy.
        // Unless the copy only scales what is backpropagated (REINFORCE's
        // `-(torch.tensor(returns) * log_probs).sum()`, an advantage or importance weight):
        // the gradient flows through the other factor, and a constant factor is the intent.
        (None, Some(k))
            if mentions_name(arg)
                && (!k.2 || (!is_seq && mentions_param(checker, arg)))
                && !scales_other_factor(checker, call, stmt)
                && !batch_from_loop(checker, arg, call.start())
                && (k.2 || copy_backpropagated_itself(checker, stmt)) =>
        {
            (arg.range(), (k.0, k.1))
        }
        _ => return,
    };
    let ctor = checker.text(call.func.range());
    let arg_text = checker.text(arg.range());
    let message = format!(
        "`{ctor}({arg_text})` copies the values into a new leaf tensor with no history: gradients stop here, so backward() never reaches the model that produced them"
    );
    let arg_is_tensor = !matches!(arg, Expr::List(_) | Expr::Tuple(_)) && source != arg.range();
    let fix = make_fix(checker, call, arg, arg_is_tensor);
    let d = checker.report(call.range(), message);
    d.add_related(sink.0, sink.1);
    if source != arg.range() {
        d.add_related(source, "the gradient-carrying value comes from here");
    }
    if let Some(f) = fix {
        d.set_fix(f);
    }
}

/// Does `e` hold data with no autograd graph: a NumPy value (`x.cpu().numpy()`,
/// `np.where(...)`), a Python number or list from `.item()`/`.tolist()`, a detached tensor
/// (`.detach()`, `.data`), or a shape (`.shape`, `.size()`)? Syntactic: looks along the
/// method/attribute chain of `e`.
fn graphless(checker: &Checker, e: &Expr) -> bool {
    let mut cur = e;
    loop {
        match cur {
            Expr::Call(c) => {
                if checker
                    .resolve(&c.func)
                    .is_some_and(|q| q.starts_with("numpy.") || q.starts_with("math."))
                {
                    return true;
                }
                match helpers::method_call(c) {
                    Some((m, recv)) => {
                        if matches!(m, "numpy" | "tolist" | "item" | "detach" | "size" | "dim") {
                            return true;
                        }
                        cur = recv;
                    }
                    None => return false,
                }
            }
            Expr::Attribute(a) => {
                if matches!(
                    a.attr.as_str(),
                    "data" | "shape" | "dtype" | "device" | "ndim"
                ) {
                    return true;
                }
                cur = &a.value;
            }
            Expr::Subscript(s) => cur = &s.value,
            _ => return false,
        }
    }
}

/// Is `arg` a name bound by an enclosing `for` loop over a data loader (`for items, targets
/// in loader:`) and by no assignment before `at`: a batch of data, which has no graph to cut (`targets =
/// torch.tensor(targets).long()` converts labels)?
fn batch_from_loop(checker: &mut Checker, arg: &Expr, at: ruff_text_size::TextSize) -> bool {
    let Expr::Name(n) = arg else {
        return false;
    };
    let name = n.id.as_str();
    // A loop over a data loader (by kind, or named so: `train_loader`, `trainDataloader`),
    // not over values that carry a graph (`for loss in losses:`).
    let loops = checker.frame().loops.clone();
    let loop_bound = loops.iter().any(|l| match l {
        ruff_python_ast::Stmt::For(f) if helpers::binds(&f.target, name) => {
            let source = checker.loop_source(&f.iter);
            checker.kind_of(source) == torchvet_semantic::kinds::Kind::DataLoader
                || helpers::dotted(source).is_some_and(|d| {
                    helpers::last_segment(&d)
                        .to_ascii_lowercase()
                        .contains("loader")
                })
        }
        _ => false,
    });
    loop_bound
        && !torchvet_semantic::modes::assigned_values(checker, arg)
            .iter()
            .any(|(_, r)| r.start() < at && !r.contains(at))
}

fn mentions_name(e: &Expr) -> bool {
    struct F(bool);
    impl<'x> Visitor<'x> for F {
        fn visit_expr(&mut self, e: &'x Expr) {
            if matches!(e, Expr::Name(_)) {
                self.0 = true;
            }
            if !self.0 {
                visitor::walk_expr(self, e);
            }
        }
    }
    let mut f = F(false);
    f.visit_expr(e);
    f.0
}

/// Where the constructed value goes: a later `.backward()` of the name it is assigned to
/// (directly or through one more assignment), or a `return` from a module's `forward`.
fn sink_of(checker: &Checker, stmt: &Stmt) -> Option<(TextRange, &'static str, bool)> {
    if let Stmt::Return(r) = stmt {
        return (checker.in_module_method("forward") && r.value.is_some()).then(|| {
            (
                r.range(),
                "returned from forward() as if it were differentiable",
                true,
            )
        });
    }
    let Stmt::Assign(a) = stmt else { return None };
    let [Expr::Name(n)] = &a.targets[..] else {
        return None;
    };
    let suite = enclosing_suite(checker, stmt)?;
    let after = stmts_after(suite, stmt);
    let mut names = vec![n.id.to_string()];
    // One level of derivation: `total = loss + reg`.
    for s in after {
        if let Stmt::Assign(a2) = s {
            if let [Expr::Name(t)] = &a2.targets[..] {
                if uses::mentions_name(&a2.value, &names[0]) {
                    names.push(t.id.to_string());
                }
            }
        }
    }
    for s in after {
        if let Some(r) = backward_of(s, &names) {
            return Some((r, "the backward() that cannot reach past the copy", false));
        }
        if let Stmt::Return(r) = s {
            if checker.in_module_method("forward")
                && r.value
                    .as_deref()
                    .is_some_and(|v| uses::mentions_name(v, &names[0]))
            {
                return Some((
                    r.range(),
                    "returned from forward() as if it were differentiable",
                    true,
                ));
            }
        }
    }
    None
}

/// Does `e` mention a parameter (other than `self`) of the current function?
fn mentions_param(checker: &Checker, e: &Expr) -> bool {
    let Some(f) = checker.function() else {
        return false;
    };
    f.parameters
        .iter()
        .map(|p| p.name().as_str())
        .filter(|n| *n != "self")
        .any(|n| uses::mentions_name(e, n))
}

/// Is the copy made by `call` (in `stmt`) a factor of a product or quotient whose other
/// operand does not come from it: inline (`(torch.tensor(adv) * log_probs).mean()`), or
/// through the name it is bound to, in `stmt`'s later statements (`adv =
/// torch.tensor(advantages)`, then `loss = -(adv * log_probs).mean()`)?
fn scales_other_factor(checker: &Checker, call: &ExprCall, stmt: &Stmt) -> bool {
    use ruff_python_ast::Operator;
    fn factor_of(e: &Expr, is_copy: &dyn Fn(&Expr) -> bool) -> bool {
        helpers::any_expr(e, |x| match x {
            Expr::BinOp(b) if matches!(b.op, Operator::Mult | Operator::Div) => {
                is_copy(&b.left) != is_copy(&b.right)
            }
            _ => false,
        })
    }
    fn value_of(s: &Stmt) -> Option<&Expr> {
        match s {
            Stmt::Assign(a) => Some(&a.value),
            Stmt::AugAssign(a) => Some(&a.value),
            Stmt::Expr(e) => Some(&e.value),
            Stmt::Return(r) => r.value.as_deref(),
            _ => None,
        }
    }
    let inside = |e: &Expr| e.range().contains_range(call.range());
    if value_of(stmt).is_some_and(|v| factor_of(v, &inside)) {
        return true;
    }
    let Stmt::Assign(a) = stmt else { return false };
    let [Expr::Name(n)] = &a.targets[..] else {
        return false;
    };
    let Some(suite) = enclosing_suite(checker, stmt) else {
        return false;
    };
    let name = n.id.as_str();
    stmts_after(suite, stmt)
        .iter()
        .filter_map(value_of)
        .any(|v| factor_of(v, &|e: &Expr| uses::mentions_name(e, name)))
}

/// `N.backward()`, `scaler.scale(N).backward()`, `accelerator.backward(N)` on one of `names`.
/// With no known source of a graph: is the copy bound by `stmt` (`x = torch.tensor(...)`)
/// itself what a later `backward()` differentiates, through arithmetic, tensor methods and
/// torch functions (`total = torch.FloatTensor(parts); total.mean().backward()`)? A copy
/// that only enters a model or another function as its input (a replay buffer's batch of
/// states wrapped and fed to a Q-network, actions used as `gather` indices) is data: the
/// gradient reaches the model through its parameters, and nothing is cut.
fn copy_backpropagated_itself(checker: &Checker, stmt: &Stmt) -> bool {
    fn direct(checker: &Checker, e: &Expr, names: &[String]) -> bool {
        match e {
            Expr::Name(n) => names.iter().any(|m| m == n.id.as_str()),
            Expr::Call(c) => {
                if let Expr::Attribute(a) = &*c.func {
                    if direct(checker, &a.value, names) {
                        return true;
                    }
                }
                checker
                    .resolve(&c.func)
                    .is_some_and(|q| q.starts_with("torch."))
                    && (c.arguments.args.iter().any(|x| direct(checker, x, names))
                        || c.arguments
                            .keywords
                            .iter()
                            .any(|k| direct(checker, &k.value, names)))
            }
            Expr::Attribute(a) => direct(checker, &a.value, names),
            Expr::Subscript(x) => direct(checker, &x.value, names),
            Expr::BinOp(b) => direct(checker, &b.left, names) || direct(checker, &b.right, names),
            Expr::UnaryOp(u) => direct(checker, &u.operand, names),
            Expr::Tuple(t) => t.elts.iter().any(|x| direct(checker, x, names)),
            Expr::List(l) => l.elts.iter().any(|x| direct(checker, x, names)),
            _ => false,
        }
    }
    let Stmt::Assign(a) = stmt else { return false };
    let [Expr::Name(n)] = &a.targets[..] else {
        return false;
    };
    let Some(suite) = enclosing_suite(checker, stmt) else {
        return false;
    };
    let mut names = vec![n.id.to_string()];
    for s in stmts_after(suite, stmt) {
        if let Stmt::Assign(a2) = s {
            if let [Expr::Name(t)] = &a2.targets[..] {
                if direct(checker, &a2.value, &names) {
                    names.push(t.id.to_string());
                }
            }
        }
        if let Stmt::Expr(e) = s {
            if let Expr::Call(c) = &*e.value {
                if let Some(("backward", recv)) = helpers::method_call(c) {
                    if direct(checker, recv, &names)
                        || c.arguments
                            .args
                            .first()
                            .is_some_and(|x| direct(checker, x, &names))
                    {
                        return true;
                    }
                }
            }
        }
    }
    false
}

fn backward_of(s: &Stmt, names: &[String]) -> Option<TextRange> {
    let Stmt::Expr(e) = s else { return None };
    let Expr::Call(c) = &*e.value else {
        return None;
    };
    let ("backward", recv) = helpers::method_call(c)? else {
        return None;
    };
    let hit = names.iter().any(|n| {
        uses::mentions_name(recv, n)
            || c.arguments
                .args
                .first()
                .is_some_and(|a| uses::mentions_name(a, n))
    });
    hit.then(|| c.range())
}

fn make_fix(checker: &Checker, call: &ExprCall, arg: &Expr, arg_is_tensor: bool) -> Option<RawFix> {
    if call
        .arguments
        .keywords
        .iter()
        .any(|k| k.arg.as_ref().is_none_or(|a| a.as_str() != "requires_grad"))
    {
        return None;
    }
    let arg_text = checker.text(arg.range());
    match arg {
        Expr::List(_) | Expr::Tuple(_) => {
            let torch = checker.module_alias("torch")?;
            Some(RawFix::unsafe_edit(
                format!("Use `{torch}.stack(...)`, which keeps the graph"),
                vec![RawEdit::replace(
                    call.range(),
                    format!("{torch}.stack({arg_text})"),
                )],
            ))
        }
        _ if !arg_is_tensor => None,
        Expr::Name(_) | Expr::Attribute(_) | Expr::Call(_) | Expr::Subscript(_) => {
            Some(RawFix::unsafe_edit(
                "Use the tensor itself",
                vec![RawEdit::replace(call.range(), arg_text)],
            ))
        }
        _ => Some(RawFix::unsafe_edit(
            "Use the tensor expression itself",
            vec![RawEdit::replace(call.range(), format!("({arg_text})"))],
        )),
    }
}

use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use std::cell::RefCell;
use torchvet_semantic::grad_source::{grad_source, NoGradCallees};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `.numpy()`, `np.array(...)` and `np.asarray(...)` applied to a tensor that
    /// is still part of the autograd graph: a model's output (`pred = model(x)`), something
    /// computed from it without `.detach()`, or a module's `.weight`/`.bias`, in code where
    /// gradients are enabled.
    ///
    /// ## Why is this bad?
    /// A tensor that requires grad cannot be viewed as a NumPy array: the call raises
    /// `RuntimeError: Can't call numpy() on Tensor that requires grad. Use
    /// tensor.detach().numpy() instead.` (and a CUDA tensor raises a `TypeError` until it is
    /// moved with `.cpu()`). The crash typically hits plotting or metric code after a long
    /// training run. The rule stays silent under `torch.no_grad()`/`inference_mode()` and in
    /// functions called from such a block. This rule is in preview: whether a value still
    /// requires grad is followed only through simple assignments of one function.
    ///
    /// ## Example
    /// ```python
    /// pred = model(x)
    /// plt.plot(pred.numpy())
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// pred = model(x)
    /// plt.plot(pred.detach().cpu().numpy())
    /// ```
    ///
    /// ## Fix safety
    /// The fix inserts `.detach().cpu()` before `.numpy()` (or converts the argument of
    /// `np.array`/`np.asarray` that way). It is safe: the resulting array holds the same
    /// values, and a NumPy array never carried gradients anyway.
    ///
    /// ## References
    /// - [torch.Tensor.numpy](https://pytorch.org/docs/stable/generated/torch.Tensor.numpy.html)
    /// - [torch.Tensor.detach](https://pytorch.org/docs/stable/generated/torch.Tensor.detach.html)
    /// - [zhuangdizhu/FedGen#1](https://github.com/zhuangdizhu/FedGen/issues/1)
    pub(crate) static NUMPY_ON_REQUIRES_GRAD_TENSOR = {
        name: "numpy-on-requires-grad-tensor",
        code: "TV026",
        group: Correctness,
        severity: Warning,
        title: "Tensor.numpy()/np.asarray on a tensor that requires grad (RuntimeError)",
        autofix: Yes,
        preview: true,
        hooks: { call: check_call, end: check_end },
    };
}

struct Pending {
    range: TextRange,
    message: String,
    source: TextRange,
    function: Option<String>,
    fix: RawFix,
}

#[derive(Default)]
struct State {
    callees: NoGradCallees,
    pending: Vec<Pending>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

fn source_of(checker: &mut Checker, e: &Expr, at: ruff_text_size::TextSize) -> Option<TextRange> {
    let body: &[Stmt] = checker.scope_body();
    grad_source(checker, body, e, at, 0)
}

fn check_call(checker: &mut Checker, call: &ExprCall, q: Option<&str>) {
    if checker.in_no_grad() {
        STATE.with(|s| s.borrow_mut().callees.observe(call));
        return;
    }
    if let Some(("numpy", recv)) = helpers::method_call(call) {
        if !call.arguments.is_empty() {
            return; // numpy(force=True) detaches itself
        }
        let Some(source) = source_of(checker, recv, call.start()) else {
            return;
        };
        let recv_text = checker.text(recv.range());
        let insert = if recv_text.contains(".cpu()") {
            ".detach()"
        } else {
            ".detach().cpu()"
        };
        let fix = RawFix::safe(
            format!("Insert `{insert}` before `.numpy()`"),
            vec![RawEdit::insert(recv.end(), insert)],
        );
        push(checker, call.range(), recv, source, fix);
        return;
    }
    if matches!(q, Some("numpy.array" | "numpy.asarray")) {
        let Some(arg) = call.arguments.args.first() else {
            return;
        };
        if matches!(arg, Expr::Starred(_)) {
            return;
        }
        let Some(source) = source_of(checker, arg, call.start()) else {
            return;
        };
        let fix = RawFix::safe(
            "Convert with `.detach().cpu().numpy()`",
            vec![RawEdit::insert(arg.end(), ".detach().cpu().numpy()")],
        );
        push(checker, call.range(), arg, source, fix);
    }
}

fn push(checker: &Checker, range: TextRange, value: &Expr, source: TextRange, fix: RawFix) {
    let text = checker.text(value.range());
    let message = format!(
        "`{text}` still requires grad (it comes from the autograd graph, with no `.detach()` on the way): converting it to NumPy raises \"Can't call numpy() on Tensor that requires grad\""
    );
    let function = checker.function().map(|f| f.name.to_string());
    STATE.with(|s| {
        s.borrow_mut().pending.push(Pending {
            range,
            message,
            source,
            function,
            fix,
        })
    });
}

fn check_end(checker: &mut Checker) {
    let state = STATE.with(|s| std::mem::take(&mut *s.borrow_mut()));
    for p in state.pending {
        if p.function
            .as_deref()
            .is_some_and(|f| state.callees.contains(f))
        {
            continue;
        }
        checker
            .report(p.range, p.message)
            .add_related(p.source, "the value that requires grad comes from here")
            .set_fix(p.fix);
    }
}

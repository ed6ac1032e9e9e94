use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use std::cell::RefCell;
use torchvet_semantic::dataflow::{Certainty, Prop};
use torchvet_semantic::grad_source::{grad_source, NoGradCallees};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `.numpy()`, `np.array(...)` and `np.asarray(...)` applied to a tensor that
    /// is still part of the autograd graph: a model's output (`pred = model(x)`), something
    /// computed from it without `.detach()`, or a module's `.weight`/`.bias`, in code where
    /// gradients are enabled. Also, under any grad mode, to a tensor on a CUDA device: moved
    /// with `.cuda()` or `.to("cuda")`, or with `.to(device)` of a device that is CUDA when
    /// one is available (`torch.device("cuda" if torch.cuda.is_available() else "cpu")`), and
    /// what a module, a torch function or an operation computes from it (`model(x)`,
    /// `torch.max(out, 1)`, `out.argmax(1)`), with no `.cpu()` on the way. A conversion in a
    /// branch chosen by the device (`x.numpy() if not use_cuda else x.cpu().numpy()`) is not
    /// reported.
    ///
    /// ## Why is this bad?
    /// A tensor that requires grad cannot be viewed as a NumPy array: the call raises
    /// `RuntimeError: Can't call numpy() on Tensor that requires grad. Use
    /// tensor.detach().numpy() instead.`, and a CUDA tensor raises `TypeError: can't convert
    /// cuda:0 device type tensor to numpy` until it is moved with `.cpu()`. The crash
    /// typically hits plotting or metric code after a long training run, and only on the
    /// machines with a GPU when the device is chosen at run time. The requires-grad half stays
    /// silent under `torch.no_grad()`/`inference_mode()` and in functions called from such a
    /// block. This rule is in preview: whether a value still requires grad, or is on the GPU,
    /// is followed only through the assignments of one function (and module-level devices).
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
    /// `np.array`/`np.asarray` that way), or `.cpu()` for a tensor that only lives on the GPU.
    /// It is safe: the resulting array holds the same values, and a NumPy array never carried
    /// gradients anyway.
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
        title: "Tensor.numpy()/np.asarray on a tensor that requires grad or lives on CUDA (RuntimeError/TypeError)",
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
    /// The tensor requires grad (else: it is on a CUDA device, whatever the grad mode).
    grad: bool,
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
    let no_grad = checker.in_no_grad();
    if no_grad {
        STATE.with(|s| s.borrow_mut().callees.observe(call));
    }
    // The converted tensor and the fix for a tensor that requires grad.
    let (value, grad_fix) = if let Some(("numpy", recv)) = helpers::method_call(call) {
        if !call.arguments.is_empty() {
            return; // numpy(force=True) detaches itself
        }
        let insert = if checker.text(recv.range()).contains(".cpu()") {
            ".detach()"
        } else {
            ".detach().cpu()"
        };
        let fix = RawFix::safe(
            format!("Insert `{insert}` before `.numpy()`"),
            vec![RawEdit::insert(recv.end(), insert)],
        );
        (recv, fix)
    } else if matches!(q, Some("numpy.array" | "numpy.asarray")) {
        let Some(arg) = call.arguments.args.first() else {
            return;
        };
        if matches!(arg, Expr::Starred(_)) {
            return;
        }
        let fix = RawFix::safe(
            "Convert with `.detach().cpu().numpy()`",
            vec![RawEdit::insert(arg.end(), ".detach().cpu().numpy()")],
        );
        (arg, fix)
    } else {
        return;
    };
    let source = if no_grad {
        None
    } else {
        source_of(checker, value, call.start())
    };
    match source {
        Some(source) => {
            let text = checker.text(value.range());
            let message = format!(
                "`{text}` still requires grad (it comes from the autograd graph, with no `.detach()` on the way): converting it to NumPy raises \"Can't call numpy() on Tensor that requires grad\""
            );
            push(checker, call.range(), message, source, grad_fix, true);
        }
        None => on_cuda(checker, call.range(), value),
    }
}

/// `.numpy()` / `np.array(...)` of a tensor that the dataflow places on a CUDA device
/// ([`Prop::OnCuda`]): a `TypeError` there; the fix inserts `.cpu()` after the tensor.
fn on_cuda(checker: &mut Checker, range: TextRange, value: &Expr) {
    if under_device_test(checker, range) {
        return;
    }
    let v = checker.taint_of(value);
    let Some(f) = v.get(Prop::OnCuda) else {
        return;
    };
    let text = checker.text(value.range());
    let message = match f.certainty {
        Certainty::Definite => format!(
            "`{text}` is on a CUDA device: converting it to NumPy raises \"can't convert cuda:0 device type tensor to numpy\"; move it with `.cpu()` first"
        ),
        _ => format!(
            "`{text}` is on a CUDA device whenever one is available (it follows the device chosen for the run): converting it to NumPy then raises \"can't convert cuda:0 device type tensor to numpy\"; move it with `.cpu()` first"
        ),
    };
    let fix = RawFix::safe(
        "Insert `.cpu()` before the conversion",
        vec![RawEdit::insert(value.end(), ".cpu()")],
    );
    push(checker, range, message, f.origin, fix, false);
}

/// Does the conversion sit in a branch chosen by the device (`x.numpy() if not use_cuda else
/// x.cpu().numpy()`, `if train_on_gpu: ... else: pred.numpy()`)? A test naming CUDA, a GPU,
/// the CPU or the device picks the branch for the tensor's device.
fn under_device_test(checker: &Checker, range: TextRange) -> bool {
    use ruff_python_ast::visitor::{self, Visitor};
    let names_device = |e: &Expr| {
        helpers::any_identifier(e, &|n| {
            let n = n.to_ascii_lowercase();
            ["cuda", "gpu", "cpu", "device"]
                .iter()
                .any(|w| n.contains(w))
        })
    };
    let stack = checker.stmt_stack();
    let in_if = stack.iter().any(|s| match s {
        Stmt::If(i) => {
            names_device(&i.test)
                || i.elif_else_clauses
                    .iter()
                    .any(|c| c.test.as_ref().is_some_and(&names_device))
        }
        _ => false,
    });
    if in_if {
        return true;
    }
    struct Find<'n> {
        range: TextRange,
        names_device: &'n dyn Fn(&Expr) -> bool,
        found: bool,
    }
    impl<'a> Visitor<'a> for Find<'_> {
        fn visit_expr(&mut self, e: &'a Expr) {
            if self.found || !e.range().contains_range(self.range) {
                return;
            }
            if let Expr::If(i) = e {
                if (self.names_device)(&i.test) {
                    self.found = true;
                    return;
                }
            }
            visitor::walk_expr(self, e);
        }
    }
    let Some(stmt) = stack.last() else {
        return false;
    };
    let mut f = Find {
        range,
        names_device: &names_device,
        found: false,
    };
    f.visit_stmt(stmt);
    f.found
}

/// Keep a finding until the end of the file, when the functions called under `no_grad` are
/// known (`grad`: the tensor requires grad, which those calls excuse).
fn push(
    checker: &Checker,
    range: TextRange,
    message: String,
    source: TextRange,
    fix: RawFix,
    grad: bool,
) {
    let function = checker.function().map(|f| f.name.to_string());
    STATE.with(|s| {
        s.borrow_mut().pending.push(Pending {
            range,
            message,
            source,
            function,
            fix,
            grad,
        })
    });
}

fn check_end(checker: &mut Checker) {
    let state = STATE.with(|s| std::mem::take(&mut *s.borrow_mut()));
    for p in state.pending {
        if p.grad
            && p.function
                .as_deref()
                .is_some_and(|f| state.callees.contains(f))
        {
            continue;
        }
        let note = if p.grad {
            "the value that requires grad comes from here"
        } else {
            "it is put on the CUDA device here"
        };
        checker
            .report(p.range, p.message)
            .add_related(p.source, note)
            .set_fix(p.fix);
    }
}

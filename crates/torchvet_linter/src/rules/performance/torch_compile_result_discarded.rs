use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `torch.compile(model)` used as a statement on its own, with its result
    /// thrown away.
    ///
    /// ## Why is this bad?
    /// `torch.compile` does not change the object it is given: it returns a new wrapper
    /// (an `OptimizedModule` for a module, a compiled callable for a function). When the
    /// result is dropped, the program keeps calling the original eager model and gets none of
    /// the speed-up, while the call itself suggests that compilation is active.
    /// `nn.Module.compile()` (torch 2.2+) is the in-place alternative and is not reported.
    ///
    /// ## Example
    /// ```python
    /// model = Net().cuda()
    /// torch.compile(model)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model = Net().cuda()
    /// model = torch.compile(model)
    /// ```
    ///
    /// A call on a fresh object (`torch.compile(nn.Identity(), disable=True)` inside a `try`,
    /// probing whether compilation works) is not reported: nothing is left running eager.
    ///
    /// ## Fix safety
    /// When the compiled object is a plain name or a `self` attribute (`model`, `self.net`), the
    /// fix assigns the result back to it: `model = torch.compile(model)`. It is offered as
    /// unsafe: it switches the program to the compiled model, which changes behaviour (the
    /// first call compiles and can fail on graph breaks or unsupported code, outputs may differ
    /// in the last bits, and `state_dict()` keys of the wrapper gain an `_orig_mod.` prefix, so
    /// checkpoints saved from it no longer load into the plain model).
    ///
    /// ## References
    /// - [torch.compile](https://pytorch.org/docs/stable/generated/torch.compile.html)
    /// - [nn.Module.compile](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.compile)
    pub(crate) static TORCH_COMPILE_RESULT_DISCARDED = {
        name: "torch-compile-result-discarded",
        code: "TV094",
        group: Performance,
        severity: Warning,
        title: "torch.compile(model) as a bare statement (returns a new OptimizedModule; original stays eager)",
        autofix: Suggest,
        hooks: { stmt: check_stmt },
    };
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::Expr(e) = stmt else { return };
    let Expr::Call(call) = &*e.value else { return };
    if !checker.resolves_to(&call.func, &["torch.compile"]) {
        return;
    }
    let Some(target) = helpers::argument(call, "model", 0) else {
        return;
    };
    // A fresh object (a construction or a call result) held by nothing: compiling it can
    // only probe whether compilation works.
    if !matches!(
        target,
        Expr::Name(_) | Expr::Attribute(_) | Expr::Subscript(_)
    ) {
        return;
    }
    let target_text = checker.text(target.range());
    let simple = matches!(target, Expr::Name(_)) || helpers::self_attribute(target).is_some();
    let fix = helpers::dotted(target).filter(|_| simple).map(|d| {
        RawFix::unsafe_edit(
            format!("Assign the compiled module back to `{d}`"),
            vec![RawEdit::insert(call.start(), format!("{d} = "))],
        )
    });
    let diagnostic = checker.report(
        call.range(),
        format!(
            "the compiled wrapper returned by `torch.compile` is discarded: `{target_text}` itself stays eager and runs uncompiled"
        ),
    );
    if let Some(fix) = fix {
        diagnostic.set_fix(fix);
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::performance::helpers::apply_fixes;

    #[test]
    fn fixes() {
        let src = "import torch\ntorch.compile(model, mode=\"max-autotune\")\ntorch.compile(a.b)\n";
        let (n, out) = apply_fixes("torch-compile-result-discarded", src);
        assert_eq!(n, 2);
        assert_eq!(out, "import torch\nmodel = torch.compile(model, mode=\"max-autotune\")\ntorch.compile(a.b)\n");
    }
}

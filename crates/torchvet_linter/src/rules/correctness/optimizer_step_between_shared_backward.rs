use super::flow_helpers::{current_flow, describe};
use crate::checker::Checker;
use ruff_python_ast::Stmt;
use torchvet_semantic::flow::EventKind;

crate::declare_rule! {
    /// ## What it does
    /// Checks for an `optimizer.step()` between `loss1.backward(retain_graph=True)` and a
    /// later `loss2.backward()` in the same iteration: the GAN pattern where the discriminator
    /// is stepped before the generator's loss is backpropagated through the same graph.
    ///
    /// ## Why is this bad?
    /// `retain_graph=True` keeps the graph so that a second backward can reuse it. The
    /// optimizer step between the two updates parameters in place, but the retained graph
    /// saved those parameters (or activations computed from them) for the backward pass.
    /// Since PyTorch 1.5 the second backward fails with "one of the variables needed for
    /// gradient computation has been modified by an inplace operation"; before, it silently
    /// computed wrong gradients. This rule is in preview: it relies on `retain_graph=True` as
    /// the sign that the two losses share a graph, without checking which parameters the
    /// optimizer owns.
    ///
    /// ## Example
    /// ```python
    /// d_loss.backward(retain_graph=True)
    /// opt_d.step()
    /// g_loss.backward()
    /// opt_g.step()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// fake = generator(z)
    /// d_loss = criterion(discriminator(fake.detach()), zeros) + criterion(discriminator(real), ones)
    /// d_loss.backward()
    /// opt_d.step()
    /// g_loss = criterion(discriminator(fake), ones)
    /// g_loss.backward()
    /// opt_g.step()
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: the forward pass has to be recomputed (or detached) after the step,
    /// or both losses backpropagated before stepping, and which one is intended depends on
    /// the training algorithm.
    ///
    /// ## References
    /// - [pytorch issue 39141](https://github.com/pytorch/pytorch/issues/39141)
    /// - [SRGAN issue 89](https://github.com/leftthomas/SRGAN/issues/89)
    /// - [Autograd mechanics: in-place operations](https://pytorch.org/docs/stable/notes/autograd.html#in-place-operations-with-autograd)
    pub(crate) static OPTIMIZER_STEP_BETWEEN_SHARED_BACKWARD = {
        name: "optimizer-step-between-shared-backward",
        code: "TV036",
        group: Correctness,
        severity: Critical,
        title: "optimizer.step() between two backward() calls over one shared graph",
        autofix: Suggest,
        preview: true,
        hooks: { stmt: check },
    };
}

fn check(checker: &mut Checker, stmt: &Stmt) {
    let Some(flow) = current_flow(checker, stmt) else {
        return;
    };
    let Some((b1i, b1)) = flow
        .of_kind(EventKind::Backward)
        .find(|(_, b)| b.retain_graph && !b.in_nested_loop())
    else {
        return;
    };
    let Some((si, step)) = flow.events.iter().enumerate().skip(b1i + 1).find(|(_, e)| {
        e.kind == EventKind::Step && !e.closure && !e.in_nested_loop() && b1.dominates(e)
    }) else {
        return;
    };
    let Some(b2) = flow.events[si + 1..]
        .iter()
        .find(|e| e.kind == EventKind::Backward && !e.in_nested_loop() && step.dominates(e))
    else {
        return;
    };
    let message = format!(
        "{} updates parameters in place between {} and {}: the second backward reuses the retained graph, whose saved tensors the step just modified, and fails with 'one of the variables needed for gradient computation has been modified by an inplace operation' (torch >= 1.5)",
        describe(checker, step),
        describe(checker, b1),
        describe(checker, b2)
    );
    let (r1, r2) = (b1.site(), b2.site());
    let d = checker.report(step.site(), message);
    d.add_related(r1, "the backward() that retains the shared graph");
    d.add_related(r2, "the second backward() through the modified graph");
}

use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::style::values::{
    frame_binding, returns_self, with_frame, wrapper_kind, Bound, ModuleKind,
};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for a model compiled with `torch.compile` and then wrapped in
    /// `DistributedDataParallel`, such as `model = torch.compile(model)` followed by
    /// `model = DDP(model, ...)`.
    ///
    /// ## Why is this bad?
    /// The PyTorch documentation recommends compiling the DDP-wrapped model: then TorchDynamo
    /// knows about DDP's gradient buckets and splits the graph at bucket boundaries
    /// (DDPOptimizer), so communication overlaps with the backward pass. Compiling first hides
    /// the model from that optimisation. The advice is contested for other wrappers (FSDP2
    /// setups compile per block before sharding), so this rule is informational.
    ///
    /// ## Example
    /// ```python
    /// model = torch.compile(model)
    /// model = DDP(model, device_ids=[rank])
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model = DDP(model, device_ids=[rank])
    /// model = torch.compile(model)
    /// ```
    ///
    /// ## Fix safety
    /// When both steps are `x = f(x, ...)` assignments of the same name, a display-only fix
    /// swaps the two statements. It is not applied automatically: state-dict keys of the
    /// wrapped model change (`module._orig_mod.` becomes `_orig_mod.module.`), which affects
    /// checkpoints.
    ///
    /// ## References
    /// - [DDP with TorchDynamo (DDPOptimizer)](https://pytorch.org/docs/stable/notes/ddp.html#torchdynamo-ddpoptimizer)
    /// - [huggingface/transformers#22279](https://github.com/huggingface/transformers/pull/22279)
    pub(crate) static DDP_COMPILE_ORDER = {
        name: "ddp-compile-order",
        code: "TV111",
        group: Distributed,
        severity: Info,
        title: "torch.compile applied before DDP wrapping (compile the DDP-wrapped model)",
        autofix: Suggest,
        hooks: { call: check_call },
    };
}

fn is_compile(checker: &Checker, expr: &Expr) -> bool {
    matches!(expr, Expr::Call(c) if checker.resolves_to(&c.func, &["torch.compile"]))
}

/// The simple assignment statement `name = <value>` whose value has this range.
fn assignment_of(body: &[Stmt], value: TextRange) -> Option<&Stmt> {
    for stmt in body {
        if !stmt.range().contains_range(value) {
            continue;
        }
        return match stmt {
            Stmt::Assign(a) if a.value.range() == value && a.targets.len() == 1 => Some(stmt),
            Stmt::If(i) => assignment_of(&i.body, value).or_else(|| {
                i.elif_else_clauses
                    .iter()
                    .find_map(|c| assignment_of(&c.body, value))
            }),
            Stmt::With(w) => assignment_of(&w.body, value),
            Stmt::Try(t) => assignment_of(&t.body, value),
            _ => None,
        };
    }
    None
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if name.and_then(wrapper_kind) != Some(ModuleKind::Ddp) {
        return;
    }
    let Some(arg) = helpers::argument(call, "module", 0) else {
        return;
    };
    if is_compile(checker, arg) {
        checker.report(
            call.func.range(),
            "the model is compiled before it is wrapped in DDP: compile the DDP-wrapped model instead so that TorchDynamo can split graphs at DDP's gradient buckets",
        );
        return;
    }
    // `DDP(model.cuda(), ...)`: Module.to/cuda/... return the module itself.
    let mut base = arg;
    while let Expr::Call(c) = base {
        match helpers::method_call(c) {
            Some((m, receiver)) if returns_self(m) => base = receiver,
            _ => break,
        }
    }
    let Expr::Name(n) = base else { return };
    let var = n.id.as_str();
    // The statement of the DDP call, for the swap fix.
    let ddp_stmt = checker.current_stmt().filter(|s| match s {
        Stmt::Assign(a) => {
            a.value.range() == call.range()
                && a.targets.len() == 1
                && helpers::name_of(&a.targets[0]) == Some(var)
        }
        _ => false,
    });
    let found = with_frame(checker, |env| {
        let Some(Bound::Value(v)) = frame_binding(env, var, n.start()) else {
            return None;
        };
        if !is_compile(checker, v) {
            return None;
        }
        let compile_stmt = assignment_of(env.body, v.range()).filter(|s| match s {
            Stmt::Assign(a) => {
                helpers::name_of(&a.targets[0]) == Some(var)
                    && matches!(&*a.value, Expr::Call(c) if c.arguments.args.first().and_then(helpers::name_of) == Some(var))
            }
            _ => false,
        });
        Some((v.range(), compile_stmt.map(Ranged::range)))
    });
    let Some((compile_range, compile_stmt)) = found else {
        return;
    };
    let swap = match (compile_stmt, ddp_stmt.filter(|_| std::ptr::eq(base, arg))) {
        (Some(c), Some(d)) => Some((c, d.range())),
        _ => None,
    };
    let (c_text, d_text) = swap.map_or(("", ""), |(c, d)| (checker.text(c), checker.text(d)));
    let diagnostic = checker.report(
        call.func.range(),
        format!("`{var}` is compiled before it is wrapped in DDP: compile the DDP-wrapped model instead so that TorchDynamo can split graphs at DDP's gradient buckets"),
    );
    diagnostic.add_related(compile_range, "compiled here");
    if let Some((c, d)) = swap {
        diagnostic.set_fix(RawFix::display_only(
            "Wrap in DDP first, then compile",
            vec![RawEdit::replace(c, d_text), RawEdit::replace(d, c_text)],
        ));
    }
}

use super::helpers::{class_method, self_assignments};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextSize};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks `forward` methods for `torch.flatten(x)` without `start_dim`, `x.view(-1)` or
    /// `x.reshape(-1)` whose result goes into an `nn.Linear` layer of the module.
    ///
    /// ## Why is this bad?
    /// These flatten *all* dimensions, the batch included: a `(N, C, H, W)` batch becomes
    /// one vector of `N*C*H*W` values. The Linear layer then either fails on a shape mismatch
    /// or, when the batch size happens to be 1, silently works, so the bug hides in
    /// single-sample tests. `nn.Flatten()` and `torch.flatten(x, 1)` keep the batch dimension.
    ///
    /// ## Example
    /// ```python
    /// def forward(self, x):
    ///     x = torch.flatten(self.features(x))
    ///     return self.fc(x)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def forward(self, x):
    ///     x = torch.flatten(self.features(x), 1)
    ///     return self.fc(x)
    /// ```
    ///
    /// ## Fix safety
    /// The fix passes `start_dim` 1 (`torch.flatten(x, 1)`) or keeps the batch dimension in
    /// the view (`x.view(x.size(0), -1)`). Output shapes change, so the fix is unsafe.
    ///
    /// ## References
    /// - [torch.flatten](https://pytorch.org/docs/stable/generated/torch.flatten.html)
    /// - [torch.nn.Flatten](https://pytorch.org/docs/stable/generated/torch.nn.Flatten.html)
    pub(crate) static FLATTEN_INCLUDES_BATCH_DIM = {
        name: "flatten-includes-batch-dim",
        code: "TV081",
        group: Correctness,
        severity: Warning,
        title: "torch.flatten(x) / x.view(-1) before a Linear layer flattens the batch dimension too",
        autofix: Yes,
        hooks: { call: check_call },
    };
}

/// Attributes of the class assigned an `nn.Linear` (or a Sequential that starts with one).
fn linear_attributes(checker: &Checker, class: &ruff_python_ast::StmtClassDef) -> Vec<String> {
    let Some(init) = class_method(class, "__init__") else {
        return Vec::new();
    };
    let is_linear = |e: &Expr| {
        let Expr::Call(c) = e else { return false };
        checker.resolves_to(
            &c.func,
            &[
                "torch.nn.Linear",
                "torch.nn.LazyLinear",
                "torch.nn.modules.linear.Linear",
            ],
        )
    };
    self_assignments(&init.body)
        .into_iter()
        .filter(|(_, value, _)| {
            let Expr::Call(c) = value else { return false };
            is_linear(value)
                || (checker.resolves_to(&c.func, &["torch.nn.Sequential"])
                    && c.arguments.args.first().is_some_and(&is_linear))
        })
        .map(|(name, _, _)| name.to_string())
        .collect()
}

fn is_linear_call(call: &ExprCall, linears: &[String]) -> bool {
    helpers::self_attribute(&call.func).is_some_and(|a| linears.iter().any(|l| l == a))
}

/// After `name = <flatten>` ending at `after`: is the next thing that happens to `name` a
/// Linear call on it (before any re-binding)?
fn flows_into_linear(
    body: &[Stmt],
    name: &str,
    after: TextSize,
    linears: &[String],
) -> Option<ruff_text_size::TextRange> {
    struct Events<'n, 'l> {
        name: &'n str,
        linears: &'l [String],
        // (offset, Some(range) for a Linear call on the name, None for a re-binding)
        out: Vec<(TextSize, Option<ruff_text_size::TextRange>)>,
    }
    impl<'x> Visitor<'x> for Events<'_, '_> {
        fn visit_stmt(&mut self, stmt: &'x Stmt) {
            let rebinds = match stmt {
                Stmt::Assign(a) => a
                    .targets
                    .iter()
                    .any(|t| helpers::name_of(t) == Some(self.name)),
                Stmt::AugAssign(a) => helpers::name_of(&a.target) == Some(self.name),
                _ => false,
            };
            visitor::walk_stmt(self, stmt);
            if rebinds {
                self.out.push((stmt.end(), None));
            }
        }
        fn visit_expr(&mut self, expr: &'x Expr) {
            if let Expr::Call(c) = expr {
                if is_linear_call(c, self.linears)
                    && c.arguments.args.first().and_then(helpers::name_of) == Some(self.name)
                {
                    self.out.push((c.start(), Some(c.range())));
                }
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut ev = Events {
        name,
        linears,
        out: Vec::new(),
    };
    ev.visit_body(body);
    ev.out.sort_by_key(|(o, _)| *o);
    ev.out
        .into_iter()
        .find(|(o, _)| *o > after)
        .and_then(|(_, r)| r)
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let flat_all = if name == Some("torch.flatten") {
        call.arguments.args.len() == 1
            && call.arguments.keywords.is_empty()
            && !helpers::has_args_splat(call)
    } else {
        matches!(helpers::method_call(call), Some(("view" | "reshape", _)))
            && call.arguments.args.len() == 1
            && call.arguments.keywords.is_empty()
            && helpers::int_value(&call.arguments.args[0]) == Some(-1)
    };
    if !flat_all || !checker.in_module_method("forward") {
        return;
    }
    let Some(class) = checker.module_method() else {
        return;
    };
    let linears = linear_attributes(checker, class.def);
    if linears.is_empty() {
        return;
    }
    // Directly an argument of a Linear call, or bound to a name the next Linear call takes.
    let direct = match checker.parent_expr() {
        Some(Expr::Call(parent)) => {
            is_linear_call(parent, &linears)
                && parent
                    .arguments
                    .args
                    .first()
                    .is_some_and(|a| a.range() == call.range())
        }
        _ => false,
    };
    let into = if direct {
        None
    } else {
        let Some(Stmt::Assign(a)) = checker.current_stmt() else {
            return;
        };
        let ([Expr::Name(target)], true) = (a.targets.as_slice(), a.value.range() == call.range())
        else {
            return;
        };
        let Some(func) = checker.function() else {
            return;
        };
        match flows_into_linear(&func.body, target.id.as_str(), a.end(), &linears) {
            Some(r) => Some(r),
            None => return,
        }
    };
    let text = checker.text(call.range());
    let diag = checker.report(
        call.range(),
        format!("`{text}` flattens the batch dimension too: the Linear layer that follows sees one sample of N*features values (it only works when the batch size is 1); keep dim 0"),
    );
    if let Some(r) = into {
        diag.add_related(r, "the flattened tensor goes into this Linear layer");
    }
    let fix = if name == Some("torch.flatten") {
        Some(RawEdit::insert(call.arguments.args[0].end(), ", 1"))
    } else {
        helpers::method_call(call).and_then(|(_, recv)| {
            helpers::name_of(recv).map(|n| {
                RawEdit::replace(call.arguments.args[0].range(), format!("{n}.size(0), -1"))
            })
        })
    };
    if let Some(edit) = fix {
        diag.set_fix(RawFix::unsafe_edit("Keep the batch dimension", vec![edit]));
    }
}

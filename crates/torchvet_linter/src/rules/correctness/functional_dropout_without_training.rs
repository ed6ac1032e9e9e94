use crate::checker::Checker;
use crate::fix::{add_keyword_argument, RawFix};
use crate::rules::distributed::rank_helpers::child_blocks;
use ruff_python_ast::{BoolOp, CmpOp, Expr, ExprCall, Stmt, UnaryOp};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `F.dropout` (and `dropout1d/2d/3d`, `alpha_dropout`,
    /// `feature_alpha_dropout`) called in the `forward` of an `nn.Module` without `training=`.
    ///
    /// ## Why is this bad?
    /// The functional form does not know about the module's mode: `training` defaults to
    /// `True`, so dropout stays active after `model.eval()`. Evaluation and inference results
    /// are then noisy and systematically worse. `nn.Dropout` modules, or passing
    /// `training=self.training`, follow `train()`/`eval()`. Calls that only run in training
    /// mode (inside `if self.training:`, or after `if not self.training: return ...`) are
    /// not reported.
    ///
    /// ## Example
    /// ```python
    /// def forward(self, x):
    ///     return F.dropout(self.fc(x), p=0.5)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def forward(self, x):
    ///     return F.dropout(self.fc(x), p=0.5, training=self.training)
    /// ```
    ///
    /// ## Fix safety
    /// The fix adds `training=self.training`. Outputs in eval mode change (dropout turns off,
    /// as intended), so the fix is unsafe. An explicit `training=True` (Monte-Carlo dropout)
    /// is left alone.
    ///
    /// ## References
    /// - [torch.nn.functional.dropout](https://pytorch.org/docs/stable/generated/torch.nn.functional.dropout.html)
    /// - [pytorch issue 26338](https://github.com/pytorch/pytorch/issues/26338)
    pub(crate) static FUNCTIONAL_DROPOUT_WITHOUT_TRAINING = {
        name: "functional-dropout-without-training",
        code: "TV032",
        group: Correctness,
        severity: Critical,
        title: "F.dropout in Module.forward without training=self.training (stays active after eval())",
        autofix: Yes,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let Some(q) = name else { return };
    let Some(func) = q.strip_prefix("torch.nn.functional.") else {
        return;
    };
    if !matches!(
        func,
        "dropout"
            | "dropout1d"
            | "dropout2d"
            | "dropout3d"
            | "alpha_dropout"
            | "feature_alpha_dropout"
    ) {
        return;
    }
    if !checker.in_module_method("forward") {
        return;
    }
    if helpers::keyword(call, "training").is_some()
        || helpers::has_kwargs_splat(call)
        || helpers::has_args_splat(call)
        || call.arguments.args.len() >= 3
    {
        return;
    }
    let self_name = checker
        .function()
        .and_then(|f| f.parameters.args.first())
        .map(|p| p.parameter.name.to_string());
    if self_name
        .as_deref()
        .is_some_and(|s| only_when_training(checker, s))
    {
        return;
    }
    let text = checker.text(call.func.range());
    let diag = checker.report(
        call.range(),
        format!("`{text}` without `training=` is always in training mode: dropout stays active after `model.eval()`, so evaluation outputs are randomly dropped"),
    );
    if let Some(s) = self_name {
        diag.set_fix(RawFix::unsafe_edit(
            format!("Add `training={s}.training`"),
            vec![add_keyword_argument(
                call,
                &format!("training={s}.training"),
            )],
        ));
    }
}

/// Does `test` hold only in training mode: `self.training`, `self.training and ...`?
fn implies_training(test: &Expr, self_name: &str) -> bool {
    match test {
        Expr::Attribute(a) => {
            a.attr.as_str() == "training" && helpers::name_of(&a.value) == Some(self_name)
        }
        Expr::BoolOp(b) if matches!(b.op, BoolOp::And) => {
            b.values.iter().any(|v| implies_training(v, self_name))
        }
        // `self.training is True`, `self.training == True`
        Expr::Compare(c) if c.ops.len() == 1 && matches!(c.ops[0], CmpOp::Is | CmpOp::Eq) => {
            implies_training(&c.left, self_name)
                && helpers::is_truthy(&c.comparators[0]) == Some(true)
        }
        _ => false,
    }
}

/// Does `test` hold only in eval mode: `not self.training`?
fn implies_eval(test: &Expr, self_name: &str) -> bool {
    match test {
        Expr::UnaryOp(u) if matches!(u.op, UnaryOp::Not) => implies_training(&u.operand, self_name),
        Expr::BoolOp(b) if matches!(b.op, BoolOp::Or) => {
            // `if not self.training or p == 0: return x` exits in every eval call.
            b.values.iter().any(|v| implies_eval(v, self_name))
        }
        _ => false,
    }
}

/// Does a block end by leaving the function (`return` / `raise`)?
fn exits(body: &[Stmt]) -> bool {
    matches!(body.last(), Some(Stmt::Return(_) | Stmt::Raise(_)))
}

/// Is the statement being visited reached only in training mode: inside `if self.training:`
/// (or the `else` of `if not self.training:`), or after `if not self.training: return ...`
/// earlier in the same function?
fn only_when_training(checker: &Checker, self_name: &str) -> bool {
    let stack = checker.stmt_stack();
    let start = stack
        .iter()
        .rposition(|s| matches!(s, Stmt::FunctionDef(_)))
        .map_or(0, |i| i + 1);
    let Some(Stmt::FunctionDef(f)) = start.checked_sub(1).map(|i| stack[i]) else {
        return false;
    };
    let mut block: &[Stmt] = &f.body;
    for (k, &stmt) in stack.iter().enumerate().skip(start) {
        // An earlier `if not self.training: return x` in the same block.
        for prev in block {
            if prev.start() >= stmt.start() {
                break;
            }
            if let Stmt::If(i) = prev {
                if i.elif_else_clauses.is_empty()
                    && implies_eval(&i.test, self_name)
                    && exits(&i.body)
                {
                    return true;
                }
            }
        }
        let Some(&next) = stack.get(k + 1) else { break };
        let inside = |body: &[Stmt]| body.iter().any(|s| s.range().contains_range(next.range()));
        if let Stmt::If(i) = stmt {
            if inside(&i.body) && implies_training(&i.test, self_name) {
                return true;
            }
            // `if not self.training: ... else: <here>`
            if let [clause] = i.elif_else_clauses.as_slice() {
                if clause.test.is_none() && inside(&clause.body) && implies_eval(&i.test, self_name)
                {
                    return true;
                }
            }
            for clause in &i.elif_else_clauses {
                if inside(&clause.body)
                    && clause
                        .test
                        .as_ref()
                        .is_some_and(|t| implies_training(t, self_name))
                {
                    return true;
                }
            }
        }
        block = child_blocks(stmt)
            .into_iter()
            .find(|b| b.iter().any(|s| s.range() == next.range()))
            .unwrap_or(&[]);
    }
    false
}

use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::{Kind, MODULE_SELF_METHODS};
use torchvet_semantic::reaching::Def;

crate::declare_rule! {
    /// ## What it does
    /// Checks for assignments of flags that do nothing on an `nn.Module`:
    /// `model.requires_grad = False`, `model.training = False`, and the typo
    /// `x.require_grad = ...` on anything. `training` is reported only when assigned a literal
    /// `True`/`False`: copying the flag from another module (`new.training = old.training`)
    /// is a deliberate one-module update and stays silent, and so does `training` on a torch
    /// layer without submodules (`drop = nn.Dropout()`, `nn.BatchNorm2d(...)`, `nn.Linear(...)`),
    /// where it does exactly what `.eval()` / `.train()` do. `self.requires_grad = flag` in a
    /// module whose own code reads `self.requires_grad` (its `forward` chooses
    /// `torch.no_grad()` by it) is a flag of the class's own and stays silent too.
    ///
    /// ## Why is this bad?
    /// `nn.Module` has no `requires_grad` attribute: the assignment just stores a new plain
    /// attribute and every parameter stays trainable, so the "frozen" backbone keeps
    /// training. Setting `training` changes only that one module, not its children, so
    /// Dropout and BatchNorm layers inside stay in training mode. `require_grad` (without
    /// the s) is never read by torch at all.
    ///
    /// ## Example
    /// ```python
    /// backbone = torchvision.models.resnet50()
    /// backbone.requires_grad = False
    /// model.training = False
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// backbone = torchvision.models.resnet50()
    /// backbone.requires_grad_(False)
    /// model.eval()
    /// ```
    ///
    /// ## Fix safety
    /// The fix rewrites the assignment to `requires_grad_(...)`, `eval()`/`train(...)`, or
    /// renames `require_grad` to `requires_grad`. Parameters become frozen (or modules switch
    /// mode) where they did not before, which changes training, so the fix is unsafe.
    ///
    /// ## References
    /// - [nn.Module.requires_grad_](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.requires_grad_)
    /// - [nn.Module.eval](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval)
    /// - [catalyst PR 81](https://github.com/catalyst-team/catalyst/pull/81)
    /// - [TorchFix TOR002](https://github.com/pytorch-labs/torchfix)
    pub(crate) static MODULE_FLAG_ATTRIBUTE_ASSIGNMENT = {
        name: "module-flag-attribute-assignment",
        code: "TV035",
        group: Correctness,
        severity: Critical,
        title: "Assigning requires_grad/training on a Module (or the typo require_grad) does nothing useful",
        autofix: Yes,
        torchfix: ["TOR002"],
        hooks: { stmt: check_stmt },
    };
}

/// A value known to be an `nn.Module`; `leaf` when it is a torch layer without submodules
/// (`nn.Dropout()`, `nn.BatchNorm2d(...)`), where `.training = False` is exactly `.eval()`.
#[derive(Clone, Copy)]
struct IsModule {
    leaf: bool,
}

/// The statements [`check_stmt`] reports on: `x.<flag> = value` with one attribute target.
fn flag_assignment(stmt: &Stmt) -> Option<(&ruff_python_ast::ExprAttribute, &Expr)> {
    let Stmt::Assign(assign) = stmt else {
        return None;
    };
    let [Expr::Attribute(target)] = assign.targets.as_slice() else {
        return None;
    };
    matches!(
        target.attr.as_str(),
        "require_grad" | "requires_grad" | "training"
    )
    .then_some((target, &*assign.value))
}

/// Is the module `value` was created from a torch layer without submodules
/// (`nn.Dropout(0.1).to(device)`, or a name holding one: `noise = noise.to("cuda")`)?
fn created_as_leaf(checker: &Checker, mut value: &Expr, depth: u32) -> bool {
    loop {
        match value {
            Expr::Call(call) => match helpers::method_call(call) {
                // Module.to/cuda/eval/train/... return the module itself.
                Some((m, receiver)) if MODULE_SELF_METHODS.contains(&m) => value = receiver,
                _ => {
                    return checker
                        .resolve(&call.func)
                        .is_some_and(|q| torchvet_semantic::is_leaf_layer(&q))
                }
            },
            Expr::Name(n) if depth < 4 => {
                return checker
                    .reaching_defs(n.id.as_str(), n.start())
                    .is_some_and(|defs| {
                        defs.iter().all(
                        |d| matches!(d, Def::Value(v) if created_as_leaf(checker, v, depth + 1)),
                    )
                    })
            }
            _ => return false,
        }
    }
}

/// Is `name` the module variable of an enclosing `for m in x.modules()` loop?
fn loop_module_variable(checker: &Checker, name: &str) -> bool {
    checker.frame().loops.iter().rev().any(|l| {
        let Stmt::For(f) = l else { return false };
        let Expr::Call(c) = &*f.iter else {
            return false;
        };
        let Some((method, _)) = helpers::method_call(c) else {
            return false;
        };
        match (method, &*f.target) {
            ("modules" | "children", Expr::Name(n)) => n.id.as_str() == name,
            ("named_modules" | "named_children", Expr::Tuple(t)) => {
                t.elts.len() == 2 && helpers::name_of(&t.elts[1]) == Some(name)
            }
            _ => false,
        }
    })
}

fn module_kind(checker: &mut Checker, receiver: &Expr) -> Option<IsModule> {
    match receiver {
        Expr::Name(n) if n.id.as_str() == "self" => checker
            .module_method()
            .is_some()
            .then_some(IsModule { leaf: false }),
        Expr::Name(n) if loop_module_variable(checker, n.id.as_str()) => {
            Some(IsModule { leaf: false })
        }
        // A name: what every assignment reaching this statement creates (a module, and a
        // leaf layer only when all of them are); a parameter: what the project passes.
        Expr::Name(n) => match checker.reaching_defs(n.id.as_str(), receiver.start()) {
            Some(defs) => {
                let mut leaf = true;
                for d in defs {
                    let Def::Value(v) = d else { return None };
                    if checker.kind_of(v) != Kind::Module {
                        return None;
                    }
                    leaf &= created_as_leaf(checker, v, 0);
                }
                Some(IsModule { leaf })
            }
            None => {
                (checker.value_kind(receiver) == Kind::Module).then_some(IsModule { leaf: false })
            }
        },
        // `self.<attr>`: what the class assigns to it.
        Expr::Attribute(_) if checker.value_kind(receiver) == Kind::Module => {
            let leaf = checker.kind_origin(receiver).is_some_and(|r| {
                helpers::expr_with_range(&checker.module().body, r)
                    .is_some_and(|e| created_as_leaf(checker, e, 0))
            });
            Some(IsModule { leaf })
        }
        _ => None,
    }
}

fn is_module(checker: &mut Checker, receiver: &Expr) -> bool {
    module_kind(checker, receiver).is_some()
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    if let Some((target, value)) = flag_assignment(stmt) {
        check_flag(checker, stmt, target, value);
    }
}

fn check_flag(
    checker: &mut Checker,
    stmt: &Stmt,
    target: &ruff_python_ast::ExprAttribute,
    value: &Expr,
) {
    let receiver = &*target.value;
    let recv = checker.text(receiver.range());
    let val = checker.text(value.range());
    match target.attr.as_str() {
        "require_grad" => {
            checker
                .report(
                    target.range(),
                    format!("`require_grad` is a typo: torch never reads it, so `{recv}` keeps its `requires_grad` unchanged"),
                )
                .set_fix(RawFix::unsafe_edit(
                    "Rename to `requires_grad`",
                    vec![RawEdit::replace(target.attr.range(), "requires_grad")],
                ));
        }
        "requires_grad" => {
            if !is_module(checker, receiver) {
                return;
            }
            // A module keeping its own `requires_grad` flag, read by its own code (`forward`
            // picks `torch.no_grad()` by it): a deliberate attribute, and `requires_grad_`
            // would remove the flag the class reads.
            if helpers::name_of(receiver) == Some("self")
                && checker.module_method().is_some_and(|c| {
                    torchvet_semantic::uses::class_reads_own_attribute(c.def, "requires_grad")
                })
            {
                return;
            }
            let replacement = format!("{recv}.requires_grad_({val})");
            checker
                .report(
                    target.range(),
                    format!("`{recv}` is an nn.Module, which has no `requires_grad` flag: this stores a plain attribute and every parameter stays trainable; use `{replacement}`"),
                )
                .set_fix(RawFix::unsafe_edit(
                    format!("Use `{replacement}`"),
                    vec![RawEdit::replace(stmt.range(), replacement)],
                ));
        }
        "training" => {
            // A module switching its own flag inside its methods is its own business. A torch
            // layer without submodules (`nn.Dropout()`) has nothing else to switch: the
            // assignment is exactly `.eval()` / `.train()`.
            if helpers::name_of(receiver) == Some("self")
                || module_kind(checker, receiver).is_none_or(|k| k.leaf)
            {
                return;
            }
            // Only a literal `True`/`False`: copying the flag from another module
            // (`new.training = old.training`, as in convert_sync_batchnorm) is deliberate.
            let Expr::BooleanLiteral(b) = value else {
                return;
            };
            // `m.training = True` followed by `m.train()` (or `False` by `m.eval()`) in the
            // same function before the module is called: redundant, and the mode call sets
            // every submodule anyway.
            let key = torchvet_semantic::flow::object_key(receiver);
            let after = stmt.range().end();
            let called = format!("{recv}(");
            let switched_later = checker.function_events().iter().any(|e| {
                matches!(
                    e.kind,
                    torchvet_semantic::flow::EventKind::Train
                        | torchvet_semantic::flow::EventKind::Eval
                ) && e.range.start() >= after
                    && key.is_some()
                    && e.target_key() == key.as_deref()
                    && !checker
                        .text(ruff_text_size::TextRange::new(after, e.range.start()))
                        .contains(&called)
            });
            if switched_later {
                return;
            }
            // `m.eval()` just before `m.training = False` (or `m.train()` before `True`): the
            // mode call already set every submodule; the assignment is redundant.
            let wanted = if b.value {
                torchvet_semantic::flow::EventKind::Train
            } else {
                torchvet_semantic::flow::EventKind::Eval
            };
            let before = stmt.range().start();
            let events = checker.function_events();
            let last_switch = events
                .iter()
                .filter(|e| {
                    matches!(
                        e.kind,
                        torchvet_semantic::flow::EventKind::Train
                            | torchvet_semantic::flow::EventKind::Eval
                    ) && e.range.end() <= before
                        && key.is_some()
                        && e.target_key() == key.as_deref()
                })
                .max_by_key(|e| e.range.start());
            if last_switch.is_some_and(|e| e.kind == wanted) {
                return;
            }
            let replacement = if b.value {
                format!("{recv}.train()")
            } else {
                format!("{recv}.eval()")
            };
            checker
                .report(
                    target.range(),
                    format!("assigning `{recv}.training` changes only that module: its submodules (Dropout, BatchNorm) keep their mode; use `{replacement}`"),
                )
                .set_fix(RawFix::unsafe_edit(
                    format!("Use `{replacement}`"),
                    vec![RawEdit::replace(stmt.range(), replacement)],
                ));
        }
        _ => {}
    }
}

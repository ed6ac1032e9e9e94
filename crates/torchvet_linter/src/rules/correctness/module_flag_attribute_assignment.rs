use super::helpers::{constructs_module, LocalKinds};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;
use std::cell::RefCell;
use torchvet_semantic::helpers;

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
        hooks: { stmt: check_stmt, end: clear },
    };
}

/// A value known to be an `nn.Module`; `leaf` when it is a torch layer without submodules
/// (`nn.Dropout()`, `nn.BatchNorm2d(...)`), where `.training = False` is exactly `.eval()`.
#[derive(Clone, Copy)]
struct IsModule {
    leaf: bool,
}

thread_local! {
    static KINDS: RefCell<LocalKinds<IsModule>> = RefCell::new(LocalKinds::default());
    /// Does the file assign one of the flags anywhere (computed at its first statement)?
    static ASSIGNS_FLAG: std::cell::Cell<Option<((usize, usize), bool)>> =
        const { std::cell::Cell::new(None) };
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

/// Does any statement of the file (at any depth) assign a flag? Without one the kind table
/// is never consulted, so it is not fed.
fn file_assigns_flag(checker: &Checker) -> bool {
    let file = super::helpers::file_key(checker);
    if let Some((f, b)) = ASSIGNS_FLAG.get() {
        if f == file {
            return b;
        }
    }
    // Every statement, nested definitions included.
    let mut b = false;
    let mut bodies = vec![&checker.module().body[..]];
    while let Some(body) = bodies.pop() {
        helpers::for_each_own_stmt(body, &mut |s| {
            b |= flag_assignment(s).is_some();
            match s {
                Stmt::FunctionDef(f) => bodies.push(&f.body),
                Stmt::ClassDef(c) => bodies.push(&c.body),
                _ => {}
            }
        });
        if b {
            break;
        }
    }
    ASSIGNS_FLAG.set(Some((file, b)));
    b
}

fn classify(checker: &Checker, kinds: &LocalKinds<IsModule>, value: &Expr) -> Option<IsModule> {
    match value {
        Expr::Call(call) => {
            if constructs_module(checker, call) {
                let leaf = checker
                    .resolve(&call.func)
                    .is_some_and(|q| torchvet_semantic::is_leaf_layer(&q));
                return Some(IsModule { leaf });
            }
            // Module.to/cuda/eval/train/... return the module itself.
            let (method, receiver) = helpers::method_call(call)?;
            if matches!(
                method,
                "to" | "cuda"
                    | "cpu"
                    | "eval"
                    | "train"
                    | "float"
                    | "half"
                    | "double"
                    | "bfloat16"
                    | "requires_grad_"
            ) {
                return classify(checker, kinds, receiver);
            }
            None
        }
        Expr::Name(_) | Expr::Attribute(_) => kinds.get(checker, value),
        _ => None,
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

fn module_kind(checker: &Checker, receiver: &Expr) -> Option<IsModule> {
    match receiver {
        Expr::Name(n) if n.id.as_str() == "self" => checker
            .module_method()
            .is_some()
            .then_some(IsModule { leaf: false }),
        Expr::Name(n) if loop_module_variable(checker, n.id.as_str()) => {
            Some(IsModule { leaf: false })
        }
        _ => KINDS.with_borrow(|k| k.get(checker, receiver)),
    }
}

fn is_module(checker: &Checker, receiver: &Expr) -> bool {
    module_kind(checker, receiver).is_some()
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    if let Some((target, value)) = flag_assignment(stmt) {
        check_flag(checker, stmt, target, value);
    }
    // The kind table is only consulted for flag assignments; files without any skip it.
    if !file_assigns_flag(checker)
        || !(checker.mentions("require_grad") || checker.mentions("training"))
    {
        return;
    }
    KINDS.with_borrow_mut(|k| k.observe(checker, stmt, classify));
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

fn clear(_checker: &mut Checker) {
    KINDS.with_borrow_mut(LocalKinds::clear);
}

//! Helpers shared by the deprecated-API rules: version gating, import and reference matching,
//! the file's torch alias, and argument-list edits.
use crate::checker::Checker;
use crate::fix::RawEdit;
use ruff_python_ast::{Expr, ExprCall, ExprContext, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};

/// Should a deprecation that took effect in `major.minor` be reported here? (Target torch at
/// least that version, and not inside a version-check / ImportError compatibility branch.)
pub(super) fn active(checker: &Checker, major: u32, minor: u32) -> bool {
    checker.torch_at_least(major, minor) && !checker.in_version_guard()
}

/// One imported name of an import statement: the qualified name it stands for and the range
/// of its alias in the statement.
pub(super) struct ImportedName {
    /// `torch.cuda.amp.autocast` for `from torch.cuda.amp import autocast`.
    pub qualified: String,
    /// The alias (`autocast`, `autocast as ac`).
    pub range: TextRange,
    /// The name as written after `import` (`autocast`).
    pub member: String,
    /// The name it is bound to in the file (`ac` for `autocast as ac`).
    pub bound: String,
}

/// The absolute names imported by an import statement (relative imports are skipped).
pub(super) fn imported_names(stmt: &Stmt) -> Vec<ImportedName> {
    match stmt {
        Stmt::Import(imp) => imp
            .names
            .iter()
            .map(|a| ImportedName {
                qualified: a.name.to_string(),
                range: a.range,
                member: a.name.to_string(),
                bound: a.asname.as_ref().unwrap_or(&a.name).to_string(),
            })
            .collect(),
        Stmt::ImportFrom(imp) if imp.level == 0 => {
            let Some(module) = &imp.module else {
                return Vec::new();
            };
            imp.names
                .iter()
                .filter(|a| a.name.as_str() != "*")
                .map(|a| ImportedName {
                    qualified: format!("{}.{}", module.as_str(), a.name.as_str()),
                    range: a.range,
                    member: a.name.to_string(),
                    bound: a.asname.as_ref().unwrap_or(&a.name).to_string(),
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

/// A `Name` or attribute chain read (not stored) in the code.
pub(super) fn is_load_reference(expr: &Expr) -> bool {
    match expr {
        Expr::Name(n) => matches!(n.ctx, ExprContext::Load),
        Expr::Attribute(a) => matches!(a.ctx, ExprContext::Load),
        _ => false,
    }
}

/// The call whose callee is `expr`, when `expr` is being visited as a callee.
pub(super) fn callee_of<'a>(checker: &Checker<'a>, expr: &Expr) -> Option<&'a ExprCall> {
    match checker.parent_expr()? {
        Expr::Call(call) if call.func.range() == expr.range() => Some(call),
        _ => None,
    }
}

/// Is `expr` the outermost expression of its attribute chain (not the `value` of an attribute)?
pub(super) fn is_outermost(checker: &Checker, expr: &Expr) -> bool {
    !matches!(checker.parent_expr(), Some(Expr::Attribute(a)) if a.value.range() == expr.range())
}

/// The name the file binds to the `torch` module, if any (`torch`, or an alias such as `th`).
pub(super) fn torch_alias(checker: &Checker) -> Option<&'static str> {
    ["torch", "th", "pt", "T", "tc"]
        .into_iter()
        .find(|c| checker.name_is(c, "torch"))
}

/// The range of the attribute name of an attribute reference (`sigmoid` in `F.sigmoid`).
pub(super) fn attr_range(expr: &Expr) -> Option<TextRange> {
    match expr {
        Expr::Attribute(a) => Some(a.attr.range),
        _ => None,
    }
}

/// The ranges of a call's arguments in source order (positional and keyword).
pub(super) fn argument_ranges(call: &ExprCall) -> Vec<TextRange> {
    call.arguments
        .iter_source_order()
        .map(|a| a.range())
        .collect()
}

/// An edit deleting the argument with range `target` from `call`, with the comma that
/// separates it from its neighbour. `None` when a comment would be lost.
pub(super) fn delete_argument(
    checker: &Checker,
    call: &ExprCall,
    target: TextRange,
) -> Option<RawEdit> {
    let ranges = argument_ranges(call);
    let i = ranges.iter().position(|r| *r == target)?;
    let range = if i > 0 {
        TextRange::new(ranges[i - 1].end(), target.end())
    } else if let Some(next) = ranges.get(1) {
        TextRange::new(target.start(), next.start())
    } else {
        TextRange::new(
            call.arguments.start() + TextSize::from(1),
            call.arguments.end() - TextSize::from(1),
        )
    };
    if checker.text(range).contains('#') {
        return None;
    }
    Some(RawEdit::delete(range))
}

/// Source text of an argument suitable as a receiver (`x` -> `x`, `a + b` -> `(a + b)`).
pub(super) fn as_receiver(checker: &Checker, expr: &Expr) -> String {
    let text = checker.text(expr.range());
    match expr {
        Expr::Name(_) | Expr::Attribute(_) | Expr::Call(_) | Expr::Subscript(_) => text.to_string(),
        _ => format!("({text})"),
    }
}

/// The qualified name of a loaded reference whose last name is one of `names` (cheap filter on
/// attributes before resolving; bare names are resolved through their import).
pub(super) fn reference_to(checker: &Checker, expr: &Expr, names: &[&str]) -> Option<String> {
    if !is_load_reference(expr) {
        return None;
    }
    if let Expr::Attribute(a) = expr {
        if !names.contains(&a.attr.as_str()) {
            return None;
        }
    }
    let q = checker.resolve(expr)?;
    let last = q.rsplit('.').next().unwrap_or(&q);
    names.contains(&last).then_some(q)
}

/// Per-file record of what simple names (`x = ...`) and `self.x = ...` attributes were last
/// bound to, as a small rule-defined kind. The checker has no per-rule state, so rules that
/// need "what was this name assigned" record assignments from their `stmt` hook and query
/// them from their `call`/`expr` hooks; the `end` hook must call [`Bindings::clear`].
///
/// Scopes: a plain name is looked up in the current function, then (unless it is a parameter
/// of that function) at module level; `self.x` is looked up in the enclosing class.
pub(super) mod bindings {
    use crate::checker::Checker;
    use ruff_python_ast::{Expr, Stmt};
    use ruff_text_size::Ranged;
    use rustc_hash::FxHashMap;
    use std::cell::RefCell;

    type Key = (&'static str, u32, String);

    #[derive(Default)]
    struct State {
        file: usize,
        kinds: FxHashMap<Key, u8>,
    }

    thread_local! {
        static STATE: RefCell<State> = RefCell::new(State::default());
    }

    fn file_key(checker: &Checker) -> usize {
        std::ptr::from_ref(checker.source) as usize ^ checker.source.text.len().rotate_left(17)
    }

    fn scope_of(checker: &Checker, target: &Expr) -> Option<(u32, String)> {
        match target {
            Expr::Name(n) => {
                let scope = checker.function().map_or(0, |f| f.start().to_u32() + 1);
                Some((scope, n.id.to_string()))
            }
            Expr::Attribute(a) if matches!(&*a.value, Expr::Name(n) if n.id.as_str() == "self") => {
                let class = checker.frame().method_of?;
                Some((
                    class.def.start().to_u32() + 1,
                    format!("self.{}", a.attr.as_str()),
                ))
            }
            _ => None,
        }
    }

    /// Record the kinds of the targets of an assignment statement (`classify` sees the value;
    /// `None` records "something else", which hides an earlier binding).
    pub(in super::super) fn record(
        checker: &Checker,
        stmt: &Stmt,
        classify: impl Fn(&Checker, &Expr) -> Option<u8>,
    ) {
        let (targets, value): (Vec<&Expr>, Option<&Expr>) = match stmt {
            Stmt::Assign(a) => (a.targets.iter().collect(), Some(&*a.value)),
            Stmt::AnnAssign(a) => (vec![&*a.target], a.value.as_deref()),
            _ => return,
        };
        let rule = checker.rule().name;
        let file = file_key(checker);
        // Classify before borrowing: the classifier may look up other bindings.
        let kind = value.and_then(|v| classify(checker, v)).unwrap_or(0);
        let scoped: Vec<(u32, String)> = targets
            .into_iter()
            .filter_map(|t| scope_of(checker, t))
            .collect();
        STATE.with(|s| {
            let mut s = s.borrow_mut();
            if s.file != file {
                s.kinds.clear();
                s.file = file;
            }
            for (scope, name) in scoped {
                s.kinds.insert((rule, scope, name), kind);
            }
        });
    }

    /// The kind a name (`x`) or `self.x` was last bound to, `None` when unknown.
    pub(in super::super) fn kind_of(checker: &Checker, expr: &Expr) -> Option<u8> {
        let (scope, name) = scope_of(checker, expr)?;
        let rule = checker.rule().name;
        let file = file_key(checker);
        STATE.with(|s| {
            let s = s.borrow();
            if s.file != file {
                return None;
            }
            if let Some(&k) = s.kinds.get(&(rule, scope, name.clone())) {
                return (k != 0).then_some(k);
            }
            // A name not assigned in this function: the module-level binding, unless the
            // function receives it as a parameter.
            if scope == 0 || name.starts_with("self.") {
                return None;
            }
            if checker
                .function()
                .is_some_and(|f| f.parameters.iter().any(|p| p.name().as_str() == name))
            {
                return None;
            }
            s.kinds.get(&(rule, 0, name)).copied().filter(|&k| k != 0)
        })
    }

    /// Forget this rule's records (call from the rule's `end` hook).
    pub(in super::super) fn clear(checker: &mut Checker) {
        let rule = checker.rule().name;
        STATE.with(|s| s.borrow_mut().kinds.retain(|k, _| k.0 != rule));
    }
}

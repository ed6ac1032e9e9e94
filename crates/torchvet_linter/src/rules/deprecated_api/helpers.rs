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

/// The new member name when `replacement` is a plain name in the same module as `qualified`
/// (`torch.ger` -> `torch.outer` gives `outer`); `None` for anything else.
pub(super) fn same_module_rename<'r>(qualified: &str, replacement: &'r str) -> Option<&'r str> {
    let (old_parent, _) = qualified.rsplit_once('.')?;
    let (new_parent, new) = replacement.rsplit_once('.')?;
    let plain = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_');
    (old_parent == new_parent && plain(new) && new.chars().next().is_some_and(|c| !c.is_numeric()))
        .then_some(new)
}

/// A fix renaming the member `name.member` of a `from M import old [as a]` statement to `new`,
/// when `M.new` is the same function under its new name:
/// - `from M import old as a` becomes `from M import new as a` (uses of `a` stay);
/// - `from M import old` becomes `from M import new`, and every read of `old` in the file
///   becomes `new`, provided the file binds `old` nowhere else and does not bind `new` at all.
///
/// `None` when those conditions do not hold (the finding is then reported without a fix).
pub(super) fn rename_imported_member(
    checker: &Checker,
    name: &ImportedName,
    new: &str,
) -> Option<crate::fix::RawFix> {
    let member_range = TextRange::at(name.range.start(), TextSize::of(name.member.as_str()));
    if checker.text(member_range) != name.member {
        return None;
    }
    let message = format!("Import `{new}` instead of `{}`", name.member);
    if name.bound != name.member {
        return Some(crate::fix::RawFix::safe(
            message,
            vec![RawEdit::replace(member_range, new)],
        ));
    }
    let mut uses = NameUses {
        old: &name.bound,
        new,
        loads: Vec::new(),
        bindings: 0,
        new_bound: false,
    };
    ruff_python_ast::visitor::Visitor::visit_body(&mut uses, &checker.module().body);
    // Exactly one binding of `old` (this import) and none of `new`.
    if uses.bindings != 1 || uses.new_bound {
        return None;
    }
    let mut edits = vec![RawEdit::replace(member_range, new)];
    edits.extend(uses.loads.into_iter().map(|r| RawEdit::replace(r, new)));
    Some(crate::fix::RawFix::safe(message, edits))
}

/// Reads and bindings of one name in a whole module (for [`rename_imported_member`]).
struct NameUses<'n> {
    old: &'n str,
    new: &'n str,
    loads: Vec<TextRange>,
    bindings: usize,
    new_bound: bool,
}

impl NameUses<'_> {
    fn binds(&mut self, id: &str) {
        if id == self.old {
            self.bindings += 1;
        }
        if id == self.new {
            self.new_bound = true;
        }
    }
}

impl<'a> ruff_python_ast::visitor::Visitor<'a> for NameUses<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(f) => {
                self.binds(f.name.as_str());
                for p in f.parameters.iter() {
                    self.binds(p.name().as_str());
                }
            }
            Stmt::ClassDef(c) => self.binds(c.name.as_str()),
            Stmt::Import(imp) => {
                for a in &imp.names {
                    let bound = a.asname.as_ref().map_or_else(
                        || a.name.as_str().split('.').next().unwrap_or(""),
                        |n| n.as_str(),
                    );
                    self.binds(bound);
                }
            }
            Stmt::ImportFrom(imp) => {
                for a in &imp.names {
                    if a.name.as_str() == "*" {
                        // A star import may bind anything.
                        self.bindings += 1;
                        self.new_bound = true;
                    }
                    self.binds(a.asname.as_ref().unwrap_or(&a.name).as_str());
                }
            }
            Stmt::Global(g) => g.names.iter().for_each(|n| self.binds(n.as_str())),
            Stmt::Nonlocal(g) => g.names.iter().for_each(|n| self.binds(n.as_str())),
            _ => {}
        }
        ruff_python_ast::visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Name(n) = expr {
            match n.ctx {
                ExprContext::Load if n.id.as_str() == self.old => self.loads.push(n.range),
                ExprContext::Load => {}
                _ => self.binds(n.id.as_str()),
            }
            if n.id.as_str() == self.new && matches!(n.ctx, ExprContext::Load) {
                // A read of `new` that is not ours: it must resolve to something else.
                self.new_bound = true;
            }
        }
        ruff_python_ast::visitor::walk_expr(self, expr);
    }

    fn visit_except_handler(&mut self, handler: &'a ruff_python_ast::ExceptHandler) {
        let ruff_python_ast::ExceptHandler::ExceptHandler(h) = handler;
        if let Some(n) = &h.name {
            self.binds(n.as_str());
        }
        ruff_python_ast::visitor::walk_except_handler(self, handler);
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

/// Note the names an import statement binds whose imported member is one of `names` (for
/// [`reference_to`]); the rule must also have `end: bindings::clear`.
pub(super) fn note_imports(checker: &Checker, stmt: &Stmt, names: &[&str]) {
    for n in imported_names(stmt) {
        let member = n.qualified.rsplit('.').next().unwrap_or(&n.qualified);
        if names.contains(&member) {
            bindings::note_import(checker, &n.bound);
        }
    }
}

/// The qualified name of a loaded reference whose last name is one of `names` (cheap filter on
/// attributes before resolving; bare names are resolved through their import).
#[inline]
pub(super) fn reference_to(checker: &Checker, expr: &Expr, names: &[&str]) -> Option<String> {
    // Inlined fast path: runs for every expression of every file.
    match expr {
        Expr::Attribute(a) if names.contains(&a.attr.as_str()) => {}
        Expr::Name(_) => {}
        _ => return None,
    }
    resolve_reference(checker, expr, names)
}

fn resolve_reference(checker: &Checker, expr: &Expr, names: &[&str]) -> Option<String> {
    if !is_load_reference(expr) {
        return None;
    }
    match expr {
        // `F` in `F.sigmoid`: the reference is the attribute, seen on its own.
        Expr::Name(n)
            if !bindings::imported(checker, n.id.as_str()) || !is_outermost(checker, expr) =>
        {
            return None
        }
        _ => {}
    }
    let q = checker.resolve(expr)?;
    let last = q.rsplit('.').next().unwrap_or(&q);
    if !names.contains(&last) || is_compat_fallback(checker, expr) {
        return None;
    }
    // A name the current function assigns is a local alias (`f = F.sigmoid`): the alias's
    // definition is the finding, not each use.
    if let (Expr::Name(n), Some(func)) = (expr, checker.function()) {
        if assigns_name(&func.body, n.id.as_str()) {
            return None;
        }
    }
    Some(q)
}

/// Does a suite (not nested functions or classes) assign `name` with `=`?
fn assigns_name(body: &[Stmt], name: &str) -> bool {
    body.iter().any(|s| match s {
        Stmt::Assign(a) => a
            .targets
            .iter()
            .any(|t| matches!(t, Expr::Name(n) if n.id.as_str() == name)),
        Stmt::If(x) => {
            assigns_name(&x.body, name)
                || x.elif_else_clauses
                    .iter()
                    .any(|c| assigns_name(&c.body, name))
        }
        Stmt::For(x) => assigns_name(&x.body, name) || assigns_name(&x.orelse, name),
        Stmt::While(x) => assigns_name(&x.body, name) || assigns_name(&x.orelse, name),
        Stmt::With(x) => assigns_name(&x.body, name),
        Stmt::Try(x) => {
            assigns_name(&x.body, name)
                || assigns_name(&x.orelse, name)
                || assigns_name(&x.finalbody, name)
                || x.handlers.iter().any(|h| {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    assigns_name(&h.body, name)
                })
        }
        _ => false,
    })
}

/// `f = <old API>` immediately followed by `if hasattr(...)` / a version test that rebinds `f`
/// to the new API: the old API is only the fallback of a compatibility shim.
pub(super) fn is_compat_fallback(checker: &Checker, expr: &Expr) -> bool {
    let Some(stmt @ Stmt::Assign(assign)) = checker.current_stmt() else {
        return false;
    };
    let [Expr::Name(target)] = assign.targets.as_slice() else {
        return false;
    };
    if assign.value.range() != expr.range() {
        return false;
    }
    let Some(func) = checker.function() else {
        return false;
    };
    let Some(next) = next_sibling(&func.body, stmt) else {
        return false;
    };
    let Stmt::If(branch) = next else { return false };
    let test = checker.text(branch.test.range());
    if !(test.contains("hasattr") || test.contains("version")) {
        return false;
    }
    branch.body.iter().any(|s| {
        matches!(s, Stmt::Assign(a) if matches!(a.targets.as_slice(), [Expr::Name(n)] if n.id == target.id))
    })
}

/// The statement after `stmt` in `body` or in one of its nested blocks.
fn next_sibling<'a>(body: &'a [Stmt], stmt: &Stmt) -> Option<&'a Stmt> {
    let range = stmt.range();
    for (i, s) in body.iter().enumerate() {
        if s.range() == range {
            return body.get(i + 1);
        }
        if !s.range().contains_range(range) {
            continue;
        }
        let blocks: Vec<&'a [Stmt]> = match s {
            Stmt::If(x) => std::iter::once(&x.body[..])
                .chain(x.elif_else_clauses.iter().map(|c| &c.body[..]))
                .collect(),
            Stmt::For(x) => vec![&x.body, &x.orelse],
            Stmt::While(x) => vec![&x.body, &x.orelse],
            Stmt::With(x) => vec![&x.body],
            Stmt::Try(x) => vec![&x.body, &x.orelse, &x.finalbody],
            _ => Vec::new(),
        };
        return blocks.into_iter().find_map(|b| next_sibling(b, stmt));
    }
    None
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
    use rustc_hash::{FxHashMap, FxHasher};
    use std::cell::RefCell;
    use std::hash::{Hash, Hasher};

    /// (rule, scope, hash of the bound name): no allocation per assignment or lookup.
    type Key = (&'static str, u32, u64);

    #[derive(Default)]
    struct State {
        file: usize,
        kinds: FxHashMap<Key, u8>,
        /// Names bound by imports the rule cares about (see [`note_import`]).
        imports: FxHashMap<&'static str, Vec<String>>,
    }

    impl State {
        fn reset_if_new(&mut self, file: usize) {
            if self.file != file {
                self.kinds.clear();
                self.imports.clear();
                self.file = file;
            }
        }
    }

    thread_local! {
        static STATE: RefCell<State> = RefCell::new(State::default());
    }

    fn file_key(checker: &Checker) -> usize {
        std::ptr::from_ref(checker.source) as usize ^ checker.source.text.len().rotate_left(17)
    }

    fn hash_name(is_self: bool, name: &str) -> u64 {
        let mut h = FxHasher::default();
        (is_self, name).hash(&mut h);
        h.finish()
    }

    /// The scope a target belongs to, the hash of its name, and the plain name (for a `Name`).
    fn scope_of<'e>(checker: &Checker, target: &'e Expr) -> Option<(u32, u64, Option<&'e str>)> {
        match target {
            Expr::Name(n) => {
                let scope = checker.function().map_or(0, |f| f.start().to_u32() + 1);
                Some((scope, hash_name(false, n.id.as_str()), Some(n.id.as_str())))
            }
            Expr::Attribute(a) if matches!(&*a.value, Expr::Name(n) if n.id.as_str() == "self") => {
                let class = checker.frame().method_of?;
                Some((
                    class.def.start().to_u32() + 1,
                    hash_name(true, a.attr.as_str()),
                    None,
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
        let (targets, value): (&[Expr], Option<&Expr>) = match stmt {
            Stmt::Assign(a) => (&a.targets, Some(&*a.value)),
            Stmt::AnnAssign(a) => (std::slice::from_ref(&*a.target), a.value.as_deref()),
            _ => return,
        };
        let rule = checker.rule().name;
        let file = file_key(checker);
        // Classify before borrowing: the classifier may look up other bindings.
        let kind = value.and_then(|v| classify(checker, v)).unwrap_or(0);
        STATE.with(|s| {
            let mut s = s.borrow_mut();
            s.reset_if_new(file);
            for t in targets {
                let Some((scope, hash, _)) = scope_of(checker, t) else {
                    continue;
                };
                if kind != 0 {
                    s.kinds.insert((rule, scope, hash), kind);
                } else {
                    s.kinds.remove(&(rule, scope, hash));
                    if scope != 0 && s.kinds.contains_key(&(rule, 0, hash)) {
                        // Hides a module-level binding of the same name.
                        s.kinds.insert((rule, scope, hash), 0);
                    }
                }
            }
        });
    }

    /// The kind a name (`x`) or `self.x` was last bound to, `None` when unknown.
    pub(in super::super) fn kind_of(checker: &Checker, expr: &Expr) -> Option<u8> {
        let (scope, hash, name) = scope_of(checker, expr)?;
        let rule = checker.rule().name;
        let file = file_key(checker);
        STATE.with(|s| {
            let s = s.borrow();
            if s.file != file || s.kinds.is_empty() {
                return None;
            }
            if let Some(&k) = s.kinds.get(&(rule, scope, hash)) {
                return (k != 0).then_some(k);
            }
            // A name not assigned in this function: the module-level binding, unless the
            // function receives it as a parameter.
            let name = name?;
            if scope == 0
                || checker
                    .function()
                    .is_some_and(|f| f.parameters.iter().any(|p| p.name().as_str() == name))
            {
                return None;
            }
            s.kinds.get(&(rule, 0, hash)).copied().filter(|&k| k != 0)
        })
    }

    /// Forget this rule's records (call from the rule's `end` hook).
    pub(in super::super) fn clear(checker: &mut Checker) {
        let rule = checker.rule().name;
        STATE.with(|s| {
            let mut s = s.borrow_mut();
            s.kinds.retain(|k, _| k.0 != rule);
            s.imports.remove(rule);
        });
    }

    /// Remember that the file binds `name` by an import the current rule cares about, so that
    /// bare-name references are resolved only for such names (a cheap filter for the common
    /// case of a file that imports none of them).
    pub(in super::super) fn note_import(checker: &Checker, name: &str) {
        let rule = checker.rule().name;
        let file = file_key(checker);
        STATE.with(|s| {
            let mut s = s.borrow_mut();
            s.reset_if_new(file);
            s.imports.entry(rule).or_default().push(name.to_string());
        });
    }

    /// Was `name` noted by [`note_import`] for the current rule in this file?
    pub(in super::super) fn imported(checker: &Checker, name: &str) -> bool {
        STATE.with(|s| {
            let s = s.borrow();
            // Most files import none of the names: answer before anything else.
            if s.imports.is_empty() || s.file != file_key(checker) {
                return false;
            }
            s.imports
                .get(checker.rule().name)
                .is_some_and(|v| v.iter().any(|n| n == name))
        })
    }
}

use super::helpers::{for_each_stmt, is_parameter_class};
use super::tensor_helpers::stmt_owns_lines;
use crate::checker::Checker;
use crate::fix::{newline, own_line_indent};
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprAttribute, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use rustc_hash::{FxHashMap, FxHashSet};
use std::cell::RefCell;
use torchvet_semantic::helpers;
use torchvet_semantic::iterables::{parameter_loop, ParameterLoop};
use torchvet_semantic::reaching::Def;

crate::declare_rule! {
    /// ## What it does
    /// Checks for in-place updates (`p -= lr * p.grad`, `p.add_(...)`, `w.copy_(...)`,
    /// `w[idx] = v`) of tensors that are leaves requiring grad: the variable of a
    /// `for p in model.parameters()` loop, an `nn.Parameter`, a module's `.weight`/`.bias`
    /// (written out or through a local alias, `w = self.fc.weight`), or a tensor created with
    /// `requires_grad=True`, outside `torch.no_grad()`.
    ///
    /// ## Why is this bad?
    /// Autograd refuses to modify a leaf that requires grad while it is recording: the update
    /// raises `RuntimeError: a leaf Variable that requires grad is being used in an in-place
    /// operation`. Manual SGD steps, EMA updates and weight surgery must run under
    /// `torch.no_grad()` (or act on `.data`, the legacy spelling). The rule stays silent inside
    /// `torch.no_grad()`/`inference_mode()` blocks and decorated functions, in helper
    /// functions called from such a block, and for models whose parameters were frozen with
    /// `requires_grad_(False)`, including a module frozen as it is built
    /// (`fused = nn.Conv2d(...).requires_grad_(False).to(device)`, then
    /// `fused.weight.copy_(w)`).
    ///
    /// ## Example
    /// ```python
    /// for p in model.parameters():
    ///     p -= lr * p.grad
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// with torch.no_grad():
    ///     for p in model.parameters():
    ///         p -= lr * p.grad
    /// ```
    ///
    /// ## Fix safety
    /// The fix wraps the update in `with torch.no_grad():` (the whole parameter loop, or the
    /// single statement). That is safe when the wrapped code only updates parameters: it makes
    /// the update run as intended instead of raising. When the loop also computes other values,
    /// those would stop being recorded by autograd too, so the fix is marked unsafe.
    ///
    /// ## References
    /// - [torch.no_grad](https://pytorch.org/docs/stable/generated/torch.no_grad.html)
    /// - [Autograd mechanics: in-place operations](https://pytorch.org/docs/stable/notes/autograd.html#in-place-operations-with-autograd)
    /// - [pytorch/examples#779](https://github.com/pytorch/examples/pull/779)
    pub(crate) static INPLACE_UPDATE_ON_LEAF_OUTSIDE_NO_GRAD = {
        name: "inplace-update-on-leaf-outside-no-grad",
        code: "TV033",
        group: Correctness,
        severity: Critical,
        title: "In-place update of a requires_grad leaf/parameter outside torch.no_grad()",
        autofix: Yes,
        preview: true,
        hooks: { stmt: check_stmt, call: check_call, end: check_end },
    };
}

/// In-place tensor methods that autograd rejects on a leaf requiring grad.
const INPLACE: &[&str] = &[
    "add_",
    "sub_",
    "mul_",
    "div_",
    "copy_",
    "zero_",
    "fill_",
    "clamp_",
    "clamp_min_",
    "clamp_max_",
    "uniform_",
    "normal_",
    "addcmul_",
    "addcdiv_",
    "lerp_",
    "neg_",
    "pow_",
    "sqrt_",
    "exp_",
    "masked_fill_",
    "index_fill_",
    "scatter_",
    "fill_diagonal_",
    "abs_",
];

/// A finding held until the end of the file (its function may be called under no_grad).
struct Pending {
    range: TextRange,
    message: String,
    related: (TextRange, String),
    function: Option<String>,
    /// Where the enclosing function starts (its id in the project model).
    function_start: Option<TextSize>,
    /// The function is a plain function or a method of a non-Module class: its callers
    /// must be visible in this file (they may run it under no_grad).
    needs_caller: bool,
    root: Option<String>,
    target: String,
    fix: Option<RawFix>,
    /// The project model says the module (or the target itself) was frozen before the update
    /// in this function (`fused = nn.Conv2d(...).requires_grad_(False).to(dev)`).
    frozen_before: bool,
}

#[derive(Default)]
struct State {
    pending: Vec<Pending>,
    /// Names of functions/methods called inside a no_grad region.
    /// Names of functions/methods called from another function or the module.
    called_elsewhere: FxHashSet<String>,
    /// Source text of modules whose parameters were frozen (`m.requires_grad_(False)`).
    frozen: FxHashSet<String>,
    /// Loops already given a fix.
    fixed_loops: FxHashSet<TextSize>,
    /// Leaf names per function (key: function start, `u32::MAX` for the module).
    leaves: FxHashMap<u32, FxHashMap<String, TextRange>>,
    /// `self.<attr>` parameters per class.
    class_params: FxHashMap<u32, FxHashMap<String, TextRange>>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let (target, op_range) = match stmt {
        Stmt::AugAssign(a) => (&*a.target, a.range()),
        Stmt::Assign(a) if a.targets.len() == 1 => match &a.targets[0] {
            Expr::Subscript(s) => (&*s.value, a.range()),
            _ => {
                observe_frozen_assign(checker, stmt);
                return;
            }
        },
        _ => return,
    };
    if checker.in_no_grad() {
        return;
    }
    let what = checker.text(op_range).to_string();
    consider(checker, target, op_range, &what, stmt);
}

fn check_call(checker: &mut Checker, call: &ExprCall, _q: Option<&str>) {
    let callee = match &*call.func {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Attribute(a) => Some(a.attr.as_str()),
        _ => None,
    };
    if let Some(c) = callee {
        let caller = checker.function().map(|f| f.name.as_str());
        if caller != Some(c) {
            STATE.with(|s| {
                let mut s = s.borrow_mut();
                if !s.called_elsewhere.contains(c) {
                    s.called_elsewhere.insert(c.to_string());
                }
            });
        }
    }
    if checker.in_no_grad() {
        return;
    }
    let Some((method, recv)) = helpers::method_call(call) else {
        return;
    };
    if method == "requires_grad_" {
        if call.arguments.args.first().and_then(helpers::is_truthy) == Some(false) {
            let root = match helpers::name_of(recv)
                .and_then(|n| parameter_loop(&checker.frame().loops, n))
            {
                Some(l) => loop_root(checker, l.stmt),
                None => Some(checker.text(recv.range()).to_string()),
            };
            if let Some(r) = root {
                STATE.with(|s| s.borrow_mut().frozen.insert(r));
            }
        }
        return;
    }
    if !INPLACE.contains(&method) {
        return;
    }
    let Some(stmt) = checker.current_stmt() else {
        return;
    };
    let what = checker.text(call.range()).to_string();
    consider(checker, recv, call.range(), &what, stmt);
}

/// `p.requires_grad = False` inside a parameter loop freezes that loop's model.
fn observe_frozen_assign(checker: &Checker, stmt: &Stmt) {
    let Stmt::Assign(a) = stmt else { return };
    let Expr::Attribute(attr) = &a.targets[0] else {
        return;
    };
    if attr.attr.as_str() != "requires_grad" || helpers::is_truthy(&a.value) != Some(false) {
        return;
    }
    if matches!(&*attr.value, Expr::Attribute(_)) {
        // `layer.weight.requires_grad = False`: that parameter is frozen.
        let frozen = checker.text(attr.value.range()).to_string();
        STATE.with(|s| s.borrow_mut().frozen.insert(frozen));
    }
    let Some(name) = helpers::name_of(&attr.value) else {
        return;
    };
    if let Some(l) = parameter_loop(&checker.frame().loops, name) {
        if let Some(r) = loop_root(checker, l.stmt) {
            STATE.with(|s| s.borrow_mut().frozen.insert(r));
        }
    }
}

/// The model a parameter loop iterates: `model` in `for p in model.parameters()`.
fn loop_root(checker: &Checker, stmt: &Stmt) -> Option<String> {
    let Stmt::For(f) = stmt else { return None };
    let Expr::Call(c) = &*f.iter else { return None };
    let (_, recv) = helpers::method_call(c)?;
    Some(checker.text(recv.range()).to_string())
}

fn consider(checker: &mut Checker, target: &Expr, op: TextRange, what: &str, stmt: &Stmt) {
    let target_text = checker.text(target.range()).to_string();
    let mut root = None;
    let mut param_loop = None;
    let related: (TextRange, String);
    let leaf_desc: String;
    match target {
        Expr::Name(n) => {
            let name = n.id.as_str();
            if let Some(l) = parameter_loop(&checker.frame().loops, name) {
                root = loop_root(checker, l.stmt);
                related = (l.header, format!("`{name}` ranges over parameters here"));
                leaf_desc = format!("the parameter `{name}`");
                param_loop = Some(l);
            } else if let Some(def) = leaf_binding(checker, name) {
                related = (
                    def,
                    format!("`{name}` is created as a leaf that requires grad here"),
                );
                leaf_desc = format!("the leaf tensor `{name}` (it requires grad)");
            } else if let Some(Def::Value(Expr::Attribute(a))) =
                checker.binding_at(name, op.start())
            {
                // `weights = self.input.weight`, then `weights[:, a:b] = 0.0`: the alias is
                // the parameter itself.
                let Some((rel, desc, r)) = parameter_attribute(checker, a) else {
                    return;
                };
                related = rel;
                leaf_desc = format!("{desc} (through `{name}`)");
                root = r;
            } else {
                return;
            }
        }
        Expr::Attribute(a) => {
            let Some((rel, desc, r)) = parameter_attribute(checker, a) else {
                return;
            };
            related = rel;
            leaf_desc = desc;
            root = r;
        }
        _ => return,
    }
    let message = format!(
        "`{}` modifies {leaf_desc} in place while autograd is recording: it raises \"a leaf Variable that requires grad is being used in an in-place operation\"; run it under `torch.no_grad()`",
        first_line(what)
    );
    let fix = make_fix(checker, stmt, param_loop);
    let function = checker.function().map(|f| f.name.to_string());
    let function_start = checker.function().map(|f| f.range().start());
    let needs_caller = function.is_some() && checker.module_method().is_none();
    let frozen_before = [root.as_deref(), Some(target_text.as_str())]
        .into_iter()
        .flatten()
        .any(|name| frozen_here(checker, name, op.start()));
    STATE.with(|s| {
        s.borrow_mut().pending.push(Pending {
            range: op,
            message,
            related,
            function,
            function_start,
            needs_caller,
            root,
            target: target_text,
            fix,
            frozen_before,
        })
    });
}

/// `self.<param>` (an `nn.Parameter` the class creates) or `<module>.weight|bias`: the note
/// pointing at where it is made, its description, and the module it belongs to.
fn parameter_attribute(
    checker: &mut Checker,
    a: &ExprAttribute,
) -> Option<((TextRange, String), String, Option<String>)> {
    let attr = a.attr.as_str();
    if helpers::name_of(&a.value) == Some("self") {
        let def = self_parameter(checker, attr)?;
        Some((
            (
                def,
                format!("`self.{attr}` is an `nn.Parameter` created here"),
            ),
            format!("the parameter `self.{attr}`"),
            None,
        ))
    } else if matches!(attr, "weight" | "bias")
        && torchvet_semantic::kinds::module_path(&a.value, &mut |e| checker.kind_of(e))
    {
        let module = checker.text(a.value.range()).to_string();
        Some((
            (
                a.value.range(),
                format!("`{module}` is a module: its `{attr}` is a parameter"),
            ),
            format!("the parameter `{}`", checker.text(a.range())),
            Some(module),
        ))
    } else {
        None
    }
}

/// Does the current function (or the module's code) freeze the module named `name` (dotted)
/// before `at`, by the project model (`m.requires_grad_(False)`, a parameter loop setting
/// `requires_grad = False`, or `m = nn.Conv2d(...).requires_grad_(False).to(dev)`)?
fn frozen_here(checker: &Checker, name: &str, at: TextSize) -> bool {
    let Some(p) = checker.project_or_file() else {
        return false;
    };
    let here = crate::rules::facts::current_function(checker, p);
    here.is_some_and(|f| p.model.frozen_before(f, name, at))
}

fn first_line(s: &str) -> String {
    match s.split_once('\n') {
        Some((a, _)) => format!("{}...", a.trim_end()),
        None => s.to_string(),
    }
}

/// A name bound (only) to `nn.Parameter(...)` / `torch.f(..., requires_grad=True)` /
/// `torch.f(...).requires_grad_()` in the current function (or module): where.
fn leaf_binding(checker: &Checker, name: &str) -> Option<TextRange> {
    let key = checker
        .function()
        .map_or(u32::MAX, |f| f.range().start().to_u32());
    let cached = STATE.with(|s| s.borrow().leaves.get(&key).map(|m| m.get(name).copied()));
    if let Some(hit) = cached {
        return hit;
    }
    let body: &[Stmt] = checker.scope_body();
    let mut leaves: FxHashMap<String, TextRange> = FxHashMap::default();
    let mut other: FxHashSet<String> = FxHashSet::default();
    for_each_stmt(body, &mut |s| {
        let (targets, value): (Vec<&Expr>, &Expr) = match s {
            Stmt::Assign(a) => (a.targets.iter().collect(), &a.value),
            Stmt::AnnAssign(a) => match &a.value {
                Some(v) => (vec![&a.target], v),
                None => return,
            },
            Stmt::AugAssign(_) => return,
            Stmt::For(f) => {
                helpers::for_each_bound_name(&f.target, &mut |n| {
                    other.insert(n.to_string());
                });
                return;
            }
            _ => return,
        };
        let leaf = is_leaf_expr(checker, value);
        for t in targets {
            match t {
                Expr::Name(n) if leaf => {
                    leaves.insert(n.id.to_string(), s.range());
                }
                t => helpers::for_each_bound_name(t, &mut |n| {
                    other.insert(n.to_string());
                }),
            }
        }
    });
    leaves.retain(|k, _| !other.contains(k));
    let hit = leaves.get(name).copied();
    STATE.with(|s| s.borrow_mut().leaves.insert(key, leaves));
    hit
}

fn is_leaf_expr(checker: &Checker, value: &Expr) -> bool {
    let Expr::Call(c) = value else { return false };
    if let Some(q) = checker.resolve(&c.func) {
        if is_parameter_class(&q) {
            // nn.Parameter(t, requires_grad=False) is not trainable.
            return helpers::argument(c, "requires_grad", 1).and_then(helpers::is_truthy)
                != Some(false);
        }
        return q.starts_with("torch.")
            && helpers::keyword(c, "requires_grad").and_then(helpers::is_truthy) == Some(true);
    }
    if let Some(("requires_grad_", inner)) = helpers::method_call(c) {
        let on = c.arguments.args.first().and_then(helpers::is_truthy) != Some(false);
        let Expr::Call(ic) = inner else { return false };
        return on
            && checker
                .resolve(&ic.func)
                .is_some_and(|q| q.starts_with("torch."));
    }
    false
}

/// `self.<attr>` assigned an `nn.Parameter` in the enclosing Module class: where.
fn self_parameter(checker: &Checker, attr: &str) -> Option<TextRange> {
    let class = checker.module_method()?;
    let key = class.def.range().start().to_u32();
    let cached = STATE.with(|s| {
        s.borrow()
            .class_params
            .get(&key)
            .map(|m| m.get(attr).copied())
    });
    if let Some(hit) = cached {
        return hit;
    }
    let mut params: FxHashMap<String, TextRange> = FxHashMap::default();
    let mut other: FxHashSet<String> = FxHashSet::default();
    for s in &class.def.body {
        let Stmt::FunctionDef(f) = s else { continue };
        for (name, value, stmt) in super::helpers::self_assignments(&f.body) {
            let is_param = matches!(value, Expr::Call(c) if checker.resolve(&c.func).is_some_and(|q| is_parameter_class(&q)))
                && is_leaf_expr(checker, value);
            if is_param {
                params.insert(name.to_string(), stmt.range());
            } else {
                other.insert(name.to_string());
            }
        }
    }
    params.retain(|k, _| !other.contains(k));
    let hit = params.get(attr).copied();
    STATE.with(|s| s.borrow_mut().class_params.insert(key, params));
    hit
}

/// Wrap the parameter loop (or the statement) in `with torch.no_grad():`.
fn make_fix(checker: &Checker, stmt: &Stmt, param_loop: Option<ParameterLoop>) -> Option<RawFix> {
    let (wrapped, safe) = match param_loop {
        Some(l) => {
            let Stmt::For(f) = l.stmt else { return None };
            let simple = f.orelse.is_empty() && f.body.iter().all(is_update_stmt);
            (l.stmt, simple)
        }
        None => (stmt, is_update_stmt(stmt)),
    };
    if !stmt_owns_lines(checker, wrapped) {
        return None;
    }
    let first_for_loop = STATE.with(|s| s.borrow_mut().fixed_loops.insert(wrapped.start()));
    if !first_for_loop {
        return None;
    }
    let indent = own_line_indent(checker, wrapped.start())?;
    let nl = newline(checker);
    let step = if indent.contains('\t') { "\t" } else { "    " };
    let (torch, import) = checker.import_module("torch");
    let line_start = wrapped.start() - TextSize::of(indent);
    let original = checker.text(TextRange::new(line_start, wrapped.end()));
    let mut body = String::new();
    for (i, line) in original.split('\n').enumerate() {
        if i > 0 {
            body.push('\n');
        }
        if !line.trim().is_empty() {
            body.push_str(step);
        }
        body.push_str(line);
    }
    let text = format!("{indent}with {torch}.no_grad():{nl}{body}");
    let mut edits = vec![RawEdit::replace(
        TextRange::new(line_start, wrapped.end()),
        text,
    )];
    edits.extend(import);
    let msg = format!("Wrap the update in `with {torch}.no_grad():`");
    Some(if safe {
        RawFix::safe(msg, edits)
    } else {
        RawFix::unsafe_edit(msg, edits)
    })
}

/// A statement that only updates values (no computation autograd should record).
fn is_update_stmt(s: &Stmt) -> bool {
    match s {
        Stmt::AugAssign(_) | Stmt::Continue(_) | Stmt::Pass(_) => true,
        Stmt::Expr(e) => {
            matches!(&*e.value, Expr::Call(c) if helpers::method_call(c).is_some_and(|(m, _)| m.ends_with('_')))
        }
        Stmt::Assign(a) => a.targets.iter().all(|t| matches!(t, Expr::Subscript(_))),
        Stmt::If(i) => {
            i.body.iter().all(is_update_stmt)
                && i.elif_else_clauses
                    .iter()
                    .all(|c| c.body.iter().all(is_update_stmt))
        }
        _ => false,
    }
}

/// This file or another calls a function or method of this name with autograd off
/// (`with torch.no_grad(): init_weights(m)`, or `unit.load_from(w)` on a `named_children()`
/// variable the model cannot type): the helper is meant to run there.
fn called_in_no_grad(checker: &Checker, name: &str) -> bool {
    checker
        .project_or_file()
        .is_some_and(|p| p.model.called_in_no_grad(name))
}

fn check_end(checker: &mut Checker) {
    let state = STATE.with(|s| std::mem::take(&mut *s.borrow_mut()));
    for p in state.pending {
        if p.function_start
            .is_some_and(|at| checker.called_only_without_grad(at))
            || p.function
                .as_deref()
                .is_some_and(|f| f != "forward" && called_in_no_grad(checker, f))
        {
            continue;
        }
        if p.needs_caller
            && !p
                .function
                .as_ref()
                .is_some_and(|f| state.called_elsewhere.contains(f))
        {
            continue;
        }
        if p.frozen_before || state.frozen.contains(&p.target) {
            continue;
        }
        if p.root.as_ref().is_some_and(|r| state.frozen.contains(r)) {
            continue;
        }
        let d = checker.report(p.range, p.message);
        d.add_related(p.related.0, p.related.1);
        if let Some(fix) = p.fix {
            d.set_fix(fix);
        }
    }
}

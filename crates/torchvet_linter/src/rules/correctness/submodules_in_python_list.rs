use super::helpers::{constructs_module, for_each_stmt, is_parameter_class, nn_prefix};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers;
use torchvet_semantic::reaching::Def;

crate::declare_rule! {
    /// ## What it does
    /// Checks for sub-modules or Parameters kept in a plain Python `list`, `tuple` or `dict`
    /// attribute of an `nn.Module` (`self.layers = [nn.Linear(d, d) for _ in range(n)]`, or
    /// `self.layers = []` or `list()` filled with `append`: of a module built there, of a name
    /// bound to one, `conv = nn.Conv1d(...)`, or of a value that `isinstance(layer, nn.Module)`
    /// lets through; a `self.layers = None` placeholder before does not count as another
    /// value, and a name also stored on `self` or registered by hand is registered). A dict that only serves to pick
    /// one entry, which the module then registers under another attribute
    /// (`self.backbone = self.resnet_dict[name]`), is not reported: the entries left out are
    /// unused.
    ///
    /// ## Why is this bad?
    /// `nn.Module` only registers sub-modules and Parameters assigned directly as attributes
    /// or held by `nn.ModuleList`/`ModuleDict`/`ParameterList`/`ParameterDict`. Inside a
    /// plain container they are invisible: `model.parameters()` skips them (the optimizer
    /// never trains them), `model.to(device)` does not move them, `state_dict()` does not save
    /// them, and `model.eval()` does not reach their Dropout/BatchNorm layers.
    ///
    /// ## Example
    /// ```python
    /// self.layers = [nn.Linear(d, d) for _ in range(n)]
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// self.layers = nn.ModuleList([nn.Linear(d, d) for _ in range(n)])
    /// ```
    ///
    /// ## Fix safety
    /// The fix wraps the container in `nn.ModuleList`/`ModuleDict`/`ParameterList`/
    /// `ParameterDict` (or replaces `[]` with `nn.ModuleList()`). The parameters then start
    /// being trained and saved: results change and older checkpoints miss the new keys, so
    /// the fix is unsafe. A 1-tuple made by a stray trailing comma (`self.main =
    /// nn.Sequential(...),`) is reported as such, and its fix removes the comma (unsafe for
    /// the same reason).
    ///
    /// ## References
    /// - [torch.nn.ModuleList](https://pytorch.org/docs/stable/generated/torch.nn.ModuleList.html)
    /// - [torch.nn.ParameterList](https://pytorch.org/docs/stable/generated/torch.nn.ParameterList.html)
    /// - [pytorch issue 59925](https://github.com/pytorch/pytorch/issues/59925)
    /// - [pytorch issue 1053](https://github.com/pytorch/pytorch/issues/1053)
    pub(crate) static SUBMODULES_IN_PYTHON_LIST = {
        name: "submodules-in-python-list",
        code: "TV004",
        group: Correctness,
        severity: Critical,
        title: "Sub-modules / Parameters stored in a plain list or dict attribute (not registered)",
        autofix: Yes,
        hooks: { stmt: check_stmt },
    };
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Element {
    Module,
    Parameter,
}

fn element(checker: &Checker, expr: &Expr) -> Option<Element> {
    let Expr::Call(call) = expr else { return None };
    if let Some(q) = checker.resolve(&call.func) {
        if is_parameter_class(&q) {
            return Some(Element::Parameter);
        }
        // A layer without parameters, buffers or train/eval behaviour (`nn.ReLU()`,
        // `nn.MSELoss()`, `nn.CrossEntropyLoss()` without a `weight=` tensor): leaving it
        // unregistered loses nothing.
        if q.starts_with("torch.nn.")
            && torchvet_semantic::is_parameter_free_construction(helpers::last_segment(&q), call)
            && torchvet_semantic::mode_layer(&q).is_none()
        {
            return None;
        }
    }
    // A project module class that holds no state (a wrapper around `nn.AvgPool1d`):
    // registering it would change nothing either.
    if let Expr::Name(n) = &*call.func {
        if let Some(p) = checker.project_or_file() {
            let id = p.model.file(p.file).class(n.id.as_str()).map(|index| {
                torchvet_semantic::project::ClassId {
                    file: p.file,
                    index,
                }
            });
            if id.is_some_and(|c| p.model.is_parameter_free_class(c)) {
                return None;
            }
        }
    }
    constructs_module(checker, call).then_some(Element::Module)
}

/// The registrable elements of a container literal, and whether it is dict-like.
fn container_elements(checker: &Checker, value: &Expr) -> Option<(Vec<Element>, bool)> {
    let (elements, dict): (Vec<&Expr>, bool) = match value {
        Expr::List(l) => (l.elts.iter().collect(), false),
        Expr::Tuple(t) => (t.elts.iter().collect(), false),
        Expr::ListComp(c) => (vec![&*c.elt], false),
        Expr::Dict(d) => (d.items.iter().map(|i| &i.value).collect(), true),
        Expr::DictComp(c) => (vec![&*c.value], true),
        _ => return None,
    };
    let generators: &[ruff_python_ast::Comprehension] = match value {
        Expr::ListComp(c) => &c.generators,
        Expr::DictComp(c) => &c.generators,
        _ => &[],
    };
    let found: Vec<Element> = elements
        .iter()
        .filter(|e| !wraps_registered(checker, e, generators))
        .filter_map(|e| element(checker, e))
        .collect();
    Some((found, dict))
}

/// Is `expr` a module container (`nn.Sequential(...)`, `nn.ModuleList(...)`) built only from
/// sub-modules that are already registered under an attribute of `self`
/// (`[nn.Sequential(layer) for layer in self.vgg_feature]`,
/// `nn.Sequential(*self.features[:4])`)? The container holds no parameters of its own and
/// every layer in it is reached through the registered attribute: leaving it out of the
/// registry loses nothing.
fn wraps_registered(
    checker: &Checker,
    expr: &Expr,
    generators: &[ruff_python_ast::Comprehension],
) -> bool {
    let Expr::Call(call) = expr else {
        return false;
    };
    let container = checker.resolve(&call.func).is_some_and(|q| {
        matches!(
            q.as_str(),
            "torch.nn.Sequential"
                | "torch.nn.ModuleList"
                | "torch.nn.modules.container.Sequential"
                | "torch.nn.modules.container.ModuleList"
        )
    });
    let Some(func) = checker.function() else {
        return false;
    };
    container
        && call.arguments.keywords.is_empty()
        && !call.arguments.args.is_empty()
        && call
            .arguments
            .args
            .iter()
            .all(|a| from_registered(&func.body, a, generators, 0))
}

/// Does `expr` name sub-modules reached from a registered attribute of `self`: the attribute
/// (`self.features`), a part of it (`self.features[3]`, `self.features[:4]`,
/// `*self.features`, `self.backbone.layer1`, `self.features.children()`), or a comprehension
/// variable running over one (`for layer in self.features`, `enumerate(...)` of it)?
fn from_registered(
    body: &[Stmt],
    expr: &Expr,
    generators: &[ruff_python_ast::Comprehension],
    depth: u8,
) -> bool {
    if depth > 6 {
        return false;
    }
    let again = |e: &Expr| from_registered(body, e, generators, depth + 1);
    match expr {
        Expr::Starred(s) => again(&s.value),
        Expr::Subscript(s) => again(&s.value),
        Expr::Attribute(a) => match helpers::self_attribute(expr) {
            Some(attr) => registered_attribute(body, attr),
            None => again(&a.value),
        },
        Expr::Call(c) => match helpers::method_call(c) {
            Some(("children" | "modules", recv)) if c.arguments.is_empty() => again(recv),
            _ => match (&*c.func, &c.arguments.args[..]) {
                (Expr::Name(f), [inner])
                    if matches!(f.id.as_str(), "list" | "tuple" | "enumerate" | "iter") =>
                {
                    again(inner)
                }
                _ => false,
            },
        },
        Expr::Name(n) => generators.iter().any(|g| {
            let binds = match &g.target {
                Expr::Name(t) => t.id == n.id,
                // `for i, layer in enumerate(self.features)`: the second name.
                Expr::Tuple(t) => {
                    t.elts.len() == 2
                        && helpers::name_of(&t.elts[1]) == Some(n.id.as_str())
                        && matches!(&g.iter, Expr::Call(c) if matches!(&*c.func, Expr::Name(f) if f.id.as_str() == "enumerate"))
                }
                _ => false,
            };
            binds && again(&g.iter)
        }),
        _ => false,
    }
}

/// Is `self.<attr>` registered by this method: every assignment to it stores something other
/// than a plain container literal (`self.features = vgg.features`, `nn.Sequential(...)`)?
fn registered_attribute(body: &[Stmt], attr: &str) -> bool {
    let mut assigned = false;
    let mut plain = false;
    for_each_stmt(body, &mut |s| {
        let (targets, value): (&[Expr], Option<&Expr>) = match s {
            Stmt::Assign(a) => (a.targets.as_slice(), Some(&a.value)),
            Stmt::AnnAssign(a) => (std::slice::from_ref(&*a.target), a.value.as_deref()),
            _ => return,
        };
        if !targets
            .iter()
            .any(|t| helpers::self_attribute(t) == Some(attr))
        {
            return;
        }
        assigned = true;
        if value.is_none_or(|v| {
            matches!(
                v,
                Expr::List(_)
                    | Expr::Tuple(_)
                    | Expr::ListComp(_)
                    | Expr::Dict(_)
                    | Expr::DictComp(_)
                    | Expr::NoneLiteral(_)
            )
        }) {
            plain = true;
        }
    });
    assigned && !plain
}

/// Facts about `self.<name>` in the function body.
#[derive(Default)]
struct Usage {
    assignments: usize,
    wrapped: bool,
    appended: Vec<Element>,
}

/// The element a name appended to the list holds: the module its one reaching binding builds
/// (`conv = nn.Conv1d(...)`, then `self.convs.append(conv)`), or a module by an enclosing
/// `if isinstance(layer, nn.Module):` (a constructor that takes layers or their configs). A
/// name also stored under an attribute of `self` or registered by hand is registered that way.
fn named_element(checker: &Checker, body: &[Stmt], n: &ast::ExprName) -> Option<Element> {
    let name = n.id.as_str();
    if registered_elsewhere(body, name) {
        return None;
    }
    match checker.binding_at(name, n.start()) {
        Some(Def::Value(v @ Expr::Call(_))) => element(checker, v),
        _ => isinstance_module_guard(checker, body, name, n.range()).then_some(Element::Module),
    }
}

/// Is `name` assigned to an attribute of `self` (`self.conv = conv`) or handed to
/// `setattr`, `add_module` or `register_module` in the body?
fn registered_elsewhere(body: &[Stmt], name: &str) -> bool {
    let mut found = false;
    for_each_stmt(body, &mut |s| match s {
        Stmt::Assign(a) if helpers::name_of(&a.value) == Some(name) => {
            found |= a
                .targets
                .iter()
                .any(|t| helpers::self_attribute(t).is_some());
        }
        Stmt::Expr(e) => {
            if let Expr::Call(c) = &*e.value {
                // `setattr(self, f"stage{i}", stage)`, `self.add_module(f"s{i}", stage)`
                if helpers::name_of(&c.func) == Some("setattr")
                    || matches!(
                        helpers::method_call(c),
                        Some(("add_module" | "register_module", _))
                    )
                {
                    found |= c
                        .arguments
                        .args
                        .iter()
                        .any(|a| helpers::name_of(a) == Some(name));
                }
            }
        }
        _ => {}
    });
    found
}

/// Is `at` inside the body of an `if isinstance(name, nn.Module):` of `body`?
fn isinstance_module_guard(checker: &Checker, body: &[Stmt], name: &str, at: TextRange) -> bool {
    let mut found = false;
    for_each_stmt(body, &mut |s| {
        let Stmt::If(i) = s else { return };
        let Expr::Call(c) = &*i.test else { return };
        let guarded = helpers::name_of(&c.func) == Some("isinstance")
            && matches!(&c.arguments.args[..], [obj, class]
                if helpers::name_of(obj) == Some(name)
                    && checker.resolves_to(class, &["torch.nn.Module", "torch.nn.modules.module.Module"]));
        found |= guarded
            && i.body
                .first()
                .zip(i.body.last())
                .is_some_and(|(a, b)| TextRange::new(a.start(), b.end()).contains_range(at));
    });
    found
}

fn usage(checker: &Checker, body: &[Stmt], name: &str) -> Usage {
    struct Finder<'c, 'a, 'n> {
        checker: &'c Checker<'a>,
        body: &'n [Stmt],
        name: &'n str,
        out: Usage,
    }
    impl<'x> Visitor<'x> for Finder<'_, '_, '_> {
        fn visit_expr(&mut self, expr: &'x Expr) {
            if let Expr::Call(call) = expr {
                let registers = match helpers::method_call(call) {
                    Some(("add_module" | "register_module" | "register_parameter", _)) => true,
                    Some(("append" | "extend" | "insert", recv))
                        if helpers::self_attribute(recv) == Some(self.name) =>
                    {
                        for arg in &call.arguments.args {
                            match arg {
                                Expr::List(_) | Expr::Tuple(_) | Expr::ListComp(_) => {
                                    if let Some((found, _)) = container_elements(self.checker, arg)
                                    {
                                        self.out.appended.extend(found);
                                    }
                                }
                                Expr::Name(n) => self.out.appended.extend(named_element(
                                    self.checker,
                                    self.body,
                                    n,
                                )),
                                e => self.out.appended.extend(element(self.checker, e)),
                            }
                        }
                        false
                    }
                    _ => false,
                };
                let mentions_self_x = call.arguments.args.iter().any(|a| {
                    let a = match a {
                        Expr::Starred(s) => &*s.value,
                        a => a,
                    };
                    helpers::self_attribute(a) == Some(self.name)
                });
                if registers || mentions_self_x {
                    // Wrapped (`nn.ModuleList(self.x)`), registered, or handed to something
                    // that may register it: stay silent.
                    self.out.wrapped = true;
                }
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut out = Usage::default();
    for_each_stmt(body, &mut |s| {
        // `self.layers = None` (a placeholder before the list) holds nothing to register.
        let targets: &[Expr] = match s {
            Stmt::Assign(a) if a.value.is_none_literal_expr() => &[],
            Stmt::AnnAssign(a) if a.value.as_deref().is_some_and(Expr::is_none_literal_expr) => &[],
            Stmt::Assign(a) => a.targets.as_slice(),
            Stmt::AugAssign(a) => std::slice::from_ref(&*a.target),
            Stmt::AnnAssign(a) => std::slice::from_ref(&*a.target),
            _ => &[],
        };
        out.assignments += targets
            .iter()
            .filter(|t| helpers::self_attribute(t) == Some(name))
            .count();
    });
    let mut f = Finder {
        checker,
        body,
        name,
        out,
    };
    f.visit_body(body);
    f.out
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::Assign(assign) = stmt else { return };
    let [target] = assign.targets.as_slice() else {
        return;
    };
    let Some(name) = helpers::self_attribute(target) else {
        return;
    };
    let value = &*assign.value;
    // `self.layers = list()`: an empty list like `[]`, filled by `append` below.
    let list_call = matches!(value, Expr::Call(c)
        if c.arguments.is_empty()
            && helpers::name_of(&c.func) == Some("list")
            && super::model_helpers::builtin(checker, "list"));
    if !(list_call
        || matches!(
            value,
            Expr::List(_) | Expr::Tuple(_) | Expr::ListComp(_) | Expr::Dict(_) | Expr::DictComp(_)
        ))
        || checker.module_method().is_none()
    {
        return;
    }
    let Some(func) = checker.function() else {
        return;
    };
    let Some((mut found, dict)) = (if list_call {
        Some((Vec::new(), false))
    } else {
        container_elements(checker, value)
    }) else {
        return;
    };
    let empty_list = list_call || matches!(value, Expr::List(l) if l.elts.is_empty());
    let u = usage(checker, &func.body, name);
    if u.wrapped || u.assignments > 1 {
        return;
    }
    // A table of candidates of which one is picked and registered under another attribute
    // (`self.backbone = self._get_basemodel(name)` reading `self.resnet_dict[name]`).
    if dict
        && checker
            .module_method()
            .is_some_and(|c| torchvet_semantic::attr_is_selection_table(c.def, name))
    {
        return;
    }
    if empty_list {
        found = u.appended;
    }
    if found.is_empty() {
        return;
    }
    let params_only = found.iter().all(|e| *e == Element::Parameter);
    let modules_only = found.iter().all(|e| *e == Element::Module);
    let (what, wrapper) = match (params_only, dict) {
        (true, false) => ("Parameters", "ParameterList"),
        (true, true) => ("Parameters", "ParameterDict"),
        (false, false) => ("sub-modules", "ModuleList"),
        (false, true) => ("sub-modules", "ModuleDict"),
    };
    let container = if dict {
        "dict"
    } else if matches!(value, Expr::Tuple(_)) {
        "tuple"
    } else {
        "list"
    };
    let fix = nn_prefix(checker).and_then(|nn| {
        if !(params_only || modules_only) {
            return None;
        }
        if empty_list {
            return Some(RawEdit::replace(value.range(), format!("{nn}{wrapper}()")));
        }
        match value {
            Expr::Dict(d)
                if !d.items.iter().all(|i| {
                    i.key
                        .as_ref()
                        .is_some_and(|k| helpers::str_value(k).is_some())
                }) =>
            {
                None
            }
            Expr::DictComp(_) => None,
            _ => Some(RawEdit::replace(
                value.range(),
                format!("{nn}{wrapper}({})", checker.text(value.range())),
            )),
        }
    });
    // `self.main = nn.Sequential(...),`: a stray trailing comma makes a 1-tuple of the one
    // module meant; removing the comma is the fix.
    if let Expr::Tuple(t) = value {
        if let [only] = &t.elts[..] {
            if !t.parenthesized && !matches!(only, Expr::Starred(_)) {
                checker
                    .report(
                        target.range(),
                        format!("`self.{name}` is a 1-tuple (the trailing comma after the value makes one): the module in it is not registered, so model.parameters(), .to(), .eval() and state_dict() skip it; remove the comma"),
                    )
                    .set_fix(RawFix::unsafe_edit(
                        "Remove the trailing comma",
                        vec![RawEdit::delete(TextRange::new(only.end(), t.end()))],
                    ));
                return;
            }
        }
    }
    let diag = checker.report(
        target.range(),
        format!("`self.{name}` is a plain {container} of {what}: they are not registered, so model.parameters(), .to(), .eval() and state_dict() skip them; use nn.{wrapper}"),
    );
    if let Some(edit) = fix {
        diag.set_fix(RawFix::unsafe_edit(
            format!("Wrap in `nn.{wrapper}`"),
            vec![edit],
        ));
    }
}

//! Light, local value evidence shared by the rules of the `style`, `distributed` and
//! `data-loading` groups: what a name was last bound to in the current function (or module),
//! whether an expression is evidently an `nn.Module` (and which wrapper), a tensor, or a
//! `DataLoader`, and a small evaluator of literal-ish boolean/integer expressions.
//!
//! Everything here is "evidence or silence": when a fact cannot be established from the code
//! at hand the helpers answer `None` and the rules stay silent. Which binding of a name
//! reaches a use is the semantic layer's answer (`Checker::binding_at`, [`frame_binding`]).
use crate::checker::Checker;
use ruff_python_ast::{self as ast, BoolOp, CmpOp, Expr, Stmt, UnaryOp};
use ruff_text_size::{Ranged, TextSize};
use torchvet_semantic::helpers;
use torchvet_semantic::helpers::binds;

/// The code a name lookup searches: a function body (with its parameters) or the module.
#[derive(Clone, Copy)]
pub(crate) struct Env<'b> {
    /// Statements of the frame.
    pub body: &'b [Stmt],
    /// The function's parameters (`None` at module level).
    pub params: Option<&'b ast::Parameters>,
    /// The class whose method this is, when it is an nn.Module method.
    pub module_class: Option<&'b ast::StmtClassDef>,
}

/// Run `f` with the frame of the code being visited: the current function, or the module.
pub(crate) fn with_frame<R>(checker: &Checker, f: impl FnOnce(Env<'_>) -> R) -> R {
    if let Some(func) = checker.function() {
        let env = Env {
            body: &func.body,
            params: Some(&func.parameters),
            module_class: checker.module_method().map(|c| c.def),
        };
        return f(env);
    }
    let env = Env {
        body: &checker.module().body,
        params: None,
        module_class: None,
    };
    f(env)
}

/// How a name got its value: the semantic layer's [`Def`] (`Value`, `ForIter`, `CompIter`,
/// `Other`).
pub(crate) use torchvet_semantic::reaching::Def as Bound;
use torchvet_semantic::reaching::{binds_by_other_stmt, target_index};

/// The binding of `name` that reaches `at` in a frame, when exactly one does. Control flow is
/// followed coarsely: the branches of an `if`/`try`/`match` are alternatives (only the branch
/// holding `at` counts when `at` is inside one), and a loop body may run zero times. Loop-carried
/// bindings (from a later iteration) are ignored.
pub(crate) fn frame_binding<'b>(env: Env<'b>, name: &str, at: TextSize) -> Option<Bound<'b>> {
    let mut reaching = frame_bindings(env, name, at);
    if reaching.len() == 1 {
        reaching.pop()
    } else {
        None
    }
}

/// Every binding of `name` that may reach `at` in a frame (see [`frame_binding`]).
pub(crate) fn frame_bindings<'b>(env: Env<'b>, name: &str, at: TextSize) -> Vec<Bound<'b>> {
    torchvet_semantic::reaching::bindings_at(env.body, env.params, name, at)
}

/// What kind of `nn.Module` an expression evidently is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ModuleKind {
    /// A plain module (nn constructor, same-file Module class, model builder, `self`).
    Plain,
    /// `nn.DataParallel(...)`.
    DataParallel,
    /// `DistributedDataParallel(...)`.
    Ddp,
    /// `FullyShardedDataParallel(...)`.
    Fsdp,
    /// `torch.compile(...)`.
    Compiled,
}

/// The wrapper kind a qualified callee name constructs, if any.
pub(crate) fn wrapper_kind(q: &str) -> Option<ModuleKind> {
    Some(match q {
        "torch.nn.DataParallel"
        | "torch.nn.parallel.DataParallel"
        | "torch.nn.parallel.data_parallel.DataParallel" => ModuleKind::DataParallel,
        "torch.nn.parallel.DistributedDataParallel"
        | "torch.nn.parallel.distributed.DistributedDataParallel" => ModuleKind::Ddp,
        "torch.distributed.fsdp.FullyShardedDataParallel"
        | "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel" => {
            ModuleKind::Fsdp
        }
        "torch.compile" => ModuleKind::Compiled,
        _ => return None,
    })
}

/// Module methods that return the module itself.
pub(crate) fn returns_self(method: &str) -> bool {
    matches!(
        method,
        "to" | "cuda"
            | "cpu"
            | "train"
            | "eval"
            | "float"
            | "half"
            | "double"
            | "bfloat16"
            | "requires_grad_"
            | "to_empty"
            | "share_memory"
            | "xpu"
            | "mps"
            | "type"
    )
}

/// What the project model knows where [`module_kind`] (the file's syntax) does not tell: a
/// name or an attribute that holds a module (a parameter every call site passes a module,
/// `self.<attr>` of any class built from a project module class, a local bound through a
/// registry: `model = MODELS.get(name); model = model()`, `vae.decoder` of a project VAE).
pub(crate) fn project_module(checker: &mut Checker, expr: &Expr) -> bool {
    let plain = matches!(expr, Expr::Name(_)) || attribute_chain(expr);
    plain && checker.value_kind(expr) == torchvet_semantic::kinds::Kind::Module
}

/// `self.<attr>`, `vae.decoder`, `self.model.backbone`: attributes over a name, as far down
/// as the model resolves them.
fn attribute_chain(expr: &Expr) -> bool {
    match expr {
        Expr::Attribute(a) => matches!(&*a.value, Expr::Name(_)) || attribute_chain(&a.value),
        _ => false,
    }
}

/// The module kind of an expression, from local evidence only.
pub(crate) fn module_kind(checker: &Checker, env: Env<'_>, expr: &Expr) -> Option<ModuleKind> {
    module_kind_at(checker, env, expr, 0)
}

fn module_kind_at(checker: &Checker, env: Env<'_>, expr: &Expr, depth: u32) -> Option<ModuleKind> {
    if depth > 4 {
        return None;
    }
    match expr {
        Expr::Call(call) => {
            if let Some(q) = checker.resolve(&call.func) {
                if let Some(k) = wrapper_kind(&q) {
                    return Some(k);
                }
                // A library constructor, a project module class, or a project builder that
                // returns a module (`build_model(...)` in another file).
                return crate::rules::correctness::helpers::constructs_module(checker, call)
                    .then_some(ModuleKind::Plain);
            }
            match &*call.func {
                Expr::Name(n) => {
                    let name = n.id.as_str();
                    let unshadowed = checker.scopes.lookup(name).is_none()
                        // Not shadowed by a local binding of a function.
                        && (env.params.is_none()
                            || frame_bindings(env, name, call.start()).is_empty());
                    let own_class = checker.classes.is_module(name) && unshadowed;
                    // A builder function of this file that returns a module.
                    let own_builder = || {
                        unshadowed
                            && checker.project().is_some_and(|p| match p.local(name) {
                                Some(e @ torchvet_semantic::project::Entity::Function(_)) => {
                                    p.resolve_entity_call(e).kind
                                        == torchvet_semantic::kinds::Kind::Module
                                }
                                _ => false,
                            })
                    };
                    (own_class || own_builder()).then_some(ModuleKind::Plain)
                }
                Expr::Attribute(a) if returns_self(a.attr.as_str()) => {
                    module_kind_at(checker, env, &a.value, depth + 1)
                }
                _ => None,
            }
        }
        Expr::Name(n) => {
            let name = n.id.as_str();
            if name == "self" && env.module_class.is_some() {
                return Some(ModuleKind::Plain);
            }
            // A parameter the function never rebinds: the kind the project model gives it
            // from the arguments at its call sites (`output_predict_img(loader, net)` with a
            // module built in another file).
            if env
                .params
                .is_some_and(|ps| ps.iter().any(|p| p.name().as_str() == name))
                && torchvet_semantic::reaching::bindings_at(env.body, None, name, env_end(env))
                    .is_empty()
            {
                let (id, i) = checker.param_of_function(name)?;
                let kind = checker.project()?.model.param(id, i).kind;
                return (kind == torchvet_semantic::kinds::Kind::Module)
                    .then_some(ModuleKind::Plain);
            }
            if env.params.is_some() && frame_bindings(env, name, env_end(env)).is_empty() {
                return module_level_kind(checker, name, depth);
            }
            match frame_binding(env, name, n.start())? {
                Bound::Value(v) => module_kind_at(checker, env, v, depth + 1),
                _ => None,
            }
        }
        Expr::Attribute(_) => {
            let class = env.module_class?;
            let attr = helpers::self_attribute(expr)?;
            init_attribute_kind(checker, class, attr, depth)
        }
        _ => None,
    }
}

/// The end of a frame's body.
fn env_end(env: Env<'_>) -> TextSize {
    env.body.last().map_or(TextSize::default(), |s| s.end())
}

/// A name a function never binds, read inside it (`net = Net()` at module level,
/// `def export(): torch.save(net, p)`): a module when every module-level assignment of the
/// name is one (the function may run after any of them). Only for a function whose free
/// names are the module's (not a closure inside another function).
fn module_level_kind(checker: &Checker, name: &str, depth: u32) -> Option<ModuleKind> {
    if checker
        .frames()
        .iter()
        .filter(|f| f.function.is_some())
        .count()
        > 1
    {
        return None;
    }
    let module = &checker.module().body;
    let module_env = Env {
        body: module,
        params: None,
        module_class: None,
    };
    let mut values = Vec::new();
    let mut other = false;
    helpers::for_each_own_stmt(module, &mut |s| match s {
        Stmt::Assign(a) if a.targets.iter().any(|t| helpers::name_of(t) == Some(name)) => {
            values.push(&*a.value);
        }
        Stmt::Assign(a) if a.targets.iter().any(|t| target_index(t, name).is_some()) => {
            other = true;
        }
        Stmt::AnnAssign(a) if helpers::name_of(&a.target) == Some(name) => {
            if let Some(v) = &a.value {
                values.push(&**v);
            }
        }
        Stmt::AugAssign(a) if helpers::name_of(&a.target) == Some(name) => other = true,
        Stmt::For(f) if target_index(&f.target, name).is_some() => other = true,
        Stmt::With(w)
            if w.items
                .iter()
                .any(|i| i.optional_vars.as_deref().and_then(helpers::name_of) == Some(name)) =>
        {
            other = true
        }
        Stmt::FunctionDef(f) if f.name.as_str() == name => other = true,
        Stmt::ClassDef(c) if c.name.as_str() == name => other = true,
        _ => {}
    });
    if other || values.is_empty() || checker.scopes.lookup(name).is_some() {
        return None;
    }
    let mut kind = None;
    for v in values {
        kind = Some(module_kind_at(checker, module_env, v, depth + 1)?);
    }
    kind
}

/// `self.<attr>` assigned in `__init__` of `class` to evident module.
fn init_attribute_kind(
    checker: &Checker,
    class: &ast::StmtClassDef,
    attr: &str,
    depth: u32,
) -> Option<ModuleKind> {
    let init = class.body.iter().find_map(|s| match s {
        Stmt::FunctionDef(f) if f.name.as_str() == "__init__" => Some(f),
        _ => None,
    })?;
    let env = Env {
        body: &init.body,
        params: Some(&init.parameters),
        module_class: Some(class),
    };
    let mut kind = None;
    for value in self_assignments(&init.body, attr) {
        match module_kind_at(checker, env, value, depth + 1) {
            Some(k) => kind = Some(k),
            None => return None,
        }
    }
    kind
}

/// The values assigned to `self.<attr>` in a body (not descending into nested defs).
pub(crate) fn self_assignments<'b>(body: &'b [Stmt], attr: &str) -> Vec<&'b Expr> {
    helpers::self_assignments(body)
        .into_iter()
        .filter_map(|(x, value, _)| (x == attr).then_some(value))
        .collect()
}

/// A value of the literal-ish evaluator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Value {
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// `None`.
    None,
    /// Known not to be `None` (a call, a display, ...), value otherwise unknown.
    NotNone,
}

impl Value {
    /// Python truthiness, when known.
    pub(crate) fn truthy(self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(b),
            Value::Int(i) => Some(i != 0),
            Value::None => Some(false),
            Value::NotNone => None,
        }
    }
}

/// Evaluate a simple expression: literals, `not`, `and`/`or`, comparisons of known values,
/// `x is None`, conditional expressions, and names bound once to such values in the frame.
pub(crate) fn eval(checker: &Checker, env: Env<'_>, expr: &Expr) -> Option<Value> {
    eval_at(checker, env, expr, 0)
}

fn eval_at(checker: &Checker, env: Env<'_>, expr: &Expr, depth: u32) -> Option<Value> {
    if depth > 6 {
        return None;
    }
    let ev = |e: &Expr| eval_at(checker, env, e, depth + 1);
    match expr {
        Expr::BooleanLiteral(b) => Some(Value::Bool(b.value)),
        Expr::NoneLiteral(_) => Some(Value::None),
        Expr::NumberLiteral(_) => helpers::int_value(expr)
            .map(Value::Int)
            .or(Some(Value::NotNone)),
        Expr::StringLiteral(_)
        | Expr::List(_)
        | Expr::Dict(_)
        | Expr::Set(_)
        | Expr::Tuple(_)
        | Expr::Lambda(_) => Some(Value::NotNone),
        Expr::ListComp(_)
        | Expr::SetComp(_)
        | Expr::DictComp(_)
        | Expr::Generator(_)
        | Expr::FString(_) => Some(Value::NotNone),
        Expr::UnaryOp(u) => match u.op {
            UnaryOp::Not => ev(&u.operand)?.truthy().map(|b| Value::Bool(!b)),
            UnaryOp::USub => match ev(&u.operand)? {
                Value::Int(i) => Some(Value::Int(i.checked_neg()?)),
                _ => None,
            },
            _ => None,
        },
        Expr::BoolOp(b) => {
            // Python returns the deciding operand. When an operand is unknown but a later one
            // decides (`pw and num_workers > 0` with `num_workers = 0`), only the truthiness of
            // the result is known: it is reported as a bool.
            let stop_on = matches!(b.op, BoolOp::Or);
            let mut last = None;
            for (i, v) in b.values.iter().enumerate() {
                let val = ev(v);
                match val.and_then(Value::truthy) {
                    Some(t) if t == stop_on => return val,
                    Some(_) => last = val,
                    None => {
                        let later_decides = b.values[i + 1..]
                            .iter()
                            .any(|e| ev(e).and_then(Value::truthy) == Some(stop_on));
                        return later_decides.then_some(Value::Bool(stop_on));
                    }
                }
            }
            last
        }
        Expr::Compare(c) if c.ops.len() == 1 => {
            let op = c.ops[0];
            let left = &*c.left;
            let right = &c.comparators[0];
            if matches!(op, CmpOp::Is | CmpOp::IsNot) {
                let (other, none_side) = if right.is_none_literal_expr() {
                    (left, true)
                } else if left.is_none_literal_expr() {
                    (right, true)
                } else {
                    (left, false)
                };
                if !none_side {
                    return None;
                }
                let is_none = match ev(other)? {
                    Value::None => true,
                    Value::Bool(_) | Value::Int(_) | Value::NotNone => false,
                };
                return Some(Value::Bool(if matches!(op, CmpOp::Is) {
                    is_none
                } else {
                    !is_none
                }));
            }
            let (Value::Int(l), Value::Int(r)) = (int_like(ev(left)?)?, int_like(ev(right)?)?)
            else {
                return None;
            };
            let b = match op {
                CmpOp::Eq => l == r,
                CmpOp::NotEq => l != r,
                CmpOp::Lt => l < r,
                CmpOp::LtE => l <= r,
                CmpOp::Gt => l > r,
                CmpOp::GtE => l >= r,
                _ => return None,
            };
            Some(Value::Bool(b))
        }
        Expr::If(i) => match ev(&i.test).and_then(Value::truthy) {
            Some(true) => ev(&i.body),
            Some(false) => ev(&i.orelse),
            None => {
                let (a, b) = (ev(&i.body)?, ev(&i.orelse)?);
                if a == b {
                    Some(a)
                } else if a != Value::None && b != Value::None {
                    Some(Value::NotNone)
                } else {
                    None
                }
            }
        },
        Expr::Call(_) => Some(Value::NotNone),
        Expr::Name(n) => {
            let name = n.id.as_str();
            if checker.scopes.lookup(name).is_some() {
                return None;
            }
            // Only a name bound exactly once (before this use) in the frame is followed.
            match single_binding(env, name, n.start())? {
                Bound::Value(v) => ev(v),
                _ => None,
            }
        }
        _ => None,
    }
}

fn int_like(v: Value) -> Option<Value> {
    match v {
        Value::Int(i) => Some(Value::Int(i)),
        Value::Bool(b) => Some(Value::Int(i64::from(b))),
        _ => None,
    }
}

/// The binding of `name` when the frame binds it exactly once, before `at`, and it is not a
/// parameter.
fn single_binding<'b>(env: Env<'b>, name: &str, at: TextSize) -> Option<Bound<'b>> {
    if env
        .params
        .is_some_and(|p| p.iter().any(|p| p.name().as_str() == name))
    {
        return None;
    }
    let before = frame_binding(env, name, at)?;
    // The last binding of the whole frame must be the one before `at`: no rebinding anywhere.
    let mut count = 0;
    count_bindings(env.body, name, &mut count);
    (count == 1).then_some(before)
}

fn count_bindings(body: &[Stmt], name: &str, count: &mut u32) {
    for stmt in body {
        match stmt {
            Stmt::Assign(a) => *count += a.targets.iter().filter(|t| binds(t, name)).count() as u32,
            Stmt::AnnAssign(a) if binds(&a.target, name) => *count += 1,
            Stmt::AugAssign(a) if binds(&a.target, name) => *count += 1,
            Stmt::For(f) => {
                if binds(&f.target, name) {
                    *count += 1;
                }
                count_bindings(&f.body, name, count);
                count_bindings(&f.orelse, name, count);
            }
            Stmt::While(w) => {
                count_bindings(&w.body, name, count);
                count_bindings(&w.orelse, name, count);
            }
            Stmt::If(i) => {
                count_bindings(&i.body, name, count);
                for c in &i.elif_else_clauses {
                    count_bindings(&c.body, name, count);
                }
            }
            Stmt::With(w) => {
                if w.items
                    .iter()
                    .any(|i| i.optional_vars.as_deref().is_some_and(|v| binds(v, name)))
                {
                    *count += 1;
                }
                count_bindings(&w.body, name, count);
            }
            Stmt::Try(t) => {
                count_bindings(&t.body, name, count);
                for h in &t.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    count_bindings(&h.body, name, count);
                }
                count_bindings(&t.orelse, name, count);
                count_bindings(&t.finalbody, name, count);
            }
            Stmt::FunctionDef(f) if f.name.as_str() == name => *count += 1,
            Stmt::ClassDef(c) if c.name.as_str() == name => *count += 1,
            _ if binds_by_other_stmt(stmt, name) => *count += 1,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torchvet_python::SourceFile;

    /// The source text of the single value binding of `x` reaching the `use_x` marker call.
    fn reaching(src: &str) -> Vec<String> {
        let file = SourceFile::from_python("t.py", src.to_string());
        let parsed = file.parse();
        let module = parsed.syntax();
        let at = TextSize::try_from(src.find("use(x)").expect("marker") + 4).expect("offset");
        let env = Env {
            body: &module.body,
            params: None,
            module_class: None,
        };
        frame_bindings(env, "x", at)
            .iter()
            .map(|b| match b {
                Bound::Value(v) => src[v.range()].to_string(),
                Bound::ForIter(i, _) => format!("for {}", &src[i.range()]),
                Bound::CompIter(..) => "comp".to_string(),
                Bound::Other => "other".to_string(),
            })
            .collect()
    }

    #[test]
    fn branches_are_alternatives() {
        assert_eq!(reaching("x = 1\nx = 2\nuse(x)\n"), vec!["2"]);
        assert_eq!(
            reaching("if c:\n    x = a()\nelse:\n    x = use(x)\n"),
            Vec::<String>::new()
        );
        assert_eq!(
            reaching("x = 0\nif c:\n    x = a()\nelse:\n    x = use(x)\n"),
            vec!["0"]
        );
        assert_eq!(
            reaching("x = 0\nif c:\n    x = a()\nuse(x)\n"),
            vec!["a()", "0"]
        );
        assert_eq!(
            reaching("if c:\n    x = a()\nelse:\n    x = b()\nuse(x)\n"),
            vec!["a()", "b()"]
        );
        assert_eq!(reaching("x = 0\nx = x + 1\nuse(x)\n"), vec!["x + 1"]);
        assert_eq!(reaching("x = 0\nx += 1\nuse(x)\n"), vec!["other"]);
    }

    #[test]
    fn loops_and_try() {
        assert_eq!(
            reaching("for x in m.parameters():\n    use(x)\n"),
            vec!["for m.parameters()"]
        );
        assert_eq!(
            reaching("x = 0\nfor i in r:\n    x = a()\nuse(x)\n"),
            vec!["a()", "0"]
        );
        assert_eq!(
            reaching("try:\n    x = a()\nexcept E:\n    x = b()\nuse(x)\n"),
            vec!["a()", "b()"]
        );
        assert_eq!(
            reaching("try:\n    x = a()\nexcept E:\n    use(x)\n"),
            vec!["a()"]
        );
        assert_eq!(reaching("def x():\n    pass\nuse(x)\n"), vec!["other"]);
    }
}

//! A small symbolic interpreter for `__init__` bodies: enough Python to follow literal
//! arguments, defaults, module-level constants, loops over literal ranges, comprehensions,
//! containers and project classes, and to give up (`?`) on anything that needs run-time values.

use crate::layers::{self, CallArgs};
use crate::{
    collect_state, count_unknown, Dim, Layer, ModelCard, SummaryError, TensorKind, TensorSpec,
};
use ruff_python_ast::{self as ast, Expr, Number, Stmt};
use ruff_text_size::Ranged;
use std::collections::{HashMap, HashSet};

/// Statements executed per card before giving up.
const BUDGET: u64 = 200_000;
/// Iterations of one loop that are expanded.
const MAX_ITER: usize = 10_000;
/// Nested instantiations / calls.
const MAX_DEPTH: usize = 32;

/// A value of the interpreted program.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    None,
    List(Vec<Value>),
    Tuple(Vec<Value>),
    Dict(Vec<(Value, Value)>),
    /// A list of unknown length whose elements look like the template.
    UnknownList(Option<Box<Value>>),
    Module(Box<Layer>),
    Tensor(Option<Vec<Dim>>),
    Param(Option<Vec<Dim>>),
    /// `nn.Buffer(tensor, persistent=...)` (torch >= 2.5), registered when assigned to `self`.
    Buffer(Option<Vec<Dim>>, bool),
    /// An imported name, qualified (`torch.nn.Linear`, `torch.nn`, `math.ceil`).
    Ref(String),
    ProjectClass(String),
    ProjectFunc(String),
    /// The module's own `self`.
    SelfRef,
    Unknown,
}

impl Value {
    fn truthy(&self) -> Option<bool> {
        match self {
            Value::Int(i) => Some(*i != 0),
            Value::Float(f) => Some(*f != 0.0),
            Value::Bool(b) => Some(*b),
            Value::Str(s) => Some(!s.is_empty()),
            Value::None => Some(false),
            Value::List(v) | Value::Tuple(v) => Some(!v.is_empty()),
            Value::Dict(v) => Some(!v.is_empty()),
            Value::Module(_) | Value::Ref(_) | Value::ProjectClass(_) | Value::ProjectFunc(_) => {
                Some(true)
            }
            _ => None,
        }
    }

    fn display(&self) -> String {
        match self {
            Value::Int(i) => i.to_string(),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 1e16 => format!("{f:.1}"),
            Value::Float(f) => format!("{f}"),
            Value::Bool(b) => if *b { "True" } else { "False" }.to_string(),
            Value::Str(s) => format!("'{s}'"),
            Value::None => "None".to_string(),
            Value::List(v) => format!(
                "[{}]",
                v.iter().map(Value::display).collect::<Vec<_>>().join(", ")
            ),
            Value::Tuple(v) => format!(
                "({})",
                v.iter().map(Value::display).collect::<Vec<_>>().join(", ")
            ),
            Value::Module(m) => m.type_name.clone(),
            Value::Ref(q) => q.clone(),
            Value::ProjectClass(c) | Value::ProjectFunc(c) => c.clone(),
            _ => "?".to_string(),
        }
    }
}

struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|(_, b)| *b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { starts }
    }

    fn line(&self, offset: usize) -> u32 {
        match self.starts.binary_search(&offset) {
            Ok(i) => i as u32 + 1,
            Err(i) => i as u32,
        }
    }
}

#[derive(Default)]
struct SelfObj {
    params: Vec<(String, Option<Vec<Dim>>)>,
    buffers: Vec<TensorSpec>,
    modules: Vec<(String, Layer)>,
    attrs: HashMap<String, Value>,
    class: String,
}

impl SelfObj {
    fn set(&mut self, name: &str, v: Value, conditional: bool) {
        match v {
            Value::Module(mut m) => {
                m.name = name.to_string();
                if conditional && m.note.is_none() {
                    m.note = Some("? present only when a run-time condition holds".to_string());
                }
                self.attrs.remove(name);
                self.params.retain(|(n, _)| n != name);
                match self.modules.iter_mut().find(|(n, _)| n == name) {
                    Some(slot) => slot.1 = *m,
                    None => self.modules.push((name.to_string(), *m)),
                }
            }
            Value::Buffer(shape, persistent) => {
                self.attrs.remove(name);
                self.buffers.retain(|b| b.name != name);
                self.buffers.push(TensorSpec {
                    name: name.to_string(),
                    kind: TensorKind::Buffer,
                    shape,
                    persistent,
                });
            }
            Value::Param(shape) => {
                self.attrs.remove(name);
                match self.params.iter_mut().find(|(n, _)| n == name) {
                    Some(slot) => slot.1 = shape,
                    None => self.params.push((name.to_string(), shape)),
                }
            }
            other => {
                // Assigning to a registered buffer name keeps it a buffer.
                if let Some(b) = self.buffers.iter_mut().find(|b| b.name == name) {
                    if let Value::Tensor(shape) = &other {
                        b.shape = shape.clone();
                    }
                    return;
                }
                if matches!(other, Value::None) {
                    // `self.x = None` after registering `x` unregisters it.
                    self.modules.retain(|(n, _)| n != name);
                    self.params.retain(|(n, _)| n != name);
                }
                self.attrs.insert(name.to_string(), other);
            }
        }
    }

    fn get(&self, name: &str) -> Option<Value> {
        if let Some((_, m)) = self.modules.iter().find(|(n, _)| n == name) {
            return Some(Value::Module(Box::new(m.clone())));
        }
        if let Some((_, p)) = self.params.iter().find(|(n, _)| n == name) {
            return Some(Value::Param(p.clone()));
        }
        if let Some(b) = self.buffers.iter().find(|b| b.name == name) {
            return Some(Value::Tensor(b.shape.clone()));
        }
        self.attrs.get(name).cloned()
    }
}

enum Flow {
    Normal,
    Break,
    Continue,
    Return(Value),
}

struct Frame {
    locals: HashMap<String, Value>,
    self_idx: Option<usize>,
    /// The class whose method is running (for `super()`).
    owner: Option<String>,
}

struct Ctx<'a> {
    source: &'a str,
    index: LineIndex,
    imports: HashMap<String, String>,
    star_nn: bool,
    classes: HashMap<String, &'a ast::StmtClassDef>,
    module_classes: HashSet<String>,
    functions: HashMap<String, &'a ast::StmtFunctionDef>,
    globals: HashMap<String, Value>,
    selves: Vec<SelfObj>,
    frames: Vec<Frame>,
    cond: usize,
    repeat: usize,
    budget: u64,
    depth: usize,
    instantiating: Vec<String>,
    notes: Vec<String>,
}

const BUILTINS: &[&str] = &[
    "range",
    "len",
    "int",
    "float",
    "bool",
    "str",
    "min",
    "max",
    "abs",
    "sum",
    "round",
    "list",
    "tuple",
    "zip",
    "enumerate",
    "reversed",
    "sorted",
    "dict",
    "isinstance",
    "getattr",
    "setattr",
    "hasattr",
    "super",
    "print",
];

const CONTAINERS: &[&str] = &[
    "Sequential",
    "ModuleList",
    "ModuleDict",
    "ParameterList",
    "ParameterDict",
];

fn int_of(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

fn dim_of(v: &Value) -> Dim {
    int_of(v).and_then(|i| u64::try_from(i).ok())
}

fn floordiv(a: i64, b: i64) -> Option<i64> {
    if b == 0 {
        return None;
    }
    let q = a.checked_div(b)?;
    Some(if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    })
}

impl<'a> Ctx<'a> {
    fn frame(&mut self) -> &mut Frame {
        if self.frames.is_empty() {
            self.frames.push(Frame {
                locals: HashMap::new(),
                self_idx: None,
                owner: None,
            });
        }
        let last = self.frames.len() - 1;
        &mut self.frames[last]
    }

    fn self_obj(&mut self) -> Option<&mut SelfObj> {
        let idx = self.frames.last()?.self_idx?;
        self.selves.get_mut(idx)
    }

    fn line(&self, node: &impl Ranged) -> u32 {
        self.index.line(node.range().start().to_usize())
    }

    fn note(&mut self, n: String) {
        if !self.notes.contains(&n) && self.notes.len() < 50 {
            self.notes.push(n);
        }
    }

    fn args_text(&self, call: &ast::ExprCall) -> String {
        let r = call.arguments.range();
        let text = self
            .source
            .get(r.start().to_usize()..r.end().to_usize())
            .unwrap_or("");
        let text = text
            .trim()
            .strip_prefix('(')
            .and_then(|t| t.strip_suffix(')'))
            .unwrap_or(text);
        let collapsed: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let collapsed = collapsed.trim_end_matches(',').to_string();
        if collapsed.chars().count() > 60 {
            let mut s: String = collapsed.chars().take(57).collect();
            s.push_str("...");
            s
        } else {
            collapsed
        }
    }

    // ---------------------------------------------------------------- names

    fn resolve_name(&mut self, name: &str) -> Value {
        if let Some(v) = self.frames.last().and_then(|f| f.locals.get(name)) {
            return v.clone();
        }
        if name == "self" && self.frames.last().is_some_and(|f| f.self_idx.is_some()) {
            return Value::SelfRef;
        }
        if let Some(v) = self.globals.get(name) {
            return v.clone();
        }
        if let Some(q) = self.imports.get(name) {
            return Value::Ref(q.clone());
        }
        if self.classes.contains_key(name) {
            return Value::ProjectClass(name.to_string());
        }
        if self.functions.contains_key(name) {
            return Value::ProjectFunc(name.to_string());
        }
        if name == "super" {
            return Value::Ref("builtins.super".to_string());
        }
        if BUILTINS.contains(&name) {
            return Value::Ref(format!("builtins.{name}"));
        }
        match name {
            "True" => Value::Bool(true),
            "False" => Value::Bool(false),
            "None" => Value::None,
            _ if self.star_nn && (layers::is_known(name) || CONTAINERS.contains(&name)) => {
                Value::Ref(format!("torch.nn.{name}"))
            }
            _ => Value::Unknown,
        }
    }

    fn class_attr(&mut self, class: &str, attr: &str) -> Value {
        let mut cur = Some(class.to_string());
        let mut guard = 0;
        while let Some(c) = cur.take() {
            guard += 1;
            if guard > 16 {
                break;
            }
            let Some(def) = self.classes.get(c.as_str()).copied() else {
                break;
            };
            for stmt in def.body.iter() {
                if let Stmt::Assign(a) = stmt {
                    if let [Expr::Name(n)] = a.targets.as_slice() {
                        if n.id.as_str() == attr {
                            let saved = std::mem::take(&mut self.frames);
                            let v = self.eval(&a.value);
                            self.frames = saved;
                            return v;
                        }
                    }
                }
                if let Stmt::AnnAssign(a) = stmt {
                    if let (Expr::Name(n), Some(v)) = (a.target.as_ref(), a.value.as_ref()) {
                        if n.id.as_str() == attr {
                            let saved = std::mem::take(&mut self.frames);
                            let v = self.eval(v);
                            self.frames = saved;
                            return v;
                        }
                    }
                }
            }
            cur = self.project_base(&c);
        }
        Value::Unknown
    }

    fn project_base(&self, class: &str) -> Option<String> {
        let def = self.classes.get(class)?;
        def.arguments.as_ref()?.args.iter().find_map(|b| match b {
            Expr::Name(n) if self.classes.contains_key(n.id.as_str()) && n.id.as_str() != class => {
                Some(n.id.to_string())
            }
            _ => None,
        })
    }

    fn find_method(&self, class: &str, name: &str) -> Option<(String, &'a ast::StmtFunctionDef)> {
        let mut cur = Some(class.to_string());
        let mut guard = 0;
        while let Some(c) = cur.take() {
            guard += 1;
            if guard > 16 {
                return None;
            }
            let def = self.classes.get(c.as_str())?;
            for stmt in def.body.iter() {
                if let Stmt::FunctionDef(f) = stmt {
                    if f.name.as_str() == name {
                        return Some((c.clone(), f));
                    }
                }
            }
            cur = self.project_base(&c);
        }
        None
    }

    // ---------------------------------------------------------------- statements

    fn exec_body(&mut self, body: &'a [Stmt]) -> Flow {
        for stmt in body {
            match self.exec(stmt) {
                Flow::Normal => {}
                other => return other,
            }
        }
        Flow::Normal
    }

    fn exec(&mut self, stmt: &'a Stmt) -> Flow {
        if self.budget == 0 {
            self.note(
                "evaluation budget exhausted; the rest of the class was not followed".to_string(),
            );
            return Flow::Return(Value::Unknown);
        }
        self.budget -= 1;
        match stmt {
            Stmt::Expr(e) => {
                self.eval(&e.value);
            }
            Stmt::Assign(a) => {
                let v = self.eval(&a.value);
                for t in &a.targets {
                    self.assign(t, v.clone());
                }
            }
            Stmt::AnnAssign(a) => {
                if let Some(value) = &a.value {
                    let v = self.eval(value);
                    self.assign(&a.target, v);
                }
            }
            Stmt::AugAssign(a) => {
                let cur = self.eval(&a.target);
                let rhs = self.eval(&a.value);
                let v = if self.repeat > 0
                    && matches!(a.op, ast::Operator::Add)
                    && matches!(cur, Value::List(_) | Value::UnknownList(_))
                {
                    let template = match &rhs {
                        Value::List(items) => items.first().cloned(),
                        Value::UnknownList(t) => t.as_deref().cloned(),
                        _ => None,
                    };
                    Value::UnknownList(template.map(Box::new))
                } else {
                    self.binop(&cur, a.op, &rhs)
                };
                self.assign(&a.target, v);
            }
            Stmt::If(i) => {
                let mut clauses: Vec<(Option<&'a Expr>, &'a [Stmt])> =
                    vec![(Some(&i.test), &i.body)];
                for c in &i.elif_else_clauses {
                    clauses.push((c.test.as_ref(), &c.body));
                }
                let mut unknown = false;
                for (test, body) in clauses {
                    let t = match test {
                        Some(t) => self.eval(t).truthy(),
                        None => Some(true),
                    };
                    match (unknown, t) {
                        (false, Some(true)) => return self.exec_body(body),
                        (false, Some(false)) => continue,
                        _ => {
                            unknown = true;
                            self.cond += 1;
                            // A conditional `return`/`raise` ends only that path: keep going.
                            let _flow = self.exec_body(body);
                            self.cond -= 1;
                        }
                    }
                }
            }
            Stmt::For(f) => return self.exec_for(f),
            Stmt::While(_) => {
                self.note("a `while` loop in __init__ was not followed".to_string());
            }
            Stmt::With(w) => return self.exec_body(&w.body),
            Stmt::Try(t) => {
                let flow = self.exec_body(&t.body);
                if !matches!(flow, Flow::Normal) {
                    return flow;
                }
                return self.exec_body(&t.finalbody);
            }
            Stmt::Return(r) => {
                let v = r.value.as_ref().map_or(Value::None, |e| self.eval(e));
                return Flow::Return(v);
            }
            Stmt::Break(_) => return Flow::Break,
            Stmt::Continue(_) => return Flow::Continue,
            Stmt::Raise(_) if self.cond == 0 => return Flow::Return(Value::Unknown),
            Stmt::Import(imp) => {
                for alias in &imp.names {
                    let full = alias.name.to_string();
                    match &alias.asname {
                        Some(a) => self.imports.insert(a.to_string(), full),
                        None => {
                            let first = full.split('.').next().unwrap_or(&full).to_string();
                            self.imports.insert(first.clone(), first)
                        }
                    };
                }
            }
            Stmt::ImportFrom(imp) => {
                let module = imp
                    .module
                    .as_ref()
                    .map(|m| m.to_string())
                    .unwrap_or_default();
                for alias in &imp.names {
                    let local = alias.asname.as_ref().unwrap_or(&alias.name).to_string();
                    self.imports
                        .insert(local, format!("{module}.{}", alias.name.as_str()));
                }
            }
            _ => {}
        }
        Flow::Normal
    }

    fn iter_values(&mut self, v: Value) -> Option<Vec<Value>> {
        match v {
            Value::List(items) | Value::Tuple(items) => Some(items),
            Value::Dict(items) => Some(items.into_iter().map(|(k, _)| k).collect()),
            Value::Str(s) => Some(s.chars().map(|c| Value::Str(c.to_string())).collect()),
            Value::Module(m)
                if matches!(m.type_name.as_str(), "Sequential" | "ModuleList")
                    && m.note.is_none() =>
            {
                Some(
                    m.children
                        .into_iter()
                        .map(|c| Value::Module(Box::new(c)))
                        .collect(),
                )
            }
            _ => None,
        }
    }

    fn exec_for(&mut self, f: &'a ast::StmtFor) -> Flow {
        let it = self.eval(&f.iter);
        match self.iter_values(it.clone()) {
            Some(items) if items.len() <= MAX_ITER => {
                for item in items {
                    self.assign(&f.target, item);
                    match self.exec_body(&f.body) {
                        Flow::Break => return Flow::Normal,
                        Flow::Return(v) => return Flow::Return(v),
                        _ => {}
                    }
                    if self.budget == 0 {
                        return Flow::Return(Value::Unknown);
                    }
                }
                self.exec_body(&f.orelse)
            }
            _ => {
                let template = match it {
                    Value::UnknownList(Some(t)) => *t,
                    _ => Value::Unknown,
                };
                self.assign(&f.target, template);
                self.repeat += 1;
                let flow = self.exec_body(&f.body);
                self.repeat -= 1;
                match flow {
                    Flow::Return(v) => Flow::Return(v),
                    _ => Flow::Normal,
                }
            }
        }
    }

    fn assign(&mut self, target: &'a Expr, v: Value) {
        match target {
            Expr::Name(n) => {
                self.frame().locals.insert(n.id.to_string(), v);
            }
            Expr::Attribute(a) => {
                if matches!(self.eval(&a.value), Value::SelfRef) {
                    let cond = self.cond > 0;
                    if let Some(s) = self.self_obj() {
                        s.set(a.attr.as_str(), v, cond);
                    }
                }
            }
            Expr::Tuple(t) => self.unpack(&t.elts, v),
            Expr::List(l) => self.unpack(&l.elts, v),
            Expr::Subscript(s) => {
                let key = self.eval(&s.slice);
                match s.value.as_ref() {
                    Expr::Attribute(a) if matches!(self.eval(&a.value), Value::SelfRef) => {
                        let attr = a.attr.to_string();
                        if let (Some(s), Value::Str(k)) = (self.self_obj(), &key) {
                            if let Some((_, m)) = s.modules.iter_mut().find(|(n, _)| *n == attr) {
                                if let Value::Module(mut child) = v {
                                    child.name = k.clone();
                                    match m.children.iter_mut().find(|c| c.name == *k) {
                                        Some(slot) => *slot = *child,
                                        None => m.children.push(*child),
                                    }
                                }
                            }
                        }
                    }
                    Expr::Name(n) => {
                        let name = n.id.to_string();
                        let cur = self.frame().locals.get(&name).cloned();
                        let updated = match cur {
                            Some(Value::Dict(mut items)) => {
                                match items.iter_mut().find(|(k, _)| *k == key) {
                                    Some(slot) => slot.1 = v,
                                    None => items.push((key, v)),
                                }
                                Some(Value::Dict(items))
                            }
                            Some(Value::List(mut items)) => match int_of(&key) {
                                Some(i) => {
                                    let len = items.len() as i64;
                                    let idx = if i < 0 { i + len } else { i };
                                    if idx >= 0 && (idx as usize) < items.len() {
                                        items[idx as usize] = v;
                                    }
                                    Some(Value::List(items))
                                }
                                None => Some(Value::Unknown),
                            },
                            _ => None,
                        };
                        if let Some(u) = updated {
                            self.frame().locals.insert(name, u);
                        }
                    }
                    _ => {}
                }
            }
            Expr::Starred(s) => self.assign(&s.value, Value::Unknown),
            _ => {}
        }
    }

    fn unpack(&mut self, targets: &'a [Expr], v: Value) {
        let items = match v {
            Value::List(items) | Value::Tuple(items) if items.len() == targets.len() => items,
            _ => vec![Value::Unknown; targets.len()],
        };
        for (t, item) in targets.iter().zip(items) {
            self.assign(t, item);
        }
    }

    // ---------------------------------------------------------------- expressions

    fn eval(&mut self, e: &'a Expr) -> Value {
        match e {
            Expr::NumberLiteral(n) => match &n.value {
                Number::Int(i) => i.as_i64().map_or(Value::Unknown, Value::Int),
                Number::Float(f) => Value::Float(*f),
                Number::Complex { .. } => Value::Unknown,
            },
            Expr::StringLiteral(s) => Value::Str(s.value.to_str().to_string()),
            Expr::BooleanLiteral(b) => Value::Bool(b.value),
            Expr::NoneLiteral(_) => Value::None,
            Expr::Name(n) => self.resolve_name(n.id.as_str()),
            Expr::Attribute(a) => {
                let base = self.eval(&a.value);
                let attr = a.attr.as_str();
                match base {
                    Value::Ref(q) => Value::Ref(format!("{q}.{attr}")),
                    Value::SelfRef => {
                        let class = self.self_obj().map(|s| s.class.clone());
                        match self.self_obj().and_then(|s| s.get(attr)) {
                            Some(v) => v,
                            None => match class {
                                Some(c) => self.class_attr(&c, attr),
                                None => Value::Unknown,
                            },
                        }
                    }
                    Value::ProjectClass(c) => self.class_attr(&c, attr),
                    Value::Module(m) => m
                        .children
                        .iter()
                        .find(|c| c.name == attr)
                        .map_or(Value::Unknown, |c| Value::Module(Box::new(c.clone()))),
                    _ => Value::Unknown,
                }
            }
            Expr::Subscript(s) => {
                let base = self.eval(&s.value);
                if let Expr::Slice(sl) = s.slice.as_ref() {
                    let lower = sl.lower.as_ref().map(|x| self.eval(x));
                    let upper = sl.upper.as_ref().map(|x| self.eval(x));
                    let step = sl.step.as_ref().map(|x| self.eval(x));
                    return slice(base, lower, upper, step);
                }
                let key = self.eval(&s.slice);
                index(base, &key)
            }
            Expr::BinOp(b) => {
                let l = self.eval(&b.left);
                let r = self.eval(&b.right);
                self.binop(&l, b.op, &r)
            }
            Expr::UnaryOp(u) => {
                let v = self.eval(&u.operand);
                match (u.op, v) {
                    (ast::UnaryOp::USub, Value::Int(i)) => {
                        i.checked_neg().map_or(Value::Unknown, Value::Int)
                    }
                    (ast::UnaryOp::USub, Value::Float(f)) => Value::Float(-f),
                    (ast::UnaryOp::UAdd, v @ (Value::Int(_) | Value::Float(_))) => v,
                    (ast::UnaryOp::Not, v) => {
                        v.truthy().map_or(Value::Unknown, |b| Value::Bool(!b))
                    }
                    _ => Value::Unknown,
                }
            }
            Expr::BoolOp(b) => {
                let is_and = matches!(b.op, ast::BoolOp::And);
                let mut last = Value::Unknown;
                for v in &b.values {
                    let x = self.eval(v);
                    match x.truthy() {
                        Some(t) if t != is_and => return x,
                        Some(_) => last = x,
                        None => return Value::Unknown,
                    }
                }
                last
            }
            Expr::Compare(c) => {
                let mut left = self.eval(&c.left);
                for (op, right) in c.ops.iter().zip(c.comparators.iter()) {
                    let r = self.eval(right);
                    match compare(&left, *op, &r) {
                        Some(true) => left = r,
                        Some(false) => return Value::Bool(false),
                        None => return Value::Unknown,
                    }
                }
                Value::Bool(true)
            }
            Expr::If(i) => {
                let t = self.eval(&i.test).truthy();
                match t {
                    Some(true) => self.eval(&i.body),
                    Some(false) => self.eval(&i.orelse),
                    None => {
                        let a = self.eval(&i.body);
                        let b = self.eval(&i.orelse);
                        if a == b {
                            return a;
                        }
                        match (&a, &b) {
                            (Value::Module(x), Value::Module(y)) => {
                                let mut l =
                                    Layer::new(&format!("{} | {}", x.type_name, y.type_name));
                                l.line = x.line;
                                l.args = format!("{} | {}", x.args, y.args);
                                l.note = Some("? which layer is chosen at run time".to_string());
                                Value::Module(Box::new(l))
                            }
                            (Value::Module(x), _) | (_, Value::Module(x)) => {
                                let mut l = (**x).clone();
                                l.note = Some(
                                    "? present only when a run-time condition holds".to_string(),
                                );
                                Value::Module(Box::new(l))
                            }
                            _ => Value::Unknown,
                        }
                    }
                }
            }
            Expr::List(l) => Value::List(self.eval_elts(&l.elts)),
            Expr::Tuple(t) => Value::Tuple(self.eval_elts(&t.elts)),
            Expr::Set(_) => Value::Unknown,
            Expr::Dict(d) => {
                let mut items = Vec::new();
                for item in &d.items {
                    let v = self.eval(&item.value);
                    match &item.key {
                        Some(k) => {
                            let k = self.eval(k);
                            items.push((k, v));
                        }
                        None => match v {
                            Value::Dict(more) => items.extend(more),
                            _ => return Value::Unknown,
                        },
                    }
                }
                Value::Dict(items)
            }
            Expr::ListComp(c) => self.comprehension(&c.elt, None, &c.generators),
            Expr::Generator(c) => self.comprehension(&c.elt, None, &c.generators),
            Expr::DictComp(c) => match c.key.as_deref() {
                Some(key) => self.comprehension(key, Some(&c.value), &c.generators),
                None => Value::Unknown,
            },
            Expr::FString(f) => {
                let text = torchvet_semantic::helpers::fstring_text(f, |i| {
                    match self.eval(&i.expression) {
                        Value::Int(n) => Some(n.to_string()),
                        Value::Str(s) => Some(s),
                        _ => None,
                    }
                });
                text.map_or(Value::Unknown, Value::Str)
            }
            Expr::Named(n) => {
                let v = self.eval(&n.value);
                self.assign(&n.target, v.clone());
                v
            }
            Expr::Call(c) => self.call(c),
            _ => Value::Unknown,
        }
    }

    fn eval_elts(&mut self, elts: &'a [Expr]) -> Vec<Value> {
        let mut out = Vec::new();
        for e in elts {
            if let Expr::Starred(s) = e {
                match self.eval(&s.value) {
                    Value::List(items) | Value::Tuple(items) => out.extend(items),
                    other => out.push(Value::UnknownList(match other {
                        Value::UnknownList(t) => t,
                        _ => None,
                    })),
                }
            } else {
                out.push(self.eval(e));
            }
        }
        out
    }

    fn comprehension(
        &mut self,
        elt: &'a Expr,
        value: Option<&'a Expr>,
        gens: &'a [ast::Comprehension],
    ) -> Value {
        let saved = self.frames.last().map(|f| f.locals.clone());
        let mut out: Vec<Value> = Vec::new();
        let mut dict: Vec<(Value, Value)> = Vec::new();
        let ok = self.comp_rec(elt, value, gens, &mut out, &mut dict);
        if let (Some(saved), Some(f)) = (saved, self.frames.last_mut()) {
            f.locals = saved;
        }
        match (ok, value) {
            (Ok(()), None) => Value::List(out),
            (Ok(()), Some(_)) => Value::Dict(dict),
            (Err(template), None) => Value::UnknownList(template.map(Box::new)),
            (Err(_), Some(_)) => Value::Unknown,
        }
    }

    /// `Err(template)` when some iterable is unknown: the element evaluated once with unknown
    /// loop variables.
    fn comp_rec(
        &mut self,
        elt: &'a Expr,
        value: Option<&'a Expr>,
        gens: &'a [ast::Comprehension],
        out: &mut Vec<Value>,
        dict: &mut Vec<(Value, Value)>,
    ) -> Result<(), Option<Value>> {
        let Some((g, rest)) = gens.split_first() else {
            match value {
                Some(v) => {
                    let k = self.eval(elt);
                    let v = self.eval(v);
                    dict.push((k, v));
                }
                None => {
                    let v = self.eval(elt);
                    out.push(v);
                }
            }
            return Ok(());
        };
        let it = self.eval(&g.iter);
        match self.iter_values(it.clone()) {
            Some(items) if items.len() <= MAX_ITER => {
                for item in items {
                    if self.budget == 0 {
                        return Err(None);
                    }
                    self.budget -= 1;
                    self.assign(&g.target, item);
                    let mut keep = true;
                    for cond in &g.ifs {
                        match self.eval(cond).truthy() {
                            Some(true) => {}
                            Some(false) => keep = false,
                            None => return Err(None),
                        }
                    }
                    if keep {
                        self.comp_rec(elt, value, rest, out, dict)?;
                    }
                }
                Ok(())
            }
            _ => {
                let template = match it {
                    Value::UnknownList(Some(t)) => *t,
                    _ => Value::Unknown,
                };
                self.assign(&g.target, template);
                self.repeat += 1;
                let mut o = Vec::new();
                let mut d = Vec::new();
                let _ = self.comp_rec(elt, value, rest, &mut o, &mut d);
                self.repeat -= 1;
                Err(o.into_iter().next())
            }
        }
    }

    fn binop(&mut self, l: &Value, op: ast::Operator, r: &Value) -> Value {
        use ast::Operator as O;
        match (l, r) {
            (Value::Int(_) | Value::Bool(_), Value::Int(_) | Value::Bool(_)) => {
                let (a, b) = (int_of(l).unwrap_or(0), int_of(r).unwrap_or(0));
                let v = match op {
                    O::Add => a.checked_add(b),
                    O::Sub => a.checked_sub(b),
                    O::Mult => a.checked_mul(b),
                    O::FloorDiv => floordiv(a, b),
                    O::Mod => (b != 0).then(|| a.rem_euclid(b)),
                    O::Pow => u32::try_from(b).ok().and_then(|b| a.checked_pow(b)),
                    O::Div => {
                        return if b == 0 {
                            Value::Unknown
                        } else {
                            Value::Float(a as f64 / b as f64)
                        }
                    }
                    O::LShift => u32::try_from(b).ok().and_then(|b| a.checked_shl(b)),
                    O::RShift => u32::try_from(b).ok().and_then(|b| a.checked_shr(b)),
                    O::BitAnd => Some(a & b),
                    O::BitOr => Some(a | b),
                    O::BitXor => Some(a ^ b),
                    O::MatMult => None,
                };
                v.map_or(Value::Unknown, Value::Int)
            }
            (Value::Float(_) | Value::Int(_), Value::Float(_) | Value::Int(_)) => {
                let a = match l {
                    Value::Float(f) => *f,
                    Value::Int(i) => *i as f64,
                    _ => return Value::Unknown,
                };
                let b = match r {
                    Value::Float(f) => *f,
                    Value::Int(i) => *i as f64,
                    _ => return Value::Unknown,
                };
                match op {
                    O::Add => Value::Float(a + b),
                    O::Sub => Value::Float(a - b),
                    O::Mult => Value::Float(a * b),
                    O::Div if b != 0.0 => Value::Float(a / b),
                    O::FloorDiv if b != 0.0 => Value::Float((a / b).floor()),
                    O::Pow => Value::Float(a.powf(b)),
                    _ => Value::Unknown,
                }
            }
            (Value::Str(a), Value::Str(b)) if matches!(op, O::Add) => Value::Str(format!("{a}{b}")),
            (Value::List(a), Value::List(b)) if matches!(op, O::Add) => {
                Value::List([a.clone(), b.clone()].concat())
            }
            (Value::Tuple(a), Value::Tuple(b)) if matches!(op, O::Add) => {
                Value::Tuple([a.clone(), b.clone()].concat())
            }
            (Value::List(a), Value::Int(n)) | (Value::Int(n), Value::List(a))
                if matches!(op, O::Mult) =>
            {
                let n = usize::try_from(*n).unwrap_or(0);
                if a.len().saturating_mul(n) > MAX_ITER {
                    return Value::Unknown;
                }
                Value::List(a.iter().cloned().cycle().take(a.len() * n).collect())
            }
            (Value::List(a), Value::UnknownList(t)) | (Value::UnknownList(t), Value::List(a))
                if matches!(op, O::Add) =>
            {
                Value::UnknownList(t.clone().or_else(|| a.first().cloned().map(Box::new)))
            }
            (Value::List(a), _) if matches!(op, O::Mult) => {
                Value::UnknownList(a.first().cloned().map(Box::new))
            }
            _ => Value::Unknown,
        }
    }

    // ---------------------------------------------------------------- calls

    fn eval_args(&mut self, call: &'a ast::ExprCall) -> CallArgs {
        self.eval_args_shown(call).0
    }

    fn src(&self, node: &impl Ranged) -> String {
        let r = node.range();
        let t = self
            .source
            .get(r.start().to_usize()..r.end().to_usize())
            .unwrap_or("");
        t.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// How an argument is shown: its value when known and short, else its source text.
    fn shown(&self, v: &Value, e: &Expr) -> String {
        let d = match v {
            Value::Module(m) => m.type_name.clone(),
            Value::Unknown
            | Value::UnknownList(_)
            | Value::Tensor(_)
            | Value::Param(_)
            | Value::SelfRef
            | Value::Dict(_) => String::new(),
            other => other.display(),
        };
        if d.is_empty() || d.contains('?') || d.len() > 40 {
            self.src(e)
        } else {
            d
        }
    }

    /// The evaluated arguments and how they read (`784, 64, bias=False`).
    fn eval_args_shown(&mut self, call: &'a ast::ExprCall) -> (CallArgs, String) {
        let mut args = CallArgs::default();
        let mut shown: Vec<String> = Vec::new();
        for a in call.arguments.args.iter() {
            if let Expr::Starred(s) = a {
                shown.push(self.src(a));
                match self.eval(&s.value) {
                    Value::List(items) | Value::Tuple(items) => args.pos.extend(items),
                    Value::UnknownList(t) => {
                        args.pos.push(Value::UnknownList(t));
                        args.opaque = true;
                    }
                    _ => {
                        args.pos.push(Value::UnknownList(None));
                        args.opaque = true;
                    }
                }
            } else {
                let v = self.eval(a);
                shown.push(self.shown(&v, a));
                args.pos.push(v);
            }
        }
        for kw in call.arguments.keywords.iter() {
            let v = self.eval(&kw.value);
            match &kw.arg {
                Some(name) => {
                    shown.push(format!("{name}={}", self.shown(&v, &kw.value)));
                    args.kw.push((name.to_string(), v));
                }
                None => {
                    shown.push(self.src(kw));
                    match v {
                        Value::Dict(items) => {
                            for (k, v) in items {
                                match k {
                                    Value::Str(k) => args.kw.push((k, v)),
                                    _ => args.opaque = true,
                                }
                            }
                        }
                        _ => args.opaque = true,
                    }
                }
            }
        }
        let mut text = shown.join(", ");
        if text.chars().count() > 60 {
            text = format!("{}...", text.chars().take(57).collect::<String>());
        }
        (args, text)
    }

    fn call(&mut self, call: &'a ast::ExprCall) -> Value {
        // Method calls that mutate their receiver or need `self`.
        if let Expr::Attribute(attr) = call.func.as_ref() {
            let method = attr.attr.as_str();
            if let Some(v) = self.method_call(call, attr, method) {
                return v;
            }
        }
        let func = self.eval(&call.func);
        let (args, text) = self.eval_args_shown(call);
        let line = self.line(call);
        match func {
            Value::Ref(q) => self.call_ref(&q, args, line, text),
            Value::ProjectClass(c) => {
                if self.module_classes.contains(&c) {
                    Value::Module(Box::new(self.instantiate(&c, &args, line, text)))
                } else {
                    Value::Unknown
                }
            }
            Value::ProjectFunc(f) => {
                let Some(def) = self.functions.get(f.as_str()).copied() else {
                    return Value::Unknown;
                };
                self.call_function(def, &args, None, None)
            }
            _ => Value::Unknown,
        }
    }

    fn method_call(
        &mut self,
        call: &'a ast::ExprCall,
        attr: &'a ast::ExprAttribute,
        method: &str,
    ) -> Option<Value> {
        let recv_expr = attr.value.as_ref();
        // super().__init__(...) / super(Cls, self).__init__(...)
        if method == "__init__" {
            let is_super = matches!(recv_expr, Expr::Call(c) if matches!(c.func.as_ref(), Expr::Name(n) if n.id.as_str() == "super"));
            let owner = self.frames.last().and_then(|f| f.owner.clone());
            let parent = if is_super {
                owner.as_deref().and_then(|o| self.project_base(o))
            } else if let Expr::Name(n) = recv_expr {
                self.classes
                    .contains_key(n.id.as_str())
                    .then(|| n.id.to_string())
            } else {
                None
            };
            let mut args = self.eval_args(call);
            if !is_super && !args.pos.is_empty() {
                args.pos.remove(0); // explicit `self`
            }
            if let Some(parent) = parent {
                if let Some((owner, init)) = self.find_method(&parent, "__init__") {
                    let self_idx = self.frames.last().and_then(|f| f.self_idx);
                    self.call_function(init, &args, self_idx, Some(owner));
                }
            }
            return Some(Value::None);
        }
        let recv = self.eval(recv_expr);
        match (&recv, method) {
            (Value::SelfRef, "register_buffer") => {
                let args = self.eval_args(call);
                let name = match args.pos.first() {
                    Some(Value::Str(s)) => s.clone(),
                    _ => {
                        self.note("a buffer with a run-time name was not followed".to_string());
                        return Some(Value::None);
                    }
                };
                let tensor = args.pos.get(1).cloned().or_else(|| {
                    args.kw
                        .iter()
                        .find(|(k, _)| k == "tensor")
                        .map(|(_, v)| v.clone())
                });
                let persistent = match args.pos.get(2).or_else(|| {
                    args.kw
                        .iter()
                        .find(|(k, _)| k == "persistent")
                        .map(|(_, v)| v)
                }) {
                    Some(Value::Bool(b)) => *b,
                    _ => true,
                };
                if let Some(s) = self.self_obj() {
                    match tensor {
                        Some(Value::None) => {}
                        t => {
                            let shape = match t {
                                Some(Value::Tensor(s)) | Some(Value::Param(s)) => s,
                                _ => None,
                            };
                            s.buffers.retain(|b| b.name != name);
                            s.attrs.remove(&name);
                            s.buffers.push(TensorSpec {
                                name,
                                kind: TensorKind::Buffer,
                                shape,
                                persistent,
                            });
                        }
                    }
                }
                Some(Value::None)
            }
            (Value::SelfRef, "register_parameter" | "add_module" | "register_module") => {
                let args = self.eval_args(call);
                let cond = self.cond > 0;
                if let (Some(Value::Str(name)), Some(v)) =
                    (args.pos.first().cloned(), args.pos.get(1).cloned())
                {
                    if let Some(s) = self.self_obj() {
                        s.set(&name, v, cond);
                    }
                } else {
                    self.note(format!("`{method}` with a run-time name was not followed"));
                }
                Some(Value::None)
            }
            (Value::SelfRef, _) => {
                // A method of the class (e.g. `self._make_layer(...)`) runs with the same self.
                let class = self.self_obj().map(|s| s.class.clone())?;
                let (owner, def) = self.find_method(&class, method)?;
                let args = self.eval_args(call);
                let self_idx = self.frames.last().and_then(|f| f.self_idx);
                Some(self.call_function(def, &args, self_idx, Some(owner)))
            }
            (_, "append" | "extend" | "insert") => {
                let args = self.eval_args(call);
                let items: Vec<Value> = match (method, args.pos.as_slice()) {
                    ("append", [v]) => vec![v.clone()],
                    ("insert", [_, v]) => vec![v.clone()],
                    ("extend", [Value::List(v) | Value::Tuple(v)]) => v.clone(),
                    ("extend", [other]) => vec![Value::UnknownList(match other {
                        Value::UnknownList(t) => t.clone(),
                        _ => None,
                    })],
                    _ => return Some(Value::None),
                };
                let repeat = self.repeat > 0;
                let grow = |cur: Value| -> Value {
                    match cur {
                        Value::List(mut v)
                            if !repeat
                                && !items.iter().any(|i| matches!(i, Value::UnknownList(_))) =>
                        {
                            v.extend(items.iter().cloned());
                            Value::List(v)
                        }
                        Value::List(v) => {
                            let t = items
                                .iter()
                                .find(|i| !matches!(i, Value::UnknownList(_)))
                                .cloned()
                                .or_else(|| v.first().cloned());
                            Value::UnknownList(t.map(Box::new))
                        }
                        Value::UnknownList(t) => {
                            Value::UnknownList(t.or_else(|| items.first().cloned().map(Box::new)))
                        }
                        other => other,
                    }
                };
                match recv_expr {
                    Expr::Name(n) => {
                        let name = n.id.to_string();
                        if let Some(cur) = self.frame().locals.get(&name).cloned() {
                            let v = grow(cur);
                            self.frame().locals.insert(name, v);
                        }
                    }
                    Expr::Attribute(a) if matches!(self.eval(&a.value), Value::SelfRef) => {
                        let name = a.attr.to_string();
                        if let Some(s) = self.self_obj() {
                            if let Some((_, m)) = s.modules.iter_mut().find(|(n, _)| *n == name) {
                                append_modules(m, items, repeat);
                            } else if let Some(cur) = s.attrs.get(&name).cloned() {
                                let v = grow(cur);
                                s.attrs.insert(name, v);
                            }
                        }
                    }
                    _ => {}
                }
                Some(Value::None)
            }
            (
                Value::Module(_),
                "to" | "cuda" | "cpu" | "float" | "double" | "half" | "bfloat16" | "train" | "eval"
                | "requires_grad_",
            ) => Some(recv),
            (
                Value::Tensor(_) | Value::Param(_),
                "to" | "cuda" | "cpu" | "float" | "double" | "half" | "bfloat16" | "detach"
                | "clone" | "contiguous" | "requires_grad_" | "normal_" | "uniform_" | "zero_"
                | "fill_",
            ) => Some(recv),
            (Value::Dict(items), "items") => Some(Value::List(
                items
                    .iter()
                    .map(|(k, v)| Value::Tuple(vec![k.clone(), v.clone()]))
                    .collect(),
            )),
            (Value::Dict(items), "keys") => {
                Some(Value::List(items.iter().map(|(k, _)| k.clone()).collect()))
            }
            (Value::Dict(items), "values") => {
                Some(Value::List(items.iter().map(|(_, v)| v.clone()).collect()))
            }
            (Value::Ref(q), "from_pretrained")
                if q.ends_with("Embedding") || q.ends_with("EmbeddingBag") =>
            {
                let args = self.eval_args(call);
                let shape = match args.pos.first() {
                    Some(Value::Tensor(s)) | Some(Value::Param(s)) => s.clone(),
                    _ => None,
                };
                let mut l = Layer::new(q.rsplit('.').next().unwrap_or("Embedding"));
                l.line = self.line(call);
                l.args = self.args_text(call);
                l.tensors.push(TensorSpec {
                    shape,
                    ..TensorSpec::param("weight", vec![])
                });
                Some(Value::Module(Box::new(l)))
            }
            _ => None,
        }
    }

    fn call_ref(&mut self, q: &str, args: CallArgs, line: u32, text: String) -> Value {
        let nn_name = q
            .strip_prefix("torch.nn.modules.")
            .and_then(|r| r.rsplit('.').next())
            .or_else(|| q.strip_prefix("torch.nn."))
            .filter(|n| !n.contains('.'));
        if let Some(name) = nn_name {
            if name == "Buffer" {
                let shape = match args.pos.first() {
                    Some(Value::Tensor(s)) | Some(Value::Param(s)) => s.clone(),
                    _ => None,
                };
                let persistent = !matches!(
                    args.pos.get(1).or_else(|| args
                        .kw
                        .iter()
                        .find(|(k, _)| k == "persistent")
                        .map(|(_, v)| v)),
                    Some(Value::Bool(false))
                );
                return Value::Buffer(shape, persistent);
            }
            if name == "Parameter" {
                let shape = match args.pos.first() {
                    Some(Value::Tensor(s)) | Some(Value::Param(s)) => s.clone(),
                    _ => None,
                };
                return Value::Param(shape);
            }
            let mut layer = if CONTAINERS.contains(&name) {
                container(name, &args)
            } else if let Some(l) = layers::build(name, &args) {
                l
            } else if name.chars().next().is_some_and(char::is_uppercase) {
                let mut l = Layer::new(name);
                l.note = Some(if name.starts_with("Lazy") {
                    "? lazy layer: shapes are inferred at the first forward".to_string()
                } else {
                    format!("? torch.nn.{name} is not modelled")
                });
                l
            } else {
                return Value::Unknown;
            };
            layer.line = line;
            layer.args = text;
            return Value::Module(Box::new(layer));
        }
        if q.starts_with("torch.nn.init.") {
            return args.pos.into_iter().next().unwrap_or(Value::Unknown);
        }
        match q {
            "torch.nn.parameter.Parameter" => match args.pos.first() {
                Some(Value::Tensor(s)) | Some(Value::Param(s)) => Value::Param(s.clone()),
                _ => Value::Param(None),
            },
            "torch.randn" | "torch.rand" | "torch.zeros" | "torch.ones" | "torch.empty"
            | "torch.Tensor" | "torch.FloatTensor" | "torch.randint" => {
                let dims: Vec<&Value> = if q == "torch.randint" {
                    args.kw
                        .iter()
                        .find(|(k, _)| k == "size")
                        .map(|(_, v)| vec![v])
                        .or_else(|| args.pos.last().map(|v| vec![v]))
                        .unwrap_or_default()
                } else {
                    args.pos.iter().collect()
                };
                Value::Tensor(shape_from(&dims))
            }
            "torch.full" => Value::Tensor(args.pos.first().and_then(|v| shape_from(&[v]))),
            "torch.eye" => {
                let n = args.pos.first().map(dim_of);
                let m = args.pos.get(1).map(dim_of).unwrap_or(n.flatten());
                Value::Tensor(n.map(|n| vec![n, m]))
            }
            "torch.arange" => match args.pos.as_slice() {
                [end] => Value::Tensor(Some(vec![dim_of(end)])),
                [start, end] => Value::Tensor(Some(vec![int_of(end)
                    .zip(int_of(start))
                    .and_then(|(e, s)| u64::try_from(e - s).ok())])),
                _ => Value::Tensor(Some(vec![None])),
            },
            "torch.tensor" | "torch.as_tensor" => {
                Value::Tensor(args.pos.first().and_then(literal_shape))
            }
            "torch.zeros_like" | "torch.ones_like" | "torch.randn_like" | "torch.empty_like"
            | "torch.triu" | "torch.tril" | "copy.deepcopy" => {
                args.pos.into_iter().next().unwrap_or(Value::Unknown)
            }
            "collections.OrderedDict" | "builtins.dict" => match args.pos.first() {
                Some(Value::List(items)) | Some(Value::Tuple(items)) => {
                    let mut out = Vec::new();
                    for it in items {
                        match it {
                            Value::Tuple(kv) | Value::List(kv) if kv.len() == 2 => {
                                out.push((kv[0].clone(), kv[1].clone()))
                            }
                            _ => return Value::Unknown,
                        }
                    }
                    Value::Dict(out)
                }
                Some(Value::Dict(d)) => Value::Dict(d.clone()),
                None => Value::Dict(
                    args.kw
                        .into_iter()
                        .map(|(k, v)| (Value::Str(k), v))
                        .collect(),
                ),
                _ => Value::Unknown,
            },
            "builtins.setattr" => {
                if let [Value::SelfRef, Value::Str(name), v] = args.pos.as_slice() {
                    let cond = self.cond > 0;
                    let (name, v) = (name.clone(), v.clone());
                    if let Some(s) = self.self_obj() {
                        s.set(&name, v, cond);
                    }
                } else {
                    self.note("`setattr` with a run-time name was not followed".to_string());
                }
                Value::None
            }
            "builtins.getattr" => match args.pos.as_slice() {
                [Value::SelfRef, Value::Str(name), ..] => {
                    let name = name.clone();
                    self.self_obj()
                        .and_then(|s| s.get(&name))
                        .unwrap_or(Value::Unknown)
                }
                [Value::Ref(m), Value::Str(name), ..] => Value::Ref(format!("{m}.{name}")),
                _ => Value::Unknown,
            },
            _ if q.starts_with("builtins.") || q.starts_with("math.") => {
                builtin(&q[q.find('.').map_or(0, |i| i + 1)..], &args)
            }
            _ => Value::Unknown,
        }
    }

    fn bind_params(
        &mut self,
        def: &'a ast::StmtFunctionDef,
        args: &CallArgs,
        skip_self: bool,
    ) -> Vec<(String, Value, bool)> {
        let p = &def.parameters;
        let mut out: Vec<(String, Value, bool)> = Vec::new();
        let positional: Vec<&ast::ParameterWithDefault> =
            p.posonlyargs.iter().chain(p.args.iter()).collect();
        let positional = if skip_self {
            positional.get(1..).unwrap_or(&[]).to_vec()
        } else {
            positional
        };
        let mut pos = args.pos.iter();
        for param in &positional {
            let name = param.parameter.name.to_string();
            let given = match pos.next() {
                Some(Value::UnknownList(_)) => Some(Value::Unknown),
                Some(v) => Some(v.clone()),
                None => args
                    .kw
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.clone()),
            };
            out.push(self.param_value(name, given, param.default.as_deref(), args.opaque));
        }
        if let Some(va) = &p.vararg {
            let rest: Vec<Value> = pos.cloned().collect();
            out.push((
                va.name.to_string(),
                if args.opaque {
                    Value::Unknown
                } else {
                    Value::Tuple(rest)
                },
                true,
            ));
        }
        for param in p.kwonlyargs.iter() {
            let name = param.parameter.name.to_string();
            let given = args
                .kw
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone());
            out.push(self.param_value(name, given, param.default.as_deref(), args.opaque));
        }
        if let Some(kw) = &p.kwarg {
            let known: HashSet<&str> = out.iter().map(|(n, _, _)| n.as_str()).collect();
            let extra: Vec<(Value, Value)> = args
                .kw
                .iter()
                .filter(|(k, _)| !known.contains(k.as_str()))
                .map(|(k, v)| (Value::Str(k.clone()), v.clone()))
                .collect();
            out.push((
                kw.name.to_string(),
                if args.opaque {
                    Value::Unknown
                } else {
                    Value::Dict(extra)
                },
                true,
            ));
        }
        out
    }

    /// (name, value, given-or-defaulted)
    fn param_value(
        &mut self,
        name: String,
        given: Option<Value>,
        default: Option<&'a Expr>,
        opaque: bool,
    ) -> (String, Value, bool) {
        match (given, default) {
            (Some(v), _) => (name, v, true),
            (None, _) if opaque => (name, Value::Unknown, false),
            (None, Some(d)) => {
                // Defaults are evaluated in the module scope.
                let saved = std::mem::take(&mut self.frames);
                let v = self.eval(d);
                self.frames = saved;
                (name, v, true)
            }
            (None, None) => (name, Value::Unknown, false),
        }
    }

    fn call_function(
        &mut self,
        def: &'a ast::StmtFunctionDef,
        args: &CallArgs,
        self_idx: Option<usize>,
        owner: Option<String>,
    ) -> Value {
        if self.depth >= MAX_DEPTH {
            self.note(format!("calls nested too deeply at `{}`", def.name));
            return Value::Unknown;
        }
        let is_method = self_idx.is_some() || owner.is_some();
        let bound = self.bind_params(def, args, is_method);
        let mut locals = HashMap::new();
        for (n, v, _) in bound {
            locals.insert(n, v);
        }
        self.depth += 1;
        self.frames.push(Frame {
            locals,
            self_idx,
            owner,
        });
        let flow = self.exec_body(&def.body);
        self.frames.pop();
        self.depth -= 1;
        match flow {
            Flow::Return(v) => v,
            _ => Value::None,
        }
    }

    /// Run a project class's `__init__` and return its module tree.
    fn instantiate(&mut self, class: &str, args: &CallArgs, line: u32, text: String) -> Layer {
        let mut layer = Layer::new(class);
        layer.line = line;
        layer.args = text;
        if self.depth >= MAX_DEPTH || self.instantiating.iter().any(|c| c == class) {
            layer.note = Some(format!("? `{class}` is instantiated recursively"));
            return layer;
        }
        self.instantiating.push(class.to_string());
        self.selves.push(SelfObj {
            class: class.to_string(),
            ..SelfObj::default()
        });
        let idx = self.selves.len() - 1;
        if let Some((owner, init)) = self.find_method(class, "__init__") {
            self.call_function(init, args, Some(idx), Some(owner));
        }
        let obj = self.selves.pop().unwrap_or_default();
        self.instantiating.pop();
        for (name, shape) in obj.params {
            layer.tensors.push(TensorSpec {
                name,
                kind: TensorKind::Parameter,
                shape,
                persistent: true,
            });
        }
        layer.tensors.extend(obj.buffers);
        for (name, mut m) in obj.modules {
            m.name = name;
            layer.children.push(m);
        }
        layer
    }
}

fn append_modules(m: &mut Layer, items: Vec<Value>, repeat: bool) {
    if m.note
        .as_deref()
        .is_some_and(|n| n.starts_with("? repeated"))
    {
        return;
    }
    for it in items {
        match it {
            Value::Module(mut c) if !repeat => {
                c.name = m.children.len().to_string();
                m.children.push(*c);
            }
            Value::Module(mut c) => {
                c.name = "*".to_string();
                m.children.push(*c);
                m.note = Some("? repeated a run-time number of times".to_string());
                return;
            }
            Value::UnknownList(t) => {
                if let Some(Value::Module(mut c)) = t.map(|b| *b) {
                    c.name = "*".to_string();
                    m.children.push(*c);
                }
                m.note = Some("? repeated a run-time number of times".to_string());
                return;
            }
            Value::Param(shape) => {
                let name = m.tensors.len().to_string();
                m.tensors.push(TensorSpec {
                    name,
                    kind: TensorKind::Parameter,
                    shape,
                    persistent: true,
                });
            }
            _ => {
                m.note = Some("? contents only known at run time".to_string());
            }
        }
    }
}

/// `nn.Sequential`, `nn.ModuleList`, `nn.ModuleDict`, `nn.ParameterList`, `nn.ParameterDict`.
fn container(name: &str, args: &CallArgs) -> Layer {
    let mut l = Layer::new(name);
    let items: Vec<(Option<String>, Value)> = match (name, args.pos.as_slice()) {
        ("Sequential", [Value::Dict(d)]) | ("ModuleDict" | "ParameterDict", [Value::Dict(d)]) => d
            .iter()
            .map(|(k, v)| {
                (
                    Some(match k {
                        Value::Str(s) => s.clone(),
                        other => other.display(),
                    }),
                    v.clone(),
                )
            })
            .collect(),
        ("Sequential", pos) => pos.iter().map(|v| (None, v.clone())).collect(),
        (_, []) => Vec::new(),
        (_, [Value::List(v) | Value::Tuple(v)]) => v.iter().map(|x| (None, x.clone())).collect(),
        (_, [Value::UnknownList(t)]) => vec![(None, Value::UnknownList(t.clone()))],
        _ => vec![(None, Value::Unknown)],
    };
    let params = name.starts_with("Parameter");
    for (key, v) in items {
        let idx = if params {
            l.tensors.len()
        } else {
            l.children.len()
        };
        let key = key.unwrap_or_else(|| idx.to_string());
        match v {
            Value::Module(mut m) if !params => {
                m.name = key;
                l.children.push(*m);
            }
            Value::Param(shape) | Value::Tensor(shape) if params => {
                l.tensors.push(TensorSpec {
                    name: key,
                    kind: TensorKind::Parameter,
                    shape,
                    persistent: true,
                });
            }
            Value::UnknownList(t) => {
                match t.map(|b| *b) {
                    Some(Value::Module(mut m)) if !params => {
                        m.name = "*".to_string();
                        l.children.push(*m);
                    }
                    Some(Value::Param(shape)) if params => {
                        l.tensors.push(TensorSpec {
                            name: "*".to_string(),
                            kind: TensorKind::Parameter,
                            shape,
                            persistent: true,
                        });
                    }
                    _ => {}
                }
                l.note = Some("? repeated a run-time number of times".to_string());
            }
            _ => {
                l.note = Some("? contents only known at run time".to_string());
            }
        }
    }
    l
}

fn shape_from(dims: &[&Value]) -> Option<Vec<Dim>> {
    match dims {
        [Value::Tuple(items) | Value::List(items)] => Some(items.iter().map(dim_of).collect()),
        [Value::UnknownList(_)] | [Value::Unknown] => None,
        _ => {
            let mut out = Vec::new();
            for d in dims {
                match d {
                    Value::Int(_) | Value::Bool(_) | Value::Unknown => out.push(dim_of(d)),
                    _ => return None,
                }
            }
            Some(out)
        }
    }
}

fn literal_shape(v: &Value) -> Option<Vec<Dim>> {
    match v {
        Value::Int(_) | Value::Float(_) | Value::Bool(_) => Some(vec![]),
        Value::List(items) | Value::Tuple(items) => {
            let inner = match items.first() {
                Some(first) => literal_shape(first)?,
                None => vec![],
            };
            let mut s = vec![Some(items.len() as u64)];
            s.extend(inner);
            Some(s)
        }
        _ => None,
    }
}

fn index(base: Value, key: &Value) -> Value {
    match (base, key) {
        (Value::List(v) | Value::Tuple(v), k) => match int_of(k) {
            Some(i) => {
                let len = v.len() as i64;
                let idx = if i < 0 { i + len } else { i };
                if idx >= 0 && idx < len {
                    v[idx as usize].clone()
                } else {
                    Value::Unknown
                }
            }
            None => Value::Unknown,
        },
        (Value::Dict(items), k) => items
            .into_iter()
            .find(|(kk, _)| kk == k)
            .map_or(Value::Unknown, |(_, v)| v),
        (Value::UnknownList(Some(t)), _) => *t,
        (Value::Module(m), k) => {
            let name = match k {
                Value::Int(i) if *i >= 0 => i.to_string(),
                Value::Int(i) => {
                    let idx = m.children.len() as i64 + i;
                    if idx < 0 {
                        return Value::Unknown;
                    }
                    idx.to_string()
                }
                Value::Str(s) => s.clone(),
                _ => return Value::Unknown,
            };
            m.children
                .into_iter()
                .find(|c| c.name == name)
                .map_or(Value::Unknown, |c| Value::Module(Box::new(c)))
        }
        _ => Value::Unknown,
    }
}

fn slice(base: Value, lower: Option<Value>, upper: Option<Value>, step: Option<Value>) -> Value {
    let (Value::List(v) | Value::Tuple(v)) = base.clone() else {
        return match base {
            Value::UnknownList(t) => Value::UnknownList(t),
            _ => Value::Unknown,
        };
    };
    let len = v.len() as i64;
    let norm = |x: Option<Value>, default: i64| -> Option<i64> {
        match x {
            None | Some(Value::None) => Some(default),
            Some(x) => {
                let i = int_of(&x)?;
                Some(if i < 0 { (i + len).max(0) } else { i.min(len) })
            }
        }
    };
    let step = match step {
        None | Some(Value::None) => 1,
        Some(s) => match int_of(&s) {
            Some(s) if s > 0 => s,
            _ => return Value::Unknown,
        },
    };
    let (Some(lo), Some(hi)) = (norm(lower, 0), norm(upper, len)) else {
        return Value::Unknown;
    };
    let out: Vec<Value> = (lo..hi.max(lo))
        .step_by(step as usize)
        .filter_map(|i| v.get(i as usize).cloned())
        .collect();
    match base {
        Value::Tuple(_) => Value::Tuple(out),
        _ => Value::List(out),
    }
}

fn compare(l: &Value, op: ast::CmpOp, r: &Value) -> Option<bool> {
    use ast::CmpOp as C;
    let num = |v: &Value| -> Option<f64> {
        match v {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            _ => None,
        }
    };
    let known = |v: &Value| {
        !matches!(
            v,
            Value::Unknown
                | Value::UnknownList(_)
                | Value::Tensor(_)
                | Value::Param(_)
                | Value::SelfRef
        )
    };
    match op {
        C::Is | C::IsNot => {
            let same = match (l, r) {
                (Value::None, Value::None) => Some(true),
                (Value::None, x) | (x, Value::None) => known(x).then_some(false),
                (Value::Bool(a), Value::Bool(b)) => Some(a == b),
                _ => None,
            }?;
            Some(if matches!(op, C::Is) { same } else { !same })
        }
        C::In | C::NotIn => {
            let found = match r {
                Value::List(v) | Value::Tuple(v) => {
                    if !known(l) || v.iter().any(|x| !known(x)) {
                        return None;
                    }
                    v.contains(l)
                }
                Value::Dict(items) => items.iter().any(|(k, _)| k == l),
                Value::Str(s) => match l {
                    Value::Str(sub) => s.contains(sub.as_str()),
                    _ => return None,
                },
                _ => return None,
            };
            Some(if matches!(op, C::In) { found } else { !found })
        }
        _ => {
            if let (Some(a), Some(b)) = (num(l), num(r)) {
                return Some(match op {
                    C::Eq => a == b,
                    C::NotEq => a != b,
                    C::Lt => a < b,
                    C::LtE => a <= b,
                    C::Gt => a > b,
                    C::GtE => a >= b,
                    _ => return None,
                });
            }
            if !known(l) || !known(r) {
                return None;
            }
            match op {
                C::Eq => Some(l == r),
                C::NotEq => Some(l != r),
                _ => match (l, r) {
                    (Value::Str(a), Value::Str(b)) => Some(match op {
                        C::Lt => a < b,
                        C::LtE => a <= b,
                        C::Gt => a > b,
                        _ => a >= b,
                    }),
                    _ => None,
                },
            }
        }
    }
}

fn builtin(name: &str, args: &CallArgs) -> Value {
    if args.opaque {
        return Value::Unknown;
    }
    let a = &args.pos;
    match name {
        "range" => {
            let ints: Option<Vec<i64>> = a.iter().map(int_of).collect();
            let Some(ints) = ints else {
                return Value::UnknownList(Some(Box::new(Value::Unknown)));
            };
            let (start, stop, step) = match ints.as_slice() {
                [stop] => (0, *stop, 1),
                [start, stop] => (*start, *stop, 1),
                [start, stop, step] if *step != 0 => (*start, *stop, *step),
                _ => return Value::Unknown,
            };
            let mut out = Vec::new();
            let mut i = start;
            while (step > 0 && i < stop) || (step < 0 && i > stop) {
                if out.len() > MAX_ITER {
                    return Value::UnknownList(Some(Box::new(Value::Unknown)));
                }
                out.push(Value::Int(i));
                i += step;
            }
            Value::List(out)
        }
        "len" => match a.first() {
            Some(Value::List(v) | Value::Tuple(v)) => Value::Int(v.len() as i64),
            Some(Value::Dict(v)) => Value::Int(v.len() as i64),
            Some(Value::Str(s)) => Value::Int(s.chars().count() as i64),
            Some(Value::Module(m)) if m.note.is_none() => Value::Int(m.children.len() as i64),
            _ => Value::Unknown,
        },
        "int" => match a.first() {
            Some(Value::Int(i)) => Value::Int(*i),
            Some(Value::Bool(b)) => Value::Int(i64::from(*b)),
            Some(Value::Float(f)) if f.is_finite() && f.abs() < 9.0e18 => {
                Value::Int(f.trunc() as i64)
            }
            Some(Value::Str(s)) => s.trim().parse().map_or(Value::Unknown, Value::Int),
            _ => Value::Unknown,
        },
        "float" => match a.first() {
            Some(Value::Int(i)) => Value::Float(*i as f64),
            Some(Value::Float(f)) => Value::Float(*f),
            _ => Value::Unknown,
        },
        "bool" => a
            .first()
            .and_then(Value::truthy)
            .map_or(Value::Unknown, Value::Bool),
        "abs" => match a.first() {
            Some(Value::Int(i)) => i.checked_abs().map_or(Value::Unknown, Value::Int),
            Some(Value::Float(f)) => Value::Float(f.abs()),
            _ => Value::Unknown,
        },
        "min" | "max" => {
            let vals: Vec<Value> = match a.as_slice() {
                [Value::List(v) | Value::Tuple(v)] => v.clone(),
                many => many.to_vec(),
            };
            let ints: Option<Vec<i64>> = vals.iter().map(int_of).collect();
            match ints {
                Some(v) if !v.is_empty() => Value::Int(if name == "min" {
                    v.iter().copied().min().unwrap_or(0)
                } else {
                    v.iter().copied().max().unwrap_or(0)
                }),
                _ => Value::Unknown,
            }
        }
        "sum" => match a.first() {
            Some(Value::List(v) | Value::Tuple(v)) => {
                let ints: Option<Vec<i64>> = v.iter().map(int_of).collect();
                ints.and_then(|v| v.iter().try_fold(0i64, |acc, x| acc.checked_add(*x)))
                    .map_or(Value::Unknown, Value::Int)
            }
            _ => Value::Unknown,
        },
        "round" => match a.first() {
            Some(Value::Float(f)) if a.len() == 1 && f.is_finite() && f.abs() < 9.0e18 => {
                Value::Int(round_half_even(*f))
            }
            Some(Value::Int(i)) => Value::Int(*i),
            _ => Value::Unknown,
        },
        "sqrt" => match a.first() {
            Some(Value::Int(i)) if *i >= 0 => Value::Float((*i as f64).sqrt()),
            Some(Value::Float(f)) if *f >= 0.0 => Value::Float(f.sqrt()),
            _ => Value::Unknown,
        },
        "ceil" | "floor" => match a.first() {
            Some(Value::Int(i)) => Value::Int(*i),
            Some(Value::Float(f)) if f.is_finite() && f.abs() < 9.0e18 => {
                Value::Int(if name == "ceil" { f.ceil() } else { f.floor() } as i64)
            }
            _ => Value::Unknown,
        },
        "list" | "tuple" => {
            let items = match a.first() {
                None => Some(Vec::new()),
                Some(Value::List(v) | Value::Tuple(v)) => Some(v.clone()),
                Some(Value::Dict(d)) => Some(d.iter().map(|(k, _)| k.clone()).collect()),
                Some(Value::UnknownList(t)) => return Value::UnknownList(t.clone()),
                _ => None,
            };
            match items {
                Some(v) if name == "list" => Value::List(v),
                Some(v) => Value::Tuple(v),
                None => Value::Unknown,
            }
        }
        "reversed" => match a.first() {
            Some(Value::List(v) | Value::Tuple(v)) => {
                Value::List(v.iter().rev().cloned().collect())
            }
            _ => Value::Unknown,
        },
        "zip" => {
            let lists: Option<Vec<Vec<Value>>> = a
                .iter()
                .map(|x| match x {
                    Value::List(v) | Value::Tuple(v) => Some(v.clone()),
                    _ => None,
                })
                .collect();
            match lists {
                Some(lists) if !lists.is_empty() => {
                    let n = lists.iter().map(Vec::len).min().unwrap_or(0);
                    Value::List(
                        (0..n)
                            .map(|i| Value::Tuple(lists.iter().map(|l| l[i].clone()).collect()))
                            .collect(),
                    )
                }
                _ => {
                    Value::UnknownList(Some(Box::new(Value::Tuple(vec![Value::Unknown; a.len()]))))
                }
            }
        }
        "enumerate" => match a.first() {
            Some(Value::List(v) | Value::Tuple(v)) => {
                let start = a.get(1).and_then(int_of).unwrap_or(0);
                Value::List(
                    v.iter()
                        .enumerate()
                        .map(|(i, x)| Value::Tuple(vec![Value::Int(start + i as i64), x.clone()]))
                        .collect(),
                )
            }
            Some(Value::UnknownList(t)) => Value::UnknownList(Some(Box::new(Value::Tuple(vec![
                Value::Unknown,
                t.as_deref().cloned().unwrap_or(Value::Unknown),
            ])))),
            _ => Value::UnknownList(Some(Box::new(Value::Tuple(vec![
                Value::Unknown,
                Value::Unknown,
            ])))),
        },
        "str" => match a.first() {
            Some(Value::Int(i)) => Value::Str(i.to_string()),
            Some(Value::Str(s)) => Value::Str(s.clone()),
            _ => Value::Unknown,
        },
        _ => Value::Unknown,
    }
}

fn round_half_even(f: f64) -> i64 {
    let r = f.round();
    if (f - f.trunc()).abs() == 0.5 && (r as i64) % 2 != 0 {
        (r - f.signum()) as i64
    } else {
        r as i64
    }
}

fn is_module_base(q: &str) -> bool {
    matches!(
        q,
        "torch.nn.Module"
            | "torch.nn.modules.Module"
            | "torch.nn.modules.module.Module"
            | "pytorch_lightning.LightningModule"
            | "pytorch_lightning.core.LightningModule"
            | "lightning.LightningModule"
            | "lightning.pytorch.LightningModule"
    )
}

fn qualified(expr: &Expr, imports: &HashMap<String, String>) -> Option<String> {
    match expr {
        Expr::Name(n) => Some(
            imports
                .get(n.id.as_str())
                .cloned()
                .unwrap_or_else(|| n.id.to_string()),
        ),
        Expr::Attribute(a) => Some(format!(
            "{}.{}",
            qualified(&a.value, imports)?,
            a.attr.as_str()
        )),
        _ => None,
    }
}

pub(crate) fn summarize(source: &str, class: Option<&str>) -> Result<Vec<ModelCard>, SummaryError> {
    let parsed = ruff_python_parser::parse_module(source).map_err(|e| {
        let index = LineIndex::new(source);
        SummaryError::Parse {
            line: index.line(e.location.start().to_usize()),
            message: e.error.to_string(),
        }
    })?;
    let body = &parsed.syntax().body;
    let mut ctx = Ctx {
        source,
        index: LineIndex::new(source),
        imports: HashMap::new(),
        star_nn: false,
        classes: HashMap::new(),
        module_classes: HashSet::new(),
        functions: HashMap::new(),
        globals: HashMap::new(),
        selves: Vec::new(),
        frames: Vec::new(),
        cond: 0,
        repeat: 0,
        budget: BUDGET,
        depth: 0,
        instantiating: Vec::new(),
        notes: Vec::new(),
    };
    // Imports, classes, functions and module-level constants, in order (top level and inside
    // `try`/`if` blocks at top level).
    let mut order: Vec<&ast::StmtClassDef> = Vec::new();
    let mut stack: Vec<&Stmt> = body.iter().rev().collect();
    while let Some(stmt) = stack.pop() {
        match stmt {
            Stmt::Import(_) => {
                ctx.exec(stmt);
            }
            Stmt::ImportFrom(imp) => {
                let module = imp
                    .module
                    .as_ref()
                    .map(|m| m.to_string())
                    .unwrap_or_default();
                if imp.names.iter().any(|a| a.name.as_str() == "*") {
                    if module == "torch.nn" {
                        ctx.star_nn = true;
                    }
                } else {
                    ctx.exec(stmt);
                }
            }
            Stmt::ClassDef(c) => {
                ctx.classes.insert(c.name.to_string(), c);
                order.push(c);
            }
            Stmt::FunctionDef(f) => {
                ctx.functions.insert(f.name.to_string(), f);
            }
            Stmt::Assign(_) | Stmt::AnnAssign(_) | Stmt::AugAssign(_) => {
                ctx.exec(stmt);
                if let Some(f) = ctx.frames.pop() {
                    ctx.globals.extend(f.locals);
                }
            }
            Stmt::Try(t) => stack.extend(t.body.iter().rev()),
            Stmt::If(i) => stack.extend(i.body.iter().rev()),
            _ => {}
        }
    }
    // nn.Module subclasses, directly or through other project classes.
    loop {
        let before = ctx.module_classes.len();
        for c in &order {
            let Some(args) = &c.arguments else { continue };
            let derives = args.args.iter().any(|b| {
                let q = qualified(b, &ctx.imports).unwrap_or_default();
                is_module_base(&q)
                    || (ctx.star_nn && q == "Module")
                    || matches!(b, Expr::Name(n) if ctx.module_classes.contains(n.id.as_str()))
            });
            if derives {
                ctx.module_classes.insert(c.name.to_string());
            }
        }
        if ctx.module_classes.len() == before {
            break;
        }
    }
    let targets: Vec<&ast::StmtClassDef> = match class {
        Some(name) => {
            let c = order
                .iter()
                .find(|c| c.name.as_str() == name)
                .ok_or_else(|| SummaryError::NoSuchClass(name.to_string()))?;
            if !ctx.module_classes.contains(name) {
                return Err(SummaryError::NotAModule(name.to_string()));
            }
            vec![*c]
        }
        None => order
            .iter()
            .filter(|c| ctx.module_classes.contains(c.name.as_str()))
            .copied()
            .collect(),
    };
    let mut cards = Vec::new();
    for c in targets {
        ctx.budget = BUDGET;
        ctx.notes.clear();
        ctx.frames.clear();
        let name = c.name.to_string();
        let line = ctx.line(c);
        let init_args = match ctx.find_method(&name, "__init__") {
            Some((_, init)) => ctx
                .bind_params(init, &CallArgs::default(), true)
                .into_iter()
                .map(|(n, v, _)| (n, v.display()))
                .collect(),
            None => Vec::new(),
        };
        let mut root = ctx.instantiate(&name, &CallArgs::default(), line, String::new());
        root.name = name.clone();
        root.finalize();
        let mut state_dict = Vec::new();
        collect_state(&root, "", &mut state_dict);
        let bases = c
            .arguments
            .as_ref()
            .map(|a| {
                a.args
                    .iter()
                    .map(|b| {
                        source
                            .get(b.range().start().to_usize()..b.range().end().to_usize())
                            .unwrap_or("")
                            .to_string()
                    })
                    .collect()
            })
            .unwrap_or_default();
        cards.push(ModelCard {
            name,
            line,
            bases,
            init_args,
            total_params: root.params,
            known_params: root.known_params,
            unknown_layers: count_unknown(&root),
            root,
            state_dict,
            notes: ctx.notes.clone(),
        });
    }
    Ok(cards)
}

//! What a `torch.save` writes, as the weights-only unpickler of `torch.load` sees it.
//!
//! `torch.load(..., weights_only=True)` (the default since torch 2.6) rebuilds tensors,
//! primitive values (numbers, strings, `None`, bytes) and containers of them (dict, list,
//! tuple, set, `OrderedDict`), which is what `state_dict()`s are made of. Everything else
//! needs the full unpickler: whole `nn.Module`s, optimizer and scheduler objects (not their
//! `state_dict()`), `GradScaler`s, data loaders, `argparse.Namespace`, NumPy values and
//! instances of the project's own classes.
//!
//! [`classify`] answers that for one saved expression; [`file_saves`] collects and classifies
//! every `torch.save` of a file. Rules ask:
//! - `torch-load-without-weights-only`: is adding `weights_only=True` safe for the loads of a
//!   file whose saves all hold [`Saved::WeightsOnly`] content?
//! - `checkpoint-fails-weights-only-load`: which save writes an object the weights-only
//!   load rejects ([`Saved::Rejected`], with the object's range)?
//!
//! [`weights_only_load_fails`] is the one predicate both use, so the two rules never both
//! report one call. The analysis is per file (the saves the same file or notebook makes);
//! the project model can feed it the saves of other files later through the same types.
//! Precision first: anything not known is [`Saved::Unknown`], never "weights only".
use crate::bindings::Scopes;
use crate::classes::ModuleClasses;
use crate::helpers;
use crate::kinds::{Kind, KindContext, KindTable};
use crate::reaching::Def;

use ruff_python_ast::{self as ast, Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};

/// An object the weights-only unpickler rejects.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RejectedKind {
    /// A whole `nn.Module` (not its `state_dict()`).
    Module,
    /// An optimizer object (not its `state_dict()`).
    Optimizer,
    /// A learning-rate scheduler object.
    Scheduler,
    /// A `GradScaler` object.
    GradScaler,
    /// A `DataLoader`.
    DataLoader,
    /// An `argparse.Namespace` (`args`); `vars(args)` is a plain dict.
    Namespace,
    /// A NumPy array or scalar.
    Numpy,
    /// An instance of a class of the project (by name).
    CustomClass(String),
}

impl RejectedKind {
    /// How to name it in a message: "a whole nn.Module", "an optimizer object", ...
    pub fn describe(&self) -> String {
        match self {
            RejectedKind::Module => "a whole nn.Module".into(),
            RejectedKind::Optimizer => "an optimizer object".into(),
            RejectedKind::Scheduler => "an LR scheduler object".into(),
            RejectedKind::GradScaler => "a GradScaler object".into(),
            RejectedKind::DataLoader => "a DataLoader".into(),
            RejectedKind::Namespace => "an argparse.Namespace".into(),
            RejectedKind::Numpy => "a NumPy value".into(),
            RejectedKind::CustomClass(c) => format!("an instance of `{c}`"),
        }
    }

    /// What to save instead, for a suggestion.
    pub fn remedy(&self) -> &'static str {
        match self {
            RejectedKind::Module
            | RejectedKind::Optimizer
            | RejectedKind::Scheduler
            | RejectedKind::GradScaler => "save its `state_dict()`",
            RejectedKind::Namespace => "save `vars(args)`",
            RejectedKind::Numpy => "save a tensor (`torch.from_numpy(...)`) or a Python number",
            RejectedKind::DataLoader | RejectedKind::CustomClass(_) => {
                "allow-list the class with `torch.serialization.add_safe_globals`, or save plain data"
            }
        }
    }
}

/// What a saved expression holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Saved {
    /// Only tensors, state_dicts, primitive values and containers of them: loads with
    /// `weights_only=True`.
    WeightsOnly,
    /// Holds an object the weights-only unpickler rejects: what, and the expression.
    Rejected(RejectedKind, TextRange),
    /// Not known.
    Unknown,
}

impl Saved {
    /// Combine the contents of two parts of one container: a rejection wins, then unknown.
    pub fn and(self, other: Saved) -> Saved {
        match (self, other) {
            (r @ Saved::Rejected(..), _) | (_, r @ Saved::Rejected(..)) => r,
            (Saved::Unknown, _) | (_, Saved::Unknown) => Saved::Unknown,
            _ => Saved::WeightsOnly,
        }
    }
}

/// What [`classify`] looks names up in.
#[derive(Clone, Copy)]
pub struct SaveContext<'s> {
    /// Value kinds at the save (its function, the module, `self.<attr>`).
    pub kinds: KindContext<'s>,
    /// The statements of the scope the save is in (function body or module body): where
    /// `state = {...}` and `state["k"] = v` are looked up.
    pub body: &'s [Stmt],
    /// Bindings.
    pub scopes: &'s Scopes,
    /// Classes of the file.
    pub classes: &'s ModuleClasses,
}

/// Container-building calls whose arguments are the content.
const CONTAINERS: &[&str] = &[
    "dict",
    "list",
    "tuple",
    "set",
    "collections.OrderedDict",
    "copy.deepcopy",
    "copy.copy",
];

/// Methods whose result is a state_dict or other plain data.
const PLAIN_METHODS: &[&str] = &[
    "state_dict",
    "item",
    "tolist",
    "get_last_lr",
    "get_lr",
    "keys",
];

/// Limit on how deep names are followed (`a = b; b = {...}`).
const MAX_DEPTH: u32 = 6;

/// What `obj`, saved at offset `at`, holds. See the module docs.
pub fn classify(obj: &Expr, cx: &SaveContext, at: TextSize) -> Saved {
    classify_at(obj, cx, at, 0)
}

/// The string-keyed items of a saved dict: a dict literal, `dict(k=v, ...)`, or a name bound
/// to one before `at` (items stored later with `name["k"] = v` included). `None` when the
/// object is not such a dict (or has a non-literal key or a `**` splat), or when more than one
/// binding of the name reaches `at`.
pub fn dict_items<'e>(
    obj: &'e Expr,
    cx: &SaveContext<'e>,
    at: TextSize,
) -> Option<Vec<(String, &'e Expr)>> {
    dict_items_at(obj, cx, at, 0)
}

fn dict_items_at<'e>(
    obj: &'e Expr,
    cx: &SaveContext<'e>,
    at: TextSize,
    depth: u32,
) -> Option<Vec<(String, &'e Expr)>> {
    if depth > MAX_DEPTH {
        return None;
    }
    match obj {
        Expr::Dict(d) => {
            let mut out = Vec::new();
            for item in &d.items {
                let key = helpers::str_value(item.key.as_ref()?)?;
                out.push((key.to_string(), &item.value));
            }
            Some(out)
        }
        Expr::Call(c) => {
            let q = cx.scopes.resolve(&c.func);
            let name = q.as_deref().or_else(|| helpers::name_of(&c.func))?;
            if !matches!(name, "dict" | "collections.OrderedDict" | "OrderedDict")
                || !c.arguments.args.is_empty()
            {
                return None;
            }
            c.arguments
                .keywords
                .iter()
                .map(|k| Some((k.arg.as_ref()?.to_string(), &k.value)))
                .collect()
        }
        Expr::Name(n) => match assignments_reaching(cx.body, n.id.as_str(), at)?.as_slice() {
            [Assigned::Value(v)] => {
                let v = *v;
                let mut items = dict_items_at(v, cx, v.start(), depth + 1)?;
                let mut extra = Vec::new();
                for_each_assign(cx.body, &mut |target, value| {
                    if let Expr::Subscript(s) = target {
                        if value.start() >= v.end()
                            && value.start() < at
                            && helpers::name_of(&s.value) == Some(n.id.as_str())
                        {
                            match helpers::str_value(&s.slice) {
                                Some(k) => extra.push(Some((k.to_string(), value))),
                                None => extra.push(None),
                            }
                        }
                    }
                });
                for e in extra {
                    let (k, v) = e?;
                    items.retain(|(old, _)| *old != k);
                    items.push((k, v));
                }
                Some(items)
            }
            _ => None,
        },
        _ => None,
    }
}

fn classify_at(obj: &Expr, cx: &SaveContext, at: TextSize, depth: u32) -> Saved {
    if depth > MAX_DEPTH {
        return Saved::Unknown;
    }
    let rec = |e: &Expr| classify_at(e, cx, at, depth + 1);
    match obj {
        Expr::NumberLiteral(_)
        | Expr::StringLiteral(_)
        | Expr::BytesLiteral(_)
        | Expr::BooleanLiteral(_)
        | Expr::NoneLiteral(_)
        | Expr::FString(_) => Saved::WeightsOnly,
        Expr::Dict(d) => d.items.iter().fold(Saved::WeightsOnly, |acc, item| {
            let key = item.key.as_ref().map_or(Saved::WeightsOnly, rec);
            acc.and(key).and(rec(&item.value))
        }),
        Expr::List(l) => all(l.elts.iter(), rec),
        Expr::Tuple(t) => all(t.elts.iter(), rec),
        Expr::Set(s) => all(s.elts.iter(), rec),
        Expr::If(i) => rec(&i.body).and(rec(&i.orelse)),
        Expr::DictComp(c) => {
            // `{k: v.cpu() for k, v in model.state_dict().items()}`
            if c.generators
                .iter()
                .all(|g| iterates_plain(&g.iter, cx, at, depth))
            {
                Saved::WeightsOnly
            } else {
                Saved::Unknown
            }
        }
        Expr::Call(call) => classify_call(call, cx, at, depth),
        Expr::Name(n) => {
            let kind = cx.kinds.kind(obj);
            if let Some(s) = from_kind(&kind, obj.range()) {
                return s;
            }
            let Some(defs) = assignments_reaching(cx.body, n.id.as_str(), at) else {
                return Saved::Unknown;
            };
            // Every value that may reach the save: a rejection on one path wins.
            defs.into_iter().fold(Saved::WeightsOnly, |acc, d| {
                acc.and(match d {
                    Assigned::Value(v) => {
                        let base = classify_at(v, cx, v.start(), depth + 1);
                        // Items set later: `state["optimizer"] = optimizer`.
                        item_stores(cx.body, n.id.as_str(), v.end(), at)
                            .into_iter()
                            .fold(base, |acc, e| {
                                acc.and(classify_at(e, cx, e.start(), depth + 1))
                            })
                    }
                    Assigned::Namespace => Saved::Rejected(RejectedKind::Namespace, obj.range()),
                    Assigned::Counter => Saved::WeightsOnly,
                    Assigned::Other => Saved::Unknown,
                })
            })
        }
        Expr::Attribute(a) => {
            if matches!(a.attr.as_str(), "data" | "grad" | "T" | "mT") {
                return match cx.kinds.kind(&a.value) {
                    Kind::Tensor => Saved::WeightsOnly,
                    _ => Saved::Unknown,
                };
            }
            from_kind(&cx.kinds.kind(obj), obj.range()).unwrap_or(Saved::Unknown)
        }
        Expr::Subscript(_) | Expr::BinOp(_) => match cx.kinds.kind(obj) {
            Kind::Tensor => Saved::WeightsOnly,
            _ => Saved::Unknown,
        },
        _ => Saved::Unknown,
    }
}

fn all<'e>(items: impl Iterator<Item = &'e Expr>, rec: impl Fn(&Expr) -> Saved) -> Saved {
    items.fold(Saved::WeightsOnly, |acc, e| {
        let part = match e {
            Expr::Starred(s) => rec(&s.value),
            e => rec(e),
        };
        acc.and(part)
    })
}

/// The content a value kind implies, when the kind settles it.
fn from_kind(kind: &Kind, range: TextRange) -> Option<Saved> {
    Some(match kind {
        Kind::Tensor => Saved::WeightsOnly,
        Kind::Module => Saved::Rejected(RejectedKind::Module, range),
        Kind::Optimizer(_) => Saved::Rejected(RejectedKind::Optimizer, range),
        Kind::Scheduler(_) => Saved::Rejected(RejectedKind::Scheduler, range),
        Kind::GradScaler => Saved::Rejected(RejectedKind::GradScaler, range),
        Kind::DataLoader => Saved::Rejected(RejectedKind::DataLoader, range),
        _ => return None,
    })
}

/// Does a comprehension iterate plain data: `<state_dict>.items()`, `range(...)`, a list of
/// literals?
fn iterates_plain(iter: &Expr, cx: &SaveContext, at: TextSize, depth: u32) -> bool {
    match iter {
        Expr::Call(c) => match helpers::method_call(c) {
            Some(("items" | "keys" | "values", recv)) => {
                classify_at(recv, cx, at, depth + 1) == Saved::WeightsOnly
            }
            _ => helpers::name_of(&c.func) == Some("range"),
        },
        _ => false,
    }
}

fn classify_call(call: &ExprCall, cx: &SaveContext, at: TextSize, depth: u32) -> Saved {
    let rec = |e: &Expr| classify_at(e, cx, at, depth + 1);
    if let Some((method, recv)) = helpers::method_call(call) {
        if PLAIN_METHODS.contains(&method) {
            return Saved::WeightsOnly;
        }
        // `model.module.state_dict()` is caught above; `sd.copy()`, `t.cpu()` keep the content.
        if matches!(method, "copy" | "cpu" | "detach" | "clone" | "contiguous") {
            return match cx.kinds.kind(&Expr::Call(call.clone())) {
                Kind::Tensor => Saved::WeightsOnly,
                _ => rec(recv),
            };
        }
    }
    let kind = cx.kinds.kind(&Expr::Call(call.clone()));
    if let Some(s) = from_kind(&kind, call.range()) {
        return s;
    }
    let q = cx.scopes.resolve(&call.func);
    let name = q
        .as_deref()
        .or_else(|| helpers::name_of(&call.func))
        .unwrap_or("");
    if CONTAINERS.contains(&name) || name == "OrderedDict" {
        let args = all(call.arguments.args.iter(), rec);
        return call
            .arguments
            .keywords
            .iter()
            .fold(args, |acc, k| acc.and(rec(&k.value)));
    }
    if name == "vars" {
        // `vars(args)`: the Namespace's attributes as a dict of plain values.
        return Saved::WeightsOnly;
    }
    if matches!(name, "int" | "float" | "str" | "bool" | "len" | "round") {
        return Saved::WeightsOnly;
    }
    if name == "argparse.Namespace" {
        return Saved::Rejected(RejectedKind::Namespace, call.range());
    }
    if name.starts_with("numpy.") {
        return Saved::Rejected(RejectedKind::Numpy, call.range());
    }
    // A class of this file that is not a Module (those are `Kind::Module` above).
    if let Expr::Name(n) = &*call.func {
        let id = n.id.as_str();
        if cx.classes.is_class(id) && cx.scopes.lookup(id).is_none() {
            return Saved::Rejected(RejectedKind::CustomClass(id.to_string()), call.range());
        }
    }
    Saved::Unknown
}

/// How a name got its value.
enum Assigned<'a> {
    /// `name = <expr>`.
    Value(&'a Expr),
    /// `name = parser.parse_args()` (or `parse_known_args()[0]`).
    Namespace,
    /// A loop counter: `for name in range(...)`, `for name, x in enumerate(...)`.
    Counter,
    /// Any other binding (a parameter, unpacking, `+=`, another loop target).
    Other,
}

/// The bindings of `name` that reach `at` in `body` (the reaching-definitions engine, as the
/// project summary asks it at a save: nested blocks included, not nested functions or
/// classes). `None` when none does.
fn assignments_reaching<'a>(
    body: &'a [Stmt],
    name: &str,
    at: TextSize,
) -> Option<Vec<Assigned<'a>>> {
    let defs = crate::reaching::reaching(body, name, at)?;
    Some(defs.into_iter().map(assigned).collect())
}

fn assigned(def: Def<'_>) -> Assigned<'_> {
    match def {
        Def::Value(value) => {
            if helpers::parsed_cli_args(value) {
                return Assigned::Namespace;
            }
            Assigned::Value(value)
        }
        Def::ForIter(Expr::Call(c), index) => match (helpers::name_of(&c.func), index) {
            (Some("range"), None) | (Some("enumerate"), Some(0)) => Assigned::Counter,
            _ => Assigned::Other,
        },
        _ => Assigned::Other,
    }
}

/// Values stored into items of `name` between `from` and `to`: `name["k"] = v`.
fn item_stores<'a>(body: &'a [Stmt], name: &str, from: TextSize, to: TextSize) -> Vec<&'a Expr> {
    let mut out = Vec::new();
    for_each_assign(body, &mut |target, value| {
        if let Expr::Subscript(s) = target {
            if value.start() >= from
                && value.start() < to
                && helpers::name_of(&s.value) == Some(name)
            {
                out.push(value);
            }
        }
    });
    out
}

/// Every single-target assignment of `body` (nested blocks, not nested defs), in order.
fn for_each_assign<'a>(body: &'a [Stmt], f: &mut impl FnMut(&'a Expr, &'a Expr)) {
    helpers::for_each_own_stmt(body, &mut |stmt| match stmt {
        Stmt::Assign(a) => {
            if let [t] = a.targets.as_slice() {
                f(t, &a.value);
            }
        }
        Stmt::AnnAssign(a) => {
            if let Some(v) = &a.value {
                f(&a.target, v);
            }
        }
        _ => {}
    });
}

/// One `torch.save` of a file and what it writes.
#[derive(Clone, Debug)]
pub struct SaveSite {
    /// The whole call.
    pub call: TextRange,
    /// The saved object expression.
    pub object: TextRange,
    /// The path (or file object) argument, when given.
    pub path: Option<TextRange>,
    /// Source text of the path argument (for matching a load's path).
    pub path_text: Option<String>,
    /// What it writes.
    pub content: Saved,
}

/// Every `torch.save(obj, f)` of a module (functions and methods included), classified.
/// `scopes` must resolve the module's imports (the checker's scopes at module level do).
pub fn file_saves(
    module: &[Stmt],
    source: &str,
    scopes: &Scopes,
    classes: &ModuleClasses,
) -> Vec<SaveSite> {
    if memchr::memmem::find(source.as_bytes(), b"save").is_none() {
        return Vec::new();
    }
    let module_kinds = KindTable::infer(module, None, scopes, classes, None);
    let mut out = Vec::new();
    let text = |r: TextRange| {
        source
            .get(r.start().to_usize()..r.end().to_usize())
            .unwrap_or("")
    };
    let mut scan =
        |body: &[Stmt], local: &KindTable, outer: Option<&KindTable>, attrs: Option<&KindTable>| {
            let cx = SaveContext {
                kinds: KindContext {
                    local,
                    outer,
                    attrs,
                    scopes,
                    classes,
                },
                body,
                scopes,
                classes,
            };
            for call in helpers::own_calls(body) {
                let Some(q) = scopes.resolve(&call.func) else {
                    continue;
                };
                if !crate::helpers::is_torch_save(&q) {
                    continue;
                }
                let Some(obj) = helpers::argument(call, "obj", 0) else {
                    continue;
                };
                let path = helpers::argument(call, "f", 1);
                out.push(SaveSite {
                    call: call.range(),
                    object: obj.range(),
                    path: path.map(Ranged::range),
                    path_text: path.map(|p| text(p.range()).to_string()),
                    content: classify(obj, &cx, call.start()),
                });
            }
        };
    scan(module, &module_kinds, None, None);
    let mut functions: Vec<(&ast::StmtFunctionDef, Option<&ast::StmtClassDef>)> = Vec::new();
    collect_functions(module, None, &mut functions);
    let mut class_kinds: Vec<(TextSize, KindTable)> = Vec::new();
    for (f, class) in functions {
        if helpers::own_calls(&f.body).is_empty() {
            continue;
        }
        let local = KindTable::infer(
            &f.body,
            Some(&f.parameters),
            scopes,
            classes,
            Some(&module_kinds),
        );
        let attrs = class.map(|c| {
            if let Some((_, t)) = class_kinds.iter().find(|(s, _)| *s == c.start()) {
                return t.clone();
            }
            let t = KindTable::infer_self_attributes(c, scopes, classes);
            class_kinds.push((c.start(), t.clone()));
            t
        });
        scan(&f.body, &local, Some(&module_kinds), attrs.as_ref());
    }
    out
}

fn collect_functions<'a>(
    body: &'a [Stmt],
    class: Option<&'a ast::StmtClassDef>,
    out: &mut Vec<(&'a ast::StmtFunctionDef, Option<&'a ast::StmtClassDef>)>,
) {
    for stmt in body {
        match stmt {
            Stmt::FunctionDef(f) => {
                out.push((f, class));
                collect_functions(&f.body, None, out);
            }
            Stmt::ClassDef(c) => collect_functions(&c.body, Some(c), out),
            Stmt::If(i) => {
                collect_functions(&i.body, class, out);
                for c in &i.elif_else_clauses {
                    collect_functions(&c.body, class, out);
                }
            }
            Stmt::Try(t) => {
                collect_functions(&t.body, class, out);
                collect_functions(&t.orelse, class, out);
            }
            _ => {}
        }
    }
}

/// The saves a load of `path_text` reads, among `saves`: those whose path argument is the
/// same text (`torch.save(sd, CKPT)` / `torch.load(CKPT)`), or, when none matches, every
/// save of the file (a file's loads usually read what it saves).
pub fn saves_for_load<'s>(saves: &'s [SaveSite], path_text: Option<&str>) -> Vec<&'s SaveSite> {
    if let Some(p) = path_text {
        let same: Vec<&SaveSite> = saves
            .iter()
            .filter(|s| s.path_text.as_deref() == Some(p))
            .collect();
        if !same.is_empty() {
            return same;
        }
    }
    saves.iter().collect()
}

/// The shared predicate of the weights-only rules: would a weights-only load of what these
/// saves write fail? `Some(site)` names a save writing a rejected object; `None` when all of
/// them are weights-only or not known.
pub fn weights_only_load_fails<'s>(saves: &[&'s SaveSite]) -> Option<&'s SaveSite> {
    saves
        .iter()
        .find(|s| matches!(s.content, Saved::Rejected(..)))
        .copied()
}

/// Do these saves (at least one) all write weights-only content, so that a weights-only
/// load of them succeeds?
pub fn all_weights_only(saves: &[&SaveSite]) -> bool {
    !saves.is_empty() && saves.iter().all(|s| s.content == Saved::WeightsOnly)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::{Scope, ScopeKind};
    use torchvet_python::parser::parse_module;

    fn saves(src: &str) -> Vec<Saved> {
        let parsed = parse_module(src).expect("valid python");
        let body = &parsed.syntax().body;
        let mut scopes = Scopes::default();
        let scope = Scope::collect(ScopeKind::Module, body, None, &scopes);
        scopes.push(scope);
        let classes = ModuleClasses::compute(body, &scopes);
        file_saves(body, src, &scopes, &classes)
            .into_iter()
            .map(|s| s.content)
            .collect()
    }

    fn kinds(src: &str) -> Vec<String> {
        saves(src)
            .into_iter()
            .map(|s| match s {
                Saved::WeightsOnly => "ok".to_string(),
                Saved::Rejected(k, _) => format!("rejected: {}", k.describe()),
                Saved::Unknown => "unknown".to_string(),
            })
            .collect()
    }

    #[test]
    fn state_dicts_and_plain_containers_are_weights_only() {
        let src = r#"
import torch
from torch import nn
model = nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
torch.save(model.state_dict(), "a.pt")
torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3, "best": 0.5, "name": f"run{3}"}, "b.pt")
state = {"model": model.state_dict()}
state["step"] = 10
torch.save(state, "c.pt")
torch.save([torch.zeros(2), (1, None)], "d.pt")
torch.save({k: v.cpu() for k, v in model.state_dict().items()}, "e.pt")
"#;
        assert_eq!(kinds(src), vec!["ok"; 5]);
    }

    #[test]
    fn whole_objects_are_rejected_and_unknowns_stay_unknown() {
        let src = r#"
import argparse
import numpy as np
import torch
from torch import nn

class Net(nn.Module):
    pass

class Meta:
    pass

def main(loader_arg):
    parser = argparse.ArgumentParser()
    args = parser.parse_args()
    model = Net()
    opt = torch.optim.Adam(model.parameters())
    torch.save(model, "a.pt")
    torch.save({"model": model.state_dict(), "optimizer": opt}, "b.pt")
    ckpt = {"epoch": 1}
    ckpt["args"] = args
    torch.save(ckpt, "c.pt")
    torch.save({"meta": Meta(), "arr": np.zeros(3)}, "d.pt")
    torch.save({"args": vars(args)}, "e.pt")
    torch.save(loader_arg, "f.pt")
    torch.save({"model": model.state_dict(), "extra": build_extra()}, "g.pt")
"#;
        assert_eq!(
            kinds(src),
            vec![
                "rejected: a whole nn.Module",
                "rejected: an optimizer object",
                "rejected: an argparse.Namespace",
                "rejected: an instance of `Meta`",
                "ok",
                "unknown",
                "unknown",
            ]
        );
    }

    #[test]
    fn loads_pair_with_the_saves_of_the_same_path() {
        let src = r#"
import torch
torch.save(model_sd, CKPT)
torch.save(whole_model, "other.pt")
"#;
        let parsed = parse_module(src).expect("valid python");
        let body = &parsed.syntax().body;
        let mut scopes = Scopes::default();
        let scope = Scope::collect(ScopeKind::Module, body, None, &scopes);
        scopes.push(scope);
        let classes = ModuleClasses::compute(body, &scopes);
        let all = file_saves(body, src, &scopes, &classes);
        assert_eq!(saves_for_load(&all, Some("CKPT")).len(), 1);
        assert_eq!(saves_for_load(&all, Some("path")).len(), 2);
    }
}

//! Taint-style dataflow of tensor properties inside one function (or module-level code).
//!
//! The analysis walks a suite in statement order and keeps, for every local name (and every
//! `self.<attr>` assigned in the suite), the [`Value`] of its latest assignment: which tensor
//! properties ([`Prop`]) it carries and where they were produced. Branches merge
//! conservatively: a property survives a join as [`Certainty::Definite`] only when every
//! reaching path agrees, otherwise it becomes [`Certainty::Maybe`]. Loops are walked twice so
//! that values carried from one iteration into the next are merged into the loop head.
//!
//! Properties flow through assignment, tuple unpacking, attribute stores, view / reshape /
//! squeeze / unsqueeze / flatten / indexing / `.float()` / `.to()`, and one level of
//! function summaries: a same-file function, or an `nn.Module` class of the file whose
//! `forward` returns such a value, makes `f(x)` / `model(x)` carry it. Module objects are
//! tracked as [`Instance`]s (the constructor's qualified name, and what calling the object
//! returns), so `crit = nn.CrossEntropyLoss()` then `crit(p, y)` is recognised, as is
//! `self.criterion` assigned in `__init__`, and an `nn.Sequential` whose last layer is
//! `nn.Softmax()` / `nn.Sigmoid()`.
//!
//! Usage: [`Summaries::compute`] once per file, then [`FunctionFlow::analyze`] once per
//! function, then [`FunctionFlow::value_of`] for any expression of that function. Rules reach
//! all of this through `Checker::taint_of(expr)` in the linter.
//!
//! The analysis never looks across files and never guesses: a value it cannot follow (a call
//! of an unknown function, a parameter) carries no property, so rules built on it stay silent.
use crate::bindings::{Scope, ScopeKind, Scopes};
use crate::classes::{is_module_base, ModuleClasses};
use crate::helpers;
use crate::kinds::{Kind, KindContext};
use ruff_python_ast::{self as ast, Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use rustc_hash::FxHashMap;
use std::rc::Rc;

/// A tensor property the analysis tracks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Prop {
    /// Values in [0, 1] from softmax / sigmoid / `exp(log_softmax)` / `nn.Softmax` /
    /// `nn.Sigmoid` (see [`Fact::op`] for which one).
    Probabilities,
    /// Log-probabilities from `log_softmax` / `nn.LogSoftmax` / `log(softmax)` / `logsigmoid`.
    LogProbabilities,
    /// Part of an autograd graph: model outputs, losses and the results of differentiable ops
    /// on them (cleared by `.detach()`, `.item()`, `.data`, comparisons, `argmax`, and not
    /// introduced inside `with torch.no_grad()` / a `@torch.no_grad()` function). A loss
    /// (a loss module or criterion call, `F.*_loss`, a project function returning a loss it
    /// differentiated, or a name a loop differentiates) has [`Fact::op`] [`LOSS`]; a model
    /// output `"model output"`. Definite through arithmetic, indexing, graph-keeping methods and
    /// the `.loss`/`.logits`/`.last_hidden_state`/`.hidden_states` attributes; only a "maybe"
    /// through other attributes, unknown methods and elements unpacked from a call.
    GraphCarrying,
    /// A strided view that is probably not contiguous: transpose / permute / `.t()` / `.T` /
    /// `.mT` / expand / swapaxes / movedim / unfold without a later `.contiguous()`,
    /// `.clone()`, `.reshape()` or `.flatten()`.
    MaybeNonContiguous,
    /// An unreduced loss: built with `reduction='none'` (or `reduce=False`) and not yet passed
    /// through a reduction (`mean`, `sum`, ...), indexing or an unknown call.
    ReducedNone,
    /// A column vector, shape `(N, 1)`: the output of `nn.Linear(_, 1)` (or a module / an
    /// `nn.Sequential` ending in one), `y.unsqueeze(1)` of a [`Prop::Vector`]; kept through
    /// dtype/device moves and elementwise activations.
    ColumnVector,
    /// A 1-D tensor, shape `(N,)`: `torch.tensor([1.0, 2.0])`, `torch.randn(n)`,
    /// `x.view(-1)` / `x.flatten()` / `x.squeeze(-1)` of a column vector, `data[:, k]`.
    Vector,
    /// On the CPU: made by a torch factory without a device (`torch.randn(n, n)`,
    /// `torch.from_numpy(a)`, `torch.tensor([..])`) in a file that never changes the default
    /// device, or moved there (`.cpu()`, `.to("cpu")`); kept through dtype casts, views,
    /// elementwise ops, reductions and arithmetic with another CPU tensor or a number, and
    /// cleared by `.cuda()` / `.to(...)`. Never carried out of a function by a summary.
    OnCpu,
    /// On a CUDA device: moved there (`.cuda()`, `.to("cuda")`, `.to(device)` of a device
    /// that is CUDA, definitely or when CUDA is available: `torch.device("cuda" if
    /// torch.cuda.is_available() else "cpu")`, a [`Certainty::Maybe`]), or the output of a
    /// module called on such a tensor; a device string or `torch.device` value has it too, so
    /// that `.to(device)` can read it. Kept through views, elementwise ops, comparisons,
    /// reductions, `argmax` and arithmetic; cleared by `.cpu()` / `.to("cpu")`, by a `.to(...)`
    /// whose target is not known to be CUDA, and by conversions to Python values. Never
    /// carried out of a function by a summary.
    OnCuda,
    /// A module object in evaluation mode at this point: loaded by a library loader that
    /// returns its model in eval mode (Hugging Face `from_pretrained`, see
    /// [`crate::returns_eval_mode`]) or switched with `.eval()` / `.train(False)`. Kept
    /// through the module methods that return the object itself (`.to(device)`, `.half()`);
    /// cleared by `.train()`, by any other method call on the object (it may train it), by
    /// passing the object to a call (a `Trainer(model=model)`, a `fit(model)` may train it),
    /// and, for plain names, by calling a same-file top-level function (it may train a
    /// module-level model). Not kept in the summaries of `self.<attr>` objects (another method
    /// may train them).
    EvalMode,
    /// Entries bounded by a magnitude the code itself fixes, no data reaching them: a tensor
    /// of number literals, a range with literal ends, `torch.rand` / `torch.randn` /
    /// `torch.randint` with literal bounds, `zeros` / `ones` / `full`, kept through moves,
    /// casts and views and through arithmetic with number literals; [`Fact::bound`] holds the
    /// bound (see [`crate::magnitude`]).
    LiteralBounded,
    /// Whole numbers: integer dtypes and casts (`.long()`, `dtype=torch.long`), rounding
    /// (`torch.round`, `.floor()`), integer literals and ranges, `torch.randint`, kept through
    /// moves, float casts, views and integer arithmetic (see [`crate::magnitude`]).
    IntegerValued,
    /// Shifted by hand for a stable `exp`: a tensor minus its own maximum
    /// (`s - s.max(1, keepdim=True)[0]`, `s - s.amax(-1, keepdim=True)`,
    /// `s - torch.max(s, 1)[0].view(-1, 1)`), kept through moves, views, indexing, scaling by a
    /// positive literal and a further subtraction (masking a column out, as NCA losses do);
    /// see [`crate::magnitude::shifted_by_max`].
    ShiftedByMax,
    /// A maximum over a dimension, kept in a variable to shift by (`m, _ = torch.max(s, 1,
    /// keepdim=True)`, `m = s.amax(-1, keepdim=True)`, `m = s.max(1)[0]`), kept through moves
    /// and views: subtracting it is the hand-written shift of a stable `exp`.
    MaxValue,
}

/// The [`Fact::op`] of a [`Prop::GraphCarrying`] fact that is a loss.
pub const LOSS: &str = "loss";

/// How sure the analysis is that a property holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Certainty {
    /// Every path that reaches the use agrees.
    Definite,
    /// Some path produces it, another does not (after an `if`, a loop head, ...).
    Maybe,
    /// Holds for one of the classes the value may be an instance of, and for the values
    /// calling it gives: a model chosen among several project classes in `if`/`elif`
    /// branches (or returned by a factory with several returns) whose one class's `forward`
    /// produces it. [`Fact::through`] names that `forward`. Every path through that class
    /// has it, so it is a "may" that names its class, not a weaker [`Certainty::Maybe`].
    OneOf,
}

/// One property of a value, with where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fact {
    /// The property.
    pub prop: Prop,
    /// Definite or maybe.
    pub certainty: Certainty,
    /// The producing expression (the softmax call, the transpose, the loss constructor...).
    /// With [`Fact::through`] set it lies in another function of the file.
    pub origin: TextRange,
    /// The producing operation, for messages: `softmax`, `sigmoid`, `exp(log_softmax)`,
    /// `log_softmax`, `transpose`, `permute`, `reduction='none'`, `model output`, ...
    pub op: &'static str,
    /// For [`Prop::MaybeNonContiguous`], when known: a lower bound on the number of runs of
    /// memory-adjacent dimensions (`x.permute(0, 2, 3, 1)` has 3: `0`, `2 3`, `1`). A
    /// `.view()` to fewer dimensions than this must merge dimensions that are not adjacent in
    /// memory, which raises; a view that keeps at least this many may work.
    pub runs: Option<u8>,
    /// The same-file function or class (`Net.forward`, `make_probs`) whose return value
    /// carried the property into this function, if any.
    pub through: Option<Rc<str>>,
    /// Where the property was produced when that is in another file of the project (the
    /// `softmax` at the end of a model's `forward` in `models.py`); `origin` is then the
    /// place in this file where the value enters (the model call).
    pub remote: Option<(crate::project::FileId, TextRange)>,
    /// For [`Prop::MaybeNonContiguous`] made by `expand`: how many leading dimensions are the
    /// expanded ones, when those are the only ones (`x.unsqueeze(0).expand(b, -1, -1)`: 1; the
    /// `-1`s keep their sizes and strides). An integer index of those dimensions
    /// (`e[-1]`, `e[0, :]`) removes them and leaves the contiguous rest; 0 when not known.
    pub expanded_leading: u8,
    /// For [`Prop::LiteralBounded`]: the largest magnitude of any entry (rounded up).
    pub bound: Option<u32>,
}

/// An object built by calling a class: a loss, a layer, a model.
#[derive(Clone, Debug, PartialEq)]
pub struct Instance {
    /// The constructor's qualified name (`torch.nn.CrossEntropyLoss`) or, for a class of this
    /// file, its name (`Net`).
    pub class: Rc<str>,
    /// The constructor call.
    pub ctor: TextRange,
    /// The properties of what calling the object returns (`nn.Softmax()(x)` gives
    /// probabilities; `nn.MSELoss(reduction='none')(p, y)` an unreduced loss; a same-file
    /// module whose forward ends in softmax gives probabilities).
    pub returns: Rc<Value>,
    /// Defined in this file (its `forward` was summarised).
    pub local: bool,
}

/// The prefix of the class name of an object that is one of several
/// ([`Instance::one_of`]): never a qualified name a rule could take for a torch class.
pub const ONE_OF: &str = "one of ";

impl Instance {
    /// An object that is `a` on some paths and `b` on others: what calling it gives is the
    /// merge of what calling each gives, where a property one class's output has on every
    /// path and the other's lacks is [`Certainty::OneOf`], naming the class it comes from.
    pub fn one_of(a: &Instance, b: &Instance) -> Instance {
        let names = |i: &Instance| -> String {
            i.class.strip_prefix(ONE_OF).unwrap_or(&i.class).to_string()
        };
        let mut returns = a.returns.merge(&b.returns);
        for f in &mut returns.facts {
            if f.certainty == Certainty::Definite {
                continue;
            }
            // The class whose output has it on every path, when the other's lacks it.
            let side = match (a.returns.get(f.prop), b.returns.get(f.prop)) {
                (Some(g), None) => Some((a, g)),
                (None, Some(g)) => Some((b, g)),
                _ => None,
            };
            let Some((i, g)) =
                side.filter(|(_, g)| matches!(g.certainty, Certainty::Definite | Certainty::OneOf))
            else {
                continue;
            };
            let through = g
                .through
                .clone()
                .or_else(|| Some(Rc::from(format!("{}.forward", names(i)))));
            *f = Fact {
                certainty: Certainty::OneOf,
                through,
                ..g.clone()
            };
        }
        Instance {
            class: Rc::from(format!("{ONE_OF}{}, {}", names(a), names(b))),
            ctor: a.ctor,
            returns: Rc::new(returns),
            local: a.local && b.local,
        }
    }
}

/// What the analysis knows about a value: its tensor properties, or the object it is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Value {
    /// Tensor properties (at most one fact per [`Prop`]).
    pub facts: Vec<Fact>,
    /// The object, when the value was built by a constructor call.
    pub instance: Option<Rc<Instance>>,
    /// The elements, when the value is a tuple/list literal of known length (`return a, b`).
    pub elements: Option<Rc<Vec<Value>>>,
}

impl Value {
    /// The fact for `prop`, definite or maybe.
    pub fn get(&self, prop: Prop) -> Option<&Fact> {
        self.facts.iter().find(|f| f.prop == prop)
    }

    /// The fact for `prop` when it holds on every path.
    pub fn definite(&self, prop: Prop) -> Option<&Fact> {
        self.get(prop)
            .filter(|f| f.certainty == Certainty::Definite)
    }

    /// Does `prop` hold on every path?
    pub fn has(&self, prop: Prop) -> bool {
        self.definite(prop).is_some()
    }

    /// Nothing known.
    pub fn is_empty(&self) -> bool {
        self.facts.is_empty() && self.instance.is_none() && self.elements.is_none()
    }

    /// The instance's class, when the value is an object built by a constructor.
    pub fn class(&self) -> Option<&str> {
        self.instance.as_deref().map(|i| &*i.class)
    }

    fn with(mut self, fact: Fact) -> Self {
        self.facts.retain(|f| f.prop != fact.prop);
        self.facts.push(fact);
        self
    }

    fn only(&self, keep: &[Prop]) -> Value {
        Value {
            facts: self
                .facts
                .iter()
                .filter(|f| keep.contains(&f.prop))
                .cloned()
                .collect(),
            instance: None,
            elements: None,
        }
    }

    fn without(mut self, drop: &[Prop]) -> Value {
        self.facts.retain(|f| !drop.contains(&f.prop));
        self.instance = None;
        self.elements = None;
        self
    }

    fn without_device(mut self) -> Value {
        self.facts
            .retain(|f| !matches!(f.prop, Prop::OnCpu | Prop::OnCuda));
        self
    }

    fn without_shape(mut self) -> Value {
        self.facts
            .retain(|f| !matches!(f.prop, Prop::ColumnVector | Prop::Vector));
        self
    }

    fn weaken(mut self) -> Value {
        for f in &mut self.facts {
            f.certainty = Certainty::Maybe;
        }
        self.instance = None;
        self.elements = None;
        self
    }

    fn tensor(&self) -> Value {
        Value {
            facts: self.facts.clone(),
            instance: None,
            elements: None,
        }
    }

    /// Merge two values reaching one point on different paths.
    pub fn merge(&self, other: &Value) -> Value {
        let mut facts = Vec::new();
        for f in &self.facts {
            let mut f = f.clone();
            match other.get(f.prop) {
                Some(g) if g.certainty == Certainty::Definite || g.certainty == f.certainty => {}
                _ => f.certainty = Certainty::Maybe,
            }
            if let Some(g) = other.get(f.prop) {
                f.bound = match (f.bound, g.bound) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
            }
            facts.push(f);
        }
        for g in &other.facts {
            if self.get(g.prop).is_none() {
                let mut g = g.clone();
                g.certainty = Certainty::Maybe;
                facts.push(g);
            }
        }
        let instance = match (&self.instance, &other.instance) {
            (Some(a), Some(b)) if a.class == b.class && a.returns == b.returns => Some(a.clone()),
            // Objects of different classes on the two paths (a model chosen by
            // configuration): one object that is either.
            (Some(a), Some(b)) if self.facts.is_empty() && other.facts.is_empty() => {
                Some(Rc::new(Instance::one_of(a, b)))
            }
            _ => None,
        };
        let elements = match (&self.elements, &other.elements) {
            (Some(a), Some(b)) if a.len() == b.len() => Some(Rc::new(
                a.iter().zip(b.iter()).map(|(x, y)| x.merge(y)).collect(),
            )),
            _ => None,
        };
        Value {
            facts,
            instance,
            elements,
        }
    }
}

fn fact(prop: Prop, origin: TextRange, op: &'static str) -> Fact {
    Fact {
        prop,
        certainty: Certainty::Definite,
        origin,
        op,
        runs: None,
        through: None,
        remote: None,
        expanded_leading: 0,
        bound: None,
    }
}

pub(crate) fn new_fact(prop: Prop, origin: TextRange, op: &'static str) -> Fact {
    fact(prop, origin, op)
}

/// `x.max(dim, ...)` / `torch.max(x, dim, ...)` (`dim_at` is the dimension's position: 0
/// for the method, 1 for the function) gives a (values, indices) pair: `v`, the call's value,
/// as its values, marked [`Prop::MaxValue`], and indices with no facts. Anything else (such
/// as `torch.max(a, b)` of two tensors) is `v` itself.
fn max_pair_value(is_max: bool, call: &ExprCall, dim_at: usize, v: Value) -> Value {
    if !is_max || v.elements.is_some() || v.instance.is_some() {
        return v;
    }
    // A dimension: `dim=` whatever it is, or a positional integer, or a positional name
    // beside `keepdim=` (which the element-wise `torch.max(a, b)` does not take).
    let by_position = call.arguments.args.get(dim_at).is_some_and(|d| {
        helpers::int_value(d).is_some() || helpers::keyword(call, "keepdim").is_some()
    });
    if helpers::keyword(call, "dim").is_none() && !by_position {
        return v;
    }
    let values = v.with(fact(Prop::MaxValue, call.range(), "maximum"));
    // The indices are on the values' device.
    let indices = values.only(&[Prop::OnCuda]);
    Value {
        facts: values.facts.clone(),
        instance: None,
        elements: Some(Rc::new(vec![values, indices])),
    }
}

/// Replace the value facts ([`Prop::LiteralBounded`], [`Prop::IntegerValued`]) of `v`.
fn with_value_facts(mut v: Value, facts: Vec<Fact>) -> Value {
    v.facts.retain(|f| {
        !matches!(
            f.prop,
            Prop::LiteralBounded | Prop::IntegerValued | Prop::ShiftedByMax | Prop::MaxValue
        )
    });
    v.facts.extend(facts);
    v
}

/// A value the project model describes (a parameter, a cross-file call, a `self.<attr>`),
/// entering this function at `at`.
pub fn value_of_resolved(
    p: &crate::project::ProjectFile,
    r: &crate::project::Resolved,
    at: TextRange,
) -> Value {
    use crate::project::ClassRef;
    let remote_facts = |props: &[crate::project::PropFact],
                        file: crate::project::FileId,
                        through: &str|
     -> Vec<Fact> {
        let through: Rc<str> = Rc::from(through);
        props
            .iter()
            .map(|pf| Fact {
                prop: pf.prop,
                certainty: if pf.definite {
                    Certainty::Definite
                } else {
                    Certainty::Maybe
                },
                origin: at,
                op: pf.op,
                runs: None,
                through: Some(through.clone()),
                remote: Some((file, pf.origin)),
                expanded_leading: 0,
                bound: None,
            })
            .collect()
    };
    let mut v = Value::default();
    if let Some(g) = r.props_from {
        v.facts = remote_facts(&r.props, g.file, &p.model.function_label(g));
    }
    // What calling the object gives: its class's `forward` output, or that of a module a
    // project function returns (`ProjectModel::call_output`).
    let object = |class: &str| {
        Some(Rc::new(Instance {
            class: Rc::from(class),
            ctor: at,
            returns: Rc::new(value_of_resolved(p, &p.model.call_output(r), at)),
            local: false,
        }))
    };
    match &r.class {
        Some(ClassRef::Project(c)) if p.model.is_module(*c) => {
            v.instance = object(p.model.class_name(*c).0);
        }
        Some(ClassRef::External(q)) => v.instance = object(q),
        _ if r.forward.is_some() => v.instance = object("torch.nn.Module"),
        _ => {}
    }
    // One of several objects (a factory returning different classes): either, when every
    // alternative is an object.
    if let (None, None, Some(alts)) = (&v.instance, &r.class, &r.alternatives) {
        let mut objs = alts.iter().map(|a| value_of_resolved(p, a, at).instance);
        if let Some(Some(first)) = objs.next() {
            v.instance = objs.try_fold(first, |acc, o| {
                o.map(|o| Rc::new(Instance::one_of(&acc, &o)))
            });
        }
    }
    if let Some(els) = &r.elements {
        v.elements = Some(Rc::new(
            els.iter().map(|e| value_of_resolved(p, e, at)).collect(),
        ));
    }
    v
}

/// Per-file summaries: what same-file functions and module classes return, and which
/// objects module-level names and `self.<attr>`s hold.
#[derive(Debug, Default)]
pub struct Summaries {
    /// Torch factories without `device=` make CPU tensors: the file never calls
    /// `torch.set_default_device` / `torch.set_default_tensor_type` nor enters
    /// `with torch.device(...)`.
    factories_on_cpu: bool,
    /// The file's text says `cuda`: only then can a value be on a CUDA device
    /// ([`Prop::OnCuda`]), so torch calls look for one.
    mentions_cuda: bool,
    functions: FxHashMap<String, Value>,
    forwards: FxHashMap<String, Value>,
    /// Per module class: what the methods its `forward` calls as `self.<m>(...)` return
    /// (`decode` of an autoencoder whose `forward` returns `self.decode(z)`).
    methods: FxHashMap<String, FxHashMap<String, Value>>,
    class_attrs: FxHashMap<String, FxHashMap<String, Value>>,
    globals: FxHashMap<String, Value>,
}

impl Summaries {
    /// Summarise a module: its top-level functions, the `forward` of its `nn.Module` classes,
    /// the objects assigned to `self.<attr>` in each class, and module-level objects.
    /// `text` is the module's source text (a cheap gate for the default-device search).
    pub fn compute(module: &[Stmt], classes: &ModuleClasses, text: &str) -> Self {
        Self::compute_rounds(module, classes, text, true)
    }

    /// What same-file top-level functions and module classes' `forward`s return
    /// ([`Summaries::function`], [`Summaries::forward`]) and nothing more: the objects of
    /// `self.<attr>`s are those of round 1 only and no module-level objects are summarised.
    /// The per-file summary of phase 1 reads only the returns; phase 2 computes the whole.
    pub fn compute_returns(module: &[Stmt], classes: &ModuleClasses, text: &str) -> Self {
        Self::compute_rounds(module, classes, text, false)
    }

    fn compute_rounds(module: &[Stmt], classes: &ModuleClasses, text: &str, all: bool) -> Self {
        let mut scopes = Scopes::default();
        let scope = Scope::collect(ScopeKind::Module, module, None, &scopes);
        scopes.push(scope);
        let mut s = Summaries {
            factories_on_cpu: !changes_default_device(module, &scopes, text),
            mentions_cuda: memchr::memmem::find(text.as_bytes(), b"cuda").is_some(),
            ..Summaries::default()
        };
        let mut class_defs = Vec::new();
        collect_classes(module, &mut class_defs);
        // Round 1: objects of `self.<attr>` (torch classes only; no summaries yet).
        for c in &class_defs {
            let attrs = class_attributes(c, &scopes, classes, &s);
            s.class_attrs.insert(c.name.to_string(), attrs);
        }
        // Round 2: forwards of module classes and top-level functions (one level).
        let mut forwards = FxHashMap::default();
        for c in &class_defs {
            if !classes.is_module(c.name.as_str()) {
                continue;
            }
            if let Some(v) = summarise_class_forward(c, &mut scopes, classes, &mut s) {
                forwards.insert(c.name.to_string(), v);
            }
        }
        let mut functions = FxHashMap::default();
        for st in module {
            if let Stmt::FunctionDef(f) = st {
                let v = summarise(f, &mut scopes, classes, &s, None);
                functions.insert(f.name.to_string(), stamp(v, f.name.as_str()));
            }
        }
        s.forwards = forwards;
        s.functions = functions;
        // Round 3: objects again, now that same-file classes have summaries; the `forward` of
        // a class that gained a same-file sub-module object is summarised again (an
        // autoencoder whose `forward` returns `self.decoder(z)`, the decoder ending in a
        // sigmoid).
        // Phase 1 (`all` false) needs the round only where a module class can hold another
        // of the file: two module classes at least.
        let modules = class_defs
            .iter()
            .filter(|c| classes.is_module(c.name.as_str()))
            .count();
        if !all && modules < 2 {
            return s;
        }
        let mut again = Vec::new();
        for c in &class_defs {
            let attrs = class_attributes(c, &scopes, classes, &s);
            let before = s.class_attrs.get(c.name.as_str());
            // An object now known, or one whose calls now return something known.
            let gained = attrs.iter().any(|(k, v)| {
                v.instance.as_ref().is_some_and(|i| {
                    before
                        .and_then(|b| b.get(k))
                        .and_then(|b| b.instance.as_ref())
                        .is_none_or(|b| b.returns.facts.len() < i.returns.facts.len())
                })
            });
            if gained && classes.is_module(c.name.as_str()) {
                again.push(*c);
            }
            s.class_attrs.insert(c.name.to_string(), attrs);
        }
        for c in again {
            if let Some(v) = summarise_class_forward(c, &mut scopes, classes, &mut s) {
                s.forwards.insert(c.name.to_string(), v);
            }
        }
        if !all {
            return s;
        }
        let globals = {
            let cx = FlowContext {
                scopes: &scopes,
                classes,
                kinds: None,
                summaries: Some(&s),
                class: None,
                params: None,
            };
            let mut out: FxHashMap<String, Value> = FxHashMap::default();
            let mut seen: FxHashMap<String, bool> = FxHashMap::default();
            collect_object_assignments(module, false, &mut |name, value| {
                let v = cx.eval(value, &|_| None, false);
                // Objects, the value facts of module-level constants (`LOGITS =
                // torch.tensor([[10.0, -10.0]])` read in a test function), and a device
                // (`device = torch.device("cuda" if ... else "cpu")`).
                let v = Value {
                    facts: v
                        .facts
                        .into_iter()
                        .filter(|f| {
                            matches!(f.prop, Prop::LiteralBounded | Prop::IntegerValued)
                                || (f.prop == Prop::OnCuda && f.op == CUDA_DEVICE)
                        })
                        .collect(),
                    instance: v.instance,
                    elements: None,
                };
                agree(&mut out, &mut seen, name, v);
            });
            // Names also bound otherwise (`X *= 1000`, `for X in ...`, `global X` in a
            // function) keep no value facts.
            let rebound = rebound_globals(module);
            for (name, v) in out.iter_mut() {
                if rebound.contains(name.as_str()) {
                    v.facts.clear();
                }
            }
            out.retain(|_, v| v.instance.is_some() || !v.facts.is_empty());
            out
        };
        s.globals = globals;
        s
    }

    /// What calling a same-file top-level function returns.
    pub fn function(&self, name: &str) -> Option<&Value> {
        self.functions.get(name)
    }

    /// What a same-file module class's `forward` returns.
    pub fn forward(&self, class: &str) -> Option<&Value> {
        self.forwards.get(class)
    }

    /// What a method of a same-file module class returns, for the methods its `forward`
    /// calls (`self.decode(z)`).
    pub fn method(&self, class: &str, method: &str) -> Option<&Value> {
        self.methods.get(class).and_then(|m| m.get(method))
    }

    /// The object `self.<attr>` holds in a class (every assignment agrees).
    pub fn class_attr(&self, class: &str, attr: &str) -> Option<&Value> {
        self.class_attrs.get(class).and_then(|m| m.get(attr))
    }

    /// The object a module-level name holds (every assignment agrees).
    pub fn global(&self, name: &str) -> Option<&Value> {
        self.globals.get(name)
    }
}

/// Does the file change where torch factories put their tensors (`torch.set_default_device`,
/// `torch.set_default_tensor_type`, `with torch.device(...)`), anywhere?
///
/// The calls are looked for only when the text says `set_default_`: a resolved name's last
/// segment is an identifier of the text (an import's or the callee's own), so a file without
/// those words has no such call, and its walk looks at `with` statements only.
fn changes_default_device(module: &[Stmt], scopes: &Scopes, text: &str) -> bool {
    use ruff_python_ast::visitor::{self, Visitor};
    struct Finder<'s> {
        scopes: &'s Scopes,
        found: bool,
        calls: bool,
    }
    impl<'x> Visitor<'x> for Finder<'_> {
        fn visit_stmt(&mut self, stmt: &'x Stmt) {
            if let Stmt::With(w) = stmt {
                for item in &w.items {
                    if let Expr::Call(c) = &item.context_expr {
                        if self.scopes.resolve(&c.func).as_deref() == Some("torch.device") {
                            self.found = true;
                        }
                    }
                }
            }
            if !self.found {
                visitor::walk_stmt(self, stmt);
            }
        }
        fn visit_expr(&mut self, expr: &'x Expr) {
            if !self.calls {
                // No statement is nested in an expression.
                return;
            }
            if let Expr::Call(c) = expr {
                let q = self.scopes.resolve(&c.func);
                let last = match (&q, &*c.func) {
                    (Some(q), _) => helpers::last_segment(q),
                    (None, Expr::Attribute(a)) => a.attr.as_str(),
                    _ => "",
                };
                if matches!(last, "set_default_device" | "set_default_tensor_type") {
                    self.found = true;
                }
            }
            if !self.found {
                visitor::walk_expr(self, expr);
            }
        }
    }
    let t = text.as_bytes();
    let calls = memchr::memmem::find_iter(t, b"set_default_").any(|i| {
        let rest = &t[i + b"set_default_".len()..];
        rest.starts_with(b"device") || rest.starts_with(b"tensor_type")
    });
    let mut f = Finder {
        scopes,
        found: false,
        calls,
    };
    f.visit_body(module);
    f.found
}

/// Torch factories that make a tensor on the default device unless given `device=`.
const CPU_FACTORIES: &[&str] = &[
    "torch.randn",
    "torch.rand",
    "torch.randint",
    "torch.randperm",
    "torch.zeros",
    "torch.ones",
    "torch.empty",
    "torch.full",
    "torch.arange",
    "torch.linspace",
    "torch.logspace",
    "torch.eye",
    "torch.from_numpy",
    "torch.FloatTensor",
    "torch.LongTensor",
    "torch.Tensor",
];

/// `torch.randn(n, n)`, `torch.from_numpy(a)`, `torch.tensor([1.0, 2.0])`: a factory call
/// that puts its tensor on the CPU (no `device=`, or `device="cpu"`). `torch.tensor` /
/// `torch.as_tensor` count only for literal data (given a tensor, they keep its device).
fn cpu_factory(q: &str, call: &ExprCall) -> bool {
    let literal_data = || {
        matches!(
            call.arguments.args.first(),
            Some(Expr::List(_) | Expr::Tuple(_) | Expr::NumberLiteral(_))
        )
    };
    let factory = CPU_FACTORIES.contains(&q)
        || (matches!(q, "torch.tensor" | "torch.as_tensor") && literal_data());
    factory
        && !helpers::has_kwargs_splat(call)
        && helpers::keyword(call, "device").is_none_or(|d| helpers::str_value(d) == Some("cpu"))
}

/// Does `.to(...)` / `.type(...)` name the CPU (`"cpu"`, `torch.device("cpu")`)?
fn moves_to_cpu(call: &ExprCall) -> bool {
    let target = helpers::argument(call, "device", 0);
    match target {
        Some(Expr::Call(c)) => {
            helpers::dotted(&c.func).is_some_and(|d| d.ends_with("device"))
                && c.arguments.args.first().and_then(helpers::str_value) == Some("cpu")
        }
        Some(e) => helpers::str_value(e) == Some("cpu"),
        None => false,
    }
}

/// What module class `c`'s `forward` returns (stamped `C.forward`), after the methods it
/// calls as `self.<m>(...)` are summarised; `None` for a class without `forward`.
fn summarise_class_forward(
    c: &ast::StmtClassDef,
    scopes: &mut Scopes,
    classes: &ModuleClasses,
    s: &mut Summaries,
) -> Option<Value> {
    let f = c.body.iter().find_map(|st| match st {
        Stmt::FunctionDef(f) if f.name.as_str() == "forward" => Some(f),
        _ => None,
    })?;
    summarise_forward_helpers(c, f, scopes, classes, s);
    let v = summarise(f, scopes, classes, s, Some(c.name.as_str()));
    Some(stamp(v, &format!("{}.forward", c.name)))
}

/// Summarise the methods of module class `c` that its `forward` calls as `self.<m>(...)`
/// (one level: what they return, as their own calls of other methods give nothing), into
/// [`Summaries::methods`]. Not stamped: the facts reach a caller through `forward`.
fn summarise_forward_helpers(
    c: &ast::StmtClassDef,
    forward: &ast::StmtFunctionDef,
    scopes: &mut Scopes,
    classes: &ModuleClasses,
    s: &mut Summaries,
) {
    use ruff_python_ast::visitor::{self, Visitor};
    struct Called<'a>(Vec<&'a str>);
    impl<'a> Visitor<'a> for Called<'a> {
        fn visit_expr(&mut self, e: &'a Expr) {
            if let Expr::Call(call) = e {
                if let Expr::Attribute(a) = &*call.func {
                    if helpers::name_of(&a.value) == Some("self") {
                        self.0.push(a.attr.as_str());
                    }
                }
            }
            visitor::walk_expr(self, e);
        }
        fn visit_stmt(&mut self, st: &'a Stmt) {
            // Nested definitions run later, if at all.
            if !matches!(st, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                visitor::walk_stmt(self, st);
            }
        }
    }
    let mut called = Called(Vec::new());
    called.visit_body(&forward.body);
    if called.0.is_empty() {
        return;
    }
    let mut out: FxHashMap<String, Value> = FxHashMap::default();
    for st in &c.body {
        let Stmt::FunctionDef(m) = st else { continue };
        let name = m.name.as_str();
        if name == "forward" || !called.0.contains(&name) || out.contains_key(name) {
            continue;
        }
        let v = summarise(m, scopes, classes, s, Some(c.name.as_str()));
        if !v.is_empty() {
            out.insert(name.to_string(), v);
        }
    }
    if !out.is_empty() {
        s.methods.insert(c.name.to_string(), out);
    }
}

fn stamp(mut v: Value, through: &str) -> Value {
    let through: Rc<str> = Rc::from(through);
    for f in &mut v.facts {
        if f.through.is_none() {
            f.through = Some(through.clone());
        }
    }
    if let Some(els) = &v.elements {
        let els: Vec<Value> = els.iter().map(|e| stamp(e.clone(), &through)).collect();
        v.elements = Some(Rc::new(els));
    }
    v
}

fn agree(
    out: &mut FxHashMap<String, Value>,
    seen: &mut FxHashMap<String, bool>,
    name: &str,
    v: Value,
) {
    match seen.get(name) {
        None => {
            seen.insert(name.to_string(), true);
            if v.instance.is_some() || !v.facts.is_empty() {
                out.insert(name.to_string(), v);
            }
        }
        Some(_) => {
            let same = out.get(name).is_some_and(|old| {
                old.instance.as_ref().map(|i| &i.class) == v.instance.as_ref().map(|i| &i.class)
            });
            if !same {
                out.remove(name);
            } else if let Some(old) = out.get_mut(name) {
                // Value facts hold only when every assignment gives them.
                let merged = old.merge(&v);
                old.facts = merged
                    .facts
                    .into_iter()
                    .filter(|f| f.certainty == Certainty::Definite)
                    .collect();
                if old.instance.is_none() && old.facts.is_empty() {
                    out.remove(name);
                }
            }
        }
    }
}

/// Module-level names bound by something other than a plain assignment at module level: an
/// augmented assignment, a `for` / `with` / `except` target, or a `global` declaration in a
/// function.
fn rebound_globals(module: &[Stmt]) -> rustc_hash::FxHashSet<&str> {
    use ruff_python_ast::visitor::{self, Visitor};
    struct Finder<'a> {
        out: rustc_hash::FxHashSet<&'a str>,
        depth: u32,
    }
    impl<'a> Visitor<'a> for Finder<'a> {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            match stmt {
                Stmt::Global(g) => self.out.extend(g.names.iter().map(|n| n.as_str())),
                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {
                    self.depth += 1;
                    visitor::walk_stmt(self, stmt);
                    self.depth -= 1;
                    return;
                }
                Stmt::AugAssign(a) if self.depth == 0 => {
                    self.out.extend(helpers::name_of(&a.target));
                }
                Stmt::For(f) if self.depth == 0 => {
                    let mut names = Vec::new();
                    crate::helpers::bound_names(&f.target, &mut names);
                    self.out.extend(names);
                }
                Stmt::With(w) if self.depth == 0 => {
                    for item in &w.items {
                        if let Some(v) = &item.optional_vars {
                            let mut names = Vec::new();
                            crate::helpers::bound_names(v, &mut names);
                            self.out.extend(names);
                        }
                    }
                }
                _ => {}
            }
            visitor::walk_stmt(self, stmt);
        }
        // Only statements bind here, and no statement is nested in an expression.
        fn visit_expr(&mut self, _: &'a Expr) {}
    }
    let mut f = Finder {
        out: rustc_hash::FxHashSet::default(),
        depth: 0,
    };
    f.visit_body(module);
    f.out
}

fn collect_classes<'a>(body: &'a [Stmt], out: &mut Vec<&'a ast::StmtClassDef>) {
    for stmt in body {
        match stmt {
            Stmt::ClassDef(c) => {
                out.push(c);
                collect_classes(&c.body, out);
            }
            Stmt::If(i) => {
                collect_classes(&i.body, out);
                for c in &i.elif_else_clauses {
                    collect_classes(&c.body, out);
                }
            }
            Stmt::Try(t) => {
                collect_classes(&t.body, out);
                collect_classes(&t.orelse, out);
            }
            _ => {}
        }
    }
}

/// Calls `f(name, value)` for every `name = value` (or `self.name = value` when `self_attrs`)
/// in a suite, descending into compound statements but not into nested defs/classes.
fn collect_object_assignments<'a>(
    body: &'a [Stmt],
    self_attrs: bool,
    f: &mut dyn FnMut(&'a str, &'a Expr),
) {
    for stmt in body {
        match stmt {
            Stmt::Assign(a) => {
                for t in &a.targets {
                    let name = if self_attrs {
                        helpers::self_attribute(t)
                    } else {
                        helpers::name_of(t)
                    };
                    if let Some(n) = name {
                        f(n, &a.value);
                    }
                }
            }
            Stmt::AnnAssign(a) => {
                let name = if self_attrs {
                    helpers::self_attribute(&a.target)
                } else {
                    helpers::name_of(&a.target)
                };
                if let (Some(n), Some(v)) = (name, &a.value) {
                    f(n, v);
                }
            }
            Stmt::If(i) => {
                collect_object_assignments(&i.body, self_attrs, f);
                for c in &i.elif_else_clauses {
                    collect_object_assignments(&c.body, self_attrs, f);
                }
            }
            Stmt::For(l) => collect_object_assignments(&l.body, self_attrs, f),
            Stmt::While(l) => collect_object_assignments(&l.body, self_attrs, f),
            Stmt::With(w) => collect_object_assignments(&w.body, self_attrs, f),
            Stmt::Try(t) => {
                collect_object_assignments(&t.body, self_attrs, f);
                collect_object_assignments(&t.orelse, self_attrs, f);
                collect_object_assignments(&t.finalbody, self_attrs, f);
            }
            _ => {}
        }
    }
}

fn class_attributes(
    class: &ast::StmtClassDef,
    scopes: &Scopes,
    classes: &ModuleClasses,
    s: &Summaries,
) -> FxHashMap<String, Value> {
    let cx = FlowContext {
        scopes,
        classes,
        kinds: None,
        summaries: Some(s),
        class: None,
        params: None,
    };
    let mut out: FxHashMap<String, Value> = FxHashMap::default();
    let mut seen: FxHashMap<String, bool> = FxHashMap::default();
    for st in &class.body {
        let Stmt::FunctionDef(f) = st else { continue };
        collect_object_assignments(&f.body, true, &mut |name, value| {
            let v = cx.eval(value, &|_| None, false);
            let v = Value {
                facts: Vec::new(),
                instance: v.instance,
                elements: None,
            };
            agree(&mut out, &mut seen, name, v);
        });
    }
    out
}

fn summarise(
    f: &ast::StmtFunctionDef,
    scopes: &mut Scopes,
    classes: &ModuleClasses,
    s: &Summaries,
    class: Option<&str>,
) -> Value {
    let scope = Scope::collect(ScopeKind::Function, &f.body, Some(&f.parameters), scopes);
    scopes.push(scope);
    let v = {
        let cx = FlowContext {
            scopes,
            classes,
            kinds: None,
            summaries: Some(s),
            class,
            params: None,
        };
        let flow = FunctionFlow::run(&cx, &f.body, decorated_no_grad(f, scopes), false);
        flow.returns.unwrap_or_default()
    };
    scopes.pop();
    // A summary reports tensor properties and tuple structure; graph-carrying comes from the
    // call site (calling a module gives a graph-carrying output anyway).
    strip_graph(v)
}

/// `x.detach()`, `x.detach().cpu()`, `x.data`, `x.item()`: an argument written to be outside
/// the autograd graph.
fn cut_from_graph(e: &Expr) -> bool {
    match e {
        Expr::Attribute(a) => a.attr.as_str() == "data",
        Expr::Call(c) => match helpers::method_call(c) {
            Some(("detach" | "item" | "numpy" | "tolist", _)) => true,
            Some(("cpu" | "to" | "cuda" | "float" | "long" | "double", r)) => cut_from_graph(r),
            _ => false,
        },
        _ => false,
    }
}

fn strip_graph(mut v: Value) -> Value {
    // The device a function's tensors end on is judged where they are used, not summarised.
    v.facts
        .retain(|f| !matches!(f.prop, Prop::GraphCarrying | Prop::OnCpu));
    // A returned module is kept only for what calling it gives (`return nn.Sequential(...,
    // nn.Sigmoid())`): its tensor properties, without the graph.
    v.instance = v.instance.and_then(|i| {
        let returns = strip_graph((*i.returns).clone());
        (!returns.facts.is_empty()).then(|| {
            Rc::new(Instance {
                class: i.class.clone(),
                ctor: i.ctor,
                returns: Rc::new(returns),
                local: i.local,
            })
        })
    });
    if let Some(els) = &v.elements {
        v.elements = Some(Rc::new(els.iter().cloned().map(strip_graph).collect()));
    }
    v
}

/// Does a context manager or decorator expression turn autograd off: `torch.no_grad()`,
/// `torch.inference_mode()`, `torch.set_grad_enabled(False)` (see
/// [`crate::helpers::disables_grad`]), called or bare? A project's or library's own wrapper
/// named for them (`@smart_inference_mode()`, `with utils.no_grad_context():`) is taken at
/// its word: such wrappers pick `inference_mode` or `no_grad` by torch version, which no
/// summary follows, and taking them at their word can only make a rule stay silent.
pub fn turns_grad_off(e: &Expr, scopes: &Scopes) -> bool {
    let (callee, first) = match e {
        Expr::Call(c) => (&*c.func, c.arguments.args.first()),
        e => (e, None),
    };
    match scopes.resolve(callee) {
        Some(q) if q.starts_with("torch.") => crate::helpers::disables_grad(&q, first),
        Some(q) => {
            let last = q.rsplit('.').next().unwrap_or(&q);
            last.contains("inference_mode") || last.contains("no_grad")
        }
        None => false,
    }
}

/// Is the function decorated `@torch.no_grad()` / `@torch.inference_mode()`?
pub fn decorated_no_grad(f: &ast::StmtFunctionDef, scopes: &Scopes) -> bool {
    f.decorator_list
        .iter()
        .any(|d| turns_grad_off(&d.expression, scopes))
}

/// The module-level functions of a file that are decorators turning autograd off for what they
/// wrap: `def nograd(f)` whose inner wrapper calls `f` inside `with torch.no_grad():` and is
/// returned (a hand-written `@torch.no_grad()`, common in code from before it was a
/// decorator). Empty for most files (only defs with a nested def are looked at).
pub fn grad_off_decorators(body: &[Stmt], scopes: &Scopes) -> Vec<String> {
    let mut out = Vec::new();
    for f in crate::helpers::function_defs(body) {
        let Some(wrapped) = f.parameters.args.first().map(|p| p.parameter.name.as_str()) else {
            continue;
        };
        let returns = |name: &str| {
            f.body.iter().any(|s| {
                matches!(s, Stmt::Return(r)
                if r.value.as_deref().and_then(crate::helpers::name_of) == Some(name))
            })
        };
        let wraps = crate::helpers::function_defs(&f.body).any(|inner| {
            returns(inner.name.as_str())
                && inner.body.iter().any(|s| {
                    let Stmt::With(w) = s else {
                        return false;
                    };
                    let off = w
                        .items
                        .iter()
                        .any(|item| turns_grad_off(&item.context_expr, scopes));
                    off && w.body.iter().any(|s| {
                        let value = match s {
                            Stmt::Return(r) => r.value.as_deref(),
                            Stmt::Expr(e) => Some(&*e.value),
                            Stmt::Assign(a) => Some(&*a.value),
                            _ => None,
                        };
                        matches!(value, Some(Expr::Call(c))
                            if crate::helpers::name_of(&c.func) == Some(wrapped))
                    })
                })
        });
        if wraps {
            out.push(f.name.to_string());
        }
    }
    out
}

/// Is the function decorated with one of the file's own grad-off decorators (see
/// [`grad_off_decorators`]), by its bare name?
pub fn decorated_by(f: &ast::StmtFunctionDef, decorators: &[String]) -> bool {
    !decorators.is_empty()
        && f.decorator_list.iter().any(|d| {
            crate::helpers::name_of(&d.expression)
                .is_some_and(|n| decorators.iter().any(|x| x == n))
        })
}

/// What an evaluation looks names up in.
#[derive(Clone, Copy)]
pub struct FlowContext<'c> {
    /// Bindings at the analysed function.
    pub scopes: &'c Scopes,
    /// Module classes of the file.
    pub classes: &'c ModuleClasses,
    /// Value kinds of the function (modules not built in it: parameters with annotations,
    /// module-level models...), when available.
    pub kinds: Option<KindContext<'c>>,
    /// Per-file summaries (`None` inside a summary: one level only).
    pub summaries: Option<&'c Summaries>,
    /// The class whose method is analysed, for `self.<attr>` objects.
    pub class: Option<&'c str>,
    /// Values of the function's parameters that the project model knows (the arguments at
    /// its call sites).
    pub params: Option<&'c FxHashMap<String, Value>>,
}

/// The op of a [`Prop::OnCuda`] fact of a device itself (`"cuda"`, `torch.device("cuda" if
/// ... else "cpu")`) rather than of a tensor on it: the only one a module-level name keeps in
/// the file's summary (a tensor global moved somewhere in the file is not on the GPU
/// everywhere).
const CUDA_DEVICE: &str = "cuda device";

/// The key of a tracked name: `x` or `self.x`.
fn key_of(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Name(n) => Some(n.id.as_str().to_owned()),
        Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => {
            let mut s = String::with_capacity(5 + a.attr.len());
            s.push_str("self.");
            s.push_str(a.attr.as_str());
            Some(s)
        }
        _ => None,
    }
}

const NON_CONTIGUOUS: &[&str] = &[
    "transpose",
    "permute",
    "t",
    "swapaxes",
    "swapdims",
    "movedim",
    "moveaxis",
    "expand",
    "expand_as",
    "unfold",
];

const ELEMENTWISE: &[&str] = &[
    "abs",
    "neg",
    "exp",
    "log",
    "pow",
    "sqrt",
    "rsqrt",
    "mul",
    "add",
    "sub",
    "div",
    "masked_fill",
    "tanh",
    "relu",
    "square",
    "log1p",
    "expm1",
    "reciprocal",
    "sign",
    "mul_",
    "add_",
    "sub_",
    "div_",
    "pow_",
];

const COMPARISONS: &[&str] = &[
    "eq",
    "ne",
    "gt",
    "lt",
    "ge",
    "le",
    "long",
    "int",
    "bool",
    "byte",
    "isnan",
    "isinf",
    "logical_not",
    "logical_and",
    "logical_or",
    "round",
    "floor",
    "ceil",
];

const REDUCTIONS: &[&str] = &[
    "sum",
    "mean",
    "max",
    "min",
    "norm",
    "prod",
    "std",
    "var",
    "logsumexp",
    "amax",
    "amin",
    "nansum",
    "nanmean",
];

const DEAD: &[&str] = &[
    "item",
    "tolist",
    "numpy",
    "argmax",
    "argmin",
    "size",
    "dim",
    "numel",
    "nonzero",
    "argsort",
    "topk",
    "sort",
    "backward",
    "data_ptr",
    "stride",
    "is_contiguous",
    "element_size",
];

/// `F.*_loss` functions that accept `reduction=`.
fn is_functional_loss(name: &str) -> bool {
    name.ends_with("_loss")
        || matches!(
            name,
            "cross_entropy"
                | "binary_cross_entropy"
                | "binary_cross_entropy_with_logits"
                | "kl_div"
                | "triplet_margin_with_distance_loss"
        )
}

fn reduction_none(call: &ExprCall) -> bool {
    helpers::keyword(call, "reduction").and_then(helpers::str_value) == Some("none")
        || helpers::keyword(call, "reduce").and_then(helpers::is_truthy) == Some(false)
}

/// How many leading dimensions `expand(...)` with these arguments expands, when they are the
/// only ones: the arguments after them are all the literal `-1` (size and stride kept), as in
/// `x.unsqueeze(0).expand(b, -1, -1)`. 0 when not known (a shape tuple in a name, sizes that
/// may or may not differ from the tensor's own).
fn expanded_leading(args: &[Expr]) -> u8 {
    let sizes: &[Expr] = match args {
        [Expr::Tuple(t)] => &t.elts,
        [Expr::List(t)] => &t.elts,
        a => a,
    };
    if sizes.iter().any(|a| matches!(a, Expr::Starred(_))) {
        return 0;
    }
    let keep = |e: &Expr| helpers::int_value(e) == Some(-1);
    let lead = sizes.iter().take_while(|e| !keep(e)).count();
    if lead == 0 || lead == sizes.len() || !sizes[lead..].iter().all(keep) {
        return 0;
    }
    u8::try_from(lead).unwrap_or(0)
}

/// An index that removes expanded leading dimensions with integers (`e[-1]`, `e[0, :, :]`):
/// what is left of an `expand` that only expanded those dimensions is the contiguous
/// tensor it expanded, so the non-contiguity goes (or, when fewer of them are indexed, the
/// remaining expanded dimensions are counted).
fn drop_expanded_leading(mut v: Value, slice: &Expr) -> Value {
    let parts: &[Expr] = match slice {
        Expr::Tuple(t) => &t.elts,
        s => std::slice::from_ref(s),
    };
    let ints = parts
        .iter()
        .take_while(|e| {
            // `e[True]` adds a dimension: integers only.
            matches!(helpers::literal(e), Some(helpers::Literal::Int(_)))
        })
        .count();
    // Everything after the integers takes whole dimensions (`:`), which keeps the rest as
    // it was.
    let whole = |e: &Expr| matches!(e, Expr::Slice(sl) if sl.lower.is_none() && sl.upper.is_none() && sl.step.is_none());
    if ints == 0 || !parts[ints..].iter().all(whole) {
        return v;
    }
    let Ok(ints) = u8::try_from(ints) else {
        return v;
    };
    v.facts.retain_mut(|f| {
        if f.prop != Prop::MaybeNonContiguous || f.expanded_leading == 0 {
            return true;
        }
        if ints >= f.expanded_leading {
            return false;
        }
        f.expanded_leading -= ints;
        true
    });
    v
}

fn index_keeps_dims(slice: &Expr) -> bool {
    match slice {
        Expr::Slice(_) => true,
        Expr::Tuple(t) => t.elts.iter().all(|e| matches!(e, Expr::Slice(_))),
        _ => false,
    }
}

impl<'c> FlowContext<'c> {
    /// The properties of `expr`, where `lookup` gives the values of tracked names
    /// (`x`, `self.x`) at that point, and `no_grad` says whether autograd is off there.
    pub fn eval(
        &self,
        expr: &Expr,
        lookup: &dyn Fn(&Expr) -> Option<Value>,
        no_grad: bool,
    ) -> Value {
        match expr {
            Expr::Name(n) => {
                if let Some(v) = lookup(expr) {
                    return v;
                }
                let id = n.id.as_str();
                if let Some(v) = self.params.and_then(|p| p.get(id)) {
                    return v.clone();
                }
                if let Some(v) = self.summaries.and_then(|s| s.global(id)) {
                    if self.scopes.lookup_str(id).is_none() {
                        return v.clone();
                    }
                }
                Value::default()
            }
            Expr::Attribute(a) => {
                if helpers::name_of(&a.value) == Some("self") {
                    if let Some(v) = lookup(expr) {
                        return v;
                    }
                    if let (Some(s), Some(c)) = (self.summaries, self.class) {
                        if let Some(v) = s.class_attr(c, a.attr.as_str()) {
                            return v.clone();
                        }
                    }
                    if let (Some(p), Some(c)) = (self.classes.project(), self.class) {
                        if let Some(crate::project::Entity::Class(id)) = p.local(c) {
                            let r = p.model.class_attr(id, a.attr.as_str(), 0);
                            if r.is_known() {
                                return value_of_resolved(p, &r, expr.range());
                            }
                        }
                    }
                    return Value::default();
                }
                let inner = self.eval(&a.value, lookup, no_grad);
                match a.attr.as_str() {
                    "T" | "mT" | "mH" | "H" => {
                        let mut f = fact(Prop::MaybeNonContiguous, expr.range(), "transpose");
                        f.runs = Some(2);
                        if inner.get(Prop::MaybeNonContiguous).is_some() {
                            f.certainty = Certainty::Maybe;
                        }
                        inner.tensor().without_shape().with(f)
                    }
                    "data" => inner.without(&[Prop::GraphCarrying]),
                    // Sizes are whole numbers (`x.shape[0]`).
                    "shape" | "ndim" => Value {
                        facts: crate::magnitude::size_facts(expr.range()),
                        ..Value::default()
                    },
                    a if crate::tensor_methods::attribute_without_graph(a) => Value::default(),
                    // `out.logits`, `out.loss`: the graph of a model output, nothing more.
                    "loss" | "logits" | "last_hidden_state" | "hidden_states" => {
                        inner.only(&[Prop::GraphCarrying])
                    }
                    // Any other attribute may or may not be a tensor of the graph.
                    _ => inner.only(&[Prop::GraphCarrying]).weaken(),
                }
            }
            Expr::Call(call) if no_grad => self
                .eval_call(call, lookup, no_grad)
                .without(&[Prop::GraphCarrying]),
            Expr::Call(call) => self.eval_call(call, lookup, no_grad),
            // An operation run without autograd gives a tensor outside any graph.
            Expr::Subscript(_) | Expr::BinOp(_) | Expr::UnaryOp(_) if no_grad => {
                let v = self.eval_graph(expr, lookup, no_grad);
                if v.elements.is_some() || v.instance.is_some() {
                    return v;
                }
                v.without(&[Prop::GraphCarrying])
            }
            _ => self.eval_graph(expr, lookup, no_grad),
        }
    }

    fn eval_graph(
        &self,
        expr: &Expr,
        lookup: &dyn Fn(&Expr) -> Option<Value>,
        no_grad: bool,
    ) -> Value {
        match expr {
            Expr::Subscript(s) => {
                let v = self.eval(&s.value, lookup, no_grad);
                if let (Some(els), Some(i)) = (&v.elements, helpers::int_value(&s.slice)) {
                    let idx = if i < 0 { els.len() as i64 + i } else { i };
                    if let Some(e) = usize::try_from(idx).ok().and_then(|i| els.get(i)) {
                        return e.clone();
                    }
                    return Value::default();
                }
                if v.elements.is_some() {
                    return Value::default();
                }
                let v = drop_expanded_leading(v, &s.slice);
                let keep_runs = index_keeps_dims(&s.slice);
                let column = match &*s.slice {
                    Expr::Tuple(t) => {
                        t.elts.len() == 2
                            && matches!(&t.elts[0], Expr::Slice(sl) if sl.lower.is_none() && sl.upper.is_none() && sl.step.is_none())
                            && helpers::int_value(&t.elts[1]).is_some()
                    }
                    _ => false,
                };
                let mut v =
                    v.tensor()
                        .without(&[Prop::ReducedNone, Prop::ColumnVector, Prop::Vector]);
                if column {
                    v.facts
                        .push(fact(Prop::Vector, expr.range(), "[:, k] indexing"));
                }
                if !keep_runs {
                    for f in &mut v.facts {
                        f.runs = None;
                    }
                }
                v
            }
            Expr::BinOp(b) => {
                let l = self.eval(&b.left, lookup, no_grad);
                let r = self.eval(&b.right, lookup, no_grad);
                let facts = crate::magnitude::binop_facts(b.op, &l, &r, &b.left, &b.right);
                with_value_facts(combine(&l, &r, &b.left, &b.right), facts)
            }
            Expr::UnaryOp(u) => self
                .eval(&u.operand, lookup, no_grad)
                .without(&[Prop::Probabilities, Prop::LogProbabilities]),
            Expr::Compare(c) => {
                let mut v = self
                    .eval(&c.left, lookup, no_grad)
                    .only(&[Prop::MaybeNonContiguous, Prop::OnCuda]);
                v.facts
                    .extend(crate::magnitude::compare_facts(expr.range()));
                v
            }
            Expr::If(i) => {
                let a = self.eval(&i.body, lookup, no_grad);
                let b = self.eval(&i.orelse, lookup, no_grad);
                a.merge(&b)
            }
            Expr::Tuple(t) => self.sequence(&t.elts, lookup, no_grad),
            Expr::List(l) => self.sequence(&l.elts, lookup, no_grad),
            Expr::Named(n) => self.eval(&n.value, lookup, no_grad),
            // A device string (`"cuda"`, `"cuda:0"`): what `.to(...)` reads.
            Expr::StringLiteral(st) if st.value.to_str().starts_with("cuda") => {
                Value::default().with(fact(Prop::OnCuda, expr.range(), CUDA_DEVICE))
            }
            _ => Value::default(),
        }
    }

    fn sequence(
        &self,
        elts: &[Expr],
        lookup: &dyn Fn(&Expr) -> Option<Value>,
        no_grad: bool,
    ) -> Value {
        if elts.iter().any(|e| matches!(e, Expr::Starred(_))) {
            return Value::default();
        }
        let els: Vec<Value> = elts.iter().map(|e| self.eval(e, lookup, no_grad)).collect();
        Value {
            facts: Vec::new(),
            instance: None,
            elements: Some(Rc::new(els)),
        }
    }

    fn args_graph(
        &self,
        call: &ExprCall,
        lookup: &dyn Fn(&Expr) -> Option<Value>,
        no_grad: bool,
    ) -> Option<Fact> {
        let mut best: Option<Fact> = None;
        let all = call
            .arguments
            .args
            .iter()
            .chain(call.arguments.keywords.iter().map(|k| &k.value));
        for a in all {
            let v = match a {
                Expr::Starred(s) => self.eval(&s.value, lookup, no_grad),
                e => self.eval(e, lookup, no_grad),
            };
            let g = v.get(Prop::GraphCarrying).cloned().or_else(|| {
                v.elements
                    .as_ref()
                    .and_then(|els| els.iter().find_map(|e| e.get(Prop::GraphCarrying).cloned()))
            });
            if let Some(g) = g {
                if g.certainty == Certainty::Definite {
                    return Some(g);
                }
                best.get_or_insert(g);
            }
        }
        best
    }

    fn call_instance(
        &self,
        inst: &Instance,
        call: &ExprCall,
        _lookup: &dyn Fn(&Expr) -> Option<Value>,
        no_grad: bool,
    ) -> Value {
        let mut v = (*inst.returns).clone();
        let is_loss = inst.class.ends_with("Loss");
        if !no_grad && v.get(Prop::GraphCarrying).is_none() {
            // A loss is computed to be differentiated: it carries the graph of its inputs.
            let op = if is_loss { LOSS } else { "model output" };
            v.facts.push(fact(Prop::GraphCarrying, call.range(), op));
        }
        self.on_input_device(v, call, _lookup, no_grad)
    }

    /// Where a torch function puts its result, when that is a CUDA device: a `device=` that
    /// is one (`torch.zeros(n, device="cuda")`, `torch.device("cuda" if ... else "cpu")`
    /// itself), else the device of its first tensor argument (`torch.max(out, 1)`,
    /// `torch.sigmoid(logits)`), except for the constructors that copy data to the CPU.
    fn torch_call_device(
        &self,
        q: &str,
        call: &ExprCall,
        arg0: impl Fn() -> Value,
        lookup: &dyn Fn(&Expr) -> Option<Value>,
        no_grad: bool,
    ) -> Option<Fact> {
        if q == "torch.device" {
            return arg0().get(Prop::OnCuda).cloned();
        }
        if !q.starts_with("torch.") {
            return None;
        }
        if let Some(d) = helpers::keyword(call, "device") {
            return self.eval(d, lookup, no_grad).get(Prop::OnCuda).cloned();
        }
        if matches!(
            q,
            "torch.from_numpy" | "torch.as_tensor" | "torch.tensor" | "torch.Tensor"
        ) || q.ends_with("Tensor")
        {
            return None;
        }
        arg0().get(Prop::OnCuda).cloned()
    }

    /// A module's output is on the device of its input: CUDA when the first argument is.
    fn on_input_device(
        &self,
        v: Value,
        call: &ExprCall,
        lookup: &dyn Fn(&Expr) -> Option<Value>,
        no_grad: bool,
    ) -> Value {
        let Some(arg) = call.arguments.args.first() else {
            return v;
        };
        if matches!(arg, Expr::Starred(_)) {
            return v;
        }
        match self.eval(arg, lookup, no_grad).get(Prop::OnCuda) {
            Some(f) => v.without_device().with(f.clone()),
            None => v,
        }
    }

    fn construct(
        &self,
        class: &str,
        call: &ExprCall,
        lookup: &dyn Fn(&Expr) -> Option<Value>,
        no_grad: bool,
    ) -> Value {
        let last = helpers::last_segment(class);
        let returns = if class.starts_with("torch.nn.") {
            match last {
                "Softmax" | "Softmax2d" => {
                    Value::default().with(fact(Prop::Probabilities, call.range(), "softmax"))
                }
                "Sigmoid" => {
                    Value::default().with(fact(Prop::Probabilities, call.range(), "sigmoid"))
                }
                "Linear"
                    if helpers::argument(call, "out_features", 1).and_then(helpers::int_value)
                        == Some(1) =>
                {
                    Value::default().with(fact(Prop::ColumnVector, call.range(), "Linear(_, 1)"))
                }
                "LogSoftmax" => {
                    Value::default().with(fact(Prop::LogProbabilities, call.range(), "log_softmax"))
                }
                "Sequential" => match call.arguments.args.last() {
                    Some(Expr::Starred(_)) | None => Value::default(),
                    Some(e) => self
                        .eval(e, lookup, no_grad)
                        .instance
                        .map(|i| strip_graph((*i.returns).clone()))
                        .unwrap_or_default(),
                },
                l if l.ends_with("Loss") && reduction_none(call) => {
                    Value::default().with(fact(Prop::ReducedNone, call.range(), "reduction='none'"))
                }
                _ => Value::default(),
            }
        } else {
            Value::default()
        };
        Value {
            facts: Vec::new(),
            instance: Some(Rc::new(Instance {
                class: Rc::from(class),
                ctor: call.range(),
                returns: Rc::new(returns),
                local: false,
            })),
            elements: None,
        }
    }

    fn eval_call(
        &self,
        call: &ExprCall,
        lookup: &dyn Fn(&Expr) -> Option<Value>,
        no_grad: bool,
    ) -> Value {
        let mut v = self.eval_call_inner(call, lookup, no_grad);
        if !no_grad && self.gives_loss(call, lookup) {
            v.facts.retain(|f| f.prop != Prop::GraphCarrying);
            // `criterion(out.detach(), y)`: a loss of inputs visibly cut from the graph, none
            // of them carrying one, is a number for monitoring.
            let cut = call.arguments.args.iter().any(cut_from_graph)
                && self.args_graph(call, lookup, no_grad).is_none();
            if !cut {
                v.facts.push(fact(Prop::GraphCarrying, call.range(), LOSS));
            }
        }
        v
    }

    /// Does this call compute a loss: a criterion (`criterion(...)`, `self.loss_fn(...)`,
    /// `crit(...)`), `F.*_loss` / `F.cross_entropy` / `F.kl_div`, a module whose name says
    /// loss (`self.loss(...)`), or a project function that returns a loss it differentiated
    /// (a training-step helper)?
    fn gives_loss(&self, call: &ExprCall, lookup: &dyn Fn(&Expr) -> Option<Value>) -> bool {
        if let Some((method, _)) = helpers::method_call(call) {
            if crate::tensor_methods::effects(method).drops_graph()
                || crate::tensor_methods::effects(method).keeps_graph()
            {
                return false;
            }
        }
        let project = self.classes.project();
        let differentiated = |e: Option<crate::project::Entity>| match (project, e) {
            (Some(p), Some(crate::project::Entity::Function(g))) => {
                p.model.function(g).returns_differentiated
            }
            _ => false,
        };
        if let Some(q) = self.scopes.resolve(&call.func) {
            if let Some(f) = q.strip_prefix("torch.nn.functional.") {
                return f.ends_with("_loss") || f.contains("cross_entropy") || f == "kl_div";
            }
            return differentiated(project.and_then(|p| p.entity(&q)));
        }
        if let Expr::Name(n) = &*call.func {
            let id = n.id.as_str();
            if differentiated(project.and_then(|p| p.local(id))) {
                return true;
            }
            if matches!(id, "float" | "int" | "bool" | "len" | "round" | "str")
                && self.scopes.current().is_none_or(|s| !s.binds_locally(id))
            {
                return false;
            }
        }
        let Some(text) = helpers::dotted(&call.func) else {
            return false;
        };
        let last = text
            .rsplit('.')
            .next()
            .unwrap_or(&text)
            .to_ascii_lowercase();
        if last.contains("criterion")
            || last.contains("loss_fn")
            || last.contains("loss_func")
            || last == "crit"
            || last == "lossfn"
        {
            return true;
        }
        // A module named for a loss (`self.loss(out, y)`, `ce_loss(...)`).
        text.to_ascii_lowercase().contains("loss")
            && matches!(&*call.func, Expr::Name(_) | Expr::Attribute(_))
            && (self
                .kinds
                .as_ref()
                .is_some_and(|k| k.kind(&call.func) == Kind::Module)
                || self.eval(&call.func, lookup, false).instance.is_some())
    }

    fn eval_call_inner(
        &self,
        call: &ExprCall,
        lookup: &dyn Fn(&Expr) -> Option<Value>,
        no_grad: bool,
    ) -> Value {
        let args = &call.arguments.args;
        let arg0 = || {
            args.first()
                .filter(|a| !matches!(a, Expr::Starred(_)))
                .map(|a| self.eval(a, lookup, no_grad))
                .unwrap_or_default()
        };
        if let Some(q) = self.scopes.resolve(&call.func) {
            // `torch.Tensor.item(loss)`: the unbound form of `loss.item()`, for the methods
            // that take nothing but the tensor and leave the graph (`item`, `detach`, `tolist`).
            if let Some(method) = q.strip_prefix("torch.Tensor.") {
                if args.len() == 1
                    && call.arguments.keywords.is_empty()
                    && !matches!(args[0], Expr::Starred(_))
                    && crate::tensor_methods::effects(method).drops_graph()
                {
                    return self.eval_method(method, &arg0(), call, lookup, no_grad);
                }
            }
            if crate::classes::call_returns_eval_mode(&q, call) {
                return Value::default().with(fact(
                    Prop::EvalMode,
                    call.range(),
                    "from_pretrained",
                ));
            }
            let mut v = self.eval_qualified(&q, call, arg0, lookup, no_grad);
            if v.instance.is_none() && self.summaries.is_some_and(|s| s.mentions_cuda) {
                if let Some(f) = self.torch_call_device(&q, call, arg0, lookup, no_grad) {
                    v = v.without_device().with(f);
                }
            }
            v = max_pair_value(q == "torch.max", call, 1, v);
            if v.instance.is_none() && !matches!(q.as_str(), "torch.exp" | "torch.log") {
                let mut facts = crate::magnitude::factory_facts(&q, call);
                facts.extend(crate::magnitude::count_facts(&q, call, &|e| {
                    self.eval(e, lookup, no_grad)
                }));
                v = with_value_facts(v, facts);
            }
            if v.instance.is_none()
                && self.summaries.is_some_and(|s| s.factories_on_cpu)
                && cpu_factory(&q, call)
            {
                return v.with(fact(Prop::OnCpu, call.range(), "CPU factory"));
            }
            return v;
        }
        match &*call.func {
            Expr::Name(n) => {
                let id = n.id.as_str();
                if id == "self" && lookup(&call.func).is_none() {
                    // `self(x)` in a LightningModule step runs the class's own forward.
                    if let Some(c) = self.class {
                        let local = self.summaries.and_then(|s| s.forward(c)).cloned();
                        let returns = match local {
                            Some(v) => v,
                            None => match self
                                .classes
                                .project()
                                .and_then(|p| p.local(c).map(|e| (p, e)))
                            {
                                Some((p, crate::project::Entity::Class(id))) => {
                                    let r = crate::project::Resolved {
                                        class: Some(crate::project::ClassRef::Project(id)),
                                        ..Default::default()
                                    };
                                    value_of_resolved(p, &r, call.range())
                                        .instance
                                        .map(|i| (*i.returns).clone())
                                        .unwrap_or_default()
                                }
                                _ => Value::default(),
                            },
                        };
                        let mut v = returns;
                        if !no_grad && v.get(Prop::GraphCarrying).is_none() {
                            v.facts
                                .push(fact(Prop::GraphCarrying, call.range(), "model output"));
                        }
                        return self.on_input_device(v, call, lookup, no_grad);
                    }
                }
                if lookup(&call.func).is_none() {
                    if self.classes.is_module(id) && self.scopes.lookup(id).is_none() {
                        let returns = self
                            .summaries
                            .and_then(|s| s.forward(id))
                            .cloned()
                            .unwrap_or_default();
                        return Value {
                            facts: Vec::new(),
                            instance: Some(Rc::new(Instance {
                                class: Rc::from(id),
                                ctor: call.range(),
                                returns: Rc::new(returns),
                                local: true,
                            })),
                            elements: None,
                        };
                    }
                    if let Some(v) = self.summaries.and_then(|s| s.function(id)) {
                        if self.summaries.and_then(|s| s.global(id)).is_none() {
                            return v.clone();
                        }
                    }
                    if matches!(id, "int" | "len") && call.arguments.args.len() == 1 {
                        return Value {
                            facts: crate::magnitude::size_facts(call.range()),
                            ..Value::default()
                        };
                    }
                    if matches!(id, "float" | "int" | "len" | "bool" | "str" | "isinstance") {
                        return Value::default();
                    }
                    // A project function or class the file has through a star import (and
                    // no binding of the name here shadows).
                    if let Some(p) = self.classes.project().filter(|_| !self.scopes.is_bound(id)) {
                        if let Some(
                            e @ (crate::project::Entity::Function(_)
                            | crate::project::Entity::Class(_)),
                        ) = p.star_imported(id)
                        {
                            let r = p.resolve_entity_call(e);
                            return value_of_resolved(p, &r, call.range());
                        }
                    }
                }
                self.call_callee_value(call, lookup, no_grad)
            }
            Expr::Attribute(a) => {
                let method = a.attr.as_str();
                if helpers::name_of(&a.value) == Some("self") && lookup(&a.value).is_none() {
                    // A method of this module class that its `forward` calls (`self.decode(z)`),
                    // unless the name also holds an object here.
                    if let (Some(s), Some(c)) = (self.summaries, self.class) {
                        if let Some(v) = s.method(c, method) {
                            if lookup(&call.func).is_none() && s.class_attr(c, method).is_none() {
                                return v.clone();
                            }
                        }
                    }
                    // `self.head(x)`: an object attribute, or a method of this class.
                    return self.call_callee_value(call, lookup, no_grad);
                }
                let recv = self.eval(&a.value, lookup, no_grad);
                self.eval_method(method, &recv, call, lookup, no_grad)
            }
            _ => self.call_callee_value(call, lookup, no_grad),
        }
    }

    fn call_callee_value(
        &self,
        call: &ExprCall,
        lookup: &dyn Fn(&Expr) -> Option<Value>,
        no_grad: bool,
    ) -> Value {
        let callee = self.eval(&call.func, lookup, no_grad);
        if let Some(inst) = &callee.instance {
            return self.call_instance(inst, call, lookup, no_grad);
        }
        let is_module = self
            .kinds
            .as_ref()
            .is_some_and(|k| k.kind(&call.func) == Kind::Module);
        if is_module {
            let v = if no_grad {
                Value::default()
            } else {
                Value::default().with(fact(Prop::GraphCarrying, call.range(), "model output"))
            };
            return self.on_input_device(v, call, lookup, no_grad);
        }
        Value::default()
    }

    fn eval_method(
        &self,
        method: &str,
        recv: &Value,
        call: &ExprCall,
        lookup: &dyn Fn(&Expr) -> Option<Value>,
        no_grad: bool,
    ) -> Value {
        let out = self.eval_method_inner(method, recv, call, lookup, no_grad);
        if recv.instance.is_some() {
            return out;
        }
        let facts = crate::magnitude::method_facts(method, recv, call);
        let mut out = with_value_facts(out, facts).without_shape();
        if let Some(f) = shape_after(method, recv, call) {
            out.facts.push(f);
        }
        max_pair_value(method == "max", call, 0, out)
    }

    fn eval_method_inner(
        &self,
        method: &str,
        recv: &Value,
        call: &ExprCall,
        lookup: &dyn Fn(&Expr) -> Option<Value>,
        no_grad: bool,
    ) -> Value {
        if let Some(v) = mode_method(method, recv, call) {
            return v;
        }
        if let Some(inst) = &recv.instance {
            if crate::kinds::MODULE_SELF_METHODS.contains(&method) {
                return recv.clone();
            }
            if method == "forward" {
                return self.call_instance(inst, call, lookup, no_grad);
            }
            return Value::default();
        }
        // `model.forward(x)` of a module the file does not know: its output is at least on
        // the device of its input.
        if method == "forward" {
            return self.on_input_device(Value::default(), call, lookup, no_grad);
        }
        let mut r = recv.tensor();
        r.facts.retain(|f| f.prop != Prop::EvalMode);
        let here = call.range();
        match method {
            "cpu" => return r.without_device().with(fact(Prop::OnCpu, here, "cpu()")),
            "to" | "type" if moves_to_cpu(call) => {
                return r
                    .without_device()
                    .with(fact(Prop::OnCpu, here, "to(\"cpu\")"))
            }
            "cuda" => return r.without_device().with(fact(Prop::OnCuda, here, "cuda()")),
            "to" => {
                // `.to(device)`: CUDA when the target is (a device string or object).
                let target = helpers::argument(call, "device", 0)
                    .map(|d| self.eval(d, lookup, no_grad))
                    .and_then(|d| d.get(Prop::OnCuda).cloned());
                let r = r.without_device();
                return match target {
                    Some(mut f) => {
                        f.origin = here;
                        f.op = "to(device)";
                        r.with(f)
                    }
                    None => r,
                };
            }
            "type" | "type_as" => {
                return r.without_device();
            }
            // Indices of a tensor, on its device.
            "argmax" | "argmin" => return r.only(&[Prop::OnCuda]),
            _ => {}
        }
        match method {
            "softmax" => r.only(&[Prop::GraphCarrying, Prop::OnCuda]).with(fact(
                Prop::Probabilities,
                here,
                "softmax",
            )),
            "sigmoid" | "sigmoid_" => r.only(&[Prop::GraphCarrying, Prop::OnCuda]).with(fact(
                Prop::Probabilities,
                here,
                "sigmoid",
            )),
            "log_softmax" => r.only(&[Prop::GraphCarrying, Prop::OnCuda]).with(fact(
                Prop::LogProbabilities,
                here,
                "log_softmax",
            )),
            "exp" if r.get(Prop::LogProbabilities).is_some() => {
                let c = r.get(Prop::LogProbabilities).map(|f| f.certainty);
                let mut f = fact(Prop::Probabilities, here, "exp(log_softmax)");
                f.certainty = c.unwrap_or(Certainty::Definite);
                r.only(&[Prop::GraphCarrying, Prop::MaybeNonContiguous])
                    .with(f)
            }
            "log" if r.get(Prop::Probabilities).is_some() => {
                let c = r.get(Prop::Probabilities).map(|f| f.certainty);
                let mut f = fact(Prop::LogProbabilities, here, "log(softmax)");
                f.certainty = c.unwrap_or(Certainty::Definite);
                r.only(&[Prop::GraphCarrying, Prop::MaybeNonContiguous])
                    .with(f)
            }
            "contiguous" | "clone" | "reshape" | "reshape_as" | "flatten" | "view" | "view_as" => {
                r.without(&[Prop::MaybeNonContiguous])
            }
            "detach" | "detach_" => r.without(&[Prop::GraphCarrying]),
            m if NON_CONTIGUOUS.contains(&m) => {
                let mut f = fact(Prop::MaybeNonContiguous, here, non_contiguous_op(m));
                let ndim = match &*call.func {
                    Expr::Attribute(a) => syntactic_ndim(&a.value),
                    _ => None,
                };
                f.runs = runs_of(m, &call.arguments.args, ndim);
                if m == "expand" {
                    f.expanded_leading = expanded_leading(&call.arguments.args);
                }
                // Two layout changes may cancel out (`x.t().t()`): unknown.
                let receiver = match &*call.func {
                    Expr::Attribute(a) => Some(&*a.value),
                    _ => None,
                };
                if r.get(Prop::MaybeNonContiguous).is_some()
                    || layout_unsure(m, &call.arguments.args, receiver)
                {
                    f.certainty = Certainty::Maybe;
                }
                r.with(f)
            }
            "squeeze" | "unsqueeze" | "squeeze_" | "unsqueeze_" | "select" | "narrow" => {
                let mut v = r;
                for f in &mut v.facts {
                    f.runs = None;
                }
                v
            }
            m if crate::tensor_methods::effects(m).keeps_facts() => r,
            // `scaler.scale(loss)` keeps the loss's shape and graph.
            "scale" if args_len(call) == 1 => call
                .arguments
                .args
                .first()
                .map(|a| self.eval(a, lookup, no_grad).tensor())
                .unwrap_or_default(),
            m if ELEMENTWISE.contains(&m) => {
                r.without(&[Prop::Probabilities, Prop::LogProbabilities])
            }
            m if COMPARISONS.contains(&m) => r.only(&[Prop::MaybeNonContiguous, Prop::OnCuda]),
            m if REDUCTIONS.contains(&m) => {
                r.only(&[Prop::GraphCarrying, Prop::OnCpu, Prop::OnCuda])
            }
            m if DEAD.contains(&m) => Value::default(),
            _ => r.only(&[Prop::GraphCarrying]).weaken(),
        }
    }

    fn eval_qualified(
        &self,
        q: &str,
        call: &ExprCall,
        arg0: impl Fn() -> Value,
        lookup: &dyn Fn(&Expr) -> Option<Value>,
        no_grad: bool,
    ) -> Value {
        let here = call.range();
        let graph = |v: Value| -> Value {
            match self.args_graph(call, lookup, no_grad) {
                Some(g) if v.get(Prop::GraphCarrying).is_none() => v.with(g),
                _ => v,
            }
        };
        match q {
            "torch.softmax" | "torch.nn.functional.softmax" | "torch.special.softmax" => {
                return graph(Value::default().with(fact(Prop::Probabilities, here, "softmax")))
            }
            "torch.sigmoid" | "torch.nn.functional.sigmoid" | "torch.special.expit" => {
                let mut v = Value::default().with(fact(Prop::Probabilities, here, "sigmoid"));
                let a = arg0();
                if let Some(f) = a.get(Prop::ColumnVector).or(a.get(Prop::Vector)) {
                    v.facts.push(f.clone());
                }
                return graph(v);
            }
            "torch.tensor" | "torch.FloatTensor" | "torch.as_tensor" => {
                let flat_numbers = match call.arguments.args.first() {
                    Some(Expr::List(l)) => {
                        !l.elts.is_empty()
                            && l.elts.iter().all(|e| {
                                helpers::literal(e).is_some_and(|l| {
                                    matches!(
                                        l,
                                        helpers::Literal::Int(_) | helpers::Literal::Float(_)
                                    )
                                })
                            })
                    }
                    _ => false,
                };
                return if flat_numbers {
                    Value::default().with(fact(Prop::Vector, here, "1-D tensor literal"))
                } else {
                    Value::default()
                };
            }
            "torch.randn" | "torch.rand" | "torch.zeros" | "torch.ones" | "torch.empty"
                if call.arguments.args.len() == 1
                    && matches!(
                        call.arguments.args[0],
                        Expr::NumberLiteral(_) | Expr::BinOp(_)
                    ) =>
            {
                return Value::default().with(fact(Prop::Vector, here, "1-D factory"));
            }
            "torch.log_softmax"
            | "torch.nn.functional.log_softmax"
            | "torch.special.log_softmax" => {
                return graph(Value::default().with(fact(
                    Prop::LogProbabilities,
                    here,
                    "log_softmax",
                )))
            }
            "torch.nn.functional.logsigmoid" => {
                return graph(Value::default().with(fact(
                    Prop::LogProbabilities,
                    here,
                    "logsigmoid",
                )))
            }
            "torch.exp" | "torch.log" if args_len(call) == 1 => {
                let method = helpers::last_segment(q);
                return self.eval_method(method, &arg0(), call, lookup, no_grad);
            }
            "torch.transpose" | "torch.permute" | "torch.t" | "torch.swapaxes"
            | "torch.swapdims" | "torch.movedim" | "torch.moveaxis" => {
                let m = helpers::last_segment(q);
                let mut f = fact(Prop::MaybeNonContiguous, here, non_contiguous_op(m));
                let args: Vec<Expr> = call.arguments.args.iter().skip(1).cloned().collect();
                let ndim = call.arguments.args.first().and_then(syntactic_ndim);
                f.runs = runs_of(m, &args, ndim);
                let before = arg0();
                if before.get(Prop::MaybeNonContiguous).is_some()
                    || layout_unsure(m, &args, call.arguments.args.first())
                {
                    f.certainty = Certainty::Maybe;
                }
                return before.tensor().without_shape().with(f);
            }
            "torch.flatten" | "torch.reshape" => {
                return arg0()
                    .tensor()
                    .without_shape()
                    .without(&[Prop::MaybeNonContiguous])
            }
            "torch.squeeze" | "torch.unsqueeze" => {
                let mut v = arg0().tensor().without_shape();
                for f in &mut v.facts {
                    f.runs = None;
                }
                return v;
            }
            "torch.clamp" | "torch.clip" => return arg0().tensor(),
            _ => {}
        }
        if is_module_base(q) {
            return self.construct(q, call, lookup, no_grad);
        }
        let Some(rest) = q.strip_prefix("torch.") else {
            // A class or function of another file of the project.
            if let Some(p) = self.classes.project() {
                if let Some(e) = p.entity(q) {
                    let r = p.resolve_entity_call(e);
                    return value_of_resolved(p, &r, call.range());
                }
            }
            return Value::default();
        };
        let name = helpers::last_segment(rest);
        if matches!(
            name,
            "argmax" | "argmin" | "no_grad" | "is_tensor" | "numel" | "manual_seed" | "device"
        ) {
            return Value::default();
        }
        let mut v = Value::default();
        if rest.starts_with("nn.functional.") && is_functional_loss(name) && reduction_none(call) {
            v = v.with(fact(Prop::ReducedNone, here, "reduction='none'"));
        }
        if no_grad {
            return v;
        }
        graph(v)
    }
}

/// What `.eval()` / `.train(...)` or a self-returning module method (`.to(device)`) does to
/// the mode of the object (see [`Prop::EvalMode`]); `None` when the method says nothing about
/// it.
fn mode_method(method: &str, recv: &Value, call: &ExprCall) -> Option<Value> {
    match mode_switch(method, call) {
        Some(true) => {
            return Some(
                recv.clone()
                    .with(fact(Prop::EvalMode, call.range(), "eval()")),
            )
        }
        Some(false) if recv.instance.is_some() || recv.get(Prop::EvalMode).is_some() => {
            let mut v = recv.clone();
            v.facts.retain(|f| f.prop != Prop::EvalMode);
            return Some(v);
        }
        _ => {}
    }
    (recv.get(Prop::EvalMode).is_some() && crate::kinds::MODULE_SELF_METHODS.contains(&method))
        .then(|| recv.clone())
}

/// `Some(true)` for `.eval()` / `.train(False)`, `Some(false)` for any other `.train(...)`
/// (the mode may be training), `None` for other methods.
fn mode_switch(method: &str, call: &ExprCall) -> Option<bool> {
    match method {
        "eval" if call.arguments.is_empty() => Some(true),
        "train" => {
            let mode = helpers::argument(call, "mode", 0);
            Some(mode.and_then(helpers::is_truthy) == Some(false))
        }
        _ => None,
    }
}

/// The object a chain of self-returning module methods is called on (`Net().to(dev).eval()`
/// -> `Net()`, the methods [`Prop::EvalMode`] is kept through), and the train/eval mode the
/// chain leaves it in, by the same transfer as the dataflow: `Some(true)` after `.eval()` /
/// `.train(False)`, `Some(false)` after another `.train(...)` (the outermost switch wins),
/// `None` when the chain switches nothing.
pub fn module_chain(mut expr: &Expr) -> (&Expr, Option<bool>) {
    let mut mode = None;
    while let Expr::Call(c) = expr {
        let Some((method, recv)) = helpers::method_call(c) else {
            break;
        };
        if !crate::kinds::MODULE_SELF_METHODS.contains(&method) {
            break;
        }
        if mode.is_none() {
            mode = mode_switch(method, c);
        }
        expr = recv;
    }
    (expr, mode)
}

/// Does calling method `m` on a module leave its train/eval mode (and its training) alone:
/// one that moves or casts it (`to`, `cuda`, `float`), or reads, saves, loads or runs it
/// ([`KEEPS_MODE`])? Not `eval`, `train`, `requires_grad_` or `apply`.
pub fn method_keeps_mode(m: &str) -> bool {
    KEEPS_MODE.contains(&m)
        || (crate::kinds::MODULE_SELF_METHODS.contains(&m)
            && !matches!(m, "eval" | "train" | "requires_grad_" | "apply"))
}

/// Methods that leave a module's train/eval mode alone besides the self-returning ones
/// (reading, saving, running it).
const KEEPS_MODE: &[&str] = &[
    "forward",
    "generate",
    "parameters",
    "named_parameters",
    "buffers",
    "named_buffers",
    "modules",
    "named_modules",
    "children",
    "named_children",
    "state_dict",
    "load_state_dict",
    "save_pretrained",
    "push_to_hub",
    "num_parameters",
    "get_input_embeddings",
    "get_output_embeddings",
    "zero_grad",
];

/// The properties of `left <op> right` (arithmetic): graph and unreduced losses propagate;
/// non-contiguity stays definite only against a scalar or another non-contiguous operand.
fn combine(l: &Value, r: &Value, left: &Expr, right: &Expr) -> Value {
    let mut out = Value::default();
    for (side, other, other_expr) in [(l, r, right), (r, l, left)] {
        for f in &side.facts {
            if out.get(f.prop).is_some() {
                continue;
            }
            match f.prop {
                Prop::GraphCarrying | Prop::ReducedNone => out.facts.push(f.clone()),
                Prop::MaybeNonContiguous => {
                    let mut f = f.clone();
                    let scalar = matches!(other_expr, Expr::NumberLiteral(_))
                        || other.get(Prop::MaybeNonContiguous).is_some();
                    if !scalar {
                        f.certainty = Certainty::Maybe;
                    }
                    out.facts.push(f);
                }
                Prop::ColumnVector | Prop::Vector => {
                    if matches!(other_expr, Expr::NumberLiteral(_)) {
                        out.facts.push(f.clone());
                    }
                }
                Prop::Probabilities | Prop::LogProbabilities | Prop::EvalMode => {}
                // Depend on the operator: see `magnitude::binop_facts`.
                Prop::LiteralBounded
                | Prop::IntegerValued
                | Prop::ShiftedByMax
                | Prop::MaxValue => {}
                // A CUDA tensor with anything it can be combined with stays on the GPU.
                Prop::OnCuda => out.facts.push(f.clone()),
                // CPU with CPU, or with a plain number, stays on the CPU.
                Prop::OnCpu => {
                    let number = matches!(other_expr, Expr::NumberLiteral(_));
                    if let Some(g) = other.get(Prop::OnCpu).filter(|_| !number) {
                        let mut f = f.clone();
                        if g.certainty == Certainty::Maybe {
                            f.certainty = Certainty::Maybe;
                        }
                        out.facts.push(f);
                    } else if number {
                        out.facts.push(f.clone());
                    }
                }
            }
        }
    }
    // `a + b`: definitely graph-carrying when either side definitely is.
    if let Some(g) = [l, r].iter().find_map(|v| v.definite(Prop::GraphCarrying)) {
        out.facts.retain(|f| f.prop != Prop::GraphCarrying);
        out.facts.push(g.clone());
    }
    out
}

/// Methods that keep a tensor's shape.
const SAME_SHAPE: &[&str] = &[
    "float",
    "double",
    "half",
    "bfloat16",
    "to",
    "cuda",
    "cpu",
    "detach",
    "clone",
    "contiguous",
    "sigmoid",
    "tanh",
    "relu",
    "abs",
    "exp",
    "log",
    "neg",
    "clamp",
    "clip",
    "type",
    "type_as",
    "requires_grad_",
    "squeeze_",
    "log1p",
    "expm1",
    "sqrt",
];

/// The shape fact (column vector / vector) after `recv.method(...)`.
fn shape_after(method: &str, recv: &Value, call: &ExprCall) -> Option<Fact> {
    let args = &call.arguments.args;
    let here = call.range();
    let col = recv.get(Prop::ColumnVector);
    let vec = recv.get(Prop::Vector);
    let single_int = || {
        (args.len() == 1 && call.arguments.keywords.is_empty())
            .then(|| helpers::int_value(&args[0]))
            .flatten()
    };
    match method {
        m if SAME_SHAPE.contains(&m) && m != "squeeze_" => col.or(vec).cloned(),
        "squeeze" if col.is_some() && (args.is_empty() || matches!(single_int(), Some(1 | -1))) => {
            Some(fact(Prop::Vector, here, "squeeze"))
        }
        "view" | "reshape" if single_int() == Some(-1) => {
            Some(fact(Prop::Vector, here, method_op(method)))
        }
        "flatten" if args.is_empty() && call.arguments.keywords.is_empty() => {
            Some(fact(Prop::Vector, here, "flatten"))
        }
        "unsqueeze" if vec.is_some() && matches!(single_int(), Some(1 | -1)) => {
            Some(fact(Prop::ColumnVector, here, "unsqueeze"))
        }
        _ => None,
    }
}

fn method_op(m: &str) -> &'static str {
    if m == "view" {
        "view(-1)"
    } else {
        "reshape(-1)"
    }
}

fn args_len(call: &ExprCall) -> usize {
    call.arguments.args.len() + call.arguments.keywords.len()
}

fn non_contiguous_op(m: &str) -> &'static str {
    match m {
        "transpose" => "transpose",
        "permute" => "permute",
        "t" => "t",
        "swapaxes" | "swapdims" => "swapaxes",
        "movedim" | "moveaxis" => "movedim",
        "expand" | "expand_as" => "expand",
        "unfold" => "unfold",
        _ => "transpose",
    }
}

/// The number of dimensions of `x.view(a, b, c)` / `x.reshape(..)` / `x.permute(..)` /
/// `x.expand(..)` written with explicit sizes.
fn syntactic_ndim(expr: &Expr) -> Option<usize> {
    let Expr::Call(c) = expr else { return None };
    let (m, _) = helpers::method_call(c)?;
    if !matches!(m, "view" | "reshape" | "permute" | "expand") || !c.arguments.keywords.is_empty() {
        return None;
    }
    let args = &c.arguments.args;
    if args.len() < 2 || args.iter().any(|a| matches!(a, Expr::Starred(_))) {
        return None;
    }
    Some(args.len())
}

/// Is the result of this layout change possibly contiguous after all, whatever the analysis
/// knows? `permute(0, 2, 3, 1)` (NCHW -> NHWC) of a tensor that is not freshly viewed is
/// contiguous when the tensor is `channels_last` (conv / interpolate outputs of
/// channels-last inputs are); a transpose right after `squeeze`/`unsqueeze` usually moves a
/// size-1 dimension, which changes nothing in memory.
fn layout_unsure(method: &str, args: &[Expr], receiver: Option<&Expr>) -> bool {
    let fresh = receiver.is_some_and(|r| {
        matches!(r, Expr::Call(c) if matches!(
            helpers::method_call(c),
            Some(("view" | "reshape" | "contiguous", _))
        ))
    });
    let size_one_nearby = receiver.is_some_and(|r| match r {
        Expr::Call(c) => matches!(helpers::method_call(c), Some(("squeeze" | "unsqueeze", _))),
        Expr::Subscript(s) => match &*s.slice {
            Expr::Tuple(t) => t.elts.iter().any(|e| matches!(e, Expr::NoneLiteral(_))),
            e => matches!(e, Expr::NoneLiteral(_)),
        },
        _ => false,
    });
    if size_one_nearby && !matches!(method, "expand" | "expand_as") {
        return true;
    }
    if method == "permute" && !fresh {
        let dims: &[Expr] = match args {
            [Expr::Tuple(t)] => &t.elts,
            [Expr::List(t)] => &t.elts,
            a => a,
        };
        let nhwc = literal_dims(dims, Some(dims.len()))
            .is_some_and(|p| p == [0, 2, 3, 1] || p == [0, 2, 3, 4, 1]);
        return nhwc;
    }
    false
}

/// Runs of consecutive dimensions in a permutation (`[0, 2, 3, 1]` -> 3).
fn count_runs(perm: &[usize]) -> usize {
    1 + perm.windows(2).filter(|w| w[1] != w[0] + 1).count()
}

/// Literal dims, normalised against `ndim` when negative.
fn literal_dims(exprs: &[Expr], ndim: Option<usize>) -> Option<Vec<usize>> {
    exprs
        .iter()
        .map(|e| {
            let v = helpers::int_value(e)?;
            if v >= 0 {
                usize::try_from(v).ok()
            } else {
                let n = i64::try_from(ndim?).ok()?;
                usize::try_from(n + v).ok()
            }
        })
        .collect()
}

/// A lower bound on the runs of memory-adjacent dimensions after a layout change applied to
/// a contiguous tensor with `ndim` dimensions (when known).
fn runs_of(method: &str, args: &[Expr], ndim: Option<usize>) -> Option<u8> {
    if args.iter().any(|a| matches!(a, Expr::Starred(_))) {
        return None;
    }
    let runs = match method {
        "t" => 2,
        "permute" => {
            let dims: &[Expr] = match args {
                [Expr::Tuple(t)] => &t.elts,
                [Expr::List(t)] => &t.elts,
                a => a,
            };
            let perm = literal_dims(dims, Some(dims.len()))?;
            count_runs(&perm)
        }
        "expand" => match args {
            [Expr::Tuple(t)] => t.elts.len(),
            [Expr::List(t)] => t.elts.len(),
            [_] => return None,
            a => a.len(),
        },
        "transpose" | "swapaxes" | "swapdims" => {
            let (Some(a), Some(b)) = (args.first(), args.get(1)) else {
                return None;
            };
            match literal_dims(&[a.clone(), b.clone()], ndim) {
                Some(d) => {
                    let n = ndim.unwrap_or(d[0].max(d[1]) + 1);
                    if d[0] >= n || d[1] >= n {
                        return None;
                    }
                    let mut perm: Vec<usize> = (0..n).collect();
                    perm.swap(d[0], d[1]);
                    count_runs(&perm)
                }
                // Negative dims on an unknown rank: at least the swapped pair.
                None => 2,
            }
        }
        _ => return None,
    };
    u8::try_from(runs).ok().filter(|r| *r >= 2)
}

type Env = FxHashMap<String, Value>;

fn merge_envs(a: &Env, b: &Env) -> Env {
    let mut out = Env::default();
    for (k, v) in a {
        let m = match b.get(k) {
            Some(w) => v.merge(w),
            None => v.clone().weaken(),
        };
        if !m.is_empty() {
            out.insert(k.clone(), m);
        }
    }
    for (k, w) in b {
        if !a.contains_key(k) {
            let m = w.clone().weaken();
            if !m.is_empty() {
                out.insert(k.clone(), m);
            }
        }
    }
    out
}

fn ends_flow(body: &[Stmt]) -> bool {
    match body.last() {
        Some(Stmt::Return(_) | Stmt::Raise(_) | Stmt::Continue(_) | Stmt::Break(_)) => true,
        // `exit('unknown model')`, `sys.exit(1)`, `quit()`: the process ends.
        Some(Stmt::Expr(e)) => matches!(&*e.value, Expr::Call(c) if matches!(
            &*c.func,
            Expr::Name(n) if matches!(n.id.as_str(), "exit" | "quit"))
            || matches!(&*c.func, Expr::Attribute(a)
                if a.attr.as_str() == "exit" && helpers::name_of(&a.value) == Some("sys"))),
        _ => false,
    }
}

/// The analysis result for one function: the value of every tracked name where it is read.
#[derive(Debug, Default)]
pub struct FunctionFlow {
    names: FxHashMap<TextSize, Value>,
    /// The merged value of the function's `return` statements, if any.
    pub returns: Option<Value>,
    no_grad_ranges: Vec<TextRange>,
    no_grad_function: bool,
}

struct Walker<'c, 'x> {
    cx: &'x FlowContext<'c>,
    env: Env,
    record: bool,
    out: FunctionFlow,
    no_grad: u32,
    loop_depth: u32,
    /// Per enclosing loop: the names its body differentiates, with the first backward call.
    /// Per enclosing loop: the names its body differentiates, with the first
    /// differentiation's range and where the last one ends.
    differentiated: Vec<Vec<(String, TextRange, TextSize)>>,
}

impl FunctionFlow {
    /// Analyse a function body (or module-level statements, which skip nested defs/classes).
    /// `no_grad` says the whole body runs without autograd (a `@torch.no_grad()` function).
    pub fn analyze(cx: &FlowContext, body: &[Stmt], no_grad: bool) -> Self {
        Self::run(cx, body, no_grad, true)
    }

    fn run(cx: &FlowContext, body: &[Stmt], no_grad: bool, record: bool) -> Self {
        let mut w = Walker {
            cx,
            env: Env::default(),
            record,
            out: FunctionFlow {
                no_grad_function: no_grad,
                ..FunctionFlow::default()
            },
            no_grad: u32::from(no_grad),
            loop_depth: 0,
            differentiated: Vec::new(),
        };
        w.suite(body);
        w.out
    }

    /// The value of a tracked name (`x` / `self.x`) read at this expression, if the analysis
    /// knows one.
    pub fn name_value(&self, expr: &Expr) -> Option<&Value> {
        self.names.get(&expr.range().start())
    }

    /// Does `offset` lie where autograd is off (a `with torch.no_grad()` block of the function,
    /// or a `@torch.no_grad()` function)?
    pub fn in_no_grad(&self, offset: TextSize) -> bool {
        self.no_grad_function || self.no_grad_ranges.iter().any(|r| r.contains(offset))
    }

    /// The properties of any expression of the analysed function, at its place.
    pub fn value_of(&self, cx: &FlowContext, expr: &Expr) -> Value {
        let lookup = |e: &Expr| self.names.get(&e.range().start()).cloned();
        cx.eval(expr, &lookup, self.in_no_grad(expr.range().start()))
    }
}

impl Walker<'_, '_> {
    fn eval(&self, expr: &Expr) -> Value {
        let env = &self.env;
        let lookup = |e: &Expr| key_of(e).and_then(|k| env.get(&k).cloned());
        self.cx.eval(expr, &lookup, self.no_grad > 0)
    }

    fn record_expr(&mut self, expr: &Expr) {
        if self.env.is_empty() {
            return;
        }
        if self.record {
            let mut rec = Recorder {
                env: &self.env,
                out: &mut self.out.names,
                shadowed: Vec::new(),
            };
            ruff_python_ast::visitor::Visitor::visit_expr(&mut rec, expr);
        }
        self.mode_effects(expr);
    }

    /// The plain project function (not a method) a call calls: by name, imported or defined
    /// in the file (the definition above the call in a notebook), or through a module
    /// attribute (`engine.evaluate(...)`).
    fn project_function_called(
        &self,
        call: &ExprCall,
    ) -> Option<(crate::project::ProjectFile, crate::project::FuncId)> {
        let p = self.cx.classes.project()?;
        let e = self
            .cx
            .scopes
            .resolve(&call.func)
            .and_then(|q| p.entity(&q))
            .or_else(|| match &*call.func {
                Expr::Name(n) => p.local_at(n.id.as_str(), call.start()),
                _ => None,
            })?;
        match e {
            crate::project::Entity::Function(id)
                if p.model.function(id).params.first().map(|s| &**s) != Some("self") =>
            {
                Some((p.clone(), id))
            }
            _ => None,
        }
    }

    /// What the calls of an expression do to the train/eval mode of tracked objects (see
    /// [`Prop::EvalMode`]), applied after its reads: `m.eval()` / `m.train()` switch `m`; any
    /// other method call on `m` but the self-returning and read-only ones, and passing `m`
    /// to a call (but `print(m)` and the other [`crate::project::facts::HARMLESS_CALLEES`]),
    /// leave its mode unknown; a call of a same-file top-level function leaves the
    /// mode of every plain name unknown (it may train a module-level model), unless the
    /// project model shows it neither switches a mode nor trains.
    fn mode_effects(&mut self, expr: &Expr) {
        use ruff_python_ast::visitor::{self as v, Visitor};
        struct Calls<'a>(Vec<&'a ExprCall>);
        impl<'a> Visitor<'a> for Calls<'a> {
            fn visit_expr(&mut self, e: &'a Expr) {
                match e {
                    Expr::Lambda(_) => {}
                    Expr::Call(c) => {
                        v::walk_expr(self, e);
                        self.0.push(c);
                    }
                    _ => v::walk_expr(self, e),
                }
            }
        }
        let mut calls = Calls(Vec::new());
        calls.visit_expr(expr);
        for call in calls.0 {
            let forget = |env: &mut Env, k: &str| {
                if let Some(v) = env.get_mut(k) {
                    v.facts.retain(|f| f.prop != Prop::EvalMode);
                    if v.is_empty() {
                        env.remove(k);
                    }
                }
            };
            // `print(model)`, `len(x)`, `logging.info(model)` only look at their arguments.
            let harmless = {
                use crate::project::facts::HARMLESS_CALLEES;
                match &*call.func {
                    Expr::Name(n) => {
                        HARMLESS_CALLEES.contains(&n.id.as_str())
                            && !self.cx.scopes.is_bound(n.id.as_str())
                    }
                    f => self
                        .cx
                        .scopes
                        .resolve(f)
                        .is_some_and(|q| HARMLESS_CALLEES.contains(&q.as_str())),
                }
            };
            // The tracked values handed to the call, with the parameter each fills (by
            // position, when no `*args` comes before; by keyword).
            let positional_ok = !call
                .arguments
                .args
                .iter()
                .any(|a| matches!(a, Expr::Starred(_)));
            let handed: Vec<(String, Option<usize>, Option<&str>)> = call
                .arguments
                .args
                .iter()
                .enumerate()
                .map(|(j, a)| match a {
                    Expr::Starred(s) => (&*s.value, None, None),
                    a => (a, positional_ok.then_some(j), None),
                })
                .chain(
                    call.arguments
                        .keywords
                        .iter()
                        .map(|k| (&k.value, None, k.arg.as_ref().map(|n| n.as_str()))),
                )
                .filter(|_| !harmless)
                .filter_map(|(a, j, kw)| key_of(a).map(|k| (k, j, kw)))
                .filter(|(k, _, _)| self.env.contains_key(k))
                .collect();
            // A project function that leaves the module a parameter receives in eval mode
            // (`evaluate(model, loader)` calling `model.eval()` first): the argument is in
            // eval mode after the call. Any other call may switch it: its mode is unknown.
            // (The callee is resolved only when a tracked value is handed to it.)
            let callee = (!handed.is_empty())
                .then(|| self.project_function_called(call))
                .flatten();
            for (k, j, kw) in handed {
                let evaled = callee.as_ref().is_some_and(|(p, id)| {
                    let params = &p.model.function(*id).params;
                    let i = match (j, kw) {
                        (Some(j), _) => (j < params.len()).then_some(j),
                        (None, Some(n)) => params.iter().position(|q| &**q == n),
                        _ => None,
                    };
                    i.is_some_and(|i| p.model.leaves_param_in_eval(*id, i))
                });
                match self.env.get_mut(&k) {
                    Some(v) if evaled => {
                        *v = std::mem::take(v).with(fact(Prop::EvalMode, call.range(), "eval()"));
                    }
                    _ => forget(&mut self.env, &k),
                }
            }
            match &*call.func {
                Expr::Attribute(a) => {
                    let Some(k) = key_of(&a.value) else { continue };
                    let method = a.attr.as_str();
                    match mode_switch(method, call) {
                        Some(true) => {
                            if let Some(v) = self.env.get_mut(&k) {
                                *v = std::mem::take(v).with(fact(
                                    Prop::EvalMode,
                                    call.range(),
                                    "eval()",
                                ));
                            }
                        }
                        Some(false) => forget(&mut self.env, &k),
                        None => {
                            if !crate::kinds::MODULE_SELF_METHODS.contains(&method)
                                && !KEEPS_MODE.contains(&method)
                            {
                                forget(&mut self.env, &k);
                            }
                        }
                    }
                }
                Expr::Name(n) => {
                    let local_function = self.cx.summaries.is_some_and(|s| {
                        s.function(n.id.as_str()).is_some() && s.global(n.id.as_str()).is_none()
                    });
                    // With the project model at hand, only a function that switches a mode or
                    // trains (its composed events) counts: `img = to_tensor(path)` leaves the
                    // model alone.
                    let may_switch = || {
                        let Some(p) = self.cx.classes.project() else {
                            return true;
                        };
                        let Some(index) = p.summary().function(n.id.as_str()) else {
                            return true;
                        };
                        let id = crate::project::FuncId {
                            file: p.file,
                            index,
                        };
                        p.model.function_trains(id)
                            || p.model
                                .events(id)
                                .iter()
                                .any(|e| e.kind == crate::flow::EventKind::Train)
                    };
                    if local_function && may_switch() {
                        let names: Vec<String> = self
                            .env
                            .keys()
                            .filter(|k| !k.contains('.'))
                            .cloned()
                            .collect();
                        for k in names {
                            forget(&mut self.env, &k);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn bind(&mut self, target: &Expr, v: Value) {
        match target {
            Expr::Name(_) | Expr::Attribute(_) => {
                if let Some(k) = key_of(target) {
                    if v.is_empty() {
                        self.env.remove(&k);
                    } else {
                        self.env.insert(k, v);
                    }
                }
            }
            Expr::Tuple(_) | Expr::List(_) => {
                let elts = match target {
                    Expr::Tuple(t) => &t.elts,
                    Expr::List(l) => &l.elts,
                    _ => return,
                };
                let starred = elts.iter().any(|e| matches!(e, Expr::Starred(_)));
                match &v.elements {
                    Some(els) if els.len() == elts.len() && !starred => {
                        for (t, e) in elts.iter().zip(els.iter()) {
                            self.bind(t, e.clone());
                        }
                    }
                    _ => {
                        // Unpacking a tensor along dim 0 keeps its properties; anything else
                        // keeps at most its graph, and which element holds a graph (a loss
                        // and its detached per-class scores) is not known.
                        let each = if v.elements.is_some() {
                            Value::default()
                        } else {
                            v.tensor().only(&[Prop::GraphCarrying]).weaken()
                        };
                        for t in elts {
                            let t = match t {
                                Expr::Starred(s) => &*s.value,
                                t => t,
                            };
                            self.bind(t, each.clone());
                        }
                    }
                }
            }
            Expr::Starred(s) => self.bind(&s.value, Value::default()),
            _ => {}
        }
    }

    fn unbind(&mut self, target: &Expr) {
        self.bind(target, Value::default());
    }

    fn suite(&mut self, body: &[Stmt]) {
        for stmt in body {
            self.stmt(stmt);
        }
    }

    fn branch(&mut self, body: &[Stmt], start: &Env) -> Option<Env> {
        self.env = start.clone();
        self.suite(body);
        if ends_flow(body) {
            None
        } else {
            Some(std::mem::take(&mut self.env))
        }
    }

    /// A name bound in a loop whose body differentiates it (`loss.backward()`,
    /// `scaler.scale(loss).backward()`, `accelerator.backward(loss)`) is a loss with a graph,
    /// unless the bound value plainly has none (`loss = loss.item()`): `loss, acc =
    /// step(...)` then `loss.backward()`.
    fn differentiated_binding(&mut self, target: &Expr, value: Option<&Expr>) {
        if self.differentiated.is_empty() || self.no_grad > 0 {
            return;
        }
        match target {
            Expr::Name(n) => {
                let name = n.id.as_str();
                let Some((site, last)) = self.differentiated.iter().find_map(|d| {
                    d.iter()
                        .find(|(n, _, _)| n == name)
                        .map(|(_, r, last)| (*r, *last))
                }) else {
                    return;
                };
                if value.is_some_and(plainly_without_graph) {
                    return;
                }
                // Bound after the loop's last differentiation of the name (`loss.backward();
                // optimizer.step(); loss = scalar(loss)`): what it is now is for logging, and
                // the next iteration binds the loss it differentiates anew.
                if target.start() >= last {
                    return;
                }
                let v = self.env.entry(name.to_owned()).or_default();
                if v.definite(Prop::GraphCarrying).is_none() {
                    v.facts.retain(|f| f.prop != Prop::GraphCarrying);
                    v.facts.push(fact(Prop::GraphCarrying, site, LOSS));
                }
            }
            Expr::Tuple(_) | Expr::List(_) => {
                let elts = match target {
                    Expr::Tuple(t) => &t.elts,
                    Expr::List(l) => &l.elts,
                    _ => return,
                };
                let values = match value {
                    Some(Expr::Tuple(t)) => Some(&t.elts),
                    Some(Expr::List(l)) => Some(&l.elts),
                    _ => None,
                }
                .filter(|v| {
                    v.len() == elts.len()
                        && !v
                            .iter()
                            .chain(elts.iter())
                            .any(|e| matches!(e, Expr::Starred(_)))
                });
                for (i, t) in elts.iter().enumerate() {
                    self.differentiated_binding(t, values.map(|v| &v[i]));
                }
            }
            Expr::Starred(s) => self.differentiated_binding(&s.value, None),
            _ => {}
        }
    }

    fn loop_body(&mut self, body: &[Stmt], target: Option<&Expr>) {
        self.differentiated
            .push(differentiated_names(body, self.cx.scopes));
        self.loop_body_inner(body, target);
        self.differentiated.pop();
    }

    fn loop_body_inner(&mut self, body: &[Stmt], target: Option<&Expr>) {
        let before = self.env.clone();
        if self.loop_depth < 4 {
            // First pass (not recorded): what an iteration leaves for the next one.
            let record = self.record;
            let saved_returns = self.out.returns.clone();
            self.record = false;
            if let Some(t) = target {
                self.unbind(t);
                self.differentiated_binding(t, None);
            }
            self.loop_depth += 1;
            self.suite(body);
            self.loop_depth -= 1;
            self.record = record;
            self.out.returns = saved_returns;
            let head = merge_envs(&before, &self.env);
            self.env = head;
        }
        let head = self.env.clone();
        if let Some(t) = target {
            self.unbind(t);
            self.differentiated_binding(t, None);
        }
        self.loop_depth += 1;
        self.suite(body);
        self.loop_depth -= 1;
        let after = std::mem::take(&mut self.env);
        self.env = merge_envs(&head, &after);
        // A graph the body definitely leaves (`total = 0.0; for ...: total += loss`) is there
        // after the loop: training loops run.
        for (k, v) in &after {
            if let Some(g) = v.definite(Prop::GraphCarrying) {
                if let Some(m) = self.env.get_mut(k) {
                    m.facts.retain(|f| f.prop != Prop::GraphCarrying);
                    m.facts.push(g.clone());
                }
            }
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match stmt {
            Stmt::Assign(a) => {
                self.record_expr(&a.value);
                for t in &a.targets {
                    self.record_targets(t);
                }
                let v = self.eval(&a.value);
                for t in &a.targets {
                    self.bind(t, v.clone());
                    self.differentiated_binding(t, Some(&a.value));
                }
            }
            Stmt::AnnAssign(a) => {
                if let Some(value) = &a.value {
                    self.record_expr(value);
                    let v = self.eval(value);
                    self.bind(&a.target, v);
                    self.differentiated_binding(&a.target, Some(value));
                }
            }
            Stmt::AugAssign(a) => {
                self.record_expr(&a.value);
                self.record_expr(&a.target);
                let v = combine(
                    &self.eval(&a.target),
                    &self.eval(&a.value),
                    &a.target,
                    &a.value,
                );
                self.bind(&a.target, v);
            }
            Stmt::Expr(e) => self.record_expr(&e.value),
            Stmt::Return(r) => {
                if let Some(v) = &r.value {
                    self.record_expr(v);
                    let val = self.eval(v);
                    self.out.returns = Some(match &self.out.returns {
                        Some(old) => old.merge(&val),
                        None => val,
                    });
                }
            }
            Stmt::If(i) => {
                self.record_expr(&i.test);
                let start = std::mem::take(&mut self.env);
                let mut outs: Vec<Env> = Vec::new();
                if let Some(e) = self.branch(&i.body, &start) {
                    outs.push(e);
                }
                let mut has_else = false;
                for clause in &i.elif_else_clauses {
                    if let Some(t) = &clause.test {
                        self.env = start.clone();
                        self.record_expr(t);
                    } else {
                        has_else = true;
                    }
                    if let Some(e) = self.branch(&clause.body, &start) {
                        outs.push(e);
                    }
                }
                if !has_else {
                    outs.push(start.clone());
                }
                self.env = match outs.split_first() {
                    Some((first, rest)) => rest
                        .iter()
                        .fold(first.clone(), |acc, e| merge_envs(&acc, e)),
                    // Every branch leaves: what follows is reached only from before... or not
                    // at all; keep the state before the `if` (conservative for rules).
                    None => start,
                };
            }
            Stmt::For(f) => {
                self.record_expr(&f.iter);
                self.loop_body(&f.body, Some(&f.target));
                self.suite(&f.orelse);
            }
            Stmt::While(w) => {
                self.record_expr(&w.test);
                self.loop_body(&w.body, None);
                self.suite(&w.orelse);
            }
            Stmt::With(w) => {
                let mut entered = 0;
                for item in &w.items {
                    self.record_expr(&item.context_expr);
                    if turns_grad_off(&item.context_expr, self.cx.scopes) {
                        entered += 1;
                    }
                    if let Some(v) = &item.optional_vars {
                        self.unbind(v);
                        self.differentiated_binding(v, None);
                    }
                }
                if entered > 0 && self.record {
                    self.out.no_grad_ranges.push(w.range);
                }
                self.no_grad += entered;
                self.suite(&w.body);
                self.no_grad -= entered;
            }
            Stmt::Try(t) => {
                let before = self.env.clone();
                self.suite(&t.body);
                let after_body = std::mem::take(&mut self.env);
                let handler_start = merge_envs(&before, &after_body);
                let mut outs = Vec::new();
                for h in &t.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    if let Some(e) = self.branch(&h.body, &handler_start) {
                        outs.push(e);
                    }
                }
                self.env = after_body;
                self.suite(&t.orelse);
                let mut env = std::mem::take(&mut self.env);
                for e in &outs {
                    env = merge_envs(&env, e);
                }
                self.env = env;
                self.suite(&t.finalbody);
            }
            Stmt::FunctionDef(f) => {
                self.env.remove(f.name.as_str());
            }
            Stmt::ClassDef(c) => {
                self.env.remove(c.name.as_str());
            }
            Stmt::Delete(d) => {
                for t in &d.targets {
                    self.unbind(t);
                }
            }
            Stmt::Match(m) => {
                self.record_expr(&m.subject);
                let start = std::mem::take(&mut self.env);
                let mut env = start.clone();
                for case in &m.cases {
                    if let Some(e) = self.branch(&case.body, &start) {
                        env = merge_envs(&env, &e);
                    }
                }
                self.env = env;
            }
            Stmt::Assert(a) => self.record_expr(&a.test),
            Stmt::Raise(r) => {
                if let Some(e) = &r.exc {
                    self.record_expr(e);
                }
            }
            _ => {}
        }
    }

    /// `x[i] = ...` / `self.a.b = ...`: the sub-expressions of a target are reads.
    fn record_targets(&mut self, t: &Expr) {
        match t {
            Expr::Subscript(s) => {
                self.record_expr(&s.value);
                self.record_expr(&s.slice);
            }
            Expr::Attribute(a) if helpers::name_of(&a.value) != Some("self") => {
                self.record_expr(&a.value)
            }
            Expr::Tuple(tu) => tu.elts.iter().for_each(|e| self.record_targets(e)),
            Expr::List(l) => l.elts.iter().for_each(|e| self.record_targets(e)),
            _ => {}
        }
    }
}

/// The names a suite differentiates directly (`loss.backward()`), with the first backward
/// call of each, nested definitions and lambdas excluded.
fn differentiated_names(body: &[Stmt], scopes: &Scopes) -> Vec<(String, TextRange, TextSize)> {
    let mut out: Vec<(String, TextRange, TextSize)> = Vec::new();
    helpers::for_each_own_call(body, false, &mut |c| {
        if let Some(Expr::Name(n)) = crate::uses::backward_target(scopes, c) {
            match out.iter_mut().find(|(m, _, _)| m == n.id.as_str()) {
                Some((_, _, last)) => *last = (*last).max(c.end()),
                None => out.push((n.id.to_string(), c.range(), c.end())),
            }
        }
    });
    out
}

/// Plainly not part of a graph: a literal, a comparison, `x.item()` and the other
/// graph-dropping methods, `float(...)`, `torch.tensor(...)`, `x.grad`, `x.shape`.
fn plainly_without_graph(expr: &Expr) -> bool {
    match expr {
        Expr::NumberLiteral(_) | Expr::BooleanLiteral(_) | Expr::StringLiteral(_) => true,
        Expr::Compare(_) | Expr::BoolOp(_) | Expr::FString(_) => true,
        Expr::UnaryOp(u) => plainly_without_graph(&u.operand),
        Expr::BinOp(b) => plainly_without_graph(&b.left) && plainly_without_graph(&b.right),
        Expr::Attribute(a) => crate::tensor_methods::attribute_without_graph(a.attr.as_str()),
        Expr::Call(c) => {
            if let Some((method, _)) = helpers::method_call(c) {
                return crate::tensor_methods::effects(method).drops_graph();
            }
            matches!(
                helpers::dotted(&c.func).as_deref(),
                Some(
                    "float"
                        | "int"
                        | "bool"
                        | "len"
                        | "round"
                        | "str"
                        | "torch.tensor"
                        | "torch.as_tensor"
                        | "torch.from_numpy"
                )
            )
        }
        _ => false,
    }
}

struct Recorder<'e> {
    env: &'e Env,
    out: &'e mut FxHashMap<TextSize, Value>,
    shadowed: Vec<Vec<String>>,
}

impl Recorder<'_> {
    fn is_shadowed(&self, name: &str) -> bool {
        self.shadowed.iter().any(|s| s.iter().any(|n| n == name))
    }

    fn comprehension_targets(gens: &[ast::Comprehension]) -> Vec<String> {
        let mut names = Vec::new();
        fn collect(e: &Expr, names: &mut Vec<String>) {
            match e {
                Expr::Name(n) => names.push(n.id.to_string()),
                Expr::Tuple(t) => t.elts.iter().for_each(|e| collect(e, names)),
                Expr::List(l) => l.elts.iter().for_each(|e| collect(e, names)),
                Expr::Starred(s) => collect(&s.value, names),
                _ => {}
            }
        }
        for g in gens {
            collect(&g.target, &mut names);
        }
        names
    }
}

impl<'a> ruff_python_ast::visitor::Visitor<'a> for Recorder<'_> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(n) => {
                if !self.is_shadowed(n.id.as_str()) {
                    if let Some(v) = self.env.get(n.id.as_str()) {
                        self.out.insert(expr.range().start(), v.clone());
                    }
                }
            }
            Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => {
                if let Some(k) = key_of(expr) {
                    if let Some(v) = self.env.get(&k) {
                        self.out.insert(expr.range().start(), v.clone());
                    }
                }
            }
            Expr::Lambda(_) => {}
            Expr::ListComp(c) => {
                self.shadowed
                    .push(Self::comprehension_targets(&c.generators));
                ruff_python_ast::visitor::walk_expr(self, expr);
                self.shadowed.pop();
            }
            Expr::SetComp(c) => {
                self.shadowed
                    .push(Self::comprehension_targets(&c.generators));
                ruff_python_ast::visitor::walk_expr(self, expr);
                self.shadowed.pop();
            }
            Expr::DictComp(c) => {
                self.shadowed
                    .push(Self::comprehension_targets(&c.generators));
                ruff_python_ast::visitor::walk_expr(self, expr);
                self.shadowed.pop();
            }
            Expr::Generator(c) => {
                self.shadowed
                    .push(Self::comprehension_targets(&c.generators));
                ruff_python_ast::visitor::walk_expr(self, expr);
                self.shadowed.pop();
            }
            _ => ruff_python_ast::visitor::walk_expr(self, expr),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of the expression returned by the last statement of function `func`.
    fn returned(src: &str, func: &str) -> Value {
        let (module, mut scopes, classes) = crate::test_support::module_context(src);
        let summaries = Summaries::compute(&module.body, &classes, src);
        let f = module
            .body
            .iter()
            .find_map(|s| match s {
                Stmt::FunctionDef(f) if f.name.as_str() == func => Some(f),
                _ => None,
            })
            .expect("function in test source");
        let scope = Scope::collect(ScopeKind::Function, &f.body, Some(&f.parameters), &scopes);
        scopes.push(scope);
        let cx = FlowContext {
            scopes: &scopes,
            classes: &classes,
            kinds: None,
            summaries: Some(&summaries),
            class: None,
            params: None,
        };
        let flow = FunctionFlow::analyze(&cx, &f.body, decorated_no_grad(f, &scopes));
        let Some(Stmt::Return(r)) = f.body.last() else {
            panic!("last statement is not a return")
        };
        let e = r.value.as_deref().expect("return value");
        flow.value_of(&cx, e)
    }

    const HEADER: &str = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n";

    fn src(body: &str) -> String {
        format!("{HEADER}{body}")
    }

    #[test]
    fn softmax_flows_through_assignments_and_reshapes() {
        let v = returned(
            &src("def f(z):\n    p = F.softmax(z, dim=1)\n    q = p.view(-1, 4)[:, 1:].float()\n    return q\n"),
            "f",
        );
        let fact = v.definite(Prop::Probabilities).expect("probabilities");
        assert_eq!(fact.op, "softmax");
        assert!(v.get(Prop::LogProbabilities).is_none());
    }

    #[test]
    fn latest_assignment_wins_and_branches_merge_to_maybe() {
        let v = returned(
            &src("def f(z):\n    p = F.softmax(z, 1)\n    p = z\n    return p\n"),
            "f",
        );
        assert!(v.get(Prop::Probabilities).is_none());
        let v = returned(
            &src(
                "def f(z, c):\n    p = z\n    if c:\n        p = torch.sigmoid(z)\n    return p\n",
            ),
            "f",
        );
        let fact = v.get(Prop::Probabilities).expect("maybe probabilities");
        assert_eq!(fact.certainty, Certainty::Maybe);
        assert!(!v.has(Prop::Probabilities));
        // Both branches agree: definite.
        let v = returned(
            &src("def f(z, c):\n    if c:\n        p = z.sigmoid()\n    else:\n        p = torch.sigmoid(z * 2)\n    return p\n"),
            "f",
        );
        assert!(v.has(Prop::Probabilities));
        // A branch that returns does not reach the use.
        let v = returned(
            &src("def f(z, c):\n    p = z.softmax(1)\n    if c:\n        p = z\n        return p\n    return p\n"),
            "f",
        );
        assert!(v.has(Prop::Probabilities));
    }

    #[test]
    fn exp_of_log_softmax_and_log_of_softmax() {
        let v = returned(
            &src("def f(z):\n    return torch.exp(F.log_softmax(z, 1))\n"),
            "f",
        );
        assert_eq!(
            v.definite(Prop::Probabilities).map(|f| f.op),
            Some("exp(log_softmax)")
        );
        let v = returned(&src("def f(z):\n    return z.softmax(1).log()\n"), "f");
        assert!(v.has(Prop::LogProbabilities));
        assert!(v.get(Prop::Probabilities).is_none());
    }

    #[test]
    fn module_forward_summaries_and_sequential_last_layer() {
        let s = src(
            "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(2, 2)\n        self.act = nn.Softmax(dim=1)\n    def forward(self, x):\n        return self.act(self.fc(x))\n\nclass Seq(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.body = nn.Sequential(nn.Linear(2, 1), nn.Sigmoid())\n    def forward(self, x):\n        return self.body(x)\n\ndef f(x):\n    model = Net().to('cuda')\n    return model(x)\n\ndef g(x):\n    return Seq()(x)\n\ndef h(x):\n    return nn.Sequential(nn.Linear(2, 2), nn.LogSoftmax(1))(x)\n",
        );
        let v = returned(&s, "f");
        let fact = v.definite(Prop::Probabilities).expect("summary");
        assert_eq!(fact.through.as_deref(), Some("Net.forward"));
        assert!(v.has(Prop::GraphCarrying));
        let v = returned(&s, "g");
        assert_eq!(
            v.definite(Prop::Probabilities).map(|f| f.op),
            Some("sigmoid")
        );
        let v = returned(&s, "h");
        assert!(v.has(Prop::LogProbabilities));
    }

    #[test]
    fn tuple_returns_unpack_per_element() {
        let s = src(
            "class Net(nn.Module):\n    def forward(self, x):\n        logits = self.fc(x)\n        return logits, logits.softmax(-1)\n\ndef f(x):\n    logits, probs = Net()(x)\n    return probs\n\ndef g(x):\n    logits, probs = Net()(x)\n    return logits\n\ndef k(x):\n    out = Net()(x)\n    return out[1]\n",
        );
        assert!(returned(&s, "f").has(Prop::Probabilities));
        assert!(returned(&s, "g").get(Prop::Probabilities).is_none());
        assert!(returned(&s, "k").has(Prop::Probabilities));
    }

    #[test]
    fn loss_objects_and_unreduced_losses() {
        let s = src(
            "crit = nn.CrossEntropyLoss()\ndef f(p, y):\n    return crit\n\ndef g(p, y):\n    c = nn.MSELoss(reduction='none')\n    loss = c(p, y) * 2\n    return loss\n\ndef h(p, y):\n    loss = F.mse_loss(p, y, reduction='none')\n    loss = loss.mean()\n    return loss\n",
        );
        assert_eq!(returned(&s, "f").class(), Some("torch.nn.CrossEntropyLoss"));
        assert!(returned(&s, "g").has(Prop::ReducedNone));
        assert!(returned(&s, "h").get(Prop::ReducedNone).is_none());
    }

    #[test]
    fn non_contiguous_until_contiguous() {
        let v = returned(
            &src("def f(x):\n    y = x.permute(0, 2, 1)\n    y = y * 2\n    return y\n"),
            "f",
        );
        let fact = v
            .definite(Prop::MaybeNonContiguous)
            .expect("non-contiguous");
        assert_eq!((fact.op, fact.runs), ("permute", Some(3)));
        let v = returned(
            &src("def f(x):\n    y = x.transpose(1, 2).contiguous()\n    return y\n"),
            "f",
        );
        assert!(v.get(Prop::MaybeNonContiguous).is_none());
        let v = returned(&src("def f(x):\n    return x.T[:3]\n"), "f");
        assert!(v.has(Prop::MaybeNonContiguous));
    }

    #[test]
    fn graph_carrying_from_models_and_losses_not_under_no_grad() {
        let s = src(
            "class Net(nn.Module):\n    def forward(self, x):\n        return x\n\nmodel = Net()\ndef f(x, y):\n    out = model(x)\n    loss = F.cross_entropy(out, y)\n    return loss\n\ndef g(x):\n    with torch.no_grad():\n        out = model(x)\n    return out\n\ndef h(x, y):\n    loss = F.cross_entropy(model(x), y)\n    return loss.item()\n\n@torch.no_grad()\ndef k(x):\n    return model(x)\n\ndef m(x):\n    return model(x).detach()\n",
        );
        assert!(returned(&s, "f").has(Prop::GraphCarrying));
        assert!(returned(&s, "g").get(Prop::GraphCarrying).is_none());
        assert!(returned(&s, "h").get(Prop::GraphCarrying).is_none());
        assert!(returned(&s, "k").get(Prop::GraphCarrying).is_none());
        assert!(returned(&s, "m").get(Prop::GraphCarrying).is_none());
        // A gradient and a dimension count are not part of the graph.
        let s = src(
            "class Net(nn.Module):\n    def forward(self, x):\n        return x\n\nmodel = Net()\ndef f(x, y):\n    loss = F.cross_entropy(model(x), y)\n    return loss.grad\n\ndef g(x):\n    return model(x).ndim\n",
        );
        assert!(returned(&s, "f").get(Prop::GraphCarrying).is_none());
        assert!(returned(&s, "g").get(Prop::GraphCarrying).is_none());
    }

    #[test]
    fn losses_differentiated_names_and_no_grad_ops() {
        let loss_of = |body: &str, func: &str| -> Option<&'static str> {
            let v = returned(&src(body), func);
            v.definite(Prop::GraphCarrying).map(|f| f.op)
        };
        // A criterion call, a loss module named otherwise, `F.*_loss`: losses.
        assert_eq!(
            loss_of(
                "def f(model, criterion, x, y):\n    return criterion(model(x), y)\n",
                "f"
            ),
            Some(LOSS)
        );
        assert_eq!(
            loss_of(
                "cost_fn = nn.CrossEntropyLoss()\ndef f(p, y):\n    return cost_fn(p, y)\n",
                "f"
            ),
            Some(LOSS)
        );
        assert_eq!(
            loss_of("def f(p, y):\n    return F.mse_loss(p, y)\n", "f"),
            Some(LOSS)
        );
        // Unpacked from an unknown call: only a "maybe", unless the loop differentiates it.
        let body = "def f(model, loader):\n    for x in loader:\n        loss, acc = model(x)\n        loss.backward()\n        last = loss\n    return last\n\ndef g(model, loader):\n    for x in loader:\n        loss, acc = model(x)\n        loss.backward()\n        last = acc\n    return last\n";
        assert_eq!(loss_of(body, "f"), Some(LOSS));
        assert_eq!(loss_of(body, "g"), None);
        // `loss = loss.item()` after the backward pass: a number.
        let body = "def f(model, criterion, loader):\n    for x, y in loader:\n        loss = criterion(model(x), y)\n        loss.backward()\n        loss = loss.item()\n        last = loss\n    return last\n";
        assert_eq!(loss_of(body, "f"), None);
        // Computed under no_grad from a graph-carrying output: no graph.
        let body = "def f(model, x):\n    out = model(x)\n    with torch.no_grad():\n        w = F.softmax(out, dim=1)[0] * 2\n    return w\n";
        assert_eq!(loss_of(body, "f"), None);
        // A sum built in a loop carries the graph after it.
        let body = "def f(criterion, outs, y):\n    total = 0\n    for o in outs:\n        total += criterion(o, y)\n    return total\n";
        assert_eq!(loss_of(body, "f"), Some(LOSS));
    }

    #[test]
    fn loops_merge_iterations_and_comprehensions_shadow() {
        // Used before its assignment in the loop: the first iteration sees the outer value.
        let v = returned(
            &src("def f(xs):\n    p = None\n    for x in xs:\n        q = p\n        p = x.softmax(1)\n    return q\n"),
            "f",
        );
        assert!(!v.has(Prop::Probabilities));
        assert!(v.get(Prop::Probabilities).is_some());
        let v = returned(
            &src("def f(xs):\n    for x in xs:\n        p = x.softmax(1)\n        y = p\n    return y\n"),
            "f",
        );
        assert!(v.get(Prop::Probabilities).is_some());
        let v = returned(
            &src("def f(z, zs):\n    p = z.softmax(1)\n    return [p for p in zs][0]\n"),
            "f",
        );
        assert!(v.get(Prop::Probabilities).is_none());
    }

    #[test]
    fn self_attributes_flow_within_a_method() {
        let s = src(
            "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.crit = nn.BCELoss()\n    def forward(self, z):\n        self.p = torch.sigmoid(z)\n        return self.p\n\ndef f(z):\n    return M()(z)\n",
        );
        assert!(returned(&s, "f").has(Prop::Probabilities));
    }

    #[test]
    fn column_vectors_and_vectors() {
        let s = src(
            "class R(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 1)\n    def forward(self, x):\n        return self.fc(x)\n\ndef f(x):\n    return R()(x).float()\n\ndef g(x):\n    return R()(x).squeeze(-1)\n\ndef h(x):\n    return R()(x) * x\n\ndef k(d):\n    return d[:, 3]\n",
        );
        assert!(returned(&s, "f").has(Prop::ColumnVector));
        let v = returned(&s, "g");
        assert!(v.has(Prop::Vector) && v.get(Prop::ColumnVector).is_none());
        assert!(returned(&s, "h").get(Prop::ColumnVector).is_none());
        assert!(returned(&s, "k").has(Prop::Vector));
    }

    #[test]
    fn unknown_functions_and_parameters_carry_nothing() {
        let v = returned(
            &src("def f(z, helper):\n    return helper(z.softmax(1))\n"),
            "f",
        );
        assert!(v.is_empty());
        let v = returned(&src("def f(z):\n    return z\n"), "f");
        assert!(v.is_empty());
    }
}

//! Phase 1 of the project model: one file's summary, built from its AST alone.
//!
//! A [`FileSummary`] owns everything other files (and the file's own later analysis) need to
//! know about the file without its syntax tree: what its module-level names are bound to
//! (imports, classes, functions, objects), each class's bases, attributes, `forward` output and
//! train/eval-sensitive layers, and each function's parameters, return value, training events
//! (per parameter), the calls it makes with what it passes, and how it uses its parameters.
//! References to other names stay unresolved ([`Ref`]) until the [`super::ProjectModel`] links
//! the summaries of all files.
use crate::bindings::{KeptScopes, Scope, ScopeKind, Scopes};
use crate::classes::{is_dataset_base, is_module_base, ModuleClasses};
use crate::dataflow::{self, Prop};
use crate::flow::{self, EventKind, FlowInput, Guard, Role};
use crate::helpers;
use crate::kinds::{Kind, KindContext, KindTable};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use rustc_hash::FxHashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use thin_vec::ThinVec;

mod facts_extract;
mod grad_flow;
pub use grad_flow::{grad_flow_files, GradFlow, ValueSinks};

/// The `__init__` parameter that gives every Dropout of a class its rate (see
/// [`ClassSummary::dropout_rate`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DropoutRate {
    /// The parameter's name.
    pub name: Box<str>,
    /// Its position among `__init__`'s parameters after `self`.
    pub position: u16,
    /// Its default is a literal 0 (or 0.0).
    pub default_zero: bool,
}

/// A name as one file spells it, before the model resolves it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ref {
    /// A module-level class, function or object of the same file.
    Local(Box<str>),
    /// A qualified name reached through an import: `torch.nn.Linear`, `pkg.models.Net`,
    /// `.models.Net` (relative to the file's package).
    Qualified(Box<str>),
    /// `self.<name>(...)`: a method of the enclosing class (or of a base class).
    Method(Box<str>),
    /// `super().<name>(...)` (or `super(Cls, self).<name>(...)`): the method of a base class of
    /// the enclosing class, which receives `self` like [`Ref::Method`] (a subclass's
    /// `super().__init__(module)` is a call site of the base's `__init__`).
    Super(Box<str>),
    /// A function defined inside the enclosing function (a closure), by index in
    /// [`FileSummary::functions`].
    Nested(u32),
    /// A function or class of the same file, by where its statement starts: what a
    /// module-level call sees when the file defines the name more than once (a notebook that
    /// redefines `get_model` in a later cell: the last definition above the call), or a class
    /// defined in the calling function's own body (`class Net(nn.Module)` inside `get_model`).
    DefAt(u32),
    /// The function that calling this callee returns: a factory of step functions
    /// (`val_step = make_val_step(model, loss_fn)`, whose `return perform_val_step` hands out
    /// a closure) called through the local it is bound to (`val_step(x, y)`).
    Returned(Box<Ref>),
    /// A method of an object the calling code builds from a class: `self.saver.save(state)`
    /// where the class's `__init__` assigns `self.saver = Saver(...)` (and nothing else to
    /// it), or `v.validate(model)` after `v = Validator(...)`. The class as the file refers
    /// to it, and the method's name. The object is the callee's `self`; the call's arguments
    /// start at its second parameter. Methods of module classes are left to the calls of
    /// module objects ([`super::ProjectModel::object_methods`]).
    Held(Box<Ref>, Box<str>),
}

impl Ref {
    /// Does a call through this reference pass the caller's `self` as the callee's first
    /// parameter (`self.step(x)`, `super().__init__(m)`)?
    pub fn passes_self(&self) -> bool {
        matches!(self, Ref::Method(_) | Ref::Super(_))
    }

    /// Does the callee's first parameter (`self`) receive something other than the call's
    /// arguments: the caller's `self` ([`Ref::passes_self`]) or the object a method is called
    /// on ([`Ref::Held`])? The arguments then start at its second parameter.
    pub fn binds_self(&self) -> bool {
        matches!(self, Ref::Method(_) | Ref::Super(_) | Ref::Held(..))
    }
}

/// A literal value as the source spells it: a call's argument or a parameter's default
/// (`topk=(1, 5)`), for the constant values a parameter takes across call sites.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Lit {
    /// Not a literal (a name, a call, an expression).
    Unknown,
    /// `None`.
    None,
    /// `True` / `False`.
    Bool(bool),
    /// An integer that fits in 64 bits (`-1` included).
    Int(i64),
    /// A string.
    Str(Box<str>),
    /// A tuple or list of literals (elements that are not literals are [`Lit::Unknown`]).
    Tuple(Vec<Lit>),
}

impl Lit {
    /// The literal an expression spells, or [`Lit::Unknown`].
    pub fn of(e: &Expr) -> Lit {
        match e {
            Expr::NoneLiteral(_) => Lit::None,
            Expr::BooleanLiteral(b) => Lit::Bool(b.value),
            Expr::NumberLiteral(n) => match &n.value {
                ast::Number::Int(i) => i.as_i64().map_or(Lit::Unknown, Lit::Int),
                _ => Lit::Unknown,
            },
            Expr::UnaryOp(u) if u.op == ast::UnaryOp::USub => match Lit::of(&u.operand) {
                Lit::Int(i) => i.checked_neg().map_or(Lit::Unknown, Lit::Int),
                _ => Lit::Unknown,
            },
            Expr::StringLiteral(s) => Lit::Str(s.value.to_str().into()),
            Expr::Tuple(t) => Lit::Tuple(t.elts.iter().map(Lit::of).collect()),
            Expr::List(t) => Lit::Tuple(t.elts.iter().map(Lit::of).collect()),
            _ => Lit::Unknown,
        }
    }
}

/// A parameter's default, as [`FunctionSummary::param_defaults`] records it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ParamDefault {
    /// No default: every call passes it.
    Required,
    /// `*args` / `**kwargs`.
    Variadic,
    /// A default (its literal, or [`Lit::Unknown`]).
    Given(Lit),
}

/// The most alternatives a [`Val::Join`] keeps (more: unknown).
pub const MAX_JOIN: usize = 64;

/// A value as a summary records it: a kind known locally, or a reference the model resolves.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Val {
    /// Not known.
    #[default]
    Unknown,
    /// `None` (ignored when joining the returns of a function).
    None,
    /// A value whose kind the file alone tells (`torch.optim.SGD(...)`, `nn.Linear(...)`).
    Kind(Kind),
    /// An instance of a module class known from the file alone (a torch or library class,
    /// by qualified name: `torch.nn.Softmax`).
    Torch(Box<str>),
    /// An instance of a `torch.nn` loss class built so that calling it gives a 0-dim tensor
    /// (its default reduction, `'mean'` / `'sum'`, the legacy `size_average=False`), by
    /// qualified name: `torch.nn.MSELoss`.
    Loss(Box<str>),
    /// One of several objects, by the path taken: a name bound to different project or torch
    /// classes in the branches of an `if`, a factory whose returns build different classes
    /// (two to [`MAX_JOIN`] alternatives, none of them unknown).
    Join(Vec<Val>),
    /// The result of calling a project class or function.
    Call {
        /// What is called.
        callee: Ref,
        /// Positional arguments.
        args: ThinVec<Val>,
        /// Keyword arguments.
        kwargs: ThinVec<(Box<str>, Val)>,
    },
    /// The enclosing function's parameter (by position, `self` included).
    Param(u16),
    /// `self.<attr>` of the enclosing class.
    SelfAttr(Box<str>),
    /// A tuple or list of values.
    Tuple(Vec<Val>),
    /// An uncalled name of the project or of a library, as a callee is chosen: a class
    /// returned by a factory (`return ResNet`) or held in a registry (`{"resnet": ResNet}`),
    /// a module-level registry itself (`MODELS`). It resolves to nothing by itself; calling
    /// it ([`Val::Invoke`]) gives an instance.
    Ref(Ref),
    /// A dict literal whose values are all [`Val::Ref`] (a registry of classes or builders),
    /// its values in order.
    Dict(Vec<Val>),
    /// An element of a value: `Some(i)`, the `i`-th element of a tuple a call returns
    /// (`enc, dec = load_model(path)`); `None`, any value of a registry
    /// (`MODELS[args.arch]`, `MODELS.get(name)`).
    Item(Box<Val>, Option<u16>),
    /// The result of calling a computed callee: a class chosen through a registry or returned
    /// uncalled by a factory (`MODELS[name](...)`, `get_model_class(name)(**cfg)`, `cls(...)`
    /// after `cls = MODELS.get(name)`). It resolves to the join of the classes the callee may
    /// be, when every one of them is known.
    Invoke(Box<Val>),
    /// What calling a module object gives (`model(x)` after `model = VAE()`, `self.net(x)`,
    /// a parameter's `model(x)`): the tensor properties of its class's `forward`, and each
    /// element's for a tuple (`x_recon, mu, log_var = model(x)`).
    Output(Box<Val>),
    /// A DataLoader built here, with its `shuffle=` (when literal) and sampler.
    Loader {
        /// `shuffle=True/False` when given as a literal; `None` when absent or not literal.
        shuffle: Option<bool>,
        /// `shuffle=` given at all.
        shuffle_given: bool,
        /// The sampler argument's value.
        sampler: Box<Val>,
    },
}

impl Val {
    /// Join the values one name or return takes on different paths: equal values stay,
    /// `None` gives way, anything else becomes unknown.
    pub fn join(self, other: Val) -> Val {
        match (self, other) {
            (Val::None, v) | (v, Val::None) => v,
            (a, b) if a == b => a,
            (Val::Kind(a), Val::Kind(b)) if a == b => Val::Kind(a),
            // Objects built on every path (a model chosen by configuration): which one is
            // known per path; facts every alternative agrees on hold for the value.
            (a, b) if (a.is_object() && b.is_object()) || (a.is_callee() && b.is_callee()) => {
                let mut alts = Vec::new();
                for v in [a, b] {
                    match v {
                        Val::Join(vs) => alts.extend(vs),
                        v => alts.push(v),
                    }
                }
                let mut out: Vec<Val> = Vec::with_capacity(alts.len());
                for v in alts {
                    if !out.contains(&v) {
                        out.push(v);
                    }
                }
                if out.len() > MAX_JOIN {
                    Val::Unknown
                } else {
                    Val::Join(out)
                }
            }
            _ => Val::Unknown,
        }
    }

    /// An object built here (a project or torch class instance, a call of a project
    /// function, a module) or a join of such: what [`Val::join`] keeps per path.
    fn is_object(&self) -> bool {
        match self {
            Val::Join(vs) => !vs.first().is_some_and(Val::is_callee),
            v => matches!(
                v,
                Val::Call { .. }
                    | Val::Invoke(_)
                    | Val::Torch(_)
                    | Val::Loss(_)
                    | Val::Kind(Kind::Module)
            ),
        }
    }

    /// An uncalled class or builder ([`Val::Ref`]), a registry value, or a join of such: what
    /// [`Val::join`] keeps per path for a factory returning classes (`return ResNet` in one
    /// branch, `return MLP` in another). Never joined with objects.
    fn is_callee(&self) -> bool {
        match self {
            Val::Ref(_) | Val::Item(_, None) => true,
            Val::Join(vs) => vs.first().is_some_and(Val::is_callee),
            _ => false,
        }
    }

    /// Is anything known?
    pub fn is_known(&self) -> bool {
        !matches!(self, Val::Unknown | Val::None)
    }

    /// Can the value stand for a module object the model follows (a parameter, a call's
    /// result, `self.<attr>`, a torch module...)? A wrapper (`nn.DataParallel(net)`) or a
    /// method returning its receiver (`net.to(device)`) is then that same value.
    fn may_be_module_object(&self) -> bool {
        matches!(
            self,
            Val::Param(_)
                | Val::Call { .. }
                | Val::Invoke(_)
                | Val::SelfAttr(_)
                | Val::Join(_)
                | Val::Torch(_)
                | Val::Loss(_)
        )
    }

    /// An object that only the model can resolve: an element of a tuple a call returns
    /// ([`Val::Item`]), a call of a computed callee ([`Val::Invoke`]), or a join with one.
    pub fn is_computed(&self) -> bool {
        match self {
            Val::Item(_, Some(_)) | Val::Invoke(_) => true,
            Val::Join(vs) => vs.iter().any(Val::is_computed),
            _ => false,
        }
    }

    /// [`Val::is_computed`], or what a method of the enclosing class returns
    /// (`model = self.load_model()`): the values a function's locals keep
    /// ([`FunctionSummary::locals`]). Module-level values never call `self`'s methods, so for
    /// the module's globals this is [`Val::is_computed`].
    pub fn is_computed_local(&self) -> bool {
        self.is_computed()
            || matches!(
                self,
                Val::Call {
                    callee: Ref::Method(_) | Ref::Super(_),
                    ..
                }
            )
    }
}

/// A tensor property of a returned value, owned (see [`dataflow::Fact`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PropFact {
    /// The property.
    pub prop: Prop,
    /// Holds on every path.
    pub definite: bool,
    /// The producing operation (`softmax`, `log_softmax`, ...).
    pub op: &'static str,
    /// Where it was produced, in the summarised file.
    pub origin: TextRange,
}

/// What an event acts on, from the summarised function's point of view.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// Nothing named (a backward, a clip, a zero_grad of unknown gradients).
    None,
    /// The function's parameter `index`, with an attribute/index path (`""`, `.module`,
    /// `[0]`).
    Param(u16, Box<str>),
    /// `self.<path>`.
    SelfAttr(Box<str>),
    /// A module-level name of the summarised file.
    Global(Box<str>),
    /// An object local to the function (created there), with its role.
    Local(Box<str>),
}

/// One training event of a function body.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SumEvent {
    /// What.
    pub kind: EventKind,
    /// On what.
    pub target: Target,
    /// The target is an optimizer / scheduler / module / scaler by kind or name.
    pub role: RoleTag,
    /// Under an `if`, an earlier `continue`/`return`, an `except` or a non-parameter loop.
    pub conditional: bool,
    /// Under a periodic test (`if (i + 1) % k == 0`).
    pub periodic: bool,
    /// Inside a loop of the function (other than a loop over parameters).
    pub in_loop: bool,
    /// Where, in the summarised file.
    pub range: TextRange,
}

/// [`Role`] without payload, hashable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RoleTag {
    /// Optimizer.
    Optimizer,
    /// LR scheduler.
    Scheduler,
    /// GradScaler.
    Scaler,
    /// nn.Module.
    Module,
    /// Something else.
    Other,
    /// Unknown.
    Unknown,
}

impl From<&Role> for RoleTag {
    fn from(r: &Role) -> Self {
        match r {
            Role::Optimizer => RoleTag::Optimizer,
            Role::Scheduler(_) => RoleTag::Scheduler,
            Role::Scaler => RoleTag::Scaler,
            Role::Module => RoleTag::Module,
            Role::Other => RoleTag::Other,
            Role::Unknown => RoleTag::Unknown,
        }
    }
}

/// A call a function makes to something the model may resolve (a project function or class,
/// or a method of the enclosing class).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SumCall {
    /// The callee.
    pub callee: Ref,
    /// Positional arguments.
    pub args: ThinVec<Val>,
    /// Keyword arguments.
    pub kwargs: ThinVec<(Box<str>, Val)>,
    /// How each positional argument is spelled when it names an object (`model`,
    /// `self.net`, `models["G"]`): events of the caller on that object match it.
    pub arg_keys: ThinVec<Option<Box<str>>>,
    /// The object keys of the keyword arguments that name an object, by keyword.
    pub kwarg_keys: ThinVec<(Box<str>, Box<str>)>,
    /// The literal each positional argument spells ([`Lit::Unknown`] when it is none).
    pub arg_lits: ThinVec<Lit>,
    /// The literal each keyword argument spells, by keyword.
    pub kwarg_lits: ThinVec<(Box<str>, Lit)>,
    /// Spreads `*args` or `**kwargs` into the call: which parameter gets what is not known.
    pub spreads: bool,
    /// The call, in the summarised file.
    pub range: TextRange,
    /// Inside a loop of the caller.
    pub in_loop: bool,
    /// Under a condition of the caller.
    pub conditional: bool,
    /// Under a condition that names a device (`if x.is_cuda:`, `if args.device == "cuda":`,
    /// `if torch.cuda.is_available():`, `if use_gpu:`).
    pub device_conditional: bool,
    /// With autograd off (`no_grad` / `inference_mode` region or decorator).
    pub no_grad: bool,
    /// It passes a `*args` or `**kwargs` splat: which parameters it binds is not known.
    pub splat: bool,
}

/// A call of an object the function holds (`model(x)`, `self.net(x)`, `net(x)` for a
/// parameter `net`): when the object is an instance of a project module class, the call runs
/// that class's `forward` (see [`super::ProjectModel::instance_call_target`]), and with it the
/// training events of the forward (a forward that starts with `self.zero_grad()`, a
/// meta-learner whose forward runs the inner and outer backward and optimizer steps).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InstanceCall {
    /// The called object's value: a name bound to a call of a project class, a parameter,
    /// `self.<attr>`.
    pub recv: Val,
    /// The object's key as the caller spells it (`model`, `self.net`).
    pub key: Box<str>,
    /// Positional arguments.
    pub args: ThinVec<Val>,
    /// Keyword arguments.
    pub kwargs: ThinVec<(Box<str>, Val)>,
    /// The call, in the summarised file.
    pub range: TextRange,
    /// Inside a loop of the caller.
    pub in_loop: bool,
    /// Under a condition of the caller.
    pub conditional: bool,
    /// With autograd off (a `no_grad` / `inference_mode` block or decorator of the caller).
    pub no_grad: bool,
}

/// `obj.method(...)` of a method that is not `nn.Module` API (see
/// [`FunctionSummary::object_method_calls`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjectMethodCall {
    /// The object, as the function's events name it.
    pub target: Target,
    /// The object's value (what the model resolves to its class).
    pub recv: Val,
    /// The method's name.
    pub name: Box<str>,
    /// The call.
    pub range: TextRange,
    /// Recorded in a function whose text names no training event (a validation helper calling
    /// `decoder.greedy_decoding(x)`): followed only to the method of a known project class,
    /// never to every module method of that name.
    pub known_only: bool,
}

/// How a function uses one parameter: evidence for its kind when no call site tells.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Usage(pub u16);

impl Usage {
    /// `p(x)`.
    pub const CALLED: u16 = 1;
    /// `p.eval()` / `p.train()`.
    pub const MODE: u16 = 1 << 1;
    /// `p.parameters()` / `p.named_parameters()` / `p.modules()` / `p.children()`.
    pub const PARAMETERS: u16 = 1 << 2;
    /// `p.state_dict()` / `p.load_state_dict(..)`.
    pub const STATE_DICT: u16 = 1 << 3;
    /// `p.step(...)`.
    pub const STEP: u16 = 1 << 4;
    /// `p.zero_grad(...)`.
    pub const ZERO_GRAD: u16 = 1 << 5;
    /// `p.param_groups`.
    pub const PARAM_GROUPS: u16 = 1 << 6;
    /// `for x in p`.
    pub const ITERATED: u16 = 1 << 7;
    /// `p.dataset` / `p.sampler` / `p.batch_size`.
    pub const LOADER_ATTR: u16 = 1 << 8;
    /// `p.backward()`.
    pub const BACKWARD: u16 = 1 << 9;
    /// `p.to(..)` / `p.cuda()`.
    pub const MOVED: u16 = 1 << 10;

    /// What calling method `m` of a value says of it (`model.eval()`: [`Usage::MODE`]); 0
    /// for a method that says nothing.
    pub fn of_method(m: &str) -> u16 {
        match m {
            "eval" | "train" => Self::MODE,
            "parameters" | "named_parameters" | "modules" | "children" | "named_modules" => {
                Self::PARAMETERS
            }
            "state_dict" | "load_state_dict" => Self::STATE_DICT,
            "step" => Self::STEP,
            "zero_grad" => Self::ZERO_GRAD,
            "backward" => Self::BACKWARD,
            "to" | "cuda" => Self::MOVED,
            _ => 0,
        }
    }

    /// Does it have all of `bits`?
    pub fn has(self, bits: u16) -> bool {
        self.0 & bits == bits
    }

    /// The kind the usage shows, when it is unambiguous. `.train()`/`.eval()` alone are not
    /// enough (trainers and environments have them too); `.parameters()`, or a mode switch
    /// together with a call / state_dict / move, is a module.
    pub fn kind(self) -> Kind {
        let module_signal = Self::CALLED | Self::STATE_DICT | Self::MOVED;
        let module = self.0 & Self::PARAMETERS != 0
            || (self.0 & Self::MODE != 0 && self.0 & module_signal != 0)
            || self.has(Self::CALLED | Self::STATE_DICT);
        if module && self.0 & (Self::STEP | Self::BACKWARD | Self::PARAM_GROUPS) == 0 {
            return Kind::Module;
        }
        if (self.has(Self::STEP | Self::ZERO_GRAD) || self.has(Self::PARAM_GROUPS))
            && self.0 & (Self::CALLED | Self::PARAMETERS | Self::MODE) == 0
        {
            return Kind::Optimizer("Optimizer".into());
        }
        if self.has(Self::ITERATED | Self::LOADER_ATTR) {
            return Kind::DataLoader;
        }
        Kind::Unknown
    }
}

/// One function (or method, or closure) of a file. Index 0 of a file's functions is the
/// module body itself (name `<module>`, no parameters).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FunctionSummary {
    /// Its name (`<module>` for the module body).
    pub name: Box<str>,
    /// The `def` statement's range (the module's whole range for index 0).
    pub range: TextRange,
    /// The class it is a method of (index in [`FileSummary::classes`]).
    pub class: Option<u32>,
    /// The function it is nested in (index in [`FileSummary::functions`]).
    pub parent: Option<u32>,
    /// Parameter names, `self` included.
    pub params: Vec<Box<str>>,
    /// How many parameters a call must pass (no default, not `*args`/`**kwargs`), `self`
    /// included.
    pub required_params: u16,
    /// How many parameters a call may pass by position (before `*args` / `*`), `self`
    /// included.
    pub positional_params: u16,
    /// Each parameter's default, aligned with [`FunctionSummary::params`].
    pub param_defaults: Vec<ParamDefault>,
    /// Kinds of the parameters from their annotations (`Unknown` without one), and the
    /// annotation's class reference when it names a class.
    pub annotations: Vec<Option<Ref>>,
    /// Decorated `@torch.no_grad()` / `@torch.inference_mode()`.
    pub no_grad: bool,
    /// Builds a pre-0.4 `Variable(..., volatile=...)` (not literally `False`) in its own body
    /// (the module body for function 0): inference written for the torch of its era, or a
    /// helper such as `get_batch(source, i, evaluation=True)` that hands out such inputs. See
    /// [`super::ProjectModel::takes_volatile_inputs`].
    pub volatile_inputs: bool,
    /// What it returns (joined over its `return` statements).
    pub returns: Val,
    /// Tensor properties of what it returns (same-file dataflow summary), and its eval mode
    /// when it returns a module it put in eval mode (`model.eval(); return model`).
    pub return_props: ThinVec<PropFact>,
    /// When it returns a module: the tensor properties of what calling that module gives
    /// (`return nn.Sequential(..., nn.Sigmoid())` gives probabilities).
    pub return_forward_props: ThinVec<PropFact>,
    /// Every `return` gives a name the function called `.backward()` on: a loss that still
    /// carries its autograd graph (`loss.backward(); optimizer.step(); return loss`).
    pub returns_differentiated: bool,
    /// Every `return` gives a library model whose only train/eval-sensitive layers the
    /// function replaced (`model = models.vgg16(pretrained=True); model.classifier =
    /// nn.Linear(n, 2); return model`; see [`crate::library_mode_head`]).
    pub returns_head_replaced: bool,
    /// Its own training events (not those of the functions it calls).
    pub events: ThinVec<SumEvent>,
    /// Calls it makes that the model may resolve.
    pub calls: Vec<SumCall>,
    /// Calls of objects it holds (`model(x)`), which run a project module's `forward` when
    /// the object is an instance of one.
    pub instance_calls: ThinVec<InstanceCall>,
    /// Objects it gives an `nn.Module` API method (`net.to(dev)`, `net.parameters()`,
    /// `net.eval()`): their values (a name bound to a call of something the model may
    /// resolve, a parameter, `self.<attr>`), once each.
    pub module_api_uses: ThinVec<Val>,
    /// Module-level names of its file (not its own locals or parameters) that it calls or
    /// gives an `nn.Module` API method (`model(x)`, `model.to(dev)` in a function, with
    /// `model = Net()` at module level), once each. The model resolves them through the
    /// file's globals.
    pub global_module_uses: ThinVec<Box<str>>,
    /// Calls of a method that is not `nn.Module` API on an object (`discriminator.train_custom()`,
    /// `self.model.restore_mode()`): the object and the method's name. The model resolves the
    /// method on the object's class ([`crate::project::ProjectModel::object_methods`]), so the
    /// modes that method sets are seen.
    pub object_method_calls: ThinVec<ObjectMethodCall>,
    /// Methods it calls on an object with autograd off (`with torch.no_grad(): scores =
    /// model.detect(x)`, or in a no-grad decorated function): the object's value and the
    /// method's name, not `self`'s own methods (those are [`Self::calls`]) nor `nn.Module`
    /// API. The model resolves the method on the object's class
    /// ([`crate::project::ProjectModel::method_called_without_grad`]).
    pub no_grad_method_calls: ThinVec<(Val, Box<str>)>,
    /// How it uses each parameter.
    pub usage: Vec<Usage>,
    /// For a method: how it uses each attribute of `self` it calls methods of
    /// (`self.optimizer.step()`), calls (`self.model(x)`) or iterates. Evidence for the
    /// attribute's kind when its assignment does not tell (see
    /// [`crate::project::ProjectModel::class_attr`]).
    pub attr_usage: ThinVec<(Box<str>, Usage)>,
    /// For a method: the parameters (by position, `self` is 0) whose value it adds to an
    /// attribute of `self` as it is, with no conversion to a number on the way
    /// (`self.sum += val * n`, `self.history.append(val)`: an `AverageMeter.update`). Such a
    /// method keeps what it is given alive as long as the object (see
    /// `accumulate-loss-tensor`'s meter objects).
    pub accumulated_params: ThinVec<u16>,
    /// Its body has a `for`/`while` loop.
    pub has_loop: bool,
    /// Its body turns autograd off for a block of its own: `with torch.no_grad():` (or
    /// `inference_mode()`, `set_grad_enabled(False)`), as a `forward` that runs inference
    /// without a graph in one of the branches its arguments select (`mode="inference"`).
    pub grad_off_block: bool,
    /// The train/eval-sensitive layer families it builds (`nn.Dropout(...)`, `F.dropout`;
    /// several joined into one name, see [`crate::join_mode_layers`]), and where the first is.
    pub mode_layer: Option<(&'static str, TextRange)>,
    /// Project classes and builders it calls (for the train/eval sensitivity of the classes
    /// whose methods these are).
    pub builds: ThinVec<Ref>,
    /// Those of [`Self::builds`] that build a library model whose train/eval-sensitive head
    /// the function replaces by layers without any (`net = vgg16(pretrained=True)` then
    /// `net.classifier = nn.Sequential()`): built, but not a source of Dropout.
    pub mode_free_builds: ThinVec<Ref>,
    /// For an `__init__` that puts some of what it builds in eval mode (`net = Backbone();
    /// net.eval()`, `self.features = vgg16(weights=...).eval()`): its train/eval-sensitive
    /// layer and project builds leaving out those held in eval mode (see [`Untrained`]).
    pub untrained: Option<Box<Untrained>>,
    /// Modules it freezes whole, by dotted name, and where: `X.requires_grad_(False)`, or
    /// `for p in X.parameters(): p.requires_grad = False`, or the name bound to a frozen
    /// chain (`m = nn.Conv2d(...).requires_grad_(False).to(dev)` freezes `m`). A forward pass of a frozen module
    /// on inputs that do not require grad records no graph. The span runs from the freezing
    /// statement to the first later statement that gives the module trainable parts again
    /// (`model.fc = nn.Linear(...)` after freezing a pretrained network), or to `u32::MAX`.
    pub frozen: ThinVec<(Box<str>, TextRange)>,
    /// Whether its top-level statements freeze the instance's own parameters (`for p in
    /// self.parameters(): p.requires_grad = False`, `self.requires_grad_(False)`), always or
    /// when a parameter is falsy (`p.requires_grad = requires_grad`): for an `__init__`, a
    /// constructor that freezes what it builds (see [`super::ProjectModel::class_freezes_itself`]).
    pub freezes_self: SelfFreeze,
    // ----- project facts of the wave-3 rules (checkpoints, schedulers, loaders, optimizers,
    // 0-dim returns): recorded by `facts_extract`, queried in `super::facts` -----
    /// Where its values go, its loops, saves, optimizers, loaders and returns.
    pub facts: super::facts::FunctionFacts,
    /// Its local names bound to an object only the model can resolve
    /// ([`Val::is_computed_local`]: an element of a returned tuple, an instance of a class
    /// chosen through a registry or a factory, what a method of its class returns), sorted by
    /// name; see [`super::ProjectModel::local_value`].
    pub locals: ThinVec<(Box<str>, Val)>,
}

impl FunctionSummary {
    /// A function defined at module level (not a method, not a closure).
    pub fn is_module_level(&self) -> bool {
        self.class.is_none() && self.parent == Some(0)
    }
}

/// What a constructor builds that an instance's mode still changes, when it holds part of
/// what it builds in eval mode: a pretrained network loaded, put in eval mode and frozen in
/// `__init__` (`model = Circular(); model.load_state_dict(...); model.eval(); self.bn1 =
/// model.bn1`), a perceptual-loss feature extractor (`self.vgg = vgg16(weights=...).eval()`).
/// `Module.eval()` is recursive and so is `train()`: those sub-modules stay in eval mode until
/// something calls `train()` on the whole model.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Untrained {
    /// The train/eval-sensitive layer families built outside the values held in eval mode,
    /// and where the first is.
    pub layer: Option<(&'static str, TextRange)>,
    /// The project classes and builders called outside them.
    pub builds: Vec<Ref>,
}

/// One class of a file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClassSummary {
    /// Its name.
    pub name: Box<str>,
    /// The `class` statement's range.
    pub range: TextRange,
    /// Base classes.
    pub bases: Vec<Ref>,
    /// Derives from `nn.Module` as far as the file alone tells.
    pub local_module: bool,
    /// Derives from a `Dataset` as far as the file alone tells.
    pub local_dataset: bool,
    /// Methods: name and index in [`FileSummary::functions`].
    pub methods: Vec<(Box<str>, u32)>,
    /// `self.<attr> = value` in its methods: attribute, method index, value.
    pub attrs: Vec<(Box<str>, u32, Val)>,
    /// What `forward` returns (tensor properties), when the class has one.
    pub forward_props: Vec<PropFact>,
    /// When `forward` returns a tuple (`return x_recon, mu, log_var`): each element's tensor
    /// properties. Empty otherwise, or when no element has any.
    pub forward_elements: Vec<Vec<PropFact>>,
    /// The train/eval-sensitive layer families built in the class (`Dropout`, `BatchNorm`,
    /// `Dropout and BatchNorm`, ...).
    pub mode_layer: Option<&'static str>,
    /// Where the first such layer is built.
    pub mode_layer_at: Option<TextRange>,
    /// Project classes and builders called in its methods (sub-modules, for transitive
    /// train/eval sensitivity).
    pub submodules: Vec<Ref>,
    /// When `__init__` puts some of the sub-modules it builds in eval mode and no method calls
    /// `train()`: its layer and sub-modules leaving those out, what still changes with the
    /// mode of an instance never switched with `train()` (see
    /// [`super::ProjectModel::mode_layer_if_never_trained`]).
    pub untrained: Option<Box<Untrained>>,
    /// Its text names a parameter or buffer registration (`nn.Parameter`, `register_buffer`,
    /// `register_parameter`, ...): it may hold state of its own (see
    /// [`super::ProjectModel::is_parameter_free_class`]).
    pub declares_state: bool,
    /// Its methods compute a loss: they call a function named like one (`F.cross_entropy`,
    /// `nll_loss`, `self.dice_loss`, `kl_div`). See
    /// [`super::ProjectModel::is_loss_class`].
    pub computes_loss: bool,
    /// A method puts attributes of `self` chosen by name in eval mode
    /// (`getattr(self, "net" + name).eval()` over a list of names: the `BaseModel.eval()` of
    /// GAN code bases), so any module attribute may be switched. See
    /// [`super::ProjectModel::evals_attributes_by_name`].
    pub evals_attrs_by_name: bool,
    /// When the class's only train/eval-sensitive layers are `nn.Dropout`s built in
    /// `__init__` with the rate of one of its parameters (`nn.Dropout(dropout)`), and it
    /// builds no project sub-module: that parameter (see [`DropoutRate`]). An instance built
    /// with a rate of 0 behaves the same in both modes.
    pub dropout_rate: Option<Box<DropoutRate>>,
    /// The attributes its methods call on `self` (`self.encoder(x)`, `self.helper(y)`),
    /// sorted, once each: its own or inherited methods, or objects stored on the instance.
    pub self_calls: Vec<Box<str>>,
}

/// Adds a train/eval-sensitive layer family to those found so far (see
/// [`crate::join_mode_layers`]), keeping where the first was built.
fn join_layer(
    found: &mut Option<(&'static str, TextRange)>,
    more: Option<(&'static str, TextRange)>,
) {
    if let Some((k, at)) = more {
        match found {
            Some((f, _)) => *f = crate::join_mode_layers(f, k),
            None => *found = Some((k, at)),
        }
    }
}

/// The order of two references as their `Debug` texts sort (`Local("a")` < `Method(..)` <
/// `Nested(..)` < `Qualified(..)`, names by bytes, closure indices by their decimal text),
/// without formatting them: the order the class summaries have always listed sub-modules in.
fn ref_order(a: &Ref, b: &Ref) -> std::cmp::Ordering {
    fn rank(r: &Ref) -> u8 {
        match r {
            Ref::Local(_) => 0,
            Ref::Method(_) => 1,
            Ref::Nested(_) => 2,
            Ref::Qualified(_) => 3,
            Ref::Returned(_) => 4,
            Ref::DefAt(_) => 5,
            Ref::Super(_) => 6,
            Ref::Held(..) => 7,
        }
    }
    match (a, b) {
        (Ref::Local(x), Ref::Local(y))
        | (Ref::Method(x), Ref::Method(y))
        | (Ref::Super(x), Ref::Super(y))
        | (Ref::Qualified(x), Ref::Qualified(y)) => x.cmp(y),
        (Ref::Nested(x), Ref::Nested(y)) => x.to_string().cmp(&y.to_string()),
        (Ref::Returned(x), Ref::Returned(y)) => ref_order(x, y),
        (Ref::DefAt(x), Ref::DefAt(y)) => x.cmp(y),
        (Ref::Held(x, m), Ref::Held(y, n)) => ref_order(x, y).then_with(|| m.cmp(n)),
        _ => rank(a).cmp(&rank(b)),
    }
}

/// Which words a file uses (cheap gates).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Vocab {
    /// Mentions `torch`.
    pub torch: bool,
    /// Uses training vocabulary (`backward`, `zero_grad`, `.step(`, `.eval()`, `no_grad`,
    /// `state_dict`, `optimizer`, `DataLoader`, `criterion`, `.parameters()`); only looked for
    /// in files that do not say torch (those are analysed anyway).
    pub training: bool,
    /// Mentions softmax / sigmoid (in any spelling): forward outputs and returns may carry
    /// probabilities.
    pub probabilities: bool,
    /// Calls `set_epoch` (of a DistributedSampler, or anything else).
    pub set_epoch: bool,
    /// Names what the project facts follow (checkpoints, loaders, optimizers, schedulers,
    /// epochs, losses, legacy dataset attributes): files without any of these words have no
    /// facts recorded (their functions count as not followed).
    pub facts: bool,
    /// A torch file without [`Vocab::facts`] words that computes a reduction (`mean(` /
    /// `sum(`): a helper module of tensor functions (`mmd.py` returning `torch.mean(K)`).
    /// Only whether its functions return 0-dim tensors is recorded.
    pub reductions: bool,
    /// Says `save` anywhere.
    pub save: bool,
    /// Says `load` anywhere.
    pub load: bool,
}

/// The words of [`Vocab::facts`].
const FACT_WORDS: &[&str] = &[
    ".save(",
    ".load(",
    "load_state_dict",
    "oader",
    "optim",
    "sched",
    "backward",
    ".step(",
    "epoch",
    "Namespace",
    "loss",
    "Loss",
    ".item()",
    "MNIST",
    "pack_padded",
    "_data",
    "_labels",
    "retain_variables",
    "shuffle",
];

/// Words [`Vocab::of`] looks for, by group (one automaton pass over the text).
const TRAINING_WORDS: &[&str] = &[
    "backward(",
    "zero_grad",
    ".step(",
    ".eval()",
    "no_grad",
    "state_dict",
    "optimizer",
    "DataLoader",
    "criterion",
    ".parameters()",
    "inference_mode",
];

/// A fixed list of words with their prebuilt searchers: does a text contain any of them?
/// A few words are looked for one at a time (vectorised substring searches); a longer list
/// in one pass of a multi-word automaton (its vectorised prefilter), which on the benchmark
/// corpus costs a sixth of the separate searches for the 19 fact words when none occurs (and
/// several times more than them for two words).
pub(crate) struct WordSet {
    words: &'static [&'static str],
    searcher: std::sync::OnceLock<Searcher>,
}

/// How a [`WordSet`] searches.
enum Searcher {
    /// One substring search per word.
    Each(Vec<memchr::memmem::Finder<'static>>),
    /// One automaton pass for all the words.
    All(aho_corasick::AhoCorasick),
}

/// From how many words a [`WordSet`] searches them in one automaton pass.
const AUTOMATON_WORDS: usize = 6;

impl WordSet {
    /// The set of `words` (searchers built on first use).
    pub(crate) const fn new(words: &'static [&'static str]) -> Self {
        WordSet {
            words,
            searcher: std::sync::OnceLock::new(),
        }
    }

    /// Does `text` contain any of the words?
    pub(crate) fn any_in(&self, text: &[u8]) -> bool {
        let searcher = self.searcher.get_or_init(|| {
            if self.words.len() >= AUTOMATON_WORDS {
                // Leftmost-first: its prefilter is several times faster here than the
                // standard semantics' (any match answers the question either way).
                if let Ok(ac) = aho_corasick::AhoCorasick::builder()
                    .match_kind(aho_corasick::MatchKind::LeftmostFirst)
                    .build(self.words)
                {
                    return Searcher::All(ac);
                }
            }
            Searcher::Each(self.words.iter().map(memchr::memmem::Finder::new).collect())
        });
        match searcher {
            Searcher::Each(finders) => finders.iter().any(|f| f.find(text).is_some()),
            Searcher::All(ac) => ac.is_match(text),
        }
    }
}

impl Vocab {
    /// Read the words of a text.
    pub fn of(text: &str) -> Self {
        static TRAINING: WordSet = WordSet::new(TRAINING_WORDS);
        static FACTS: WordSet = WordSet::new(FACT_WORDS);
        let t = text.as_bytes();
        let has = |w: &str| memchr::memmem::find(t, w.as_bytes()).is_some();
        let torch = has("torch");
        // Files that say torch are analysed anyway; the training words matter for the others.
        let training = !torch && TRAINING.any_in(t);
        // `softmax`, `Softmax`, `log_softmax`, `LogSoftmax`, `sigmoid`, `Sigmoid`, `logsigmoid`.
        let probabilities = torch && (has("oftmax") || has("igmoid"));
        let facts = (torch || training) && FACTS.any_in(t);
        Vocab {
            torch,
            training,
            probabilities,
            set_epoch: torch && has("set_epoch"),
            facts,
            reductions: !facts && torch && (has("mean(") || has("sum(")),
            save: has("save"),
            load: has("load"),
        }
    }
}

/// Words of a training setup (hyperparameters) that a PyTorch project's configuration and
/// experiment files use without naming torch.
const TRAINING_SETUP_WORDS: &[&str] = &["learning_rate", "batch_size", "epoch"];

/// Does the text name training hyperparameters (`learning_rate`, `batch_size`, `epoch`)?
/// Together with [`Vocab`] (torch or training words) and the project's relevance (imported by
/// torch code), this tells whether a file belongs to the PyTorch code torchvet is about: a
/// hyperparameter sweep of an experiment that does not parse does, a vendored parser's test
/// input (`tree-sitter-python/examples/*.py`) does not.
pub fn names_training_setup(text: &str) -> bool {
    let t = text.as_bytes();
    TRAINING_SETUP_WORDS
        .iter()
        .any(|w| memchr::memmem::find(t, w.as_bytes()).is_some())
}

/// Everything other files need to know about one file.
#[derive(Clone, Debug, Default)]
pub struct FileSummary {
    /// The file (absolute when the caller gave an absolute path).
    pub path: PathBuf,
    /// A Jupyter notebook.
    pub notebook: bool,
    /// Which words it uses.
    pub vocab: Vocab,
    /// Unit-test code by path and pytest conventions (`tests/`, `test_*.py`, `*_test.py`,
    /// `conftest.py`) or because it imports pytest/unittest.
    pub test_code: bool,
    /// Module-level imports: bound name -> qualified name.
    pub imports: Vec<(Box<str>, Box<str>)>,
    /// Modules star-imported at module level (`from .layers import *`).
    pub star_imports: Vec<Box<str>>,
    /// Classes (nested ones included).
    pub classes: Vec<ClassSummary>,
    /// Functions; index 0 is the module body.
    pub functions: Vec<FunctionSummary>,
    /// Module-level names bound by assignment, with their values.
    pub globals: Vec<(Box<str>, Val)>,
    /// In a notebook, the module-level names bound by more than one assignment, by
    /// assignment: name, where the statement starts, whether it is a top-level statement
    /// (not in a loop, branch or `with`), and the value that statement binds. Sorted by name
    /// and position. Cells reuse names (`model, loss_fn, opt = get_model()` in two cells,
    /// after a redefinition of `get_model`): see [`super::ProjectModel::global_value_at`].
    pub rebound: Vec<(Box<str>, u32, bool, Val)>,
    /// A hash of the summary (for change detection).
    pub fingerprint: u64,
    /// Offsets of line starts (to show locations in this file from other files' findings).
    pub line_starts: Vec<u32>,
    /// A notebook's analysed cells: (1-based notebook cell number, 0-based first line in the
    /// joined text), in order; empty for a `.py` file.
    pub cells: Vec<(u32, u32)>,
    // ----- project facts of the wave-3 rules (see `super::facts`) -----
    /// Whole-file facts (allow-listed classes for the weights-only unpickler).
    pub facts: super::facts::FileFacts,
    /// Names of the functions and methods called with autograd off (`name(...)` or
    /// `obj.name(...)` inside a `no_grad` / `inference_mode` / `set_grad_enabled(False)` region
    /// or a no-grad decorated function), sorted: a helper or a method of another file reached
    /// through a receiver the model cannot type (`for _, unit in m.named_children():
    /// unit.load_from(w)`) is known by name to run under no_grad.
    pub no_grad_calls: Vec<Box<str>>,
    /// Qualified names of other modules' objects this file compares (`<`, `>=`, ...):
    /// `onmt.constants.torch_version >= 1.2`, or a name imported from a project module and
    /// compared. Sorted, once each. See [`super::ProjectModel::compared_in_other_files`].
    pub compared_refs: Vec<Box<str>>,
    /// The directories it adds to `sys.path` when it runs (absolute, lexically normalised,
    /// not checked for existence; see [`super::resolve::sys_path_additions`]).
    pub sys_path: Vec<PathBuf>,
    /// It has an `if __name__ == "__main__":` block: a script that may be run itself.
    pub script: bool,
    /// Names of the containers it changes in place, by the name or last attribute spelled
    /// (`MODELS[name] = cls`, `del MODELS[k]`, `MODELS.update(...)`, `self.registry.pop(k)`),
    /// sorted, once each: a registry changed anywhere does not have the values its literal
    /// shows (see [`Val::Dict`]).
    pub mutated: Vec<Box<str>>,
    /// The text the summary was made from and how it parses (see [`FileSummary::grad_flow`]);
    /// `None` for a summary made from a tree alone.
    pub reparse: Option<torchvet_python::Reparse>,
    /// The star-imported names bound as imports when it was summarised (see
    /// [`summarise_source_with`]).
    pub star_names: Vec<(Box<str>, Box<str>)>,
    /// Per function, where its values go with respect to autograd ([`GradFlow`]): computed
    /// from a new parse of the text the first time a query asks about any function of the
    /// file. Queries reach few functions (about 600 of the bench corpus's 102,000 with the
    /// default rules), so phase 1 does not compute them for all.
    grad_flows: std::sync::OnceLock<Vec<GradFlow>>,
}

impl FileSummary {
    /// Where call results and parameters of function `index` go with respect to
    /// differentiation, and where it turns autograd off process-wide (see `grad_flow`).
    /// Computed for the whole file when first asked; a function the new parse does not
    /// find (the summary was made from another tree) goes nowhere.
    pub fn grad_flow(&self, index: u32) -> &GradFlow {
        static NOWHERE: std::sync::LazyLock<GradFlow> = std::sync::LazyLock::new(GradFlow::default);
        self.grad_flows
            .get_or_init(|| grad_flow::file_grad_flows(self))
            .get(index as usize)
            .unwrap_or(&NOWHERE)
    }

    /// Give back the room the lists grew into while the summary was built. Summaries live
    /// until the run ends (every file's, at once), and the slack of their growing lists was
    /// about a sixth of them (40 MB of 218 MB on transformers); fresh pages cost a kernel
    /// zeroing each.
    fn shrink_to_fit(&mut self) {
        self.functions.shrink_to_fit();
        for f in &mut self.functions {
            f.calls.shrink_to_fit();
            f.params.shrink_to_fit();
            f.usage.shrink_to_fit();
            f.annotations.shrink_to_fit();
            f.param_defaults.shrink_to_fit();
            f.facts.values.shrink_to_fit();
            for v in &mut f.facts.values {
                v.uses.shrink_to_fit();
                v.bound.shrink_to_fit();
            }
        }
        self.classes.shrink_to_fit();
        self.line_starts.shrink_to_fit();
        self.imports.shrink_to_fit();
    }
}

impl FileSummary {
    /// Where an offset of this file is, as a user finds it: the notebook cell (1-based, `None`
    /// in a `.py` file) and the 1-based row inside it (or in the file).
    pub fn place(&self, offset: ruff_text_size::TextSize) -> (Option<usize>, usize) {
        let (row, _) = self.row_col(offset);
        if self.cells.is_empty() {
            return (None, row);
        }
        let line = (row - 1) as u32;
        let i = self
            .cells
            .partition_point(|&(_, start)| start <= line)
            .max(1)
            - 1;
        let (cell, start) = self.cells[i];
        (
            Some(cell as usize),
            (line.saturating_sub(start) + 1) as usize,
        )
    }

    /// 1-based row and column of an offset of this file.
    pub fn row_col(&self, offset: ruff_text_size::TextSize) -> (usize, usize) {
        let o = offset.to_u32();
        let row = self.line_starts.partition_point(|&s| s <= o).max(1);
        let col = o - self.line_starts.get(row - 1).copied().unwrap_or(0);
        (row, col as usize + 1)
    }

    /// A module-level class by name.
    pub fn class(&self, name: &str) -> Option<u32> {
        self.classes
            .iter()
            .position(|c| &*c.name == name)
            .map(|i| i as u32)
    }

    /// A module-level function (not a method or closure) by name.
    pub fn function(&self, name: &str) -> Option<u32> {
        self.functions
            .iter()
            .enumerate()
            .skip(1)
            .find(|(_, f)| &*f.name == name && f.is_module_level())
            .map(|(i, _)| i as u32)
    }

    /// The module-level function whose `def` starts at `at` (see [`Ref::DefAt`]).
    pub fn module_function_at(&self, at: u32) -> Option<u32> {
        self.functions
            .iter()
            .enumerate()
            .skip(1)
            .find(|(_, f)| f.is_module_level() && f.range.start().to_u32() == at)
            .map(|(i, _)| i as u32)
    }

    /// A module-level object binding.
    pub fn global(&self, name: &str) -> Option<&Val> {
        self.globals
            .iter()
            .find(|(n, _)| &**n == name)
            .map(|(_, v)| v)
    }

    /// The import a module-level name is bound to.
    pub fn import(&self, name: &str) -> Option<&str> {
        self.imports
            .iter()
            .find(|(n, _)| &**n == name)
            .map(|(_, q)| &**q)
    }

    /// The function whose `def` starts at `start`.
    pub fn function_at(&self, start: ruff_text_size::TextSize) -> Option<u32> {
        self.functions
            .iter()
            .enumerate()
            .skip(1)
            .find(|(_, f)| f.range.start() == start)
            .map(|(i, _)| i as u32)
    }

    /// The class whose `class` statement starts at `start`.
    pub fn class_at(&self, start: ruff_text_size::TextSize) -> Option<u32> {
        self.classes
            .iter()
            .position(|c| c.range.start() == start)
            .map(|i| i as u32)
    }
}

/// Is this path unit-test code by the conventions pytest uses: a module named `test_*.py`,
/// `*_test.py` or `conftest.py`, or any file under a `tests/` directory?
pub fn is_test_path(path: &Path) -> bool {
    let (by_place, by_name) = test_path_conventions(path);
    by_place || by_name
}

/// What the path alone says by pytest's conventions: (under a `tests/` / `unittests/`
/// directory or named `conftest.py`; named `test_*.py` / `*_test.py`).
fn test_path_conventions(path: &Path) -> (bool, bool) {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let stem = name
        .strip_suffix(".py")
        .or_else(|| name.strip_suffix(".ipynb"))
        .unwrap_or(name);
    let by_place = stem == "conftest"
        || path
            .components()
            .any(|c| matches!(c.as_os_str().to_str(), Some("tests" | "unittests")));
    (
        by_place,
        stem.starts_with("test_") || stem.ends_with("_test"),
    )
}

/// Is this module unit-test code? Under a `tests/` directory or named `conftest.py`, by
/// path alone; named `test_*.py` / `*_test.py` only when it holds what pytest collects (a
/// module-level `def test*` or `class Test*`) or imports pytest / unittest. An evaluation
/// script named `test_net.py` or `u2net_test.py` (a `main()` that loads weights and runs the
/// model on test images) is not a test module: it is the project's evaluation code.
pub fn is_test_module(path: &Path, module: &ast::ModModule) -> bool {
    let (by_place, by_name) = test_path_conventions(path);
    if by_place {
        return true;
    }
    if !by_name {
        return false;
    }
    module.body.iter().any(|st| match st {
        Stmt::FunctionDef(f) => f.name.as_str().starts_with("test"),
        Stmt::ClassDef(c) => c.name.as_str().starts_with("Test"),
        Stmt::Import(i) => i.names.iter().any(|a| {
            let n = a.name.as_str();
            n == "pytest" || n == "unittest" || n.starts_with("unittest.")
        }),
        Stmt::ImportFrom(i) => i
            .module
            .as_ref()
            .is_some_and(|m| m.as_str() == "pytest" || m.as_str().starts_with("unittest")),
        _ => false,
    })
}

/// Whether summaries compute every function's autograd facts while the tree is at hand
/// (see [`set_eager_grad_flows`]).
static EAGER_GRAD_FLOWS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Have the summaries made from now on compute every function's autograd facts from the tree
/// they are made from, instead of from a new parse when a query first asks
/// ([`FileSummary::grad_flow`]). For a run that asks about every file: `check` with its result
/// cache computes every file's view digest, and that reads the facts of every function with
/// callers, so the lazy way would parse almost every file a third time.
pub fn set_eager_grad_flows(eager: bool) {
    EAGER_GRAD_FLOWS.store(eager, std::sync::atomic::Ordering::Relaxed);
}

/// Summarise one parsed source file (a notebook's cells are recorded, see
/// [`FileSummary::cells`]).
pub fn summarise_source(
    path: &Path,
    source: &torchvet_python::SourceFile,
    module: &ast::ModModule,
) -> FileSummary {
    summarise_source_with(path, source, module, &[])
}

/// [`summarise_source`] with names the file's module-level star imports bring (`torch`,
/// `nn`... bound by the project module it star-imports, see
/// [`super::ProjectModel::star_torch_names`]): bound as imports where the file itself does
/// not bind them, so its saves, loads and training events get facts.
pub fn summarise_source_with(
    path: &Path,
    source: &torchvet_python::SourceFile,
    module: &ast::ModModule,
    star_names: &[(Box<str>, Box<str>)],
) -> FileSummary {
    summarise_source_scopes(path, source, module, star_names, false).0
}

/// [`summarise_source`], also giving the scopes it collected, for the checker of the same
/// tree (see [`KeptScopes`]).
pub fn summarise_source_keeping_scopes(
    path: &Path,
    source: &torchvet_python::SourceFile,
    module: &ast::ModModule,
) -> (FileSummary, KeptScopes) {
    let (s, kept) = summarise_source_scopes(path, source, module, &[], true);
    (s, kept.unwrap_or_default())
}

fn summarise_source_scopes(
    path: &Path,
    source: &torchvet_python::SourceFile,
    module: &ast::ModModule,
    star_names: &[(Box<str>, Box<str>)],
    keep_scopes: bool,
) -> (FileSummary, Option<KeptScopes>) {
    let notebook = match &source.kind {
        torchvet_python::SourceKind::Notebook(nb) => Some(nb),
        torchvet_python::SourceKind::Python => None,
    };
    // The line starts the source has already found, when it ends lines as the summary does
    // (at `\n` only: no `\r` in the text).
    let text = source.text.as_bytes();
    let lines = memchr::memchr(b'\r', text)
        .is_none()
        .then(|| source.line_index.starts());
    let (mut s, kept) = summarise_lines(
        path,
        &source.text,
        module,
        notebook.is_some(),
        star_names,
        lines,
        keep_scopes,
    );
    s.reparse = Some(source.reparse());
    if EAGER_GRAD_FLOWS.load(std::sync::atomic::Ordering::Relaxed) {
        let flows = grad_flow::grad_flows_of_tree(&s, module, &source.text);
        let _ = s.grad_flows.set(flows);
    }
    if let Some(nb) = notebook {
        s.cells = nb
            .cell_map()
            .starts()
            .iter()
            .map(|&(c, l)| (c as u32, l as u32))
            .collect();
    }
    (s, kept)
}

/// Summarise one parsed file.
pub fn summarise(path: &Path, text: &str, module: &ast::ModModule, notebook: bool) -> FileSummary {
    summarise_with(path, text, module, notebook, &[])
}

/// [`summarise`] with the names star imports bring (see [`summarise_source_with`]).
pub fn summarise_with(
    path: &Path,
    text: &str,
    module: &ast::ModModule,
    notebook: bool,
    star_names: &[(Box<str>, Box<str>)],
) -> FileSummary {
    let mut s = summarise_lines(path, text, module, notebook, star_names, None, false).0;
    if !notebook {
        s.reparse = Some(torchvet_python::Reparse::python(text));
    }
    s
}

/// [`summarise_with`], given where the text's lines start when the caller knows; with
/// `keep_scopes`, also the scopes it collected.
fn summarise_lines(
    path: &Path,
    text: &str,
    module: &ast::ModModule,
    notebook: bool,
    star_names: &[(Box<str>, Box<str>)],
    lines: Option<&[u32]>,
    keep_scopes: bool,
) -> (FileSummary, Option<KeptScopes>) {
    let mut scopes = Scopes::default();
    let mut module_scope = Scope::collect(ScopeKind::Module, &module.body, None, &scopes);
    for (name, q) in star_names {
        module_scope.import_if_unbound(name, q);
    }
    let imports: Vec<(Box<str>, Box<str>)> = module_scope
        .imports()
        .map(|(n, q)| (Box::from(n), Box::from(q)))
        .collect();
    scopes.push(module_scope);
    let classes = ModuleClasses::compute(&module.body, &scopes);
    let module_kinds = KindTable::infer(&module.body, None, &scopes, &classes, None);
    let vocab = Vocab::of(text);
    let line_starts = match lines {
        Some(l) => l.to_vec(),
        None => {
            let mut l = vec![0u32];
            l.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i as u32 + 1));
            l
        }
    };
    let mut out = FileSummary {
        path: path.to_path_buf(),
        line_starts,
        notebook,
        vocab,
        imports,
        star_names: star_names.to_vec(),
        ..FileSummary::default()
    };
    out.test_code = is_test_module(path, module)
        || out
            .imports
            .iter()
            .any(|(_, q)| q.starts_with("pytest") || q.starts_with("unittest"));
    for stmt in &module.body {
        if let Stmt::ImportFrom(imp) = stmt {
            if imp.names.iter().any(|a| a.name.as_str() == "*") {
                let mut m = ".".repeat(imp.level as usize);
                if let Some(name) = &imp.module {
                    m.push_str(name.as_str());
                }
                out.star_imports.push(m.into());
            }
        }
    }
    // Tensor properties of same-file functions and forwards (the dataflow's own summaries),
    // only in files that can produce them.
    let flow_summaries = vocab
        .probabilities
        .then(|| dataflow::Summaries::compute_returns(&module.body, &classes, text));
    // A compared name resolves through a module-level import, to a name of the import's
    // first module: none is recorded when every import is external. The same walk records
    // what each class body calls; no walk when neither is asked (a class needs the word).
    let compares = out.vocab.torch
        && out
            .imports
            .iter()
            .any(|(_, q)| !super::summary_is_external(q));
    let (compared, class_calls) =
        if compares || memchr::memmem::find(text.as_bytes(), b"class").is_some() {
            file_walk(&scopes, &module.body, compares)
        } else {
            Default::default()
        };
    let grad_off_decorators = dataflow::grad_off_decorators(&module.body, &scopes);
    let mut b = Builder {
        text,
        scopes,
        classes: &classes,
        module_kinds: &module_kinds,
        flow: flow_summaries.as_ref(),
        out,
        module_defs: module_level_defs(&module.body),
        redefined: redefined_functions(&module.body),
        local_classes: Vec::new(),
        grad_off_decorators,
        body_mutated: Vec::new(),
        class_calls,
        kept: keep_scopes.then(KeptScopes::default),
        words: FileWords::of(text),
        held: Vec::new(),
    };
    // The module body as function 0.
    b.out.functions.push(FunctionSummary {
        name: "<module>".into(),
        range: module.range(),
        class: None,
        parent: None,
        params: Vec::new(),
        attr_usage: ThinVec::new(),
        accumulated_params: ThinVec::new(),
        required_params: 0,
        positional_params: 0,
        param_defaults: Vec::new(),
        annotations: Vec::new(),
        no_grad: false,
        volatile_inputs: b.builds_volatile_variable(module.range(), &module.body),
        returns: Val::Unknown,
        return_props: ThinVec::new(),
        return_forward_props: ThinVec::new(),
        returns_differentiated: false,
        returns_head_replaced: false,
        events: ThinVec::new(),
        calls: Vec::new(),
        instance_calls: ThinVec::new(),
        no_grad_method_calls: ThinVec::new(),
        module_api_uses: ThinVec::new(),
        global_module_uses: ThinVec::new(),
        object_method_calls: ThinVec::new(),
        usage: Vec::new(),
        has_loop: false,
        grad_off_block: false,
        mode_layer: None,
        builds: ThinVec::new(),
        mode_free_builds: ThinVec::new(),
        untrained: None,
        frozen: ThinVec::new(),
        freezes_self: SelfFreeze::No,
        facts: Default::default(),
        locals: ThinVec::new(),
    });
    mutated_names(&module.body, &mut b.body_mutated);
    b.out.mutated.extend(b.body_mutated.iter().cloned());
    let module_vals = b.assignments(&module.body, &[], None);
    b.fill_body(0, &module.body, &[], None, &module_vals, false);
    b.module_events(&module.body, &module_vals);
    // Wave-3 facts of the module body, before the functions (they follow its names).
    b.module_facts(&module.body, &module_vals);
    b.out.globals = module_vals
        .iter()
        .filter(|(_, v)| v.is_known())
        .map(|(n, v)| (Box::from(n.as_str()), v.clone()))
        .collect();
    b.out.globals.sort_by(|a, b| a.0.cmp(&b.0));
    if notebook {
        b.out.rebound = b.rebound(&module.body);
    }
    b.defs(&module.body, Some(0), None, &[]);
    let mut kept = b.kept.take();
    if let (Some(k), Some(m)) = (&mut kept, b.scopes.pop_scope()) {
        k.set_module(m);
    }
    let mut out = b.out;
    out.compared_refs = compared;
    out.no_grad_calls.sort_unstable();
    out.no_grad_calls.dedup();
    out.script = facts_extract::has_main_guard(&module.body);
    if super::resolve::may_add_sys_path(text) {
        out.sys_path =
            super::resolve::sys_path_additions(path, &module.body, &out.imports, notebook).dirs;
    }
    let mut h = rustc_hash::FxHasher::default();
    out.imports.hash(&mut h);
    out.star_imports.hash(&mut h);
    out.classes.hash(&mut h);
    out.functions.hash(&mut h);
    out.globals.hash(&mut h);
    out.vocab.hash(&mut h);
    out.facts.hash(&mut h);
    out.no_grad_calls.hash(&mut h);
    out.compared_refs.hash(&mut h);
    out.sys_path.hash(&mut h);
    out.script.hash(&mut h);
    out.mutated.sort_unstable();
    out.mutated.dedup();
    out.mutated.hash(&mut h);
    out.fingerprint = h.finish();
    out.shrink_to_fit();
    (out, kept)
}

/// What a class body calls, by where the class starts: does it compute a loss (a call whose
/// name says so: `*loss*`, `*cross_entropy*`, `kl_div`, `nll`, `dice`), and which attributes of
/// `self` it calls (sorted, once each).
type ClassCalls = FxHashMap<TextSize, (bool, Vec<Box<str>>)>;

/// One walk of the whole file for two facts: the qualified names (through the module's
/// imports) of the names and attribute chains compared anywhere in it (see
/// [`FileSummary::compared_refs`]; only when `compares`), and what each class body calls
/// ([`ClassCalls`]).
fn file_walk(scopes: &Scopes, body: &[Stmt], compares: bool) -> (Vec<Box<str>>, ClassCalls) {
    #[derive(Default)]
    struct Calls<'x> {
        computes_loss: bool,
        self_calls: Vec<&'x str>,
    }
    struct W<'s, 'x> {
        scopes: &'s Scopes,
        compares: bool,
        refs: Vec<Box<str>>,
        /// Every class met, with what its body calls.
        classes: Vec<(TextSize, Calls<'x>)>,
        /// The classes whose body is being walked (indices in `classes`).
        open: Vec<usize>,
    }
    impl<'x> Visitor<'x> for W<'_, 'x> {
        fn visit_stmt(&mut self, stmt: &'x Stmt) {
            let Stmt::ClassDef(c) = stmt else {
                visitor::walk_stmt(self, stmt);
                return;
            };
            // As `walk_stmt` walks a class, but only its body counts as the class's own.
            for decorator in &c.decorator_list {
                self.visit_decorator(decorator);
            }
            if let Some(type_params) = &c.type_params {
                self.visit_type_params(type_params);
            }
            if let Some(arguments) = &c.arguments {
                self.visit_arguments(arguments);
            }
            self.open.push(self.classes.len());
            self.classes.push((c.start(), Calls::default()));
            self.visit_body(&c.body);
            self.open.pop();
        }

        fn visit_expr(&mut self, e: &'x Expr) {
            match e {
                Expr::Compare(c) if self.compares => {
                    for operand in std::iter::once(&*c.left).chain(c.comparators.iter()) {
                        if !matches!(operand, Expr::Name(_) | Expr::Attribute(_)) {
                            continue;
                        }
                        if let Some(q) = self.scopes.resolve(operand) {
                            if q.contains('.') && !super::summary_is_external(&q) {
                                self.refs.push(q.into());
                            }
                        }
                    }
                }
                Expr::Call(c) if !self.open.is_empty() => {
                    let (last, self_call) = match &*c.func {
                        Expr::Name(n) => (n.id.as_str(), false),
                        Expr::Attribute(a) => {
                            (a.attr.as_str(), helpers::name_of(&a.value) == Some("self"))
                        }
                        _ => ("", false),
                    };
                    let loss = helpers::contains_short(last, "loss")
                        || helpers::contains_short(last, "cross_entropy")
                        || matches!(last, "kl_div" | "nll" | "dice");
                    for &i in &self.open {
                        let calls = &mut self.classes[i].1;
                        if self_call {
                            calls.self_calls.push(last);
                        }
                        calls.computes_loss |= loss;
                    }
                }
                _ => {}
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut w = W {
        scopes,
        compares,
        refs: Vec::new(),
        classes: Vec::new(),
        open: Vec::new(),
    };
    w.visit_body(body);
    w.refs.sort_unstable();
    w.refs.dedup();
    let classes = w
        .classes
        .into_iter()
        .map(|(at, mut v)| {
            v.self_calls.sort_unstable();
            v.self_calls.dedup();
            let self_calls = v.self_calls.into_iter().map(Box::from).collect();
            (at, (v.computes_loss, self_calls))
        })
        .collect();
    (w.refs, classes)
}

fn module_level_defs(body: &[Stmt]) -> FxHashMap<String, bool> {
    // name -> is a class
    let mut m = FxHashMap::default();
    fn walk(body: &[Stmt], m: &mut FxHashMap<String, bool>) {
        for s in body {
            match s {
                Stmt::FunctionDef(f) => {
                    m.insert(f.name.to_string(), false);
                }
                Stmt::ClassDef(c) => {
                    m.insert(c.name.to_string(), true);
                }
                Stmt::If(i) => {
                    walk(&i.body, m);
                    for c in &i.elif_else_clauses {
                        walk(&c.body, m);
                    }
                }
                Stmt::Try(t) => {
                    walk(&t.body, m);
                    walk(&t.orelse, m);
                }
                _ => {}
            }
        }
    }
    walk(body, &mut m);
    m
}

/// The module-level functions defined more than once (a notebook's later cell redefining
/// `get_model`), with where each `def` starts, in source order.
fn redefined_functions(body: &[Stmt]) -> FxHashMap<String, Vec<u32>> {
    // Borrowed names first (every file runs this): an owned entry only for a redefinition.
    let mut defs: Vec<(&str, u32)> = body
        .iter()
        .filter_map(|s| match s {
            Stmt::FunctionDef(f) => Some((f.name.as_str(), f.range.start().to_u32())),
            _ => None,
        })
        .collect();
    defs.sort_unstable();
    let mut m: FxHashMap<String, Vec<u32>> = FxHashMap::default();
    for w in defs.windows(2) {
        if w[0].0 == w[1].0 {
            let starts = m.entry(w[0].0.to_string()).or_default();
            if starts.last() != Some(&w[0].1) {
                starts.push(w[0].1);
            }
            starts.push(w[1].1);
        }
    }
    m
}

struct Builder<'s> {
    text: &'s str,
    scopes: Scopes,
    classes: &'s ModuleClasses,
    module_kinds: &'s KindTable,
    flow: Option<&'s dataflow::Summaries>,
    out: FileSummary,
    module_defs: FxHashMap<String, bool>,
    /// See [`redefined_functions`].
    redefined: FxHashMap<String, Vec<u32>>,
    /// The classes the function being summarised defines in its own body: name, where the
    /// `class` statement starts (see [`Ref::DefAt`]).
    local_classes: Vec<(String, u32)>,
    /// The file's own decorators that turn autograd off (see
    /// [`dataflow::grad_off_decorators`]).
    grad_off_decorators: Vec<String>,
    /// What each class body calls, by where the class starts (see [`file_walk`]).
    class_calls: ClassCalls,
    /// The scopes collected, when the caller keeps them for the checker.
    kept: Option<KeptScopes>,
    /// The containers the suite being summarised changes in place (see
    /// [`FileSummary::mutated`]): a dict literal bound to one of them is not a registry.
    body_mutated: Vec<Box<str>>,
    /// Words the per-function and per-class text tests look for, found in the whole file
    /// once: a body is searched only when its file has the word (most files have none).
    words: FileWords,
    /// The attributes of the class being summarised that its `__init__` assigns an instance of
    /// a project class (`self.saver = Saver(...)`, and no method assigns otherwise): what
    /// `self.<attr>.<method>(...)` is called on (see [`Ref::Held`]).
    held: Vec<(Box<str>, Ref)>,
}

/// Whether the file's text holds each word a definition's text is tested for (see
/// [`Builder::words`]).
struct FileWords {
    classifier: bool,
    features: bool,
    volatile: bool,
    declares_state: bool,
}

impl FileWords {
    fn of(text: &str) -> Self {
        let has = |w: &[u8]| memchr::memmem::find(text.as_bytes(), w).is_some();
        FileWords {
            classifier: has(b".classifier"),
            features: has(b".features"),
            volatile: has(b"volatile"),
            declares_state: has(b"Parameter") || has(b"register_") || has(b"buffer"),
        }
    }
}

/// Names visible to the function being summarised: its own nested defs (closures) by index.
type Nested = [(String, u32)];

/// Words that name a training event in a function's text (cheap gate for the flow analysis).
static EVENTS: WordSet = WordSet::new(EVENT_WORDS);
const EVENT_WORDS: &[&str] = &[
    "backward",
    ".step(",
    "zero_grad",
    ".grad",
    ".eval(",
    ".train(",
    "clip_grad",
    "scale(",
    "unscale_",
    ".update(",
];

impl Builder<'_> {
    fn names_training_event(&self, f: &ast::StmtFunctionDef) -> bool {
        let r = f.range();
        let Some(t) = self.text.get(r.start().to_usize()..r.end().to_usize()) else {
            return false;
        };
        EVENTS.any_in(t.as_bytes())
    }

    /// Walk a suite for definitions (functions, classes), summarising each.
    fn defs(&mut self, body: &[Stmt], parent: Option<u32>, class: Option<u32>, nested: &Nested) {
        for stmt in body {
            match stmt {
                Stmt::FunctionDef(f) => {
                    self.function(stmt, f, parent, class, nested);
                }
                Stmt::ClassDef(c) => self.class(c, parent),
                Stmt::If(i) => {
                    self.defs(&i.body, parent, class, nested);
                    for c in &i.elif_else_clauses {
                        self.defs(&c.body, parent, class, nested);
                    }
                }
                Stmt::Try(t) => {
                    self.defs(&t.body, parent, class, nested);
                    self.defs(&t.orelse, parent, class, nested);
                }
                Stmt::With(w) => self.defs(&w.body, parent, class, nested),
                _ => {}
            }
        }
    }

    fn class(&mut self, c: &ast::StmtClassDef, parent: Option<u32>) {
        let idx = self.out.classes.len() as u32;
        let bases = c.bases().iter().filter_map(|b| self.reference(b)).collect();
        let name = c.name.as_str();
        let forward_value = self.flow.and_then(|s| s.forward(name));
        let forward_props = forward_value.map(props_of).unwrap_or_default();
        let forward_elements = forward_value
            .and_then(|v| v.elements.as_deref())
            .map(|els| els.iter().map(props_of).collect::<Vec<_>>())
            .filter(|els| els.iter().any(|e| !e.is_empty()))
            .unwrap_or_default();
        let direct_torch_module = c
            .bases()
            .iter()
            .any(|b| self.scopes.resolve(b).is_some_and(|q| is_module_base(&q)));
        let direct_dataset = c
            .bases()
            .iter()
            .any(|b| self.scopes.resolve(b).is_some_and(|q| is_dataset_base(&q)));
        self.out.classes.push(ClassSummary {
            name: name.into(),
            range: c.range(),
            bases,
            local_module: self.classes.is_module(name) || direct_torch_module,
            local_dataset: self.classes.is_dataset(name) || direct_dataset,
            methods: Vec::new(),
            attrs: Vec::new(),
            forward_props,
            forward_elements,
            mode_layer: None,
            mode_layer_at: None,
            submodules: Vec::new(),
            untrained: None,
            declares_state: self.words.declares_state && {
                let t = self
                    .text
                    .get(c.range().start().to_usize()..c.range().end().to_usize())
                    .unwrap_or("");
                ["Parameter", "register_", "buffer"]
                    .iter()
                    .any(|w| memchr::memmem::find(t.as_bytes(), w.as_bytes()).is_some())
            },
            computes_loss: false,
            evals_attrs_by_name: false,
            dropout_rate: None,
            self_calls: Vec::new(),
        });
        let (computes_loss, self_calls) = self.class_calls.remove(&c.start()).unwrap_or_default();
        self.out.classes[idx as usize].computes_loss = computes_loss;
        self.out.classes[idx as usize].self_calls = self_calls;
        let held = self.held_attributes(c);
        let outer_held = std::mem::replace(&mut self.held, held);
        let scope = Scope::collect(ScopeKind::Class, &c.body, None, &self.scopes);
        self.scopes.push(scope);
        self.defs(&c.body, parent, Some(idx), &[]);
        self.pop_scope(c.start());
        self.held = outer_held;
        // Train/eval-sensitive layers and sub-modules built in the methods (recorded while
        // each method's body was walked).
        let methods: Vec<u32> = self.out.classes[idx as usize]
            .methods
            .iter()
            .map(|(_, i)| *i)
            .collect();
        let mut layer = None;
        let mut subs: Vec<Ref> = Vec::new();
        for m in methods {
            let f = &self.out.functions[m as usize];
            join_layer(&mut layer, f.mode_layer);
            subs.extend(
                f.builds
                    .iter()
                    .filter(|r| !matches!(r, Ref::Local(n) if &**n == name))
                    .filter(|r| !f.mode_free_builds.contains(r))
                    .cloned(),
            );
        }
        subs.sort_by(ref_order);
        subs.dedup();
        // What still changes with the mode of an instance never switched with `train()`, when
        // `__init__` holds part of what it builds in eval mode and no method calls `train()`.
        let mut untrained = self.out.classes[idx as usize]
            .methods
            .iter()
            .find(|(n, _)| &**n == "__init__")
            .and_then(|(_, i)| self.out.functions[*i as usize].untrained.as_deref())
            .filter(|_| memchr::memmem::find(self.text[c.range()].as_bytes(), b".train(").is_none())
            .map(|init| {
                let mut u = Untrained::default();
                for (n, m) in &self.out.classes[idx as usize].methods {
                    let f = &self.out.functions[*m as usize];
                    let (l, b) = if &**n == "__init__" {
                        (init.layer, &init.builds[..])
                    } else {
                        (f.mode_layer, &f.builds[..])
                    };
                    join_layer(&mut u.layer, l);
                    u.builds.extend(
                        b.iter()
                            .filter(|r| !matches!(r, Ref::Local(n) if &**n == name))
                            .cloned(),
                    );
                }
                u.builds.sort_by(ref_order);
                u.builds.dedup();
                u
            });
        // Dropout / BatchNorm held only by attributes that `forward` and the other methods never
        // read (a classifier head kept from the original network by a feature-map extractor
        // whose `forward` runs `self.features` alone, a `self.dropout` defined and never
        // applied): switching the mode cannot change what the class computes.
        if layer.is_some() && self.mode_layers_unused(c) {
            layer = None;
            if let Some(u) = &mut untrained {
                u.layer = None;
            }
        }
        let dropout_rate = match layer {
            Some(("Dropout", _)) if subs.is_empty() => self.dropout_rate(c).map(Box::new),
            _ => None,
        };
        let cs = &mut self.out.classes[idx as usize];
        cs.mode_layer = layer.map(|(k, _)| k);
        cs.mode_layer_at = layer.map(|(_, r)| r);
        cs.untrained = untrained.map(Box::new);
        cs.submodules = subs;
        cs.dropout_rate = dropout_rate;
    }

    fn function(
        &mut self,
        anchor: &Stmt,
        f: &ast::StmtFunctionDef,
        parent: Option<u32>,
        class: Option<u32>,
        nested_outer: &Nested,
    ) -> u32 {
        let idx = self.out.functions.len() as u32;
        let params: Vec<Box<str>> = f
            .parameters
            .iter()
            .map(|p| p.name().as_str().into())
            .collect();
        let annotations = f
            .parameters
            .iter()
            .map(|p| {
                p.annotation().and_then(|a| match a {
                    Expr::Subscript(s) => self.reference(&s.value),
                    Expr::StringLiteral(_) => None,
                    e => self.reference(e),
                })
            })
            .collect();
        let no_grad = dataflow::decorated_no_grad(f, &self.scopes)
            || dataflow::decorated_by(f, &self.grad_off_decorators);
        let flow_return = match (class, parent) {
            (None, Some(0)) => self.flow.and_then(|s| s.function(f.name.as_str())),
            _ => None,
        };
        let return_props = flow_return.map(props_of).unwrap_or_default();
        let return_forward_props = flow_return
            .and_then(|v| v.instance.as_ref())
            .map(|i| props_of(&i.returns))
            .unwrap_or_default();
        self.out.functions.push(FunctionSummary {
            name: f.name.as_str().into(),
            range: f.range(),
            class,
            parent,
            usage: vec![Usage::default(); params.len()],
            attr_usage: ThinVec::new(),
            accumulated_params: ThinVec::new(),
            params,
            required_params: required_params(&f.parameters),
            positional_params: u16::try_from(
                f.parameters.posonlyargs.len() + f.parameters.args.len(),
            )
            .unwrap_or(u16::MAX),
            param_defaults: f
                .parameters
                .iter()
                .map(|p| match p {
                    ast::AnyParameterRef::Variadic(_) => ParamDefault::Variadic,
                    ast::AnyParameterRef::NonVariadic(p) => match p.default.as_deref() {
                        None => ParamDefault::Required,
                        Some(d) => ParamDefault::Given(Lit::of(d)),
                    },
                })
                .collect(),
            annotations,
            no_grad,
            // Set below, with the function's own imports in scope.
            volatile_inputs: false,
            returns: Val::Unknown,
            return_props: return_props.into(),
            return_forward_props: return_forward_props.into(),
            returns_differentiated: false,
            returns_head_replaced: false,
            events: ThinVec::new(),
            calls: Vec::new(),
            instance_calls: ThinVec::new(),
            no_grad_method_calls: ThinVec::new(),
            module_api_uses: ThinVec::new(),
            global_module_uses: ThinVec::new(),
            object_method_calls: ThinVec::new(),
            has_loop: false,
            grad_off_block: false,
            mode_layer: None,
            builds: ThinVec::new(),
            mode_free_builds: ThinVec::new(),
            untrained: None,
            frozen: ThinVec::new(),
            freezes_self: SelfFreeze::No,
            facts: Default::default(),
            locals: ThinVec::new(),
        });
        if let Some(c) = class {
            self.out.classes[c as usize]
                .methods
                .push((f.name.as_str().into(), idx));
        }
        let scope = Scope::collect(
            ScopeKind::Function,
            &f.body,
            Some(&f.parameters),
            &self.scopes,
        );
        self.scopes.push(scope);
        self.out.functions[idx as usize].volatile_inputs =
            self.builds_volatile_variable(f.range, &f.body);
        // Closures first, so calls to them resolve.
        let mut nested: Vec<(String, u32)> = nested_outer.to_vec();
        let mut own = Vec::new();
        collect_defs(&f.body, &mut own);
        let first_nested = self.out.functions.len() as u32;
        let _ = first_nested;
        for d in own {
            let Stmt::FunctionDef(df) = d else { continue };
            let i = self.function(d, df, Some(idx), None, &nested);
            nested.retain(|(n, _)| n != df.name.as_str());
            nested.push((df.name.to_string(), i));
        }
        let mut own_classes = Vec::new();
        for st in &f.body {
            if let Stmt::ClassDef(c) = st {
                self.class(c, Some(idx));
                own_classes.push((c.name.to_string(), c.range.start().to_u32()));
            }
        }
        // Calls of a class the body defines (`class Net(nn.Module): ...` then `Net()` inside
        // a builder) name that class.
        let outer_classes = std::mem::replace(&mut self.local_classes, own_classes);
        let param_names: Vec<&str> = f.parameters.iter().map(|p| p.name().as_str()).collect();
        let mut mutated = Vec::new();
        mutated_names(&f.body, &mut mutated);
        self.out.mutated.extend(mutated.iter().cloned());
        let outer_mutated = std::mem::replace(&mut self.body_mutated, mutated);
        let vals = self.assignments(&f.body, &param_names, Some(&nested));
        let mut locals: ThinVec<(Box<str>, Val)> = vals
            .iter()
            .filter(|(_, v)| v.is_computed_local())
            .map(|(n, v)| (Box::from(n.as_str()), v.clone()))
            .collect();
        locals.sort_by(|a, b| a.0.cmp(&b.0));
        self.out.functions[idx as usize].locals = locals;
        // Returns.
        let mut returns: Option<Val> = None;
        for_each_own_stmt(&f.body, &mut |st| {
            if let Stmt::Return(r) = st {
                let v = match &r.value {
                    // `return ResNet`: a factory of classes names them uncalled.
                    Some(e) => self.callee_val(e, &param_names, &vals, Some(&nested)),
                    None => Val::None,
                };
                returns = Some(match returns.take() {
                    None => v,
                    Some(prev) => prev.join(v),
                });
            }
        });
        self.out.functions[idx as usize].returns = returns.unwrap_or(Val::None);
        self.fill_body(idx, &f.body, &param_names, Some(&nested), &vals, no_grad);
        // Training events (the flow analysis of the body, without inlining), in functions
        // whose text names one.
        if (self.out.vocab.torch || self.out.vocab.training) && self.names_training_event(f) {
            self.events(idx, anchor, f, class, &param_names, &vals, &nested);
            if self.out.functions[idx as usize]
                .events
                .iter()
                .any(|e| e.kind == EventKind::Backward)
            {
                self.out.functions[idx as usize].returns_differentiated =
                    returns_differentiated(&f.body);
            }
            // `getattr(self, name).eval()`: a method switching attributes chosen by name.
            if let Some(c) = class {
                if self.text[f.range()].contains("getattr(self") && evals_self_getattr(&f.body) {
                    self.out.classes[c as usize].evals_attrs_by_name = true;
                }
            }
            // A module it returns in eval mode, from its own eval()/train() events.
            let g = &mut self.out.functions[idx as usize];
            if !g.return_props.iter().any(|p| p.prop == Prop::EvalMode) {
                if let Some(at) = returns_in_eval_mode(&f.body, &g.events, &param_names) {
                    g.return_props.push(PropFact {
                        prop: Prop::EvalMode,
                        definite: true,
                        op: "eval()",
                        origin: at,
                    });
                }
            }
        } else if (self.out.vocab.torch || self.out.vocab.training)
            && param_names.iter().any(|p| *p != "self")
        {
            // A helper whose text names no training event may still switch a model it is
            // given through a method of the model (`decoder.greedy_decoding(x)`, whose body
            // starts with `self.eval()`): its method calls on parameters, followed to known
            // project classes only.
            let mut calls = Vec::new();
            helpers::for_each_own_call(&f.body, false, &mut |call| {
                let Some((recv, method)) = object_method(call) else {
                    return;
                };
                let Some(key) = flow::object_key(recv) else {
                    return;
                };
                let root = key.split(['.', '[']).next().unwrap_or(&key);
                let Some(i) = param_names.iter().position(|p| *p == root) else {
                    return;
                };
                calls.push(ObjectMethodCall {
                    target: Target::Param(i as u16, key[root.len()..].into()),
                    recv: self.val(recv, &param_names, &vals, Some(&nested)),
                    name: method.into(),
                    range: call.range(),
                    known_only: true,
                });
            });
            self.out.functions[idx as usize].object_method_calls = calls.into();
        }
        // Wave-3 facts (see `facts_extract`).
        self.function_facts(idx, f, class, &param_names, &vals, Some(&nested), no_grad);
        // `self.<attr> = value` in methods.
        if let Some(c) = class {
            let mut attrs = Vec::new();
            for_each_own_stmt(&f.body, &mut |st| {
                let (targets, value): (Vec<&Expr>, &Expr) = match st {
                    Stmt::Assign(a) => (a.targets.iter().collect(), &a.value),
                    Stmt::AnnAssign(a) => match &a.value {
                        Some(v) => (vec![&*a.target], v),
                        None => return,
                    },
                    _ => return,
                };
                for t in targets {
                    if let Some(attr) = helpers::self_attribute(t) {
                        let v = self.val(value, &param_names, &vals, Some(&nested));
                        attrs.push((Box::<str>::from(attr), idx, v));
                    } else if let Expr::Tuple(tt) = t {
                        // `self.enc, self.dec = load_model(path)`
                        if tt.elts.iter().any(|e| matches!(e, Expr::Starred(_))) {
                            continue;
                        }
                        let v = self.val(value, &param_names, &vals, Some(&nested));
                        for (i, e) in tt.elts.iter().enumerate() {
                            let Some(attr) = helpers::self_attribute(e) else {
                                continue;
                            };
                            let ev = match &v {
                                Val::Tuple(els) => els.get(i).cloned().unwrap_or_default(),
                                Val::Call { .. } | Val::Invoke(_) | Val::Output(_) => {
                                    u16::try_from(i).map_or(Val::Unknown, |i| {
                                        Val::Item(Box::new(v.clone()), Some(i))
                                    })
                                }
                                _ => Val::Unknown,
                            };
                            attrs.push((Box::<str>::from(attr), idx, ev));
                        }
                    }
                }
            });
            self.out.classes[c as usize].attrs.extend(attrs);
        }
        self.body_mutated = outer_mutated;
        self.local_classes = outer_classes;
        self.pop_scope(f.start());
        idx
    }

    /// Leave the scope of the definition starting at `start`, keeping it when asked.
    fn pop_scope(&mut self, start: TextSize) {
        match &mut self.kept {
            Some(k) => {
                if let Some(s) = self.scopes.pop_scope() {
                    k.keep(start.to_u32(), s);
                }
            }
            None => self.scopes.pop(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn events(
        &mut self,
        idx: u32,
        anchor: &Stmt,
        f: &ast::StmtFunctionDef,
        class: Option<u32>,
        params: &[&str],
        vals: &FxHashMap<String, Val>,
        nested: &Nested,
    ) {
        self.events_of(
            idx,
            anchor,
            &f.body,
            Some(f),
            class,
            params,
            vals,
            Some(nested),
        );
    }

    /// Training events of the module body itself (function 0): a notebook's or script's
    /// top-level loop (`for x, y in loader: ... loss.backward(); optimizer.step()`).
    fn module_events(&mut self, body: &[Stmt], vals: &FxHashMap<String, Val>) {
        let Some(anchor) = body.first() else { return };
        if !(self.out.vocab.torch || self.out.vocab.training) {
            return;
        }
        if !EVENTS.any_in(self.text.as_bytes()) {
            return;
        }
        self.events_of(0, anchor, body, None, None, &[], vals, None);
    }

    #[allow(clippy::too_many_arguments)]
    fn events_of(
        &mut self,
        idx: u32,
        anchor: &Stmt,
        body: &[Stmt],
        f: Option<&ast::StmtFunctionDef>,
        class: Option<u32>,
        params: &[&str],
        vals: &FxHashMap<String, Val>,
        nested: Option<&Nested>,
    ) {
        let local = match f {
            Some(f) => KindTable::infer(
                &f.body,
                Some(&f.parameters),
                &self.scopes,
                self.classes,
                Some(self.module_kinds),
            ),
            // The module's names are its globals (`self.module_kinds`).
            None => KindTable::default(),
        };
        let attrs = class.map(|_| {
            // `self.<attr>` kinds of the enclosing class: reuse the class statement's
            // attribute inference only through the linter; here the summary records
            // targets by name and the model supplies kinds.
            KindTable::default()
        });
        let input = FlowInput {
            kinds: KindContext {
                local: &local,
                outer: Some(self.module_kinds),
                attrs: attrs.as_ref(),
                scopes: &self.scopes,
                classes: self.classes,
            },
            functions: &[],
            methods: &[],
            current: f,
            class: None,
        };
        let events = flow::analyze_suite(body, anchor, &input);
        let mut out = Vec::new();
        for e in &events {
            if e.kind == EventKind::Escape {
                continue;
            }
            let (target, role) = match e.target.as_ref().or(e.scaler.as_ref()) {
                Some(o) => (
                    target_of(&o.key, params, &local, self.module_kinds),
                    RoleTag::from(&o.role),
                ),
                None => (Target::None, RoleTag::Unknown),
            };
            out.push(SumEvent {
                kind: e.kind,
                target,
                role,
                conditional: e.guards.iter().any(|g| g.is_condition()),
                periodic: e.guards.iter().any(Guard::is_periodic),
                in_loop: e.in_nested_loop(),
                range: e.range,
            });
        }
        self.out.functions[idx as usize].events = out.into();
        let mut calls = Vec::new();
        helpers::for_each_own_call(body, false, &mut |call| {
            let Some((recv, method)) = object_method(call) else {
                return;
            };
            let Some(key) = flow::object_key(recv) else {
                return;
            };
            calls.push(ObjectMethodCall {
                target: target_of(&key, params, &local, self.module_kinds),
                recv: self.val(recv, params, vals, nested),
                name: method.into(),
                range: call.range(),
                known_only: false,
            });
        });
        self.out.functions[idx as usize].object_method_calls = calls.into();
    }

    /// Values of the names assigned in a suite (flow-insensitive; conflicting assignments
    /// give `Unknown`). Two rounds, so later names built from earlier ones settle.
    /// See [`FileSummary::rebound`]: each binding statement's own value (what
    /// [`Builder::assignments`] gives for that statement alone), for the names bound more
    /// than once.
    fn rebound(&self, body: &[Stmt]) -> Vec<(Box<str>, u32, bool, Val)> {
        let top: rustc_hash::FxHashSet<TextSize> = body.iter().map(Ranged::start).collect();
        let mut stmts: FxHashMap<&str, Vec<&Stmt>> = FxHashMap::default();
        for_each_own_stmt(body, &mut |st| {
            let Stmt::Assign(a) = st else { return };
            for t in &a.targets {
                let names: Vec<&str> = match t {
                    Expr::Name(n) => vec![n.id.as_str()],
                    Expr::Tuple(tt) => tt
                        .elts
                        .iter()
                        .filter_map(|e| match e {
                            Expr::Name(n) => Some(n.id.as_str()),
                            _ => None,
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                for n in names {
                    stmts.entry(n).or_default().push(st);
                }
            }
        });
        let mut out = Vec::new();
        for (name, sts) in stmts {
            if sts.len() < 2 {
                continue;
            }
            for st in sts {
                let vals = self.assignments(std::slice::from_ref(st), &[], None);
                let v = vals.get(name).cloned().unwrap_or_default();
                out.push((
                    Box::from(name),
                    st.start().to_u32(),
                    top.contains(&st.start()),
                    v,
                ));
            }
        }
        out.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        out
    }

    fn assignments(
        &self,
        body: &[Stmt],
        params: &[&str],
        nested: Option<&Nested>,
    ) -> FxHashMap<String, Val> {
        // One round in source order: names are assigned before they are used. The values
        // read while it runs are those of no earlier round (`vals`, empty); `next` is built
        // in place, so it is the result.
        let vals: FxHashMap<String, Val> = FxHashMap::default();
        let mut next: FxHashMap<String, Val> = FxHashMap::default();
        {
            for_each_own_stmt(body, &mut |st| {
                // `model = cls(...)` after `cls = MODELS.get(name)` or
                // `cls = get_model_class(name)` earlier in the suite.
                let chained = match st {
                    Stmt::Assign(a) => match &*a.value {
                        Expr::Call(c) => match &*c.func {
                            // `out = model(x)` after `model = VAE()`: what the module's
                            // forward gives (`Val::Output`).
                            Expr::Name(n) => next
                                .get(n.id.as_str())
                                .map(|v| self.call_of_local(v))
                                .filter(|v| *v != Val::Unknown),
                            _ => None,
                        },
                        _ => None,
                    },
                    _ => None,
                };
                // A call's value, with the arguments bound earlier in the suite to modules
                // built on the spot (read before `bind` borrows the bindings).
                let assigned = match st {
                    Stmt::Assign(a)
                        if chained.is_none()
                            && matches!(&*a.value, Expr::Call(_))
                            && matches!(a.targets.as_slice(), [Expr::Name(n)]
                                if !rebinds_itself(&a.value, n.id.as_str())) =>
                    {
                        Some(with_earlier_args(
                            self.val(&a.value, params, &vals, nested),
                            &a.value,
                            &next,
                        ))
                    }
                    _ => None,
                };
                let mut bind = |name: &str, v: Val| {
                    // The name is allocated only at its first binding.
                    match next.get_mut(name) {
                        Some(e) => *e = std::mem::take(e).join(v),
                        None => {
                            next.insert(name.to_string(), v);
                        }
                    }
                };
                match st {
                    // `model = model.to(device)`: the same object, whatever it was bound to
                    // before (a class instance, a parameter); the binding stands.
                    Stmt::Assign(a)
                        if matches!(a.targets.as_slice(), [Expr::Name(n)]
                            if rebinds_itself(&a.value, n.id.as_str())) => {}
                    // Only names are bound (`self.x = ...`, `d[k] = ...` bind none).
                    Stmt::Assign(a)
                        if !a
                            .targets
                            .iter()
                            .any(|t| matches!(t, Expr::Name(_) | Expr::Tuple(_))) => {}
                    Stmt::Assign(a) => {
                        let v = match (chained, assigned) {
                            (Some(v), _) => v,
                            (None, Some(v)) => v,
                            (None, None) => self.val(&a.value, params, &vals, nested),
                        };
                        for t in &a.targets {
                            match t {
                                Expr::Name(n) => bind(n.id.as_str(), v.clone()),
                                Expr::Tuple(tt) => {
                                    // After a starred target the positions are not known.
                                    let starred = tt
                                        .elts
                                        .iter()
                                        .position(|e| matches!(e, Expr::Starred(_)))
                                        .unwrap_or(tt.elts.len());
                                    for (i, e) in tt.elts.iter().enumerate() {
                                        if let Expr::Name(n) = e {
                                            // `loss, opt = fit(net, opt, loader)`: a helper
                                            // handing back the object it was given; the
                                            // earlier binding stands.
                                            if helpers::call_passes_name(&a.value, n.id.as_str()) {
                                                continue;
                                            }
                                            let ev = match &v {
                                                Val::Tuple(els) => {
                                                    els.get(i).cloned().unwrap_or_default()
                                                }
                                                // `enc, dec = load_model(path)`: the element
                                                // of what the call returns.
                                                Val::Call { .. }
                                                | Val::Invoke(_)
                                                | Val::Output(_)
                                                    if i < starred =>
                                                {
                                                    u16::try_from(i).map_or(Val::Unknown, |i| {
                                                        Val::Item(Box::new(v.clone()), Some(i))
                                                    })
                                                }
                                                _ => Val::Unknown,
                                            };
                                            bind(n.id.as_str(), ev);
                                        }
                                    }
                                }
                                _ => {}
                            }
                        }
                    }
                    Stmt::AnnAssign(a) => {
                        if let (Expr::Name(n), Some(v)) = (&*a.target, &a.value) {
                            bind(n.id.as_str(), self.val(v, params, &vals, nested));
                        }
                    }
                    Stmt::For(f) => {
                        if let Expr::Name(n) = &*f.target {
                            bind(n.id.as_str(), Val::Unknown);
                        }
                    }
                    Stmt::With(w) => {
                        for item in &w.items {
                            if let Some(Expr::Name(n)) = item.optional_vars.as_deref() {
                                bind(n.id.as_str(), Val::Unknown);
                            }
                        }
                    }
                    _ => {}
                }
            });
        }
        // A parameter re-bound in the body is no longer the parameter.
        next
    }

    /// A reference for a name or attribute chain (classes, bases, annotations, callees).
    fn reference(&self, expr: &Expr) -> Option<Ref> {
        if let Some(q) = self.scopes.resolve(expr) {
            return Some(Ref::Qualified(q.into()));
        }
        match expr {
            Expr::Name(n) if self.module_defs.contains_key(n.id.as_str()) => {
                Some(Ref::Local(n.id.as_str().into()))
            }
            _ => None,
        }
    }

    fn val(
        &self,
        expr: &Expr,
        params: &[&str],
        vals: &FxHashMap<String, Val>,
        nested: Option<&Nested>,
    ) -> Val {
        match expr {
            Expr::Name(n) => {
                let id = n.id.as_str();
                if let Some(v) = vals.get(id) {
                    return v.clone();
                }
                if let Some(i) = params.iter().position(|p| *p == id) {
                    return Val::Param(i as u16);
                }
                if id == "None" {
                    return Val::None;
                }
                // A module-level object of this file, used from a function.
                match self.module_kinds.get(id) {
                    Some(k) if *k != Kind::Unknown => Val::Kind(k.clone()),
                    _ => Val::Unknown,
                }
            }
            Expr::NoneLiteral(_) => Val::None,
            Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => {
                Val::SelfAttr(a.attr.as_str().into())
            }
            Expr::Tuple(t) => Val::Tuple(
                t.elts
                    .iter()
                    .map(|e| self.val(e, params, vals, nested))
                    .collect(),
            ),
            Expr::List(t) => Val::Tuple(
                t.elts
                    .iter()
                    .map(|e| self.val(e, params, vals, nested))
                    .collect(),
            ),
            Expr::Call(call) => self.call_val(call, params, vals, nested),
            Expr::If(i) => self
                .val(&i.body, params, vals, nested)
                .join(self.val(&i.orelse, params, vals, nested)),
            Expr::Subscript(sub) => {
                let index = match &*sub.slice {
                    Expr::NumberLiteral(ast::ExprNumberLiteral {
                        value: ast::Number::Int(i),
                        ..
                    }) => i.as_u64().and_then(|i| u16::try_from(i).ok()),
                    _ => None,
                };
                match (self.val(&sub.value, params, vals, nested), index) {
                    (Val::Tuple(els), Some(i)) => {
                        els.get(usize::from(i)).cloned().unwrap_or_default()
                    }
                    // `load_model(path)[0]`
                    (v @ (Val::Call { .. } | Val::Invoke(_) | Val::Output(_)), Some(i)) => {
                        Val::Item(Box::new(v), Some(i))
                    }
                    // `MODELS[args.arch]`: a registry of this file or of the project.
                    (Val::Unknown, _) => match self.registry_ref(&sub.value, params, vals) {
                        Some(r) => Val::Item(Box::new(r), None),
                        None => Val::Unknown,
                    },
                    (v @ Val::Dict(_), _) => self
                        .registry_dict(&sub.value, v)
                        .map_or(Val::Unknown, |r| Val::Item(Box::new(r), None)),
                    _ => Val::Unknown,
                }
            }
            Expr::Dict(d) => self.registry_literal(d, params, vals),
            _ => Val::Unknown,
        }
    }

    /// The value of an expression where a callee may be named uncalled (a returned value, a
    /// registry's value): a project or library class, function or object by name, when
    /// [`Builder::val`] knows nothing else of it.
    fn callee_val(
        &self,
        expr: &Expr,
        params: &[&str],
        vals: &FxHashMap<String, Val>,
        nested: Option<&Nested>,
    ) -> Val {
        match self.val(expr, params, vals, nested) {
            Val::Unknown => match expr {
                Expr::Name(n)
                    if params.contains(&n.id.as_str()) || vals.contains_key(n.id.as_str()) =>
                {
                    Val::Unknown
                }
                // A closure named uncalled (`return perform_step`: a factory of functions).
                Expr::Name(n) => {
                    match nested.and_then(|ns| ns.iter().rev().find(|(m, _)| m == n.id.as_str())) {
                        Some((_, i)) => Val::Ref(Ref::Nested(*i)),
                        None => self.reference(expr).map_or(Val::Unknown, Val::Ref),
                    }
                }
                Expr::Attribute(_) => self.reference(expr).map_or(Val::Unknown, Val::Ref),
                _ => Val::Unknown,
            },
            v => v,
        }
    }

    /// A registry a subscript or `.get(...)` reads: a module-level name of this file bound by
    /// assignment, or a name imported from a project module (`from models import MODELS`).
    /// The model decides whether it is a dict of classes that nothing mutates.
    fn registry_ref(
        &self,
        expr: &Expr,
        params: &[&str],
        vals: &FxHashMap<String, Val>,
    ) -> Option<Val> {
        let Expr::Name(n) = expr else { return None };
        let id = n.id.as_str();
        if params.contains(&id) || vals.contains_key(id) || self.module_defs.contains_key(id) {
            return None;
        }
        if let Some(q) = self.scopes.lookup_str(id) {
            return (!super::summary_is_external(q)).then(|| Val::Ref(Ref::Qualified(q.into())));
        }
        self.scopes
            .module_binds(id)
            .then(|| Val::Ref(Ref::Local(id.into())))
    }

    /// The registry a dict value `v` of `expr` stands for when read: a module-level name by
    /// reference (the model checks that no file changes it in place), a local name only when
    /// the suite does not change it in place, a literal itself.
    fn registry_dict(&self, expr: &Expr, v: Val) -> Option<Val> {
        match expr {
            Expr::Name(n) if self.scopes.module_binds(n.id.as_str()) => {
                Some(Val::Ref(Ref::Local(n.id.as_str().into())))
            }
            Expr::Name(n) if self.body_mutated.iter().any(|m| &**m == n.id.as_str()) => None,
            _ => Some(v),
        }
    }

    /// A dict literal whose values all name classes or builders (`{"resnet": ResNet, "mlp":
    /// MLP}`): a registry. Anything else (`**` entries, computed values) is unknown.
    fn registry_literal(
        &self,
        d: &ast::ExprDict,
        params: &[&str],
        vals: &FxHashMap<String, Val>,
    ) -> Val {
        if d.items.is_empty() || d.items.len() > MAX_JOIN {
            return Val::Unknown;
        }
        let mut out = Vec::with_capacity(d.items.len());
        for item in &d.items {
            if item.key.is_none() {
                return Val::Unknown;
            }
            match &item.value {
                Expr::Name(_) | Expr::Attribute(_) => {}
                _ => return Val::Unknown,
            }
            match self.callee_val(&item.value, params, vals, None) {
                v @ Val::Ref(_) => out.push(v),
                _ => return Val::Unknown,
            }
        }
        Val::Dict(out)
    }

    fn call_val(
        &self,
        call: &ExprCall,
        params: &[&str],
        vals: &FxHashMap<String, Val>,
        nested: Option<&Nested>,
    ) -> Val {
        let args = || -> (ThinVec<Val>, ThinVec<(Box<str>, Val)>) {
            let a = call
                .arguments
                .args
                .iter()
                .map(|e| match e {
                    Expr::Starred(_) => Val::Unknown,
                    e => self.val(e, params, vals, nested),
                })
                .collect();
            let k = call
                .arguments
                .keywords
                .iter()
                .filter_map(|k| {
                    k.arg.as_ref().map(|n| {
                        (
                            Box::from(n.as_str()),
                            self.val(&k.value, params, vals, nested),
                        )
                    })
                })
                .collect();
            (a, k)
        };
        // `MODELS.get(name)` of a registry of this file (an imported registry's `.get` is a
        // call the model resolves through the registry: see `ProjectModel::callees`).
        if let Some(("get", recv)) = helpers::method_call(call) {
            match self.val(recv, params, vals, nested) {
                v @ Val::Dict(_) => {
                    return self
                        .registry_dict(recv, v)
                        .map_or(Val::Unknown, |r| Val::Item(Box::new(r), None))
                }
                Val::Unknown => {
                    if let Some(r @ Val::Ref(Ref::Local(_))) = self.registry_ref(recv, params, vals)
                    {
                        return Val::Item(Box::new(r), None);
                    }
                }
                _ => {}
            }
        }
        // Callees the model resolves: a closure, a module-level def, a project import.
        if let Some(callee) = self.callee_ref(call, params, vals, nested) {
            let (args, kwargs) = args();
            return Val::Call {
                callee,
                args,
                kwargs,
            };
        }
        if let Some(q) = self.scopes.resolve(&call.func) {
            if matches!(
                q.as_str(),
                "torch.utils.data.DataLoader" | "torch.utils.data.dataloader.DataLoader"
            ) {
                let shuffle_arg = helpers::argument(call, "shuffle", 2);
                let sampler = helpers::argument(call, "sampler", 3)
                    .map(|s| self.val(s, params, vals, nested))
                    .unwrap_or(Val::None);
                return Val::Loader {
                    shuffle: shuffle_arg.and_then(helpers::is_truthy),
                    shuffle_given: shuffle_arg.is_some(),
                    sampler: Box::new(sampler),
                };
            }
            // `nn.DataParallel(net)` / `DistributedDataParallel(net, ...)`: the wrapper runs
            // the wrapped module's `forward` and passes `train()`/`eval()` to it, so it is
            // that module for what the model resolves (its class, layers and outputs).
            if crate::classes::is_data_parallel_wrapper(&q) {
                let inner = helpers::argument(call, "module", 0)
                    .map(|m| self.val(m, params, vals, nested))
                    .unwrap_or_default();
                if inner.may_be_module_object() {
                    return inner;
                }
            }
            if q.starts_with("torch.nn.") && is_module_base(&q) {
                if crate::classes::loss_call_reduces(&q, call) {
                    return Val::Loss(q.into());
                }
                return Val::Torch(q.into());
            }
        }
        // Module methods that return the module itself keep the receiver's value
        // (`model.to(device)` of a parameter is that parameter, `nn.Sequential(...).to(device)`
        // that torch module).
        if let Some((m, recv)) = helpers::method_call(call) {
            if crate::kinds::MODULE_SELF_METHODS.contains(&m) {
                let r = self.val(recv, params, vals, nested);
                if r.may_be_module_object() {
                    return r;
                }
            }
        }
        let kinds = KindContext {
            local: &KindTable::default(),
            outer: Some(self.module_kinds),
            attrs: None,
            scopes: &self.scopes,
            classes: self.classes,
        };
        match kinds.call_kind(call) {
            Kind::Unknown => self.invoked(call, params, vals, nested),
            k => Val::Kind(k),
        }
    }

    /// A call of a computed callee ([`Val::Invoke`]): a registry's value (`MODELS[name](...)`,
    /// `cls(...)` after `cls = MODELS.get(name)`), or what a call returns
    /// (`get_model_class(name)(**cfg)`, `cls(...)` after `cls = get_model_class(name)`).
    fn invoked(
        &self,
        call: &ExprCall,
        params: &[&str],
        vals: &FxHashMap<String, Val>,
        nested: Option<&Nested>,
    ) -> Val {
        match &*call.func {
            Expr::Call(_) | Expr::Subscript(_) => {
                let v = self.val(&call.func, params, vals, nested);
                match v {
                    Val::Call { .. } => Val::Invoke(Box::new(v)),
                    v if v.is_callee() => Val::Invoke(Box::new(v)),
                    _ => Val::Unknown,
                }
            }
            Expr::Name(n) => {
                let id = n.id.as_str();
                match vals.get(id) {
                    Some(v) => self.call_of_local(v),
                    // A parameter called (`def evaluate(model, x): return model(x)`).
                    None => match params.iter().position(|p| *p == id) {
                        Some(i) => u16::try_from(i)
                            .map_or(Val::Unknown, |i| Val::Output(Box::new(Val::Param(i)))),
                        // A module-level object of this file called from a function
                        // (`model = VAE()` at the top, `model(data)` in `train()`).
                        None if self.scopes.module_binds(id) => {
                            Val::Output(Box::new(Val::Ref(Ref::Local(id.into()))))
                        }
                        None => Val::Unknown,
                    },
                }
            }
            _ => Val::Unknown,
        }
    }

    /// What calling a local bound to `v` gives: an instance of what a computed callee may be
    /// ([`Builder::invoke_of`]), else the output of a module object (`out = model(x)` after
    /// `model = VAE()`: [`Val::Output`]).
    fn call_of_local(&self, v: &Val) -> Val {
        self.invoke_of(v).unwrap_or_else(|| output_of(v))
    }

    /// Calling a local bound to `v`: a registry's value or a class named uncalled
    /// (`cls = MODELS.get(name)`), or a factory's result (`cls = get_model_class(name)`),
    /// unless that call builds an instance of a class of this file or calls a method
    /// (`model = Net(); model(x)`).
    fn invoke_of(&self, v: &Val) -> Option<Val> {
        match v {
            v if v.is_callee() => Some(Val::Invoke(Box::new(v.clone()))),
            Val::Call { callee, .. } => match callee {
                Ref::Local(c)
                    if self
                        .module_defs
                        .get(&**c)
                        .copied()
                        .unwrap_or_else(|| c.starts_with(|c: char| c.is_ascii_uppercase())) =>
                {
                    None
                }
                Ref::Method(_) | Ref::Super(_) => None,
                // An imported class spelled as classes are (`model = Net(); model(x)`): its
                // instance, not a factory (keeps the summaries of training loops small).
                Ref::Qualified(q)
                    if q.rsplit('.')
                        .next()
                        .is_some_and(|n| n.starts_with(|c: char| c.is_ascii_uppercase())) =>
                {
                    None
                }
                _ => Some(Val::Invoke(Box::new(v.clone()))),
            },
            _ => None,
        }
    }

    /// [`ClassSummary::dropout_rate`] of a class: every call in its methods that builds a
    /// train/eval-sensitive layer is an `nn.Dropout` (1d/2d/3d) in `__init__` whose rate (`p`,
    /// first or by keyword) is one and the same parameter of `__init__`.
    fn dropout_rate(&self, c: &ast::StmtClassDef) -> Option<DropoutRate> {
        let init = helpers::function_defs(&c.body).find(|f| f.name.as_str() == "__init__")?;
        let mut name: Option<&str> = None;
        for f in helpers::function_defs(&c.body) {
            for call in crate::modes::calls_in(&f.body) {
                if self.layer_of_call(call).is_none() {
                    continue;
                }
                let q = self.scopes.resolve(&call.func)?;
                let dropout = matches!(
                    q.as_str(),
                    "torch.nn.Dropout"
                        | "torch.nn.Dropout1d"
                        | "torch.nn.Dropout2d"
                        | "torch.nn.Dropout3d"
                        | "torch.nn.modules.dropout.Dropout"
                );
                if !dropout || !std::ptr::eq(f, init) {
                    return None;
                }
                let rate = call
                    .arguments
                    .find_keyword("p")
                    .map(|k| &k.value)
                    .or_else(|| call.arguments.args.first())?;
                let Expr::Name(n) = rate else { return None };
                match name {
                    None => name = Some(n.id.as_str()),
                    Some(m) if m == n.id.as_str() => {}
                    Some(_) => return None,
                }
            }
        }
        let name = name?;
        // A parameter of `__init__` (not reassigned there: `dropout = dropout or 0.1`).
        if !crate::reaching::every_binding(&init.body, name).is_empty() {
            return None;
        }
        let params: Vec<_> = init.parameters.iter_non_variadic_params().skip(1).collect();
        let position = params
            .iter()
            .position(|p| p.parameter.name.as_str() == name)?;
        let default_zero = params[position]
            .default
            .as_deref()
            .is_some_and(helpers::is_literal_zero);
        Some(DropoutRate {
            name: name.into(),
            position: u16::try_from(position).ok()?,
            default_zero,
        })
    }

    /// The train/eval-sensitive layer family a call builds (`nn.Dropout(...)`, a pretrained
    /// torchvision model), without allocating for calls not rooted in a torch import.
    /// Does class `c` define `forward` and hold every train/eval-sensitive layer it builds in
    /// `self.<attr> = ...` assignments (the layer anywhere in the value) whose attributes no
    /// method other than construction and weight initialisation reads, with no method reaching its sub-modules by other
    /// means (`self.modules()`, `self.children()`, `getattr(self, ...)`, `self._modules`,
    /// iterating `self`)?
    fn mode_layers_unused(&self, c: &ast::StmtClassDef) -> bool {
        use ruff_python_ast::visitor::{self, Visitor};
        let methods: Vec<&ast::StmtFunctionDef> = helpers::function_defs(&c.body).collect();
        if !methods.iter().any(|f| f.name.as_str() == "forward") {
            return false;
        }
        // Every layer call of the class, and the attributes holding one.
        struct Layers<'b, 's> {
            b: &'b Builder<'s>,
            calls: usize,
        }
        impl<'a> Visitor<'a> for Layers<'_, '_> {
            fn visit_expr(&mut self, e: &'a Expr) {
                if let Expr::Call(call) = e {
                    if self.b.layer_of_call(call).is_some() {
                        self.calls += 1;
                    }
                }
                visitor::walk_expr(self, e);
            }
        }
        let mut all = Layers { b: self, calls: 0 };
        let mut held = Layers { b: self, calls: 0 };
        let mut attrs: Vec<&str> = Vec::new();
        for f in &methods {
            visitor::walk_body(&mut all, &f.body);
            helpers::for_each_own_stmt(&f.body, &mut |st: &Stmt| {
                if let Stmt::Assign(a) = st {
                    if let [Expr::Attribute(t)] = &*a.targets {
                        if helpers::name_of(&t.value) == Some("self") {
                            let before = held.calls;
                            held.visit_expr(&a.value);
                            if held.calls > before {
                                attrs.push(t.attr.as_str());
                            }
                        }
                    }
                }
            });
        }
        if attrs.is_empty() || held.calls != all.calls {
            return false;
        }
        // Reads of those attributes, or of the sub-modules wholesale, outside `__init__`.
        struct Reads<'x> {
            attrs: &'x [&'x str],
            found: bool,
            /// Parameters of the method walked with a falsy literal default
            /// (`forward(self, x, is_training=False)`): a block under `if is_training:` runs
            /// only when a caller asks for it, so the layers it applies are the caller's
            /// choice, not the module's mode.
            gates: Vec<&'x str>,
        }
        impl<'a> Visitor<'a> for Reads<'_> {
            fn visit_expr(&mut self, e: &'a Expr) {
                match e {
                    Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => {
                        let n = a.attr.as_str();
                        if self.attrs.contains(&n)
                            || matches!(
                                n,
                                "modules"
                                    | "children"
                                    | "named_modules"
                                    | "named_children"
                                    | "_modules"
                            )
                        {
                            self.found = true;
                        }
                    }
                    Expr::Call(c) if helpers::name_of(&c.func) == Some("getattr") => {
                        self.found = true;
                    }
                    _ => {}
                }
                visitor::walk_expr(self, e);
            }
            fn visit_stmt(&mut self, st: &'a Stmt) {
                if let Stmt::For(f) = st {
                    if helpers::name_of(&f.iter) == Some("self") {
                        self.found = true;
                    }
                }
                if let Stmt::If(i) = st {
                    if helpers::name_of(&i.test).is_some_and(|n| self.gates.contains(&n)) {
                        self.visit_expr(&i.test);
                        for c in &i.elif_else_clauses {
                            if let Some(t) = &c.test {
                                self.visit_expr(t);
                            }
                            visitor::walk_body(self, &c.body);
                        }
                        return;
                    }
                }
                visitor::walk_stmt(self, st);
            }
        }
        let mut reads = Reads {
            attrs: &attrs,
            found: false,
            gates: Vec::new(),
        };
        // Construction and weight initialisation (`__init__`, `_initialize_weights`,
        // `reset_parameters`, which walk `self.modules()`) run no forward pass.
        let builds_only = |name: &str| {
            helpers::contains_ignore_ascii_case(name, "init") || name == "reset_parameters"
        };
        for f in methods.iter().filter(|f| !builds_only(f.name.as_str())) {
            reads.gates = f
                .parameters
                .iter_non_variadic_params()
                .filter(|p| {
                    p.default.as_deref().is_some_and(|d| {
                        matches!(d, Expr::NoneLiteral(_))
                            || matches!(d, Expr::BooleanLiteral(b) if !b.value)
                            || helpers::is_literal_zero(d)
                    })
                })
                .map(|p| p.parameter.name.as_str())
                .collect();
            visitor::walk_body(&mut reads, &f.body);
        }
        !reads.found
    }

    /// Does a function's own body (the module's for function 0) call `Variable(...,
    /// volatile=...)` with a flag not literally false (see
    /// [`FunctionSummary::volatile_inputs`])? Only bodies whose text says `volatile` are
    /// walked.
    fn builds_volatile_variable(&self, range: TextRange, body: &[Stmt]) -> bool {
        let text = self
            .text
            .get(range.start().to_usize()..range.end().to_usize())
            .unwrap_or("");
        if !self.words.volatile || memchr::memmem::find(text.as_bytes(), b"volatile").is_none() {
            return false;
        }
        let mut found = false;
        helpers::for_each_own_call(body, false, &mut |c| {
            let variable = self.scopes.resolve(&c.func).is_some_and(|q| {
                matches!(
                    q.as_str(),
                    "torch.autograd.Variable" | "torch.autograd.variable.Variable"
                )
            });
            if variable
                && c.arguments
                    .find_keyword("volatile")
                    .is_some_and(|k| helpers::is_truthy(&k.value) != Some(false))
            {
                found = true;
            }
        });
        found
    }

    fn layer_of_call(&self, call: &ExprCall) -> Option<&'static str> {
        let func = &*call.func;
        let mut cur = func;
        let root = loop {
            match cur {
                Expr::Name(n) => break n.id.as_str(),
                Expr::Attribute(a) => cur = &a.value,
                _ => return None,
            }
        };
        let q = self.scopes.lookup_str(root)?;
        if !(q.starts_with("torch") || q.starts_with("timm") || q.starts_with("transformers")) {
            return None;
        }
        crate::mode_layer_of_call(&self.scopes.resolve(func)?, call)
    }

    /// The project-resolvable callee of a call, if any.
    fn callee_ref(
        &self,
        call: &ExprCall,
        params: &[&str],
        vals: &FxHashMap<String, Val>,
        nested: Option<&Nested>,
    ) -> Option<Ref> {
        match &*call.func {
            Expr::Name(n) => {
                let id = n.id.as_str();
                if let Some((_, i)) = nested.and_then(|ns| ns.iter().rev().find(|(m, _)| m == id)) {
                    return Some(Ref::Nested(*i));
                }
                if let Some(v) = vals.get(id).filter(|_| !params.contains(&id)) {
                    // A local bound to a factory's result: the function the factory returns.
                    return match self.invoke_of(v) {
                        Some(Val::Invoke(inner)) => match *inner {
                            Val::Call { callee, .. } => Some(Ref::Returned(Box::new(callee))),
                            _ => None,
                        },
                        _ => None,
                    };
                }
                if params.contains(&id) {
                    return None;
                }
                if let Some((_, at)) = self.local_classes.iter().rev().find(|(n, _)| n == id) {
                    return Some(Ref::DefAt(*at));
                }
                if let Some(q) = self.scopes.lookup_str(id) {
                    return (!super::summary_is_external(q)).then(|| Ref::Qualified(q.into()));
                }
                if self.module_defs.contains_key(id) {
                    // A module-level call of a name defined more than once: the definition
                    // above it (cells run in order).
                    if let Some(starts) = self.redefined.get(id).filter(|_| {
                        self.scopes
                            .current()
                            .is_some_and(|s| s.kind == crate::bindings::ScopeKind::Module)
                    }) {
                        let at = call.start().to_u32();
                        if let Some(&def) = starts.iter().rev().find(|&&d| d < at) {
                            return Some(Ref::DefAt(def));
                        }
                    }
                    return Some(Ref::Local(id.into()));
                }
                // A name no scope binds, in a file with star imports: one of them may bring it.
                let bound = self.scopes.current().is_some_and(|s| s.binds_locally(id));
                (!self.out.star_imports.is_empty() && !bound && !helpers::is_python_builtin(id))
                    .then(|| Ref::Local(id.into()))
            }
            Expr::Attribute(a) => {
                if helpers::name_of(&a.value) == Some("self") {
                    return Some(Ref::Method(a.attr.as_str().into()));
                }
                // A method of an object built from a project class: `self.saver.save(...)`,
                // `validator.validate(...)` (see [`Ref::Held`]).
                match &*a.value {
                    Expr::Attribute(o) if helpers::name_of(&o.value) == Some("self") => {
                        if let Some((_, r)) =
                            self.held.iter().find(|(n, _)| **n == *o.attr.as_str())
                        {
                            return Some(Ref::Held(Box::new(r.clone()), a.attr.as_str().into()));
                        }
                    }
                    Expr::Name(n) if !params.contains(&n.id.as_str()) => {
                        if let Some(Val::Call { callee: r, .. }) = vals.get(n.id.as_str()) {
                            if self.names_class(r) {
                                return Some(Ref::Held(
                                    Box::new(r.clone()),
                                    a.attr.as_str().into(),
                                ));
                            }
                        }
                    }
                    _ => {}
                }
                // `super().__init__(...)`, `super(Net, self).forward(x)`.
                if let Expr::Call(sup) = &*a.value {
                    if matches!(&*sup.func, Expr::Name(n) if n.id.as_str() == "super")
                        && sup.arguments.keywords.is_empty()
                        && matches!(sup.arguments.args.len(), 0 | 2)
                        && !self.scopes.is_bound("super")
                    {
                        return Some(Ref::Super(a.attr.as_str().into()));
                    }
                }
                // Cheap rejection first: a method of an object, or an external module's
                // function (`torch.cat`), needs no qualified name.
                let mut cur = &*call.func;
                let root = loop {
                    match cur {
                        Expr::Name(n) => break n.id.as_str(),
                        Expr::Attribute(a) => cur = &a.value,
                        _ => return None,
                    }
                };
                let rq = self.scopes.lookup_str(root)?;
                if super::summary_is_external(rq) {
                    return None;
                }
                let q = self.scopes.resolve(&call.func)?;
                Some(Ref::Qualified(q.into()))
            }
            _ => None,
        }
    }

    /// Does the reference name a class: one of the file's module-level classes, or an
    /// imported name spelled as classes are (`Validator`, `pkg.Saver`)? A function's result
    /// is not followed to its methods.
    fn names_class(&self, r: &Ref) -> bool {
        match r {
            Ref::Local(n) => self.module_defs.get(&**n) == Some(&true),
            Ref::Qualified(q) => q
                .rsplit('.')
                .next()
                .is_some_and(|n| n.starts_with(|c: char| c.is_ascii_uppercase())),
            _ => false,
        }
    }

    /// See [`Builder::held`]: `self.<attr> = Cls(...)` in `__init__`, the attribute assigned
    /// nowhere else in the class.
    fn held_attributes(&self, c: &ast::StmtClassDef) -> Vec<(Box<str>, Ref)> {
        let Some(init) = c.body.iter().find_map(|s| match s {
            Stmt::FunctionDef(f) if f.name.as_str() == "__init__" => Some(f),
            _ => None,
        }) else {
            return Vec::new();
        };
        let params: Vec<&str> = init.parameters.iter().map(|p| p.name().as_str()).collect();
        let none = FxHashMap::default();
        let mut found: Vec<(Box<str>, Ref)> = Vec::new();
        for_each_own_stmt(&init.body, &mut |st| {
            if let Stmt::Assign(a) = st {
                if let ([t], Expr::Call(call)) = (&a.targets[..], &*a.value) {
                    if let Some(attr) = helpers::self_attribute(t) {
                        if let Some(r) = self
                            .callee_ref(call, &params, &none, None)
                            .filter(|r| self.names_class(r))
                        {
                            found.push((attr.into(), r));
                        }
                    }
                }
            }
        });
        if found.is_empty() {
            return found;
        }
        // Assigned once in the whole class.
        let mut counts: FxHashMap<&str, usize> = FxHashMap::default();
        for m in &c.body {
            let Stmt::FunctionDef(f) = m else { continue };
            for_each_own_stmt(&f.body, &mut |st| {
                let targets: &[Expr] = match st {
                    Stmt::Assign(a) => &a.targets,
                    Stmt::AnnAssign(a) => std::slice::from_ref(&*a.target),
                    Stmt::AugAssign(a) => std::slice::from_ref(&*a.target),
                    _ => &[],
                };
                for t in targets {
                    if let Some(attr) = helpers::self_attribute(t) {
                        *counts.entry(attr).or_default() += 1;
                    }
                }
            });
        }
        found.retain(|(a, _)| counts.get(&**a) == Some(&1));
        found
    }

    /// Calls (with their context) and parameter usage of a suite.
    fn fill_body(
        &mut self,
        idx: u32,
        body: &[Stmt],
        params: &[&str],
        nested: Option<&Nested>,
        vals: &FxHashMap<String, Val>,
        no_grad: bool,
    ) {
        // A constructor: what it holds in eval mode.
        let f = &self.out.functions[idx as usize];
        let held = if f.class.is_some() && &*f.name == "__init__" {
            held_in_eval(body, &|e| self.scopes.resolve(e))
        } else {
            Vec::new()
        };
        let held = &held[..];
        let span = match (body.first(), body.last()) {
            (Some(a), Some(b)) => self.text.get(a.start().to_usize()..b.end().to_usize()),
            _ => None,
        };
        let replaced = if self.words.classifier
            && span.is_some_and(|t| memchr::memmem::find(t.as_bytes(), b".classifier").is_some())
        {
            library_builds_head_replaced(body, &|e| self.scopes.resolve(e))
        } else {
            Vec::new()
        };
        self.out.functions[idx as usize].returns_head_replaced =
            !replaced.is_empty() && returns_head_replaced(body, &replaced);
        let mut head_replaced: Vec<TextSize> = replaced.iter().map(|&(_, at)| at).collect();
        // Builds of which only the convolutional `features` are kept: mode-free as well.
        if self.words.features
            && span.is_some_and(|t| memchr::memmem::find(t.as_bytes(), b".features").is_some())
        {
            head_replaced.extend(features_only_builds(body, &|e| self.scopes.resolve(e)));
        }
        let head_replaced = &head_replaced[..];
        let f = &self.out.functions[idx as usize];
        let forward = f.class.is_some() && &*f.name == "forward";
        let mut w = BodyWalker {
            b: self,
            params,
            nested,
            vals,
            loop_depth: 0,
            cond_depth: 0,
            device_cond_depth: 0,
            no_grad: u32::from(no_grad),
            calls: Vec::new(),
            instance_calls: Vec::new(),
            no_grad_method_calls: Vec::new(),
            module_api_uses: Vec::new(),
            global_module_uses: Vec::new(),
            usage: vec![Usage::default(); params.len()],
            attr_usage: Vec::new(),
            method: f.class.is_some() && params.first() == Some(&"self"),
            has_loop: false,
            grad_off_block: false,
            mode_layer: None,
            applied_inline: None,
            builds: Vec::new(),
            mode_free_builds: Vec::new(),
            held,
            head_replaced,
            untrained: (!held.is_empty()).then(Untrained::default),
            forward,
            no_grad_callees: Vec::new(),
        };
        w.suite(body);
        let BodyWalker {
            calls,
            instance_calls,
            no_grad_method_calls,
            module_api_uses,
            global_module_uses,
            usage,
            attr_usage,
            has_loop,
            grad_off_block,
            mode_layer,
            builds,
            mode_free_builds,
            untrained,
            no_grad_callees,
            ..
        } = w;
        self.out.no_grad_calls.extend(no_grad_callees);
        let f = &mut self.out.functions[idx as usize];
        f.calls = calls;
        f.instance_calls = instance_calls.into();
        f.no_grad_method_calls = no_grad_method_calls.into();
        f.module_api_uses = module_api_uses.into();
        f.global_module_uses = global_module_uses.into();
        if !params.is_empty() {
            f.usage = usage;
        }
        f.attr_usage = attr_usage.into();
        f.has_loop = has_loop;
        f.grad_off_block = grad_off_block;
        f.mode_layer = mode_layer;
        f.untrained = untrained
            .filter(|u| u.builds != builds || u.layer != mode_layer)
            .map(Box::new);
        f.builds = builds.into();
        f.mode_free_builds = mode_free_builds.into();
        f.frozen = frozen_modules(body).into();
        f.freezes_self = self_freeze(body, params);
        if f.class.is_some() && params.len() > 1 && params.first() == Some(&"self") {
            let text = span.unwrap_or("");
            let finder = |n: &[u8]| memchr::memmem::find(text.as_bytes(), n).is_some();
            if finder(b"self.") && (finder(b"+=") || finder(b".append(")) {
                f.accumulated_params = accumulated_params(body, params).into();
            }
        }
    }
}

/// The parameters a method adds to an attribute of `self` unconverted (see
/// [`FunctionSummary::accumulated_params`]): `self.<a> += <expr>` or
/// `self.<a>.append(<expr>)` where the expression reads the parameter and calls nothing that
/// turns a tensor into a number or cuts it from the graph (`.item()`, `float(...)`,
/// `.detach()`, `.cpu()`, `.tolist()`, `.numpy()`).
fn accumulated_params(body: &[Stmt], params: &[&str]) -> Vec<u16> {
    fn converts(e: &Expr) -> bool {
        helpers::any_expr(e, |x| match x {
            Expr::Call(c) => match &*c.func {
                Expr::Attribute(a) => matches!(
                    a.attr.as_str(),
                    "item" | "detach" | "cpu" | "tolist" | "numpy" | "data"
                ),
                Expr::Name(n) => matches!(n.id.as_str(), "float" | "int" | "round"),
                _ => false,
            },
            Expr::Attribute(a) => a.attr.as_str() == "data",
            _ => false,
        })
    }
    let self_attr =
        |e: &Expr| matches!(e, Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self"));
    let mut out: Vec<u16> = Vec::new();
    let mut add = |value: &Expr| {
        if converts(value) {
            return;
        }
        for (i, p) in params.iter().enumerate().skip(1) {
            let reads =
                helpers::any_expr(value, |x| matches!(x, Expr::Name(n) if n.id.as_str() == *p));
            if reads && !out.contains(&(i as u16)) {
                out.push(i as u16);
            }
        }
    };
    for_each_own_stmt(body, &mut |st| match st {
        Stmt::AugAssign(a) if matches!(a.op, ast::Operator::Add) && self_attr(&a.target) => {
            add(&a.value)
        }
        Stmt::Expr(e) => {
            if let Expr::Call(c) = &*e.value {
                if let Some(("append", recv)) = helpers::method_call(c) {
                    if self_attr(recv) {
                        if let [arg] = c.arguments.args.as_ref() {
                            add(arg);
                        }
                    }
                }
            }
        }
        _ => {}
    });
    out
}

/// `v`, the value of `value` (a call) read without the suite's earlier bindings: with each
/// argument that is a name bound earlier in the suite to a module built on the spot or by a
/// call of simple arguments (`encoder = torchvision.models.resnet18()` or
/// `encoder = get_resnet(args.arch)`, then `SimCLR(encoder, 512)`) given that earlier value
/// instead of its bare kind. Only such shallow values are copied in, so a chain of
/// rebindings (`x = f(x)`) does not grow the values.
fn with_earlier_args(mut v: Val, value: &Expr, earlier: &FxHashMap<String, Val>) -> Val {
    fn shallow(v: &Val) -> bool {
        let leaf = |v: &Val| {
            matches!(
                v,
                Val::Unknown | Val::None | Val::Kind(_) | Val::Torch(_) | Val::Loss(_)
            )
        };
        match v {
            Val::Torch(_) | Val::Loss(_) => true,
            Val::Call { args, kwargs, .. } => {
                args.iter().all(leaf) && kwargs.iter().all(|(_, v)| leaf(v))
            }
            _ => false,
        }
    }
    let (Expr::Call(call), Val::Call { args, kwargs, .. }) = (value, &mut v) else {
        return v;
    };
    let earlier_of = |e: &Expr| match e {
        Expr::Name(n) => earlier.get(n.id.as_str()).filter(|v| shallow(v)),
        _ => None,
    };
    for (a, e) in args.iter_mut().zip(&call.arguments.args) {
        if matches!(a, Val::Kind(_) | Val::Unknown) {
            if let Some(ev) = earlier_of(e) {
                *a = ev.clone();
            }
        }
    }
    for (name, a) in kwargs.iter_mut() {
        if !matches!(a, Val::Kind(_) | Val::Unknown) {
            continue;
        }
        let e = call
            .arguments
            .keywords
            .iter()
            .find(|k| k.arg.as_ref().is_some_and(|k| k.as_str() == &**name));
        if let Some(ev) = e.and_then(|k| earlier_of(&k.value)) {
            *a = ev.clone();
        }
    }
    v
}

/// The containers a suite changes in place (see [`FileSummary::mutated`]), not descending into
/// nested definitions.
fn mutated_names(body: &[Stmt], out: &mut Vec<Box<str>>) {
    fn container(e: &Expr) -> Option<&str> {
        match e {
            Expr::Name(n) => Some(n.id.as_str()),
            Expr::Attribute(a) => Some(a.attr.as_str()),
            _ => None,
        }
    }
    fn subscript_of(e: &Expr, out: &mut Vec<Box<str>>) {
        match e {
            Expr::Subscript(s) => {
                if let Some(n) = container(&s.value) {
                    out.push(n.into());
                }
            }
            Expr::Tuple(t) => t.elts.iter().for_each(|e| subscript_of(e, out)),
            Expr::List(t) => t.elts.iter().for_each(|e| subscript_of(e, out)),
            _ => {}
        }
    }
    for_each_own_stmt(body, &mut |st| match st {
        Stmt::Assign(a) => a.targets.iter().for_each(|t| subscript_of(t, out)),
        Stmt::AugAssign(a) => {
            subscript_of(&a.target, out);
            // `MODELS |= {...}`
            if let Some(n) = container(&a.target) {
                out.push(n.into());
            }
        }
        Stmt::AnnAssign(a) => subscript_of(&a.target, out),
        Stmt::Delete(d) => d.targets.iter().for_each(|t| subscript_of(t, out)),
        Stmt::Expr(e) => {
            if let Expr::Call(c) = &*e.value {
                if let Some((m, recv)) = helpers::method_call(c) {
                    if matches!(
                        m,
                        "update" | "setdefault" | "pop" | "popitem" | "clear" | "__setitem__"
                    ) {
                        if let Some(n) = container(recv) {
                            out.push(n.into());
                        }
                    }
                }
            }
        }
        _ => {}
    });
}

/// Is `value` a chain of the module methods that return their receiver, applied to the name
/// `id` itself (`model.to(device)`, `net.cuda().eval()`)?
fn rebinds_itself(value: &Expr, id: &str) -> bool {
    let mut cur = value;
    let mut calls = 0;
    while let Expr::Call(c) = cur {
        match helpers::method_call(c) {
            Some((m, recv)) if crate::kinds::MODULE_SELF_METHODS.contains(&m) => {
                cur = recv;
                calls += 1;
            }
            _ => return false,
        }
    }
    calls > 0 && helpers::name_of(cur) == Some(id)
}

/// Does a function freeze the parameters of `self` (see [`FunctionSummary::freezes_self`])?
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SelfFreeze {
    /// No (or only under a condition).
    #[default]
    No,
    /// Always: a top-level statement sets `requires_grad` to a falsy literal.
    Always,
    /// When parameter `i` (`self` is 0) is falsy: `p.requires_grad = requires_grad`.
    UnlessParam(u16),
}

/// [`FunctionSummary::freezes_self`] of a body with these parameters: only its top-level
/// statements count (a freeze under `if` may not happen).
fn self_freeze(body: &[Stmt], params: &[&str]) -> SelfFreeze {
    // The value given to `requires_grad`: a falsy literal, or a parameter of the function.
    let value = |v: &Expr| -> Option<SelfFreeze> {
        if helpers::is_truthy(v) == Some(false) {
            return Some(SelfFreeze::Always);
        }
        let n = helpers::name_of(v)?;
        let i = params.iter().position(|p| *p == n)?;
        (i > 0).then_some(SelfFreeze::UnlessParam(i as u16))
    };
    // `X.requires_grad_(v)` on `recv`: the freeze it makes.
    let method = |e: &Expr, recv: &dyn Fn(&Expr) -> bool| -> Option<SelfFreeze> {
        let Expr::Call(c) = e else { return None };
        let ("requires_grad_", r) = helpers::method_call(c)? else {
            return None;
        };
        if !recv(r) || c.arguments.args.len() + c.arguments.keywords.len() != 1 {
            return None;
        }
        let arg = c
            .arguments
            .args
            .first()
            .or_else(|| helpers::keyword(c, "requires_grad"))?;
        value(arg)
    };
    // The only attribute the constructor builds an object into (`self.vgg19 =
    // vgg19(weights=...)`, then `self.vgg19 = self.vgg19.features[:-1]`), and where it is last
    // assigned: freezing all of it after that freezes the instance.
    let mut assigned: Vec<(&str, TextSize, bool)> = Vec::new();
    helpers::for_each_own_stmt(body, &mut |st: &Stmt| {
        let Stmt::Assign(a) = st else { return };
        for t in &a.targets {
            if let Some(attr) = helpers::self_attribute(t) {
                assigned.push((attr, st.end(), matches!(&*a.value, Expr::Call(_))));
            }
        }
    });
    let mut built: Vec<&str> = assigned
        .iter()
        .filter(|(_, _, call)| *call)
        .map(|(a, _, _)| *a)
        .collect();
    built.dedup();
    let only = match built[..] {
        [attr] => assigned
            .iter()
            .filter(|(a, _, _)| *a == attr)
            .map(|(_, end, _)| *end)
            .max()
            .map(|last| (attr, last)),
        _ => None,
    };
    let is_self = |e: &Expr| helpers::name_of(e) == Some("self");
    let is_whole = |e: &Expr, at: TextSize| {
        is_self(e)
            || only
                .is_some_and(|(attr, last)| at >= last && helpers::self_attribute(e) == Some(attr))
    };
    for s in body {
        let at = s.start();
        let found = match s {
            Stmt::Expr(e) => method(&e.value, &|r| is_whole(r, at)),
            Stmt::For(f) => {
                let Some((p, c, r)) = parameter_loop(f) else {
                    continue;
                };
                if !is_whole(r, at) || !c.arguments.args.is_empty() {
                    continue;
                }
                let is_p = |e: &Expr| helpers::name_of(e) == Some(p);
                f.body.iter().find_map(|b| match b {
                    Stmt::Assign(a)
                        if a.targets.len() == 1
                            && matches!(&a.targets[0], Expr::Attribute(at)
                                if at.attr.as_str() == "requires_grad" && is_p(&at.value)) =>
                    {
                        value(&a.value)
                    }
                    Stmt::Expr(e) => method(&e.value, &is_p),
                    _ => None,
                })
            }
            _ => None,
        };
        if let Some(f) = found {
            return f;
        }
    }
    SelfFreeze::No
}

/// A loop over every parameter of a module: `for p in X.parameters()` or
/// `for name, p in X.named_parameters()`. The loop variable holding each parameter, the
/// `parameters()` call and its receiver `X`.
fn parameter_loop(f: &ast::StmtFor) -> Option<(&str, &ExprCall, &Expr)> {
    let Expr::Call(c) = &*f.iter else { return None };
    let (method, recv) = helpers::method_call(c)?;
    let p = match (method, &*f.target) {
        ("parameters", t) => helpers::name_of(t)?,
        ("named_parameters", Expr::Tuple(t)) if t.elts.len() == 2 => helpers::name_of(&t.elts[1])?,
        _ => return None,
    };
    Some((p, c, recv))
}

/// The object a chain of module methods puts in eval mode: `X.eval()`, `X.train(False)`,
/// also inside a chain (`X.eval().requires_grad_(False)`, `vgg16(weights=w).features.eval()`).
fn evaled_receiver(e: &Expr) -> Option<&Expr> {
    let Expr::Call(c) = e else { return None };
    let mut c: &ExprCall = c;
    let mut evaled = false;
    loop {
        let (m, recv) = helpers::method_call(c)?;
        if !crate::kinds::MODULE_SELF_METHODS.contains(&m) {
            return None;
        }
        evaled |= m == "eval"
            || (m == "train"
                && (matches!(c.arguments.args.first(), Some(a) if helpers::is_truthy(a) == Some(false))
                    || helpers::keyword(c, "mode")
                        .is_some_and(|a| helpers::is_truthy(a) == Some(false))));
        match recv {
            Expr::Call(inner)
                if helpers::method_call(inner)
                    .is_some_and(|(m, _)| crate::kinds::MODULE_SELF_METHODS.contains(&m)) =>
            {
                c = inner;
            }
            _ => return evaled.then_some(recv),
        }
    }
}

/// The values a constructor holds in eval mode: assigned to a name or attribute that one of
/// its top-level statements then puts in eval mode (`net = Circular(); net.load_state_dict(..);
/// net.eval()`, or `self.net = net.eval()`), or put in eval mode where they are built
/// (`self.vgg = vgg16(weights=w).eval()`).
/// An `eval()` under a condition (`if freeze:`) does not count. So does a model that comes
/// back in eval mode (`self.bert = BertModel.from_pretrained(name)`, see
/// [`loads_in_eval_mode`]).
/// A call that returns a model in eval mode ([`crate::call_returns_eval_mode`]: a Hugging
/// Face `from_pretrained`, an Ultralytics hub model), possibly moved (`.to(device)`,
/// `.cuda()`) but not switched back with `.train()`.
fn loads_in_eval_mode(e: &Expr, resolve: &dyn Fn(&Expr) -> Option<String>) -> bool {
    let mut e = e;
    while let Expr::Call(c) = e {
        match helpers::method_call(c) {
            Some(("train", _)) => return false,
            Some((m, recv)) if crate::kinds::MODULE_SELF_METHODS.contains(&m) => e = recv,
            _ => return resolve(&c.func).is_some_and(|q| crate::call_returns_eval_mode(&q, c)),
        }
    }
    false
}

fn held_in_eval(body: &[Stmt], resolve: &dyn Fn(&Expr) -> Option<String>) -> Vec<TextRange> {
    // `net.eval()`, and `self.net = net.eval()`: `net` is in eval mode from there on.
    let evaled: Vec<(String, TextSize)> = body
        .iter()
        .filter_map(|st| match st {
            Stmt::Expr(e) => Some((helpers::dotted(evaled_receiver(&e.value)?)?, st.start())),
            Stmt::Assign(a) => Some((helpers::dotted(evaled_receiver(&a.value)?)?, st.start())),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    if evaled.is_empty()
        && !body.iter().any(|st| {
            matches!(st, Stmt::Assign(a)
                if evaled_receiver(&a.value).is_some() || loads_in_eval_mode(&a.value, resolve))
        })
    {
        return out;
    }
    helpers::for_each_own_stmt(body, &mut |st: &Stmt| {
        let Stmt::Assign(a) = st else { return };
        let [t] = &*a.targets else { return };
        if evaled_receiver(&a.value).is_some()
            || loads_in_eval_mode(&a.value, resolve)
            || helpers::dotted(t)
                .is_some_and(|n| evaled.iter().any(|(x, at)| *x == n && *at > st.start()))
        {
            out.push(a.value.range());
        }
    });
    out
}

/// The modules a body freezes whole (see [`FunctionSummary::frozen`]), each with the span
/// from the freezing statement to where it stops being frozen whole (the first later
/// statement that gives it trainable parts: [`thaws`]), or to `u32::MAX`.
fn frozen_modules(body: &[Stmt]) -> Vec<(Box<str>, TextRange)> {
    let mut out = frozen_statements(body);
    if out.is_empty() {
        return out;
    }
    let thawed = thaws(body);
    for (name, r) in &mut out {
        let end = thawed
            .iter()
            .filter(|(n, at)| {
                *at > r.end()
                    && n.strip_prefix(&**name)
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
            })
            .map(|(_, at)| *at)
            .min()
            .unwrap_or(TextSize::new(u32::MAX));
        *r = TextRange::new(r.start(), end);
    }
    out
}

/// Where a body gives a module trainable parts again, by the dotted name of the part (sorted
/// by nothing): a new layer put in place of a sub-module (`model.fc = nn.Linear(...)`,
/// `model.classifier[6] = nn.Linear(...)`: a constructor call, by its capitalised name), a
/// module added (`model.add_module(...)`), or part of it unfrozen
/// (`model.layer4.requires_grad_(True)`, `for p in model.fc.parameters(): p.requires_grad =
/// True`). Fine-tuning scripts freeze a pretrained network and then replace its head.
fn thaws(body: &[Stmt]) -> Vec<(String, TextSize)> {
    /// `a.b[0].c` -> `a.b.c`: the dotted chain of a target with its subscripts left out.
    fn chain(e: &Expr) -> Option<String> {
        match e {
            Expr::Subscript(s) => chain(&s.value),
            Expr::Attribute(a) => Some(format!("{}.{}", chain(&a.value)?, a.attr.as_str())),
            Expr::Name(n) => Some(n.id.to_string()),
            _ => None,
        }
    }
    fn constructs(e: &Expr) -> bool {
        let Expr::Call(c) = e else { return false };
        let name = match &*c.func {
            Expr::Name(n) => n.id.as_str(),
            Expr::Attribute(a) => a.attr.as_str(),
            _ => return false,
        };
        name.starts_with(|ch: char| ch.is_ascii_uppercase())
    }
    let mut out = Vec::new();
    helpers::for_each_own_stmt(body, &mut |s| match s {
        Stmt::Assign(a) if constructs(&a.value) => {
            for t in &a.targets {
                if matches!(t, Expr::Attribute(_) | Expr::Subscript(_)) {
                    if let Some(c) = chain(t) {
                        out.push((c, a.start()));
                    }
                }
            }
        }
        Stmt::Expr(e) => {
            let Expr::Call(c) = &*e.value else { return };
            let thaw = match helpers::method_call(c) {
                Some(("add_module" | "register_module", _)) => true,
                Some(("requires_grad_", _)) => match c.arguments.args.first() {
                    None => helpers::keyword(c, "requires_grad")
                        .is_none_or(|a| helpers::is_truthy(a) == Some(true)),
                    Some(a) => helpers::is_truthy(a) == Some(true),
                },
                _ => false,
            };
            if let (true, Some((_, recv))) = (thaw, helpers::method_call(c)) {
                if let Some(c) = chain(recv) {
                    out.push((c, e.start()));
                }
            }
        }
        Stmt::For(f) => {
            let Some((p, _, recv)) = parameter_loop(f) else {
                return;
            };
            let unfreezes = f.body.iter().any(|b| {
                matches!(b, Stmt::Assign(a) if helpers::is_truthy(&a.value) == Some(true)
                    && a.targets.iter().any(|t| matches!(t, Expr::Attribute(at)
                        if at.attr.as_str() == "requires_grad"
                            && helpers::name_of(&at.value) == Some(p))))
            });
            if let (true, Some(c)) = (unfreezes, chain(recv)) {
                out.push((c, f.start()));
            }
        }
        _ => {}
    });
    out
}

/// The statements of a body that freeze a module whole, by the module's dotted name.
fn frozen_statements(body: &[Stmt]) -> Vec<(Box<str>, TextRange)> {
    /// `X.requires_grad_(False)` -> `X` (through `.eval()` / `.to(..)` chains on either side:
    /// `sampler.eval().requires_grad_(False).to(device)`).
    fn frozen_receiver(e: &Expr) -> Option<&Expr> {
        let Expr::Call(c) = e else { return None };
        let mut c: &ExprCall = c;
        loop {
            match helpers::method_call(c)? {
                ("requires_grad_", _) => break,
                (m, Expr::Call(inner)) if crate::kinds::MODULE_SELF_METHODS.contains(&m) => {
                    c = inner;
                }
                _ => return None,
            }
        }
        let ("requires_grad_", mut recv) = helpers::method_call(c)? else {
            return None;
        };
        let off = matches!(c.arguments.args.first(), Some(a) if helpers::is_truthy(a) == Some(false))
            || helpers::keyword(c, "requires_grad")
                .is_some_and(|a| helpers::is_truthy(a) == Some(false));
        if !off {
            return None;
        }
        // Down to the object frozen: a name, or the call that builds it (`nn.Conv2d(...)`).
        while let Expr::Call(inner) = recv {
            match helpers::method_call(inner) {
                Some((m, r)) if crate::kinds::MODULE_SELF_METHODS.contains(&m) => recv = r,
                _ => break,
            }
        }
        Some(recv)
    }
    let mut out = Vec::new();
    helpers::for_each_own_stmt(body, &mut |s| match s {
        Stmt::Expr(e) => {
            if let Some(name) = frozen_receiver(&e.value).and_then(helpers::dotted) {
                out.push((name.into(), e.range()));
            }
        }
        Stmt::Assign(a) => {
            let Some(recv) = frozen_receiver(&a.value) else {
                return;
            };
            if let Some(name) = helpers::dotted(recv) {
                out.push((name.into(), a.range()));
            }
            // `requires_grad_` returns the module: the name bound to the chain holds the
            // frozen module too (`fused = nn.Conv2d(...).requires_grad_(False).to(dev)`).
            for t in &a.targets {
                if let Some(name) = helpers::dotted(t) {
                    out.push((name.into(), a.range()));
                }
            }
        }
        Stmt::For(f) => {
            let Some((p, _, recv)) = parameter_loop(f) else {
                return;
            };
            let Some(name) = helpers::dotted(recv) else {
                return;
            };
            let freezes = f.body.iter().any(|b| match b {
                Stmt::Assign(a) => {
                    a.targets.iter().any(|t| {
                        matches!(t, Expr::Attribute(at)
                            if at.attr.as_str() == "requires_grad"
                                && helpers::name_of(&at.value) == Some(p))
                    }) && helpers::is_truthy(&a.value) == Some(false)
                }
                Stmt::Expr(e) => {
                    frozen_receiver(&e.value).is_some_and(|r| helpers::name_of(r) == Some(p))
                }
                _ => false,
            });
            if freezes {
                out.push((name.into(), f.range()));
            }
        }
        _ => {}
    });
    out
}

/// Does every `return` of the body give a name that `.backward()` is called on in it?
fn returns_differentiated(body: &[Stmt]) -> bool {
    struct B<'b> {
        names: Vec<&'b str>,
    }
    impl<'b> Visitor<'b> for B<'b> {
        fn visit_stmt(&mut self, stmt: &'b Stmt) {
            if !matches!(stmt, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                visitor::walk_stmt(self, stmt);
            }
        }
        fn visit_expr(&mut self, expr: &'b Expr) {
            if let Expr::Call(c) = expr {
                if let Some(("backward", Expr::Name(n))) = helpers::method_call(c) {
                    self.names.push(n.id.as_str());
                }
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut b = B { names: Vec::new() };
    b.visit_body(body);
    if b.names.is_empty() {
        return false;
    }
    let mut any = false;
    let mut all = true;
    for_each_own_stmt(body, &mut |st| {
        if let Stmt::Return(r) = st {
            any = true;
            all &= matches!(r.value.as_deref(), Some(Expr::Name(n)) if b.names.contains(&n.id.as_str()));
        }
    });
    any && all
}

/// Is `q` a torchvision classification model whose `features` part has no
/// train/eval-sensitive layer (the VGGs without batch norm, AlexNet, SqueezeNet: convolutions,
/// ReLUs and pooling; their Dropout sits in the classifier)?
fn mode_free_features(q: &str) -> bool {
    let Some(name) = q.strip_prefix("torchvision.models.") else {
        return false;
    };
    let name = helpers::last_segment(name);
    (name.starts_with("vgg") && !name.ends_with("_bn"))
        || name == "alexnet"
        || name.starts_with("squeezenet")
}

/// The starts of the library model builds of which the body keeps only `features` (a VGG's
/// convolutional part), with no train/eval-sensitive layer: `vgg19(weights=w).features[:-1]`,
/// or `self.vgg = vgg19(weights=w)` followed by `self.vgg = self.vgg.features[:-1]`.
fn features_only_builds(body: &[Stmt], resolve: &dyn Fn(&Expr) -> Option<String>) -> Vec<TextSize> {
    use ruff_python_ast::visitor::{self, Visitor};
    // The build under an expression (`vgg19(...)`, also through `.to(dev)` / `.eval()`).
    let build = |e: &Expr| -> Option<TextSize> {
        let (Expr::Call(c), _) = dataflow::module_chain(e) else {
            return None;
        };
        resolve(&c.func)
            .is_some_and(|q| mode_free_features(&q))
            .then_some(c.start())
    };
    struct Features<'f> {
        build: &'f dyn Fn(&Expr) -> Option<TextSize>,
        out: Vec<TextSize>,
    }
    impl<'a> Visitor<'a> for Features<'_> {
        fn visit_expr(&mut self, e: &'a Expr) {
            if let Expr::Attribute(a) = e {
                if a.attr.as_str() == "features" {
                    if let Some(at) = (self.build)(&a.value) {
                        self.out.push(at);
                    }
                }
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut f = Features {
        build: &build,
        out: Vec::new(),
    };
    // `X = <build>` then `X = X.features...`: the build bound to X keeps its features only.
    let mut bound: Vec<(String, TextSize)> = Vec::new();
    helpers::for_each_own_stmt(body, &mut |st: &Stmt| {
        let Stmt::Assign(a) = st else { return };
        f.visit_expr(&a.value);
        let [t] = &*a.targets else { return };
        let Some(target) = helpers::dotted(t) else {
            return;
        };
        if let Some(at) = build(&a.value) {
            bound.push((target, at));
            return;
        }
        // The value's root: `X.features[:-1]` -> `X.features` -> `X`.
        let mut v = &*a.value;
        let mut through_features = false;
        loop {
            match v {
                Expr::Subscript(s) => v = &s.value,
                Expr::Attribute(x) if helpers::dotted(v).as_deref() != Some(target.as_str()) => {
                    through_features |= x.attr.as_str() == "features";
                    v = &x.value;
                }
                _ => break,
            }
        }
        if through_features && helpers::dotted(v).as_deref() == Some(target.as_str()) {
            if let Some(&(_, at)) = bound.iter().rev().find(|(n, _)| *n == target) {
                f.out.push(at);
            }
        }
    });
    f.out
}

/// The library model builds bound to a name (`net = vgg16(pretrained=True)`) whose
/// train/eval-sensitive head the body replaces by torch layers without any
/// (`net.classifier = nn.Sequential()`, see [`crate::head_replaced_mode_free`]): the name and
/// the start of the build. The model the body keeps has no Dropout.
fn library_builds_head_replaced<'b>(
    body: &'b [Stmt],
    resolve: &dyn Fn(&Expr) -> Option<String>,
) -> Vec<(&'b str, TextSize)> {
    let mut out = Vec::new();
    helpers::for_each_own_stmt(body, &mut |st| {
        let Stmt::Assign(a) = st else { return };
        let ([Expr::Name(n)], (Expr::Call(c), _)) =
            (&a.targets[..], dataflow::module_chain(&a.value))
        else {
            return;
        };
        if let Some(head) = resolve(&c.func).and_then(|q| crate::library_mode_head(&q)) {
            if crate::head_replaced_mode_free(body, n.id.as_str(), head, resolve) {
                out.push((n.id.as_str(), c.start()));
            }
        }
    });
    out
}

/// Does every `return` of a function give one of the locals `replaced` names (see
/// [`library_builds_head_replaced`]): `model = models.vgg16(pretrained=True);
/// model.classifier = nn.Linear(n, 2); return model`?
fn returns_head_replaced(body: &[Stmt], replaced: &[(&str, TextSize)]) -> bool {
    let mut any = false;
    let mut all = true;
    helpers::for_each_own_stmt(body, &mut |st| {
        let Stmt::Return(r) = st else { return };
        any = true;
        all &= matches!(r.value.as_deref(), Some(Expr::Name(n))
            if replaced.iter().any(|(b, _)| *b == n.id.as_str()));
    });
    any && all
}

/// Does every `return` of a function give a module it put in eval mode: `return
/// model.eval()` (a chain ending in the switch, `Net().to(dev).eval()`), or a name whose
/// `eval()` event (of the function's own `events`) comes before the return on every path (not
/// under a condition or in a loop)? A function with any `train()` event may switch back and
/// says nothing. The `eval()` call's range when so. The dataflow's return summary says this
/// only in files it summarises (those that name softmax or sigmoid), while a
/// checkpoint-loading helper (`model = Net(); model.load_state_dict(...); model.eval();
/// return model`) lives anywhere.
fn returns_in_eval_mode(body: &[Stmt], events: &[SumEvent], params: &[&str]) -> Option<TextRange> {
    if events.iter().any(|e| e.kind == EventKind::Train) {
        return None;
    }
    let switched = |name: &str, before: ruff_text_size::TextSize| {
        events
            .iter()
            .find(|e| {
                e.kind == EventKind::Eval
                    && !e.conditional
                    && !e.in_loop
                    && e.range.start() < before
                    && match &e.target {
                        Target::Local(n) | Target::Global(n) => &**n == name,
                        Target::Param(i, path) => {
                            path.is_empty() && params.get(*i as usize) == Some(&name)
                        }
                        _ => false,
                    }
            })
            .map(|e| e.range)
    };
    let mut first = None;
    let mut all = true;
    helpers::for_each_own_stmt(body, &mut |st| {
        let Stmt::Return(r) = st else { return };
        let at = match r.value.as_deref() {
            Some(Expr::Name(n)) => switched(n.id.as_str(), r.start()),
            Some(v @ Expr::Call(_)) => match dataflow::module_chain(v) {
                (_, Some(true)) => Some(v.range()),
                _ => None,
            },
            _ => None,
        };
        match at {
            Some(at) => {
                first.get_or_insert(at);
            }
            None => all = false,
        }
    });
    first.filter(|_| all)
}

/// What calling a local bound to `v` gives, when `v` may be a module object (an instance of a
/// class, a parameter, `self.<attr>`): [`Val::Output`]. The model resolves it to the class's
/// `forward` output; anything else resolves to nothing.
fn output_of(v: &Val) -> Val {
    match v {
        Val::Call { .. } | Val::Param(_) | Val::SelfAttr(_) | Val::Join(_) => {
            Val::Output(Box::new(v.clone()))
        }
        _ => Val::Unknown,
    }
}

fn props_of(v: &dataflow::Value) -> Vec<PropFact> {
    v.facts
        .iter()
        .filter(|f| {
            matches!(
                f.prop,
                Prop::Probabilities
                    | Prop::LogProbabilities
                    | Prop::ColumnVector
                    | Prop::Vector
                    | Prop::EvalMode
            )
        })
        .map(|f| PropFact {
            prop: f.prop,
            definite: f.certainty == dataflow::Certainty::Definite,
            op: f.op,
            origin: f.origin,
        })
        .collect()
}

/// Map an object key seen in a function (`opt`, `self.optimizer`, `model.module`,
/// `opts[0]`) to a summary target.
/// Does a body call `.eval()` on `getattr(self, ...)`, directly or through a name bound to it
/// (`net = getattr(self, "net" + name)` then `net.eval()`)?
fn evals_self_getattr(body: &[Stmt]) -> bool {
    fn self_getattr(e: &Expr) -> bool {
        matches!(e, Expr::Call(c)
            if helpers::name_of(&c.func) == Some("getattr")
                && c.arguments.args.first().and_then(helpers::name_of) == Some("self"))
    }
    let mut bound: Vec<&str> = Vec::new();
    crate::helpers::for_each_own_stmt(body, &mut |st| {
        if let Stmt::Assign(a) = st {
            if self_getattr(&a.value) {
                for t in &a.targets {
                    if let Expr::Name(n) = t {
                        bound.push(n.id.as_str());
                    }
                }
            }
        }
    });
    let mut found = false;
    helpers::for_each_own_call(body, false, &mut |call| {
        if found || !call.arguments.is_empty() {
            return;
        }
        let Some(("eval", recv)) = helpers::method_call(call) else {
            return;
        };
        found =
            self_getattr(recv) || matches!(recv, Expr::Name(n) if bound.contains(&n.id.as_str()));
    });
    found
}

/// `obj.method(...)` of an object named or reached by attributes (`model`, `self.net`), not
/// `self`'s own method (a [`SumCall`]) nor `nn.Module` API: the object and the method's name
/// (see [`FunctionSummary::object_method_calls`], [`FunctionSummary::no_grad_method_calls`]).
fn object_method(call: &ExprCall) -> Option<(&Expr, &str)> {
    let Expr::Attribute(a) = &*call.func else {
        return None;
    };
    let method = a.attr.as_str();
    (matches!(&*a.value, Expr::Name(_) | Expr::Attribute(_))
        && helpers::name_of(&a.value) != Some("self")
        && !crate::classes::is_module_api(method))
    .then_some((&*a.value, method))
}

/// How many parameters a call must pass: those without a default, positional or keyword-only.
fn required_params(p: &ast::Parameters) -> u16 {
    let n = p
        .posonlyargs
        .iter()
        .chain(&p.args)
        .chain(&p.kwonlyargs)
        .filter(|a| a.default.is_none())
        .count();
    u16::try_from(n).unwrap_or(u16::MAX)
}

fn target_of(key: &str, params: &[&str], local: &KindTable, module: &KindTable) -> Target {
    let split = key.find(['.', '[']).unwrap_or(key.len());
    let (root, rest) = key.split_at(split);
    if root == "self" {
        return Target::SelfAttr(rest.trim_start_matches('.').into());
    }
    if let Some(i) = params.iter().position(|p| *p == root) {
        return Target::Param(i as u16, rest.into());
    }
    if local.get(root).is_none() && module.get(root).is_some() {
        return Target::Global(key.into());
    }
    Target::Local(key.into())
}

fn collect_defs<'a>(body: &'a [Stmt], out: &mut Vec<&'a Stmt>) {
    for stmt in body {
        match stmt {
            Stmt::FunctionDef(_) => out.push(stmt),
            Stmt::If(i) => {
                collect_defs(&i.body, out);
                for c in &i.elif_else_clauses {
                    collect_defs(&c.body, out);
                }
            }
            Stmt::Try(t) => {
                collect_defs(&t.body, out);
                collect_defs(&t.orelse, out);
            }
            Stmt::With(w) => collect_defs(&w.body, out),
            Stmt::For(f) => collect_defs(&f.body, out),
            Stmt::While(w) => collect_defs(&w.body, out),
            _ => {}
        }
    }
}

pub(crate) use crate::helpers::for_each_own_stmt;

/// Does a test's text name a device (`x.is_cuda`, `torch.cuda.is_available()`,
/// `args.device == "cuda"`, `use_gpu`)?
fn names_device(test: &str) -> bool {
    ["cuda", "device", "gpu", "GPU"]
        .iter()
        .any(|w| memchr::memmem::find(test.as_bytes(), w.as_bytes()).is_some())
}

struct BodyWalker<'w, 'b> {
    b: &'w Builder<'b>,
    params: &'w [&'w str],
    nested: Option<&'w Nested>,
    vals: &'w FxHashMap<String, Val>,
    loop_depth: u32,
    cond_depth: u32,
    /// Nested conditions that name a device (see [`SumCall::device_conditional`]).
    device_cond_depth: u32,
    no_grad: u32,
    /// Functions and methods called with autograd off (see
    /// [`FileSummary::no_grad_calls`]).
    no_grad_callees: Vec<Box<str>>,
    calls: Vec<SumCall>,
    instance_calls: Vec<InstanceCall>,
    no_grad_method_calls: Vec<(Val, Box<str>)>,
    module_api_uses: Vec<Val>,
    global_module_uses: Vec<Box<str>>,
    usage: Vec<Usage>,
    /// A method's use of the attributes of `self` (see [`FunctionSummary::attr_usage`]).
    attr_usage: Vec<(Box<str>, Usage)>,
    /// The body is a method's: `self.<attr>` is an attribute of its instance.
    method: bool,
    has_loop: bool,
    grad_off_block: bool,
    mode_layer: Option<(&'static str, TextRange)>,
    /// The start of a layer built and applied on the spot (`nn.Dropout(p)(x)`): a fresh
    /// module, never registered, in training mode whatever `eval()` does to the model. Also
    /// a layer built only for some arguments (`nn.Dropout(p) if p > 0 else None`).
    applied_inline: Option<TextSize>,
    builds: Vec<Ref>,
    mode_free_builds: Vec<Ref>,
    /// The values an `__init__` holds in eval mode (see [`held_in_eval`]); empty elsewhere.
    held: &'w [TextRange],
    /// Starts of library model builds whose only train/eval-sensitive part the body replaces
    /// by torch layers without any (see [`library_builds_head_replaced`]).
    head_replaced: &'w [TextSize],
    /// With `held`: the layer and builds outside those values.
    untrained: Option<Untrained>,
    /// The body is a module's `forward`: a layer it builds into a local name
    /// (`dropout = nn.Dropout(p=self.dropout)`) is a fresh module on every call, in training
    /// mode whatever the model's mode, like one applied on the spot.
    forward: bool,
}

impl BodyWalker<'_, '_> {
    /// The values a call passes: positional (`*args` unknown) and keyword (`**kwargs` left out).
    fn call_args(&self, call: &ExprCall) -> (ThinVec<Val>, ThinVec<(Box<str>, Val)>) {
        let args = call
            .arguments
            .args
            .iter()
            .map(|e| match e {
                Expr::Starred(_) => Val::Unknown,
                e => self.b.val(e, self.params, self.vals, self.nested),
            })
            .collect();
        let kwargs = call
            .arguments
            .keywords
            .iter()
            .filter_map(|k| {
                let n = k.arg.as_ref()?;
                Some((
                    Box::from(n.as_str()),
                    self.b.val(&k.value, self.params, self.vals, self.nested),
                ))
            })
            .collect();
        (args, kwargs)
    }

    /// Record `obj(...)` when `obj` is a name bound to a call of something the model may
    /// resolve, a parameter, or `self.<attr>` (see [`InstanceCall`]).
    fn instance_call(&mut self, call: &ExprCall) {
        if !self.tracks_uses() {
            return;
        }
        let recv = match &*call.func {
            Expr::Name(n) => {
                let id = n.id.as_str();
                if self.nested_def(id) || !self.bound_here(id) {
                    return;
                }
                self.b.val(&call.func, self.params, self.vals, self.nested)
            }
            Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => {
                Val::SelfAttr(a.attr.as_str().into())
            }
            _ => return,
        };
        if !matches!(recv, Val::Call { .. } | Val::Param(_) | Val::SelfAttr(_)) {
            return;
        }
        let Some(key) = flow::object_key(&call.func) else {
            return;
        };
        let (args, kwargs) = self.call_args(call);
        self.instance_calls.push(InstanceCall {
            recv,
            key: key.into(),
            args,
            kwargs,
            range: call.range(),
            in_loop: self.loop_depth > 0,
            conditional: self.cond_depth > 0,
            no_grad: self.no_grad > 0,
        });
    }

    /// Record `obj.method(...)` called with autograd off (see
    /// [`FunctionSummary::no_grad_method_calls`]).
    fn no_grad_method_call(&mut self, call: &ExprCall) {
        let Some((obj, method)) = object_method(call).filter(|(_, m)| !m.starts_with("__")) else {
            return;
        };
        let recv = self.b.val(obj, self.params, self.vals, self.nested);
        if matches!(
            recv,
            Val::Unknown | Val::None | Val::Kind(_) | Val::Torch(_) | Val::Loss(_)
        ) {
            return;
        }
        let seen = &self.no_grad_method_calls;
        if !seen.iter().any(|(v, n)| *v == recv && &**n == method) {
            self.no_grad_method_calls.push((recv, method.into()));
        }
    }

    /// Record an object used as a module: given an `nn.Module` API method (see
    /// [`FunctionSummary::module_api_uses`]), or, for a module-level name of the file, called
    /// too (see [`FunctionSummary::global_module_uses`]).
    fn module_use(&mut self, call: &ExprCall) {
        if !self.tracks_uses() {
            return;
        }
        let (obj, api) = match helpers::method_call(call) {
            Some((m, recv)) if crate::classes::is_module_api(m) => (recv, true),
            _ => (&*call.func, false),
        };
        match obj {
            Expr::Name(n) => {
                let id = n.id.as_str();
                if self.nested_def(id) {
                    return;
                }
                if self.bound_here(id) {
                    if !api {
                        return;
                    }
                    let v = self.b.val(obj, self.params, self.vals, self.nested);
                    if matches!(v, Val::Call { .. } | Val::Param(_))
                        && !self.module_api_uses.contains(&v)
                    {
                        self.module_api_uses.push(v);
                    }
                } else if self.b.out.globals.iter().any(|(g, _)| &**g == id)
                    && !self.global_module_uses.iter().any(|g| &**g == id)
                {
                    self.global_module_uses.push(id.into());
                }
            }
            Expr::Attribute(a) if api && helpers::name_of(&a.value) == Some("self") => {
                let v = Val::SelfAttr(a.attr.as_str().into());
                if !self.module_api_uses.contains(&v) {
                    self.module_api_uses.push(v);
                }
            }
            _ => {}
        }
    }

    /// Are instance calls and module uses recorded in this file (it says torch or training
    /// words)?
    fn tracks_uses(&self) -> bool {
        let v = &self.b.out.vocab;
        v.torch || v.training
    }

    /// Is `id` a function or class defined inside this function?
    fn nested_def(&self, id: &str) -> bool {
        self.nested
            .is_some_and(|ns| ns.iter().any(|(m, _)| m == id))
    }

    /// Is `id` a value this function binds or a parameter of it?
    fn bound_here(&self, id: &str) -> bool {
        self.vals.contains_key(id) || self.params.contains(&id)
    }

    fn param(&self, expr: &Expr) -> Option<usize> {
        let n = helpers::name_of(expr)?;
        if self.vals.contains_key(n) {
            return None;
        }
        self.params.iter().position(|p| *p == n)
    }

    fn mark(&mut self, expr: &Expr, bits: u16) {
        if let Some(i) = self.param(expr) {
            self.usage[i].0 |= bits;
            return;
        }
        // `self.<attr>` in a method that does not rebind `self`.
        let Expr::Attribute(a) = expr else { return };
        if !self.method
            || helpers::name_of(&a.value) != Some("self")
            || self.vals.contains_key("self")
        {
            return;
        }
        let attr = a.attr.as_str();
        match self.attr_usage.iter_mut().find(|(n, _)| &**n == attr) {
            Some((_, u)) => u.0 |= bits,
            None => self.attr_usage.push((attr.into(), Usage(bits))),
        }
    }

    fn suite(&mut self, body: &[Stmt]) {
        for stmt in body {
            self.stmt(stmt);
        }
    }

    /// Does a context manager turn autograd off (see [`helpers::disables_grad`])?
    fn grad_off(&self, expr: &Expr) -> bool {
        dataflow::turns_grad_off(expr, &self.b.scopes)
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match stmt {
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
            Stmt::For(f) => {
                self.has_loop = true;
                self.expr(&f.iter);
                self.mark(&f.iter, Usage::ITERATED);
                if let Expr::Call(c) = &*f.iter {
                    // `for i, batch in enumerate(loader)`
                    if helpers::name_of(&c.func) == Some("enumerate") {
                        if let Some(a) = c.arguments.args.first() {
                            self.mark(a, Usage::ITERATED);
                        }
                    }
                }
                self.loop_depth += 1;
                self.suite(&f.body);
                self.loop_depth -= 1;
                self.suite(&f.orelse);
            }
            Stmt::While(w) => {
                self.has_loop = true;
                self.expr(&w.test);
                self.loop_depth += 1;
                self.suite(&w.body);
                self.loop_depth -= 1;
                self.suite(&w.orelse);
            }
            Stmt::If(i) => {
                self.expr(&i.test);
                let device = u32::from(
                    std::iter::once(&*i.test)
                        .chain(i.elif_else_clauses.iter().filter_map(|c| c.test.as_ref()))
                        .any(|t| names_device(&self.b.text[t.range()])),
                );
                self.cond_depth += 1;
                self.device_cond_depth += device;
                self.suite(&i.body);
                for c in &i.elif_else_clauses {
                    if let Some(t) = &c.test {
                        self.expr(t);
                    }
                    self.suite(&c.body);
                }
                self.cond_depth -= 1;
                self.device_cond_depth -= device;
            }
            Stmt::With(w) => {
                let mut off = 0;
                for item in &w.items {
                    self.expr(&item.context_expr);
                    if self.grad_off(&item.context_expr) {
                        off += 1;
                    }
                }
                self.grad_off_block |= off > 0;
                self.no_grad += off;
                self.suite(&w.body);
                self.no_grad -= off;
            }
            Stmt::Try(t) => {
                self.suite(&t.body);
                self.cond_depth += 1;
                for h in &t.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    self.suite(&h.body);
                }
                self.cond_depth -= 1;
                self.suite(&t.orelse);
                self.suite(&t.finalbody);
            }
            _ => {
                if let (true, Stmt::Assign(a)) = (self.forward, stmt) {
                    if let (Expr::Call(c), true) = (
                        &*a.value,
                        a.targets.iter().all(|t| matches!(t, Expr::Name(_))),
                    ) {
                        self.applied_inline = Some(c.start());
                    }
                }
                struct E<'x, 'w, 'b> {
                    w: &'x mut BodyWalker<'w, 'b>,
                }
                impl<'a> Visitor<'a> for E<'_, '_, '_> {
                    fn visit_expr(&mut self, expr: &'a Expr) {
                        self.w.expr_node(expr);
                        match expr {
                            Expr::Lambda(_) => {}
                            _ => visitor::walk_expr(self, expr),
                        }
                    }
                    fn visit_stmt(&mut self, stmt: &'a Stmt) {
                        match stmt {
                            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
                            _ => visitor::walk_stmt(self, stmt),
                        }
                    }
                }
                let mut e = E { w: self };
                e.visit_stmt(stmt);
            }
        }
    }

    fn expr(&mut self, expr: &Expr) {
        struct E<'x, 'w, 'b> {
            w: &'x mut BodyWalker<'w, 'b>,
        }
        impl<'a> Visitor<'a> for E<'_, '_, '_> {
            fn visit_expr(&mut self, expr: &'a Expr) {
                self.w.expr_node(expr);
                match expr {
                    Expr::Lambda(_) => {}
                    _ => visitor::walk_expr(self, expr),
                }
            }
        }
        let mut e = E { w: self };
        e.visit_expr(expr);
    }

    fn expr_node(&mut self, expr: &Expr) {
        match expr {
            Expr::Attribute(a) => match a.attr.as_str() {
                "param_groups" => self.mark(&a.value, Usage::PARAM_GROUPS),
                "dataset" | "sampler" | "batch_size" => self.mark(&a.value, Usage::LOADER_ATTR),
                _ => {}
            },
            // `nn.Dropout(p) if p > 0 else None`: a layer that exists only for some
            // constructor arguments (a DP-LSTM's dropout, off by default) does not by itself
            // make the class train/eval-sensitive.
            Expr::If(i) => {
                let absent = |e: &Expr| {
                    matches!(e, Expr::NoneLiteral(_))
                        || matches!(e, Expr::Call(c) if matches!(&*c.func,
                            Expr::Name(n) if n.id.as_str() == "Identity")
                            || matches!(&*c.func,
                            Expr::Attribute(a) if a.attr.as_str() == "Identity"))
                };
                for (branch, other) in [(&*i.body, &*i.orelse), (&*i.orelse, &*i.body)] {
                    if let (Expr::Call(c), true) = (branch, absent(other)) {
                        self.applied_inline = Some(c.start());
                    }
                }
            }
            Expr::Call(call) => {
                self.mark(&call.func, Usage::CALLED);
                if self.no_grad > 0 {
                    let name = match &*call.func {
                        Expr::Attribute(a) => Some(a.attr.as_str()),
                        Expr::Name(n) => Some(n.id.as_str()),
                        _ => None,
                    };
                    if let Some(name) = name {
                        let seen = &mut self.no_grad_callees;
                        if seen.last().is_none_or(|l| &**l != name) {
                            seen.push(Box::from(name));
                        }
                    }
                    self.no_grad_method_call(call);
                }
                if let Some((m, recv)) = helpers::method_call(call) {
                    let bits = Usage::of_method(m);
                    if bits != 0 {
                        self.mark(recv, bits);
                    }
                }
                if let Expr::Call(inner) = &*call.func {
                    self.applied_inline = Some(inner.start());
                }
                // Outside the values `__init__` holds in eval mode (asked once per call, and
                // only in such an `__init__`).
                let outside_held = self.untrained.is_some()
                    && !self.held.iter().any(|r| r.contains_range(call.range()));
                // Every family the function builds (`Dropout` and `BatchNorm`), at the first.
                if self.applied_inline != Some(call.start())
                    && !self.head_replaced.contains(&call.start())
                {
                    if let Some(k) = self.b.layer_of_call(call) {
                        join_layer(&mut self.mode_layer, Some((k, call.range())));
                        if let Some(u) = self.untrained.as_mut().filter(|_| outside_held) {
                            join_layer(&mut u.layer, Some((k, call.range())));
                        }
                    }
                }
                self.instance_call(call);
                self.module_use(call);
                if let Some(callee) = self.b.callee_ref(call, self.params, self.vals, self.nested) {
                    if matches!(callee, Ref::Qualified(_) | Ref::Local(_)) {
                        if self.head_replaced.contains(&call.start()) {
                            self.mode_free_builds.push(callee.clone());
                        } else if let Some(u) = self.untrained.as_mut().filter(|_| outside_held) {
                            u.builds.push(callee.clone());
                        }
                        self.builds.push(callee.clone());
                    }
                    let (args, kwargs) = self.call_args(call);
                    let arg_keys = call
                        .arguments
                        .args
                        .iter()
                        .map(|a| flow::object_key(a).map(Box::from))
                        .collect();
                    let kwarg_keys = call
                        .arguments
                        .keywords
                        .iter()
                        .filter_map(|k| {
                            Some((
                                Box::from(k.arg.as_ref()?.as_str()),
                                Box::from(flow::object_key(&k.value)?),
                            ))
                        })
                        .collect();
                    let arg_lits = call.arguments.args.iter().map(Lit::of).collect();
                    let kwarg_lits = call
                        .arguments
                        .keywords
                        .iter()
                        .filter_map(|k| {
                            Some((Box::from(k.arg.as_ref()?.as_str()), Lit::of(&k.value)))
                        })
                        .collect();
                    let spreads = call.arguments.args.iter().any(Expr::is_starred_expr)
                        || call.arguments.keywords.iter().any(|k| k.arg.is_none());
                    self.calls.push(SumCall {
                        callee,
                        args,
                        kwargs,
                        arg_keys,
                        kwarg_keys,
                        arg_lits,
                        kwarg_lits,
                        spreads,
                        range: call.range(),
                        in_loop: self.loop_depth > 0,
                        conditional: self.cond_depth > 0,
                        device_conditional: self.device_cond_depth > 0,
                        no_grad: self.no_grad > 0,
                        splat: helpers::has_args_splat(call) || helpers::has_kwargs_splat(call),
                    });
                }
            }
            _ => {}
        }
    }
}

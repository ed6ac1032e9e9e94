//! Value kinds: light, flow-insensitive type inference for the objects PyTorch code juggles.
//!
//! A [`KindTable`] maps the names bound in one scope (and `self.<attr>` in a class) to what
//! they hold, from their assignments: `model = Net()` is a Module, `opt = torch.optim.SGD(..)`
//! an Optimizer. A name bound to two different kinds in one scope is `Unknown`: precision
//! first. Module methods that return the module (`.to()`, `.cuda()`, `.eval()`) keep the kind;
//! the same methods on a Tensor give a Tensor (Tensor.to is out-of-place, Module.to in place).
use crate::bindings::Scopes;
use crate::classes::{is_module_base, ModuleClasses};
use crate::project::Usage;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;
use rustc_hash::FxHashMap;

/// What a value is.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Kind {
    /// An `nn.Module` (layers, losses, models, wrappers).
    Module,
    /// A `torch.Tensor` (or Parameter).
    Tensor,
    /// An optimizer; the class name (`SGD`, `LBFGS`, ...).
    Optimizer(String),
    /// A learning-rate scheduler; the class name (`StepLR`, `ReduceLROnPlateau`, ...).
    Scheduler(String),
    /// `GradScaler`.
    GradScaler,
    /// `DataLoader`.
    DataLoader,
    /// A sampler; the class name.
    Sampler(String),
    /// A generator of parameters (`model.parameters()`, `filter(...)`).
    ParamGenerator,
    /// Not known.
    #[default]
    Unknown,
}

/// Kinds of the names of one scope.
#[derive(Debug, Default, Clone)]
pub struct KindTable {
    names: FxHashMap<String, Kind>,
    /// Where each name with a known kind got its value (the assigned expression), for
    /// findings that point at "the optimizer is created here".
    origins: FxHashMap<String, ruff_text_size::TextRange>,
}

/// Torch factory functions that return tensors.
const TENSOR_FACTORIES: &[&str] = &[
    "tensor",
    "as_tensor",
    "from_numpy",
    "zeros",
    "ones",
    "empty",
    "full",
    "rand",
    "randn",
    "randint",
    "randperm",
    "arange",
    "linspace",
    "logspace",
    "eye",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "rand_like",
    "randn_like",
    "randint_like",
    "cat",
    "stack",
    "matmul",
    "mm",
    "bmm",
    "sigmoid",
    "tanh",
    "softmax",
    "log_softmax",
    "exp",
    "log",
    "sqrt",
    "where",
    "clamp",
    "abs",
    "mean",
    "sum",
    "max",
    "min",
    "einsum",
    "FloatTensor",
    "LongTensor",
    "Tensor",
    "normal",
];

/// Tensor methods that return a tensor.
const TENSOR_METHODS: &[&str] = &[
    "to",
    "cuda",
    "cpu",
    "float",
    "double",
    "half",
    "bfloat16",
    "long",
    "int",
    "bool",
    "detach",
    "clone",
    "contiguous",
    "view",
    "reshape",
    "permute",
    "transpose",
    "t",
    "squeeze",
    "unsqueeze",
    "flatten",
    "expand",
    "repeat",
    "sum",
    "mean",
    "softmax",
    "log_softmax",
    "sigmoid",
    "exp",
    "log",
    "abs",
    "pow",
    "matmul",
    "type",
    "requires_grad_",
    "masked_fill",
    "narrow",
    "mul",
    "add",
];

/// Module methods that act in place and return the module itself (`model.to(dev)`).
pub const MODULE_SELF_METHODS: &[&str] = &[
    "to",
    "cuda",
    "cpu",
    "float",
    "double",
    "half",
    "bfloat16",
    "eval",
    "train",
    "requires_grad_",
    "type",
    "apply",
    "to_empty",
    "share_memory",
];

fn model_factory(q: &str) -> bool {
    if q.starts_with("torchvision.models.") {
        return crate::classes::is_torchvision_model_builder(q);
    }
    matches!(
        q,
        "timm.create_model"
            | "torch.hub.load"
            | "torch.compile"
            | "torch.jit.script"
            | "torch.jit.trace"
    ) || crate::classes::is_data_parallel_wrapper(q)
        || (q.starts_with("transformers.")
            && q.ends_with(".from_pretrained")
            && q.contains("Model")
            && !crate::classes::is_non_torch_model(q))
}

impl KindTable {
    /// Infer from a suite of statements (not descending into nested defs/classes), with
    /// optional parameters (annotations count) and an outer table for free names.
    pub fn infer(
        body: &[Stmt],
        params: Option<&ast::Parameters>,
        scopes: &Scopes,
        classes: &ModuleClasses,
        outer: Option<&KindTable>,
    ) -> Self {
        Self::infer_with(body, params, scopes, classes, outer, None)
    }

    /// [`KindTable::infer`] for a function: parameters without an annotation take the kind
    /// the project model gives them (the arguments at its call sites, else its usage).
    pub fn infer_function(
        f: &ast::StmtFunctionDef,
        scopes: &Scopes,
        classes: &ModuleClasses,
        outer: Option<&KindTable>,
    ) -> Self {
        let id = classes
            .project()
            .and_then(|p| p.function_at(f.range.start()).map(|id| (p, id)));
        Self::infer_with(
            &f.body,
            Some(&f.parameters),
            scopes,
            classes,
            outer,
            id.as_ref().map(|(p, id)| (*p, *id)),
        )
    }

    /// [`KindTable::infer`] for the module body: names bound to objects only the project
    /// model resolves (an element of a tuple a project function returns, an instance of a
    /// class chosen through a registry) take the kind it gives them.
    pub fn infer_module(body: &[Stmt], scopes: &Scopes, classes: &ModuleClasses) -> Self {
        let id = classes.project().map(|p| {
            (
                p,
                crate::project::FuncId {
                    file: p.file,
                    index: 0,
                },
            )
        });
        Self::infer_with(body, None, scopes, classes, None, id)
    }

    fn infer_with(
        body: &[Stmt],
        params: Option<&ast::Parameters>,
        scopes: &Scopes,
        classes: &ModuleClasses,
        outer: Option<&KindTable>,
        project: Option<(&crate::project::ProjectFile, crate::project::FuncId)>,
    ) -> Self {
        let mut t = KindTable::default();
        if let Some(params) = params {
            // Every parameter shadows the outer scope's name, known kind or not.
            for (i, p) in params.iter().enumerate() {
                let mut k = p
                    .annotation()
                    .map(|ann| annotation_kind(ann, scopes, classes))
                    .unwrap_or(Kind::Unknown);
                if k == Kind::Unknown {
                    if let Some((pf, id)) = project {
                        k = pf.model.param(id, i).kind;
                    }
                }
                t.names.insert(p.name().to_string(), k);
            }
        }
        let mut cx = Infer {
            t,
            scopes,
            classes,
            outer,
        };
        // Two rounds so `a = b.to(dev)` after `b = Net()` settles regardless of order quirks.
        for _ in 0..2 {
            cx.suite(body);
        }
        // `enc, dec = load_model(path)`, `model = MODELS[args.arch](...)`: what the project
        // model resolves these to.
        if let Some((pf, id)) = project {
            if pf.model.has_computed_locals(id) {
                for (name, k) in cx.t.names.iter_mut() {
                    if *k == Kind::Unknown {
                        if let Some(r) = pf.model.local_value(id, name) {
                            *k = r.kind;
                        }
                    }
                }
            }
        }
        // An object nothing above tells (`model = cnn.Net()` from a module imported at run
        // time) is a module when the suite uses it as one: `.parameters()`, or a mode switch
        // together with a call, a state dict or a move (see [`Usage::kind`]). Parameters have
        // their usage in the project model's answer already.
        let is_param = |n: &str| params.is_some_and(|ps| ps.iter().any(|p| p.name().as_str() == n));
        if cx
            .t
            .names
            .iter()
            .any(|(n, k)| *k == Kind::Unknown && !is_param(n))
        {
            let usages = name_usages(body);
            for (name, k) in cx.t.names.iter_mut() {
                if *k == Kind::Unknown
                    && !is_param(name)
                    && usages
                        .get(name.as_str())
                        .is_some_and(|u| u.kind() == Kind::Module)
                {
                    *k = Kind::Module;
                }
            }
        }
        cx.t
    }

    /// The names of an enclosing function as seen from a function nested in it (a closure):
    /// the enclosing function's own names over the module's.
    pub fn chained(inner: &KindTable, outer: Option<&KindTable>) -> KindTable {
        let mut t = outer.cloned().unwrap_or_default();
        for (n, k) in &inner.names {
            t.names.insert(n.clone(), k.clone());
            match inner.origins.get(n) {
                Some(o) => {
                    t.origins.insert(n.clone(), *o);
                }
                None => {
                    t.origins.remove(n);
                }
            }
        }
        t
    }

    /// The kind of a name.
    pub fn get(&self, name: &str) -> Option<&Kind> {
        self.names.get(name)
    }

    /// Where a name with a known kind got its value.
    pub fn origin(&self, name: &str) -> Option<ruff_text_size::TextRange> {
        match self.names.get(name) {
            Some(Kind::Unknown) | None => None,
            Some(_) => self.origins.get(name).copied(),
        }
    }

    /// Record a kind and the expression it came from (the first one is kept).
    pub fn bind_at(&mut self, name: &str, kind: Kind, origin: ruff_text_size::TextRange) {
        if !self.origins.contains_key(name) {
            self.origins.insert(name.to_string(), origin);
        }
        self.bind(name, kind);
    }

    /// Record a kind (conflicts make it Unknown).
    pub fn bind(&mut self, name: &str, kind: Kind) {
        match self.names.get_mut(name) {
            Some(existing) if *existing != kind => *existing = Kind::Unknown,
            Some(_) => {}
            None => {
                self.names.insert(name.to_string(), kind);
            }
        }
    }

    /// Kinds of `self.<attr>` assigned in a class's methods (usually `__init__`).
    pub fn infer_self_attributes(
        class: &ast::StmtClassDef,
        scopes: &Scopes,
        classes: &ModuleClasses,
    ) -> Self {
        let mut out = KindTable::default();
        for stmt in &class.body {
            let Stmt::FunctionDef(f) = stmt else { continue };
            // The method's own kinds only matter for the values of its `self.<attr>`
            // assignments, which most methods lack: they are inferred at the first one.
            let mut cx: Option<Infer> = None;
            for_each_self_assignment(&f.body, &mut |attr, value| {
                // `self.model = None` in `__init__`, built later (`build_model()`): a
                // placeholder, not a second kind.
                if value.is_none_literal_expr() {
                    return;
                }
                // `self.model = self.model.to(device)` (`.cuda()`, `.eval()`, ...): the same
                // object, moved or switched, not a second kind.
                if matches!(value, Expr::Call(_))
                    && crate::helpers::self_attribute(crate::dataflow::module_chain(value).0)
                        == Some(attr)
                {
                    return;
                }
                let cx = cx.get_or_insert_with(|| Infer {
                    t: KindTable::infer_function(f, scopes, classes, None),
                    scopes,
                    classes,
                    outer: None,
                });
                out.bind_at(attr, cx.kind(value), value.range());
            });
        }
        // `self.model = get_model(name)()`, `self.enc, self.dec = load_model(path)`: what the
        // project model resolves these to.
        if let Some((p, c)) = classes
            .project()
            .and_then(|p| Some((p, p.class_at(class.range.start())?)))
        {
            for (name, k) in out.names.iter_mut() {
                if *k == Kind::Unknown {
                    if let Some(r) = p.model.computed_attr(c, name) {
                        *k = r.kind;
                    }
                }
            }
        }
        out
    }
}

/// Each `self.<attr> = value` of a method body, with its value: directly, or nested in `if`,
/// `for`, `with` and `try` blocks (not in nested functions).
fn for_each_self_assignment<'a>(body: &'a [Stmt], f: &mut dyn FnMut(&'a str, &'a Expr)) {
    for stmt in body {
        match stmt {
            Stmt::Assign(a) => {
                for target in &a.targets {
                    if let Some(attr) = crate::helpers::self_attribute(target) {
                        f(attr, &a.value);
                    }
                }
            }
            Stmt::AnnAssign(a) => {
                if let (Some(attr), Some(v)) = (crate::helpers::self_attribute(&a.target), &a.value)
                {
                    f(attr, v);
                }
            }
            Stmt::If(i) => {
                for_each_self_assignment(&i.body, f);
                for c in &i.elif_else_clauses {
                    for_each_self_assignment(&c.body, f);
                }
            }
            Stmt::For(l) => for_each_self_assignment(&l.body, f),
            Stmt::With(w) => for_each_self_assignment(&w.body, f),
            Stmt::Try(t) => {
                for_each_self_assignment(&t.body, f);
                for_each_self_assignment(&t.orelse, f);
            }
            _ => {}
        }
    }
}

fn annotation_kind(ann: &Expr, scopes: &Scopes, classes: &ModuleClasses) -> Kind {
    let ann = match ann {
        Expr::StringLiteral(_) => return Kind::Unknown,
        Expr::Subscript(s) => &s.value,
        e => e,
    };
    if let Expr::Name(n) = ann {
        if classes.is_module(n.id.as_str()) && scopes.lookup(n.id.as_str()).is_none() {
            return Kind::Module;
        }
    }
    match scopes.resolve(ann).as_deref() {
        Some("torch.Tensor" | "torch.nn.Parameter" | "torch.nn.parameter.Parameter") => {
            Kind::Tensor
        }
        Some("torch.optim.Optimizer" | "torch.optim.optimizer.Optimizer") => {
            Kind::Optimizer("Optimizer".into())
        }
        Some("torch.utils.data.DataLoader" | "torch.utils.data.dataloader.DataLoader") => {
            Kind::DataLoader
        }
        Some(q) if is_module_base(q) => Kind::Module,
        _ => Kind::Unknown,
    }
}

/// What an inference looks names up in.
#[derive(Clone, Copy)]
pub struct KindContext<'s> {
    /// The names of the current scope.
    pub local: &'s KindTable,
    /// The enclosing scope (module), for free names.
    pub outer: Option<&'s KindTable>,
    /// `self.<attr>` kinds of the enclosing class.
    pub attrs: Option<&'s KindTable>,
    /// Bindings.
    pub scopes: &'s Scopes,
    /// Module classes of the file.
    pub classes: &'s ModuleClasses,
}

struct Infer<'s> {
    t: KindTable,
    scopes: &'s Scopes,
    classes: &'s ModuleClasses,
    outer: Option<&'s KindTable>,
}

impl Infer<'_> {
    fn kind(&self, expr: &Expr) -> Kind {
        KindContext {
            local: &self.t,
            outer: self.outer,
            attrs: None,
            scopes: self.scopes,
            classes: self.classes,
        }
        .kind(expr)
    }
}

impl KindContext<'_> {
    fn name_kind(&self, name: &str) -> Kind {
        self.local
            .get(name)
            .or_else(|| self.outer.and_then(|o| o.get(name)))
            .cloned()
            .unwrap_or(Kind::Unknown)
    }

    /// The kind of an expression.
    pub fn kind(&self, expr: &Expr) -> Kind {
        match expr {
            Expr::Name(n) => self.name_kind(n.id.as_str()),
            Expr::Attribute(a) if crate::helpers::name_of(&a.value) == Some("self") => self
                .attrs
                .and_then(|t| t.get(a.attr.as_str()))
                .cloned()
                .unwrap_or(Kind::Unknown),
            Expr::Call(call) => self.call_kind(call),
            Expr::BinOp(b) => {
                let (l, r) = (self.kind(&b.left), self.kind(&b.right));
                if l == Kind::Tensor || r == Kind::Tensor {
                    Kind::Tensor
                } else {
                    Kind::Unknown
                }
            }
            Expr::Subscript(s) => match self.kind(&s.value) {
                Kind::Tensor => Kind::Tensor,
                _ => Kind::Unknown,
            },
            Expr::Attribute(a)
                if a.attr.as_str() == "grad"
                    || a.attr.as_str() == "data"
                    || a.attr.as_str() == "T"
                    || a.attr.as_str() == "mT" =>
            {
                match self.kind(&a.value) {
                    Kind::Tensor => Kind::Tensor,
                    _ => Kind::Unknown,
                }
            }
            _ => Kind::Unknown,
        }
    }

    /// The kind of a call's result.
    pub fn call_kind(&self, call: &ast::ExprCall) -> Kind {
        if let Expr::Name(n) = &*call.func {
            let id = n.id.as_str();
            if self.classes.is_module(id) && self.scopes.lookup(id).is_none() {
                return Kind::Module;
            }
            if id == "filter" {
                return Kind::ParamGenerator;
            }
            // A same-file function (a builder returning a model, loader or optimizer).
            if self.local.get(id).is_none()
                && self.outer.is_none_or(|o| o.get(id).is_none())
                && self.scopes.lookup_str(id).is_none()
            {
                // A same-file function, or a name a star import brings.
                if let Some(p) = self.classes.project() {
                    if let Some(
                        e
                        @ (crate::project::Entity::Function(_) | crate::project::Entity::Class(_)),
                    ) = p.local(id)
                    {
                        return p.resolve_entity_call(e).kind;
                    }
                }
            }
        }
        if let Some(q) = self.scopes.resolve(&call.func) {
            let k = qualified_call_kind(&q);
            if k == Kind::Unknown {
                if let Some(p) = self.classes.project() {
                    return p.call_kind(&q);
                }
            }
            return k;
        }
        if let Expr::Attribute(a) = &*call.func {
            let method = a.attr.as_str();
            let recv = self.kind(&a.value);
            return match (recv, method) {
                (Kind::Module, m) if MODULE_SELF_METHODS.contains(&m) => Kind::Module,
                (Kind::Module, "parameters" | "named_parameters") => Kind::ParamGenerator,
                (Kind::Tensor, m) if TENSOR_METHODS.contains(&m) => Kind::Tensor,
                _ => Kind::Unknown,
            };
        }
        Kind::Unknown
    }
}

/// Is the optimizer class (`Kind::Optimizer`'s name) adaptive in a way that makes its update
/// independent of a constant factor on the gradients: Adam and its variants, RMSprop,
/// Adagrad, Adadelta (they divide by a running gradient magnitude), Lion (it takes the sign)?
/// Summing k micro-batch gradients instead of averaging them leaves their step size
/// unchanged, up to `eps`.
pub fn is_scale_invariant_optimizer(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    l.contains("adam")
        || l.contains("rmsprop")
        || l.contains("adagrad")
        || l.contains("adadelta")
        || l.contains("adafactor")
        || l == "lion"
}

/// Does calling the qualified name build a learning-rate scheduler, of torch or of another
/// library? Besides the kinds [`qualified_call_kind`] gives (`torch.optim.lr_scheduler.*`,
/// the Hugging Face schedule factories), the schedulers of timm (`timm.scheduler.
/// CosineLRScheduler`, `StepLRScheduler`, ..., `create_scheduler`, `create_scheduler_v2`),
/// of the `warmup_scheduler` package (`GradualWarmupScheduler`) and of Lightning Bolts
/// (`pl_bolts.optimizers.lr_scheduler.LinearWarmupCosineAnnealingLR`). Those others are not
/// `Kind::Scheduler`: their `step` has other semantics (timm's `step(epoch)` and
/// `step_update(num_updates)` never wrap `optimizer.step`), so ordering rules do not apply to
/// them; but an optimizer handed to one is handed to a scheduler.
pub fn is_scheduler_constructor(q: &str) -> bool {
    if matches!(qualified_call_kind(q), Kind::Scheduler(_)) {
        return true;
    }
    let last = crate::helpers::last_segment(q);
    if let Some(rest) = q.strip_prefix("timm.scheduler.") {
        return !rest.is_empty()
            && (last.ends_with("Scheduler") || last.starts_with("create_scheduler"));
    }
    q.starts_with("warmup_scheduler.") && last == "GradualWarmupScheduler"
        || q.starts_with("pl_bolts.optimizers.lr_scheduler.")
            && last.chars().next().is_some_and(char::is_uppercase)
}

/// What calling a qualified name gives, from the name alone: `torch.optim.SGD` an optimizer,
/// `torch.nn.Linear` a module, `torch.zeros` a tensor, `torch.utils.data.DataLoader` a
/// loader... `Unknown` for anything else (project classes and functions are the project
/// model's business).
pub fn qualified_call_kind(q: &str) -> Kind {
    if let Some(rest) = q.strip_prefix("torch.optim.lr_scheduler.") {
        return Kind::Scheduler(crate::helpers::last_segment(rest).to_string());
    }
    // Hugging Face schedule factories (`get_linear_schedule_with_warmup`, `get_scheduler`)
    // return a `torch.optim.lr_scheduler.LambdaLR`; the kind keeps the factory's name.
    if q.starts_with("transformers.") || q.starts_with("diffusers.optimization.") {
        let last = crate::helpers::last_segment(q);
        if last.starts_with("get_") && last.contains("schedule") {
            return Kind::Scheduler(last.to_string());
        }
    }
    if let Some(rest) = q.strip_prefix("torch.optim.") {
        let name = rest.rsplit('.').next().unwrap_or(rest);
        if name.chars().next().is_some_and(char::is_uppercase) {
            return Kind::Optimizer(name.to_string());
        }
    }
    if matches!(
        q,
        "torch.amp.GradScaler"
            | "torch.cuda.amp.GradScaler"
            | "torch.cpu.amp.GradScaler"
            | "torch.GradScaler"
    ) {
        return Kind::GradScaler;
    }
    if matches!(
        q,
        "torch.utils.data.DataLoader" | "torch.utils.data.dataloader.DataLoader"
    ) {
        return Kind::DataLoader;
    }
    if let Some(rest) = q.strip_prefix("torch.utils.data.") {
        let name = rest.rsplit('.').next().unwrap_or(rest);
        if name.ends_with("Sampler") {
            return Kind::Sampler(name.to_string());
        }
    }
    if q == "torch.nn.Parameter" || q == "torch.nn.parameter.Parameter" {
        return Kind::Tensor;
    }
    if is_module_base(q) || model_factory(q) {
        return Kind::Module;
    }
    if let Some(f) = q.strip_prefix("torch.") {
        if TENSOR_FACTORIES.contains(&f) {
            return Kind::Tensor;
        }
    }
    Kind::Unknown
}

impl Infer<'_> {
    fn bind_target(&mut self, target: &Expr, kind: Kind) {
        match target {
            Expr::Name(n) => self.t.bind(n.id.as_str(), kind),
            // Unpacked names, loop and `with` targets: bound here, kind unknown (they shadow
            // any outer name of the same spelling).
            Expr::Tuple(t) => t
                .elts
                .iter()
                .for_each(|e| self.bind_target(e, Kind::Unknown)),
            Expr::List(l) => l
                .elts
                .iter()
                .for_each(|e| self.bind_target(e, Kind::Unknown)),
            Expr::Starred(st) => self.bind_target(&st.value, Kind::Unknown),
            _ => {}
        }
    }

    fn suite(&mut self, body: &[Stmt]) {
        for stmt in body {
            match stmt {
                Stmt::Assign(a) => {
                    let k = self.kind(&a.value);
                    for target in &a.targets {
                        match target {
                            Expr::Name(n) => {
                                self.t.bind_at(n.id.as_str(), k.clone(), a.value.range());
                            }
                            // `model, losses = fit(model, loader)`: the helper hands back
                            // the object it was given; the earlier binding stands.
                            // `net, opt = Net(), SGD(...)`: each name its element's kind.
                            t @ Expr::Tuple(_)
                                if crate::helpers::paired_elements(t, &a.value).is_some() =>
                            {
                                for (e, value) in crate::helpers::paired_elements(t, &a.value)
                                    .into_iter()
                                    .flatten()
                                {
                                    match e {
                                        Expr::Name(n) => {
                                            let k = self.kind(value);
                                            self.t.bind_at(n.id.as_str(), k, value.range());
                                        }
                                        e => self.bind_target(e, Kind::Unknown),
                                    }
                                }
                            }
                            Expr::Tuple(t) => {
                                for e in &t.elts {
                                    match e {
                                        Expr::Name(n)
                                            if crate::helpers::call_passes_name(
                                                &a.value,
                                                n.id.as_str(),
                                            ) => {}
                                        e => self.bind_target(e, Kind::Unknown),
                                    }
                                }
                            }
                            _ => self.bind_target(target, k.clone()),
                        }
                    }
                }
                Stmt::AnnAssign(a) => {
                    if let Some(v) = &a.value {
                        let k = self.kind(v);
                        match &*a.target {
                            Expr::Name(n) => self.t.bind_at(n.id.as_str(), k, v.range()),
                            t => self.bind_target(t, k),
                        }
                    }
                }
                Stmt::For(f) => {
                    self.bind_target(&f.target, Kind::Unknown);
                    self.suite(&f.body);
                    self.suite(&f.orelse);
                }
                Stmt::While(w) => {
                    self.suite(&w.body);
                    self.suite(&w.orelse);
                }
                Stmt::If(i) => {
                    self.suite(&i.body);
                    for c in &i.elif_else_clauses {
                        self.suite(&c.body);
                    }
                }
                Stmt::With(w) => {
                    for item in &w.items {
                        if let Some(v) = &item.optional_vars {
                            self.bind_target(v, Kind::Unknown);
                        }
                    }
                    self.suite(&w.body);
                }
                Stmt::Try(t) => {
                    self.suite(&t.body);
                    for h in &t.handlers {
                        let ast::ExceptHandler::ExceptHandler(h) = h;
                        self.suite(&h.body);
                    }
                    self.suite(&t.orelse);
                    self.suite(&t.finalbody);
                }
                _ => {}
            }
        }
    }
}

/// Is `expr` a module or one of its submodules: `model`, `self.fc` (known modules),
/// `model.encoder.layer` (attributes of a known module)? `kind_of` gives value kinds.
pub fn module_path(expr: &Expr, kind_of: &mut dyn FnMut(&Expr) -> Kind) -> bool {
    if kind_of(expr) == Kind::Module {
        return true;
    }
    match expr {
        Expr::Attribute(a) => module_path(&a.value, kind_of),
        _ => false,
    }
}

/// How a suite uses each plain name (not inside nested definitions or lambdas): called
/// (`model(x)`), its methods (`model.eval()`, `opt.step()`; see [`Usage::of_method`]), its
/// loader or optimizer attributes, iterated.
fn name_usages(body: &[Stmt]) -> FxHashMap<&str, Usage> {
    use ruff_python_ast::visitor::{self, Visitor};
    struct U<'b> {
        out: FxHashMap<&'b str, Usage>,
    }
    impl<'b> U<'b> {
        fn mark(&mut self, e: &'b Expr, bits: u16) {
            if let Expr::Name(n) = e {
                self.out.entry(n.id.as_str()).or_default().0 |= bits;
            }
        }
    }
    impl<'b> Visitor<'b> for U<'b> {
        fn visit_stmt(&mut self, stmt: &'b Stmt) {
            match stmt {
                Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
                Stmt::For(f) => {
                    self.mark(&f.iter, Usage::ITERATED);
                    visitor::walk_stmt(self, stmt);
                }
                _ => visitor::walk_stmt(self, stmt),
            }
        }
        fn visit_expr(&mut self, expr: &'b Expr) {
            match expr {
                Expr::Lambda(_) => return,
                Expr::Call(c) => {
                    self.mark(&c.func, Usage::CALLED);
                    if let Expr::Attribute(a) = &*c.func {
                        let bits = Usage::of_method(a.attr.as_str());
                        if bits != 0 {
                            self.mark(&a.value, bits);
                        }
                    }
                }
                Expr::Attribute(a) => match a.attr.as_str() {
                    "param_groups" => self.mark(&a.value, Usage::PARAM_GROUPS),
                    "dataset" | "sampler" | "batch_size" => self.mark(&a.value, Usage::LOADER_ATTR),
                    _ => {}
                },
                _ => {}
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut u = U {
        out: FxHashMap::default(),
    };
    u.visit_body(body);
    u.out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kinds of a module body's names.
    fn module_kinds(src: &str) -> KindTable {
        let (module, scopes, classes) = crate::test_support::module_context(src);
        KindTable::infer(&module.body, None, &scopes, &classes, None)
    }

    #[test]
    fn scheduler_constructors_of_other_libraries() {
        for q in [
            "torch.optim.lr_scheduler.StepLR",
            "transformers.get_cosine_schedule_with_warmup",
            "timm.scheduler.CosineLRScheduler",
            "timm.scheduler.cosine_lr.CosineLRScheduler",
            "timm.scheduler.create_scheduler_v2",
            "warmup_scheduler.GradualWarmupScheduler",
            "pl_bolts.optimizers.lr_scheduler.LinearWarmupCosineAnnealingLR",
        ] {
            assert!(is_scheduler_constructor(q), "{q}");
        }
        for q in [
            "timm.scheduler.scheduler_kwargs",
            "timm.create_model",
            "torch.optim.AdamW",
            "warmup_scheduler.utils",
        ] {
            assert!(!is_scheduler_constructor(q), "{q}");
        }
        // Not a torch scheduler kind: torch's ordering rules do not apply to timm's `step`.
        assert_eq!(
            qualified_call_kind("timm.scheduler.CosineLRScheduler"),
            Kind::Unknown
        );
    }

    #[test]
    fn infers_kinds_and_keeps_module_to_in_place() {
        let src = "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    pass\nmodel = Net().to('cuda')\nx = torch.randn(3).to('cuda')\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nsched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)\nps = model.parameters()\nboth = 1\nboth = nn.Linear(2, 2)\n";
        let t = module_kinds(src);
        assert_eq!(t.get("model"), Some(&Kind::Module));
        assert_eq!(t.get("x"), Some(&Kind::Tensor));
        assert_eq!(t.get("opt"), Some(&Kind::Optimizer("SGD".into())));
        assert_eq!(
            t.get("sched"),
            Some(&Kind::Scheduler("ReduceLROnPlateau".into()))
        );
        assert_eq!(t.get("ps"), Some(&Kind::ParamGenerator));
        assert_eq!(t.get("both"), Some(&Kind::Unknown));
        // Where known kinds come from; none for a conflicting name.
        let origin = t
            .origin("opt")
            .map(|r| &src[r.start().to_usize()..r.end().to_usize()]);
        assert_eq!(origin, Some("torch.optim.SGD(model.parameters(), lr=0.1)"));
        assert_eq!(t.origin("both"), None);
    }

    #[test]
    fn unknown_objects_used_as_modules() {
        // `cnn` is a module imported at run time: no class tells what `cnn.Net()` is.
        let src = "import torch\ncnn = load_arch('small')\nmodel = cnn.Net()\nmodel.load_state_dict(torch.load(p))\nmodel.eval()\nout = model(x)\nrunner = cnn.Runner()\nrunner.eval()\nrunner.record(x)\nopt = make_opt()\nopt.zero_grad()\nopt.step()\ntrainer = make_trainer()\ntrainer.train()\ntrainer(x)\ntrainer.step()\n";
        let t = module_kinds(src);
        assert_eq!(t.get("model"), Some(&Kind::Module));
        // Switched only; an optimizer's usage; a mode switch and a call, but also a step.
        assert_eq!(t.get("runner"), Some(&Kind::Unknown));
        assert_eq!(t.get("opt"), Some(&Kind::Unknown));
        assert_eq!(t.get("trainer"), Some(&Kind::Unknown));
        assert_eq!(t.get("cnn"), Some(&Kind::Unknown));
    }

    #[test]
    fn parameters_and_loop_targets_shadow_outer_names() {
        let src = "import torch\nopt = torch.optim.LBFGS(ps)\nsched = torch.optim.lr_scheduler.reduce_lr_on_plateau.ReduceLROnPlateau(opt)\ndef f(opt, sched):\n    for opt in opts:\n        pass\n";
        let (module, scopes, classes) = crate::test_support::module_context(src);
        let outer = KindTable::infer(&module.body, None, &scopes, &classes, None);
        assert_eq!(outer.get("opt"), Some(&Kind::Optimizer("LBFGS".into())));
        assert_eq!(
            outer.get("sched"),
            Some(&Kind::Scheduler("ReduceLROnPlateau".into()))
        );
        let Stmt::FunctionDef(f) = &module.body[3] else {
            panic!()
        };
        let local = KindTable::infer(
            &f.body,
            Some(&f.parameters),
            &scopes,
            &classes,
            Some(&outer),
        );
        assert_eq!(local.get("opt"), Some(&Kind::Unknown));
        assert_eq!(local.get("sched"), Some(&Kind::Unknown));
    }
}

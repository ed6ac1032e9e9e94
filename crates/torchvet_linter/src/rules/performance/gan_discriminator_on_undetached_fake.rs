use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::rules::facts::current_function;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use rustc_hash::FxHashMap;
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;
use torchvet_semantic::project::{FuncId, ProjectFile};

crate::declare_rule! {
    /// ## What it does
    /// Checks GAN training steps: the discriminator `D` is called on the generator's output
    /// (`fake = G(z)`, `D(fake)`, `D(G(z))`) without `.detach()`, the loss is back-propagated,
    /// and the optimizer stepped next trains `D` and not `G`. The models may be local names,
    /// `self.D` / `self.G` of a trainer, entries of a dict (`nets["D"]`), or module-level
    /// models used in step functions (`step_d(real, opt_d)`); which modules an optimizer
    /// trains comes from its construction (`Adam(D.parameters())`, in `__init__`, in a dict
    /// comprehension, or at the call sites of a step function).
    ///
    /// Fakes made under `torch.no_grad()`, detached (`fake.detach()`, `G(z).detach()`), and
    /// generator steps (the optimizer stepped trains `G`) are not reported. A model feeding
    /// another is not a GAN by itself: the step must show it is one, with `D` also judging
    /// data that no model made (`D(real)`) or an optimizer of the same body training `G`; and
    /// a generator frozen before the call (`G.requires_grad_(False)`, or `p.requires_grad =
    /// False` over its parameters, here or by a caller that passes it: a linear probe over
    /// a frozen encoder) records no graph for the backward to run through.
    ///
    /// ## Why is this bad?
    /// The discriminator's loss needs no gradient with respect to the generator, but without
    /// `.detach()` its backward pass runs through the whole generator: wasted compute every
    /// step (often a third of the iteration), and the generator's gradients pile up until its
    /// own `zero_grad()`. When the generator step then reuses that graph after `D.step()`
    /// changed D's weights in place, autograd raises "one of the variables needed for gradient
    /// computation has been modified by an inplace operation" (or the code adds
    /// `retain_graph=True` to get past "Trying to backward through the graph a second time").
    ///
    /// ## Example
    /// ```python
    /// fake = G(z)
    /// loss_d = criterion(D(real), ones) + criterion(D(fake), zeros)
    /// loss_d.backward()
    /// opt_d.step()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// fake = G(z)
    /// loss_d = criterion(D(real), ones) + criterion(D(fake.detach()), zeros)
    /// loss_d.backward()
    /// opt_d.step()
    /// ```
    ///
    /// ## Fix safety
    /// The fix adds `.detach()` to the fake passed to the discriminator. It changes the
    /// gradients the generator accumulates (which is the point), so it is unsafe.
    ///
    /// ## References
    /// - [DCGAN tutorial: training the discriminator](https://pytorch.org/tutorials/beginner/dcgan_faces_tutorial.html)
    /// - [torch.Tensor.detach](https://pytorch.org/docs/stable/generated/torch.Tensor.detach.html)
    pub(crate) static GAN_DISCRIMINATOR_ON_UNDETACHED_FAKE = {
        name: "gan-discriminator-on-undetached-fake",
        code: "TV128",
        group: Performance,
        severity: Warning,
        title: "Discriminator loss on G(z) without .detach() while D is stepped before G (a wasted backward through G, or an in-place error)",
        autofix: Suggest,
        hooks: { stmt: check_stmt },
    };
}

/// One event of a training step, in source order.
enum Event<'a> {
    /// `D(fake)`: the call, D's key, G's key and how G is written, the fake argument.
    Discriminate {
        call: &'a ExprCall,
        d: String,
        g: String,
        g_text: String,
        fake: &'a Expr,
    },
    /// `D(x)` outside `no_grad` where no argument is a generator's output: D's key. A model
    /// that judges real data as well as fakes is a discriminator.
    Judge(String),
    /// `loss.backward()`.
    Backward(TextRange),
    /// `opt.step()` / `scaler.step(opt)`: the optimizer.
    Step(&'a Expr, TextRange),
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    // Once per function (at its first statement) and once for the module body.
    let body: &[Stmt] = match checker.function() {
        Some(f) => {
            if f.body.first().map(Ranged::range) != Some(stmt.range()) {
                return;
            }
            &f.body
        }
        None => {
            if checker.module().body.first().map(Ranged::range) != Some(stmt.range()) {
                return;
            }
            &checker.module().body
        }
    };
    if !checker.mentions("backward") || !checker.mentions(".step(") {
        return;
    }
    let Some(p) = checker.project_or_file().cloned() else {
        return;
    };
    let Some(func) = current_function(checker, &p) else {
        return;
    };
    let params: Vec<String> = checker
        .function()
        .map(|f| f.parameters.iter().map(|p| p.name().to_string()).collect())
        .unwrap_or_default();
    // Optimizers stepped in the body and the modules they train.
    let mut steps: Vec<&Expr> = Vec::new();
    collect_steps(body, &mut steps);
    if steps.is_empty() {
        return;
    }
    let mut trained: FxHashMap<String, Vec<String>> = FxHashMap::default();
    for s in &steps {
        let Some(key) = key_of(s) else { continue };
        if trained.contains_key(&key) {
            continue;
        }
        if !matches!(s, Expr::Name(_) | Expr::Subscript(_))
            && !matches!(s, Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self"))
        {
            continue;
        }
        if let Some(keys) = p.model.optimizer_module_keys(func, &key) {
            if !keys.is_empty() {
                trained.insert(key, keys);
            }
        }
    }
    if trained.is_empty() {
        return;
    }
    let module_keys: Vec<String> = trained.values().flatten().cloned().collect();
    let mut w = Walker {
        checker,
        project: &p,
        func,
        params: &params,
        module_keys: &module_keys,
        fakes: FxHashMap::default(),
        events: Vec::new(),
        no_grad: 0,
    };
    w.suite(body);
    let Walker { events, .. } = w;
    let mut findings = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let Event::Discriminate {
            call,
            d,
            g,
            g_text,
            fake,
        } = e
        else {
            continue;
        };
        // The next backward, and the steps after it before the next backward.
        let Some(b) = events[i + 1..]
            .iter()
            .position(|e| matches!(e, Event::Backward(_)))
        else {
            continue;
        };
        let b = i + 1 + b;
        let Event::Backward(backward_at) = events[b] else {
            continue;
        };
        let mut stepped: Vec<(&Expr, TextRange, &Vec<String>)> = Vec::new();
        let mut unknown = false;
        for e in &events[b + 1..] {
            match e {
                Event::Backward(_) => break,
                Event::Step(opt, at) => match key_of(opt).and_then(|k| trained.get(&k)) {
                    Some(ms) => stepped.push((opt, *at, ms)),
                    None => unknown = true,
                },
                Event::Discriminate { .. } | Event::Judge(_) => {}
            }
        }
        if unknown || stepped.is_empty() {
            continue;
        }
        let trains_d = stepped.iter().any(|(_, _, ms)| ms.contains(d));
        let trains_g = stepped.iter().any(|(_, _, ms)| ms.contains(g));
        if trains_d
            && !trains_g
            && is_gan(&events, &trained, d, g)
            && !crate::rules::facts::name_frozen_at(checker, g, call.range().start())
        {
            let step_at = stepped
                .iter()
                .find(|(_, _, ms)| ms.contains(d))
                .map(|(o, at, _)| (checker_text(checker, o.range()), *at));
            findings.push((*call, g_text.clone(), *fake, backward_at, step_at));
        }
    }
    for (call, g, fake, backward_at, step_at) in findings {
        let d = checker.text(call.func.range()).to_string();
        let fake_text = checker.text(fake.range()).to_string();
        let (opt, step_range) = step_at.unwrap_or_default();
        let breaks = detach_breaks(body, call, fake, backward_at);
        let advice = if breaks {
            format!(
                "give the discriminator's loss its own detached fake (`{fake_text}.detach()`, with `.requires_grad_()` where a gradient penalty differentiates against it) and the generator's loss its own pass through `{d}`"
            )
        } else {
            format!("pass `{fake_text}.detach()`")
        };
        let message = format!(
            "the discriminator `{d}` sees `{fake_text}` from the generator `{g}` without `.detach()`, and only `{opt}` (which trains `{d}`) is stepped after this loss's backward: the backward pass runs through the generator for nothing (or fails once `{d}`'s weights change in place); {advice}"
        );
        let needs_parens = !matches!(
            fake,
            Expr::Name(_) | Expr::Attribute(_) | Expr::Call(_) | Expr::Subscript(_)
        );
        let detached = if needs_parens {
            format!("({fake_text}).detach()")
        } else {
            format!("{fake_text}.detach()")
        };
        let d_ = checker.report(call.range(), message);
        d_.add_related(backward_at, "the backward pass");
        if step_range != TextRange::default() {
            d_.add_related(step_range, format!("`{opt}` steps only the discriminator"));
        }
        if !breaks {
            d_.set_fix(RawFix::unsafe_edit(
                format!("Detach the fake: `{detached}`"),
                vec![RawEdit::replace(fake.range(), detached)],
            ));
        }
    }
}

/// Does the body show a GAN step rather than one model feeding another (a classifier or a
/// linear probe over an encoder)? `D` also judges data no model made (`D(real)`), or an
/// optimizer stepped in the body trains `G` (the generator's own step).
fn is_gan(events: &[Event], trained: &FxHashMap<String, Vec<String>>, d: &str, g: &str) -> bool {
    events
        .iter()
        .any(|e| matches!(e, Event::Judge(k) if k == d))
        || trained.values().any(|ms| ms.iter().any(|m| m == g))
}

/// Would detaching the fake at this call break the step? Two shapes where it does: the fake
/// is differentiated against later (`autograd.grad(d_fake, fake, ...)`, a gradient penalty:
/// a detached fake is not in that graph, and autograd raises), and the discriminator's output
/// bound here is used again after the backward (`d_fake = D(fake)` feeding the generator's
/// loss too: detaching would stop the generator's training). The finding stands; the
/// mechanical fix is not offered.
fn detach_breaks(body: &[Stmt], call: &ExprCall, fake: &Expr, backward_at: TextRange) -> bool {
    struct Find<'x> {
        call: TextRange,
        fake: Option<&'x str>,
        bound: Option<String>,
        backward_end: ruff_text_size::TextSize,
        /// Names after the backward, in source order, and whether each is a store.
        names_after: Vec<(String, bool)>,
        grad_inputs: bool,
    }
    impl<'x> Visitor<'x> for Find<'_> {
        fn visit_stmt(&mut self, stmt: &'x Stmt) {
            if let Stmt::Assign(a) = stmt {
                if a.value.range() == self.call {
                    if let [Expr::Name(n)] = &a.targets[..] {
                        self.bound = Some(n.id.to_string());
                    }
                }
            }
            visitor::walk_stmt(self, stmt);
        }
        fn visit_expr(&mut self, expr: &'x Expr) {
            match expr {
                // `p_fake.mean().item()`, `float(...)` aside: a value read out as a number
                // carries no gradient, whatever it was computed from.
                Expr::Call(c)
                    if c.range().start() >= self.backward_end
                        && matches!(&*c.func, Expr::Attribute(a)
                            if matches!(a.attr.as_str(), "item" | "tolist" | "numpy")) =>
                {
                    return;
                }
                // `d_fake.detach()`, `d_fake.item()`, `d_fake.data`: read for logging, with
                // no gradient to the generator.
                Expr::Attribute(a)
                    if a.range.start() >= self.backward_end
                        && matches!(&*a.value, Expr::Name(_))
                        && matches!(
                            a.attr.as_str(),
                            "detach" | "item" | "data" | "tolist" | "cpu" | "numpy"
                        ) =>
                {
                    return;
                }
                Expr::Name(n) if n.range.start() >= self.backward_end => {
                    let store = n.ctx == ruff_python_ast::ExprContext::Store;
                    self.names_after.push((n.id.to_string(), store));
                }
                Expr::Call(c)
                    if helpers::method_call(c).is_some_and(|(m, _)| m == "grad")
                        || matches!(&*c.func, Expr::Name(n) if n.id.as_str() == "grad") =>
                {
                    let mentions_fake = |e: &Expr| {
                        matches!(e, Expr::Name(n) if Some(n.id.as_str()) == self.fake)
                            || matches!(e, Expr::List(l) if l.elts.iter().any(|x| matches!(x, Expr::Name(n) if Some(n.id.as_str()) == self.fake)))
                            || matches!(e, Expr::Tuple(l) if l.elts.iter().any(|x| matches!(x, Expr::Name(n) if Some(n.id.as_str()) == self.fake)))
                    };
                    let inputs = c
                        .arguments
                        .args
                        .get(1)
                        .into_iter()
                        .chain(c.arguments.find_keyword("inputs").map(|k| &k.value));
                    if inputs.into_iter().any(mentions_fake) {
                        self.grad_inputs = true;
                    }
                }
                _ => {}
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut f = Find {
        call: call.range(),
        fake: match fake {
            Expr::Name(n) => Some(n.id.as_str()),
            _ => None,
        },
        bound: None,
        backward_end: backward_at.end(),
        names_after: Vec::new(),
        grad_inputs: false,
    };
    f.visit_body(body);
    // The bound output is read again before being rebound (`d_fake = D(fake)` again in the
    // generator's phase is a new pass: detaching the first one is fine).
    f.grad_inputs
        || f.bound.as_ref().is_some_and(|b| {
            f.names_after
                .iter()
                .find(|(n, _)| n == b)
                .is_some_and(|(_, store)| !store)
        })
}

fn checker_text(checker: &Checker, r: TextRange) -> String {
    checker.text(r).to_string()
}

/// The text key of a model or optimizer expression: `D`, `self.D`, `nets[D]`.
fn key_of(e: &Expr) -> Option<String> {
    match e {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(_) => helpers::dotted(e),
        Expr::Subscript(s) => {
            let base = helpers::dotted(&s.value)?;
            let k = helpers::str_value(&s.slice)?;
            Some(format!("{base}[{k}]"))
        }
        _ => None,
    }
}

/// `opt.step()` receivers and `scaler.step(opt)` arguments of a body (not nested defs).
fn collect_steps<'a>(body: &'a [Stmt], out: &mut Vec<&'a Expr>) {
    struct V<'a, 'o> {
        out: &'o mut Vec<&'a Expr>,
    }
    impl<'a> Visitor<'a> for V<'a, '_> {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            if !matches!(s, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                visitor::walk_stmt(self, s);
            }
        }
        fn visit_expr(&mut self, e: &'a Expr) {
            if let Expr::Call(c) = e {
                if let Some(opt) = stepped_optimizer(c) {
                    self.out.push(opt);
                }
            }
            visitor::walk_expr(self, e);
        }
    }
    V { out }.visit_body(body);
}

/// The optimizer a call steps: `opt.step()`, `scaler.step(opt)`.
fn stepped_optimizer(c: &ExprCall) -> Option<&Expr> {
    let ("step", recv) = helpers::method_call(c)? else {
        return None;
    };
    let name = key_of(recv).unwrap_or_default().to_ascii_lowercase();
    if name.contains("scaler") {
        return c.arguments.args.first();
    }
    c.arguments.is_empty().then_some(recv)
}

struct Walker<'a, 'c, 'k> {
    checker: &'c mut Checker<'a>,
    project: &'k ProjectFile,
    func: FuncId,
    params: &'k [String],
    module_keys: &'k [String],
    /// Names holding a generator's output: name -> the generator's key and text.
    fakes: FxHashMap<String, (String, String)>,
    events: Vec<Event<'a>>,
    no_grad: u32,
}

impl<'a> Walker<'a, '_, '_> {
    fn suite(&mut self, body: &'a [Stmt]) {
        for s in body {
            self.stmt(s);
        }
    }

    /// Is `callee` a model: trained by an optimizer of the body, or of module kind?
    fn model_key(&mut self, callee: &Expr) -> Option<String> {
        let key = key_of(callee)?;
        if self.module_keys.contains(&key) {
            return Some(key);
        }
        if self.checker.kind_of(callee) == Kind::Module {
            return Some(key);
        }
        // A parameter that every call site passes a module for.
        let i = self
            .params
            .iter()
            .position(|p| Some(p.as_str()) == helpers::name_of(callee))?;
        (self.project.model.param(self.func, i).kind == Kind::Module).then_some(key)
    }

    fn grad_off(&self, e: &Expr) -> bool {
        let callee = match e {
            Expr::Call(c) => &*c.func,
            e => e,
        };
        self.checker.resolve(callee).is_some_and(|q| {
            matches!(
                q.as_str(),
                "torch.no_grad"
                    | "torch.autograd.no_grad"
                    | "torch.inference_mode"
                    | "torch.autograd.inference_mode"
            )
        }) || matches!(e, Expr::Call(c) if self.checker.resolve(&c.func).as_deref() == Some("torch.set_grad_enabled") && c.arguments.args.first().and_then(helpers::is_truthy) == Some(false))
    }

    fn stmt(&mut self, s: &'a Stmt) {
        match s {
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
            Stmt::For(f) => {
                self.exprs(&f.iter);
                self.suite(&f.body);
                self.suite(&f.orelse);
            }
            Stmt::While(w) => {
                self.exprs(&w.test);
                self.suite(&w.body);
                self.suite(&w.orelse);
            }
            Stmt::If(i) => {
                self.exprs(&i.test);
                self.suite(&i.body);
                for c in &i.elif_else_clauses {
                    if let Some(t) = &c.test {
                        self.exprs(t);
                    }
                    self.suite(&c.body);
                }
            }
            Stmt::With(w) => {
                let mut off = 0;
                for item in &w.items {
                    self.exprs(&item.context_expr);
                    if self.grad_off(&item.context_expr) {
                        off += 1;
                    }
                }
                self.no_grad += off;
                self.suite(&w.body);
                self.no_grad -= off;
            }
            Stmt::Try(t) => {
                self.suite(&t.body);
                for h in &t.handlers {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    self.suite(&h.body);
                }
                self.suite(&t.orelse);
                self.suite(&t.finalbody);
            }
            Stmt::Assign(a) => {
                self.exprs(&a.value);
                let produced = match &*a.value {
                    Expr::Call(c) if self.no_grad == 0 => self
                        .model_key(&c.func)
                        .map(|k| (k, self.checker.text(c.func.range()).to_string())),
                    _ => None,
                };
                for t in &a.targets {
                    if let Expr::Name(n) = t {
                        match &produced {
                            Some(g) => {
                                self.fakes.insert(n.id.to_string(), g.clone());
                            }
                            None => {
                                self.fakes.remove(n.id.as_str());
                            }
                        }
                    } else if let Expr::Tuple(tt) = t {
                        for e in &tt.elts {
                            if let Expr::Name(n) = e {
                                self.fakes.remove(n.id.as_str());
                            }
                        }
                    }
                }
            }
            _ => {
                struct V<'a, 'w, 'c, 'k> {
                    w: &'w mut Walker<'a, 'c, 'k>,
                }
                impl<'a> Visitor<'a> for V<'a, '_, '_, '_> {
                    fn visit_expr(&mut self, e: &'a Expr) {
                        visitor::walk_expr(self, e);
                        if let Expr::Call(c) = e {
                            self.w.call(c);
                        }
                    }
                }
                visitor::walk_stmt(&mut V { w: self }, s);
            }
        }
    }

    /// The calls of an expression, innermost first (evaluation order).
    fn exprs(&mut self, e: &'a Expr) {
        struct V<'a, 'w, 'c, 'k> {
            w: &'w mut Walker<'a, 'c, 'k>,
        }
        impl<'a> Visitor<'a> for V<'a, '_, '_, '_> {
            fn visit_expr(&mut self, e: &'a Expr) {
                if matches!(e, Expr::Lambda(_)) {
                    return;
                }
                visitor::walk_expr(self, e);
                if let Expr::Call(c) = e {
                    self.w.call(c);
                }
            }
        }
        V { w: self }.visit_expr(e);
    }

    fn call(&mut self, c: &'a ExprCall) {
        if let Some(("backward", _)) = helpers::method_call(c) {
            self.events.push(Event::Backward(c.range()));
            return;
        }
        if let Some(opt) = stepped_optimizer(c) {
            self.events.push(Event::Step(opt, c.range()));
            return;
        }
        if let Some(("detach_" | "requires_grad_", recv)) = helpers::method_call(c) {
            if let Some(n) = helpers::name_of(recv) {
                self.fakes.remove(n);
            }
            return;
        }
        if c.arguments.args.is_empty() {
            return;
        }
        let Some(d) = self.model_key(&c.func) else {
            return;
        };
        let mut judged = false;
        for a in &c.arguments.args {
            let g = match a {
                Expr::Name(n) => self.fakes.get(n.id.as_str()).cloned(),
                Expr::Call(inner) if self.no_grad == 0 => self
                    .model_key(&inner.func)
                    .map(|k| (k, self.checker.text(inner.func.range()).to_string())),
                _ => None,
            };
            if let Some((g, g_text)) = g {
                if g != d {
                    self.events.push(Event::Discriminate {
                        call: c,
                        d: d.clone(),
                        g,
                        g_text,
                        fake: a,
                    });
                    judged = true;
                    break;
                }
            }
        }
        if !judged && self.no_grad == 0 {
            self.events.push(Event::Judge(d));
        }
    }
}

use crate::checker::{Checker, EvalRegion, Evidence};
use crate::fix::own_line_indent;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::{Ranged, TextRange, TextSize};
use rustc_hash::{FxHashMap, FxHashSet};
use std::cell::RefCell;
use torchvet_semantic::flow::{object_key, EventKind};
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;
use torchvet_semantic::modes::{
    assigned_values, caller_differentiates_result, grad_off_here, in_loss_class, in_model_class,
    is_framework_hook, one_batch_self_test, result_discarded, result_stored_on_self,
    smoke_test_call,
};

crate::declare_rule! {
    /// ## What it does
    /// Checks for evaluation loops that run the model with autograd still enabled: no
    /// `torch.no_grad()` / `torch.inference_mode()` around them, no such decorator, and no
    /// caller anywhere in the project that wraps the function in one (for a method, also a
    /// call on an instance of its class, typed by the project model: `with torch.no_grad():
    /// detector.scores(x)` with `detector: Detector` in another file, for a plain inference
    /// class too). An evaluation loop is a
    /// loop (or comprehension) that runs no backward pass or optimizer step, directly or in the
    /// functions it calls, feeds none after it, and says evaluation: it iterates validation or
    /// test data, follows `model.eval()`, sits in a function named like `validate`,
    /// `evaluate`, `test` or `predict`, or computes a loss or metric. That includes the
    /// validation loop written inside the epoch loop, right after the training loop. Outside
    /// any loop, a function that puts the model in eval mode and then runs it once (one-shot
    /// inference or generation: `model.eval(); out = model(batch)`) is evaluation too, when
    /// the function trains nowhere (no backward pass or optimizer step, directly or in the
    /// project functions it calls) and the model is still in eval mode at the call. So is one
    /// forward pass in a function named for evaluation or prediction (`predict_sentiment`,
    /// `evaluate`, `inference`) that trains nowhere, when its output is only read (`.item()`,
    /// `.tolist()`, `argmax`, indexing) and neither returned nor passed to another call. So is
    /// a forward pass at a script's or notebook's top level after `model.eval()` there, when
    /// its output is only read and nothing at top level trains after that switch nor uses
    /// gradients on purpose (a notebook that trains, then plots the predictions of the trained
    /// model): reported once per switch, without a fix. The same holds in a function that
    /// trained before the switch (the epoch loop, then `model.eval()` and one reconstruction
    /// for a figure), and for a stretch of a training loop between `G.eval()` and
    /// `G.train()` that runs `G` (a GAN's samples each epoch, kept in a list: their graphs
    /// stay alive). A model
    /// call is `model(x)`, `model.forward(x)` (also of a name bound only to `torch.load(...)`:
    /// a whole pickled model, since a state dict is not callable), or a method of a project
    /// module class that runs
    /// the model (`model.generate(x)` whose body calls `self(...)` or a sub-module, is not
    /// decorated with `no_grad`, and trains nowhere).
    ///
    /// Not reported: a model frozen whole before the loop (`model.requires_grad_(False)`, or
    /// `p.requires_grad = False` for each of its parameters, by `parameters()` or
    /// `named_parameters()`, with no new layer put in after that: `model.fc = nn.Linear(...)`
    /// gives it trainable parts again), here or by a caller that passes
    /// it in, or by its own class's constructor (`for p in self.parameters(): p.requires_grad
    /// = requires_grad` with `requires_grad=False` on every call, as the Inception network of
    /// FID scripts does), since it records no graph; and shape smoke tests whose inputs are made up on the
    /// spot (`v(torch.randn(2, 3, 256, 256))`, unless they go to a model whose trained weights
    /// were loaded first and more than the output's shape is used: a GAN generator writing
    /// images from noise), or one batch in the `__main__` self-test of a
    /// file that defines the model or loss (a loop that ends with `break`). Loops that use gradients on purpose are not
    /// evaluation either: saliency, test-time adaptation, and adversarial evaluation
    /// (`requires_grad_()` on the input, `autograd.grad`, a meta-learner's
    /// `learner.adapt(loss)` as in learn2learn, which differentiates the loss, or an attack such as
    /// `adversary.perturb(x, y)` or torchattacks' `atk(images, labels)` that back-propagates
    /// to the input), and code inside `with torch.enable_grad():`. Nor a function whose
    /// returned loss a caller differentiates (passes to `.backward()` or
    /// `torch.autograd.grad`, directly or through a helper): it needs its graph. Nor code that
    /// runs after the process turned autograd off (`torch.set_grad_enabled(False)` or
    /// `torch.no_grad().__enter__()` as a statement earlier in the same function, or in the
    /// entry script before every call chain that reaches it), nor a parameter-free module such as
    /// a loss written as an `nn.Module` or a sine generator (in this file or another one of
    /// the project). Nor a
    /// project whose every allowed torch predates `torch.no_grad` (`torch==0.3.1` in its
    /// requirements, `--target-torch 0.3`): there, `volatile=True` is how inference turns
    /// autograd off. Code of that era (a `Variable(x, volatile=True)` in the same function, or
    /// inputs from a project helper that builds them so: `get_batch(source, i,
    /// evaluation=True)`) in
    /// a project that declares no torch requirement is left to `volatile-flag-removed`, which
    /// reports the flag; where the project requires torch 0.4 or later, both are reported.
    ///
    /// Nor an instance of a project class that defines its own `__call__` (Ultralytics'
    /// `Model`, whose call runs a predictor that turns autograd off itself), nor a method
    /// decorated with a wrapper of the project's own that calls it inside `torch.no_grad()`
    /// (`@nograd` in code older than the `no_grad` decorator). Nor the methods of a loss class
    /// (`ComputeLoss.build_targets` decoding predictions for target assignment: part of the
    /// training step), nor a loop that calls a hand-written training step named `train`
    /// (`model.train(X, y)`, which `nn.Module.train(mode)` never takes), nor one that trains
    /// through a method of the model (a REINFORCE rollout whose `pi.train_policy()` runs
    /// `backward()` and the optimizer step) or through a callable object handed in as a
    /// parameter (the Annotated Transformer's `loss_compute(out, y)`, whose `__call__` steps
    /// the optimizer), nor an evaluation that runs an attack kept in a configuration
    /// (`adversarial_args["attack"](**kwargs)`), nor a one-shot forward pass whose output is
    /// kept on the object (`self.Q = self.policy_net(states).gather(1, a)` in a DQN agent whose
    /// other method trains on `self.Q`). A model read as a
    /// global whose every parameter the module body froze (a notebook's first cell) is
    /// frozen, and an `eval()` followed by a fresh model under the same name (`model =
    /// RNNModel(...)` in a later cell) says nothing of the new one.
    ///
    /// Methods of a model class (an `nn.Module`, or a class with a `forward`) are not reported
    /// either: whoever calls the model chooses the grad mode. That includes models built on
    /// an OpenMMLab framework base, directly or through project classes in other files
    /// (mmengine's `BaseModule` / `BaseModel`, mmcv's `BaseModule`, the detector, segmentor
    /// and recognizer bases of mmdet, mmseg and mmocr): their `forward_test`, `simple_test`
    /// and `predict` are run by the framework's validation and test loops (mmengine's
    /// `ValLoop` / `TestLoop`, mmcv's `single_gpu_test`), which turn autograd off. Words of a
    /// metric alone do not make a loop of a training routine (`forward_train`, `train_step`)
    /// evaluation, nor a loop that runs right after `model.train()` (a tutorial's training
    /// loop that computes the loss before its backward pass is written), and an equality test
    /// against a constant (`if i == -1:`) is control flow, not a count of correct predictions.
    ///
    /// ## Why is this bad?
    /// `model.eval()` changes how Dropout and BatchNorm behave; it does not turn off gradient
    /// tracking. With autograd on, every forward pass records its graph and keeps the
    /// activations needed for a backward pass that never comes: evaluation uses several
    /// times more memory (often running out of GPU memory on batch sizes that train fine) and
    /// runs slower. Outputs kept across iterations (metrics, predictions) keep their graphs
    /// alive too.
    ///
    /// Calling a model runs its `forward`: a loop whose model call is itself a training step
    /// (a meta-learner whose forward runs the inner and outer backward passes and the
    /// optimizer step) trains, and is not evaluation.
    ///
    /// The model may come from another file, and the caller that wraps the evaluation
    /// function in `no_grad` may be in another file: the project model sees both. When one
    /// caller wraps it and another runs it with autograd on (the epoch loop's
    /// `evaluate(model, val_loader)` under `no_grad`, then `evaluate(model, test_loader)`
    /// after training without it), the function is reported, with a note at the call that
    /// runs it with autograd on; a caller reached only from `no_grad` code counts as
    /// wrapping, and unit-test code does not count.
    ///
    /// Calls inside a model class are part of its forward pass and run in their caller's grad
    /// mode, except in a method that trains the model itself (`def train_model(self, ...)` with
    /// backward passes and steps): its validation loop is evaluation like any other.
    ///
    /// A phase loop (`for phase in ["train", "val"]:`, the transfer-learning tutorial's epoch
    /// body) whose backward passes and optimizer steps all run under `if phase == "train":`
    /// (or a flag bound from that test) evaluates in its other phases: its forward pass is
    /// reported when the loop manages no grad mode (`with
    /// torch.set_grad_enabled(phase == "train"):` is the fix) and the evaluation phases reach
    /// it. A module that a caller hands on to be trained (`model_ft = train_model(model_ft,
    /// ...)`, then the returned model passed to another run) is not a value the caller
    /// differentiates through.
    ///
    /// One function for both training and validation, training only when a parameter says so
    /// (`def run_epoch(model, loader, criterion, optimizer=None)` with every backward pass and
    /// step under `if training:`, `training = optimizer is not None`), is reported when some
    /// call passes that parameter falsy (`optimizer=None`, `train=False`, or by default) with
    /// autograd on, and the function manages no grad mode itself
    /// (`torch.set_grad_enabled(training)`); the note points at that call.
    ///
    /// ## Example
    /// ```python
    /// def evaluate(model, loader):
    ///     model.eval()
    ///     for x, y in loader:
    ///         out = model(x)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// @torch.no_grad()
    /// def evaluate(model, loader):
    ///     model.eval()
    ///     for x, y in loader:
    ///         out = model(x)
    /// ```
    ///
    /// ## Fix safety
    /// In a function, the fix adds a `@torch.no_grad()` decorator; at module level it wraps
    /// the evaluation loop in `with torch.no_grad():`. Functions that call `backward()`,
    /// `torch.autograd.grad`, `enable_grad` or `requires_grad_` are never reported. The fix is
    /// safe when the function calls `model.eval()` (it is clearly evaluation); it is unsafe when
    /// evaluation is inferred from the function's name alone, and for the re-indented
    /// module-level loop, since a caller could still differentiate the returned tensors.
    /// Code that looks written for a torch older than 0.4 (the function reads `loss.data[0]`,
    /// or, for a script's or notebook's module-level loop, the script's own statements do,
    /// and the project passes `volatile=True` somewhere or the file imports `Variable`) in a project
    /// that declares no lowest torch gets an unsafe fix and a message that names the
    /// `volatile=True` of that era: `torch.no_grad` does not exist before 0.4.
    /// The decorator goes directly above `def`, below any existing decorator, so that it
    /// wraps the plain function and `@staticmethod` / `@classmethod` / `@property` still
    /// come last; an `async def` gets no fix (the decorator would only cover creating the
    /// coroutine).
    ///
    /// ## References
    /// - [torch.no_grad](https://pytorch.org/docs/stable/generated/torch.no_grad.html)
    /// - [Performance tuning guide: disable gradient calculation for validation or inference](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html)
    /// - [Zhenye-Na/DA-RNN issue 30](https://github.com/Zhenye-Na/DA-RNN/issues/30)
    pub(crate) static EVAL_WITHOUT_NO_GRAD = {
        name: "eval-without-no-grad",
        code: "TV025",
        group: Memory,
        severity: Warning,
        title: "Evaluation forward pass executed with autograd enabled",
        autofix: Yes,
        preview: false,
        hooks: { call: check_call, end: finish },
    };
}

thread_local! {
    /// Places already reported in this file: one finding per evaluation-only function (its
    /// start offset), otherwise one per evaluation loop (its start offset, tagged).
    static REPORTED: RefCell<FxHashSet<u64>> = RefCell::new(FxHashSet::default());
    /// Per function of this file (its start offset): is it a model's fit method (see
    /// [`fit_method_of_model`]); does its text switch the model itself (`self.eval()`). Asked
    /// at every call in a model's methods.
    static METHOD_TRAITS: RefCell<FxHashMap<(usize, u32), MethodTraits>> =
        RefCell::new(FxHashMap::default());
}

/// Of a function: whether it is a model's fit method (`None`: its events decide), and
/// whether its text switches the model itself (`self.eval()`).
type MethodTraits = (Option<bool>, bool);

/// The cached traits of the function being visited (see `METHOD_TRAITS`); the text of a
/// function is read once, however many calls it makes.
fn method_traits(checker: &Checker) -> Option<MethodTraits> {
    let f = checker.function()?;
    // The file's text by address too: a file whose pass stopped early leaves no stale entry.
    let key = (
        checker.source.text.as_ptr() as usize ^ checker.source.text.len().rotate_left(17),
        f.range.start().to_u32(),
    );
    if let Some(t) = METHOD_TRAITS.with_borrow(|m| m.get(&key).copied()) {
        return Some(t);
    }
    let text = checker.text(f.range);
    let forward = f.name.as_str() == "forward";
    // The fit question's cheap part: training spells a backward pass, a step, or a training
    // helper's name; `None` = the events decide.
    let fit = if forward
        || !checker.mentions("backward")
        || !["backward", "step", "zero_grad", "train", "fit"]
            .iter()
            .any(|w| text.contains(w))
    {
        Some(false)
    } else {
        None
    };
    let t = (fit, !forward && text.contains("self.eval()"));
    METHOD_TRAITS.with_borrow_mut(|m| m.insert(key, t));
    Some(t)
}

fn loss_like(checker: &Checker, func: &Expr) -> bool {
    let text = checker.text(func.range()).to_ascii_lowercase();
    let last = text.rsplit('.').next().unwrap_or(&text);
    if last.contains("loss") || last.contains("crit") {
        return true;
    }
    assigned_values(checker, func)
        .iter()
        .any(|(v, _)| matches!(v, Expr::Call(c) if checker.is_loss_class(&c.func)))
}

/// How the callers of the function being visited run it with respect to autograd.
enum Callers {
    /// No caller turns autograd off for it.
    WithGrad,
    /// Some caller runs it with autograd off, but this call site of another caller (file,
    /// range) runs it with autograd on (`evaluate(model, test_loader)` after training, where
    /// the epoch loop wraps its `evaluate(model, val_loader)` in `no_grad`).
    Mixed(torchvet_semantic::project::FileId, TextRange),
    /// Every caller that runs it turns autograd off (or a method of it is called under
    /// `no_grad` somewhere): nothing to say here.
    WithoutGrad,
}

fn callers(checker: &Checker) -> Callers {
    let (Some(f), Some(p)) = (checker.function(), checker.project()) else {
        return Callers::WithGrad;
    };
    let Some(id) = p.function_at(f.range.start()) else {
        return Callers::WithGrad;
    };
    if p.model.method_called_without_grad(id) {
        return Callers::WithoutGrad;
    }
    if p.model.call_sites_no_grad(id).1 == 0 {
        return Callers::WithGrad;
    }
    match p.model.call_site_with_grad(id) {
        Some((file, range)) => Callers::Mixed(file, range),
        None => Callers::WithoutGrad,
    }
}

/// What the project model says about autograd here: a caller differentiates what this
/// function returns (`loss = train_loss(model, x); torch.autograd.grad(loss, params)`), so it
/// needs its graph; or it only runs with autograd off (every caller chain starts after the
/// entry script's `torch.set_grad_enabled(False)`, or under `no_grad`); or this function (or
/// the module body) turned autograd off for the process before the call, also from inside
/// the loop that makes the call.
fn project_settles_grad(checker: &Checker, call: &ExprCall) -> bool {
    let Some(p) = checker.project_or_file() else {
        return false;
    };
    let Some(id) = crate::rules::facts::current_function(checker, p) else {
        return false;
    };
    p.grad_disabled_before(id, call.start())
        || caller_differentiates_result(checker)
        || p.model.runs_without_grad(id)
}

/// Is every binding of the called name a `torch.load(...)` (through `.to(device)`,
/// `.cuda()`, `.eval()` chains)?
fn loaded_whole(checker: &Checker, func: &Expr) -> bool {
    let values = assigned_values(checker, func);
    !values.is_empty()
        && values.iter().all(|(v, _)| {
            matches!(torchvet_semantic::dataflow::module_chain(v).0, Expr::Call(c)
                if checker.resolve(&c.func).is_some_and(|q| helpers::is_torch_load(&q)))
        })
}

/// Is the called object a module without parameters (a loss written as an `nn.Module`, such
/// as a bootstrapped cross-entropy, `nn.MSELoss()`, a sine generator): not a model whose
/// forward records activations of its own?
fn parameter_free_module(checker: &Checker, func: &Expr) -> bool {
    use torchvet_semantic::project::Entity;
    let values = assigned_values(checker, func);
    !values.is_empty()
        && values.iter().all(|(v, _)| {
            let Expr::Call(c) = v else {
                return false;
            };
            if let Some(q) = checker.resolve(&c.func) {
                if q.starts_with("torch.nn.") {
                    return torchvet_semantic::is_parameter_free_construction(
                        helpers::last_segment(&q),
                        c,
                    ) && torchvet_semantic::mode_layer(&q).is_none();
                }
            }
            // A project class (of any file) that builds nothing with parameters: a loss, a
            // signal generator, a fixed transform.
            let Some(p) = checker.project_or_file() else {
                return false;
            };
            // An imported name (also one imported inside the function), else a class of
            // this file.
            let class = checker
                .resolve(&c.func)
                .and_then(|q| p.entity(&q))
                .or_else(|| match &*c.func {
                    Expr::Name(n) => p.local(n.id.as_str()),
                    _ => None,
                });
            matches!(class, Some(Entity::Class(id))
                if p.model.is_parameter_free_class(id)
                    && (p.model.is_loss_class(id)
                        || (p.model.runs_only_parameter_free_objects(id) && !p.model.is_empty_skeleton(id))))
        })
}

/// May the called object be an instance of a project class whose `forward` differentiates
/// (an adversarial-attack wrapper that runs `loss.backward()` on its input)? Its call needs
/// autograd on, so `no_grad` would break it.
fn forward_differentiates(checker: &Checker, func: &Expr) -> bool {
    let Some(p) = checker.project_or_file() else {
        return false;
    };
    let Some(r) = checker.value_resolved(func) else {
        return false;
    };
    let alternatives = r
        .alternatives
        .iter()
        .flatten()
        .filter_map(|a| a.class.as_ref());
    r.class
        .iter()
        .chain(alternatives)
        .any(|c| matches!(c, torchvet_semantic::project::ClassRef::Project(id) if p.model.forward_differentiates(*id)))
}

/// Does the call pick a branch of the object's `forward` by a literal
/// (`model(data, mode="inference")`), in a project class whose `forward` turns autograd off
/// for a block of its own ([`ProjectModel::forward_turns_grad_off`])? SPADE-style models route
/// every use through `forward` and run inference under `torch.no_grad()` there.
///
/// [`ProjectModel::forward_turns_grad_off`]: torchvet_semantic::project::ProjectModel::forward_turns_grad_off
fn forward_turns_grad_off(checker: &mut Checker, func: &Expr, call: &ExprCall) -> bool {
    let literal = call
        .arguments
        .args
        .iter()
        .chain(call.arguments.keywords.iter().map(|k| &k.value))
        .any(|a| matches!(a, Expr::StringLiteral(_)));
    if !literal {
        return false;
    }
    let Some(class) = checker.project_class_of(func) else {
        return false;
    };
    checker
        .project_or_file()
        .is_some_and(|p| p.model.forward_turns_grad_off(class))
}

/// A name or `self.<attr>`: an object a model call can be made on.
fn is_object(e: &Expr) -> bool {
    match e {
        Expr::Name(_) => true,
        Expr::Attribute(a) => helpers::name_of(&a.value) == Some("self"),
        _ => false,
    }
}

/// How a call runs a model's forward pass.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Via {
    /// Calling the object (`model(x)`), or not at all (for a method call).
    Call,
    /// `obj.forward(x)`, or a forward-running method of the object's own project class.
    OwnClass,
    /// The only forward-running project module method of that name; the object's class is
    /// unknown, so its kind must say module.
    Name,
}

/// Does `obj.<method>(...)` run the object's forward pass: `forward` itself, or a project
/// module class's method that does (see
/// [`torchvet_semantic::project::ProjectModel::forward_running_method`]): the method of the
/// object's own class when the project model knows it (a parameter's from its call sites),
/// else the only such method of that name.
fn runs_forward(checker: &Checker, method: &ruff_python_ast::ExprAttribute) -> Via {
    use torchvet_semantic::project::ClassRef;
    if method.attr.as_str() == "forward" {
        return Via::OwnClass;
    }
    let Some(p) = checker.project_or_file() else {
        return Via::Call;
    };
    if !p.model.is_module_method_name(method.attr.as_str()) {
        return Via::Call;
    }
    let (class, via) = match checker.value_resolved(&method.value).and_then(|r| r.class) {
        Some(ClassRef::Project(c)) => (Some(c), Via::OwnClass),
        Some(ClassRef::External(_)) => return Via::Call,
        None => (None, Via::Name),
    };
    match p.model.forward_running_method(class, method.attr.as_str()) {
        Some(_) => via,
        None => Via::Call,
    }
}

/// A name bound only by an import of a function or a class (`from utils import accuracy`,
/// `from tqdm import tqdm`, `from .models import Net`): calling it runs that function or
/// builds an object, not a model's forward pass. A module-level object of a project module
/// (`from train import model`), or an outside name whose methods the file calls
/// (`net.eval()`), may hold a model.
fn imports_callable(checker: &Checker, name: &str) -> bool {
    use torchvet_semantic::project::Entity;
    let Some(q) = checker.scopes.import_only(name) else {
        return false;
    };
    match checker.project().and_then(|p| p.entity(q)) {
        Some(Entity::Class(_) | Entity::Function(_) | Entity::Module(_)) => true,
        Some(Entity::Global(..)) => false,
        Some(Entity::External(_)) | None => !checker.mentions_attribute_of(name),
    }
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    // `torch.no_grad` came with torch 0.4: a project whose every allowed torch is older
    // (`torch==0.3.1`) turns autograd off with `volatile=True`, which the old API rules leave
    // alone there.
    if !checker.torch_at_least(0, 4) {
        return;
    }
    // The model called: `model(x)`, `self.net(x)`, or a method of it that runs its forward
    // pass (`model.forward(x)`, or a project module class's `model.generate(x)`).
    let (func, via): (&Expr, Via) = match &*call.func {
        // A builtin (`len(x)`, `print(...)`, `ValueError(...)`) that nothing here rebinds runs
        // no model: most calls of a name are such, and the regions below are not cheap.
        Expr::Name(n)
            if helpers::is_python_builtin(n.id.as_str())
                && !checker.scopes.is_bound(n.id.as_str()) =>
        {
            return
        }
        // Nor does calling a function or class the file defines (and binds no other way).
        Expr::Name(n)
            if checker.scopes.names_definition(n.id.as_str())
                && !(checker.mentions("global ") || checker.mentions("nonlocal ")) =>
        {
            return
        }
        // Nor an imported function or class (`accuracy(out, y)`, `tqdm(loader)`).
        Expr::Name(n) if imports_callable(checker, n.id.as_str()) => return,
        f @ Expr::Name(_) => (f, Via::Call),
        // `self.forward(x)` in a model's own method runs the model itself.
        Expr::Attribute(a)
            if helpers::name_of(&a.value) == Some("self") && a.attr.as_str() == "forward" =>
        {
            (&a.value, Via::OwnClass)
        }
        f @ Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => (f, Via::Call),
        Expr::Attribute(a) if is_object(&a.value) => match runs_forward(checker, a) {
            Via::Call => return,
            via => (&a.value, via),
        },
        _ => return,
    };
    // In a loop (or comprehension), or once in a function that put the model in eval mode.
    let in_loop = checker.in_loop_or_comprehension();
    // Inside `with torch.enable_grad():` the author asked for a graph (an attack library's
    // adversarial evaluation, a saliency map).
    if checker.regions().enable_grad > 0
        || grad_off_here(checker)
        || result_discarded(checker, call)
    {
        return;
    }
    let fkey = checker.function().map_or(u64::from(u32::MAX), |f| {
        u64::from(f.range().start().to_u32())
    });
    if REPORTED.with_borrow(|r| r.contains(&fkey)) {
        return;
    }
    // A callable object's `__call__` (a loss class's, `YoloLoss()(preds, targets)`) runs in
    // the grad mode of its caller, like a module's `forward`.
    if checker
        .function()
        .is_some_and(|f| is_framework_hook(f.name.as_str()) || f.name.as_str() == "__call__")
        || (in_model_class(checker)
            && !fit_method_of_model(checker)
            && !self_evaluating_method(checker, call))
        || in_loss_class(checker)
        || checker.is_test_file()
    {
        return;
    }
    // The evaluation region first: it reads the syntax and the function's events, while the
    // value below computes the file's dataflow summaries (most loops are no such region).
    let top_level = checker.function().is_none();
    let region = if in_loop {
        checker.eval_region()
    } else if top_level {
        checker.module_inference_region(call)
    } else {
        match checker.eval_function_region(call.start()) {
            Some(r) => Some(r),
            None => checker
                .inference_function_region(call)
                .or_else(|| checker.module_inference_region(call)),
        }
    };
    // A function that trains only when a parameter says so (`run_epoch(model, loader,
    // optimizer=None)`), called somewhere with it off and autograd on: that call evaluates.
    let flag_off = match region {
        Some(_) => None,
        None => training_flag_off(checker),
    };
    // A phase loop (`for phase in ["train", "val"]:`) that trains only in its training
    // phase: in the evaluation phase the same forward pass evaluates.
    let phase = match (&region, &flag_off) {
        (None, None) if in_loop => checker.phase_loop_evaluating(call.range()),
        _ => None,
    };
    // A stretch of a training loop between `G.eval()` and `G.train()` that runs the model.
    let segment = match (&region, &flag_off, &phase) {
        (None, None, None) if in_loop => {
            object_key(func).and_then(|k| checker.eval_segment_region(call, &k))
        }
        _ => None,
    };
    let region = match (region.or(segment), &flag_off, &phase) {
        (Some(r), _, _) => r,
        (None, Some(_), _) => EvalRegion {
            range: checker.function().map_or(call.range(), |f| f.range),
            loop_stmt: None,
            evidence: Evidence::Function,
        },
        (None, None, Some((l, _))) => EvalRegion {
            range: l.range(),
            loop_stmt: None,
            evidence: Evidence::Function,
        },
        (None, None, None) => return,
    };
    // Code written for torch < 0.4 that turns autograd off with `Variable(x, volatile=True)`
    // in this function (or takes its inputs from a project helper that builds them so), in a
    // project that does not say it runs on a newer torch: `volatile-flag-removed` reports the
    // flag (ignored since 0.4) and says what replaces it. Asked once a region is found: the
    // helper search walks the function's calls.
    if !checker.declared_min_known_at_least(0, 4) && uses_volatile_here(checker) {
        return;
    }
    // A torch module: by its kind, or, where the name's kind is mixed (a notebook that runs
    // the PyTorch and the TensorFlow version of one example under the same name), by the
    // value it holds here (a torch `from_pretrained` model in eval mode).
    // The switch must be this file's own: an eval mode that comes with the value from a
    // helper of another file (`model = load_model(path)`, which calls `.eval()`) says what
    // the helper returns, not that the object called here is that torch model (a script whose
    // other branch runs a TensorFlow model under the same attribute).
    let value = checker.taint_of(func);
    let torch_here = value
        .facts
        .iter()
        .any(|f| f.prop == torchvet_semantic::dataflow::Prop::EvalMode && f.remote.is_none());
    // An object whose kind the file does not tell is a module when the method it is given
    // is its own class's forward-running method (the model knows the class), or `forward`;
    // for the only such method of that name, when it was put in eval mode (below).
    // The project model's kind (a `self.model` given to a trainer's constructor) counts where
    // the evaluation is explicit: a loop over evaluation data, or an `eval()` switch earlier
    // in the function. A method that is an evaluation only by its name may be run by a base
    // class under a no-grad context the model does not follow (a pipeline's `forward` entering
    // `self.get_inference_context()` around the subclass's `_forward`).
    let kind = match checker.kind_of(func) {
        Kind::Unknown
            if matches!(region.evidence, Evidence::Data | Evidence::EvalMode)
                || checker.eval_function_region(call.start()).is_some() =>
        {
            checker.value_kind(func)
        }
        k => k,
    };
    let known_module = kind == Kind::Module || torch_here;
    // An object of unknown kind whose `forward` is called is taken for a module only in a
    // file that uses torch: a NumPy network written from scratch (`nn = NeuralNetwork(...)`;
    // `nn.forward(x)`) or a tinygrad model records no autograd graph.
    // A name bound only to what `torch.load` returns and then called (`rnn = torch.load(path)`,
    // `rnn(x)`) holds a whole pickled module: a state dict or a tensor is not callable.
    let module = known_module
        || (via != Via::Call && kind == Kind::Unknown && checker.mentions("torch"))
        || (kind == Kind::Unknown && loaded_whole(checker, func));
    if !module || loss_like(checker, func) {
        return;
    }
    // Made-up inputs test shapes, unless they go to a model holding trained weights loaded
    // here and the output is more than a shape: a GAN generator producing images from noise
    // (`G.load_state_dict(...)`, then `G(torch.randn(...))`). Printing the shape of one pass
    // on a random input after loading is still a shape check.
    let shape_only = matches!(checker.parent_expr(), Some(Expr::Attribute(a))
        if matches!(a.attr.as_str(), "shape" | "size" | "dtype" | "ndim"));
    let trained_weights = (in_loop || !shape_only)
        && object_key(func).is_some_and(|k| {
            torchvet_semantic::regions::weights_loaded_before(
                checker.scope_body(),
                &k,
                call.start(),
            )
            .is_some()
        });
    if (smoke_test_call(checker, call) && !trained_weights) || one_batch_self_test(checker) {
        return;
    }
    // A parameter-free torch layer (`sp = nn.Softplus(beta)`, `nn.ReLU()`) records a graph
    // only when its input requires grad: applying one (to optimizer state in a `step()`, to
    // a tensor) is not a model's forward pass.
    if value.class().is_some_and(|c| {
        c.strip_prefix("torch.nn.")
            .is_some_and(|n| torchvet_semantic::is_parameter_free_layer(helpers::last_segment(n)))
    }) {
        return;
    }
    let callers = callers(checker);
    if matches!(callers, Callers::WithoutGrad)
        || crate::rules::facts::module_frozen_at(checker, func, call.start())
    {
        return;
    }
    if project_settles_grad(checker, call)
        || parameter_free_module(checker, func)
        || forward_differentiates(checker, func)
        || crate::rules::facts::runs_own_call(checker, func)
        || forward_turns_grad_off(checker, func, call)
    {
        return;
    }
    let model = checker.text(func.range()).to_string();
    // A loop that builds the model it runs (`model.add_module(name, layer)` per layer of a
    // pretrained CNN, running the partial model once to record a style-transfer target) is
    // construction, not evaluation.
    if region
        .loop_stmt
        .is_some_and(|l| builds_model_in(checker, l, &model))
    {
        return;
    }
    // The eval() call on this model before the region (before the call, for a call outside
    // any loop), if any.
    let events = checker.function_events();
    let before = if in_loop {
        region.range.start()
    } else {
        call.start()
    };
    let model_key = object_key(func);
    let on_model = |e: &torchvet_semantic::flow::Event| {
        e.target.as_ref().map(|o| o.key.as_str()) == model_key.as_deref()
    };
    let eval_call = events
        .iter()
        .filter(|e| e.kind == EventKind::Eval && e.site().start() < before && on_model(e))
        .map(|e| e.site())
        .next_back();
    // A model built afresh after that `eval()` (`model = RNNModel(...)` in a later notebook
    // cell) is a new object in training mode: the old switch says nothing of it.
    let stale = eval_call;
    let eval_call = eval_call.filter(|at| {
        !assigned_values(checker, func).iter().any(|(v, r)| {
            r.start() > at.end()
                && r.start() < before
                && matches!(
                    torchvet_semantic::dataflow::module_chain(v).0,
                    Expr::Call(_)
                )
        })
    });
    if stale.is_some() && eval_call.is_none() && region.evidence == Evidence::EvalMode {
        return;
    }
    if via == Via::Name && !known_module && eval_call.is_none() {
        return;
    }
    // Outside a loop only the model's own `eval()` makes a call evaluation, and the model is
    // still in eval mode at the call (no `train()` on it in between).
    if !in_loop && region.evidence != Evidence::Function {
        let Some(at) = eval_call else {
            return;
        };
        if events.iter().any(|e| {
            e.kind == EventKind::Train
                && on_model(e)
                && e.site().start() > at.start()
                && e.site().start() < call.start()
        }) {
            return;
        }
        // The output kept on the object (`self.Q = self.policy_net(states).gather(1, a)` in a
        // DQN agent's `get_expected_Q()`): another method may train on it (its
        // `update_policynet()` differentiates `self.Q`), so the graph may be needed.
        if result_stored_on_self(checker, call) {
            return;
        }
    }
    let trains = events
        .iter()
        .any(|e| matches!(e.kind, EventKind::Backward | EventKind::Step));
    // An evaluation-only function is reported (and decorated) once; otherwise each
    // evaluation loop of the scope is its own finding (notebooks evaluate in several cells).
    let key = if checker.function().is_some() && !trains {
        fkey
    } else if (top_level && !in_loop) || region.range == call.range() {
        // One finding per `eval()` switch at top level (a notebook cell that plots two
        // predictions after it), or after training in a function, or in a stretch of a
        // training loop (`G.eval()`, samples from two noise vectors, `G.train()`).
        (2u64 << 32) | u64::from(eval_call.map_or(call.start(), |e| e.start()).to_u32())
    } else {
        (1u64 << 32) | u64::from(region.range.start().to_u32())
    };
    if !REPORTED.with_borrow_mut(|r| r.insert(key)) {
        return;
    }
    let place = match checker.function() {
        Some(f) => format!("`{}()`", f.name),
        None if !in_loop => "this call".to_string(),
        None => "this loop".to_string(),
    };
    let why = match (&flag_off, eval_call.is_some(), region.evidence) {
        (None, _, _) if phase.is_some() => {
            let (_, ph) = phase.as_ref().expect("checked");
            format!(
                "this `for {} in ...` loop trains only in its `{}` phase; in its `{}` phase it evaluates but runs `{model}`",
                ph.var,
                ph.train.join("`/`"),
                ph.eval.join("`/`"),
            )
        }
        (Some(off), _, _) => format!(
            "{place} trains only when `{}` is given; called without it, it evaluates but runs `{model}`",
            off.param
        ),
        (None, true, _) => format!("`{model}` is in eval mode, but {place} still runs it"),
        (None, false, Evidence::Data) => {
            format!("{place} evaluates `{model}` on held-out data but runs it")
        }
        (None, false, Evidence::Function)
            if checker.function().is_some_and(|f| {
                !torchvet_semantic::regions::is_eval_name(f.name.as_str())
                    && torchvet_semantic::regions::is_sampling_name(f.name.as_str())
            }) =>
        {
            format!("{place} only looks at what `{model}` makes but runs it")
        }
        (None, false, Evidence::Function) => {
            format!("{place} looks like evaluation but runs `{model}`")
        }
        (None, false, _) => format!("this evaluation loop runs `{model}`"),
    };
    // A loop keeps paying (and a running total may keep every graph alive); one forward pass
    // holds its activations until the result is dropped.
    let cost = if in_loop {
        "every forward pass records a graph and keeps its activations for a backward pass that never comes, costing memory and time"
    } else {
        "the forward pass records a graph and keeps its activations for a backward pass that never comes"
    };
    // Code of the `Variable` era (`.data[0]` reads, with the project's `volatile=True`
    // elsewhere or `Variable` wrapping) may run on a torch without `no_grad`: say what turns
    // autograd off there, and never call the decorator safe.
    // (At module level the whole script counts: its training loop reads `loss.data[0]`.)
    let old_torch = checker.written_for_old_torch(checker.function().map(|f| f.range()));
    let remedy = if old_torch {
        "wrap it in `torch.no_grad()` (torch 0.4 and later; this code looks written for an older torch, where `Variable(x, volatile=True)` on its inputs turns autograd off)"
    } else {
        "wrap it in `torch.no_grad()`"
    };
    let remedy = match (&flag_off, &phase) {
        (Some(off), _) => format!(
            "wrap that call in `torch.no_grad()`, or the forward pass in `torch.set_grad_enabled(...)` on `{}`",
            off.param
        ),
        (None, Some((_, ph))) => format!(
            "wrap the forward pass in `with torch.set_grad_enabled({} == \"{}\"):`",
            ph.var, ph.train[0]
        ),
        (None, None) => remedy.to_string(),
    };
    let message = format!("{why} with autograd enabled: {cost}; {remedy}");
    let fix = match (checker.function(), region.loop_stmt) {
        // A whole function that only evaluates: decorate it. Not one that also uses gradients
        // on purpose elsewhere (an attack's loop next to the clean one): wrap the loop.
        (Some(f), _) if !trains && !checker.uses_gradients_in(f) => {
            decorator_fix(checker, f, eval_call.is_some() && !old_torch)
        }
        // A loop (module level, or nested in a function that also trains): wrap it.
        (_, Some(l)) => with_fix(checker, l.range()),
        _ => None,
    };
    let project = checker.project().cloned();
    let d = checker.report(call.range(), message);
    if let Some(e) = eval_call {
        d.add_related(
            e,
            format!("`{model}` is put in eval mode here, but grad mode stays on"),
        );
    }
    if let (Some(off), Some(p)) = (&flag_off, &project) {
        d.add_remote(
            p,
            off.site.0,
            off.site.1,
            format!(
                "{place} is called here without `{}`, with autograd on",
                off.param
            ),
        );
    } else if let (Callers::Mixed(file, range), Some(p)) = (callers, &project) {
        d.add_remote(
            p,
            file,
            range,
            format!("{place} runs with autograd on from this call (another caller wraps it in `torch.no_grad()`)"),
        );
    }
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

/// Is the function being visited a model's own training method (`def train_model(self,
/// loader, epochs)` of an `nn.Module` that trains itself): not `forward` or a helper of it, but
/// a method that runs backward passes or optimizer steps, so its validation loop
/// (`self.eval()`, then `self(images)` over the validation loader) is evaluation like any
/// other?
fn fit_method_of_model(checker: &mut Checker) -> bool {
    // A cheap look at the method's text first (the events of every method of a model class
    // are not cheap): training spells a backward pass, a step, or a training helper's name.
    match method_traits(checker) {
        None | Some((Some(false), _)) => false,
        Some(_) => checker.function_events().iter().any(|e| e.kind.trains()),
    }
}

/// Is the function being visited a model's own evaluation method (`def get_test_acc(self,
/// loader)`: `self.eval()`, then `self.forward(x)` over the batches): not `forward`, it
/// switches the model itself to eval mode before the call, and the call is in a loop (a
/// one-call `predict(self, x)` returns its output to callers that may train on it).
fn self_evaluating_method(checker: &mut Checker, call: &ExprCall) -> bool {
    let switches_itself = method_traits(checker).is_some_and(|(_, evals)| evals);
    switches_itself
        && checker.in_loop_or_comprehension()
        && checker.eval_function_region(call.start()).is_some()
}

/// A call of the function being visited that evaluates with autograd on because the
/// parameter gating its training is off there.
struct FlagOff {
    param: String,
    site: (torchvet_semantic::project::FileId, TextRange),
}

/// The function being visited trains only under a parameter (see
/// [`Checker::training_flag_param`]), the forward pass being visited runs whatever it is,
/// and a call site in the project passes it falsy with autograd on
/// ([`torchvet_semantic::project::ProjectModel::call_site_with_grad_falsy`]).
fn training_flag_off(checker: &mut Checker) -> Option<FlagOff> {
    let f = checker.function()?;
    let (param, gates) = checker.training_flag_param()?;
    // The forward pass of the training branch only is training.
    if checker
        .stmt_stack()
        .iter()
        .any(|s| gates.contains(&s.range()))
    {
        return None;
    }
    let p = checker.project()?.clone();
    let id = p.function_at(f.range.start())?;
    let index = p
        .model
        .function(id)
        .params
        .iter()
        .position(|n| &**n == param)?;
    let site = p.model.call_site_with_grad_falsy(id, index)?;
    Some(FlagOff {
        param: param.to_string(),
        site,
    })
}

/// Does the loop build a model: `add_module(...)` on any module, or `model.append(...)` on
/// the one it runs?
fn builds_model_in(checker: &Checker, l: &ruff_python_ast::Stmt, model: &str) -> bool {
    let mut found = false;
    helpers::for_each_own_call(
        torchvet_semantic::regions::loop_body(l),
        false,
        &mut |c: &ExprCall| match helpers::method_call(c) {
            Some(("add_module", _)) => found = true,
            Some(("append" | "insert" | "extend", recv)) => {
                found |= checker.text(recv.range()) == model;
            }
            _ => {}
        },
    );
    found
}

fn decorator_fix(
    checker: &Checker,
    f: &ruff_python_ast::StmtFunctionDef,
    evaled: bool,
) -> Option<RawFix> {
    let at = def_keyword(checker, f)?;
    let indent = own_line_indent(checker, at)?;
    let line_start = at - TextSize::of(indent);
    let (torch, import) = checker.import_module("torch");
    let nl = crate::fix::newline(checker);
    let mut edits = vec![RawEdit::insert(
        line_start,
        format!("{indent}@{torch}.no_grad(){nl}"),
    )];
    edits.extend(import);
    let msg = format!("Decorate with `@{torch}.no_grad()`");
    Some(if evaled {
        RawFix::safe(msg, edits)
    } else {
        RawFix::unsafe_edit(msg, edits)
    })
}

/// The offset of the `def` keyword of `f` when only indentation precedes it on its line:
/// the new decorator goes on that line, directly above `def` and below every existing
/// decorator. It then wraps the plain function, before `@staticmethod`, `@classmethod`,
/// `@property` or any other decorator sees it; placed above them it would wrap a
/// `staticmethod` object (a plain function in the class, which receives `self` when called
/// through an instance, and is not callable at all before Python 3.10) or a `property`.
/// `None` for an `async def` (`no_grad` would wrap only the creation of the coroutine, whose
/// body runs later with grad on, and the wrapper is no longer a coroutine function to
/// frameworks that check) and for a `def` that does not start its line.
fn def_keyword(checker: &Checker, f: &ruff_python_ast::StmtFunctionDef) -> Option<TextSize> {
    if f.is_async {
        return None;
    }
    let text = &checker.source.text;
    let name = f.name.range().start().to_usize();
    let line_start = text.get(..name)?.rfind('\n').map_or(0, |i| i + 1);
    let line = text.get(line_start..name)?;
    let code = line.trim_start_matches([' ', '\t']);
    let after = code.strip_prefix("def")?;
    if after.is_empty() || !after.chars().all(|c| c == ' ' || c == '\t') {
        return None;
    }
    TextSize::try_from(line_start + (line.len() - code.len())).ok()
}

fn with_fix(checker: &Checker, loop_range: TextRange) -> Option<RawFix> {
    let indent = own_line_indent(checker, loop_range.start())?;
    if indent.contains('\t') {
        return None;
    }
    let text = checker.text(loop_range);
    if text.contains("\"\"\"") || text.contains("\'\'\'") || text.contains('\r') {
        return None;
    }
    let (torch, import) = checker.import_module("torch");
    let mut out = format!("with {torch}.no_grad():\n");
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if line.trim().is_empty() {
            out.push_str(line);
            continue;
        }
        out.push_str(indent);
        out.push_str("    ");
        out.push_str(if i == 0 {
            line
        } else {
            line.strip_prefix(indent)?
        });
    }
    let mut edits = vec![RawEdit::replace(loop_range, out)];
    edits.extend(import);
    Some(RawFix::unsafe_edit(
        format!("Wrap the loop in `with {torch}.no_grad():`"),
        edits,
    ))
}

fn finish(_checker: &mut Checker) {
    REPORTED.with_borrow_mut(|r| r.clear());
    METHOD_TRAITS.with_borrow_mut(|m| m.clear());
}

/// Does the function (or module body) being checked take pre-0.4 volatile inputs
/// ([`ProjectModel::takes_volatile_inputs`]: a `Variable(x, volatile=True)` of its own, or
/// from a project helper)?
///
/// [`ProjectModel::takes_volatile_inputs`]: torchvet_semantic::project::ProjectModel::takes_volatile_inputs
fn uses_volatile_here(checker: &Checker) -> bool {
    checker.project_or_file().is_some_and(|p| {
        crate::rules::facts::current_function(checker, p)
            .is_some_and(|f| p.model.takes_volatile_inputs(f))
    })
}

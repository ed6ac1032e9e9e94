use crate::checker::Checker;
use crate::fix::{next_line_start, own_line_indent};
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextRange, TextSize};
use std::cell::RefCell;
use torchvet_semantic::dataflow::module_chain;
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;
use torchvet_semantic::modes::{
    assigned_values, caller_differentiates_result, classify, frame_evaluation_caller,
    frame_is_eval_named, in_loss_class, in_model_class, is_framework_hook, loop_has_backward,
    mode_dependent, one_batch_self_test, smoke_test_call, summary, Event,
};

crate::declare_rule! {
    /// ## What it does
    /// Checks for models with Dropout or BatchNorm layers that are run for evaluation or
    /// inference (under `torch.no_grad()` / `torch.inference_mode()`, or in a function named
    /// like `validate`, `evaluate`, `test` or `predict`, or right after its trained weights
    /// are loaded in a script that never trains: `net.load_state_dict(torch.load(path))`
    /// then `net(x)`, or a library model built with pretrained weights and run in such a file:
    /// `vgg = models.vgg16(pretrained=True)` then `vgg.forward(x)`, not handed to any call in
    /// between, or right after the code around it trained it: a script's, notebook's or
    /// `main()`'s prediction after its epoch loop or its `train(model, ...)` call) without
    /// ever being switched to evaluation mode with `model.eval()`.
    ///
    /// ## Why is this bad?
    /// `torch.no_grad()` only turns off gradient tracking; it does not change how layers
    /// behave. A model left in training mode keeps dropping activations at random in its
    /// Dropout layers, and its BatchNorm layers normalise with the statistics of the current
    /// batch (and keep updating their running statistics with validation data). Validation
    /// scores become noisy and pessimistic, predictions change from run to run, and small
    /// inference batches give wrong outputs.
    ///
    /// The model may be built in another file, passed in as a parameter, or kept in
    /// `self.<attr>`: the project model knows its class, the layers of the class, of its
    /// sub-modules and of its base classes, and whether the callers switch it to eval mode
    /// before passing it (themselves, or through an earlier call of a helper whose body calls
    /// `model.eval()`: `evaluate(model=model, ...)` then `plot_preds(net=model, ...)`; a
    /// helper counts only when the model is passed as the parameter it switches). A
    /// layer built only for some arguments (`nn.Dropout(p) if p > 0 else None`) does not
    /// count by itself, nor one held by an attribute that `forward` and the other methods
    /// never read (a feature-map extractor that keeps the classifier head it never runs). A model chosen through a registry or a factory of classes
    /// (`MODELS[args.arch](...)`, `get_model_class(name)(**cfg)`) is reported when every class
    /// it may be has such layers; one unpacked from a tuple a project function returns
    /// (`encoder, decoder = load_model(path)`) has the class of its element. Evaluation is a `no_grad` region, an evaluation-named function, or an
    /// evaluation loop wherever it is written (including the validation loop nested in the
    /// epoch loop), or a helper that the project calls only from evaluation-named functions
    /// (`run_model(enc, dec, batch)` called from `predict()` only; a helper also called from
    /// the training code, or by a caller that calls `backward()`, is not evaluation).
    ///
    /// Stacked recurrent layers count as Dropout layers when built with a `dropout=` other
    /// than a literal zero and more than one layer (`nn.LSTM(..., num_layers=2,
    /// dropout=0.3)`): they drop activations between layers in training mode only; a
    /// `dropout=` that is zero for some arguments (`0 if num_layers == 1 else 0.05`) does not
    /// count. Functional dropout counts only when given `training=self.training`: without it
    /// (`F.dropout(x, 0.5)`, `training=True` by default) it drops in both modes, and `eval()`
    /// changes nothing. So does a
    /// sub-module handed to a project class that stores it whole (`SimCLR(encoder, 512)` with
    /// `self.encoder = encoder` in `__init__`, `encoder` a torchvision ResNet). A torchvision
    /// detection model (`fasterrcnn_resnet50_fpn`, `maskrcnn_resnet50_fpn`) does not count: it
    /// returns its losses only in training mode, so a validation loss is computed there on
    /// purpose, and its pretrained backbone's BatchNorm is frozen. Nor does a torchvision
    /// vision transformer (`vit_b_16`) built without a `dropout=` / `attention_dropout=`
    /// (both 0.0 by default), or a VGG, AlexNet or SqueezeNet whose `classifier`, the only
    /// part with Dropout, the file or the project function that returns it replaced by torch
    /// layers without any (`model.classifier = nn.Linear(n, 2)`). The message names every
    /// family the model holds (`Dropout and BatchNorm`), and what training mode does to it.
    ///
    /// A model loaded with Hugging Face `from_pretrained` (transformers, diffusers, also
    /// through the hub: `torch.hub.load("huggingface/pytorch-transformers", "model...", name)`)
    /// comes back in eval mode, so it is not reported where it is still that loaded object: no
    /// `model.train()`, no trainer or function it was passed to (which may train it; `print`,
    /// `len`, `logging.info` only look, and a helper of the file that the project model shows
    /// neither switches a mode nor trains leaves it alone), no
    /// re-binding to another model between the load and the use. A model trained elsewhere in
    /// the file (another object, an earlier cell of a notebook) does not matter.
    ///
    /// Not reported either: shape smoke tests on made-up inputs (`net(torch.randn(1, 3, 32,
    /// 32))`, also through a legacy `Variable(...)`, or scaled and shifted: a notebook that
    /// plots what BatchNorm does to `torch.randn(128, 32) * 3 + 2`) or on no input at all
    /// (`model = Net()` after the script rebound `Net` to an instance), and a target or teacher network run
    /// under `no_grad` inside a training step, whose outputs meet a with-grad output in the
    /// loss (BYOL's momentum network: its training-mode BatchNorm is intended).
    ///
    /// A prediction after training is reported only where it surely follows the training
    /// (a later statement of the same suite, not the other branch of an `if`) with the same
    /// model object (not bound again since), nothing trains after it (not a look between two
    /// rounds of training), the code uses no gradients on purpose (a saliency map), and the
    /// model is not handed in between to a call that may switch its mode (`evaluate(model,
    /// loader)`; a project helper that puts its parameter in eval mode and leaves it so
    /// counts as `model.eval()`), nor to a method other than moves and reads (`model.to(dev)`,
    /// `model.state_dict()`, `model.load_state_dict(best)`). Forward passes in a loop or a
    /// comprehension there are evaluation loops or Monte Carlo dropout, judged as such.
    ///
    /// Nor a function whose returned loss a caller differentiates (`loss = clip_loss(net, x);
    /// loss.backward()`): its forward passes are training, except those it runs under
    /// `no_grad` (features extracted for a linear probe that the caller then fits: the
    /// encoder is evaluated, and no graph reaches it). Nor the one-batch self-test under
    /// `if __name__ == "__main__":` of a file that defines the model, loss or decoder (`for
    /// data in tqdm(train_loader): ...; break`): it checks shapes or feeds the training loss,
    /// it evaluates nothing. Nor a model put in training mode explicitly (`model.train()`,
    /// `model = model.train()`) before the call in a function or script that never trains:
    /// BatchNorm with batch statistics at inference, chosen on purpose.
    ///
    /// Nor a model whose only Dropout/BatchNorm sits in a sub-module its constructor puts in
    /// eval mode (`self.net = resnet.eval()` in a FID feature extractor, a linear probe that
    /// takes the BatchNorm layers of a pretrained network it loaded and switched to eval
    /// mode), in a file that never calls `train()` on it: it runs in eval mode already. Nor a
    /// Dropout that `forward` builds into a local name (`dropout = nn.Dropout(p=self.p)`): a
    /// fresh module on every call, in training mode whatever `eval()` does. Nor a script's or
    /// notebook's new model run on a batch before anything trained or loaded it, when a later
    /// statement trains it ("test the model's forward method" on `next(iter(train_loader))`,
    /// then `trainer.fit(model)`): random weights, a shape check.
    ///
    /// ## Example
    /// ```python
    /// model = Net()  # has nn.Dropout
    /// with torch.no_grad():
    ///     for x, y in val_loader:
    ///         correct += (model(x).argmax(1) == y).sum()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model = Net()
    /// model.eval()
    /// with torch.no_grad():
    ///     for x, y in val_loader:
    ///         correct += (model(x).argmax(1) == y).sum()
    /// model.train()
    /// ```
    ///
    /// ## Fix safety
    /// The fix inserts `model.eval()` before the `no_grad` block (and `model.train()` after it
    /// when the file also trains), or at the start of an evaluation function in files that do
    /// not train. It changes the model's outputs (that is the point) and may interact with
    /// mode changes made elsewhere, so it is unsafe.
    ///
    /// ## References
    /// - [Module.eval](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval)
    /// - [Autograd mechanics: evaluation mode is not a grad mode](https://pytorch.org/docs/stable/notes/autograd.html#evaluation-mode-nn-module-eval)
    /// - [ipolharvard/ethos-ares issue 20](https://github.com/ipolharvard/ethos-ares/issues/20)
    /// - [udacity/deep-learning-v2-pytorch issue 3](https://github.com/udacity/deep-learning-v2-pytorch/issues/3)
    pub(crate) static MISSING_EVAL_MODE = {
        name: "missing-eval-mode",
        code: "TV009",
        group: Correctness,
        severity: Warning,
        title: "Model evaluated without model.eval()",
        autofix: Suggest,
        preview: true,
        hooks: { call: check_call, end: finish },
    };
}

/// Where the model with train/eval-sensitive layers comes from.
enum Created {
    /// Built in this file.
    Here(TextRange),
    /// A class of another file of the project (the class, where its layer is built).
    Project(torchvet_semantic::project::ClassId),
    /// A library model passed in (a torchvision / timm builder).
    Library,
}

struct Candidate {
    call: TextRange,
    model: String,
    layers: &'static str,
    created: Created,
    context: String,
    /// The enclosing `with torch.no_grad()` statement.
    with_stmt: Option<TextRange>,
    /// The first statement of the enclosing evaluation function.
    first_stmt: Option<TextRange>,
    /// The `model.load_state_dict(...)` statement of a one-shot inference.
    after_load: Option<TextRange>,
    /// The first line of the top-level statement that trained the model, for a forward pass
    /// after it.
    trained: Option<TextRange>,
    key: (u32, String),
    /// Plain names the model was bound from (`self.net = model`): a `model.eval()` before the
    /// binding switched this model too.
    aliases: Vec<String>,
}

thread_local! {
    static PENDING: RefCell<Vec<Candidate>> = const { RefCell::new(Vec::new()) };
}

fn grad_off_with(checker: &Checker) -> Option<TextRange> {
    checker.stmt_stack().iter().rev().find_map(|st| {
        let Stmt::With(w) = st else { return None };
        w.items
            .iter()
            .any(|i| {
                let e = match &i.context_expr {
                    Expr::Call(c) => &*c.func,
                    e => e,
                };
                checker.resolve(e).is_some_and(|q| {
                    matches!(
                        helpers::last_segment(&q),
                        "no_grad" | "inference_mode" | "set_grad_enabled"
                    ) && q.starts_with("torch")
                })
            })
            .then(|| st.range())
    })
}

/// Is the innermost `with torch.no_grad():` block around the call part of a training step
/// (its outputs meet a with-grad model output in a loss: see
/// `regions::no_grad_block_feeds_loss`)?
fn no_grad_target_of_step(checker: &mut Checker) -> bool {
    let Some(range) = grad_off_with(checker) else {
        return false;
    };
    let Some(Stmt::With(block)) = checker
        .stmt_stack()
        .iter()
        .rev()
        .find(|s| s.range() == range)
        .copied()
    else {
        return false;
    };
    let body: &[Stmt] = checker.scope_body();
    torchvet_semantic::regions::no_grad_block_feeds_loss(body, block, &mut |c| {
        checker.kind_of(&c.func) == Kind::Module
    })
}

/// Is the value a Hugging Face `transformers` model, by the class the project model gives it
/// (an annotation `model: VisionEncoderDecoderModel`, a `from_pretrained` build)?
fn hugging_face_model(checker: &Checker, e: &Expr) -> bool {
    use torchvet_semantic::project::ClassRef;
    checker
        .value_resolved(e)
        .and_then(|r| r.class)
        .is_some_and(|c| matches!(c, ClassRef::External(q) if q.starts_with("transformers.")))
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    // `net.forward(x)` runs the model as `net(x)` does; so does a Hugging Face model's
    // `model.generate(...)`, which runs the forward passes under `no_grad` in the mode the
    // model is in (a project class's own `generate` may switch the mode itself).
    let func = match &*call.func {
        Expr::Attribute(a)
            if a.attr.as_str() == "forward" && matches!(&*a.value, Expr::Name(_)) =>
        {
            &*a.value
        }
        Expr::Attribute(a)
            if a.attr.as_str() == "generate"
                && matches!(&*a.value, Expr::Name(_))
                && hugging_face_model(checker, &a.value) =>
        {
            &*a.value
        }
        f => f,
    };
    match func {
        Expr::Name(_) => {}
        Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => {}
        _ => return,
    }
    let in_no_grad = checker.in_no_grad();
    let fname = checker.function().map(|f| f.name.as_str());
    let own_name = frame_is_eval_named(checker);
    // A helper only called for evaluation (`run_model()` called from `predict()`) evaluates
    // as its caller does.
    let serves = if own_name || in_no_grad {
        None
    } else {
        frame_evaluation_caller(checker)
    };
    let named = own_name || serves.is_some();
    // One-shot inference: trained weights loaded into the model earlier in this scope, in a
    // file that never trains (`net.load_state_dict(torch.load(path)); out = net(x)`).
    let loaded = if in_no_grad || named || checker.in_loop_or_comprehension() {
        None
    } else {
        weights_loaded_here(checker, func, call)
    };
    // Outside those and any loop, the one context left is a forward pass after the code
    // around it trained the model (a script's or notebook's top level, or `main()`): asked
    // below, once the callee is known to be a module (every call gets that far now).
    let after = !in_no_grad && !named && loaded.is_none() && !checker.in_loop_or_comprehension();
    if fname.is_some_and(is_framework_hook)
        || in_model_class(checker)
        || in_loss_class(checker)
        || checker.is_test_file()
    {
        return;
    }
    // `with eval_mode(model):` style helpers switch the mode themselves.
    if checker.stmt_stack().iter().any(|s| match s {
        Stmt::With(w) => w
            .items
            .iter()
            .any(|i| checker.text(i.context_expr.range()).contains("eval_mode")),
        _ => false,
    }) {
        return;
    }
    if checker.kind_of(func) != Kind::Module {
        return;
    }
    // `self.netG(x)` in a class whose (base) method switches the attributes it lists by name
    // (`getattr(self, "net" + name).eval()`): this attribute may well be in eval mode.
    if matches!(func, Expr::Attribute(_))
        && checker
            .method_class_id()
            .zip(checker.project())
            .is_some_and(|(c, p)| p.model.evals_attributes_by_name(c))
    {
        return;
    }
    // A caller differentiating what the function returns makes its forward passes training,
    // except one run without autograd: its output carries no graph, so what a caller trains
    // on it (a linear probe fitted to features extracted here) is another model.
    if smoke_test_call(checker, call)
        || one_batch_self_test(checker)
        || (caller_differentiates_result(checker) && !checker.in_no_grad())
    {
        return;
    }
    // The statement that trained the model (the epoch loop, a training helper's call), with
    // nothing between it and this call that may have switched the model's mode or trained
    // it again.
    let after_training = if after {
        match checker.after_training(call) {
            Some(trained)
                if torchvet_semantic::modes::trained_then_untouched(
                    checker,
                    func,
                    trained,
                    call.start(),
                ) =>
            {
                Some(trained.range())
            }
            _ => return,
        }
    } else {
        None
    };
    // Evaluation: under no_grad, in an evaluation-named function, or in an evaluation loop
    // (wherever it is written, e.g. the validation loop nested in the epoch loop).
    let region = if in_no_grad || named || loaded.is_some() || after_training.is_some() {
        None
    } else {
        match checker.eval_region() {
            Some(r) => Some(r),
            None => return,
        }
    };
    // Teacher / target networks queried inside a training loop are not evaluation. Only the
    // innermost loop counts: a validation loop nested in the epoch loop (whose other inner
    // loop trains) is evaluation.
    let innermost = checker.frame().loops.last().cloned();
    if innermost.is_some_and(|l| loop_has_backward(checker, l)) {
        return;
    }
    // The same for a training-step function without its own loop or backward pass (BYOL's
    // `update()`, whose caller differentiates the loss): the no_grad output is the target
    // that a with-grad output is trained against.
    if in_no_grad && no_grad_target_of_step(checker) {
        return;
    }
    // A function that also calls backward() may be gradient-based evaluation (saliency,
    // adversarial examples), unless this call runs with autograd off: then the backward()
    // belongs to the training part of a fit-and-validate function.
    // (An evaluation loop has been checked already: its backward-free iteration and the
    // absence of a backward consuming its outputs.)
    if let Some(f) = checker
        .function()
        .filter(|_| !in_no_grad && region.is_none() && after_training.is_none())
    {
        if summary(checker, f).backward.is_some() {
            return;
        }
    }
    let model = checker.text(func.range()).to_string();
    let key = (
        checker.function().map_or(0, |f| f.range().start().to_u32()),
        model.clone(),
    );
    if PENDING.with_borrow(|p| p.iter().any(|c| c.key == key)) {
        return;
    }
    if trained_on_purpose(checker, &model, call) {
        return;
    }
    // An object whose class defines its own `__call__` decides its mode there.
    if crate::rules::facts::runs_own_call(checker, func) {
        return;
    }
    // The semantic layer's mode of this value here: loaded in eval mode (`from_pretrained`)
    // or switched with `.eval()`, with no `.train()`, trainer or helper that may have
    // switched it back in between.
    if checker
        .taint_of(func)
        .definite(torchvet_semantic::dataflow::Prop::EvalMode)
        .is_some()
    {
        return;
    }
    let mut found = None;
    let mut aliases = Vec::new();
    for (value, range) in assigned_values(checker, func) {
        if let Expr::Name(n) = value {
            aliases.push(n.id.to_string());
        }
        // The binding's chain (`Net().to(dev).eval()`) leaves it in eval mode.
        let (base, mode) = module_chain(value);
        if mode == Some(true) {
            return;
        }
        if let Expr::Call(c) = base {
            if loaded_in_eval_mode(checker, c, &model) {
                return;
            }
            let before = range.start() < call.start();
            match mode_dependent(checker, c, 0) {
                // A VGG whose `classifier`, the only part with Dropout, the file replaced.
                Some(_)
                    if before && torchvet_semantic::modes::head_replaced_here(checker, func, c) =>
                {
                    return;
                }
                // The binding before the call, rather than a later re-binding.
                Some(k) if before || found.is_none() => {
                    found = Some((k, Created::Here(range)));
                }
                Some(_) => {}
                // One of the bindings that may reach the call builds a model without such
                // layers (`if no_bn: net = DCGAN_G_nobn(...) else: net = DCGAN_G(...)`): it
                // may well not be sensitive.
                None if before && torchvet_semantic::modes::constructs_mode_free(checker, c) => {
                    return;
                }
                None => {}
            }
        }
    }
    if found.is_none() {
        found = project_model_class(checker, func);
    }
    let Some((layers, created)) = found else {
        return;
    };
    // A feature extractor whose pretrained network its constructor put in eval mode; a new
    // model run once before the script trains it.
    if held_in_eval_mode(checker, func)
        || torchvet_semantic::modes::before_training(checker, func, call.start())
    {
        return;
    }
    let context = if region.is_some() {
        "in this evaluation loop".to_string()
    } else if after_training.is_some() {
        "after it is trained".to_string()
    } else if let Some(l) = &loaded {
        let how = if l.pretrained {
            "with the pretrained weights it was built with"
        } else {
            "after its trained weights are loaded"
        };
        format!("{how}, in a file that never trains,")
    } else if in_no_grad {
        if checker.regions().inference_mode > 0 {
            "under `torch.inference_mode()`".to_string()
        } else {
            "under `torch.no_grad()`".to_string()
        }
    } else if let Some(caller) = &serves {
        format!(
            "in `{}()`, which is only called for evaluation (from `{caller}()`),",
            fname.unwrap_or("?")
        )
    } else {
        format!("in `{}()`", fname.unwrap_or("?"))
    };
    let with_stmt = grad_off_with(checker);
    // Where `model.eval()` goes when there is no `no_grad` block.
    let first_stmt = match after_training {
        // Before the statement that holds the call in the suite of the training.
        Some(trained) => checker
            .stmt_stack()
            .iter()
            .find(|s| s.start() >= trained.end())
            .map(|s| s.range()),
        None => checker
            .function()
            .and_then(|f| eval_insertion_point(f, &model, call)),
    };
    PENDING.with_borrow_mut(|p| {
        p.push(Candidate {
            call: call.range(),
            model,
            layers,
            created,
            context,
            with_stmt,
            first_stmt,
            after_load: loaded.map(|l| l.at),
            trained: after_training.map(|r| {
                let text = checker.text(r);
                let line = text.find(['\n', '\r']).unwrap_or(text.len());
                TextRange::at(r.start(), TextSize::try_from(line).unwrap_or_default())
            }),
            key,
            aliases,
        })
    });
}

/// Where `model.eval()` goes in function `f` when there is no `no_grad` block: right after
/// the last statement before `call` that binds the model (`net = ResNet18()`), else first
/// (after the docstring).
fn eval_insertion_point(f: &StmtFunctionDef, model: &str, call: &ExprCall) -> Option<TextRange> {
    let root = model.split(['.', '[']).next().unwrap_or(model);
    let body: Vec<&Stmt> = f
        .body
        .iter()
        .filter(|s| !matches!(s, Stmt::Expr(e) if matches!(&*e.value, Expr::StringLiteral(_))))
        .collect();
    let named = |t: &Expr| matches!(t, Expr::Name(n) if n.id.as_str() == root);
    let binds = |s: &Stmt| match s {
        Stmt::Assign(a) => a.targets.iter().any(named),
        Stmt::AnnAssign(a) => named(&a.target),
        _ => false,
    };
    match body
        .iter()
        .rposition(|s| s.start() < call.start() && binds(s))
    {
        Some(i) => body.get(i + 1).map(|s| s.range()),
        None => body.first().map(|s| s.range()),
    }
}

/// Is `model` put in training mode explicitly (`model.train()`, `model = model.train()`)
/// before `call` in an enclosing function (or module body) that never trains: inference with
/// BatchNorm batch statistics on purpose (small domain shifts, batch size one), not a model
/// someone forgot to switch.
fn trained_on_purpose(checker: &Checker, model: &str, call: &ExprCall) -> bool {
    let trains = match checker.function() {
        Some(f) => summary(checker, f).backward.is_some(),
        None => !checker.facts.method_calls_of("backward").is_empty(),
    };
    if trains {
        return false;
    }
    let scope = checker.function().map(Ranged::range);
    checker.facts.method_calls_of("train").iter().any(|c| {
        c.start() < call.start()
            && scope.is_none_or(|r| r.contains_range(c.range()))
            // `train()` / `train(True)`, not `train(mode)` with a mode chosen at run time.
            && helpers::argument(c, "mode", 0)
                .is_none_or(|a| matches!(a, Expr::BooleanLiteral(b) if b.value))
            && matches!(classify(checker, c), Event::Train(r) if r == model)
    })
}

/// Where the model got its weights in a file that never trains (no `backward()` anywhere in
/// it): the statement after which `eval()` belongs.
struct Loaded {
    at: TextRange,
    /// Built with pretrained weights (else `model.load_state_dict(...)`).
    pretrained: bool,
}

/// The `model.load_state_dict(...)` statement before `call` in the enclosing function (or
/// the module body), or the pretrained build of the model ([`built_pretrained`]), when the
/// file never trains.
fn weights_loaded_here(checker: &Checker, func: &Expr, call: &ExprCall) -> Option<Loaded> {
    if !checker.facts.method_calls_of("backward").is_empty() {
        return None;
    }
    if !checker.facts.method_calls_of("load_state_dict").is_empty() {
        let key = torchvet_semantic::flow::object_key(func)?;
        let body: &[Stmt] = checker.scope_body();
        if let Some(s) = torchvet_semantic::regions::weights_loaded_before(body, &key, call.start())
        {
            return Some(Loaded {
                at: s.range(),
                pretrained: false,
            });
        }
    }
    built_pretrained(checker, func, call).map(|at| Loaded {
        at,
        pretrained: true,
    })
}

/// The statement binding a library model built with pretrained weights (`vgg =
/// models.vgg16(pretrained=True)`, also through `.to(device)` / `.cuda()`), when every
/// assignment of the name reaching `call` is such a build (or moves the same model), in the
/// scope of the call, and the model is not handed to a call in between.
fn built_pretrained(checker: &Checker, func: &Expr, call: &ExprCall) -> Option<TextRange> {
    let Expr::Name(n) = func else { return None };
    let defs = torchvet_semantic::reaching::reaching_in_frame(
        &checker.scopes,
        checker.function(),
        checker.module(),
        n.id.as_str(),
        call.start(),
    )?;
    let mut last = None;
    for d in &defs {
        let torchvet_semantic::reaching::Def::Value(v) = d else {
            return None;
        };
        // `vgg = vgg.cuda()` moves the same model: the other bindings say what it is.
        match module_chain(v).0 {
            Expr::Name(m) if m.id == n.id => continue,
            Expr::Call(c)
                if checker
                    .resolve(&c.func)
                    .is_some_and(|q| torchvet_semantic::builds_pretrained(&q, c)) =>
            {
                if last.is_none_or(|l: TextRange| l.start() < v.start()) {
                    last = Some(v.range());
                }
            }
            _ => return None,
        }
    }
    // The statement that binds it (where `eval()` can follow).
    let value = last?;
    let mut stmt = None;
    helpers::for_each_own_stmt(checker.scope_body(), &mut |st: &Stmt| {
        if let Stmt::Assign(a) = st {
            if a.value.range() == value {
                stmt = Some(a.range);
            }
        }
    });
    // Bound in this scope, and not handed to a call since (`fit(model, loader)` of another
    // file may train it, `evaluate(model)` may switch it).
    let stmt = stmt?;
    (!torchvet_semantic::modes::handed_between(
        checker.scope_body(),
        n.id.as_str(),
        stmt.end(),
        call.start(),
        true,
    ))
    .then_some(stmt)
}

/// The train/eval-sensitive layer (`Dropout`, `BatchNorm`) of the model a name or
/// `self.<attr>` holds here, when the file or the project model knows it. Of several
/// assignments (`if no_bn: net = DCGAN_G_nobn(...) else: net = DCGAN_G(...)`), none may build
/// a model known to be insensitive ([`torchvet_semantic::modes::constructs_mode_free`]).
pub(crate) fn mode_layer_of(checker: &Checker, model: &Expr) -> Option<&'static str> {
    let mut found = None;
    for (value, _) in assigned_values(checker, model) {
        let (base, _) = module_chain(value);
        if let Expr::Call(c) = base {
            match mode_dependent(checker, c, 0) {
                // A VGG whose `classifier`, the only part with Dropout, the file replaced.
                Some(_) if torchvet_semantic::modes::head_replaced_here(checker, model, c) => {
                    return None
                }
                Some(k) => {
                    found.get_or_insert(k);
                }
                None if torchvet_semantic::modes::constructs_mode_free(checker, c) => return None,
                None => {}
            }
        }
    }
    found.or_else(|| project_model_class(checker, model).map(|(k, _)| k))
}

/// Does switching the model a name or `self.<attr>` holds to eval mode change anything?
/// `Some(true)`: it has Dropout / BatchNorm; `Some(false)`: it is built here from torch layers
/// or project classes, none of them train/eval-sensitive, or a project function builds it
/// so ([`torchvet_semantic::project::ProjectModel::value_mode_free`]); `None`: not known.
pub(crate) fn mode_sensitivity(checker: &Checker, model: &Expr) -> Option<bool> {
    if held_in_eval_mode(checker, model) {
        return Some(false);
    }
    if mode_layer_of(checker, model).is_some() {
        return Some(true);
    }
    // Built and returned by a project function from torch layers without Dropout or
    // BatchNorm (`model, loss_fn, opt = get_model()`): the project model knows.
    if let (Some(p), Some(r)) = (checker.project_or_file(), checker.value_resolved(model)) {
        if p.model.value_mode_free(&r) {
            return Some(false);
        }
    }
    // `model = model.cuda()` (under `if use_gpu:`) moves the same object: it says nothing of
    // its class, the other assignments do.
    let own = checker.text(model.range());
    let values: Vec<_> = assigned_values(checker, model)
        .into_iter()
        .filter(|(v, _)| {
            let (base, _) = module_chain(v);
            !(matches!(base, Expr::Name(_) | Expr::Attribute(_))
                && checker.text(base.range()) == own)
        })
        .collect();
    let known = |v: &Expr| {
        let (base, _) = module_chain(v);
        matches!(base, Expr::Call(c) if torchvet_semantic::modes::constructs_mode_free(checker, c)
            || torchvet_semantic::modes::head_replaced_here(checker, model, c))
    };
    (!values.is_empty() && values.iter().all(|(v, _)| known(v))).then_some(false)
}

/// Is `model` an instance of a project class whose train/eval-sensitive layers all sit in
/// sub-modules its constructor puts in eval mode (a pretrained network loaded and frozen in
/// `__init__`, a perceptual-loss feature extractor), in a file that never switches it with
/// `train()`? Then it runs in eval mode already, and `eval()` changes nothing
/// ([`torchvet_semantic::project::ProjectModel::mode_layer_if_never_trained`]).
fn held_in_eval_mode(checker: &Checker, model: &Expr) -> bool {
    use torchvet_semantic::project::ClassRef;
    let held = |c| torchvet_semantic::modes::held_in_eval_by_constructor(checker, c);
    let resolved = match checker.value_resolved(model).and_then(|r| r.class) {
        Some(ClassRef::Project(c)) => held(c),
        Some(ClassRef::External(_)) => false,
        // Built in this file (`model = Head().to(device)` in a script): every binding.
        None => {
            let built: Vec<Option<_>> = assigned_values(checker, model)
                .into_iter()
                .filter_map(|(v, _)| match module_chain(v).0 {
                    Expr::Call(c) => {
                        Some(torchvet_semantic::modes::project_class_built(checker, c))
                    }
                    _ => None,
                })
                .collect();
            !built.is_empty() && built.iter().all(|c| c.is_some_and(held))
        }
    };
    resolved && !switches_to_train(checker, checker.text(model.range()))
}

/// The model's class from the project model, when the file alone does not show where it is
/// built: a parameter (the classes passed at the function's call sites), `self.<attr>` set from
/// an `__init__` parameter, an object imported from another module. Its train/eval-sensitive
/// layer family. `None` when some caller switches the model to eval mode before passing it:
/// any one, not every one, so a helper evaluated from one call site and not from another is
/// left alone (the rule cannot tell which call site is the mistake).
fn project_model_class(checker: &Checker, func: &Expr) -> Option<(&'static str, Created)> {
    use torchvet_semantic::project::ClassRef;
    let p = checker.project()?.clone();
    // A caller put it in eval mode before passing it, or the class was built from a model a
    // caller put in eval mode (`net.eval(); Controller(net)`).
    let evaled = match func {
        Expr::Name(n) => checker
            .param_of_function(n.id.as_str())
            .and_then(|(id, i)| p.model.param_evaled_by_callers(id, i)),
        Expr::Attribute(a) => checker
            .method_class_id()
            .and_then(|c| p.model.attr_evaled_by_constructors(c, a.attr.as_str())),
        _ => None,
    };
    if evaled == Some(true) {
        return None;
    }
    let resolved = checker.value_resolved(func)?;
    match resolved.class.clone() {
        Some(ClassRef::Project(c)) => {
            // Its own layers, or those of a module its constructor stores whole.
            let (k, _) = p.model.value_mode_layer(&resolved)?;
            Some((k, Created::Project(c)))
        }
        Some(ClassRef::External(_)) if p.model.library_head_replaced(&resolved) => None,
        Some(ClassRef::External(q)) => {
            if torchvet_semantic::returns_eval_mode(&q)
                && !switches_to_train(checker, checker.text(func.range()))
            {
                return None;
            }
            // The library model's layers, with those its builder added.
            let (k, _) = p.model.value_mode_layer(&resolved)?;
            Some((k, Created::Library))
        }
        // One of several classes (a registry, a factory), every one with such layers.
        None => {
            let alts = resolved.alternatives.as_deref()?;
            if alts.iter().any(|a| {
                matches!(&a.class, Some(ClassRef::External(q)) if torchvet_semantic::returns_eval_mode(q))
            }) {
                return None;
            }
            let (k, at) = p.model.value_mode_layer(&resolved)?;
            Some((k, at.map_or(Created::Library, Created::Project)))
        }
    }
}

/// Does `call` load a model that comes back in eval mode (`AutoModel.from_pretrained(...)`)
/// that the file never switches back to training mode?
fn loaded_in_eval_mode(checker: &Checker, call: &ExprCall, model: &str) -> bool {
    checker
        .resolve(&call.func)
        .is_some_and(|q| torchvet_semantic::call_returns_eval_mode(&q, call))
        && !switches_to_train(checker, model)
}

/// May the file switch `model` to training mode: `model.train()` (same spelling or same
/// attribute name), a trainer's `train()` (HF `Trainer.train()` calls `model.train()`), or a
/// same-file helper that calls `.train()` on a parameter?
fn switches_to_train(checker: &Checker, model: &str) -> bool {
    let last = model.rsplit('.').next().unwrap_or(model);
    let direct = checker.facts.method_calls_of("train").iter().any(|c| {
        let Event::Train(r) = classify(checker, c) else {
            return false;
        };
        r == model
            || r.rsplit('.').next() == Some(last)
            || (r.to_lowercase().contains("trainer") && handed_to_trainer(checker, model))
    });
    direct
        || checker.module().body.iter().any(|s| match s {
            Stmt::FunctionDef(f) => {
                let s = summary(checker, f);
                s.trains.iter().any(|(r, _)| {
                    s.params
                        .iter()
                        .any(|p| p == r.split('.').next().unwrap_or(r))
                }) && helper_receives(checker, f.name.as_str(), model, None)
            }
            _ => false,
        })
}

/// May the same-file function `name` receive `model`: a call of it passes `model` (or
/// something opaque: `*args`, `**kwargs`), or the function is referred to other than by a
/// call (handed to a framework, stored in a table)? With `at`, only as that parameter (its
/// position and name): `test(loader, simclr_model, head)` does not hand `simclr_model` to the
/// `model` that `def test(loader, encoder, model)` switches to eval mode.
fn helper_receives(checker: &Checker, name: &str, model: &str, at: Option<(usize, &str)>) -> bool {
    use ruff_python_ast::visitor::{self, Visitor};
    struct Uses<'c, 'a> {
        checker: &'c Checker<'a>,
        name: &'c str,
        model: &'c str,
        at: Option<(usize, &'c str)>,
        found: bool,
    }
    impl<'b> Visitor<'b> for Uses<'_, '_> {
        fn visit_expr(&mut self, e: &'b Expr) {
            if self.found {
                return;
            }
            match e {
                Expr::Call(c) if helpers::name_of(&c.func) == Some(self.name) => {
                    let is_model = |a: &Expr| self.checker.text(a.range()) == self.model;
                    let opaque = c
                        .arguments
                        .args
                        .iter()
                        .any(|a| matches!(a, Expr::Starred(_)))
                        || c.arguments.keywords.iter().any(|k| k.arg.is_none());
                    self.found = opaque
                        || match self.at {
                            None => c
                                .arguments
                                .args
                                .iter()
                                .chain(c.arguments.keywords.iter().map(|k| &k.value))
                                .any(is_model),
                            Some((i, param)) => {
                                c.arguments.args.get(i).is_some_and(is_model)
                                    || c.arguments.keywords.iter().any(|k| {
                                        k.arg.as_ref().is_some_and(|n| n.as_str() == param)
                                            && is_model(&k.value)
                                    })
                            }
                        };
                    for a in &*c.arguments.args {
                        self.visit_expr(a);
                    }
                    for k in &*c.arguments.keywords {
                        self.visit_expr(&k.value);
                    }
                }
                Expr::Name(n) if n.id.as_str() == self.name => self.found = true,
                _ => visitor::walk_expr(self, e),
            }
        }
    }
    let mut u = Uses {
        checker,
        name,
        model,
        at,
        found: false,
    };
    u.visit_body(&checker.module().body);
    u.found
}

/// Is `model` handed to a trainer built in the file (`Trainer(model=model, ...)`,
/// `SFTTrainer(model, ...)`), or built by a call that a trainer-like name receives? A
/// trainer's `train()` switches only the model it holds; one built from a configuration alone
/// (`Trainer(args)`) may hold any.
fn handed_to_trainer(checker: &Checker, model: &str) -> bool {
    let mut found = false;
    let mut opaque = false;
    let trainer_calls = checker
        .facts
        .calls
        .iter()
        .map(|(q, cs)| (q.rsplit('.').next().unwrap_or(q), cs))
        .chain(checker.facts.method_calls().iter().map(|(m, cs)| (*m, cs)))
        .filter(|(name, _)| name.to_lowercase().contains("trainer"))
        .flat_map(|(_, cs)| cs.iter());
    for c in trainer_calls {
        let args = c
            .arguments
            .args
            .iter()
            .chain(c.arguments.keywords.iter().map(|k| &k.value));
        for a in args {
            match a {
                Expr::Name(_) | Expr::Attribute(_) if checker.text(a.range()) == model => {
                    found = true;
                }
                Expr::Starred(_) => opaque = true,
                _ => {}
            }
        }
        opaque |= c.arguments.keywords.iter().any(|k| k.arg.is_none());
    }
    found || opaque
}

/// Is `model` put in eval mode anywhere in the file (same spelling, same attribute name, or
/// through a same-file helper that calls `.eval()` on a parameter)?
fn evaluated_somewhere(checker: &Checker, model: &str) -> bool {
    let last = model.rsplit('.').next().unwrap_or(model);
    let mut receivers = checker
        .facts
        .method_calls_of("eval")
        .iter()
        .chain(checker.facts.method_calls_of("train"))
        .filter(|c| matches!(classify(checker, c), Event::Eval(_)))
        .filter_map(|c| match &*c.func {
            Expr::Attribute(a) => Some(checker.text(module_chain(&a.value).0.range())),
            _ => None,
        });
    if receivers.any(|r| r == model || r.rsplit('.').next() == Some(last)) {
        return true;
    }
    // A framework evaluator built on the model runs it in eval mode and leaves it there
    // (`create_supervised_evaluator(model, ...)` of PyTorch-Ignite).
    let handed_to_evaluator = torchvet_semantic::MODEL_EVALUATORS
        .iter()
        .flat_map(|q| checker.facts.calls_of(q))
        .filter_map(|c| {
            c.arguments
                .args
                .first()
                .or_else(|| helpers::keyword(c, "model"))
        })
        .any(|a| checker.text(module_chain(a).0.range()) == model);
    if handed_to_evaluator {
        return true;
    }
    // A helper `def evaluate(model, ...): model.eval()` applied to this model, as the
    // parameter it switches.
    checker.module().body.iter().any(|s| match s {
        Stmt::FunctionDef(f) => {
            let s = summary(checker, f);
            s.evals.iter().any(|(r, _)| {
                let root = r.split('.').next().unwrap_or(r);
                let positional = f.parameters.posonlyargs.len() + f.parameters.args.len();
                f.parameters
                    .iter()
                    .position(|p| p.name().as_str() == root)
                    .is_some_and(|i| {
                        // A keyword-only parameter is passed by name only.
                        let i = if i < positional { i } else { usize::MAX };
                        helper_receives(checker, f.name.as_str(), model, Some((i, root)))
                    })
            })
        }
        _ => false,
    })
}

fn line_start<'a>(checker: &Checker<'a>, at: TextSize) -> Option<(TextSize, &'a str)> {
    let indent = own_line_indent(checker, at)?;
    Some((at - TextSize::of(indent), indent))
}

fn build_fix(checker: &Checker, c: &Candidate, trains: bool) -> Option<RawFix> {
    let nl = crate::fix::newline(checker);
    let model = &c.model;
    if let Some(w) = c.with_stmt {
        let (start, indent) = line_start(checker, w.start())?;
        let mut edits = vec![RawEdit::insert(
            start,
            format!("{indent}{model}.eval(){nl}"),
        )];
        if trains {
            let (at, newline_first) = next_line_start(checker, w.end());
            let lead = if newline_first { nl } else { "" };
            edits.push(RawEdit::insert(
                at,
                format!("{lead}{indent}{model}.train(){nl}"),
            ));
        }
        return Some(RawFix::unsafe_edit(
            format!("Call `{model}.eval()` before the block"),
            edits,
        ));
    }
    if let Some(load) = c.after_load {
        // Right after the weights are loaded.
        let (_, indent) = line_start(checker, load.start())?;
        let (at, newline_first) = next_line_start(checker, load.end());
        let lead = if newline_first { nl } else { "" };
        return Some(RawFix::unsafe_edit(
            format!("Call `{model}.eval()` after loading the weights"),
            vec![RawEdit::insert(
                at,
                format!("{lead}{indent}{model}.eval(){nl}"),
            )],
        ));
    }
    if c.trained.is_some() {
        // Between the training and this top-level statement.
        let (start, indent) = line_start(checker, c.first_stmt?.start())?;
        return Some(RawFix::unsafe_edit(
            format!("Call `{model}.eval()` after the training"),
            vec![RawEdit::insert(
                start,
                format!("{indent}{model}.eval(){nl}"),
            )],
        ));
    }
    if trains {
        return None;
    }
    let first = c.first_stmt?;
    let (start, indent) = line_start(checker, first.start())?;
    Some(RawFix::unsafe_edit(
        format!("Call `{model}.eval()` first"),
        vec![RawEdit::insert(
            start,
            format!("{indent}{model}.eval(){nl}"),
        )],
    ))
}

fn finish(checker: &mut Checker) {
    report_pending(checker);
}

fn report_pending(checker: &mut Checker) {
    let pending = PENDING.with_borrow_mut(std::mem::take);
    if pending.is_empty() {
        return;
    }
    let trains = !checker.facts.method_calls_of("backward").is_empty();
    for c in pending {
        // Names bound to the same object at module level (`loaded_model = model`).
        let bound_to: Vec<String> = torchvet_semantic::modes::module_aliases_of(checker, &c.model)
            .into_iter()
            .map(str::to_string)
            .collect();
        if std::iter::once(&c.model)
            .chain(&c.aliases)
            .chain(&bound_to)
            .any(|m| evaluated_somewhere(checker, m))
        {
            continue;
        }
        let model = &c.model;
        // What training mode does to them, for the families the model has.
        let effect = match torchvet_semantic::mode_layer_effects(c.layers) {
            (true, false) => "Dropout zeroes activations at random",
            (false, true) => "BatchNorm normalises with batch statistics and updates its running stats",
            _ => "Dropout zeroes activations at random, BatchNorm normalises with batch statistics and updates its running stats",
        };
        let message = format!(
            "`{model}` runs {} but is never switched to eval mode: its {} layers still run in training mode ({effect}), so these outputs are noisy and wrong; call `{model}.eval()` first",
            c.context, c.layers
        );
        let fix = build_fix(checker, &c, trains);
        let project = checker.project().cloned();
        let d = checker.report(c.call, message);
        match (&c.created, &project) {
            (Created::Here(r), _) => {
                d.add_related(
                    *r,
                    format!("`{model}` is created here (it has {} layers)", c.layers),
                );
            }
            (Created::Project(class), Some(p)) => {
                if let Some((_, at)) = p.model.mode_layer(*class) {
                    let cs = &p.model.file(at.file).classes[at.index as usize];
                    let range = cs.mode_layer_at.unwrap_or(cs.range);
                    let name = cs.name.clone();
                    d.add_remote(
                        p,
                        at.file,
                        range,
                        format!("`{name}` has {} layers here", c.layers),
                    );
                }
            }
            (Created::Project(_), None) | (Created::Library, _) => {}
        }
        if let Some(trained) = c.trained {
            d.add_related(trained, format!("`{model}` is trained here"));
        }
        if let Some(fix) = fix {
            d.set_fix(fix);
        }
    }
}

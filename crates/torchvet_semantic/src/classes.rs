//! Which classes of a file are `nn.Module`s (or `Dataset`s), directly or through another class
//! of the same file.
use crate::bindings::Scopes;
use crate::project::ProjectFile;
use ruff_python_ast::{Expr, Stmt, StmtClassDef};
use rustc_hash::{FxHashMap, FxHashSet};

/// The classes of one file that derive from `nn.Module` or `Dataset` (through bases in
/// other files of the project when the project model is given), and the file's view of the
/// project model, which every analysis holding this value can query.
#[derive(Debug, Default)]
pub struct ModuleClasses {
    modules: FxHashSet<String>,
    datasets: FxHashSet<String>,
    project: Option<ProjectFile>,
    /// Every class defined in the file (any nesting of `if`/`try`), by name.
    all: FxHashSet<String>,
}

/// Is a qualified name a known `nn.Module` class (torch.nn / torch.ao.nn classes, torchvision
/// model classes, Lightning/HF base classes)? The one test every rule and the class hierarchy
/// use, for base classes and constructor calls alike.
pub fn is_module_base(q: &str) -> bool {
    if let Some(rest) = q
        .strip_prefix("torch.nn.")
        .or_else(|| q.strip_prefix("torch.ao.nn."))
    {
        // `torch.nn.functional.*`, `init.*` and `utils.*` hold functions and helper types
        // (`utils.rnn.PackedSequence`), not modules.
        if rest.starts_with("functional.")
            || rest.starts_with("init.")
            || rest.starts_with("utils.")
        {
            return false;
        }
        let last = rest.rsplit('.').next().unwrap_or(rest);
        let first = last.trim_start_matches('_').chars().next();
        return first.is_some_and(char::is_uppercase)
            && !matches!(
                last,
                "Parameter" | "UninitializedParameter" | "Buffer" | "UninitializedBuffer"
            );
    }
    if let Some(rest) = q.strip_prefix("torchvision.models.") {
        let last = rest.rsplit('.').next().unwrap_or(rest);
        return last.chars().next().is_some_and(char::is_uppercase) && !last.ends_with("Weights");
    }
    matches!(
        q,
        "torch.jit.ScriptModule"
            | "lightning.LightningModule"
            | "lightning.pytorch.LightningModule"
            | "lightning.pytorch.core.LightningModule"
            | "pytorch_lightning.LightningModule"
            | "pytorch_lightning.core.LightningModule"
            | "pytorch_lightning.core.lightning.LightningModule"
            | "transformers.PreTrainedModel"
            | "transformers.modeling_utils.PreTrainedModel"
            | "torch_geometric.nn.MessagePassing"
    ) || is_openmmlab_module_base(q)
}

/// The `nn.Module` base classes of the OpenMMLab frameworks that projects build their models
/// on: mmengine's (and mmcv 1.x's) `BaseModule` / `BaseModel` and their container modules,
/// and the detector / segmentor / recognizer bases of mmdet, mmseg and mmocr. All of them
/// subclass `torch.nn.Module`; the framework's validation and test loops (mmengine's
/// `ValLoop` / `TestLoop`, mmcv's `single_gpu_test`) run a model's `val_step` / `test_step` /
/// `predict` / `forward_test` under `torch.no_grad()`.
fn is_openmmlab_module_base(q: &str) -> bool {
    let package = q.split('.').next().unwrap_or(q);
    let last = q.rsplit('.').next().unwrap_or(q);
    match package {
        "mmengine" => {
            q.starts_with("mmengine.model.")
                && matches!(
                    last,
                    "BaseModule"
                        | "BaseModel"
                        | "BaseDataPreprocessor"
                        | "ImgDataPreprocessor"
                        | "BaseTTAModel"
                        | "ModuleList"
                        | "ModuleDict"
                        | "Sequential"
                )
        }
        "mmcv" => {
            (q.starts_with("mmcv.runner.") || q.starts_with("mmcv.cnn."))
                && matches!(
                    last,
                    "BaseModule" | "ModuleList" | "ModuleDict" | "Sequential"
                )
        }
        "mmdet" | "mmdet3d" => {
            q.starts_with(&format!("{package}.models."))
                && matches!(
                    last,
                    "BaseDetector"
                        | "SingleStageDetector"
                        | "TwoStageDetector"
                        | "Base3DDetector"
                        | "BaseDenseHead"
                        | "BaseRoIHead"
                )
        }
        "mmseg" => {
            q.starts_with("mmseg.models.")
                && matches!(
                    last,
                    "BaseSegmentor" | "EncoderDecoder" | "CascadeEncoderDecoder" | "BaseDecodeHead"
                )
        }
        "mmocr" => {
            q.starts_with("mmocr.models.")
                && matches!(
                    last,
                    "BaseRecognizer"
                        | "EncoderDecoderRecognizer"
                        | "BaseTextDetector"
                        | "SingleStageTextDetector"
                        | "BaseDecoder"
                        | "BaseEncoder"
                )
        }
        _ => false,
    }
}

/// Does calling this qualified name return a model already in evaluation mode? Hugging Face
/// `from_pretrained` (transformers' `PreTrainedModel`, diffusers' `ModelMixin`) calls
/// `model.eval()` before returning, so Dropout is off until the code calls `.train()`.
pub fn returns_eval_mode(q: &str) -> bool {
    (q.starts_with("transformers.") || q.starts_with("diffusers."))
        && q.ends_with(".from_pretrained")
        && !is_non_torch_model(q)
        && !loads_companion(q)
}

/// Does this call return a model already in evaluation mode: [`returns_eval_mode`], or a
/// `torch.hub.load` of an Ultralytics repository (`torch.hub.load("ultralytics/yolov5",
/// "yolov5s")`), whose entry points wrap the model in `AutoShape`, which switches it to eval
/// mode and runs it without autograd, or a model entry point of Hugging Face's hub repository
/// (`"huggingface/pytorch-transformers"`, `"modelForQuestionAnswering"`): `from_pretrained`.
pub fn call_returns_eval_mode(q: &str, call: &ruff_python_ast::ExprCall) -> bool {
    if returns_eval_mode(q) {
        return true;
    }
    if q != "torch.hub.load" {
        return false;
    }
    let repo = crate::helpers::argument(call, "repo_or_dir", 0).and_then(crate::helpers::str_value);
    let entry = crate::helpers::argument(call, "model", 1).and_then(crate::helpers::str_value);
    repo.is_some_and(|r| r.starts_with("ultralytics/"))
        // Hugging Face's hub entry points (`torch.hub.load("huggingface/pytorch-transformers",
        // "modelForQuestionAnswering", name)`) call `from_pretrained`.
        || (repo.is_some_and(|r| r.starts_with("huggingface/"))
            && entry.is_some_and(|e| e.starts_with("model")))
}

/// Framework calls that take over the mode of the model passed to them (first positional
/// argument, or `model=`), switching it to eval mode whenever they run and leaving it there:
/// PyTorch-Ignite's `create_supervised_evaluator(model, ...)` builds an engine whose every
/// iteration calls `model.eval()`.
pub const MODEL_EVALUATORS: &[&str] = &[
    "ignite.engine.create_supervised_evaluator",
    "ignite.engine.engine.create_supervised_evaluator",
    "ignite.engine.create_supervised_tbptt_evaluator",
];

/// Is a Hugging Face loader one of a model's companions rather than a model: a tokenizer,
/// processor, feature extractor, configuration, generation config, pipeline or scheduler
/// (`AutoTokenizer.from_pretrained`, `DiffusionPipeline.from_pretrained`)?
fn loads_companion(q: &str) -> bool {
    let class = q.rsplit('.').nth(1).unwrap_or(q);
    [
        "Tokenizer",
        "Processor",
        "FeatureExtractor",
        "Config",
        "Pipeline",
        "Scheduler",
    ]
    .iter()
    .any(|w| class.contains(w))
}

/// Is a qualified name a model class (or its loader) of another framework that a torch
/// library also ships: the TensorFlow (`TF...`) and Flax (`Flax...`) classes of
/// transformers / diffusers (`transformers.TFAutoModelForQuestionAnswering.from_pretrained`,
/// `transformers.FlaxBertModel`), or anything from TensorFlow / Keras / JAX? Such objects are
/// not `nn.Module`s: they have no train/eval mode of torch's kind and autograd never records
/// their calls.
pub fn is_non_torch_model(q: &str) -> bool {
    if ["tensorflow.", "keras.", "tf_keras.", "jax.", "flax."]
        .iter()
        .any(|p| q.starts_with(p))
    {
        return true;
    }
    if !(q.starts_with("transformers.") || q.starts_with("diffusers.")) {
        return false;
    }
    // The class: the segment before a loader (`from_pretrained`, `from_config`), else the
    // last one.
    let mut segments = q.rsplit('.');
    let last = segments.next().unwrap_or(q);
    let class = if last.starts_with("from_") {
        segments.next().unwrap_or(last)
    } else {
        last
    };
    let framework = |p: &str| {
        class
            .strip_prefix(p)
            .and_then(|r| r.chars().next())
            .is_some_and(|c| c.is_ascii_uppercase())
    };
    framework("TF") || framework("Flax")
}

/// `torch.nn` classes (by name) with neither parameters nor buffers nor submodules:
/// activations, pooling, padding, reshaping, Dropout, parameter-free losses.
const PARAMETER_FREE_LAYERS: &[&str] = &[
    "Identity",
    "ReLU",
    "ReLU6",
    "LeakyReLU",
    "ELU",
    "SELU",
    "CELU",
    "GELU",
    "SiLU",
    "Mish",
    "Sigmoid",
    "Tanh",
    "Softmax",
    "Softmax2d",
    "LogSoftmax",
    "Softmin",
    "Softplus",
    "Softsign",
    "Softshrink",
    "Hardshrink",
    "Tanhshrink",
    "Hardtanh",
    "Hardsigmoid",
    "Hardswish",
    "LogSigmoid",
    "Threshold",
    "GLU",
    "RReLU",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "AlphaDropout",
    "FeatureAlphaDropout",
    "MaxPool1d",
    "MaxPool2d",
    "MaxPool3d",
    "AvgPool1d",
    "AvgPool2d",
    "AvgPool3d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d",
    "LPPool1d",
    "LPPool2d",
    "LPPool3d",
    "FractionalMaxPool2d",
    "FractionalMaxPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
    "Flatten",
    "Unflatten",
    "Upsample",
    "UpsamplingNearest2d",
    "UpsamplingBilinear2d",
    "PixelShuffle",
    "PixelUnshuffle",
    "ChannelShuffle",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "Fold",
    "Unfold",
    "CosineSimilarity",
    "PairwiseDistance",
    "LocalResponseNorm",
    "CrossMapLRN2d",
    "MSELoss",
    "L1Loss",
    "SmoothL1Loss",
    "HuberLoss",
    "KLDivLoss",
    "MarginRankingLoss",
    "HingeEmbeddingLoss",
    "CosineEmbeddingLoss",
    "TripletMarginLoss",
    "TripletMarginWithDistanceLoss",
    "CTCLoss",
    "PoissonNLLLoss",
    "GaussianNLLLoss",
    "SoftMarginLoss",
    "MultiLabelMarginLoss",
];

/// Is `q` (a qualified name outside the project) a loss class: a `torch.nn` loss
/// (`torch.nn.CrossEntropyLoss`, `torch.nn.modules.loss.MSELoss`, the `_Loss` /
/// `_WeightedLoss` bases), or a library's loss (`monai.losses.DiceLoss`,
/// `timm.loss.LabelSmoothingCrossEntropy`, `segmentation_models_pytorch.losses.FocalLoss`):
/// a class of a `loss` / `losses` module, or a `*Loss` class of such a package path. Project
/// classes are asked through [`crate::project::ProjectModel::is_loss_class`].
pub fn is_known_loss_class(q: &str) -> bool {
    let mut parts = q.rsplit('.');
    let last = parts.next().unwrap_or(q);
    if matches!(last, "_Loss" | "_WeightedLoss") {
        return q.starts_with("torch.nn.");
    }
    if !last.starts_with(|c: char| c.is_ascii_uppercase()) {
        return false;
    }
    if let Some(rest) = q
        .strip_prefix("torch.nn.modules.loss.")
        .or_else(|| q.strip_prefix("torch.nn."))
    {
        return !rest.contains('.') && last.ends_with("Loss");
    }
    if q.starts_with("torch.") {
        return false;
    }
    // Another package: a class of its `loss` / `losses` module.
    let in_loss_module = parts.any(|m| matches!(m, "loss" | "losses"));
    in_loss_module && q.contains('.')
}

/// Does calling an instance of the torch loss class `q` built by `call` give a 0-dim tensor?
/// A `torch.nn` loss class (not `AdaptiveLogSoftmaxWithLoss`, which returns a pair) built with
/// its default reduction, `reduction='mean'` / `'sum'`, or `reduce=True`. The legacy
/// `size_average=False` still reduces (by sum). A `**kwargs` splat or a `reduction=` that is
/// not a literal is not known to reduce.
pub fn loss_call_reduces(q: &str, call: &ruff_python_ast::ExprCall) -> bool {
    if !q.starts_with("torch.nn.")
        || !is_known_loss_class(q)
        || crate::helpers::last_segment(q) == "AdaptiveLogSoftmaxWithLoss"
        || crate::helpers::has_kwargs_splat(call)
    {
        return false;
    }
    if let Some(r) = crate::helpers::keyword(call, "reduction") {
        return matches!(crate::helpers::str_value(r), Some("mean" | "sum"));
    }
    if let Some(r) = crate::helpers::keyword(call, "reduce") {
        return crate::helpers::is_truthy(r) == Some(true);
    }
    true
}

/// Loss functions of `torch.nn.functional` besides the `*_loss` ones.
const FUNCTIONAL_LOSSES: &[&str] = &[
    "cross_entropy",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
];

/// Is `q` a loss function of `torch.nn.functional` (`F.cross_entropy`, `F.mse_loss`,
/// `F.kl_div`)?
pub fn is_functional_loss(q: &str) -> bool {
    q.strip_prefix("torch.nn.functional.")
        .is_some_and(|f| f.ends_with("_loss") || FUNCTIONAL_LOSSES.contains(&f))
}

/// Is `name` (a `torch.nn` class name, `MaxPool2d`) a layer with neither parameters nor
/// buffers? One list for the model cards (`torchvet summary`), the leaf test below and the
/// rules that ask whether leaving a layer unregistered loses state.
pub fn is_parameter_free_layer(name: &str) -> bool {
    PARAMETER_FREE_LAYERS.contains(&name)
}

/// `torch.nn` losses (by name) whose only state is an optional class-weight tensor
/// (`weight=`, `pos_weight=`), which they register as a buffer when given.
const WEIGHTED_LOSSES: &[&str] = &[
    "CrossEntropyLoss",
    "NLLLoss",
    "NLLLoss2d",
    "BCELoss",
    "BCEWithLogitsLoss",
    "MultiLabelSoftMarginLoss",
    "MultiMarginLoss",
];

/// Does this construction of a `torch.nn` class (by name, `CrossEntropyLoss`) build a layer
/// with neither parameters nor buffers? The parameter-free layers always do; the losses
/// that take a class-weight tensor do when the call passes none (no positional argument, no
/// `weight=` / `pos_weight=`, no `**kwargs`).
pub fn is_parameter_free_construction(name: &str, call: &ruff_python_ast::ExprCall) -> bool {
    if is_parameter_free_layer(name) {
        return true;
    }
    WEIGHTED_LOSSES.contains(&name)
        && call.arguments.args.is_empty()
        && call.arguments.keywords.iter().all(|k| {
            k.arg
                .as_ref()
                .is_some_and(|a| !matches!(a.as_str(), "weight" | "pos_weight"))
        })
}

/// Is a qualified name a `torch.nn` layer class that has no submodules (a leaf: `Dropout`,
/// `BatchNorm2d`, `Linear`, `Conv2d`, `LSTM`, activations, pooling)? On such a layer,
/// assigning `.training` does exactly what `.train()` / `.eval()` do. Containers
/// (`Sequential`, `ModuleList`), `Transformer*` layers and `MultiheadAttention` (which holds
/// its output projection) are not leaves.
pub fn is_leaf_layer(q: &str) -> bool {
    let Some(rest) = q
        .strip_prefix("torch.nn.")
        .or_else(|| q.strip_prefix("torch.ao.nn."))
    else {
        return false;
    };
    if !is_module_base(q) {
        return false;
    }
    let last = crate::helpers::last_segment(rest);
    let last = last.strip_prefix("Lazy").unwrap_or(last);
    // Leaves with parameters or buffers; the parameter-free layers are leaves too.
    const LEAVES: &[&str] = &[
        "Bilinear",
        "Embedding",
        "EmbeddingBag",
        "GRU",
        "GRUCell",
        "GroupNorm",
        "LSTM",
        "LSTMCell",
        "LayerNorm",
        "Linear",
        "PReLU",
        "RMSNorm",
        "RNN",
        "RNNCell",
        "SyncBatchNorm",
    ];
    // The numbered families: `Dropout2d`, `BatchNorm1d`, `InstanceNorm3d`, `ConvTranspose2d`.
    let family = [
        "Dropout",
        "BatchNorm",
        "InstanceNorm",
        "Conv",
        "ConvTranspose",
    ]
    .iter()
    .any(|f| {
        last.strip_prefix(f).is_some_and(|n| {
            matches!(n, "" | "1d" | "2d" | "3d") && !(n.is_empty() && *f != "Dropout")
        })
    });
    family || LEAVES.contains(&last) || is_parameter_free_layer(last)
}

/// [`mode_layer`] for a call, with what the arguments add: a recurrent layer (`nn.LSTM`,
/// `nn.GRU`, `nn.RNN`) built with a `dropout=` that is not a literal zero and a `num_layers`
/// that is not a literal 1 drops activations between its layers in training mode only
/// (`Dropout`). With one layer (the default) PyTorch applies no dropout at all. A `dropout=`
/// that is zero for some arguments (`0 if num_layers == 1 else 0.2`) does not count. The
/// functional `dropout` counts only when given a `training=` that is not a literal.
pub fn mode_layer_of_call(q: &str, call: &ruff_python_ast::ExprCall) -> Option<&'static str> {
    // `F.dropout(x, p, training=self.training)` follows the module's mode; without the
    // argument (`training=True` by default) or with a literal it drops the same in both
    // modes, and `eval()` changes nothing.
    if let Some(rest) = q.strip_prefix("torch.nn.functional.") {
        if rest.contains("dropout") {
            let training = call
                .arguments
                .find_keyword("training")
                .map(|k| &k.value)
                .or_else(|| call.arguments.args.get(2));
            return training
                .is_some_and(|t| !matches!(t, Expr::BooleanLiteral(_)))
                .then_some("dropout");
        }
    }
    if let Some(k) = mode_layer(q) {
        return Some(k);
    }
    // A Hugging Face ViT or DeiT loaded with a dropout rate that is not a literal zero (the
    // keyword overrides the configuration's `0.0`).
    if hf_vision_transformer(q) {
        return call
            .arguments
            .keywords
            .iter()
            .filter(|k| {
                k.arg
                    .as_ref()
                    .is_some_and(|a| a.as_str().ends_with("dropout_prob"))
            })
            .any(|k| !crate::helpers::is_literal_zero(&k.value))
            .then_some("Dropout");
    }
    // A torchvision vision transformer built with a dropout rate that is not a literal zero.
    if is_torchvision_model_builder(q) && crate::helpers::last_segment(q).starts_with("vit_") {
        return ["dropout", "attention_dropout"]
            .iter()
            .filter_map(|k| call.arguments.find_keyword(k))
            .any(|k| !crate::helpers::is_literal_zero(&k.value))
            .then_some("Dropout");
    }
    if !matches!(q, "torch.nn.LSTM" | "torch.nn.GRU" | "torch.nn.RNN") {
        return None;
    }
    use crate::helpers::{is_literal_zero as zero, literal, Literal};
    let one = |e: &Expr| matches!(literal(e), Some(Literal::Int(1)));
    // `nn.LSTM(input_size, hidden_size, num_layers, bias, batch_first, dropout)`.
    let arg = |name: &str, pos: usize| {
        call.arguments
            .find_keyword(name)
            .map(|k| &k.value)
            .or_else(|| call.arguments.args.get(pos))
    };
    let dropout = arg("dropout", 5)?;
    let layers = arg("num_layers", 2)?;
    // `dropout=0 if num_layers == 1 else p`: zero for some arguments, the guard authors write
    // because PyTorch warns about dropout on a single layer. Built for some arguments only,
    // it does not count by itself (as `nn.Dropout(p) if p > 0 else None`).
    let zero_for_some = match dropout {
        Expr::If(i) => zero(&i.body) || zero(&i.orelse),
        _ => false,
    };
    (!zero(dropout) && !zero_for_some && !one(layers)).then_some("recurrent dropout")
}

/// The train/eval-sensitive layer families a class or model may hold, in the order messages
/// name them: `Dropout` (modules, also every `nn.Transformer*` layer), `BatchNorm`, a
/// recurrent layer's `dropout=` (`recurrent dropout`), the functional `dropout` following the
/// module's mode, and `BatchNorm/Dropout` for a pretrained model whose layers are not known.
const MODE_FAMILIES: [&str; 5] = [
    "Dropout",
    "BatchNorm",
    "recurrent dropout",
    "dropout",
    "BatchNorm/Dropout",
];

/// The family set a family name ([`mode_layer`], or a name [`join_mode_layers`] made) stands
/// for, one bit per [`MODE_FAMILIES`] entry.
fn mode_family_bits(name: &str) -> u8 {
    if let Some(i) = MODE_FAMILIES.iter().position(|f| *f == name) {
        return 1 << i;
    }
    mode_family_names()
        .iter()
        .position(|n| n == name)
        .map_or(0, |i| i as u8)
}

/// Every family set's name, indexed by its bits: one family alone is its own name, several
/// are listed (`Dropout and BatchNorm`); a pretrained model's unknown `BatchNorm/Dropout`
/// stands for both until both are known.
fn mode_family_names() -> &'static [String] {
    static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        (0u8..1 << MODE_FAMILIES.len())
            .map(|bits| {
                let both_known = bits & 0b11 == 0b11;
                let unknown = bits & 0b10000 != 0 && !both_known;
                let words: Vec<&str> = MODE_FAMILIES
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| {
                        bits & (1 << i) != 0 && !(*i == 4 && both_known) && !(*i < 2 && unknown)
                    })
                    .map(|(_, f)| *f)
                    .collect();
                match words.as_slice() {
                    [] => String::new(),
                    [one] => (*one).to_string(),
                    [init @ .., last] => format!("{} and {last}", init.join(", ")),
                }
            })
            .collect()
    })
}

/// Two train/eval-sensitive layer families together (a model with `Dropout` in one sub-module
/// and `BatchNorm` in another): the name of the set both stand for.
pub fn join_mode_layers(a: &'static str, b: &'static str) -> &'static str {
    let bits = mode_family_bits(a) | mode_family_bits(b);
    if bits == mode_family_bits(a) {
        return a;
    }
    mode_family_names()[bits as usize].as_str()
}

/// What switching to eval mode changes for a family set ([`mode_layer`],
/// [`join_mode_layers`]): `(dropout, batchnorm)`, whether some layer drops activations in
/// training mode only and whether some layer normalises with batch statistics. A pretrained
/// model whose layers are not known counts as both.
pub fn mode_layer_effects(name: &str) -> (bool, bool) {
    let bits = mode_family_bits(name);
    let unknown = bits & 0b10000 != 0 || bits == 0;
    (
        bits & 0b01101 != 0 || unknown,
        bits & 0b00010 != 0 || unknown,
    )
}

/// Does calling this qualified name build a layer (or model) that behaves differently in
/// training and evaluation mode? The layer family: `Dropout` (also every `nn.Transformer*`
/// layer, which has dropout), `BatchNorm`, `dropout` for the functional form, and
/// `BatchNorm/Dropout` for pretrained torchvision / timm / Hugging Face / hub models.
pub fn mode_layer(q: &str) -> Option<&'static str> {
    if let Some(rest) = q.strip_prefix("torch.nn.functional.") {
        return rest.starts_with("dropout").then_some("dropout");
    }
    if let Some(rest) = q.strip_prefix("torch.nn.") {
        let last = crate::helpers::last_segment(rest);
        if last.contains("Dropout") || last.starts_with("Transformer") {
            return Some("Dropout");
        }
        if last.contains("BatchNorm") || last == "SyncBatchNorm" {
            return Some("BatchNorm");
        }
        return None;
    }
    // A torchvision detection model (`fasterrcnn_resnet50_fpn`, `maskrcnn_resnet50_fpn`) needs
    // targets in training mode, where it returns its losses, and returns detections in
    // evaluation mode: a call in training mode computes a validation loss on purpose (or
    // fails), and its pretrained backbone's BatchNorm is frozen (`FrozenBatchNorm2d`).
    if q.starts_with("torchvision.models.detection.") {
        return None;
    }
    if is_torchvision_model_builder(q) {
        return torchvision_family(crate::helpers::last_segment(q));
    }
    // A hub entry point may build anything; its family is not known.
    if q == "torch.hub.load" {
        return Some("BatchNorm/Dropout");
    }
    (q == "timm.create_model"
        || (q.starts_with("transformers.")
            && q.ends_with(".from_pretrained")
            && !is_non_torch_model(q)
            && !hf_vision_transformer(q)))
    .then_some("Dropout")
}

/// A Hugging Face ViT or DeiT model loaded with `from_pretrained`
/// (`ViTForImageClassification.from_pretrained(...)`): their configurations set
/// `hidden_dropout_prob` and `attention_probs_dropout_prob` to `0.0` and they normalise with
/// LayerNorm, so they behave the same in both modes unless the call sets a dropout rate
/// ([`mode_layer_of_call`]).
fn hf_vision_transformer(q: &str) -> bool {
    q.strip_prefix("transformers.")
        .and_then(|rest| rest.strip_suffix(".from_pretrained"))
        .map(crate::helpers::last_segment)
        .is_some_and(|class| {
            (class.starts_with("ViT")
                && !class.starts_with("ViTMAE")
                && !class.starts_with("ViTHybrid"))
                || class.starts_with("DeiT")
        })
}

/// The attribute of a library model that holds every one of its train/eval-sensitive layers,
/// by the builder's qualified name: plain VGG, AlexNet and SqueezeNet keep their Dropout in
/// `classifier` only, so a model whose `classifier` is replaced by layers without any
/// (`model.classifier = nn.Linear(n, 2)`) behaves the same in both modes.
pub fn library_mode_head(q: &str) -> Option<&'static str> {
    if !is_torchvision_model_builder(q) {
        return None;
    }
    let b = crate::helpers::last_segment(q);
    ((b.starts_with("vgg") && !b.ends_with("_bn"))
        || b.starts_with("alexnet")
        || b.starts_with("squeezenet"))
    .then_some("classifier")
}

/// Does `body` (its own statements) give the library model bound to `name` a new `head` built
/// from torch layers without train/eval-sensitive ones (`model.classifier = nn.Linear(n, 2)`,
/// `nn.Sequential(nn.Linear(...), nn.ReLU(), nn.Linear(...))`)? `resolve` qualifies names.
pub fn head_replaced_mode_free(
    body: &[Stmt],
    name: &str,
    head: &str,
    resolve: &dyn Fn(&Expr) -> Option<String>,
) -> bool {
    let mut found = false;
    crate::helpers::for_each_own_stmt(body, &mut |st| {
        let Stmt::Assign(a) = st else { return };
        let is_head = |t: &Expr| {
            matches!(t, Expr::Attribute(x)
                if x.attr.as_str() == head && crate::helpers::name_of(&x.value) == Some(name))
        };
        if a.targets.iter().any(is_head) && torch_layers_mode_free(&a.value, resolve, 0) {
            found = true;
        }
    });
    found
}

/// Does `v` build torch layers only, none of them train/eval-sensitive: a `torch.nn` layer,
/// or a container of such calls?
fn torch_layers_mode_free(v: &Expr, resolve: &dyn Fn(&Expr) -> Option<String>, depth: u8) -> bool {
    let Expr::Call(c) = v else { return false };
    let Some(q) = resolve(&c.func) else {
        return false;
    };
    if depth > 3 || !q.starts_with("torch.nn.") || mode_layer_of_call(&q, c).is_some() {
        return false;
    }
    if matches!(
        q.as_str(),
        "torch.nn.Sequential" | "torch.nn.ModuleList" | "torch.nn.ModuleDict"
    ) {
        return c
            .arguments
            .args
            .iter()
            .chain(c.arguments.keywords.iter().map(|k| &k.value))
            .all(|a| match a {
                Expr::List(l) => l
                    .elts
                    .iter()
                    .all(|e| torch_layers_mode_free(e, resolve, depth + 1)),
                _ => torch_layers_mode_free(a, resolve, depth + 1),
            });
    }
    is_module_base(&q)
}

/// The train/eval-sensitive layers of a torchvision classification architecture, by its
/// builder's name: the ResNet, ResNeXt, Wide ResNet, ShuffleNet, RegNet and DenseNet families
/// have BatchNorm and no active Dropout, plain VGG, AlexNet and SqueezeNet have Dropout and
/// no BatchNorm, Swin and ConvNeXt drop residual branches at random in training mode
/// (stochastic depth); the others have both. A vision transformer (`vit_b_16`) builds its
/// Dropout layers with `dropout=0.0` and `attention_dropout=0.0` by default, so it behaves
/// the same in both modes unless a call sets them ([`mode_layer_of_call`]).
fn torchvision_family(builder: &str) -> Option<&'static str> {
    let starts = |p: &[&str]| p.iter().any(|w| builder.starts_with(w));
    Some(
        if starts(&[
            "resnet",
            "resnext",
            "wide_resnet",
            "shufflenet",
            "regnet",
            "densenet",
        ]) {
            "BatchNorm"
        } else if builder.starts_with("vit_") {
            return None;
        } else if (builder.starts_with("vgg") && !builder.ends_with("_bn"))
            || starts(&["alexnet", "squeezenet", "swin_", "convnext"])
        {
            "Dropout"
        } else {
            "BatchNorm/Dropout"
        },
    )
}

/// Does calling this qualified name build an `nn.Module`: a module class ([`is_module_base`]:
/// torch.nn / torch.ao.nn, torchvision model classes, Lightning/HF bases), a torchvision model
/// builder ([`is_torchvision_model_builder`]), `timm.create_model`, or the `from_pretrained` of
/// a Hugging Face model class (`AutoModelForCausalLM.from_pretrained`; not a TensorFlow/Flax
/// one, not a tokenizer or config)? The one answer for "is a model built here" that rules use
/// for constructor calls; the value kinds ([`crate::kinds::qualified_call_kind`]) also count
/// what only wraps or compiles a module (`torch.compile`, `torch.hub.load`).
pub fn constructs_module(q: &str) -> bool {
    if is_module_base(q) || is_torchvision_model_builder(q) || q == "timm.create_model" {
        return true;
    }
    let Some(class) = q
        .strip_prefix("transformers.")
        .and_then(|rest| rest.strip_suffix(".from_pretrained"))
    else {
        return false;
    };
    let class = crate::helpers::last_segment(class);
    (class.contains("Model") || class.contains("For")) && !is_non_torch_model(q)
}

/// Is a qualified name a `torchvision.models` function that builds a model (`resnet50`,
/// `detection.fasterrcnn_resnet50_fpn`, `get_model`)? Not a weights enum or anything reached
/// through one (`ResNet50_Weights.DEFAULT.transforms()` builds a preprocessing transform),
/// not a private name and not a registry helper (`get_weight`, `list_models`, ...).
pub fn is_torchvision_model_builder(q: &str) -> bool {
    let Some(rest) = q.strip_prefix("torchvision.models.") else {
        return false;
    };
    if rest
        .split('.')
        .any(|s| s.ends_with("Weights") || s.starts_with('_'))
    {
        return false;
    }
    let last = crate::helpers::last_segment(rest);
    last.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && !matches!(
            last,
            "get_weight"
                | "get_model_weights"
                | "get_model_builder"
                | "list_models"
                | "get_graph_node_names"
        )
}

/// Does `call` (of qualified name `q`) build a library model with pretrained weights: a
/// torchvision builder given `pretrained=True` or a `weights=` other than `None` (also as its
/// first positional argument, as torchvision allows), or `timm.create_model(...,
/// pretrained=True)`? Such a model comes back in training mode, like any new module.
pub fn builds_pretrained(q: &str, call: &ruff_python_ast::ExprCall) -> bool {
    let truthy = |name: &str| {
        call.arguments
            .find_keyword(name)
            .is_some_and(|k| crate::helpers::is_truthy(&k.value) == Some(true))
    };
    if q == "timm.create_model" {
        return truthy("pretrained");
    }
    if !is_torchvision_model_builder(q) {
        return false;
    }
    if truthy("pretrained") {
        return true;
    }
    let weights = call
        .arguments
        .find_keyword("weights")
        .map(|k| &k.value)
        .or_else(|| call.arguments.args.first());
    weights.is_some_and(|w| match w {
        ruff_python_ast::Expr::NoneLiteral(_) => false,
        ruff_python_ast::Expr::BooleanLiteral(b) => b.value,
        ruff_python_ast::Expr::StringLiteral(_) | ruff_python_ast::Expr::Attribute(_) => true,
        _ => false,
    })
}

/// Is a qualified name a known map-style or iterable `Dataset` base class?
pub fn is_dataset_base(q: &str) -> bool {
    matches!(
        q,
        "torch.utils.data.Dataset"
            | "torch.utils.data.IterableDataset"
            | "torch.utils.data.dataset.Dataset"
            | "torch.utils.data.dataset.IterableDataset"
            | "torchvision.datasets.VisionDataset"
            | "torchvision.datasets.vision.VisionDataset"
    )
}

fn collect_classes<'a>(body: &'a [Stmt], out: &mut Vec<&'a StmtClassDef>) {
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

impl ModuleClasses {
    /// Compute from the module body, with the module scope already on `scopes`.
    pub fn compute(body: &[Stmt], scopes: &Scopes) -> Self {
        Self::compute_in(body, scopes, None)
    }

    /// [`ModuleClasses::compute`] with the project model: classes whose bases are defined in
    /// other files of the project count too.
    pub fn compute_in(body: &[Stmt], scopes: &Scopes, project: Option<ProjectFile>) -> Self {
        let mut classes = Vec::new();
        collect_classes(body, &mut classes);
        let mut out = Self {
            project,
            ..Self::default()
        };
        if classes.is_empty() {
            return out;
        }
        if let Some(p) = &out.project {
            for c in &classes {
                if let Some(id) = p.class_at(c.range.start()) {
                    if p.model.is_module(id) {
                        out.modules.insert(c.name.to_string());
                    }
                    if p.model.is_dataset(id) {
                        out.datasets.insert(c.name.to_string());
                    }
                }
            }
        }
        out.all = classes.iter().map(|c| c.name.to_string()).collect();
        let mut bases: FxHashMap<&str, Vec<&Expr>> = FxHashMap::default();
        for c in &classes {
            let list: Vec<&Expr> = c
                .arguments
                .as_ref()
                .map(|a| a.args.iter().collect())
                .unwrap_or_default();
            bases.entry(c.name.as_str()).or_default().extend(list);
        }
        // Fixed point over same-file inheritance (bounded by the number of classes).
        for _ in 0..=classes.len() {
            let mut changed = false;
            for (name, bs) in &bases {
                for b in bs {
                    let (is_mod, is_ds) = match b {
                        Expr::Name(n)
                            if bases.contains_key(n.id.as_str())
                                && scopes.lookup(n.id.as_str()).is_none() =>
                        {
                            (
                                out.modules.contains(n.id.as_str()),
                                out.datasets.contains(n.id.as_str()),
                            )
                        }
                        _ => match scopes.resolve(b) {
                            Some(q) => (out.is_module_q(&q), out.is_dataset_q(&q)),
                            None => (false, false),
                        },
                    };
                    if is_mod && out.modules.insert((*name).to_string()) {
                        changed = true;
                    }
                    if is_ds && out.datasets.insert((*name).to_string()) {
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        out
    }

    /// Is this class (by name, same file) an `nn.Module`?
    pub fn is_module(&self, name: &str) -> bool {
        self.modules.contains(name)
    }

    /// Is this class (by name, same file) a `Dataset`?
    pub fn is_dataset(&self, name: &str) -> bool {
        self.datasets.contains(name)
    }

    /// Is a class of this name defined in the file (Module, Dataset or any other)?
    pub fn is_class(&self, name: &str) -> bool {
        self.all.contains(name)
    }

    /// Any module classes at all?
    pub fn has_modules(&self) -> bool {
        !self.modules.is_empty()
    }

    /// Is a qualified name (as the file's scopes resolve it) an `nn.Module` class: a torch /
    /// library base ([`is_module_base`]) or a project class deriving from one?
    pub fn is_module_q(&self, q: &str) -> bool {
        is_module_base(q) || self.project.as_ref().is_some_and(|p| p.is_module_class(q))
    }

    /// Is a qualified name a `Dataset` class (library or project)?
    pub fn is_dataset_q(&self, q: &str) -> bool {
        is_dataset_base(q) || self.project.as_ref().is_some_and(|p| p.is_dataset_class(q))
    }

    /// The file's view of the project model, when there is one.
    pub fn project(&self) -> Option<&ProjectFile> {
        self.project.as_ref()
    }
}

/// Is `self.<attr>` of this class a lookup table that picks one entry, which the class then
/// registers under another attribute? Every use of `self.<attr>` in the class's methods
/// (besides its one assignment) reads a single entry (`self.<attr>[key]`), and such an entry
/// reaches `self.<other> = ...` directly or through a method of the class that returns it:
///
/// ```python
/// self.resnet_dict = {"resnet18": models.resnet18(), "resnet50": models.resnet50()}
/// self.backbone = self._get_basemodel(base_model)  # returns self.resnet_dict[name]
/// ```
///
/// The entries left out are unused, so leaving them unregistered loses nothing.
pub fn attr_is_selection_table(class: &StmtClassDef, attr: &str) -> bool {
    use ruff_python_ast::visitor::{self, Visitor};

    /// `self.<attr>[...]`.
    fn is_entry(expr: &Expr, attr: &str) -> bool {
        matches!(expr, Expr::Subscript(s) if crate::helpers::self_attribute(&s.value) == Some(attr))
    }

    struct Uses<'n> {
        attr: &'n str,
        /// Uses of `self.<attr>` that are not single-entry reads.
        other: usize,
        /// Assignments to `self.<attr>`.
        assigned: usize,
    }
    impl<'x> Visitor<'x> for Uses<'_> {
        fn visit_stmt(&mut self, stmt: &'x Stmt) {
            if let Stmt::Assign(a) = stmt {
                for t in &a.targets {
                    if crate::helpers::self_attribute(t) == Some(self.attr) {
                        self.assigned += 1;
                    } else {
                        self.visit_expr(t);
                    }
                }
                self.visit_expr(&a.value);
                return;
            }
            visitor::walk_stmt(self, stmt);
        }
        fn visit_expr(&mut self, expr: &'x Expr) {
            if is_entry(expr, self.attr) {
                if let Expr::Subscript(s) = expr {
                    // The key may mention the table too (rare); read it.
                    self.visit_expr(&s.slice);
                }
                return;
            }
            if crate::helpers::self_attribute(expr) == Some(self.attr) {
                self.other += 1;
                return;
            }
            visitor::walk_expr(self, expr);
        }
    }

    let methods: Vec<&ruff_python_ast::StmtFunctionDef> =
        crate::helpers::function_defs(&class.body).collect();
    let mut uses = Uses {
        attr,
        other: 0,
        assigned: 0,
    };
    for m in &methods {
        uses.visit_body(&m.body);
    }
    if uses.other > 0 || uses.assigned != 1 {
        return false;
    }
    // Methods that return an entry: `return self.<attr>[k]`, or a local bound to one.
    let returns_entry = |f: &ruff_python_ast::StmtFunctionDef| {
        let mut locals: FxHashSet<&str> = FxHashSet::default();
        let mut found = false;
        crate::helpers::for_each_own_stmt(&f.body, &mut |s| match s {
            Stmt::Assign(a) if is_entry(&a.value, attr) => {
                for t in &a.targets {
                    if let Some(n) = crate::helpers::name_of(t) {
                        locals.insert(n);
                    }
                }
            }
            Stmt::Return(r) => {
                if let Some(v) = &r.value {
                    if is_entry(v, attr)
                        || crate::helpers::name_of(v).is_some_and(|n| locals.contains(n))
                    {
                        found = true;
                    }
                }
            }
            _ => {}
        });
        found
    };
    let pickers: FxHashSet<&str> = methods
        .iter()
        .filter(|f| returns_entry(f))
        .map(|f| f.name.as_str())
        .collect();
    // An entry (or a picker's result) registered as another attribute.
    let mut registered = false;
    for m in &methods {
        crate::helpers::for_each_own_stmt(&m.body, &mut |s| {
            let Stmt::Assign(a) = s else { return };
            let to_other_attr = a
                .targets
                .iter()
                .any(|t| crate::helpers::self_attribute(t).is_some_and(|n| n != attr));
            if !to_other_attr {
                return;
            }
            let picked = is_entry(&a.value, attr)
                || matches!(&*a.value, Expr::Call(c)
                    if matches!(&*c.func, Expr::Attribute(f)
                        if crate::helpers::name_of(&f.value) == Some("self")
                            && pickers.contains(f.attr.as_str())));
            registered |= picked;
        });
    }
    registered
}

/// Does running `stmts` (in a method of `class`) call a base initialiser — mention
/// `super(...)` or call some `X.__init__(...)` — directly or through the class's own methods
/// (`self.make_weight(...)` whose body calls `super().__init__(n, d, _weight=w)`), following
/// at most three such calls?
pub fn reaches_base_init(class: &StmtClassDef, stmts: &[Stmt]) -> bool {
    use ruff_python_ast::visitor::{self, Visitor};

    struct Finder<'c> {
        class: &'c StmtClassDef,
        depth: u32,
        seen: Vec<&'c str>,
        found: bool,
    }
    impl<'x> Visitor<'x> for Finder<'_> {
        fn visit_expr(&mut self, expr: &'x Expr) {
            if self.found {
                return;
            }
            match expr {
                Expr::Attribute(a) if a.attr.as_str() == "__init__" => self.found = true,
                Expr::Name(n) if n.id.as_str() == "super" => self.found = true,
                Expr::Call(call) => {
                    if let Some(name) = crate::helpers::self_attribute(&call.func) {
                        self.follow(name);
                    }
                    if !self.found {
                        visitor::walk_expr(self, expr);
                    }
                }
                _ => visitor::walk_expr(self, expr),
            }
        }
    }
    impl Finder<'_> {
        fn follow(&mut self, name: &str) {
            const MAX_CALLS: u32 = 3;
            if self.depth >= MAX_CALLS || name == "__init__" {
                return;
            }
            let class = self.class;
            let Some(method) =
                crate::helpers::function_defs(&class.body).find(|f| f.name.as_str() == name)
            else {
                return;
            };
            if self.seen.contains(&method.name.as_str()) {
                return;
            }
            self.seen.push(method.name.as_str());
            self.depth += 1;
            self.visit_body(&method.body);
            self.depth -= 1;
        }
    }

    let mut f = Finder {
        class,
        depth: 0,
        seen: Vec::new(),
        found: false,
    };
    f.visit_body(stmts);
    f.found
}

/// Is `name` a method every `nn.Module` has (`train`, `eval`, `to`, `parameters`,
/// `state_dict`, ...) or a common tensor/optimizer method name? Such calls are never a
/// project class's own method.
pub fn is_module_api(name: &str) -> bool {
    matches!(
        name,
        "train"
            | "eval"
            | "forward"
            | "to"
            | "cuda"
            | "cpu"
            | "half"
            | "float"
            | "double"
            | "bfloat16"
            | "type"
            | "apply"
            | "parameters"
            | "named_parameters"
            | "buffers"
            | "named_buffers"
            | "children"
            | "named_children"
            | "modules"
            | "named_modules"
            | "state_dict"
            | "load_state_dict"
            | "zero_grad"
            | "requires_grad_"
            | "register_buffer"
            | "register_parameter"
            | "register_module"
            | "add_module"
            | "get_submodule"
            | "get_parameter"
            | "get_buffer"
            | "register_forward_hook"
            | "register_forward_pre_hook"
            | "register_full_backward_hook"
            | "share_memory"
            | "extra_repr"
            | "step"
            | "backward"
            | "item"
            | "detach"
            | "append"
            | "update"
            | "get"
            | "items"
            | "keys"
            | "values"
            | "format"
            | "join"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_layer_families_join_into_one_name() {
        assert_eq!(join_mode_layers("Dropout", "Dropout"), "Dropout");
        assert_eq!(
            join_mode_layers("BatchNorm", "Dropout"),
            "Dropout and BatchNorm"
        );
        let three = join_mode_layers(
            join_mode_layers("Dropout", "BatchNorm"),
            "recurrent dropout",
        );
        assert_eq!(three, "Dropout, BatchNorm and recurrent dropout");
        // Joining a name already made changes nothing.
        assert_eq!(join_mode_layers(three, "BatchNorm"), three);
        // A pretrained model's unknown families stand for both (the name keeps no more).
        assert_eq!(
            join_mode_layers("BatchNorm/Dropout", "Dropout"),
            "BatchNorm/Dropout"
        );
        assert_eq!(
            join_mode_layers(
                "Dropout",
                join_mode_layers("BatchNorm", "BatchNorm/Dropout")
            ),
            "BatchNorm/Dropout"
        );
        assert_eq!(mode_layer_effects("Dropout"), (true, false));
        assert_eq!(mode_layer_effects("recurrent dropout"), (true, false));
        assert_eq!(mode_layer_effects("BatchNorm"), (false, true));
        assert_eq!(mode_layer_effects("Dropout and BatchNorm"), (true, true));
        assert_eq!(mode_layer_effects("BatchNorm/Dropout"), (true, true));
    }

    #[test]
    fn leaf_layers_have_no_submodules() {
        for q in [
            "torch.nn.Dropout",
            "torch.nn.Dropout2d",
            "torch.nn.BatchNorm1d",
            "torch.nn.modules.batchnorm.BatchNorm2d",
            "torch.nn.SyncBatchNorm",
            "torch.nn.LazyLinear",
            "torch.nn.ConvTranspose2d",
            "torch.nn.LSTM",
        ] {
            assert!(is_leaf_layer(q), "{q}");
        }
        for q in [
            "torch.nn.Sequential",
            "torch.nn.ModuleList",
            "torch.nn.TransformerEncoderLayer",
            "torch.nn.MultiheadAttention",
            "torch.nn.Conv",
            "torchvision.models.resnet18",
            "torch.nn.functional.dropout",
        ] {
            assert!(!is_leaf_layer(q), "{q}");
        }
    }

    #[test]
    fn hugging_face_from_pretrained_returns_eval_mode() {
        assert!(returns_eval_mode(
            "transformers.GPT2LMHeadModel.from_pretrained"
        ));
        assert!(returns_eval_mode("diffusers.UNet2DModel.from_pretrained"));
        assert!(!returns_eval_mode(
            "efficientnet_pytorch.EfficientNet.from_pretrained"
        ));
        assert!(!returns_eval_mode("transformers.AutoTokenizer.from_config"));
        assert!(!returns_eval_mode(
            "transformers.AutoTokenizer.from_pretrained"
        ));
        assert!(!returns_eval_mode(
            "diffusers.StableDiffusionPipeline.from_pretrained"
        ));
        // TensorFlow and Flax models of the same libraries are not torch modules.
        assert!(!returns_eval_mode(
            "transformers.TFAutoModelForQuestionAnswering.from_pretrained"
        ));
        assert!(is_non_torch_model(
            "transformers.FlaxBertModel.from_pretrained"
        ));
        assert!(is_non_torch_model("tensorflow.keras.Model"));
        assert!(!is_non_torch_model(
            "transformers.TrOCRProcessor.from_pretrained"
        ));
        assert!(!is_non_torch_model(
            "transformers.AutoModel.from_pretrained"
        ));
        assert!(mode_layer("transformers.TFAutoModel.from_pretrained").is_none());
        // Hugging Face ViT / DeiT: no dropout by configuration, LayerNorm only.
        assert!(mode_layer("transformers.ViTForImageClassification.from_pretrained").is_none());
        assert!(mode_layer("transformers.DeiTModel.from_pretrained").is_none());
        assert_eq!(
            mode_layer("transformers.BertForSequenceClassification.from_pretrained"),
            Some("Dropout")
        );
    }
}

/// Does calling `q` make a registered parameter or buffer when the result is assigned to a
/// module attribute (`nn.Parameter(t)`, `nn.Buffer(t)`)?
pub fn is_registering_wrapper(q: &str) -> bool {
    matches!(
        q,
        "torch.nn.Parameter"
            | "torch.nn.parameter.Parameter"
            | "torch.nn.Buffer"
            | "torch.nn.parameter.Buffer"
    )
}

/// Is `q` a data-parallel wrapper (`nn.DataParallel`, `DistributedDataParallel`) whose
/// `forward` runs the wrapped module and whose `train()`/`eval()` reach it, and whose
/// `state_dict()` keys carry the `module.` prefix?
pub fn is_data_parallel_wrapper(q: &str) -> bool {
    matches!(
        q,
        "torch.nn.DataParallel"
            | "torch.nn.parallel.DataParallel"
            | "torch.nn.parallel.data_parallel.DataParallel"
            | "torch.nn.parallel.DistributedDataParallel"
            | "torch.nn.parallel.distributed.DistributedDataParallel"
    )
}

/// What `__init__` finally makes of `self.<attr>` after one assignment to it.
#[derive(Debug, Clone, Copy)]
pub enum AttrRebinding<'a> {
    /// It becomes a registered parameter or buffer: `self.mask = nn.Parameter(self.mask,
    /// requires_grad=False)`, `nn.Buffer(...)`, or `self.register_buffer("mask", ...)` /
    /// `register_parameter`.
    Registered,
    /// It is assigned this value.
    Value(&'a Expr),
}

/// The last re-binding of `self.<attr>` in `init` that runs after the statement spanning `at`
/// on every path that completes it (see [`crate::helpers::stmts_after_on_every_path`]: a
/// later statement of the same suite or of an enclosing one, not another arm of a branch),
/// if any. `resolve` qualifies callee names.
pub fn attr_rebound_after<'a>(
    init: &'a ruff_python_ast::StmtFunctionDef,
    attr: &str,
    at: ruff_text_size::TextRange,
    resolve: &dyn Fn(&Expr) -> Option<String>,
) -> Option<AttrRebinding<'a>> {
    use crate::helpers;
    let mut last = None;
    for s in helpers::stmts_after_on_every_path(&init.body, at) {
        match s {
            Stmt::Assign(a)
                if a.targets
                    .iter()
                    .any(|t| helpers::self_attribute(t) == Some(attr)) =>
            {
                let registered = matches!(&*a.value, Expr::Call(c)
                    if resolve(&c.func).is_some_and(|q| is_registering_wrapper(&q)));
                last = Some(if registered {
                    AttrRebinding::Registered
                } else {
                    AttrRebinding::Value(&a.value)
                });
            }
            Stmt::Expr(e) => {
                if let Expr::Call(c) = &*e.value {
                    if let Some(("register_buffer" | "register_parameter", recv)) =
                        helpers::method_call(c)
                    {
                        if helpers::name_of(recv) == Some("self")
                            && helpers::argument(c, "name", 0).and_then(helpers::str_value)
                                == Some(attr)
                        {
                            last = Some(AttrRebinding::Registered);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    last
}

//! The standard `torch.nn` layers: their constructor signatures and the parameters and buffers
//! PyTorch registers for them (names, shapes, order).

use crate::eval::Value;
use crate::{Dim, Layer, TensorSpec};

/// Arguments of a call, evaluated.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallArgs {
    pub pos: Vec<Value>,
    pub kw: Vec<(String, Value)>,
    /// A `*args` / `**kwargs` whose contents are unknown was passed.
    pub opaque: bool,
}

/// Positional-or-keyword binding against `names`; `None` for arguments not passed.
struct Bound<'a> {
    vals: Vec<Option<&'a Value>>,
    opaque: bool,
}

fn bind<'a>(args: &'a CallArgs, names: &[&str]) -> Bound<'a> {
    let mut vals: Vec<Option<&Value>> = vec![None; names.len()];
    for (i, v) in args.pos.iter().enumerate() {
        if i < vals.len() {
            vals[i] = Some(v);
        }
    }
    for (k, v) in &args.kw {
        if let Some(i) = names.iter().position(|n| n == k) {
            vals[i] = Some(v);
        }
    }
    Bound {
        vals,
        opaque: args.opaque,
    }
}

impl Bound<'_> {
    fn get(&self, i: usize) -> Option<&Value> {
        self.vals.get(i).copied().flatten()
    }

    /// A non-negative int argument with a default (`None` default: required).
    fn dim(&self, i: usize, default: Option<u64>) -> Dim {
        match self.get(i) {
            Some(Value::Int(n)) if *n >= 0 => Some(*n as u64),
            Some(Value::Bool(b)) => Some(u64::from(*b)),
            Some(_) => None,
            None if self.opaque => None,
            None => default,
        }
    }

    fn flag(&self, i: usize, default: bool) -> Option<bool> {
        match self.get(i) {
            Some(Value::Bool(b)) => Some(*b),
            Some(Value::Int(n)) => Some(*n != 0),
            Some(Value::None) => Some(false),
            Some(_) => None,
            None if self.opaque => None,
            None => Some(default),
        }
    }

    fn is_none_or_missing(&self, i: usize) -> Option<bool> {
        match self.get(i) {
            None => (!self.opaque).then_some(true),
            Some(Value::None) => Some(true),
            Some(Value::Unknown) => None,
            Some(_) => Some(false),
        }
    }

    /// An int or a tuple of ints, expanded to `n` dims (kernel sizes).
    fn dims(&self, i: usize, n: usize) -> Vec<Dim> {
        match self.get(i) {
            Some(Value::Int(k)) if *k >= 0 => vec![Some(*k as u64); n],
            Some(Value::Tuple(items)) | Some(Value::List(items)) if items.len() == n => items
                .iter()
                .map(|v| match v {
                    Value::Int(k) if *k >= 0 => Some(*k as u64),
                    _ => None,
                })
                .collect(),
            _ => vec![None; n],
        }
    }

    /// A shape argument: an int or a sequence of ints (`LayerNorm(normalized_shape)`).
    fn shape(&self, i: usize) -> Option<Vec<Dim>> {
        match self.get(i) {
            Some(Value::Int(k)) if *k >= 0 => Some(vec![Some(*k as u64)]),
            Some(Value::Tuple(items)) | Some(Value::List(items)) => Some(
                items
                    .iter()
                    .map(|v| match v {
                        Value::Int(k) if *k >= 0 => Some(*k as u64),
                        _ => None,
                    })
                    .collect(),
            ),
            _ => None,
        }
    }
}

fn div(a: Dim, b: Dim) -> Dim {
    match (a, b) {
        (Some(a), Some(b)) if b > 0 => Some(a / b),
        _ => None,
    }
}

fn mul(a: Dim, b: Dim) -> Dim {
    a.zip(b).and_then(|(a, b)| a.checked_mul(b))
}

/// Add a tensor when `flag` is true; unknown flag gives an unknown shape.
fn opt_param(layer: &mut Layer, flag: Option<bool>, name: &str, shape: Vec<Dim>) {
    match flag {
        Some(true) => layer.tensors.push(TensorSpec::param(name, shape)),
        Some(false) => {}
        None => layer.tensors.push(TensorSpec {
            shape: None,
            ..TensorSpec::param(name, shape)
        }),
    }
}

fn opt_buffer(layer: &mut Layer, flag: Option<bool>, name: &str, shape: Vec<Dim>) {
    match flag {
        Some(true) => layer.tensors.push(TensorSpec::buffer(name, shape)),
        Some(false) => {}
        None => layer.tensors.push(TensorSpec {
            shape: None,
            ..TensorSpec::buffer(name, shape)
        }),
    }
}

fn child(mut layer: Layer, name: &str) -> Layer {
    layer.name = name.to_string();
    layer
}

/// Losses that register a `weight` buffer (only when a weight tensor is given).
const WEIGHTED_LOSSES: &[(&str, usize)] = &[
    ("CrossEntropyLoss", 0),
    ("NLLLoss", 0),
    ("BCELoss", 0),
    ("BCEWithLogitsLoss", 0),
    ("MultiLabelSoftMarginLoss", 0),
    ("MultiMarginLoss", 2),
    ("MultiLabelMarginLoss", usize::MAX),
];

/// Is `name` a `torch.nn` class this catalog knows (with or without parameters)?
pub(crate) fn is_known(name: &str) -> bool {
    torchvet_semantic::is_parameter_free_layer(name)
        || WEIGHTED_LOSSES.iter().any(|(n, _)| *n == name)
        || build(name, &CallArgs::default()).is_some()
}

fn tensor_shape(v: Option<&Value>) -> Option<Vec<Dim>> {
    match v {
        Some(Value::Tensor(s)) | Some(Value::Param(s)) => s.clone(),
        _ => None,
    }
}

/// Build a `torch.nn.<name>` layer from its arguments. `None` when the layer is not in the
/// catalog (containers are built by the evaluator).
pub(crate) fn build(name: &str, args: &CallArgs) -> Option<Layer> {
    let mut l = Layer::new(name);
    if torchvet_semantic::is_parameter_free_layer(name) {
        return Some(l);
    }
    if let Some((_, weight_pos)) = WEIGHTED_LOSSES.iter().find(|(n, _)| *n == name) {
        let weight = args
            .kw
            .iter()
            .find(|(k, _)| k == "weight")
            .map(|(_, v)| v)
            .or_else(|| args.pos.get(*weight_pos));
        if let Some(w) = weight.filter(|w| !matches!(w, Value::None)) {
            l.tensors.push(TensorSpec {
                shape: tensor_shape(Some(w)),
                ..TensorSpec::buffer("weight", vec![])
            });
        }
        if name == "BCEWithLogitsLoss" {
            let pw = args
                .kw
                .iter()
                .find(|(k, _)| k == "pos_weight")
                .map(|(_, v)| v)
                .or_else(|| args.pos.get(4));
            if let Some(w) = pw.filter(|w| !matches!(w, Value::None)) {
                l.tensors.push(TensorSpec {
                    shape: tensor_shape(Some(w)),
                    ..TensorSpec::buffer("pos_weight", vec![])
                });
            }
        }
        return Some(l);
    }
    match name {
        "Linear" => {
            let b = bind(args, &["in_features", "out_features", "bias"]);
            let (i, o) = (b.dim(0, None), b.dim(1, None));
            l.tensors.push(TensorSpec::param("weight", vec![o, i]));
            opt_param(&mut l, b.flag(2, true), "bias", vec![o]);
        }
        "Bilinear" => {
            let b = bind(
                args,
                &["in1_features", "in2_features", "out_features", "bias"],
            );
            let (i1, i2, o) = (b.dim(0, None), b.dim(1, None), b.dim(2, None));
            l.tensors.push(TensorSpec::param("weight", vec![o, i1, i2]));
            opt_param(&mut l, b.flag(3, true), "bias", vec![o]);
        }
        "Conv1d" | "Conv2d" | "Conv3d" => {
            let n = conv_rank(name);
            let b = bind(
                args,
                &[
                    "in_channels",
                    "out_channels",
                    "kernel_size",
                    "stride",
                    "padding",
                    "dilation",
                    "groups",
                    "bias",
                ],
            );
            let (i, o, g) = (b.dim(0, None), b.dim(1, None), b.dim(6, Some(1)));
            let mut shape = vec![o, div(i, g)];
            shape.extend(b.dims(2, n));
            l.tensors.push(TensorSpec::param("weight", shape));
            opt_param(&mut l, b.flag(7, true), "bias", vec![o]);
        }
        "ConvTranspose1d" | "ConvTranspose2d" | "ConvTranspose3d" => {
            let n = conv_rank(name);
            let b = bind(
                args,
                &[
                    "in_channels",
                    "out_channels",
                    "kernel_size",
                    "stride",
                    "padding",
                    "output_padding",
                    "groups",
                    "bias",
                    "dilation",
                ],
            );
            let (i, o, g) = (b.dim(0, None), b.dim(1, None), b.dim(6, Some(1)));
            let mut shape = vec![i, div(o, g)];
            shape.extend(b.dims(2, n));
            l.tensors.push(TensorSpec::param("weight", shape));
            opt_param(&mut l, b.flag(7, true), "bias", vec![o]);
        }
        "BatchNorm1d" | "BatchNorm2d" | "BatchNorm3d" | "SyncBatchNorm" | "InstanceNorm1d"
        | "InstanceNorm2d" | "InstanceNorm3d" => {
            let instance = name.starts_with("Instance");
            let b = bind(
                args,
                &[
                    "num_features",
                    "eps",
                    "momentum",
                    "affine",
                    "track_running_stats",
                ],
            );
            let n = b.dim(0, None);
            let affine = b.flag(3, !instance);
            let track = b.flag(4, !instance);
            opt_param(&mut l, affine, "weight", vec![n]);
            opt_param(&mut l, affine, "bias", vec![n]);
            opt_buffer(&mut l, track, "running_mean", vec![n]);
            opt_buffer(&mut l, track, "running_var", vec![n]);
            opt_buffer(&mut l, track, "num_batches_tracked", vec![]);
        }
        "LayerNorm" => {
            let b = bind(
                args,
                &["normalized_shape", "eps", "elementwise_affine", "bias"],
            );
            let shape = b.shape(0);
            let affine = b.flag(2, true);
            let bias = match (affine, b.flag(3, true)) {
                (Some(false), _) => Some(false),
                (Some(true), x) => x,
                (None, _) => None,
            };
            push_shaped(&mut l, affine, "weight", &shape);
            push_shaped(&mut l, bias, "bias", &shape);
        }
        "RMSNorm" => {
            let b = bind(args, &["normalized_shape", "eps", "elementwise_affine"]);
            let shape = b.shape(0);
            push_shaped(&mut l, b.flag(2, true), "weight", &shape);
        }
        "GroupNorm" => {
            let b = bind(args, &["num_groups", "num_channels", "eps", "affine"]);
            let c = b.dim(1, None);
            let affine = b.flag(3, true);
            opt_param(&mut l, affine, "weight", vec![c]);
            opt_param(&mut l, affine, "bias", vec![c]);
        }
        "Embedding" | "EmbeddingBag" => {
            let names: &[&str] = if name == "Embedding" {
                &[
                    "num_embeddings",
                    "embedding_dim",
                    "padding_idx",
                    "max_norm",
                    "norm_type",
                    "scale_grad_by_freq",
                    "sparse",
                    "_weight",
                ]
            } else {
                &[
                    "num_embeddings",
                    "embedding_dim",
                    "max_norm",
                    "norm_type",
                    "scale_grad_by_freq",
                    "mode",
                    "sparse",
                    "_weight",
                ]
            };
            let b = bind(args, names);
            let shape = match b.get(7) {
                Some(Value::None) | None => vec![b.dim(0, None), b.dim(1, None)],
                w => tensor_shape(w).unwrap_or_else(|| vec![b.dim(0, None), b.dim(1, None)]),
            };
            l.tensors.push(TensorSpec::param("weight", shape));
        }
        "PReLU" => {
            let b = bind(args, &["num_parameters", "init"]);
            l.tensors
                .push(TensorSpec::param("weight", vec![b.dim(0, Some(1))]));
        }
        "RNN" | "LSTM" | "GRU" => rnn(&mut l, name, args),
        "RNNCell" | "LSTMCell" | "GRUCell" => {
            let b = bind(args, &["input_size", "hidden_size", "bias"]);
            let gates = match name {
                "LSTMCell" => 4,
                "GRUCell" => 3,
                _ => 1,
            };
            let (i, h) = (b.dim(0, None), b.dim(1, None));
            let g = mul(h, Some(gates));
            l.tensors.push(TensorSpec::param("weight_ih", vec![g, i]));
            l.tensors.push(TensorSpec::param("weight_hh", vec![g, h]));
            let bias = b.flag(2, true);
            opt_param(&mut l, bias, "bias_ih", vec![g]);
            opt_param(&mut l, bias, "bias_hh", vec![g]);
        }
        "MultiheadAttention" => {
            let b = bind(
                args,
                &[
                    "embed_dim",
                    "num_heads",
                    "dropout",
                    "bias",
                    "add_bias_kv",
                    "add_zero_attn",
                    "kdim",
                    "vdim",
                    "batch_first",
                ],
            );
            let e = b.dim(0, None);
            let kdim = if b.is_none_or_missing(6) == Some(true) {
                e
            } else {
                b.dim(6, None)
            };
            let vdim = if b.is_none_or_missing(7) == Some(true) {
                e
            } else {
                b.dim(7, None)
            };
            mha(&mut l, e, kdim, vdim, b.flag(3, true), b.flag(4, false));
        }
        "TransformerEncoderLayer" | "TransformerDecoderLayer" => {
            let b = bind(
                args,
                &[
                    "d_model",
                    "nhead",
                    "dim_feedforward",
                    "dropout",
                    "activation",
                    "layer_norm_eps",
                    "batch_first",
                    "norm_first",
                    "bias",
                ],
            );
            let activation = match b.get(4) {
                Some(Value::Module(m)) => Some((**m).clone()),
                _ => None,
            };
            transformer_layer(
                &mut l,
                name == "TransformerDecoderLayer",
                b.dim(0, None),
                b.dim(2, Some(2048)),
                b.flag(8, true),
                activation,
            );
        }
        "TransformerEncoder" | "TransformerDecoder" => {
            let b = bind(args, &["layer", "num_layers", "norm"]);
            let layer = match b.get(0) {
                Some(Value::Module(m)) => Some((**m).clone()),
                _ => None,
            };
            let norm = match b.get(2) {
                Some(Value::Module(m)) => Some((**m).clone()),
                _ => None,
            };
            let unknown_norm = matches!(b.get(2), Some(Value::Unknown));
            stack(&mut l, layer, b.dim(1, None), norm);
            if unknown_norm {
                l.note = Some("? `norm` is only known at run time".to_string());
            }
        }
        "Transformer" => {
            let b = bind(
                args,
                &[
                    "d_model",
                    "nhead",
                    "num_encoder_layers",
                    "num_decoder_layers",
                    "dim_feedforward",
                    "dropout",
                    "activation",
                    "custom_encoder",
                    "custom_decoder",
                    "layer_norm_eps",
                    "batch_first",
                    "norm_first",
                    "bias",
                ],
            );
            let d = b.dim(0, Some(512));
            let ff = b.dim(4, Some(2048));
            let bias = b.flag(12, true);
            let activation = match b.get(6) {
                Some(Value::Module(m)) => Some((**m).clone()),
                _ => None,
            };
            for (decoder, count, custom) in [
                (false, b.dim(2, Some(6)), 7usize),
                (true, b.dim(3, Some(6)), 8),
            ] {
                let part = if decoder { "decoder" } else { "encoder" };
                if let Some(Value::Module(m)) = b.get(custom) {
                    l.children.push(child((**m).clone(), part));
                    continue;
                }
                let mut layer = Layer::new(if decoder {
                    "TransformerDecoderLayer"
                } else {
                    "TransformerEncoderLayer"
                });
                layer.args = format!("{}, dim_feedforward={}", show(d), show(ff));
                transformer_layer(&mut layer, decoder, d, ff, bias, activation.clone());
                let norm = layer_norm(d, bias);
                let mut s = Layer::new(if decoder {
                    "TransformerDecoder"
                } else {
                    "TransformerEncoder"
                });
                s.args = format!("num_layers={}", show(count));
                stack(&mut s, Some(layer), count, Some(norm));
                l.children.push(child(s, part));
            }
        }
        _ => return None,
    }
    Some(l)
}

fn conv_rank(name: &str) -> usize {
    if name.ends_with("1d") {
        1
    } else if name.ends_with("3d") {
        3
    } else {
        2
    }
}

fn push_shaped(l: &mut Layer, flag: Option<bool>, name: &str, shape: &Option<Vec<Dim>>) {
    match (flag, shape) {
        (Some(false), _) => {}
        (Some(true), Some(s)) => l.tensors.push(TensorSpec::param(name, s.clone())),
        _ => l.tensors.push(TensorSpec {
            shape: None,
            ..TensorSpec::param(name, vec![])
        }),
    }
}

fn rnn(l: &mut Layer, name: &str, args: &CallArgs) {
    // RNN takes `nonlinearity` as its 4th positional argument; LSTM/GRU do not.
    let names: &[&str] = if name == "RNN" {
        &[
            "input_size",
            "hidden_size",
            "num_layers",
            "nonlinearity",
            "bias",
            "batch_first",
            "dropout",
            "bidirectional",
            "proj_size",
        ]
    } else {
        &[
            "input_size",
            "hidden_size",
            "num_layers",
            "bias",
            "batch_first",
            "dropout",
            "bidirectional",
            "proj_size",
        ]
    };
    let off = usize::from(name == "RNN");
    let b = bind(args, names);
    let input = b.dim(0, None);
    let hidden = b.dim(1, None);
    let layers = b.dim(2, Some(1));
    let bias = b.flag(3 + off, true);
    let bidir = b.flag(6 + off, false);
    let proj = if name == "LSTM" {
        b.dim(7, Some(0))
    } else {
        Some(0)
    };
    let gates = match name {
        "LSTM" => 4,
        "GRU" => 3,
        _ => 1,
    };
    let (Some(n_layers), Some(bidir), Some(bias)) = (layers, bidir, bias) else {
        l.note = Some("? num_layers, bias or bidirectional is only known at run time".to_string());
        return;
    };
    if n_layers > 4096 {
        l.note = Some("? num_layers too large to expand".to_string());
        return;
    }
    let dirs = if bidir { 2 } else { 1 };
    let gate = mul(hidden, Some(gates));
    let real_hidden = match proj {
        Some(0) => hidden,
        p => p,
    };
    for layer in 0..n_layers {
        for dir in 0..dirs {
            let suffix = if dir == 1 { "_reverse" } else { "" };
            let layer_in = if layer == 0 {
                input
            } else {
                mul(real_hidden, Some(dirs))
            };
            l.tensors.push(TensorSpec::param(
                &format!("weight_ih_l{layer}{suffix}"),
                vec![gate, layer_in],
            ));
            l.tensors.push(TensorSpec::param(
                &format!("weight_hh_l{layer}{suffix}"),
                vec![gate, real_hidden],
            ));
            if bias {
                l.tensors.push(TensorSpec::param(
                    &format!("bias_ih_l{layer}{suffix}"),
                    vec![gate],
                ));
                l.tensors.push(TensorSpec::param(
                    &format!("bias_hh_l{layer}{suffix}"),
                    vec![gate],
                ));
            }
            match proj {
                Some(0) => {}
                p => l.tensors.push(TensorSpec::param(
                    &format!("weight_hr_l{layer}{suffix}"),
                    vec![p, hidden],
                )),
            }
        }
    }
}

fn mha(l: &mut Layer, e: Dim, kdim: Dim, vdim: Dim, bias: Option<bool>, add_bias_kv: Option<bool>) {
    let same = match (e, kdim, vdim) {
        (Some(e), Some(k), Some(v)) => Some(k == e && v == e),
        _ if kdim == e && vdim == e => Some(true),
        _ => None,
    };
    match same {
        Some(true) => l.tensors.push(TensorSpec::param(
            "in_proj_weight",
            vec![mul(e, Some(3)), e],
        )),
        Some(false) => {
            l.tensors
                .push(TensorSpec::param("q_proj_weight", vec![e, e]));
            l.tensors
                .push(TensorSpec::param("k_proj_weight", vec![e, kdim]));
            l.tensors
                .push(TensorSpec::param("v_proj_weight", vec![e, vdim]));
        }
        None => {
            l.note = Some("? kdim/vdim are only known at run time".to_string());
        }
    }
    opt_param(l, bias, "in_proj_bias", vec![mul(e, Some(3))]);
    opt_param(l, add_bias_kv, "bias_k", vec![Some(1), Some(1), e]);
    opt_param(l, add_bias_kv, "bias_v", vec![Some(1), Some(1), e]);
    let mut out = Layer::new("NonDynamicallyQuantizableLinear");
    out.args = format!("{}, {}", show(e), show(e));
    out.tensors.push(TensorSpec::param("weight", vec![e, e]));
    opt_param(&mut out, bias, "bias", vec![e]);
    l.children.push(child(out, "out_proj"));
}

fn show(d: Dim) -> String {
    d.map_or("?".to_string(), |d| d.to_string())
}

fn linear(i: Dim, o: Dim, bias: Option<bool>) -> Layer {
    let mut l = Layer::new("Linear");
    l.args = format!(
        "{}, {}{}",
        show(i),
        show(o),
        if bias == Some(false) {
            ", bias=False"
        } else {
            ""
        }
    );
    l.tensors.push(TensorSpec::param("weight", vec![o, i]));
    opt_param(&mut l, bias, "bias", vec![o]);
    l
}

fn layer_norm(d: Dim, bias: Option<bool>) -> Layer {
    let mut l = Layer::new("LayerNorm");
    l.args = show(d);
    l.tensors.push(TensorSpec::param("weight", vec![d]));
    opt_param(&mut l, bias, "bias", vec![d]);
    l
}

fn transformer_layer(
    l: &mut Layer,
    decoder: bool,
    d: Dim,
    ff: Dim,
    bias: Option<bool>,
    activation: Option<Layer>,
) {
    let mut attn = Layer::new("MultiheadAttention");
    attn.args = format!("embed_dim={}", show(d));
    mha(&mut attn, d, d, d, bias, Some(false));
    l.children.push(child(attn.clone(), "self_attn"));
    if decoder {
        l.children.push(child(attn, "multihead_attn"));
    }
    l.children.push(child(linear(d, ff, bias), "linear1"));
    l.children.push(child(Layer::new("Dropout"), "dropout"));
    l.children.push(child(linear(ff, d, bias), "linear2"));
    let norms = if decoder { 3 } else { 2 };
    for i in 1..=norms {
        l.children
            .push(child(layer_norm(d, bias), &format!("norm{i}")));
    }
    for i in 1..=norms {
        l.children
            .push(child(Layer::new("Dropout"), &format!("dropout{i}")));
    }
    if let Some(a) = activation {
        l.children.push(child(a, "activation"));
    }
}

/// `TransformerEncoder`/`Decoder`: `layers` holds `count` deep copies, then the optional norm.
fn stack(l: &mut Layer, layer: Option<Layer>, count: Dim, norm: Option<Layer>) {
    let mut list = Layer::new("ModuleList");
    list.args = format!("{} copies", show(count));
    match (layer, count) {
        (Some(layer), Some(n)) if n <= 4096 => {
            for i in 0..n {
                list.children.push(child(layer.clone(), &i.to_string()));
            }
        }
        (Some(layer), _) => {
            list.children.push(child(layer, "*"));
            list.note = Some("? repeated a run-time number of times".to_string());
        }
        (None, _) => {
            list.note = Some("? the repeated layer is only known at run time".to_string());
        }
    }
    l.children.push(child(list, "layers"));
    if let Some(norm) = norm {
        l.children.push(child(norm, "norm"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(pos: Vec<i64>) -> CallArgs {
        CallArgs {
            pos: pos.into_iter().map(Value::Int).collect(),
            kw: vec![],
            opaque: false,
        }
    }

    fn count(name: &str, a: CallArgs) -> Option<u64> {
        let mut l = build(name, &a)?;
        l.finalize();
        l.params
    }

    #[test]
    fn documented_counts() {
        assert_eq!(count("Linear", args(vec![784, 64])), Some(50_240));
        assert_eq!(count("Conv2d", args(vec![3, 64, 3])), Some(1_792));
        assert_eq!(count("BatchNorm2d", args(vec![64])), Some(128));
        assert_eq!(count("Embedding", args(vec![1000, 16])), Some(16_000));
        assert_eq!(
            count("LSTM", args(vec![10, 20])),
            Some(4 * 20 * (10 + 20) + 8 * 20)
        );
        assert_eq!(count("ReLU", args(vec![])), Some(0));
        assert_eq!(
            count(
                "Linear",
                CallArgs {
                    pos: vec![Value::Unknown, Value::Int(4)],
                    ..Default::default()
                }
            ),
            None
        );
    }

    #[test]
    fn batchnorm_buffers() {
        let l = build("BatchNorm1d", &args(vec![8])).unwrap();
        let names: Vec<&str> = l.tensors.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "weight",
                "bias",
                "running_mean",
                "running_var",
                "num_batches_tracked"
            ]
        );
        assert!(is_known("Dropout"));
        assert!(!is_known("LazyLinear"));
    }
}

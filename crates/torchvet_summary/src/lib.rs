//! `torchvet summary FILE[::Class]`: a static model card for every `nn.Module` subclass in a
//! Python file: the layer tree built in `__init__`, parameter counts computed as PyTorch counts
//! them wherever constructor arguments are literal (or follow from literal defaults), `?` where
//! they depend on run-time values, and the expected `state_dict` keys and shapes.
//!
//! The source is parsed with ruff's parser and `__init__` is interpreted symbolically over a tiny
//! value domain (numbers, strings, lists, modules, tensor shapes); nothing is ever executed.

pub mod cli;
mod eval;
mod layers;
mod render;

pub use render::render_text;

use serde::Serialize;

/// A tensor dimension: `None` when it depends on run-time values.
pub type Dim = Option<u64>;

/// Whether a state entry is a parameter or a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TensorKind {
    /// An `nn.Parameter` (counted in the parameter total).
    Parameter,
    /// A registered buffer (in `state_dict` unless non-persistent; not counted as a parameter).
    Buffer,
}

/// A parameter or buffer owned directly by one module.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TensorSpec {
    /// Attribute name (`weight`, `running_mean`, `weight_ih_l0_reverse`).
    pub name: String,
    /// Parameter or buffer.
    pub kind: TensorKind,
    /// The shape; `None` when even the rank is unknown.
    pub shape: Option<Vec<Dim>>,
    /// False for buffers registered with `persistent=False` (absent from `state_dict`).
    pub persistent: bool,
}

impl TensorSpec {
    pub(crate) fn param(name: &str, shape: Vec<Dim>) -> Self {
        TensorSpec {
            name: name.to_string(),
            kind: TensorKind::Parameter,
            shape: Some(shape),
            persistent: true,
        }
    }

    pub(crate) fn buffer(name: &str, shape: Vec<Dim>) -> Self {
        TensorSpec {
            name: name.to_string(),
            kind: TensorKind::Buffer,
            shape: Some(shape),
            persistent: true,
        }
    }

    /// Number of elements, when every dimension is known.
    pub fn numel(&self) -> Option<u64> {
        let shape = self.shape.as_ref()?;
        shape
            .iter()
            .try_fold(1u64, |acc, d| d.and_then(|d| acc.checked_mul(d)))
    }
}

/// One module in the layer tree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Layer {
    /// Attribute name in the parent (`fc1`, `0`, `encoder`); the class name for the root.
    pub name: String,
    /// Type name (`Linear`, `Sequential`, a project class name).
    pub type_name: String,
    /// Constructor arguments as written (whitespace collapsed, shortened).
    pub args: String,
    /// 1-based source line of the constructor call (0 when synthesised, e.g. inside a
    /// `TransformerEncoderLayer`).
    pub line: u32,
    /// Parameters of this module and all its children; `None` (`?`) when any depends on
    /// run-time values.
    pub params: Option<u64>,
    /// The part of `params` that is known.
    pub known_params: u64,
    /// Parameters and buffers owned directly by this module.
    pub tensors: Vec<TensorSpec>,
    /// Child modules, in registration order.
    pub children: Vec<Layer>,
    /// Why a count is unknown, or that the layer exists only under a run-time condition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Layer {
    pub(crate) fn new(type_name: &str) -> Self {
        Layer {
            name: String::new(),
            type_name: type_name.to_string(),
            args: String::new(),
            line: 0,
            params: Some(0),
            known_params: 0,
            tensors: Vec::new(),
            children: Vec::new(),
            note: None,
        }
    }

    /// Recompute `params` / `known_params` from tensors and children.
    pub(crate) fn finalize(&mut self) {
        let mut known = 0u64;
        let mut exact = self.note.as_deref().is_none_or(|n| !n.starts_with('?'));
        for t in &self.tensors {
            if t.kind == TensorKind::Parameter {
                match t.numel() {
                    Some(n) => known = known.saturating_add(n),
                    None => exact = false,
                }
            }
        }
        for c in &mut self.children {
            c.finalize();
            known = known.saturating_add(c.known_params);
            if c.params.is_none() {
                exact = false;
            }
        }
        self.known_params = known;
        self.params = exact.then_some(known);
    }
}

/// The static model card of one `nn.Module` subclass.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelCard {
    /// Class name.
    pub name: String,
    /// 1-based line of the `class` statement.
    pub line: u32,
    /// Base classes as written.
    pub bases: Vec<String>,
    /// `__init__` parameters and the values used (`hidden=128`, `in_dim=?`).
    pub init_args: Vec<(String, String)>,
    /// Total parameters; `None` when some count depends on run-time values.
    pub total_params: Option<u64>,
    /// The known part of the total.
    pub known_params: u64,
    /// Number of layers whose count is unknown.
    pub unknown_layers: usize,
    /// The module tree (the class itself is the root).
    pub root: Layer,
    /// Expected `state_dict` entries in PyTorch's order.
    pub state_dict: Vec<StateEntry>,
    /// Things the analysis could not follow.
    pub notes: Vec<String>,
}

/// One expected `state_dict` entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StateEntry {
    /// Dotted key (`encoder.layers.0.self_attn.in_proj_weight`; `*` for an element repeated a
    /// run-time number of times).
    pub key: String,
    /// Shape, with unknown dimensions as `null`.
    pub shape: Option<Vec<Dim>>,
    /// Parameter or buffer.
    pub kind: TensorKind,
}

/// Errors of [`summarize`].
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    /// The source does not parse.
    #[error("syntax error at line {line}: {message}")]
    Parse {
        /// 1-based line.
        line: u32,
        /// Parser message.
        message: String,
    },
    /// `FILE::Class` named a class that is not in the file.
    #[error("no class `{0}` in the file")]
    NoSuchClass(String),
    /// `FILE::Class` named a class that is not an `nn.Module` subclass.
    #[error("class `{0}` is not an nn.Module subclass")]
    NotAModule(String),
}

/// Model cards for every `nn.Module` subclass in `source` (or only `class`).
pub fn summarize(source: &str, class: Option<&str>) -> Result<Vec<ModelCard>, SummaryError> {
    eval::summarize(source, class)
}

/// The expected `state_dict` of a card: keys in PyTorch's order with shapes (`None` when any
/// dimension is unknown).
pub fn expected_state_dict(card: &ModelCard) -> Vec<(String, Option<Vec<u64>>)> {
    card.state_dict
        .iter()
        .map(|e| {
            let shape = e
                .shape
                .as_ref()
                .and_then(|s| s.iter().copied().collect::<Option<Vec<u64>>>());
            (e.key.clone(), shape)
        })
        .collect()
}

pub(crate) fn collect_state(layer: &Layer, prefix: &str, out: &mut Vec<StateEntry>) {
    for t in &layer.tensors {
        if t.persistent {
            out.push(StateEntry {
                key: format!("{prefix}{}", t.name),
                shape: t.shape.clone(),
                kind: t.kind,
            });
        }
    }
    for c in &layer.children {
        collect_state(c, &format!("{prefix}{}.", c.name), out);
    }
}

pub(crate) fn count_unknown(layer: &Layer) -> usize {
    let own_unknown = layer
        .tensors
        .iter()
        .any(|t| t.kind == TensorKind::Parameter && t.numel().is_none())
        || layer.note.as_deref().is_some_and(|n| n.starts_with('?'));
    usize::from(own_unknown) + layer.children.iter().map(count_unknown).sum::<usize>()
}

//! DataLoader argument access shared by the `data-loading` rules.
use ruff_python_ast::{Expr, ExprCall};
use torchvet_semantic::helpers;

/// Which loader class a call constructs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Loader {
    /// `torch.utils.data.DataLoader`: positional arguments follow its signature.
    Torch,
    /// A subclass with its own signature (webdataset, PyG): keyword arguments only.
    Subclass,
}

/// The loader a qualified callee name constructs.
pub(crate) fn loader_kind(q: &str) -> Option<Loader> {
    match q {
        "torch.utils.data.DataLoader" | "torch.utils.data.dataloader.DataLoader" => {
            Some(Loader::Torch)
        }
        "webdataset.WebLoader"
        | "torch_geometric.loader.DataLoader"
        | "torch_geometric.data.DataLoader"
        | "torch_geometric.loader.NeighborLoader"
        | "torch_geometric.loader.LinkNeighborLoader" => Some(Loader::Subclass),
        _ => None,
    }
}

/// Positions of `torch.utils.data.DataLoader`'s leading parameters.
fn position(name: &str) -> Option<usize> {
    Some(match name {
        "dataset" => 0,
        "batch_size" => 1,
        "shuffle" => 2,
        "sampler" => 3,
        "batch_sampler" => 4,
        "num_workers" => 5,
        "collate_fn" => 6,
        "pin_memory" => 7,
        "drop_last" => 8,
        _ => return None,
    })
}

/// An argument of a loader call, by keyword or (for torch's own class) position.
pub(crate) fn loader_arg<'a>(call: &'a ExprCall, loader: Loader, name: &str) -> Option<&'a Expr> {
    if let Some(v) = helpers::keyword(call, name) {
        return Some(v);
    }
    match (loader, position(name)) {
        (Loader::Torch, Some(p)) => helpers::argument(call, name, p),
        _ => None,
    }
}

/// Can arguments be hidden from us (`*args`, `**kwargs`)?
pub(crate) fn has_splat(call: &ExprCall) -> bool {
    helpers::has_kwargs_splat(call) || helpers::has_args_splat(call)
}

/// The range to report an argument at: the whole `name=value` keyword, or the positional value.
pub(crate) fn arg_range(call: &ExprCall, name: &str, value: &Expr) -> ruff_text_size::TextRange {
    use ruff_text_size::Ranged;
    call.arguments
        .find_keyword(name)
        .map_or(value.range(), Ranged::range)
}

/// The number of workers a loader call is known to use: `Some(0)` when `num_workers` is
/// missing (the default) or evaluates to 0, `Some(n)` for other known values, `None` when
/// unknown.
pub(crate) fn known_workers(
    checker: &crate::checker::Checker,
    env: crate::rules::style::values::Env<'_>,
    call: &ExprCall,
    loader: Loader,
) -> Option<i64> {
    use crate::rules::style::values::{eval, Value};
    match loader_arg(call, loader, "num_workers") {
        Some(v) => match eval(checker, env, v)? {
            Value::Int(n) => Some(n),
            Value::Bool(b) => Some(i64::from(b)),
            _ => None,
        },
        None => {
            // Subclasses forward extra positional arguments to DataLoader's own positions.
            let positional = call.arguments.args.len();
            (loader == Loader::Torch || positional <= 5).then_some(0)
        }
    }
}

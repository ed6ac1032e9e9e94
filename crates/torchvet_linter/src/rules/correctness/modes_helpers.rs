//! Moved to [`torchvet_semantic::modes`] (the mode facts) and [`crate::fix`] (fix layout).
//! This re-export keeps `memory/graph_helpers.rs` compiling while the branch that moves it is
//! open; delete this file once that import names `torchvet_semantic::modes` directly.
pub(crate) use torchvet_semantic::modes::{backward_target, calls_in};

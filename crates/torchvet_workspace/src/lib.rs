//! Configuration (`[tool.torchvet]` in `pyproject.toml`, or `torchvet.toml`), the project's
//! declared torch version, and file discovery.
#![deny(missing_docs)]

mod config;
mod discovery;
mod torch_version;

pub use config::{find_config, load_config, ConfigError, ConfigFile, Options};
pub use discovery::{discover, Discovered, DiscoveryOptions, DEFAULT_EXCLUDES};
pub use torch_version::{
    declared_torch_version, file_targets, repository_root, DeclaredVersion, FileTargets,
    TorchTargets,
};

//! torchvet's servers over the same engine as the command line: the language server
//! (`torchvet server`, [`lsp`]) and the Model Context Protocol server (`torchvet mcp`, [`mcp`]).
#![deny(missing_docs)]

pub mod lsp;
pub mod mcp;
pub mod settings;

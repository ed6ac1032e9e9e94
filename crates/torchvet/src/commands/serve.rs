//! `torchvet server` (LSP) and `torchvet mcp` (Model Context Protocol), both over stdio.
use crate::args::McpArgs;
use crate::printer;

/// Run the language server until the editor closes it.
pub fn lsp() -> u8 {
    match torchvet_server::lsp::run_stdio() {
        Ok(()) => 0,
        Err(e) => {
            printer::err(&format!("error: torchvet server: {e}"));
            2
        }
    }
}

/// Run the MCP server until the client closes stdin.
pub fn mcp(args: &McpArgs) -> u8 {
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            printer::err(&format!(
                "error: torchvet mcp: cannot locate the torchvet binary: {e}"
            ));
            return 2;
        }
    };
    let roots = if args.roots.is_empty() {
        vec![std::env::current_dir().unwrap_or_else(|_| ".".into())]
    } else {
        args.roots.clone()
    };
    match torchvet_server::mcp::run_stdio(exe, &roots) {
        Ok(()) => 0,
        Err(e) => {
            printer::err(&format!("error: torchvet mcp: {e}"));
            2
        }
    }
}

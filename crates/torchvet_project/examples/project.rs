//! Stand-alone `torchvet project` for trying the library before it is wired into the binary:
//! `cargo run -p torchvet_project --example project -- DIR [--format json] [--render T]`.

use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: torchvet_project::cli::ProjectArgs,
}

fn main() {
    let cli = Cli::parse();
    std::process::exit(torchvet_project::cli::run(&cli.args));
}

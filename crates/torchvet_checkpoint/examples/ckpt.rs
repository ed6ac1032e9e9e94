//! Stand-alone driver for `torchvet ckpt` (until the `torchvet` binary wires it in):
//! `cargo run -p torchvet_checkpoint --example ckpt -- scan PATH...`

use clap::Parser;
use torchvet_checkpoint::cli::{run, CkptArgs};

/// torchvet ckpt
#[derive(Parser)]
#[command(name = "torchvet ckpt")]
struct Cli {
    #[command(flatten)]
    args: CkptArgs,
}

fn main() {
    let cli = Cli::parse();
    std::process::exit(run(&cli.args));
}

//! Stand-alone `torchvet summary` for trying the library before it is wired into the binary:
//! `cargo run -p torchvet_summary --example summary -- FILE[::Class] [--format json]`.

use clap::Parser;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: torchvet_summary::cli::SummaryArgs,
}

fn main() {
    let cli = Cli::parse();
    std::process::exit(torchvet_summary::cli::run(&cli.args));
}

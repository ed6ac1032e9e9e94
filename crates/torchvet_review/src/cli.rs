//! Command-line arguments of `torchvet review`.

use std::path::PathBuf;

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReviewFormat {
    /// Markdown (default).
    Markdown,
    /// JSON: the same sections as data.
    Json,
    /// One self-contained HTML page.
    Html,
}

/// `torchvet review [PATHS...]`.
#[derive(Clone, Debug, clap::Args)]
pub struct ReviewArgs {
    /// Files or directories to review (default: the current directory).
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: ReviewFormat,
}

/// Run the command: print the review to stdout. Returns the exit code: 0 when the review was
/// produced, 2 when it could not be (error on stderr).
pub fn run(args: &ReviewArgs) -> i32 {
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    match crate::review(&paths) {
        Ok(r) => {
            let text = match args.format {
                ReviewFormat::Markdown => crate::render_markdown(&r),
                ReviewFormat::Json => {
                    serde_json::to_string_pretty(&crate::render_json(&r)).unwrap_or_default()
                }
                ReviewFormat::Html => crate::render_html(&r),
            };
            println!("{}", text.trim_end());
            0
        }
        Err(e) => {
            eprintln!("torchvet review: {e}");
            2
        }
    }
}

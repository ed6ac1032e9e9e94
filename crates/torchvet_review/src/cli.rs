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
    /// How much to show: `default` keeps to a reading budget, `full` shows every place and fix.
    #[arg(long, value_enum, default_value = "default")]
    pub detail: crate::Detail,
}

use torchvet_diagnostics::progress::{Progress, MANY_FILES};

/// Run the command: print the review to stdout. Returns the exit code: 0 when the review was
/// produced, 2 when it could not be (error on stderr).
pub fn run(args: &ReviewArgs) -> i32 {
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    // A bar for long reviews (created once the number of files is known), never for JSON.
    let mut bar: Option<Progress> = None;
    let json = matches!(args.format, ReviewFormat::Json);
    let result = crate::review_with(&paths, args.detail, &mut |_, total| {
        bar.get_or_insert_with(|| {
            Progress::items(total, "files", !json && total >= MANY_FILES).with_prefix("Reviewing")
        })
        .inc(1);
    });
    if let Some(b) = &bar {
        b.finish();
    }
    match result {
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

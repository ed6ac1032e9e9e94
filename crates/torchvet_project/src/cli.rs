//! `torchvet project [DIR]` as a library: the lead embeds [`ProjectArgs`] in the binary.

use std::io::Write;
use std::path::PathBuf;

/// Output format of `torchvet project`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ProjectFormat {
    /// A short readable summary.
    #[default]
    Text,
    /// All fields as data, each with its evidence.
    Json,
}

/// Arguments of `torchvet project`.
#[derive(Debug, Clone, clap::Args)]
pub struct ProjectArgs {
    /// The project directory (default: the current directory).
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ProjectFormat::Text)]
    pub format: ProjectFormat,
    /// Fill the `{{field}}` placeholders of this agent definition and print it.
    #[arg(long, value_name = "TEMPLATE")]
    pub render: Option<PathBuf>,
}

/// Run `torchvet project`; writes to stdout, errors to stderr. Exit code 0 ok, 2 error.
pub fn run(args: &ProjectArgs) -> i32 {
    match run_to_string(args) {
        Ok(s) => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe is not an error.
            let _ = stdout.write_all(s.as_bytes());
            let _ = stdout.flush();
            0
        }
        Err(e) => {
            eprintln!("torchvet project: error: {e}");
            2
        }
    }
}

/// The output `run` would print, or the error message.
pub fn run_to_string(args: &ProjectArgs) -> Result<String, String> {
    if !args.dir.is_dir() {
        return Err(format!("`{}` is not a directory", args.dir.display()));
    }
    let template = match &args.render {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read template `{}`: {e}", path.display()))?,
        ),
        None => None,
    };
    let report = crate::analyze(&args.dir);
    if let Some(t) = template {
        let name = args
            .render
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        return crate::render_template(&t, &report).map_err(|e| format!("{name}: {e}"));
    }
    Ok(match args.format {
        ProjectFormat::Text => crate::to_text(&report),
        ProjectFormat::Json => {
            let mut s = serde_json::to_string_pretty(&crate::to_json(&report))
                .map_err(|e| e.to_string())?;
            s.push('\n');
            s
        }
    })
}

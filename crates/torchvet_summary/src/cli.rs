//! `torchvet summary FILE[::Class]` as a library: the lead embeds [`SummaryArgs`] in the binary.

use std::io::Write;
use std::path::PathBuf;

/// Output format of `torchvet summary`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SummaryFormat {
    /// Layer tree, counts and state_dict as text.
    #[default]
    Text,
    /// The model cards as a JSON array.
    Json,
}

/// Arguments of `torchvet summary`.
#[derive(Debug, Clone, clap::Args)]
pub struct SummaryArgs {
    /// A Python file, optionally followed by `::ClassName`.
    #[arg(value_name = "FILE[::Class]")]
    pub target: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = SummaryFormat::Text)]
    pub format: SummaryFormat,
}

/// Split `path/model.py::Net` into the file and the class.
pub fn split_target(target: &str) -> (PathBuf, Option<String>) {
    if let Some((file, class)) = target.rsplit_once("::") {
        let ident = !class.is_empty() && class.chars().all(|c| c.is_alphanumeric() || c == '_');
        if ident {
            return (PathBuf::from(file), Some(class.to_string()));
        }
    }
    (PathBuf::from(target), None)
}

/// Files larger than this are refused.
const MAX_SOURCE: u64 = 16 * 1024 * 1024;

/// The output `run` would print, or the error message.
pub fn run_to_string(args: &SummaryArgs) -> Result<String, String> {
    let (file, class) = split_target(&args.target);
    let meta = std::fs::metadata(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    if meta.len() > MAX_SOURCE {
        return Err(format!(
            "{}: file too large ({} bytes)",
            file.display(),
            meta.len()
        ));
    }
    let bytes = std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let source = String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8", file.display()))?;
    let cards = crate::summarize(&source, class.as_deref())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let display = file.display().to_string();
    Ok(match args.format {
        SummaryFormat::Text => crate::render_text(&cards, &display),
        SummaryFormat::Json => {
            let mut s = serde_json::to_string_pretty(&cards).map_err(|e| e.to_string())?;
            s.push('\n');
            s
        }
    })
}

/// Run `torchvet summary`; writes to stdout, errors to stderr. Exit code 0 ok, 2 error.
pub fn run(args: &SummaryArgs) -> i32 {
    match run_to_string(args) {
        Ok(s) => {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(s.as_bytes());
            let _ = stdout.flush();
            0
        }
        Err(e) => {
            eprintln!("torchvet summary: error: {e}");
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert_eq!(
            split_target("m.py::Net"),
            (PathBuf::from("m.py"), Some("Net".to_string()))
        );
        assert_eq!(split_target("m.py"), (PathBuf::from("m.py"), None));
        assert_eq!(
            split_target("C::\\x\\m.py"),
            (PathBuf::from("C::\\x\\m.py"), None)
        );
    }
}

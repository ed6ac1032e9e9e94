//! Output formats. Formats are additive: never rename a JSON field.
use crate::{Applicability, Diagnostic, Severity};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The output formats of `torchvet check`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// One header line per finding plus the source line and a caret.
    Full,
    /// One line per finding.
    Concise,
    /// A JSON array.
    Json,
    /// One JSON object per line.
    JsonLines,
    /// SARIF 2.1.0.
    Sarif,
    /// GitHub Actions workflow commands.
    Github,
}

impl OutputFormat {
    /// Parse a format name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "full" => Self::Full,
            "concise" => Self::Concise,
            "json" => Self::Json,
            "json-lines" => Self::JsonLines,
            "sarif" => Self::Sarif,
            "github" => Self::Github,
            _ => return None,
        })
    }
}

/// Options that change how findings are written.
#[derive(Clone, Debug)]
pub struct RenderOptions {
    /// The format.
    pub format: OutputFormat,
    /// The tool version, for SARIF.
    pub version: &'static str,
}

fn place(d: &Diagnostic) -> String {
    match d.cell {
        Some(cell) => format!(
            "{}:cell {}:{}:{}",
            d.filename, cell, d.location.row, d.location.column
        ),
        None => format!("{}:{}:{}", d.filename, d.location.row, d.location.column),
    }
}

fn fix_mark(d: &Diagnostic) -> &'static str {
    match d.fix.as_ref().map(|f| f.applicability) {
        Some(Applicability::Safe) => " [*]",
        _ => "",
    }
}

/// Render findings (already sorted) in the given format.
pub fn render(diags: &[Diagnostic], opts: &RenderOptions) -> String {
    match opts.format {
        OutputFormat::Full => render_full(diags),
        OutputFormat::Concise => render_concise(diags),
        OutputFormat::Json => {
            let mut s =
                serde_json::to_string_pretty(&diags.iter().map(to_json).collect::<Vec<_>>())
                    .unwrap_or_else(|_| "[]".into());
            s.push('\n');
            s
        }
        OutputFormat::JsonLines => {
            let mut s = String::new();
            for d in diags {
                s.push_str(&to_json(d).to_string());
                s.push('\n');
            }
            s
        }
        OutputFormat::Sarif => render_sarif(diags, opts.version),
        OutputFormat::Github => render_github(diags),
    }
}

fn render_concise(diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diags {
        let _ = writeln!(
            out,
            "{}: {}{} [{}] {}",
            place(d),
            d.code,
            fix_mark(d),
            d.severity,
            d.message
        );
    }
    out
}

fn render_full(diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diags {
        let _ = writeln!(
            out,
            "{}: {}{} {} [{}]",
            place(d),
            d.code,
            fix_mark(d),
            d.name,
            d.severity
        );
        let _ = writeln!(out, "  {}", d.message);
        if let Some(line) = &d.source_line {
            let num = d.location.row.to_string();
            let pad = " ".repeat(num.len());
            let _ = writeln!(out, " {pad} |");
            let _ = writeln!(out, " {num} | {line}");
            let start = d.location.column.saturating_sub(1);
            let width = if d.end_location.row == d.location.row {
                d.end_location
                    .column
                    .saturating_sub(d.location.column)
                    .max(1)
            } else {
                line.chars().count().saturating_sub(start).max(1)
            };
            let _ = writeln!(out, " {pad} | {}{}", " ".repeat(start), "^".repeat(width));
        }
        for r in &d.related {
            let file = r.filename.as_deref().unwrap_or(&d.filename);
            let at = match r.cell {
                Some(cell) => format!(
                    "{}:cell {}:{}:{}",
                    file, cell, r.location.row, r.location.column
                ),
                None => format!("{}:{}:{}", file, r.location.row, r.location.column),
            };
            let _ = writeln!(out, "  = note: {} at {at}", r.message);
        }
        if let Some(fix) = &d.fix {
            let kind = match fix.applicability {
                Applicability::Safe => "fix",
                Applicability::Unsafe => "unsafe fix",
                Applicability::DisplayOnly => "suggestion",
            };
            let _ = writeln!(out, "  = {kind}: {}", fix.message);
        }
        out.push('\n');
    }
    out
}

/// The JSON object of one finding (convention 7 of the architecture spec).
pub fn to_json(d: &Diagnostic) -> Value {
    let fix = d.fix.as_ref().map(|f| {
        json!({
            "applicability": f.applicability,
            "message": f.message,
            "edits": f.edits.iter().map(|e| json!({
                "content": e.content,
                "location": e.location,
                "end_location": e.end_location,
            })).collect::<Vec<_>>(),
        })
    });
    let mut v = json!({
        "code": d.code,
        "name": d.name,
        "severity": d.severity,
        "message": d.message,
        "filename": d.filename,
        "location": d.location,
        "end_location": d.end_location,
        "cell": d.cell,
        "fix": fix,
        "url": d.url,
    });
    if !d.related.is_empty() {
        v["related"] = serde_json::to_value(&d.related).unwrap_or(Value::Null);
    }
    v
}

fn sarif_level(s: Severity) -> &'static str {
    match s {
        Severity::Critical => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

fn render_sarif(diags: &[Diagnostic], version: &str) -> String {
    let mut rules: BTreeMap<&str, &Diagnostic> = BTreeMap::new();
    for d in diags {
        rules.entry(d.code).or_insert(d);
    }
    let index: BTreeMap<&str, usize> = rules.keys().enumerate().map(|(i, k)| (*k, i)).collect();
    let rules_json: Vec<Value> = rules
        .values()
        .map(|d| {
            json!({
                "id": d.code,
                "name": d.name,
                "shortDescription": {"text": if d.title.is_empty() { d.name } else { d.title }},
                "helpUri": d.url,
                "defaultConfiguration": {"level": sarif_level(d.severity)},
                "properties": {"severity": d.severity},
            })
        })
        .collect();
    let results: Vec<Value> = diags
        .iter()
        .map(|d| {
            let mut region = json!({
                "startLine": d.location.row,
                "startColumn": d.location.column,
                "endLine": d.end_location.row,
                "endColumn": d.end_location.column,
            });
            if let Some(cell) = d.cell {
                region["properties"] = json!({"cell": cell});
            }
            json!({
                "ruleId": d.code,
                "ruleIndex": index.get(d.code).copied().unwrap_or(0),
                "level": sarif_level(d.severity),
                "message": {"text": d.message},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": sarif_uri(&d.filename)},
                        "region": region,
                    }
                }],
            })
        })
        .collect();
    let doc = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "torchvet",
                "version": version,
                "informationUri": "https://torchvet.dev",
                "rules": rules_json,
            }},
            "results": results,
        }],
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}

/// A relative URI reference for SARIF: forward slashes, percent-encoded specials.
fn sarif_uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for ch in path.replace('\\', "/").chars() {
        match ch {
            ' ' => out.push_str("%20"),
            '%' => out.push_str("%25"),
            '#' => out.push_str("%23"),
            '?' => out.push_str("%3F"),
            c => out.push(c),
        }
    }
    out.strip_prefix("./").map(str::to_string).unwrap_or(out)
}

fn gh_escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn gh_escape_prop(s: &str) -> String {
    gh_escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

fn render_github(diags: &[Diagnostic]) -> String {
    let mut out = String::new();
    for d in diags {
        let level = match d.severity {
            Severity::Critical => "error",
            Severity::Warning => "warning",
            Severity::Info => "notice",
        };
        let _ = writeln!(
            out,
            "::{level} title={},file={},line={},col={},endLine={},endColumn={}::{}",
            gh_escape_prop(&format!("torchvet ({})", d.code)),
            gh_escape_prop(&d.filename),
            d.location.row,
            d.location.column,
            d.end_location.row,
            d.end_location.column,
            gh_escape_data(&format!(
                "{}: {} {}: {}",
                place(d),
                d.code,
                d.name,
                d.message
            )),
        );
    }
    out
}

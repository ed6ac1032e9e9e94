//! Text and JSON output, and `--render TEMPLATE`.

use crate::scan::{ProjectReport, FIELD_NAMES};
use crate::Evidence;
use std::fmt::Write as _;

/// Evidence lines shown per item in the text output.
const TEXT_EVIDENCE: usize = 3;

/// The report as data (`--format json`).
pub fn to_json(report: &ProjectReport) -> serde_json::Value {
    let mut fields = serde_json::Map::new();
    for f in &report.fields {
        let mut obj = serde_json::Map::new();
        obj.insert("value".into(), serde_json::Value::String(f.value.clone()));
        if !f.dirs.is_empty() {
            obj.insert(
                "dirs".into(),
                serde_json::to_value(&f.dirs).unwrap_or_default(),
            );
        }
        obj.insert("count".into(), serde_json::Value::from(f.count));
        obj.insert(
            "evidence".into(),
            serde_json::to_value(&f.evidence).unwrap_or_default(),
        );
        fields.insert(f.name.to_string(), serde_json::Value::Object(obj));
    }
    serde_json::json!({
        "root": report.root,
        "is_pytorch_project": report.is_pytorch_project,
        "triggers": report.triggers,
        "fields": fields,
        "requirements": report.requirements,
        "warnings": report.warnings,
    })
}

fn evidence_lines(out: &mut String, indent: &str, ev: &[Evidence], total: usize) {
    for e in ev.iter().take(TEXT_EVIDENCE) {
        let _ = writeln!(out, "{indent}{}  {}", e.location(), e.text);
    }
    if total > TEXT_EVIDENCE {
        let _ = writeln!(out, "{indent}... and {} more", total - TEXT_EVIDENCE);
    }
}

/// A short readable summary (the default output).
pub fn to_text(report: &ProjectReport) -> String {
    let mut out = String::new();
    let verdict = if report.is_pytorch_project {
        "yes"
    } else {
        "no"
    };
    let _ = writeln!(out, "PyTorch project: {verdict} ({})", report.root);
    let _ = writeln!(out);
    let _ = writeln!(out, "Triggers:");
    if report.triggers.is_empty() {
        let _ = writeln!(out, "  none matched");
    }
    for t in &report.triggers {
        let _ = writeln!(out, "  {} ({})", t.description, t.count);
        evidence_lines(&mut out, "    ", &t.evidence, t.count);
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "Project knowledge:");
    for f in &report.fields {
        let value = if f.value.is_empty() {
            "(none found)"
        } else {
            f.value.as_str()
        };
        let _ = writeln!(out, "  {:<16} {value}", f.name);
        if !f.dirs.is_empty() {
            let parts: Vec<String> = f
                .dirs
                .iter()
                .map(|d| match d.bytes {
                    Some(b) => format!("{} ({}, {})", d.dir, d.count, crate::scan::human_size(b)),
                    None => format!("{} ({})", d.dir, d.count),
                })
                .collect();
            let _ = writeln!(out, "  {:<16} {}", "", parts.join(", "));
        }
        evidence_lines(
            &mut out,
            "                     ",
            &f.evidence,
            f.evidence.len(),
        );
    }
    if !report.warnings.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "Warnings:");
        for w in &report.warnings {
            let _ = writeln!(out, "  {w}");
        }
    }
    out
}

/// A template that uses placeholders the report does not define.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// Unknown `{{name}}` placeholders, with their 1-based lines.
    #[error("unknown placeholder{} in template: {}; known fields: {}", if .0.len() == 1 { "" } else { "s" }, .0.iter().map(|(n, l)| format!("{{{{{n}}}}} (line {l})")).collect::<Vec<_>>().join(", "), FIELD_NAMES.join(", "))]
    UnknownPlaceholders(Vec<(String, u32)>),
    /// A `{{` without a closing `}}`.
    #[error("unclosed placeholder starting at line {0}")]
    Unclosed(u32),
}

/// Fill `{{field}}` placeholders (whitespace inside the braces allowed) with the field values.
/// Every unknown placeholder is reported, not only the first.
pub fn render_template(template: &str, report: &ProjectReport) -> Result<String, RenderError> {
    let mut out = String::with_capacity(template.len() + 256);
    let mut unknown: Vec<(String, u32)> = Vec::new();
    let mut rest = template;
    let mut consumed = 0usize;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let line = template[..consumed + start].matches('\n').count() as u32 + 1;
        let Some(end) = after.find("}}") else {
            return Err(RenderError::Unclosed(line));
        };
        let name = after[..end].trim();
        match report.field(name) {
            Some(f) => out.push_str(&f.value),
            None => unknown.push((name.to_string(), line)),
        }
        let advance = start + 2 + end + 2;
        consumed += advance;
        rest = &rest[advance..];
    }
    out.push_str(rest);
    if unknown.is_empty() {
        Ok(out)
    } else {
        Err(RenderError::UnknownPlaceholders(unknown))
    }
}

//! Renderers for scan reports: text, json and SARIF 2.1.0.

use crate::{Level, ScanReport, Verdict};
use serde_json::{json, Value as Json};
use std::fmt::Write as _;

/// Human-readable text. `verbose` also shows informational findings.
pub fn render_text(reports: &[ScanReport], verbose: bool) -> String {
    let mut s = String::new();
    for r in reports {
        let _ = writeln!(
            s,
            "{}: {} ({}, {} bytes)",
            r.path.display(),
            r.verdict.as_str().to_uppercase(),
            r.format,
            r.size
        );
        let mut hidden = 0;
        for f in &r.findings {
            if f.level == Level::Info && !verbose {
                hidden += 1;
                continue;
            }
            let mut loc = f.member.clone().unwrap_or_default();
            if let Some(o) = f.offset {
                let _ = write!(loc, "@{o}");
            }
            let mut what = String::new();
            if let Some(op) = &f.opcode {
                what.push_str(op);
            }
            if let Some(g) = &f.global {
                if !what.is_empty() {
                    what.push(' ');
                }
                what.push_str(g);
            }
            let level = match f.level {
                Level::Info => "info",
                Level::Malformed => "malformed",
                Level::Unsafe => "unsafe",
                Level::Dangerous => "dangerous",
            };
            let _ = writeln!(
                s,
                "  {level:<9} [{}] {}{}{}",
                f.code,
                if loc.is_empty() {
                    String::new()
                } else {
                    format!("{loc} ")
                },
                if what.is_empty() {
                    String::new()
                } else {
                    format!("{what}: ")
                },
                f.message
            );
        }
        if hidden > 0 {
            let _ = writeln!(
                s,
                "  ({hidden} informational findings; --verbose shows them)"
            );
        }
    }
    let count = |v: Verdict| reports.iter().filter(|r| r.verdict == v).count();
    let _ = writeln!(
        s,
        "{} files scanned: {} dangerous, {} unsafe, {} malformed, {} safe",
        reports.len(),
        count(Verdict::Dangerous),
        count(Verdict::Unsafe),
        count(Verdict::Malformed),
        count(Verdict::Safe)
    );
    s
}

/// JSON: an array with one object per file (`path`, `verdict`, `format`, `size`, `findings`,
/// `globals`).
pub fn render_json(reports: &[ScanReport]) -> String {
    serde_json::to_string_pretty(reports).unwrap_or_else(|_| "[]".into())
}

/// JSON lines: one report per line.
pub fn render_jsonl(reports: &[ScanReport]) -> String {
    let mut s = String::new();
    for r in reports {
        s.push_str(&serde_json::to_string(r).unwrap_or_default());
        s.push('\n');
    }
    s
}

/// SARIF 2.1.0.
pub fn render_sarif(reports: &[ScanReport]) -> String {
    let mut rules = std::collections::BTreeMap::new();
    let mut results = Vec::new();
    for r in reports {
        for f in &r.findings {
            let level = match f.level {
                Level::Dangerous => "error",
                Level::Unsafe => "warning",
                Level::Malformed | Level::Info => "note",
            };
            rules.entry(f.code.clone()).or_insert_with(|| {
                json!({
                    "id": f.code,
                    "name": f.code,
                    "shortDescription": {"text": format!("checkpoint: {}", f.code)},
                    "properties": {"tags": ["checkpoint", "security"]},
                })
            });
            let mut phys = json!({"artifactLocation": {"uri": r.path.display().to_string()}});
            if f.member.is_none() {
                if let Some(o) = f.offset {
                    phys["region"] = json!({"byteOffset": o});
                }
            }
            results.push(json!({
                "ruleId": f.code,
                "level": level,
                "message": {"text": f.message},
                "locations": [{"physicalLocation": phys}],
                "properties": {
                    "verdict": r.verdict,
                    "severity": f.level,
                    "member": f.member,
                    "offset": f.offset,
                    "opcode": f.opcode,
                    "global": f.global,
                },
            }));
        }
    }
    let doc: Json = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "torchvet",
                "informationUri": "https://example.invalid/torchvet",
                "rules": rules.into_values().collect::<Vec<_>>(),
            }},
            "artifacts": reports.iter().map(|r| json!({"location": {"uri": r.path.display().to_string()}, "length": r.size})).collect::<Vec<_>>(),
            "results": results,
        }],
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default()
}

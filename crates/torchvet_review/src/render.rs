//! Markdown, JSON and HTML renderings of a [`Review`].

use crate::{Finding, Review, SECTIONS};
use std::fmt::Write;

fn code_block(out: &mut String, label: &str, code: &str) {
    let _ = writeln!(out, "{label}:\n\n```python\n{code}\n```\n");
}

fn md_finding(out: &mut String, n: usize, f: &Finding) {
    let scope = f
        .scope
        .as_ref()
        .map(|s| format!(" in `{s}`"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "### {n}. {} `{}` {} ({}: {})\n",
        f.location(),
        f.rule,
        f.code,
        f.severity,
        f.title
    );
    let _ = writeln!(out, "- **Where:** `{}`{scope}", f.location());
    let _ = writeln!(out, "- **Finding:** {}", f.message);
    if let Some(why) = &f.why {
        let _ = writeln!(out, "- **What happens:** {why}");
    }
    if let Some(note) = &f.note {
        let _ = writeln!(out, "- **Project:** {note}");
    }
    match &f.fix {
        Some(fix) => {
            let how = match (fix.origin, fix.applicability) {
                ("fix", Some(a)) => format!("torchvet fix, {a}"),
                ("docs", _) => "from the rule's documentation".to_string(),
                _ => "suggestion".to_string(),
            };
            let _ = writeln!(out, "- **Fix** ({how}): {}\n", fix.description);
            code_block(out, "Before", &fix.before);
            code_block(out, "After", &fix.after);
        }
        None => {
            let _ = writeln!(
                out,
                "- **Fix:** no mechanical fix; follow the rule documentation (`torchvet rule {}`).\n",
                f.rule
            );
        }
    }
}

fn md_findings(out: &mut String, list: &[Finding], empty: &str) {
    if list.is_empty() {
        let _ = writeln!(out, "{empty}\n");
    }
    for (i, f) in list.iter().enumerate() {
        md_finding(out, i + 1, f);
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The review as Markdown.
pub fn render_markdown(r: &Review) -> String {
    let mut out = String::new();
    let s = &r.summary;
    let _ = writeln!(out, "# torchvet review: {}\n", r.paths.join(", "));
    let _ = writeln!(out, "## {}\n", SECTIONS[0]);
    let _ = writeln!(out, "{}\n", s.description);
    if let Some(t) = &s.torch_requirement {
        let _ = writeln!(out, "Declared torch requirement: `{t}`.\n");
    }
    let _ = writeln!(out, "**Verdict:** {}\n", s.verdict);
    let lists = [
        ("Models", &s.models),
        ("Training loops", &s.training_loops),
        ("Evaluation", &s.evaluation),
        ("Data loaders", &s.data_loaders),
    ];
    for (label, items) in lists {
        if !items.is_empty() {
            let v: Vec<String> = items
                .iter()
                .map(|i| format!("`{}` ({})", i.name, i.location))
                .collect();
            let _ = writeln!(out, "- {label}: {}", v.join(", "));
        }
    }
    let _ = writeln!(out, "\n### Expert checklist\n");
    let _ = writeln!(out, "| Check | Result | Note | Evidence |");
    let _ = writeln!(out, "|---|---|---|---|");
    for c in &s.checklist {
        let ev: Vec<String> = c
            .evidence
            .iter()
            .map(|e| format!("{} `{}`", e.location(), cell(&e.text)))
            .collect();
        let ev = if ev.is_empty() {
            "-".to_string()
        } else {
            ev.join("<br>")
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            c.title,
            c.status.as_str(),
            cell(&c.note),
            ev
        );
    }
    out.push('\n');
    let _ = writeln!(out, "## {}\n", SECTIONS[1]);
    md_findings(&mut out, &r.critical, "No critical issues found.");
    let _ = writeln!(out, "## {}\n", SECTIONS[2]);
    md_findings(&mut out, &r.performance, "No performance issues found.");
    let _ = writeln!(out, "## {}\n", SECTIONS[3]);
    md_findings(
        &mut out,
        &r.best_practices,
        "No best-practice issues found.",
    );
    let _ = writeln!(out, "## {}\n", SECTIONS[4]);
    md_findings(&mut out, &r.code_quality, "No code-quality issues found.");
    let _ = writeln!(out, "## {}\n", SECTIONS[5]);
    if r.positive.is_empty() {
        let _ = writeln!(
            out,
            "No good practice from the checked list was detected in the code.\n"
        );
    }
    for p in &r.positive {
        let ev: Vec<String> = p.evidence.iter().map(|e| e.location()).collect();
        let _ = writeln!(out, "- **{}**: {} ({})", p.title, p.detail, ev.join(", "));
    }
    if !r.positive.is_empty() {
        out.push('\n');
    }
    let _ = writeln!(out, "## {}\n", SECTIONS[6]);
    if r.testing.is_empty() {
        let _ = writeln!(out, "No modules or loops found to test.\n");
    }
    for t in &r.testing {
        let _ = writeln!(out, "### `{}` ({}, {})\n", t.target, t.kind, t.location);
        for test in &t.tests {
            let _ = writeln!(out, "- {test}");
        }
        out.push('\n');
    }
    if !r.errors.is_empty() {
        let _ = writeln!(out, "## Files not reviewed\n");
        for e in &r.errors {
            let _ = writeln!(out, "- {e}");
        }
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// The review as JSON (the same sections as data).
pub fn render_json(r: &Review) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap_or(serde_json::Value::Null);
    if let Some(obj) = v.as_object_mut() {
        obj.insert(
            "sections".into(),
            serde_json::Value::from(SECTIONS.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
        );
    }
    v
}

/// Escape prose and turn its `code` spans into `<code>` elements.
fn prose(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    let balanced = s.matches('`').count().is_multiple_of(2);
    for (i, part) in s.split('`').enumerate() {
        // Odd parts are inside backticks; unbalanced backticks stay literal.
        if !i.is_multiple_of(2) && balanced {
            out.push_str("<code>");
            out.push_str(&esc(part));
            out.push_str("</code>");
        } else {
            if i > 0 && !balanced {
                out.push('`');
            }
            out.push_str(&esc(part));
        }
    }
    out
}

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '"' => o.push_str("&quot;"),
            _ => o.push(c),
        }
    }
    o
}

fn html_findings(out: &mut String, list: &[Finding], empty: &str) {
    if list.is_empty() {
        let _ = writeln!(out, "<p class=\"none\">{}</p>", esc(empty));
    }
    for f in list {
        let scope = f
            .scope
            .as_ref()
            .map(|s| format!(" in <code>{}</code>", esc(s)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "<div class=\"finding {sev}\"><h3><span class=\"sev\">{sev}</span> {} <code>{}</code> {}</h3>",
            esc(&f.location()),
            esc(&f.rule),
            esc(&f.code),
            sev = f.severity
        );
        let _ = writeln!(
            out,
            "<p><b>Where:</b> <code>{}</code>{scope}</p>",
            esc(&f.location())
        );
        let _ = writeln!(out, "<p><b>Finding:</b> {}</p>", prose(&f.message));
        if let Some(why) = &f.why {
            let _ = writeln!(out, "<p><b>What happens:</b> {}</p>", prose(why));
        }
        if let Some(note) = &f.note {
            let _ = writeln!(out, "<p><b>Project:</b> {}</p>", esc(note));
        }
        if let Some(fix) = &f.fix {
            let _ = writeln!(out, "<p><b>Fix:</b> {}</p>", prose(&fix.description));
            let _ = writeln!(
                out,
                "<div class=\"diff\"><pre class=\"before\">{}</pre><pre class=\"after\">{}</pre></div>",
                esc(&fix.before),
                esc(&fix.after)
            );
        }
        out.push_str("</div>\n");
    }
}

const CSS: &str = "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}\
h2{border-bottom:2px solid #ddd;padding-bottom:.2rem;margin-top:2rem}\
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ccc;padding:.3rem;vertical-align:top;text-align:left}\
.pass{color:#176f2c}.fail{color:#b00020}.not-applicable{color:#777}\
.finding{border-left:4px solid #999;padding:.2rem .8rem;margin:1rem 0;page-break-inside:avoid}\
.finding.critical{border-color:#b00020}.finding.warning{border-color:#c77700}.finding.info{border-color:#1565c0}\
.sev{text-transform:uppercase;font-size:.8rem}pre{background:#f6f6f6;padding:.5rem;overflow-x:auto;white-space:pre-wrap}\
pre.before{border-left:3px solid #b00020}pre.after{border-left:3px solid #176f2c}\
.none{color:#555;font-style:italic}@media print{body{margin:0;max-width:none}a{color:inherit}}";

/// The review as one self-contained HTML page (inline CSS, printable).
pub fn render_html(r: &Review) -> String {
    let mut out = String::new();
    let title = format!("torchvet review: {}", r.paths.join(", "));
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{CSS}</style></head><body>\n<h1>{t}</h1>",
        t = esc(&title)
    );
    let s = &r.summary;
    let _ = writeln!(out, "<h2>{}</h2>", SECTIONS[0]);
    let _ = writeln!(out, "<p>{}</p>", esc(&s.description));
    if let Some(t) = &s.torch_requirement {
        let _ = writeln!(
            out,
            "<p>Declared torch requirement: <code>{}</code></p>",
            esc(t)
        );
    }
    let _ = writeln!(out, "<p><b>Verdict:</b> {}</p>", esc(&s.verdict));
    out.push_str("<table><tr><th>Check</th><th>Result</th><th>Note</th><th>Evidence</th></tr>\n");
    for c in &s.checklist {
        let ev: Vec<String> = c
            .evidence
            .iter()
            .map(|e| format!("{} <code>{}</code>", esc(&e.location()), esc(&e.text)))
            .collect();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"{st}\">{st}</td><td>{}</td><td>{}</td></tr>",
            esc(c.title),
            esc(&c.note),
            ev.join("<br>"),
            st = c.status.as_str()
        );
    }
    out.push_str("</table>\n");
    let sections = [
        (&r.critical, "No critical issues found."),
        (&r.performance, "No performance issues found."),
        (&r.best_practices, "No best-practice issues found."),
        (&r.code_quality, "No code-quality issues found."),
    ];
    for (i, (list, empty)) in sections.into_iter().enumerate() {
        let _ = writeln!(out, "<h2>{}</h2>", SECTIONS[i + 1]);
        html_findings(&mut out, list, empty);
    }
    let _ = writeln!(out, "<h2>{}</h2>", SECTIONS[5]);
    if r.positive.is_empty() {
        out.push_str("<p class=\"none\">No good practice from the checked list was detected in the code.</p>\n");
    } else {
        out.push_str("<ul>\n");
        for p in &r.positive {
            let ev: Vec<String> = p.evidence.iter().map(|e| esc(&e.location())).collect();
            let _ = writeln!(
                out,
                "<li><b>{}</b>: {} ({})</li>",
                esc(p.title),
                esc(p.detail),
                ev.join(", ")
            );
        }
        out.push_str("</ul>\n");
    }
    let _ = writeln!(out, "<h2>{}</h2>", SECTIONS[6]);
    if r.testing.is_empty() {
        out.push_str("<p class=\"none\">No modules or loops found to test.</p>\n");
    }
    for t in &r.testing {
        let _ = writeln!(
            out,
            "<h3><code>{}</code> ({}, {})</h3><ul>",
            esc(&t.target),
            esc(t.kind),
            esc(&t.location)
        );
        for test in &t.tests {
            let _ = writeln!(out, "<li>{}</li>", esc(test));
        }
        out.push_str("</ul>\n");
    }
    if !r.errors.is_empty() {
        out.push_str("<h2>Files not reviewed</h2><ul>\n");
        for e in &r.errors {
            let _ = writeln!(out, "<li>{}</li>", esc(e));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod prose_tests {
    use super::prose;

    #[test]
    fn backtick_spans_become_code_and_html_is_escaped() {
        assert_eq!(prose("use `a<b` now"), "use <code>a&lt;b</code> now");
        assert_eq!(prose("odd ` tick"), "odd ` tick");
        assert_eq!(prose("plain"), "plain");
    }
}

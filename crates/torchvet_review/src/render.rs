//! Markdown, JSON and HTML renderings of a [`Review`]. Both documents have the same
//! structure; the default detail keeps to a reading budget (a few places per item, fixes for
//! the items that matter, the rest in one table row per rule), `--detail full` shows all.

use crate::{Check, CheckStatus, Detail, Finding, Place, Review, Severity, SECTIONS};
use std::fmt::Write;

/// Budget of the default detail.
#[derive(Clone)]
struct Budget {
    /// Places listed per item.
    places: usize,
    /// Items of sections 3 and 4 shown in full (the rest become table rows).
    full_items: usize,
    /// Lines of a before/after snippet.
    snippet_lines: usize,
    /// Items of section 2 shown in full.
    critical_items: usize,
    /// Names listed in the summary lists.
    names: usize,
}

/// Lines a default review aims to stay under (a five-minute read).
pub const LINE_BUDGET: usize = 250;

/// The budgets of the default detail, loosest first: the review uses the first that fits in
/// [`LINE_BUDGET`] (else the tightest).
const DEFAULT_BUDGETS: [Budget; 3] = [
    Budget {
        places: 6,
        full_items: 4,
        snippet_lines: 8,
        critical_items: 10,
        names: 6,
    },
    Budget {
        places: 4,
        full_items: 2,
        snippet_lines: 5,
        critical_items: 7,
        names: 5,
    },
    Budget {
        places: 3,
        full_items: 1,
        snippet_lines: 4,
        critical_items: 5,
        names: 4,
    },
];

fn budget(r: &Review) -> Budget {
    match r.detail {
        Detail::Default => {
            for b in &DEFAULT_BUDGETS {
                if markdown_with(r, b).lines().count() <= LINE_BUDGET {
                    return b.clone();
                }
            }
            DEFAULT_BUDGETS[2].clone()
        }
        Detail::Full => Budget {
            places: usize::MAX,
            full_items: usize::MAX,
            snippet_lines: usize::MAX,
            critical_items: usize::MAX,
            names: usize::MAX,
        },
    }
}

fn clip_lines(code: &str, max: usize) -> String {
    let lines: Vec<&str> = code.lines().collect();
    if lines.len() <= max {
        return code.to_string();
    }
    let mut s = lines[..max].join("\n");
    let _ = write!(s, "\n# ... {} more lines", lines.len() - max);
    s
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// "12 places in 5 notebooks: a.ipynb cell 3:4, cell 5:2; b.py:10, 20 (+3 more)".
pub(crate) fn compact_places(places: &[Place], max: usize) -> String {
    let mut files: Vec<(&str, Vec<String>)> = Vec::new();
    for p in places.iter().take(max) {
        let at = match p.cell {
            Some(c) => format!("cell {c}:{}", p.line),
            None => p.line.to_string(),
        };
        match files.last_mut() {
            Some((f, v)) if *f == p.file => v.push(at),
            _ => files.push((&p.file, vec![at])),
        }
    }
    let mut distinct: Vec<&str> = places.iter().map(|p| p.file.as_str()).collect();
    distinct.dedup();
    let notebooks = distinct.iter().all(|f| f.ends_with(".ipynb"));
    let listed: Vec<String> = files
        .iter()
        .map(|(f, v)| {
            if v[0].starts_with("cell") {
                format!("`{f}` {}", v.join(", "))
            } else {
                format!("`{f}:{}`", v.join(", "))
            }
        })
        .collect();
    let more = places.len().saturating_sub(max);
    let tail = if more > 0 {
        format!(" (+{more} more)")
    } else {
        String::new()
    };
    if places.len() == 1 {
        return listed.join("");
    }
    format!(
        "{} in {}: {}{tail}",
        plural(places.len(), "place", "places"),
        if notebooks {
            plural(distinct.len(), "notebook", "notebooks")
        } else {
            plural(distinct.len(), "file", "files")
        },
        listed.join("; ")
    )
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn label(f: &Finding) -> String {
    let mut l = f.severity.to_string();
    if f.confidence == "preview" {
        l.push_str(", preview rule: lower confidence");
    }
    if let Some(e) = f.exposure {
        l.push_str(match e {
            "outside" => ", path from outside the project",
            "own-file" => ", file the project writes itself",
            "shipped" => ", file shipped with the code",
            _ => ", path origin unknown",
        });
    }
    l
}

fn md_item(out: &mut String, n: usize, f: &Finding, b: &Budget, with_fix: bool) {
    let _ = writeln!(
        out,
        "### {n}. {} — `{}` {} ({})\n",
        f.title,
        f.rule,
        f.code,
        label(f)
    );
    let scope = f.locations[0]
        .scope
        .as_ref()
        .filter(|_| f.locations.len() == 1)
        .map(|s| format!(" in `{s}`"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "- **Where:** {}{scope}",
        compact_places(&f.locations, b.places)
    );
    let _ = writeln!(out, "- **Finding:** {}", f.message);
    if let Some(why) = f.why.as_ref().filter(|_| with_fix) {
        let _ = writeln!(out, "- **What happens:** {why}");
    }
    if let Some(note) = &f.note {
        let _ = writeln!(out, "- **Project:** {note}");
    }
    match (&f.fix, with_fix) {
        (Some(fix), true) => {
            match (fix.origin, fix.applicability) {
                ("fix", Some(a)) => {
                    let _ = writeln!(
                        out,
                        "- **Fix** (`torchvet check --fix`, {a}): {}\n",
                        fix.description
                    );
                }
                _ => {
                    let _ = writeln!(out, "- **Fix** (as in the rule's documentation):\n");
                }
            }
            let _ = writeln!(
                out,
                "```python\n# before\n{}\n# after\n{}\n```\n",
                clip_lines(&fix.before, b.snippet_lines),
                clip_lines(&fix.after, b.snippet_lines)
            );
        }
        _ => {
            let _ = writeln!(out, "- **Fix:** see `torchvet rule {}`.\n", f.rule);
        }
    }
}

/// A table row's severity: `critical`, or `warning (preview)` for a preview rule.
fn table_severity(f: &Finding) -> String {
    let mut sev = f.severity.to_string();
    if f.confidence == "preview" {
        sev.push_str(" (preview)");
    }
    sev
}

fn md_table(out: &mut String, rows: &[&Finding], b: &Budget) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "| Rule | Severity | Places | What to do |");
    let _ = writeln!(out, "|---|---|---|---|");
    for f in rows {
        let sev = table_severity(f);
        let _ = writeln!(
            out,
            "| `{}` {} | {} | {} | {} |",
            f.rule,
            f.code,
            sev,
            cell(&compact_places(&f.locations, b.places.min(2))),
            cell(&f.title)
        );
    }
    out.push('\n');
}

/// Split a section into items shown in full and table rows (info findings and items past
/// the budget).
fn split(list: &[Finding], full: usize, info_as_rows: bool) -> (Vec<&Finding>, Vec<&Finding>) {
    let mut items = Vec::new();
    let mut rows = Vec::new();
    for f in list {
        if (info_as_rows && f.severity == Severity::Info) || items.len() >= full {
            rows.push(f);
        } else {
            items.push(f);
        }
    }
    (items, rows)
}

fn check_evidence(c: &Check, max: usize) -> String {
    if c.status == CheckStatus::Fail {
        return c
            .findings
            .iter()
            .map(|f| format!("`{}` ×{} (first: {})", f.rule, f.count, f.first))
            .collect::<Vec<_>>()
            .join("; ");
    }
    c.evidence
        .iter()
        .take(max)
        .map(|e| format!("{} `{}`", e.location(), e.text))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The review as Markdown.
pub fn render_markdown(r: &Review) -> String {
    markdown_with(r, &budget(r))
}

fn markdown_with(r: &Review, b: &Budget) -> String {
    let b = b.clone();
    let mut out = String::new();
    let s = &r.summary;
    let _ = writeln!(out, "# torchvet review: {}\n", r.paths.join(", "));
    let _ = writeln!(out, "## {}\n", SECTIONS[0]);
    let _ = writeln!(out, "**Verdict:** {}\n", s.verdict);
    let _ = writeln!(out, "{}", s.description);
    if let Some(t) = &s.torch_requirement {
        let _ = writeln!(out, "Declared torch requirement: `{t}`.");
    }
    let groups =
        r.critical.len() + r.performance.len() + r.best_practices.len() + r.code_quality.len();
    let _ = writeln!(
        out,
        "Findings: {} critical, {} warnings, {} advice, grouped into {} items by rule and cause.\n",
        s.counts.critical, s.counts.warning, s.counts.info, groups
    );
    for d in &s.duplicates {
        let also: Vec<String> = d.also_in.iter().map(|a| format!("`{a}`")).collect();
        let _ = writeln!(
            out,
            "- Identical copies reviewed once: `{}` (also in: {})",
            d.reviewed,
            also.join(", ")
        );
    }
    let lists = [
        ("Models", &s.models),
        ("Training loops", &s.training_loops),
        ("Evaluation", &s.evaluation),
        ("Data loaders", &s.data_loaders),
    ];
    for (name, items) in lists {
        if items.is_empty() {
            continue;
        }
        let v: Vec<String> = items
            .iter()
            .take(b.names)
            .map(|i| {
                if name == "Data loaders" {
                    i.location.clone()
                } else {
                    format!("`{}` ({})", i.name, i.location)
                }
            })
            .collect();
        let more = items.len().saturating_sub(b.names);
        let tail = if more > 0 {
            format!(", and {more} more")
        } else {
            String::new()
        };
        let _ = writeln!(out, "- {name}: {}{tail}", v.join(", "));
    }
    let _ = writeln!(out, "\n### Expert checklist\n");
    let _ = writeln!(out, "| Check | Result | Why | Evidence |");
    let _ = writeln!(out, "|---|---|---|---|");
    for c in &s.checklist {
        let ev = check_evidence(c, 2);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            c.title,
            c.status.as_str(),
            cell(&c.note),
            if ev.is_empty() {
                "-".to_string()
            } else {
                cell(&ev)
            }
        );
    }
    out.push('\n');

    let _ = writeln!(out, "## {}\n", SECTIONS[1]);
    if r.critical.is_empty() {
        let _ = writeln!(out, "No critical issues found.\n");
    } else {
        let _ = writeln!(
            out,
            "Ranked by impact: bugs that change results first, then code execution by exposure, then code that breaks on the target torch.\n"
        );
        let (items, rows) = split(&r.critical, b.critical_items, false);
        for (i, f) in items.iter().enumerate() {
            md_item(&mut out, i + 1, f, &b, true);
        }
        if !rows.is_empty() {
            let _ = writeln!(out, "More issues of this kind:\n");
            md_table(&mut out, &rows, &b);
        }
    }
    let rest = [
        (&r.performance, SECTIONS[2], "No performance issues found."),
        (
            &r.best_practices,
            SECTIONS[3],
            "No best-practice issues found.",
        ),
    ];
    for (list, title, empty) in rest {
        let _ = writeln!(out, "## {title}\n");
        if list.is_empty() {
            let _ = writeln!(out, "{empty}\n");
            continue;
        }
        let (items, rows) = split(list, b.full_items, r.detail == Detail::Default);
        for (i, f) in items.iter().enumerate() {
            md_item(&mut out, i + 1, f, &b, true);
        }
        if !rows.is_empty() {
            if !items.is_empty() {
                let _ = writeln!(out, "Also:\n");
            }
            md_table(&mut out, &rows, &b);
        }
    }
    let _ = writeln!(out, "## {}\n", SECTIONS[4]);
    if r.code_quality.is_empty() {
        let _ = writeln!(out, "No code-quality issues found.\n");
    } else if r.detail == Detail::Full {
        for (i, f) in r.code_quality.iter().enumerate() {
            md_item(&mut out, i + 1, f, &b, true);
        }
    } else {
        let rows: Vec<&Finding> = r.code_quality.iter().collect();
        md_table(&mut out, &rows, &b);
    }
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
        let covers = if t.covers.is_empty() {
            String::new()
        } else {
            let names: Vec<String> = t
                .covers
                .iter()
                .take(b.names)
                .map(|c| format!("`{c}`"))
                .collect();
            let more = t.covers.len().saturating_sub(b.names);
            let tail = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            if t.target.contains(' ') {
                format!(": {}{tail}", names.join(", "))
            } else {
                format!("; the same tests for {}{tail}", names.join(", "))
            }
        };
        let target = if t.target.contains(' ') {
            t.target.clone()
        } else {
            format!("`{}`", t.target)
        };
        let _ = writeln!(out, "- **{target}** ({}, {}{covers}):", t.kind, t.location);
        for test in &t.tests {
            let _ = writeln!(out, "  - {test}");
        }
    }
    if !r.testing.is_empty() {
        out.push('\n');
    }
    if !r.errors.is_empty() {
        let _ = writeln!(out, "## Files not fully reviewed\n");
        for e in r.errors.iter().take(b.names.max(10)) {
            let _ = writeln!(out, "- {e}");
        }
        let more = r.errors.len().saturating_sub(b.names.max(10));
        if more > 0 {
            let _ = writeln!(out, "- and {more} more");
        }
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// The review as JSON (the same sections as data; every grouped item with its places).
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

fn html_item(out: &mut String, n: usize, f: &Finding, b: &Budget) {
    let _ = writeln!(
        out,
        "<div class=\"finding {sev}\"><h3>{n}. {} <span class=\"rule\"><code>{}</code> {}</span> <span class=\"sev\">{}</span></h3>",
        prose(&f.title),
        esc(&f.rule),
        esc(&f.code),
        esc(&label(f)),
        sev = f.severity
    );
    let _ = writeln!(
        out,
        "<p><b>Where:</b> {}</p>",
        prose(&compact_places(&f.locations, b.places))
    );
    let _ = writeln!(out, "<p><b>Finding:</b> {}</p>", prose(&f.message));
    if let Some(why) = &f.why {
        let _ = writeln!(out, "<p><b>What happens:</b> {}</p>", prose(why));
    }
    if let Some(note) = &f.note {
        let _ = writeln!(out, "<p><b>Project:</b> {}</p>", prose(note));
    }
    if let Some(fix) = &f.fix {
        let how = if fix.origin == "fix" {
            prose(&fix.description)
        } else {
            "as in the rule's documentation".to_string()
        };
        let _ = writeln!(out, "<p><b>Fix:</b> {how}</p>");
        let _ = writeln!(
            out,
            "<div class=\"diff\"><pre class=\"before\">{}</pre><pre class=\"after\">{}</pre></div>",
            esc(&clip_lines(&fix.before, b.snippet_lines)),
            esc(&clip_lines(&fix.after, b.snippet_lines))
        );
    }
    out.push_str("</div>\n");
}

fn html_table(out: &mut String, rows: &[&Finding], b: &Budget) {
    if rows.is_empty() {
        return;
    }
    out.push_str(
        "<table><tr><th>Rule</th><th>Severity</th><th>Places</th><th>What to do</th></tr>\n",
    );
    for f in rows {
        let sev = table_severity(f);
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code> {}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&f.rule),
            esc(&f.code),
            esc(&sev),
            prose(&compact_places(&f.locations, b.places.min(2))),
            prose(&f.title)
        );
    }
    out.push_str("</table>\n");
}

const CSS: &str = "body{font-family:system-ui,sans-serif;max-width:62rem;margin:2rem auto;padding:0 1rem;color:#222;line-height:1.45}\
h2{border-bottom:2px solid #ddd;padding-bottom:.2rem;margin-top:2rem}h3{font-size:1.05rem;margin:.3rem 0}\
.verdict{font-size:1.1rem;padding:.6rem .8rem;border-radius:4px}.verdict.not-ready{background:#fde7ea}.verdict.ready-after-fixes{background:#fff4e0}.verdict.good{background:#e6f4ea}\
table{border-collapse:collapse;width:100%;margin:.5rem 0}td,th{border:1px solid #ccc;padding:.3rem;vertical-align:top;text-align:left;overflow-wrap:anywhere}\
.pass,.fail,.not-applicable,.not-shown{white-space:nowrap}.pass{color:#176f2c}.fail{color:#b00020;font-weight:bold}.not-applicable,.not-shown{color:#777}\
.finding{border-left:4px solid #999;padding:.2rem .8rem;margin:1rem 0;break-inside:avoid}\
.finding.critical{border-color:#b00020}.finding.warning{border-color:#c77700}.finding.info{border-color:#1565c0}\
.finding p{margin:.3rem 0}.sev{font-size:.8rem;color:#555;font-weight:normal}.rule{font-weight:normal;font-size:.9rem}\
pre{background:#f6f6f6;padding:.5rem;overflow-x:auto;white-space:pre-wrap;margin:.3rem 0}\
.diff{display:grid;grid-template-columns:1fr 1fr;gap:.5rem}@media (max-width:40rem){.diff{grid-template-columns:1fr}}\
pre.before{border-left:3px solid #b00020}pre.after{border-left:3px solid #176f2c}\
.none{color:#555;font-style:italic}@media print{body{margin:0;max-width:none;font-size:10pt}a{color:inherit}.diff{grid-template-columns:1fr 1fr}}";

/// The review as one self-contained HTML page (inline CSS, printable), with the structure
/// of the Markdown review.
pub fn render_html(r: &Review) -> String {
    let b = budget(r);
    let mut out = String::new();
    let title = format!("torchvet review: {}", r.paths.join(", "));
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{t}</title><style>{CSS}</style></head><body>\n<h1>{t}</h1>",
        t = esc(&title)
    );
    let s = &r.summary;
    let _ = writeln!(out, "<h2>{}</h2>", SECTIONS[0]);
    let _ = writeln!(
        out,
        "<p class=\"verdict {}\"><b>Verdict:</b> {}</p>",
        s.verdict_level,
        prose(&s.verdict)
    );
    let _ = writeln!(out, "<p>{}</p>", prose(&s.description));
    if let Some(t) = &s.torch_requirement {
        let _ = writeln!(
            out,
            "<p>Declared torch requirement: <code>{}</code></p>",
            esc(t)
        );
    }
    let groups =
        r.critical.len() + r.performance.len() + r.best_practices.len() + r.code_quality.len();
    let _ = writeln!(
        out,
        "<p>Findings: {} critical, {} warnings, {} advice, grouped into {} items by rule and cause.</p>",
        s.counts.critical, s.counts.warning, s.counts.info, groups
    );
    out.push_str("<ul>\n");
    for d in &s.duplicates {
        let also: Vec<String> = d
            .also_in
            .iter()
            .map(|a| format!("<code>{}</code>", esc(a)))
            .collect();
        let _ = writeln!(
            out,
            "<li>Identical copies reviewed once: <code>{}</code> (also in: {})</li>",
            esc(&d.reviewed),
            also.join(", ")
        );
    }
    for (name, items) in [
        ("Models", &s.models),
        ("Training loops", &s.training_loops),
        ("Evaluation", &s.evaluation),
        ("Data loaders", &s.data_loaders),
    ] {
        if items.is_empty() {
            continue;
        }
        let v: Vec<String> = items
            .iter()
            .take(b.names)
            .map(|i| format!("<code>{}</code> ({})", esc(&i.name), esc(&i.location)))
            .collect();
        let more = items.len().saturating_sub(b.names);
        let tail = if more > 0 {
            format!(", and {more} more")
        } else {
            String::new()
        };
        let _ = writeln!(out, "<li>{name}: {}{tail}</li>", v.join(", "));
    }
    out.push_str("</ul>\n<h3>Expert checklist</h3>\n");
    out.push_str("<table><tr><th>Check</th><th>Result</th><th>Why</th><th>Evidence</th></tr>\n");
    for c in &s.checklist {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"{st}\">{st}</td><td>{}</td><td>{}</td></tr>",
            prose(c.title),
            prose(&c.note),
            prose(&check_evidence(c, 2)),
            st = c.status.as_str()
        );
    }
    out.push_str("</table>\n");
    let _ = writeln!(out, "<h2>{}</h2>", SECTIONS[1]);
    if r.critical.is_empty() {
        out.push_str("<p class=\"none\">No critical issues found.</p>\n");
    } else {
        out.push_str("<p>Ranked by impact: bugs that change results first, then code execution by exposure, then code that breaks on the target torch.</p>\n");
        let (items, rows) = split(&r.critical, b.critical_items, false);
        for (i, f) in items.iter().enumerate() {
            html_item(&mut out, i + 1, f, &b);
        }
        html_table(&mut out, &rows, &b);
    }
    for (list, title, empty) in [
        (&r.performance, SECTIONS[2], "No performance issues found."),
        (
            &r.best_practices,
            SECTIONS[3],
            "No best-practice issues found.",
        ),
    ] {
        let _ = writeln!(out, "<h2>{title}</h2>");
        if list.is_empty() {
            let _ = writeln!(out, "<p class=\"none\">{empty}</p>");
            continue;
        }
        let (items, rows) = split(list, b.full_items, r.detail == Detail::Default);
        for (i, f) in items.iter().enumerate() {
            html_item(&mut out, i + 1, f, &b);
        }
        html_table(&mut out, &rows, &b);
    }
    let _ = writeln!(out, "<h2>{}</h2>", SECTIONS[4]);
    if r.code_quality.is_empty() {
        out.push_str("<p class=\"none\">No code-quality issues found.</p>\n");
    } else if r.detail == Detail::Full {
        for (i, f) in r.code_quality.iter().enumerate() {
            html_item(&mut out, i + 1, f, &b);
        }
    } else {
        let rows: Vec<&Finding> = r.code_quality.iter().collect();
        html_table(&mut out, &rows, &b);
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
                prose(p.title),
                prose(p.detail),
                ev.join(", ")
            );
        }
        out.push_str("</ul>\n");
    }
    let _ = writeln!(out, "<h2>{}</h2>", SECTIONS[6]);
    if r.testing.is_empty() {
        out.push_str("<p class=\"none\">No modules or loops found to test.</p>\n");
    } else {
        out.push_str("<ul>\n");
        for t in &r.testing {
            let covers = if t.covers.is_empty() {
                String::new()
            } else {
                format!("; the same tests for {}", esc(&t.covers.join(", ")))
            };
            let _ = writeln!(
                out,
                "<li><b><code>{}</code></b> ({}, {}{covers}):<ul>",
                esc(&t.target),
                esc(t.kind),
                esc(&t.location)
            );
            for test in &t.tests {
                let _ = writeln!(out, "<li>{}</li>", prose(test));
            }
            out.push_str("</ul></li>\n");
        }
        out.push_str("</ul>\n");
    }
    if !r.errors.is_empty() {
        out.push_str("<h2>Files not fully reviewed</h2><ul>\n");
        for e in &r.errors {
            let _ = writeln!(out, "<li>{}</li>", esc(e));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backtick_spans_become_code_and_html_is_escaped() {
        assert_eq!(prose("use `a<b` now"), "use <code>a&lt;b</code> now");
        assert_eq!(prose("odd ` tick"), "odd ` tick");
        assert_eq!(prose("plain"), "plain");
    }

    fn place(file: &str, cell: Option<usize>, line: usize) -> Place {
        Place {
            file: file.into(),
            cell,
            line,
            column: 1,
            scope: None,
            message: String::new(),
        }
    }

    #[test]
    fn places_are_listed_compactly() {
        let p = vec![
            place("a.ipynb", Some(3), 4),
            place("a.ipynb", Some(5), 2),
            place("b.ipynb", Some(1), 1),
            place("c.ipynb", Some(2), 9),
        ];
        assert_eq!(
            compact_places(&p, 3),
            "4 places in 3 notebooks: `a.ipynb` cell 3:4, cell 5:2; `b.ipynb` cell 1:1 (+1 more)"
        );
        let p = vec![place("t.py", None, 3), place("t.py", None, 9)];
        assert_eq!(compact_places(&p, 6), "2 places in 1 file: `t.py:3, 9`");
        assert_eq!(compact_places(&p[..1], 6), "`t.py:3`");
    }
}

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use torchvet_review::{
    render_html, render_json, render_markdown, review, review_with, CheckStatus, Detail,
    ReviewError, SECTIONS,
};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// Remove the absolute workspace prefix so snapshots do not depend on the checkout location.
fn normalise(s: &str) -> String {
    let root = workspace_root();
    s.replace(&format!("{}/", root.display()), "")
}

fn demo() -> torchvet_review::Review {
    review(&[workspace_root().join("examples/demo_project")]).expect("review")
}

fn fixture(name: &str) -> torchvet_review::Review {
    review(&[workspace_root().join("resources/test/review").join(name)]).expect("review")
}

fn project(name: &str) -> torchvet_review::Review {
    review(&[workspace_root().join("resources/test/projects").join(name)]).expect("review")
}

/// The rules named in one section of a Markdown review (item headings and table rows), each
/// with its root cause: an item is one rule and root cause (for loads, the exposure the
/// heading states after the code, `(critical, path from outside the project)`), so one rule
/// may head two items of a section only with two different causes.
fn rules_per_section(md: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in md.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            out.push((title.to_string(), Vec::new()));
            continue;
        }
        let is_item = line.starts_with("### ") || line.starts_with("| `");
        if let (true, Some((_, rules))) = (is_item, out.last_mut()) {
            // The first `TVnnn` code of the line names its rule.
            if let Some(code) = line.split(|c: char| !c.is_ascii_alphanumeric()).find(|w| {
                w.len() == 5 && w.starts_with("TV") && w[2..].bytes().all(|b| b.is_ascii_digit())
            }) {
                let cause = line
                    .split_once(code)
                    .map_or("", |(_, rest)| rest.trim())
                    .trim_end_matches(|c: char| c == '|' || c.is_whitespace());
                rules.push(if line.starts_with("### ") {
                    format!("{code} {cause}")
                } else {
                    code.to_string()
                });
            }
        }
    }
    out
}

/// The reading budget and the grouping promise, for one review.
fn assert_budget(name: &str, md: &str, max_lines: usize) {
    let lines = md.lines().count();
    assert!(lines <= max_lines, "{name}: {lines} lines > {max_lines}");
    for (section, rules) in rules_per_section(md) {
        let unique: BTreeSet<&String> = rules.iter().collect();
        assert_eq!(
            unique.len(),
            rules.len(),
            "{name}: a rule is repeated in section {section}: {rules:?}"
        );
    }
}

const PROJECTS: &[&str] = &[
    "clean_trainer_resume",
    "clean_notebook_ipython",
    "resume_checkpoint_helper",
    "eval_loader_shuffled_factory",
    "gan_step_functions",
    "whole_model_save_predict",
    "notebook_nested_eval",
    "multi_optimizer_trainer",
];

#[test]
fn project_reviews() {
    for name in PROJECTS {
        let md = normalise(&render_markdown(&project(name)));
        assert_budget(name, &md, 250);
        insta::assert_snapshot!(format!("project_{name}"), md);
    }
}

#[test]
fn every_project_review_keeps_the_budget() {
    let dir = workspace_root().join("resources/test/projects");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("projects")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    names.sort();
    assert!(names.len() >= 40, "{}", names.len());
    for p in names {
        let r = review(std::slice::from_ref(&p)).expect("review");
        let md = render_markdown(&r);
        assert_budget(&p.display().to_string(), &md, 250);
        // Clean projects are correct code: an honest "Good".
        let clean = p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("clean_"));
        if clean {
            assert_eq!(
                r.summary.verdict_level,
                "good",
                "{}: {}",
                p.display(),
                r.summary.verdict
            );
            assert!(r.critical.is_empty(), "{}", p.display());
        }
        // A fail row always links to findings; a pass row always shows what passed.
        for c in &r.summary.checklist {
            match c.status {
                CheckStatus::Fail => assert!(!c.findings.is_empty(), "{}: {}", p.display(), c.id),
                CheckStatus::Pass => assert!(!c.evidence.is_empty(), "{}: {}", p.display(), c.id),
                _ => {}
            }
        }
    }
}

#[test]
fn demo_markdown() {
    let md = normalise(&render_markdown(&demo()));
    assert_budget("demo", &md, 250);
    insta::assert_snapshot!(md);
}

#[test]
fn demo_json() {
    let text = serde_json::to_string_pretty(&render_json(&demo())).expect("json");
    let value: serde_json::Value = serde_json::from_str(&normalise(&text)).expect("json");
    // Every grouped item carries its places.
    for section in ["critical", "performance", "best_practices", "code_quality"] {
        for item in value[section].as_array().expect("section") {
            let locs = item["locations"].as_array().expect("locations");
            assert!(!locs.is_empty());
            assert!(locs
                .iter()
                .all(|l| l["line"].as_u64().is_some_and(|n| n > 0)));
        }
    }
    insta::assert_json_snapshot!(value);
}

#[test]
fn sections_appear_in_order() {
    let md = render_markdown(&demo());
    let mut last = 0;
    for s in SECTIONS {
        let pos = md[last..]
            .find(&format!("\n## {s}\n"))
            .unwrap_or_else(|| panic!("section {s} missing or out of order"));
        last += pos + 1;
    }
    let html = render_html(&demo());
    let mut last = 0;
    for s in SECTIONS {
        let pos = html[last..]
            .find(&format!("<h2>{s}</h2>"))
            .unwrap_or_else(|| panic!("html section {s} missing or out of order"));
        last += pos + 1;
    }
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(!html.contains("<link") && !html.contains("<script"));
    // The same items in both documents.
    let r = demo();
    for f in r
        .critical
        .iter()
        .chain(&r.performance)
        .chain(&r.best_practices)
    {
        assert!(
            html.contains(&format!("<code>{}</code>", f.rule)),
            "{}",
            f.rule
        );
        assert!(md.contains(&format!("`{}`", f.rule)), "{}", f.rule);
    }
}

#[test]
fn demo_is_ranked_by_impact() {
    let r = demo();
    assert!(!r.critical.is_empty());
    for w in r.critical.windows(2) {
        assert!(
            w[0].impact <= w[1].impact,
            "{} before {}",
            w[0].rule,
            w[1].rule
        );
    }
    // One item per rule and cause.
    let mut seen = BTreeSet::new();
    for f in r
        .critical
        .iter()
        .chain(&r.performance)
        .chain(&r.best_practices)
        .chain(&r.code_quality)
    {
        assert!(
            seen.insert((f.code.clone(), f.severity, f.exposure)),
            "{}",
            f.rule
        );
        assert!(f.locations.iter().all(|l| l.line > 0));
    }
}

#[test]
fn full_detail_lists_every_place() {
    let paths = [workspace_root().join("examples/demo_project")];
    let full = review_with(&paths, Detail::Full, &mut |_, _| {}).expect("review");
    let md = render_markdown(&full);
    for f in full.critical.iter().chain(&full.performance) {
        for p in &f.locations {
            let at = match p.cell {
                Some(c) => format!("cell {c}:{}", p.line),
                None => p.line.to_string(),
            };
            assert!(md.contains(&at), "{} {at}", f.rule);
        }
    }
    assert!(md.lines().count() >= render_markdown(&demo()).lines().count());
}

#[test]
fn good_project_is_good_with_positives_and_evidence() {
    let r = fixture("good");
    assert_eq!(r.summary.verdict_level, "good", "{}", r.summary.verdict);
    let ids: Vec<&str> = r.positive.iter().map(|p| p.id).collect();
    for id in [
        "zero-grad-set-to-none",
        "eval-no-grad",
        "unscale-before-clip",
        "weights-only",
        "seeds",
        "pin-memory-non-blocking",
        "state-dict-checkpoints",
    ] {
        assert!(ids.contains(&id), "missing positive {id}: {ids:?}");
    }
    assert!(r.positive.iter().all(|p| !p.evidence.is_empty()));
    let checks: Vec<(&str, &str)> = r
        .summary
        .checklist
        .iter()
        .map(|c| (c.id, c.status.as_str()))
        .collect();
    insta::assert_debug_snapshot!(checks);
}

#[test]
fn identical_copies_are_reviewed_once() {
    let dir = std::env::temp_dir().join(format!("torchvet-review-dup-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let src = workspace_root().join("resources/test/review/notebook/explore.ipynb");
    for sub in ["a", "b", "c"] {
        std::fs::create_dir_all(dir.join(sub)).expect("dir");
        std::fs::copy(&src, dir.join(sub).join("explore.ipynb")).expect("copy");
    }
    let r = review(std::slice::from_ref(&dir)).expect("review");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(r.summary.files, 1);
    assert_eq!(r.summary.duplicates.len(), 1);
    assert_eq!(r.summary.duplicates[0].reviewed, "a/explore.ipynb");
    assert_eq!(
        r.summary.duplicates[0].also_in,
        ["b/explore.ipynb", "c/explore.ipynb"]
    );
    for f in r.critical.iter().chain(&r.performance) {
        assert!(f.locations.iter().all(|l| l.file == "a/explore.ipynb"));
    }
    assert!(render_markdown(&r).contains("also in: `b/explore.ipynb`, `c/explore.ipynb`"));
}

#[test]
fn empty_sections_say_so() {
    let r = fixture("clean");
    let md = render_markdown(&r);
    assert!(md.contains("No critical issues found."), "{md}");
    assert!(md.contains("No modules or loops found to test."), "{md}");
}

#[test]
fn errors() {
    assert!(matches!(review(&[]), Err(ReviewError::NoPaths)));
    assert!(matches!(
        review(&[PathBuf::from("/nonexistent/torchvet/review")]),
        Err(ReviewError::NotFound(_))
    ));
    let dir = workspace_root().join("resources/test/review/no_python");
    assert!(matches!(review(&[dir]), Err(ReviewError::NoPythonFiles)));
}

#[test]
fn notebook_locations_name_the_cell() {
    let r = fixture("notebook");
    let load = r
        .critical
        .iter()
        .find(|f| f.rule == "torch-load-without-weights-only")
        .expect("torch.load finding");
    assert_eq!(load.locations[0].cell, Some(3));
    assert_eq!(load.locations[0].line, 10);
    assert_eq!(load.location(), "explore.ipynb:cell 3:10");
    let tiny = r
        .summary
        .models
        .iter()
        .find(|m| m.name == "Tiny")
        .expect("Tiny");
    assert_eq!(tiny.location, "explore.ipynb:cell 3:1");
}

#[test]
fn cli_args_parse() {
    use clap::Parser;
    use torchvet_review::cli::{ReviewArgs, ReviewFormat};
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ReviewArgs,
    }
    let cli = Cli::try_parse_from([
        "review", "a.py", "dir", "--format", "json", "--detail", "full",
    ])
    .expect("parse");
    assert_eq!(
        cli.args.paths,
        vec![PathBuf::from("a.py"), PathBuf::from("dir")]
    );
    assert_eq!(cli.args.format, ReviewFormat::Json);
    assert_eq!(cli.args.detail, Detail::Full);
    let cli = Cli::try_parse_from(["review"]).expect("parse");
    assert_eq!(cli.args.format, ReviewFormat::Markdown);
    assert_eq!(cli.args.detail, Detail::Default);
    let missing = ReviewArgs {
        paths: vec![PathBuf::from("/nonexistent/torchvet/review")],
        format: ReviewFormat::Markdown,
        detail: Detail::Default,
    };
    assert_eq!(torchvet_review::cli::run(&missing), 2);
}

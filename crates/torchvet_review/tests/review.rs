use std::path::{Path, PathBuf};
use torchvet_review::{render_html, render_json, render_markdown, review, ReviewError, SECTIONS};

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

#[test]
fn demo_markdown() {
    insta::assert_snapshot!(normalise(&render_markdown(&demo())));
}

#[test]
fn demo_json() {
    let text = serde_json::to_string_pretty(&render_json(&demo())).expect("json");
    let value: serde_json::Value = serde_json::from_str(&normalise(&text)).expect("json");
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
}

#[test]
fn demo_findings_sorted_and_located() {
    let r = demo();
    assert!(!r.critical.is_empty());
    for list in [
        &r.critical,
        &r.performance,
        &r.best_practices,
        &r.code_quality,
    ] {
        for w in list.windows(2) {
            let a = (
                std::cmp::Reverse(w[0].severity),
                &w[0].file,
                w[0].line,
                w[0].column,
            );
            let b = (
                std::cmp::Reverse(w[1].severity),
                &w[1].file,
                w[1].line,
                w[1].column,
            );
            assert!(a <= b, "unsorted: {a:?} > {b:?}");
        }
    }
    assert!(r
        .critical
        .iter()
        .all(|f| f.line > 0 && f.file.ends_with(".py")));
    let classifier = r
        .testing
        .iter()
        .find(|t| t.target == "Classifier")
        .expect("Classifier tests");
    assert!(classifier.tests[0]
        .contains("Classifier(in_features=784, hidden=128, classes=10, depth=3)"));
}

#[test]
fn good_project_has_positives_with_evidence() {
    let r = fixture("good");
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
    assert_eq!(load.cell, Some(3));
    assert_eq!(load.line, 10);
    assert!(
        load.location().ends_with("explore.ipynb:cell 3:10"),
        "{}",
        load.location()
    );
    let tiny = r
        .summary
        .models
        .iter()
        .find(|m| m.name == "Tiny")
        .expect("Tiny");
    assert!(
        tiny.location.ends_with("explore.ipynb:cell 3:1"),
        "{}",
        tiny.location
    );
    let hint = r
        .code_quality
        .iter()
        .find(|f| f.rule == "forward-type-hints")
        .expect("hint");
    assert_eq!((hint.cell, hint.line), (Some(3), 6));
    assert_eq!(hint.scope.as_deref(), Some("Tiny.forward"));
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
    let cli = Cli::try_parse_from(["review", "a.py", "dir", "--format", "json"]).expect("parse");
    assert_eq!(
        cli.args.paths,
        vec![PathBuf::from("a.py"), PathBuf::from("dir")]
    );
    assert_eq!(cli.args.format, ReviewFormat::Json);
    let cli = Cli::try_parse_from(["review"]).expect("parse");
    assert_eq!(cli.args.format, ReviewFormat::Markdown);
    let missing = ReviewArgs {
        paths: vec![PathBuf::from("/nonexistent/torchvet/review")],
        format: ReviewFormat::Markdown,
    };
    assert_eq!(torchvet_review::cli::run(&missing), 2);
}

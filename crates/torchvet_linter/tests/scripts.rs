//! Whole training scripts, written in the styles real projects use (aliases, helper
//! functions, trainer classes, accumulation, AMP, DDP, GANs, RNNs, LBFGS, notebooks), run with
//! every rule on (preview included). The warning and critical findings must be exactly the
//! ones marked on their lines with `# expect: <rule-name>[, <rule-name>...]`: idiomatic code
//! stays silent across all rules together, not only under the rule a fixture was written for.
use std::collections::BTreeSet;
use std::path::PathBuf;
use torchvet_diagnostics::Severity;
use torchvet_linter::settings::LintSettings;
use torchvet_linter::Linter;
use torchvet_python::SourceFile;

fn scripts_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../resources/test/scripts")
}

/// (1-based line, rule name) pairs marked in the text.
fn expected(text: &str) -> BTreeSet<(usize, String)> {
    let mut out = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        if let Some((_, names)) = line.split_once("# expect: ") {
            for name in names.split(',') {
                let name = name.split_whitespace().next().unwrap_or("");
                if !name.is_empty() {
                    out.insert((i + 1, name.to_string()));
                }
            }
        }
    }
    out
}

#[test]
fn training_scripts_get_exactly_their_marked_findings() {
    let all = vec!["ALL".to_string()];
    let settings =
        LintSettings::from_selectors(Some(&all), &[], &[], true).expect("ALL is a valid selector");
    let linter = Linter::new(settings);
    let mut entries: Vec<PathBuf> = std::fs::read_dir(scripts_dir())
        .expect("resources/test/scripts exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "py" || x == "ipynb"))
        .collect();
    entries.sort();
    assert!(
        entries.len() >= 8,
        "expected the committed training scripts"
    );
    let mut failures = Vec::new();
    for path in entries {
        let source = SourceFile::load(&path).expect("script loads");
        let display = path.file_name().unwrap_or_default().to_string_lossy();
        let actual: BTreeSet<(usize, String)> = linter
            .lint(&source, &display)
            .into_iter()
            .filter(|d| matches!(d.severity, Severity::Warning | Severity::Critical))
            .map(|d| (d.location.row, d.name.to_string()))
            .collect();
        // Notebooks mark lines in the cell sources; compare rows within cells there.
        let want = match &source.kind {
            torchvet_python::SourceKind::Notebook(_) => {
                let mut set = BTreeSet::new();
                let json: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&path).expect("read notebook"))
                        .expect("notebook is JSON");
                for cell in json["cells"].as_array().into_iter().flatten() {
                    let src: String = match &cell["source"] {
                        serde_json::Value::Array(lines) => {
                            lines.iter().filter_map(|l| l.as_str()).collect()
                        }
                        serde_json::Value::String(s) => s.clone(),
                        _ => String::new(),
                    };
                    set.extend(expected(&src));
                }
                set
            }
            _ => expected(&source.text),
        };
        let missing: Vec<_> = want.difference(&actual).collect();
        let extra: Vec<_> = actual.difference(&want).collect();
        if !missing.is_empty() || !extra.is_empty() {
            failures.push(format!(
                "{display}: missing {missing:?}, unexpected {extra:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

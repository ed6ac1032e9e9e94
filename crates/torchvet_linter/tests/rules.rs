//! Every rule: docs complete, fixture present, findings exactly on the marked lines,
//! look-alikes silent, and a snapshot of the rendered output.
use std::path::PathBuf;
use torchvet_linter::all_rules;
use torchvet_linter::test_support::{check_docs, run_fix, run_fixture};

fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../resources/test/fixtures")
}

#[test]
fn every_rule_has_complete_docs() {
    let errors: Vec<String> = all_rules()
        .iter()
        .filter_map(|r| check_docs(r).err())
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn names_and_codes_are_unique() {
    let rules = all_rules();
    let mut names: Vec<&str> = rules.iter().map(|r| r.name).collect();
    let mut codes: Vec<&str> = rules.iter().map(|r| r.code).collect();
    names.sort_unstable();
    codes.sort_unstable();
    let n = names.len();
    names.dedup();
    codes.dedup();
    assert_eq!(names.len(), n, "duplicate rule names");
    assert_eq!(codes.len(), n, "duplicate rule codes");
}

#[test]
fn every_rule_fires_on_its_fixture_and_stays_silent_on_look_alikes() {
    let mut failures = Vec::new();
    for rule in all_rules() {
        let group = rule.group.as_str();
        if rule.group == torchvet_linter::Group::Checkpoint {
            // Checkpoint files are tested through the binary (crates/torchvet/tests/cli.rs).
            continue;
        }
        let mut found = false;
        for ext in ["py", "ipynb"] {
            let path = fixtures_dir()
                .join(group)
                .join(format!("{}.{ext}", rule.name));
            if !path.exists() {
                continue;
            }
            found = true;
            let display = format!("{group}/{}.{ext}", rule.name);
            let run = match run_fixture(rule, &path, &display) {
                Ok(run) => run,
                Err(e) => {
                    failures.push(e);
                    continue;
                }
            };
            if run.expected_lines.is_empty() {
                failures.push(format!(
                    "{display}: no `# expect: {}` line (a fixture must show the rule firing)",
                    rule.name
                ));
            }
            if run.ok_markers == 0 {
                failures.push(format!(
                    "{display}: no `# ok` look-alike that must stay silent"
                ));
            }
            let missing: Vec<_> = run
                .expected_lines
                .difference(&run.actual_lines)
                .map(|l| l + 1)
                .collect();
            let extra: Vec<_> = run
                .actual_lines
                .difference(&run.expected_lines)
                .map(|l| l + 1)
                .collect();
            if !missing.is_empty() {
                failures.push(format!(
                    "{display}: expected a finding on lines {missing:?} but got none"
                ));
            }
            if !extra.is_empty() {
                failures.push(format!(
                    "{display}: unexpected findings on lines {extra:?}:\n{}",
                    run.rendered
                ));
            }
            let snapshot_name = format!("{}__{}", rule.name, ext);
            insta::with_settings!({
                snapshot_path => "snapshots",
                prepend_module_to_snapshot => false,
                omit_expression => true,
            }, {
                insta::assert_snapshot!(snapshot_name, run.rendered);
            });
        }
        if !found {
            failures.push(format!(
                "{}: no fixture at resources/test/fixtures/{group}/{}.py",
                rule.name, rule.name
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} problem(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every rule with fixes: the fixture's fixes (safe and unsafe) as a diff snapshot, the result
/// parses, nothing is dropped, and a second pass changes nothing (convergence).
#[test]
fn every_fix_parses_converges_and_is_snapshotted() {
    let mut failures = Vec::new();
    for rule in all_rules() {
        let group = rule.group.as_str();
        let path = fixtures_dir().join(group).join(format!("{}.py", rule.name));
        if !path.exists() {
            continue;
        }
        let display = format!("{group}/{}.py", rule.name);
        match run_fix(rule, &path, &display) {
            Err(e) => failures.push(e),
            Ok(None) => {}
            Ok(Some(run)) => {
                if !run.parses {
                    failures.push(format!("{display}: the fixed file does not parse"));
                }
                if run.dropped > 0 {
                    failures.push(format!(
                        "{display}: {} fix(es) dropped because the result did not parse",
                        run.dropped
                    ));
                }
                if !run.converged {
                    failures.push(format!(
                        "{display}: a second --fix pass still changes the file"
                    ));
                }
                insta::with_settings!({
                    snapshot_path => "snapshots",
                    prepend_module_to_snapshot => false,
                    omit_expression => true,
                }, {
                    insta::assert_snapshot!(format!("{}__fix", rule.name), run.diff);
                });
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} problem(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

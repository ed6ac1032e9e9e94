//! End-to-end tests of the `torchvet` binary: output formats (snapshots), exit codes,
//! configuration errors, and bad input that must never stop the run.
use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_torchvet"));
    c.env("TORCHVET_THREADS", "2");
    c
}

fn cli_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../resources/test/cli")
}

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = bin()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn snapshot(name: &str, value: &str) {
    insta::with_settings!({snapshot_path => "snapshots", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_snapshot!(name, value);
    });
}

#[test]
fn every_output_format() {
    for format in ["full", "concise", "json", "json-lines", "sarif", "github"] {
        let (code, out, err) = run(
            &cli_dir(),
            &["check", "pkg", "--isolated", "--output-format", format],
        );
        assert_eq!(code, 1, "{format}: {err}");
        assert!(err.is_empty(), "{format}: {err}");
        snapshot(&format!("format_{format}"), &out);
    }
}

#[test]
fn json_has_the_documented_fields_and_sarif_the_required_structure() {
    let (_, out, _) = run(
        &cli_dir(),
        &["check", "pkg", "--isolated", "--output-format", "json"],
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let first = &v.as_array().unwrap()[0];
    for key in [
        "code",
        "name",
        "severity",
        "message",
        "filename",
        "location",
        "end_location",
        "fix",
        "url",
        "cell",
    ] {
        assert!(first.get(key).is_some(), "missing {key}");
    }
    let notebook = v
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["filename"].as_str().unwrap().ends_with(".ipynb"))
        .unwrap();
    assert_eq!(notebook["cell"], 3);
    assert_eq!(notebook["location"]["row"], 2);

    let (_, out, _) = run(
        &cli_dir(),
        &["check", "pkg", "--isolated", "--output-format", "sarif"],
    );
    let s: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(s["version"], "2.1.0");
    let run = &s["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "torchvet");
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    for r in run["results"].as_array().unwrap() {
        let idx = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[idx]["id"], r["ruleId"]);
        assert!(["error", "warning", "note"].contains(&r["level"].as_str().unwrap()));
        assert!(r["message"]["text"].is_string());
        let region = &r["locations"][0]["physicalLocation"]["region"];
        assert!(region["startLine"].as_u64().unwrap() >= 1);
    }
}

#[test]
fn output_is_identical_across_runs() {
    let a = run(
        &cli_dir(),
        &["check", "pkg", "--isolated", "--output-format", "concise"],
    );
    for _ in 0..3 {
        assert_eq!(
            a,
            run(
                &cli_dir(),
                &["check", "pkg", "--isolated", "--output-format", "concise"]
            )
        );
    }
}

#[test]
fn exit_codes_and_selection() {
    let dir = cli_dir();
    assert_eq!(run(&dir, &["check", "pkg/clean.py", "--isolated"]).0, 0);
    assert_eq!(
        run(&dir, &["check", "pkg", "--isolated", "--exit-zero"]).0,
        0
    );
    assert_eq!(
        run(&dir, &["check", "pkg", "--isolated", "--ignore", "TOR102"]).0,
        0
    );
    assert_eq!(
        run(
            &dir,
            &["check", "pkg", "--isolated", "--select", "security"]
        )
        .0,
        1
    );
    let (code, _, err) = run(
        &dir,
        &["check", "pkg", "--isolated", "--select", "no-such-rule"],
    );
    assert_eq!(code, 2);
    assert!(err.contains("no-such-rule"), "{err}");
    let (code, out, _) = run(&dir, &["check", "pkg", "--isolated", "--statistics"]);
    assert_eq!(code, 1);
    snapshot("statistics", &out);
}

#[test]
fn configuration_is_discovered_and_validated() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("a.py"), "import torch\ntorch.load('x')\n").unwrap();
    std::fs::write(
        d.path().join("pyproject.toml"),
        "[tool.torchvet]\nignore = ['torch-load-without-weights-only']\n",
    )
    .unwrap();
    assert_eq!(run(d.path(), &["check"]).0, 0);
    std::fs::write(
        d.path().join("pyproject.toml"),
        "[tool.torchvet]\nper-file-ignores = { 'a.py' = ['TV007'] }\n",
    )
    .unwrap();
    assert_eq!(run(d.path(), &["check"]).0, 0);
    std::fs::write(
        d.path().join("pyproject.toml"),
        "[tool.torchvet]\n\nsellect = ['ALL']\n",
    )
    .unwrap();
    let (code, _, err) = run(d.path(), &["check"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("pyproject.toml") && err.contains("sellect") && err.contains("line 3"),
        "{err}"
    );
    std::fs::write(
        d.path().join("pyproject.toml"),
        "[tool.torchvet]\ntarget-torch = 'two'\n",
    )
    .unwrap();
    let (code, _, err) = run(d.path(), &["check"]);
    assert_eq!(code, 2);
    assert!(err.contains("pyproject.toml:2: `target-torch`"), "{err}");
}

#[test]
fn bad_files_give_one_error_line_each_and_never_stop_the_run() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("good.py"), "import torch\ntorch.load('x')\n").unwrap();
    std::fs::write(p.join("latin1.py"), b"x = '\xe9'\n").unwrap();
    std::fs::write(p.join("binary.py"), b"\x7fELF\x00\x00\x01").unwrap();
    std::fs::write(p.join("empty.py"), b"").unwrap();
    std::fs::write(p.join("syntax.py"), "import torch\ndef f(:\n").unwrap();
    std::fs::write(p.join("broken.ipynb"), "{\"cells\": [").unwrap();
    std::fs::write(p.join("notnb.ipynb"), "[1, 2]").unwrap();
    let big = "x = 1\n".repeat(2_000_000);
    std::fs::write(p.join("huge.py"), big).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(p.join("missing.py"), p.join("dangling.py")).unwrap();
    let (code, out, err) = run(
        p,
        &["check", ".", "--isolated", "--output-format", "concise"],
    );
    assert_eq!(code, 2, "I/O errors make the exit code 2");
    assert!(out.contains("good.py:2:1: TV007"), "{out}");
    assert!(out.contains("syntax.py:2:7: TV000"), "{out}");
    let errors: Vec<&str> = err.lines().collect();
    let expect = [
        "binary.py",
        "broken.ipynb",
        "huge.py",
        "latin1.py",
        "notnb.ipynb",
    ];
    for name in expect {
        assert_eq!(
            errors.iter().filter(|l| l.contains(name)).count(),
            1,
            "{name}: {err}"
        );
    }
    #[cfg(unix)]
    assert!(err.contains("dangling.py: broken symbolic link"), "{err}");
    assert!(!err.contains("panic"), "{err}");
}

#[test]
fn rules_and_rule_commands() {
    let (code, out, _) = run(&cli_dir(), &["rules"]);
    assert_eq!(code, 0);
    assert!(out.contains("TV007") && out.contains("torch-load-without-weights-only"));
    let (code, out, _) = run(&cli_dir(), &["rule", "TOR102"]);
    assert_eq!(code, 0);
    assert!(out.contains("## What it does") && out.contains("## References"));
    assert_eq!(run(&cli_dir(), &["rule", "nope"]).0, 2);
}

#[test]
fn check_reports_checkpoint_files_through_the_scanner() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../resources/test/checkpoints");
    let (code, out, err) = run(
        &dir,
        &["check", ".", "--isolated", "--output-format", "json"],
    );
    assert_eq!(code, 1, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let mut by_file = std::collections::BTreeMap::new();
    for d in v.as_array().unwrap() {
        by_file.insert(
            d["filename"].as_str().unwrap().to_string(),
            d["name"].as_str().unwrap().to_string(),
        );
    }
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        // `check` picks checkpoints by extension (`ckpt scan` sniffs every file's content).
        let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
        let checked = [
            "pt",
            "pth",
            "ckpt",
            "bin",
            "pkl",
            "pickle",
            "npy",
            "npz",
            "safetensors",
            "pt2",
        ];
        let expected = if !checked.contains(&ext) {
            continue;
        } else if name == "bad_not_a_checkpoint.bin" {
            None // a `.bin` that is not a checkpoint at all is not reported
        } else if name.starts_with("mal_") {
            Some("checkpoint-dangerous")
        } else if name.starts_with("unsafe_") {
            Some("checkpoint-unsafe")
        } else if name.starts_with("bad_") {
            Some("checkpoint-malformed")
        } else if name.starts_with("benign_") {
            None
        } else {
            continue;
        };
        assert_eq!(by_file.get(&name).map(String::as_str), expected, "{name}");
    }
    // The same files are invisible when the checkpoint group is ignored.
    assert_eq!(
        run(
            &dir,
            &["check", ".", "--isolated", "--ignore", "checkpoint"]
        )
        .0,
        0
    );
}

#[test]
fn fix_rewrites_only_the_edited_notebook_cells_and_converges() {
    let d = tempfile::tempdir().unwrap();
    let nb = d.path().join("nb.ipynb");
    let original = std::fs::read_to_string(cli_dir().join("pkg/explore.ipynb")).unwrap();
    std::fs::write(&nb, &original).unwrap();
    let (code, _, err) = run(
        d.path(),
        &["check", "nb.ipynb", "--isolated", "--fix", "--quiet"],
    );
    assert_eq!(code, 0, "{err}");
    let fixed = std::fs::read_to_string(&nb).unwrap();
    let changed: Vec<(&str, &str)> = original
        .lines()
        .zip(fixed.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(original.lines().count(), fixed.lines().count());
    assert_eq!(
        changed,
        vec![(
            "    \"sd = torch.load('w.pt')\\n\"",
            "    \"sd = torch.load('w.pt', weights_only=True)\\n\""
        )]
    );
    // A second run changes nothing.
    run(
        d.path(),
        &["check", "nb.ipynb", "--isolated", "--fix", "--quiet"],
    );
    assert_eq!(std::fs::read_to_string(&nb).unwrap(), fixed);
}

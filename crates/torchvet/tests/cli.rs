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

/// Run the binary; its result cache goes to a directory of this test process, never into
/// the repository's fixture directories.
fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let cache = std::env::temp_dir().join(format!("torchvet-cli-tests-{}", std::process::id()));
    run_with(bin().env("TORCHVET_CACHE_DIR", cache), dir, args)
}

/// Run the binary with the default cache location.
fn run_cached(dir: &Path, args: &[&str]) -> (i32, String, String) {
    run_with(bin().env_remove("TORCHVET_CACHE_DIR"), dir, args)
}

/// `check . --isolated` through the cache in `dir`: (file name, rule name) of every finding,
/// sorted.
fn cached_file_rules(dir: &Path) -> Vec<(String, String)> {
    let (_, out, err) = run_cached(
        dir,
        &["check", ".", "--isolated", "--output-format", "json"],
    );
    let v: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("json output ({e}): {out}\n{err}"));
    let mut rows: Vec<(String, String)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let file = Path::new(f["filename"].as_str().unwrap());
            let file = file.file_name().unwrap().to_string_lossy().into_owned();
            (file, f["name"].as_str().unwrap().to_string())
        })
        .collect();
    rows.sort();
    rows
}

fn run_with(cmd: &mut std::process::Command, dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = cmd
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
    // A 0-byte notebook is an empty notebook (as Jupyter editors open it), not an error.
    std::fs::write(p.join("placeholder.ipynb"), b"").unwrap();
    let big = "x = 1\n".repeat(2_000_000);
    std::fs::write(p.join("huge.py"), big).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(p.join("missing.py"), p.join("dangling.py")).unwrap();
    let (code, out, err) = run(
        p,
        &[
            "check",
            ".",
            "--isolated",
            "--output-format",
            "concise",
            "--target-torch",
            "2.4",
        ],
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
    assert!(!err.contains("placeholder.ipynb"), "{err}");
    assert!(!err.contains("panic"), "{err}");
}

#[test]
fn a_file_in_its_declared_encoding_is_checked_and_never_rewritten() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    // A course script saved in GBK with its PEP 263 declaration ("# 训练" in GBK on line 2).
    let mut bytes = b"# -*- coding: gbk -*-\n# \xd1\xb5\xc1\xb7\n".to_vec();
    bytes.extend_from_slice(
        b"import torch\n\nloss = torch.zeros(1, requires_grad=True).sum()\nloss.backward(retain_variables=True)\n",
    );
    std::fs::write(p.join("train.py"), &bytes).unwrap();
    let args = [
        "check",
        ".",
        "--isolated",
        "--no-cache",
        "--output-format",
        "concise",
    ];
    let (_, out, err) = run(p, &args);
    assert!(out.contains("train.py:6:15: TV130"), "{out}\n{err}");
    assert!(!err.contains("not valid UTF-8"), "{err}");
    // `--fix` reports the finding and leaves the bytes alone, saying why.
    let mut fix = args.to_vec();
    fix.extend(["--fix", "--unsafe-fixes"]);
    let (_, out, err) = run(p, &fix);
    assert!(out.contains("TV130"), "{out}");
    assert!(
        err.contains("train.py: fixes not written: the file is GBK-encoded"),
        "{err}"
    );
    assert_eq!(std::fs::read(p.join("train.py")).unwrap(), bytes);
    // `--diff` shows the fix (as UTF-8 text) without writing either.
    let mut diff = args.to_vec();
    diff.extend(["--diff", "--unsafe-fixes"]);
    let (_, out, _) = run(p, &diff);
    assert!(out.contains("+loss.backward(retain_graph=True)"), "{out}");
    assert_eq!(std::fs::read(p.join("train.py")).unwrap(), bytes);
}

#[test]
fn a_zero_byte_notebook_is_checked_as_an_empty_notebook() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("train.py"),
        "import torch
x = torch.ones(2)
",
    )
    .unwrap();
    std::fs::write(p.join("placeholder.ipynb"), b"").unwrap();
    let (code, out, err) = run(
        p,
        &["check", ".", "--isolated", "--output-format", "concise"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.is_empty(), "{err}");
    let (code, out, err) = run(
        p,
        &[
            "check",
            ".",
            "--isolated",
            "--fix",
            "--output-format",
            "concise",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(std::fs::read(p.join("placeholder.ipynb")).unwrap(), b"");
}

/// Cookiecutter / Jinja templates become Python only when rendered: a template that does not
/// parse is skipped, while a broken Python file next to it is still reported.
#[test]
fn project_templates_are_not_syntax_errors() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let tpl = p.join("templates").join("{{cookiecutter.project_slug}}");
    std::fs::create_dir_all(&tpl).unwrap();
    std::fs::write(
        tpl.join("train_{{cookiecutter.model_name}}.py"),
        "import torch

class {{cookiecutter.model_class}}(torch.nn.Module):
    pass
",
    )
    .unwrap();
    std::fs::write(
        p.join("configure.py"),
        "import torch
{% if cookiecutter.use_amp == 'y' %}
scaler = torch.amp.GradScaler()
{% endif %}
",
    )
    .unwrap();
    std::fs::write(
        p.join("settings.py"),
        "import torch
LR = {{ cookiecutter.learning_rate }}
",
    )
    .unwrap();
    std::fs::write(
        p.join("broken.py"),
        "import torch
def f(:
",
    )
    .unwrap();
    // A Python file that merely mentions template syntax in a string still parses and is linted.
    std::fs::write(
        p.join("render.py"),
        "import torch
TEMPLATE = '{% for x in xs %}{{ x }}{% endfor %}'
torch.load('w.pt')
",
    )
    .unwrap();
    let (_, out, err) = run(
        p,
        &[
            "check",
            ".",
            "--isolated",
            "--output-format",
            "concise",
            "--target-torch",
            "2.4",
        ],
    );
    assert!(out.contains("broken.py:2:7: TV000"), "{out}");
    assert!(out.contains("render.py:3:1: TV007"), "{out}");
    assert_eq!(out.matches("TV000").count(), 1, "{out}");
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
    // A NumPy object array's trust switch is NumPy's own, not torch's.
    let npy = v
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["filename"] == "unsafe_object_array.npy")
        .expect("the object array is reported");
    let message = npy["message"].as_str().unwrap();
    assert!(
        message.contains("allow_pickle=True") && !message.contains("weights_only"),
        "{message}"
    );
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
    // torch 2.5: a bare load still unpickles; the notebook saves nothing, so adding
    // `weights_only=True` is an unsafe fix.
    let args = [
        "check",
        "nb.ipynb",
        "--isolated",
        "--fix",
        "--unsafe-fixes",
        "--quiet",
        "--target-torch",
        "2.5",
    ];
    let (code, _, err) = run(d.path(), &args);
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
    run(d.path(), &args);
    assert_eq!(std::fs::read_to_string(&nb).unwrap(), fixed);
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// A fix that writes an API of a newer release is safe only when no dependency file of the
/// project allows an older one, wherever the file sits: the `torch==1.4.0` pins of
/// `installation/` and `docker/` (no parent of `lib/`) keep `--fix` from writing torchvision's
/// `weights=`, which raises `TypeError` there; `--unsafe-fixes` writes it.
#[test]
fn fixes_that_need_a_newer_torch_than_a_pin_anywhere_in_the_project_are_unsafe() {
    for with_git in [true, false] {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("repo");
        std::fs::create_dir(&root).unwrap();
        if with_git {
            std::fs::create_dir(root.join(".git")).unwrap();
        }
        let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../resources/test/fix-projects/pins_outside_the_tree");
        copy_tree(&src, &root);
        let file = root.join("lib/medzoo/covidnet.py");
        let before = std::fs::read_to_string(&file).unwrap();
        // Without a repository, the checked directory is the project.
        let (code, out, err) = run(
            d.path(),
            &[
                "check",
                "repo",
                "--isolated",
                "--no-cache",
                "--fix",
                "--output-format",
                "concise",
            ],
        );
        assert!(code == 0 || code == 1, "{out}\n{err}");
        assert!(out.contains("TV086"), "{out}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), before, "{out}");
        let (_, out, err) = run(
            d.path(),
            &[
                "check",
                "repo",
                "--isolated",
                "--no-cache",
                "--fix",
                "--unsafe-fixes",
                "--output-format",
                "concise",
            ],
        );
        let after = std::fs::read_to_string(&file).unwrap();
        assert!(
            after.contains("weights=models.ResNet18_Weights.IMAGENET1K_V1"),
            "{out}\n{err}\n{after}"
        );
    }
}

/// A project that states its supported torch only in its README ("PyTorch 1.7.0+") runs on
/// a torch without `torch.amp.autocast` (1.10): `--fix` leaves `torch.cuda.amp.autocast()`
/// alone and still reports it, `--unsafe-fixes` rewrites it. The README is what decides:
/// without it the same fix is safe.
#[test]
fn fixes_that_need_a_newer_torch_than_the_readme_states_are_unsafe() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("repo");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../resources/test/fix-projects/documented_torch_only");
    copy_tree(&src, &root);
    let file = root.join("train.py");
    let before = std::fs::read_to_string(&file).unwrap();
    let fix = |extra: &[&str]| {
        let mut args = vec![
            "check",
            ".",
            "--isolated",
            "--no-cache",
            "--select",
            "deprecated-cuda-amp-autocast",
            "--fix",
            "--output-format",
            "concise",
        ];
        args.extend_from_slice(extra);
        let (code, out, err) = run(&root, &args);
        assert!(code == 0 || code == 1, "{out}\n{err}");
        (out, std::fs::read_to_string(&file).unwrap())
    };
    let (out, after) = fix(&[]);
    assert!(out.contains("train.py:10"), "{out}");
    assert_eq!(after, before, "{out}");
    let (out, after) = fix(&["--unsafe-fixes"]);
    assert!(
        after.contains("torch.amp.autocast(\"cuda\")"),
        "{out}\n{after}"
    );
    // The same code in a project whose README says nothing of the torch it runs on.
    std::fs::write(&file, &before).unwrap();
    std::fs::remove_file(root.join("README.md")).unwrap();
    let (out, after) = fix(&[]);
    assert!(
        after.contains("torch.amp.autocast(\"cuda\")"),
        "{out}\n{after}"
    );
}

/// Safe fixes never change what a project does: on a project that saves whole objects, the
/// `weights_only=True` fix is not applied to the load of that checkpoint (resuming would
/// raise), while the loads of state_dict-only checkpoints are fixed; the pretrained fix keeps
/// the legacy weights. Each file gets the torch version its own project declares, whatever
/// directory the run starts from.
#[test]
fn safe_fixes_keep_behaviour_on_a_project_that_saves_whole_objects() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join(".git")).unwrap();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../resources/test/fix-projects/resume_whole_objects");
    copy_tree(&src, d.path());
    let read = |p: &str| std::fs::read_to_string(d.path().join(p)).unwrap();
    let train_before = read("legacy_app/train.py");

    // Findings, from the repository root and from inside the legacy project: the same.
    let (_, root_out, _) = run(
        d.path(),
        &[
            "check",
            ".",
            "--isolated",
            "--output-format",
            "concise",
            "--select",
            "TV007",
        ],
    );
    let (_, sub_out, _) = run(
        &d.path().join("legacy_app"),
        &[
            "check",
            ".",
            "--isolated",
            "--output-format",
            "concise",
            "--select",
            "TV007",
        ],
    );
    let strip = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.contains("TV007"))
            .map(|l| {
                l.rsplit_once(".py:")
                    .map(|(_, r)| r.to_string())
                    .unwrap_or_default()
            })
            .collect()
    };
    assert_eq!(strip(&root_out), strip(&sub_out), "{root_out}\n{sub_out}");
    assert!(root_out.contains("target torch 2.4"), "{root_out}");
    assert!(
        !root_out.contains("modern_app"),
        "torch>=2.6: a bare load is not a finding\n{root_out}"
    );
    assert!(root_out.contains("train.py:24"), "{root_out}");

    // Safe fixes only.
    let (code, out, err) = run(
        d.path(),
        &[
            "check",
            ".",
            "--isolated",
            "--fix",
            "--output-format",
            "concise",
        ],
    );
    assert!(code == 0 || code == 1, "{out}\n{err}");
    assert_eq!(
        read("legacy_app/train.py"),
        train_before,
        "the whole-object checkpoint's load must not change"
    );
    let export = read("legacy_app/export.py");
    assert!(
        export.contains("state = torch.load(path, map_location=\"cpu\", weights_only=True)"),
        "{export}"
    );
    assert!(
        export.contains("state = torch.load(\"weights.pt\", weights_only=True)"),
        "{export}"
    );
    let backbone = read("legacy_app/backbone.py");
    assert!(
        backbone.contains("from torchvision import models\n"),
        "{backbone}"
    );
    assert!(
        backbone
            .contains("torchvision.models.resnet50(weights=models.ResNet50_Weights.IMAGENET1K_V1)"),
        "{backbone}"
    );
    assert!(backbone.contains("fasterrcnn_resnet50_fpn(weights=None, weights_backbone=models.ResNet50_Weights.IMAGENET1K_V1)"), "{backbone}");
    assert!(
        backbone.contains("torchvision.models.vgg16(weights=None)"),
        "{backbone}"
    );
    assert!(!backbone.contains("DEFAULT"), "{backbone}");
    assert_eq!(
        read("modern_app/infer.py"),
        "import torch\n\nstate = torch.load(\"model.pt\", map_location=\"cpu\")\n"
    );

    // The unsafe fix for the whole-object checkpoint says what would fail.
    let (_, diff_out, _) = run(
        d.path(),
        &[
            "check",
            "legacy_app/train.py",
            "--isolated",
            "--output-format",
            "full",
            "--select",
            "TV007",
        ],
    );
    assert!(
        diff_out.contains("writes a whole nn.Module, which a weights-only load rejects"),
        "{diff_out}"
    );

    // The fixed files still compile, when a Python is at hand.
    if Command::new("python3").arg("--version").output().is_ok() {
        let status = Command::new("python3")
            .args([
                "-m",
                "py_compile",
                "legacy_app/train.py",
                "legacy_app/export.py",
                "legacy_app/backbone.py",
            ])
            .current_dir(d.path())
            .status()
            .unwrap();
        assert!(status.success());
    }
}

#[test]
fn the_result_cache_is_used_and_can_be_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("train.py");
    std::fs::write(
        &file,
        "import torch\nfrom torch import nn\n\nm = nn.Linear(2, 2)\ntorch.save(m.state_dict(), 'x.pt')\nsd = torch.load('x.pt')\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("requirements.txt"), "torch==2.4.1\n").unwrap();
    let cache = dir.path().join(".torchvet_cache");
    // --no-cache writes nothing.
    let (code, plain, _) = run_cached(
        dir.path(),
        &["check", "--no-cache", "--output-format", "json"],
    );
    assert_eq!(code, 1);
    assert!(!cache.exists());
    // First run fills the cache, the second reads it: the same output.
    let (_, first, _) = run_cached(dir.path(), &["check", "--output-format", "json"]);
    assert!(cache.join(".gitignore").is_file());
    let entries = walk_files(&cache);
    assert!(
        entries
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "json")),
        "{entries:?}"
    );
    let (_, second, _) = run_cached(dir.path(), &["check", "--output-format", "json"]);
    assert_eq!(first, plain);
    assert_eq!(second, plain);
    // Corrupt entries are ignored and rewritten.
    for e in walk_files(&cache)
        .iter()
        .filter(|p| !p.ends_with(".gitignore") && !p.ends_with("CACHEDIR.TAG"))
    {
        std::fs::write(e, b"{not json").unwrap();
    }
    let (code, third, err) = run_cached(dir.path(), &["check", "--output-format", "json"]);
    assert_eq!(
        (code, third.as_str(), err.as_str()),
        (1, plain.as_str(), "")
    );
    // An edit is seen (entries are keyed by content), and --fix never reads the cache.
    let (code, _, _) = run_cached(dir.path(), &["check", "--fix", "--quiet"]);
    assert_eq!(code, 0);
    let (code, out, _) = run_cached(dir.path(), &["check", "--output-format", "json"]);
    assert_eq!((code, out.trim()), (0, "[]"));
    // --cache-dir puts it elsewhere.
    let other = dir.path().join("elsewhere");
    let (code, _, _) = run_cached(
        dir.path(),
        &["check", "--cache-dir", other.to_str().unwrap()],
    );
    assert_eq!(code, 0);
    assert!(other.join("CACHEDIR.TAG").is_file());
}

fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk_files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn log_of_softmax_reports_its_precision_forms_only_in_preview() {
    // `log(1 + x)` / `exp(x) - 1` depend on the range of `x`: preview only. The outright
    // failures (`log(softmax(x))`) are reported by default.
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("losses.py"),
        "import torch\n\
         import torch.nn.functional as F\n\
         \n\
         def losses(logits, rate):\n\
         \x20   logp = torch.log(F.softmax(logits, dim=-1))\n\
         \x20   growth = torch.log(1 + rate)\n\
         \x20   decay = torch.exp(rate) - 1\n\
         \x20   return logp, growth, decay\n",
    )
    .unwrap();
    let rows = |args: &[&str]| -> Vec<u64> {
        let mut all = vec!["check", ".", "--isolated", "--output-format", "json"];
        all.extend_from_slice(args);
        let (_, out, err) = run(d.path(), &all);
        let found: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| {
            panic!("json output ({e}): {out}\n{err}");
        });
        let mut rows: Vec<u64> = found
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["name"] == "log-of-softmax")
            .map(|f| f["location"]["row"].as_u64().unwrap())
            .collect();
        rows.sort_unstable();
        rows
    };
    assert_eq!(rows(&[]), vec![5]);
    assert_eq!(rows(&["--preview"]), vec![5, 6, 7]);
}

#[test]
fn a_cached_file_is_rechecked_when_another_file_changes_how_it_is_used() {
    // What other files do with a file's classes and names is part of its view
    // (`ProjectModel::view_digest`): an edit there must not leave a cached result stale.
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(
        p.join("holder.py"),
        "import torch\n\
         import torch.nn as nn\n\
         \n\
         torch_version = float(torch.__version__[:3])\n\
         \n\
         \n\
         class Holder(nn.Module):\n\
         \x20   def __init__(self, n):\n\
         \x20       self.n = n\n",
    )
    .unwrap();
    let user = |body: &str| {
        std::fs::write(
            p.join("main.py"),
            format!("import torch\nimport holder\n\n\ndef run():\n    h = holder.Holder(3)\n{body}    return h.n\n"),
        )
        .unwrap();
    };
    let found = || cached_file_rules(p);
    let holder = |rule: &str| ("holder.py".to_string(), rule.to_string());
    user("");
    assert_eq!(found(), vec![]);
    assert_eq!(found(), vec![], "cached run");
    // main.py moves the instance: Holder is used as a module.
    user("    h.to(\"cpu\")\n");
    assert_eq!(found(), vec![holder("missing-super-init")]);
    // ... and calls it instead.
    user("    h(1)\n");
    assert_eq!(found(), vec![holder("missing-super-init")]);
    // main.py compares holder's parsed version.
    user("    if holder.torch_version >= 1.2:\n        pass\n");
    assert_eq!(found(), vec![holder("torch-version-string-compare")]);
    user("");
    assert_eq!(found(), vec![], "back to the first text");
    assert!(p.join(".torchvet_cache").is_dir());
}

#[test]
fn a_cached_file_is_rechecked_when_another_file_changes_its_search_path() {
    // Directories added to `sys.path` by another file (`_init_paths.py`) and the directory of
    // the script that imports a shared module decide where imports resolve: editing those
    // files must not leave a cached result stale (`ProjectModel::view_digest`).
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let head = |probs: bool| {
        format!(
            "import torch.nn as nn\nimport torch.nn.functional as F\n\n\nclass Head(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(8, 3)\n\n    def forward(self, x):\n        return {}\n",
            if probs { "F.softmax(self.fc(x), dim=1)" } else { "self.fc(x)" }
        )
    };
    for (dir, probs) in [("lib", true), ("lib2", false)] {
        std::fs::create_dir_all(p.join(dir).join("model")).unwrap();
        std::fs::write(p.join(dir).join("model/__init__.py"), "").unwrap();
        std::fs::write(p.join(dir).join("model/head.py"), head(probs)).unwrap();
    }
    std::fs::create_dir_all(p.join("tools")).unwrap();
    let init_paths = |lib: &str| {
        std::fs::write(
            p.join("tools/_init_paths.py"),
            format!("import os.path as osp\nimport sys\n\n\ndef add_path(path):\n    if path not in sys.path:\n        sys.path.insert(0, path)\n\n\nthis_dir = osp.dirname(__file__)\nadd_path(osp.join(this_dir, '..', '{lib}'))\n"),
        )
        .unwrap();
    };
    std::fs::write(
        p.join("tools/train.py"),
        "import _init_paths\nimport torch\nimport torch.nn as nn\n\nfrom model.head import Head\n\n\ndef step(x, y):\n    return nn.CrossEntropyLoss()(Head()(x), y)\n",
    )
    .unwrap();
    // A shared engine importing `net` from the folder of the script that runs.
    std::fs::create_dir_all(p.join("cls")).unwrap();
    std::fs::write(p.join("cls/net.py"), head(true).replace("Head", "Net")).unwrap();
    std::fs::write(
        p.join("engine.py"),
        "import torch\nimport torch.nn as nn\n\nfrom net import Net\n\n\ndef step(x, y):\n    return nn.CrossEntropyLoss()(Net()(x), y)\n",
    )
    .unwrap();
    let script = |imports_engine: bool| {
        let body = if imports_engine {
            "import torch\n\nfrom engine import step\n\nif __name__ == '__main__':\n    step(torch.randn(2, 8), torch.tensor([0, 1]))\n"
        } else {
            "import torch\n\nif __name__ == '__main__':\n    print(torch.randn(2, 8))\n"
        };
        std::fs::write(p.join("cls/run.py"), body).unwrap();
    };
    let found = || cached_file_rules(p);
    let ce = |file: &str| (file.to_string(), "cross-entropy-after-softmax".to_string());
    init_paths("lib2");
    script(false);
    assert_eq!(found(), vec![]);
    assert_eq!(found(), vec![], "cached run");
    // _init_paths.py now adds lib/, whose head returns probabilities.
    init_paths("lib");
    assert_eq!(found(), vec![ce("train.py")]);
    // cls/run.py imports the engine: `net` resolves next to it.
    script(true);
    assert_eq!(found(), vec![ce("engine.py"), ce("train.py")]);
    init_paths("lib2");
    script(false);
    assert_eq!(found(), vec![], "back to the first texts");
    assert!(p.join(".torchvet_cache").is_dir());
}

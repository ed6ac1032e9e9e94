use std::path::{Path, PathBuf};
use torchvet_project::cli::{run_to_string, ProjectArgs, ProjectFormat};
use torchvet_project::{analyze, declared_requirement, render_template, to_json, to_text};

fn fixture(name: &str) -> PathBuf {
    Path::new("../../resources/test/project").join(name)
}

#[test]
fn snapshots_of_every_fixture() {
    for name in [
        "requirements_heavy",
        "poetry_project",
        "uv_project",
        "legacy_project",
        "not_torch",
    ] {
        let report = analyze(&fixture(name));
        insta::assert_snapshot!(format!("{name}_text"), to_text(&report));
        insta::assert_json_snapshot!(format!("{name}_json"), to_json(&report));
    }
}

#[test]
fn declared_torch_requirements() {
    let m = u32::MAX;
    // (fixture, specifier, file, line, locked version, max allowed)
    type Case<'a> = (
        &'a str,
        &'a str,
        &'a str,
        u32,
        Option<&'a str>,
        Option<(u32, u32)>,
    );
    let cases: &[Case] = &[
        (
            "requirements_heavy",
            "==2.3.1+cu121",
            "requirements.txt",
            6,
            None,
            Some((2, 3)),
        ),
        (
            "poetry_project",
            "^2.1",
            "pyproject.toml",
            8,
            Some("2.1.2+cu118"),
            Some((2, 1)),
        ),
        (
            "uv_project",
            ">=2.4,<2.6",
            "pyproject.toml",
            6,
            Some("2.5.1+cu124"),
            Some((2, 5)),
        ),
        (
            "legacy_project",
            ">=1.12,<1.14",
            "setup.py",
            4,
            Some("1.13.1"),
            Some((1, 13)),
        ),
    ];
    for (name, spec, file, line, locked, max) in cases {
        let r = declared_requirement(&fixture(name), "torch")
            .unwrap_or_else(|| panic!("{name}: no torch"));
        assert_eq!(&r.specifier, spec, "{name}");
        assert_eq!(r.source, PathBuf::from(file), "{name}");
        assert_eq!(r.line, *line, "{name}");
        assert_eq!(r.locked_version.as_deref(), *locked, "{name}");
        assert_eq!(r.max_allowed_version(), *max, "{name}");
    }
    let tv = declared_requirement(&fixture("requirements_heavy"), "torchvision").unwrap();
    assert_eq!(tv.specifier, ">=0.18,<0.19");
    assert_eq!(tv.max_allowed_version(), Some((0, 18)));
    let timm = declared_requirement(&fixture("requirements_heavy"), "timm").unwrap();
    assert_eq!(timm.extras, vec!["extra"]);
    assert_eq!(timm.max_allowed_version(), Some((1, 0)));
    assert_eq!(
        declared_requirement(&fixture("poetry_project"), "lightning")
            .and_then(|r| r.max_allowed_version()),
        Some((2, 2))
    );
    let _ = m;
    // Reached through `-r requirements/base.txt`; the include cycle back is cut.
    let yaml = declared_requirement(&fixture("requirements_heavy"), "pyyaml").unwrap();
    assert_eq!(yaml.source, PathBuf::from("requirements/base.txt"));
    assert!(declared_requirement(&fixture("not_torch"), "torch").is_none());
}

#[test]
fn gitignored_files_are_skipped() {
    let report = analyze(&fixture("requirements_heavy"));
    let json = to_json(&report).to_string();
    assert!(!json.contains("ignored/junk.py"));
    assert!(json.contains("src/models/net.py"));
}

#[test]
fn not_torch_has_no_triggers() {
    let report = analyze(&fixture("not_torch"));
    assert!(!report.is_pytorch_project);
    assert!(report.triggers.is_empty());
}

#[test]
fn render_fills_every_placeholder() {
    let template = std::fs::read_to_string(fixture("agent_template.md")).unwrap();
    let report = analyze(&fixture("poetry_project"));
    let out = render_template(&template, &report).unwrap();
    assert!(!out.contains("{{"));
    insta::assert_snapshot!("poetry_project_rendered", out);
}

#[test]
fn render_names_unknown_placeholders() {
    let args = ProjectArgs {
        dir: fixture("poetry_project"),
        format: ProjectFormat::Text,
        render: Some(fixture("bad_template.md")),
    };
    let err = run_to_string(&args).unwrap_err();
    assert!(err.contains("{{gpu_count}} (line 4)"), "{err}");
    assert!(err.contains("{{team}} (line 4)"), "{err}");
    assert!(!err.contains("{{pytorch_version}} (line"), "{err}");
}

#[test]
fn bad_directory_is_an_error() {
    let args = ProjectArgs {
        dir: fixture("does_not_exist"),
        format: ProjectFormat::Json,
        render: None,
    };
    assert!(run_to_string(&args).is_err());
}

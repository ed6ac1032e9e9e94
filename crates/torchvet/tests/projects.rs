//! Whole multi-file projects (`resources/test/projects/<name>/`), checked the way a user checks
//! them: `torchvet check . --output-format json` with the project directory as the current
//! directory. Each project is copied into a fresh temporary directory with an empty `.git`
//! (a checkout of its own, so no configuration or declared torch version of this repository
//! leaks in) and run with a cleared environment and an empty home directory. Projects may
//! carry their own `pyproject.toml` / `requirements.txt`, exactly as users' projects do.
//!
//! Expectations live in the sources: `# expect: <rule>[, <rule>...]` at the end of the line
//! where the finding must be reported, in `.py` files and in notebook cell sources (rows are
//! then counted inside the cell, and the cell is its 1-based index in the notebook's `cells`
//! array, as torchvet's JSON `cell` field reports it). The set of (file, cell, row, rule) of
//! every warning and critical finding must equal the set of marks; info findings count only
//! for info rules that some mark of the project names (those rules are enabled with
//! `--extend-select`, as a user enabling an opt-in rule would). Projects named `clean_*` are
//! correct code spelled the way real projects spell it: they carry no marks and must produce
//! no warning or critical finding at all.
//!
//! `resources/test/projects/README.md` describes every project; `STATUS.md` records which
//! expectations the current implementation meets. Set `TORCHVET_PROJECTS_STATUS=<file>` to
//! have the `status_of_every_project` test write that table.
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// One expected or reported finding: (file relative to the project root, notebook cell, row,
/// rule name). `cell` is 0 for Python files.
type Key = (String, usize, usize, String);

macro_rules! projects {
    (bugs: [$($bug:ident),* $(,)?], clean: [$($clean:ident),* $(,)?] $(,)?) => {
        /// Projects holding real mistakes, each marked on its line.
        const BUG_PROJECTS: &[&str] = &[$(stringify!($bug)),*];
        /// Correct look-alike projects: nothing may fire.
        const CLEAN_PROJECTS: &[&str] = &[$(stringify!($clean)),*];
        $(
            #[test]
            fn $bug() {
                check_project(stringify!($bug));
            }
        )*
        $(
            #[test]
            fn $clean() {
                check_project(stringify!($clean));
            }
        )*
    };
}

projects! {
    bugs: [
        char_rnn_vocab_checkpoint,
        cifar_pkg_reexport,
        closures_in_main,
        ddp_checkpoint_bare_load,
        ddp_sampler_factory,
        distill_validate_other_file,
        model_choice_by_config,
        criterion_parameters,
        eval_context_restores_mode,
        own_checkpoint_other_file,
        eval_helper_downloaded,
        checkpoint_also_exported,
        engine_without_torch,
        eval_loader_shuffled_factory,
        evaled_net_in_controller,
        eval_helper_of_predict,
        oneshot_generation,
        placeholder_model_attribute,
        gan_models_dict,
        gan_step_functions,
        grad_accum_helper,
        grad_entry_off_and_trained_loss,
        imbalanced_sampler_factory,
        legacy_mnist_apis,
        lib_usage_evidence,
        lightning_self_call,
        loss_classes_other_file,
        mnist_flat_test_fn,
        multi_optimizer_trainer,
        nested_validation_script,
        notebook_cross_file_losses,
        notebook_dataparallel_checkpoints,
        notebook_nested_eval,
        optimizer_step_order_methods,
        resume_checkpoint_helper,
        rnn_packed_sequence,
        scheduler_not_stepped_trainer,
        seg_import_alias,
        src_layout_sentiment,
        star_import_kws,
        star_import_torch,
        star_import_torch_checkpoint,
        checkpoint_kinds_in_order,
        checkpoint_helper_pairs,
        checkpoint_path_spellings,
        step_helper_engine,
        trainer_base_other_file,
        value_kinds_factories,
        weights_only_namespace,
        whole_model_save_predict,
        launch_rank_option_read,
        launch_docs_legacy_launcher,
        accuracy_topk_callers,
        unittest_tempdir_checkpoints,
        pretrained_backbone_eval,
        dataset_splits_provenance,
        finetune_from_best_weights,
        collection_of_methods,
        dataparallel_trainers_subdir,
        openmmlab_decoder_other_file,
        forward_runs_training_step,
        grad_accum_optimizer_from_caller,
        fid_frozen_feature_net,
        torch03_era_scripts,
        model_rebound_to_device,
        freeze_helper_other_file,
        numpy_network_from_scratch,
        submodule_list_other_file,
        init_paths_faster_rcnn,
        path_parents_src_scripts,
        script_dir_shared_utils,
        ddp_trainer_loader_factory,
        sr_test_loader_progress_bar,
        registry_model_zoo,
        dataparallel_wrapped_models,
        oneshot_inference_scripts,
        eval_mode_set_by_helper_call,
        step_functions_from_factory,
        notebook_eval_between_training_cells,
        notebook_rebuilt_model,
        hub_models_served,
        probe_on_frozen_backbone,
        vgg_head_replaced,
        wrapper_class_inference,
        notebook_oneshot_predictions,
        toplevel_prediction_after_training,
        eval_helper_some_callers_wrap,
        epoch_fn_optional_optimizer,
        phase_loop_transfer_learning,
        evaluator_class_loads_model,
        runtime_imported_model,
        rl_agent_policy_forward,
        char_rnn_sampling_helper,
        vae_loss_helper_other_file,
        module_attribute_forward,
        config_driven_framework,
        meters_other_file,
        trainer_subclass_validation,
        super_init_wrapped_layer,
        ocr_generate_validation,
        checkpoint_concatenated_paths,
        dockerfile_pins_torch,
        vocoder_while_epoch_sampler,
        helper_objects_eval_and_act,
        device_in_forward_helpers,
        focal_loss_module_probabilities,
    ],
    clean: [
        clean_conditional_eval_helper,
        clean_vae_tuple_outputs,
        clean_pixi_modern_torch,
        clean_toplevel_predictions,
        clean_self_critical_captioning,
        clean_registry_model_zoo,
        clean_ddp_trainer_set_epoch,
        clean_ddp_set_epoch_elsewhere,
        clean_custom_dataset_attrs,
        clean_dataparallel_checkpoints,
        clean_ddp_checkpoint_prefix_strip,
        clean_ddp_loaders,
        clean_engine_no_torch,
        clean_eval_in_engine,
        clean_eval_only_checkpoint,
        clean_factories_and_helpers,
        clean_gan_detach,
        clean_oneshot_generation,
        clean_model_with_own_call,
        clean_eval_factory_helpers,
        clean_gan_nets_switched_by_name,
        clean_legacy_torch_scheduler,
        clean_lightning_scheduler,
        clean_notebook_ipython,
        clean_pytest_suite,
        clean_pytest_weights_fixture,
        clean_pretrained_weights_under_no_grad,
        clean_probe_head_method,
        clean_two_scripts_checkpoint_dir,
        clean_src_accumulation,
        clean_trainer_resume,
        clean_env_rank_leftover_option,
        clean_torchvision_pinned_old,
        clean_conda_env_pins,
        clean_torchrun_template_parser,
        clean_epoch_helper_accumulation,
        clean_scheduler_state_test,
        clean_course_env_files,
        clean_torchrun_usage_docs,
        clean_sys_path_per_process,
        clean_loader_helper_printed,
        clean_frozen_encoder_notebook,
    ],
}

/// Rule names that issue 11 introduces. Marks may name them before the binary knows them;
/// any other name must be a rule the binary lists (this catches typos in marks).
const NEW_RULES: &[&str] = &[
    "scheduler-never-stepped",
    "resume-without-optimizer-state",
    "checkpoint-fails-weights-only-load",
    "gan-discriminator-on-undetached-fake",
    "eval-loader-shuffled",
    "backward-retain-variables-removed",
    "pack-padded-sequence-unpacked",
    "mnist-legacy-data-attributes",
];

fn projects_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../resources/test/projects")
}

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_torchvet"));
    // Nothing from the developer's environment (TORCHVET_*, XDG_*, HOME) reaches the run.
    c.env_clear();
    c.env("TORCHVET_THREADS", "2");
    c
}

/// Rule name -> whether `check` runs it by default, as the binary lists them (info and
/// preview rules are off until selected).
fn registry() -> &'static BTreeMap<String, bool> {
    static REGISTRY: OnceLock<BTreeMap<String, bool>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let out = bin()
            .args(["rules", "--format", "json"])
            .output()
            .expect("torchvet rules runs");
        let rules: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("`torchvet rules --format json` is JSON");
        rules
            .as_array()
            .expect("a list of rules")
            .iter()
            .map(|r| {
                (
                    r["name"].as_str().unwrap_or_default().to_string(),
                    r["default"].as_bool().unwrap_or(false),
                )
            })
            .collect()
    })
}

/// Does `torchvet check` accept `--no-cache`? The result cache is a later issue; until it
/// exists there is nothing to bypass and the flag is left out. Once it exists, every run here
/// passes it so that a stale cache can never hide a finding.
fn has_no_cache_flag() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        let out = bin()
            .args(["check", "--help"])
            .output()
            .expect("torchvet check --help runs");
        String::from_utf8_lossy(&out.stdout).contains("--no-cache")
    })
}

/// Marks `# expect: a, b` on each line of `text`: (1-based row, rule).
fn marks_in(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some((_, names)) = line.split_once("# expect: ") {
            for name in names.split(',') {
                let name = name.split_whitespace().next().unwrap_or("");
                if !name.is_empty() {
                    out.push((i + 1, name.to_string()));
                }
            }
        }
    }
    out
}

/// Every file of the project, relative to its root, sorted (`/` separators).
fn project_files(root: &Path) -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, root, out);
            } else {
                let rel = path.strip_prefix(root).expect("inside the root");
                let rel: Vec<_> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect();
                out.push(rel.join("/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out
}

/// Code cells' sources with their 1-based index in the notebook's `cells` array.
fn notebook_cells(path: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let json: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    let cells = json["cells"]
        .as_array()
        .unwrap_or_else(|| panic!("{} has no `cells` list", path.display()));
    cells
        .iter()
        .enumerate()
        .filter(|(_, c)| c["cell_type"] == "code")
        .map(|(i, c)| {
            let src = match &c["source"] {
                serde_json::Value::Array(lines) => {
                    lines.iter().filter_map(|l| l.as_str()).collect()
                }
                serde_json::Value::String(s) => s.clone(),
                _ => String::new(),
            };
            (i + 1, src)
        })
        .collect()
}

/// All marks of a project.
fn expected(root: &Path) -> BTreeSet<Key> {
    let mut out = BTreeSet::new();
    for rel in project_files(root) {
        let path = root.join(&rel);
        if rel.ends_with(".py") {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
            for (row, rule) in marks_in(&text) {
                out.insert((rel.clone(), 0, row, rule));
            }
        } else if rel.ends_with(".ipynb") {
            for (cell, src) in notebook_cells(&path) {
                for (row, rule) in marks_in(&src) {
                    out.insert((rel.clone(), cell, row, rule));
                }
            }
        }
    }
    out
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy");
    for entry in std::fs::read_dir(from)
        .expect("read the project")
        .filter_map(Result::ok)
    {
        let src = entry.path();
        let dst = to.join(entry.file_name());
        if src.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).expect("copy a project file");
        }
    }
}

/// A configuration above the temporary copy would be picked up by torchvet's upward search
/// and change what the run means: refuse to run rather than compare the wrong thing.
fn assert_no_config_above(dir: &Path) {
    for anc in dir.ancestors().skip(1) {
        assert!(
            !anc.join("torchvet.toml").is_file(),
            "{} would configure the isolated run; remove it",
            anc.join("torchvet.toml").display()
        );
        let py = anc.join("pyproject.toml");
        if let Ok(text) = std::fs::read_to_string(&py) {
            assert!(
                !text.contains("[tool.torchvet"),
                "{} would configure the isolated run; remove it",
                py.display()
            );
        }
    }
}

/// What one run found.
struct Outcome {
    expected: BTreeSet<Key>,
    reported: BTreeSet<Key>,
    /// key -> message, for the report of unexpected findings.
    messages: BTreeMap<Key, String>,
    /// key -> severity as reported.
    severities: BTreeMap<Key, String>,
    /// key -> the fix's applicability (`safe`, `unsafe`, `display-only`), when it has one.
    fixes: BTreeMap<Key, String>,
    /// key -> its secondary locations, as `file:row: message` (`file` empty for this file).
    related: BTreeMap<Key, Vec<String>>,
    /// Set when the run itself failed (exit code other than 0/1, or output that is not JSON).
    error: Option<String>,
}

impl Outcome {
    fn missing(&self) -> Vec<&Key> {
        self.expected.difference(&self.reported).collect()
    }

    fn unexpected(&self) -> Vec<&Key> {
        self.reported.difference(&self.expected).collect()
    }
}

fn show(key: &Key) -> String {
    let (file, cell, row, rule) = key;
    if *cell == 0 {
        format!("{file}:{row} {rule}")
    } else {
        format!("{file}:cell {cell}:{row} {rule}")
    }
}

fn run_project(name: &str) -> Outcome {
    let src = projects_dir().join(name);
    assert!(src.is_dir(), "no project directory {}", src.display());
    let expected = expected(&src);

    let tmp = tempfile::tempdir().expect("a temporary directory");
    let root = tmp.path().join(name);
    copy_tree(&src, &root);
    // A checkout of its own: the declared-torch-version search stops here.
    std::fs::create_dir_all(root.join(".git")).expect("create .git");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(home.join(".config")).expect("create the home directory");
    assert_no_config_above(&root);

    // Rules off by default (info and preview) that a project expects are selected by name,
    // which runs exactly them and nothing else that is off.
    let opt_in_rules: BTreeSet<String> = expected
        .iter()
        .map(|k| k.3.clone())
        .filter(|r| registry().get(r).is_some_and(|on| !on))
        .collect();

    let mut cmd = bin();
    cmd.current_dir(&root)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .args(["check", ".", "--output-format", "json"]);
    if has_no_cache_flag() {
        cmd.arg("--no-cache");
    }
    if !opt_in_rules.is_empty() {
        let list: Vec<&str> = opt_in_rules.iter().map(String::as_str).collect();
        cmd.args(["--extend-select", &list.join(",")]);
    }
    let out = cmd.output().expect("torchvet runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);

    let mut outcome = Outcome {
        expected,
        reported: BTreeSet::new(),
        messages: BTreeMap::new(),
        severities: BTreeMap::new(),
        fixes: BTreeMap::new(),
        related: BTreeMap::new(),
        error: None,
    };
    let code = out.status.code().unwrap_or(-1);
    if code != 0 && code != 1 {
        outcome.error = Some(format!("exit code {code}; stderr:\n{stderr}"));
        return outcome;
    }
    let findings: serde_json::Value = match serde_json::from_str(&stdout) {
        Ok(v) => v,
        Err(e) => {
            outcome.error = Some(format!("output is not JSON ({e}); stderr:\n{stderr}"));
            return outcome;
        }
    };
    for f in findings.as_array().into_iter().flatten() {
        let rule = f["name"].as_str().unwrap_or_default().to_string();
        let severity = f["severity"].as_str().unwrap_or_default();
        if !(matches!(severity, "warning" | "critical") || opt_in_rules.contains(&rule)) {
            continue;
        }
        let file = f["filename"]
            .as_str()
            .unwrap_or_default()
            .trim_start_matches("./")
            .replace('\\', "/");
        let cell = f["cell"].as_u64().unwrap_or(0) as usize;
        let row = f["location"]["row"].as_u64().unwrap_or(0) as usize;
        let key = (file, cell, row, rule);
        outcome.messages.insert(
            key.clone(),
            f["message"].as_str().unwrap_or_default().to_string(),
        );
        outcome.severities.insert(key.clone(), severity.to_string());
        if let Some(a) = f["fix"]["applicability"].as_str() {
            outcome.fixes.insert(key.clone(), a.to_string());
        }
        let related = f["related"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                format!(
                    "{}:{}: {}",
                    r["filename"]
                        .as_str()
                        .unwrap_or_default()
                        .trim_start_matches("./")
                        .replace('\\', "/"),
                    r["location"]["row"].as_u64().unwrap_or(0),
                    r["message"].as_str().unwrap_or_default()
                )
            })
            .collect();
        outcome.related.insert(key.clone(), related);
        outcome.reported.insert(key);
    }
    outcome
}

fn check_project(name: &str) {
    let outcome = run_project(name);
    if let Some(err) = &outcome.error {
        panic!("{name}: torchvet did not run cleanly: {err}");
    }
    let clean = CLEAN_PROJECTS.contains(&name);
    if clean {
        assert!(
            outcome.expected.is_empty(),
            "{name} is a clean project and must carry no `# expect:` marks"
        );
    }
    let missing = outcome.missing();
    let unexpected = outcome.unexpected();
    if missing.is_empty() && unexpected.is_empty() {
        return;
    }
    let mut msg = format!(
        "{name}: {} of {} expected findings reported{}\n",
        outcome.expected.len() - missing.len(),
        outcome.expected.len(),
        if clean {
            " (a clean project: nothing may fire)"
        } else {
            ""
        }
    );
    for k in &missing {
        let _ = writeln!(msg, "  missing     {}", show(k));
    }
    for k in &unexpected {
        let _ = writeln!(
            msg,
            "  unexpected  {}: {}",
            show(k),
            outcome.messages.get(*k).map(String::as_str).unwrap_or("")
        );
    }
    panic!("{msg}");
}

/// The one finding of `rule` in a project's run: its severity and message.
fn only_finding(name: &str, rule: &str) -> (String, String) {
    let outcome = run_project(name);
    assert!(outcome.error.is_none(), "{name}: {:?}", outcome.error);
    let keys: Vec<&Key> = outcome.reported.iter().filter(|k| k.3 == rule).collect();
    let [key] = keys.as_slice() else {
        panic!("{name}: expected one {rule} finding, got {keys:?}");
    };
    (
        outcome.severities[*key].clone(),
        outcome.messages[*key].clone(),
    )
}

/// Where a loaded checkpoint comes from sets the severity: a path that a caller fills with a
/// download is critical (even though another script saves a similar path), the project's own
/// file written by another file is a warning that names the save.
#[test]
fn checkpoint_origin_decides_the_severity() {
    let (severity, message) =
        only_finding("eval_helper_downloaded", "torch-load-without-weights-only");
    assert_eq!(severity, "critical", "{message}");
    assert!(message.contains("download"), "{message}");
    assert!(!message.contains("c51.py"), "{message}");
    let (severity, message) = only_finding(
        "own_checkpoint_other_file",
        "torch-load-without-weights-only",
    );
    assert_eq!(severity, "warning", "{message}");
    assert!(message.contains("train.py:"), "{message}");
}

/// A save does not vouch for a file loaded elsewhere when a unit test writes it into a
/// temporary directory, or when the loading file downloads its data (the dataset-maker tool's
/// save is not the copy users load): neither load is called "the project's own checkpoint".
#[test]
fn a_test_save_or_a_maker_tool_does_not_make_a_loaded_file_the_projects_own() {
    let outcome = run_project("dataset_splits_provenance");
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let loads: Vec<&String> = outcome
        .reported
        .iter()
        .filter(|k| k.3 == "torch-load-without-weights-only")
        .map(|k| &outcome.messages[k])
        .collect();
    assert_eq!(loads.len(), 2, "{loads:?}");
    for m in loads {
        assert!(!m.contains("writes this checkpoint itself"), "{m}");
        assert!(
            !m.contains("test_shield.py") && !m.contains("maker.py"),
            "{m}"
        );
    }
}

/// A fix is safe only when every save the load may read holds plain data: `train.py` writes
/// state dicts to the path it resumes from, but `tools/export.py` overwrites that path with the
/// whole module, so adding `weights_only=True` could break the resume.
#[test]
fn a_farther_save_of_the_same_path_keeps_the_weights_only_fix_unsafe() {
    let outcome = run_project("checkpoint_also_exported");
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let key = outcome
        .reported
        .iter()
        .find(|k| k.3 == "torch-load-without-weights-only")
        .expect("the resume load is reported");
    assert_eq!(outcome.fixes.get(key).map(String::as_str), Some("unsafe"));
}

#[test]
fn every_project_is_listed_described_and_well_formed() {
    let on_disk: BTreeSet<String> = std::fs::read_dir(projects_dir())
        .expect("resources/test/projects exists")
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let listed: BTreeSet<String> = BUG_PROJECTS
        .iter()
        .chain(CLEAN_PROJECTS)
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        on_disk, listed,
        "project directories and the list in projects.rs differ"
    );
    assert!(listed.len() >= 25, "issue 11 asks for at least 25 projects");
    assert!(
        CLEAN_PROJECTS.len() >= 8,
        "at least 8 clean look-alike projects"
    );
    assert!(CLEAN_PROJECTS.iter().all(|p| p.starts_with("clean_")));
    assert!(BUG_PROJECTS.iter().all(|p| !p.starts_with("clean_")));

    let readme = std::fs::read_to_string(projects_dir().join("README.md")).expect("README.md");
    let mut problems = Vec::new();
    for name in &listed {
        let root = projects_dir().join(name);
        if !readme.contains(&format!("`{name}`")) {
            problems.push(format!("{name}: not described in README.md"));
        }
        let files = project_files(&root);
        let sources = files
            .iter()
            .filter(|f| f.ends_with(".py") || f.ends_with(".ipynb"))
            .count();
        if !(2..=8).contains(&sources) {
            problems.push(format!("{name}: {sources} source files (want 2 to 8)"));
        }
        let marks = expected(&root);
        let is_clean = CLEAN_PROJECTS.contains(&name.as_str());
        if is_clean && !marks.is_empty() {
            problems.push(format!("{name}: a clean project with marks"));
        }
        if !is_clean && marks.is_empty() {
            problems.push(format!("{name}: a bug project without marks"));
        }
        for (file, _, row, rule) in &marks {
            if !registry().contains_key(rule) && !NEW_RULES.contains(&rule.as_str()) {
                problems.push(format!("{name}/{file}:{row}: unknown rule `{rule}`"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Runs every project once and checks that torchvet itself runs cleanly on each (exit code 0
/// or 1, JSON output). With `TORCHVET_PROJECTS_STATUS=<file>` it also writes the Markdown
/// status table (met / missing / unexpected per project) that `STATUS.md` is made from.
#[test]
fn status_of_every_project() {
    let mut table = String::from(
        "| project | kind | expected | met | missing | unexpected |\n|---|---|---|---|---|---|\n",
    );
    let mut details = String::new();
    let (mut total, mut met, mut extra) = (0, 0, 0);
    let mut errors = Vec::new();
    for name in BUG_PROJECTS.iter().chain(CLEAN_PROJECTS) {
        let o = run_project(name);
        if let Some(err) = &o.error {
            errors.push(format!("{name}: {err}"));
            continue;
        }
        let missing = o.missing();
        let unexpected = o.unexpected();
        total += o.expected.len();
        met += o.expected.len() - missing.len();
        extra += unexpected.len();
        let kind = if CLEAN_PROJECTS.contains(name) {
            "clean"
        } else {
            "bugs"
        };
        let _ = writeln!(
            table,
            "| `{name}` | {kind} | {} | {} | {} | {} |",
            o.expected.len(),
            o.expected.len() - missing.len(),
            missing.len(),
            unexpected.len()
        );
        if !missing.is_empty() || !unexpected.is_empty() {
            let _ = writeln!(details, "\n### `{name}`\n");
            for k in &missing {
                let _ = writeln!(details, "- missing: `{}`", show(k));
            }
            for k in &unexpected {
                let _ = writeln!(
                    details,
                    "- unexpected: `{}`: {}",
                    show(k),
                    o.messages.get(*k).map(String::as_str).unwrap_or("")
                );
            }
        }
    }
    if let Ok(path) = std::env::var("TORCHVET_PROJECTS_STATUS") {
        let report = format!(
            "Expectations met: {met} of {total}; unexpected findings: {extra}.\n\n{table}\n## Differences\n{details}"
        );
        std::fs::write(&path, report).expect("write the status report");
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// An event inside a helper of another file is named by what it is, not by the text of the
/// call that reaches it: the message of the micro-batch `zero_grad()` in `engine.py` names that
/// `zero_grad()`, and names the helper call once (audit 13 found the call's text given as both
/// the zero_grad and the step).
#[test]
fn a_remote_zero_grad_is_named_by_its_kind_not_by_the_helper_call() {
    let outcome = run_project("grad_accum_helper");
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let key = outcome
        .reported
        .iter()
        .find(|k| k.3 == "zero-grad-misplaced")
        .expect("the per-micro-batch zero_grad is reported");
    let m = &outcome.messages[key];
    assert!(
        m.starts_with("`optimizer.zero_grad()` (in `forward_backward(...)`)"),
        "{m}"
    );
    assert_eq!(m.matches("forward_backward").count(), 1, "{m}");
}

/// A softmax applied by a model class of another file is pointed at where it is written
/// (`cifar/models.py`), not at the parameter through which the model enters `train.py`.
#[test]
fn a_producer_in_another_file_is_pointed_at_in_that_file() {
    let outcome = run_project("cifar_pkg_reexport");
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let mut seen = 0;
    for (key, related) in &outcome.related {
        if key.3 != "cross-entropy-after-softmax" {
            continue;
        }
        seen += 1;
        let softmax: Vec<&String> = related.iter().filter(|r| r.contains("softmax")).collect();
        assert_eq!(
            softmax,
            ["cifar/models.py:32: the softmax that `SmallCNN.forward` applies"],
            "{key:?}: {related:?}"
        );
    }
    assert_eq!(seen, 2, "{:?}", outcome.reported);
}

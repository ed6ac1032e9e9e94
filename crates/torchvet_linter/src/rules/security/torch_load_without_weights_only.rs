use crate::checker::Checker;
use crate::fix::{add_keyword_argument, RawFix};
use crate::registry::Severity;
use crate::rules::correctness::helpers::for_each_stmt;
use crate::rules::facts::{load_fails_weights_only, load_info, site, LoadInfo};
use crate::settings::Version;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use std::rc::Rc;
use torchvet_semantic::helpers;
use torchvet_semantic::project::{FileId, ProjectFile};
use torchvet_semantic::saves::{
    saves_for_load, weights_only_load_fails, RejectedKind, SaveSite, Saved,
};

crate::declare_rule! {
    /// ## What it does
    /// Checks `torch.load(...)` calls against the torch version the project targets:
    /// - before torch 2.6, a call without `weights_only` (the full unpickler is the default);
    /// - at any version, an explicit `weights_only=False`.
    ///
    /// Targets older than torch 1.13, whose `torch.load` has no `weights_only`, are not
    /// checked.
    ///
    /// From torch 2.6 on, `weights_only=True` is the default: a bare `torch.load(path)` no
    /// longer runs a pickle and is not reported when every torch the code runs on has that
    /// default. A project that allows an older torch (`torch>=2.0` in the declaration nearest
    /// to the file, or, when that one has no lower bound, any declaration of the repository)
    /// runs on torches where the load unpickles, and is reported. A project that declares no
    /// torch version at all, or none with a bound, is checked against the latest torch, but
    /// nothing rules out an older one: its bare loads are reported one severity lower, as
    /// "may" (critical becomes a warning, a warning becomes info); when its README or install
    /// notes name a torch before 2.6 ("Requirements: pytorch 1.5.1"), it is reported as
    /// running there. Declaring `torch>=2.6`, or
    /// passing `--target-torch`, says which torch it is. (Whether a load fails on the
    /// project's own checkpoints is the question of `checkpoint-fails-weights-only-load`;
    /// the two rules never report the same call.)
    ///
    /// The target torch is `--target-torch`, the `target-torch` setting, or else the torch
    /// requirement declared nearest to each file (pyproject.toml, requirements*.txt,
    /// setup.cfg, conda environments and `conda list --explicit` files, ... in the file's
    /// directory or above); without any, the latest torch. Every message names the target
    /// version it assumed.
    ///
    /// ## Why is this bad?
    /// Unpickling runs code: a checkpoint from the internet (a URL, a download, a path given
    /// on the command line or typed by a user) can execute arbitrary commands on the machine
    /// that loads it. `weights_only=True` restricts loading to tensors, primitive values and
    /// containers of them, which is all a `state_dict` needs. Loads of a file that the project
    /// writes itself (the path matches a `torch.save` of the same file, or of another file of
    /// the project: `predict.py` loading what `train.py` saves) are a warning, not critical,
    /// and so are loads of a file that ships with the code: a path built from the module's own
    /// location and literals only (`os.path.join(os.path.dirname(__file__), "../data/pnet.pt")`,
    /// `Path(__file__).parent / "weights.pt"`); replacing that file already takes write access
    /// to the installed code. The message says which of these it assumed. Loads from outside
    /// (a URL, a download, the command line, user input) and of paths of unknown origin stay
    /// critical. In unit-test code, a bare load of a file
    /// that the test itself writes, directly or through a pytest fixture or a helper function
    /// of the same file that saves and returns the path, is not reported; nor is any load,
    /// even with `weights_only=False`, of a file the test or the project saves (the same
    /// path) inside a temporary directory the test creates itself (`tempfile.mkdtemp()` in
    /// `setUp`, `tempfile.TemporaryDirectory()`, pytest's `tmp_path`; also when the
    /// directory reaches the path through a helper's return value, `path =
    /// _write_checkpoint(model, tmp_dir)`, or an attribute the test sets, `config.out_dir =
    /// tmp_path`): nobody else can put a file there. The retry without `weights_only` in the
    /// `except TypeError:` of a `try: torch.load(p, weights_only=True)` runs only on a torch
    /// older than 1.13, which has no such argument, and is not reported. Which save a load reads is the project model's pairing by path (the same
    /// literal, constant, attribute, or file name joined to a directory), not the text of the
    /// path.
    ///
    /// ## Example
    /// ```python
    /// state = torch.load(ckpt_path, map_location="cpu")
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// state = torch.load(ckpt_path, map_location="cpu", weights_only=True)
    /// ```
    ///
    /// ## Fix safety
    /// The fix adds `weights_only=True`. It is safe only when the project model pairs this
    /// load's path with the `torch.save` calls that write it (the same path, in this file or
    /// another, or a save helper and a load helper passing it through) and every one of them
    /// holds nothing but tensors, `state_dict()`s, numbers, strings and dict/list/tuple
    /// containers of them: then the weights-only load reads exactly what the full unpickler
    /// did. Another save of the same file that writes a different path says nothing about
    /// the file loaded (a converter that loads `ckpt_path` and saves to `out_path`), nor do
    /// saves paired only by the keys read; checkpoints not written by
    /// `torch.save` (a Lightning `Trainer` / `ModelCheckpoint` `.ckpt`, which carries the
    /// `save_hyperparameters()` objects: modules, `functools.partial`s) are never paired, so
    /// their loads get an unsafe fix. When a save writes a whole `nn.Module`, an optimizer or scheduler
    /// object, an `argparse.Namespace`, a NumPy value or an instance of a project class, the
    /// weights-only load would raise `UnpicklingError` on that checkpoint: the fix is offered
    /// as unsafe and its message names the object and the save. When the file saves nothing
    /// (the checkpoint comes from elsewhere), its content is unknown and the fix is unsafe.
    /// An explicit `weights_only=False` gets no fix. When the project declares a lowest torch
    /// older than 1.13 (`torch>=1.7`, or "PyTorch >= 1.7" in its README or docs), the
    /// argument does not exist on part of the versions it allows, so the fix is unsafe
    /// whatever the checkpoint holds.
    ///
    /// ## References
    /// - [torch.load](https://pytorch.org/docs/stable/generated/torch.load.html)
    /// - [Serialization semantics: weights_only](https://pytorch.org/docs/stable/notes/serialization.html)
    /// - [torch 2.6: weights_only=True by default](https://dev-discuss.pytorch.org/t/bc-breaking-change-torch-load-is-being-flipped-to-use-weights-only-true-by-default-in-the-nightlies-after-137602/2573)
    pub(crate) static TORCH_LOAD_WITHOUT_WEIGHTS_ONLY = {
        name: "torch-load-without-weights-only",
        code: "TV007",
        group: Security,
        severity: Critical,
        title: "torch.load without weights_only=True (pickle can run arbitrary code)",
        autofix: Yes,
        torchfix: ["TOR102"],
        hooks: { call: check_call },
    };
}

fn saves(checker: &Checker) -> Rc<Vec<SaveSite>> {
    checker.file_saves()
}

/// Which torches the code runs on, as far as `torch.load`'s default is concerned.
enum Torches {
    /// The target is before 2.6: the full unpickler is the default there.
    OldTarget,
    /// The target has the weights-only default, but the project allows (or, when no
    /// dependency file bounds torch, its documentation names) an older torch: the lowest.
    Allows(Version, Floor),
    /// Every torch it runs on has the weights-only default (a pin or lower bound from 2.6 on).
    WeightsOnlyDefault,
    /// Nothing bounds the project's torch (no pin, no lower bound, no documented version):
    /// the latest is assumed, but an older one is not ruled out.
    Unbounded,
}

/// Where the lowest torch of [`Torches::Allows`] comes from.
enum Floor {
    /// A dependency file.
    Declared,
    /// The README or install notes ("PyTorch 1.5.1"), when no dependency file bounds torch.
    Documented,
}

/// The torches a file's code runs on. The lowest is the nearest declaration's lower bound
/// (`torch>=2.0`), or, when it has none, the lowest any declaration of the repository allows
/// (a conda `environment.yml` pinning an older torch); when no dependency file bounds torch,
/// the torch its documentation names (a README's "Requirements: pytorch 1.5.1").
fn torches(checker: &Checker) -> Torches {
    if !checker.torch_at_least(2, 6) {
        return Torches::OldTarget;
    }
    let s = &checker.settings;
    let floor = match (s.nearest_min_torch.or(s.min_torch), s.documented_min_torch) {
        (Some(m), _) => (m, Floor::Declared),
        (None, Some(m)) => (m, Floor::Documented),
        (None, None) if s.target_torch.is_none() => return Torches::Unbounded,
        (None, None) => return Torches::WeightsOnlyDefault,
    };
    if floor.0 < Version::new(2, 6) {
        Torches::Allows(floor.0, floor.1)
    } else {
        Torches::WeightsOnlyDefault
    }
}

/// The versions as messages say them.
fn target_label(checker: &Checker, torches: &Torches) -> String {
    let target = match checker.settings.target_torch {
        Some(v) => format!("target torch {v}"),
        None => "target: latest torch".to_string(),
    };
    match torches {
        Torches::Allows(m, Floor::Declared) => {
            format!("{target}, but the project allows torch {m}")
        }
        Torches::Allows(m, Floor::Documented) => {
            format!("{target}, but the project's documentation names torch {m}")
        }
        Torches::OldTarget | Torches::WeightsOnlyDefault | Torches::Unbounded => target,
    }
}

/// Where a loaded path comes from.
enum Origin {
    /// A URL, a download, the command line or user input: what and where.
    Outside(&'static str, TextRange),
    /// A file this code writes itself: the save.
    OwnSave(TextRange),
    /// A file another file of the project writes (the same path): that save, and where.
    ProjectSave(ProjectFile, FileId, TextRange, String),
    /// A parameter some caller fills with a download.
    CallerDownload,
    /// A file that ships with the code: the path is built from the module's own location
    /// (`__file__`, here) and literals.
    Shipped(TextRange),
    /// Not known.
    Unknown,
}

/// Where a save that decides the fix is.
enum SaveAt {
    /// In this file.
    Here(TextRange),
    /// In another file of the project.
    Other(ProjectFile, FileId, TextRange),
}

/// What the checkpoint a load reads holds, as far as the fix is concerned.
enum Verdict {
    /// A save writes an object a weights-only load rejects.
    Fails {
        what: RejectedKind,
        site: String,
        at: SaveAt,
    },
    /// Every save holds only weights-only content (all of them in this file).
    WeightsOnly(bool),
    /// Not known.
    Unknown,
}

/// A save in another file of the project that writes the path this load reads (paired by the
/// same path, not by keys or use): the checkpoint is the project's own.
fn project_save_origin(checker: &Checker, info: &LoadInfo) -> Option<Origin> {
    use torchvet_semantic::project::facts::PairBy;
    let p = &info.project;
    let ps = info.pairs.iter().find(|ps| {
        ps.by == PairBy::Path && ps.func.file != p.file && writer_vouches(p, ps.func.file)
    })?;
    // A file that downloads data (`download_url(...)` into its dataset root) may load the
    // downloaded copy: a writer elsewhere in the project (a dataset-maker tool) does not show
    // that users load the project's own file.
    if downloads_here(checker) {
        return None;
    }
    let save = ps.call(&p.model).call;
    let file = ps.func.file;
    let at = site(p, file, save);
    Some(Origin::ProjectSave(p.clone(), file, save, at))
}

/// Does a save in file `file` show that the project writes what this file loads? A save in
/// unit-test code (a test writing into its temporary directory) says nothing about the file a
/// library or script path loads; it does for another test.
fn writer_vouches(p: &ProjectFile, file: FileId) -> bool {
    !p.model.file(file).test_code || p.is_test_code()
}

/// Does this file download data anywhere (a download call, see
/// [`torchvet_semantic::project::facts::is_download_call`])? The whole module is searched:
/// `download()` methods often come after the loads that read what they fetched.
fn downloads_here(checker: &Checker) -> bool {
    use ruff_python_ast::visitor::{self, Visitor};
    struct Find(bool);
    impl<'a> Visitor<'a> for Find {
        fn visit_expr(&mut self, e: &'a Expr) {
            if self.0 {
                return;
            }
            if let Expr::Call(c) = e {
                if torchvet_semantic::project::facts::is_download_call(c) {
                    self.0 = true;
                    return;
                }
            }
            visitor::walk_expr(self, e);
        }
    }
    if !["download", "url", "get_file", "cached_path"]
        .into_iter()
        .any(|w| checker.mentions(w))
    {
        return false;
    }
    let mut f = Find(false);
    f.visit_body(&checker.module().body);
    f.0
}

/// The verdict from the project's saves this load may read (any file), `None` when the
/// project pairs it with none.
fn project_verdict(checker: &Checker, info: &LoadInfo) -> Option<Verdict> {
    if info.pairs.is_empty() {
        return None;
    }
    let p = &info.project;
    // Named as failing only by the nearest saves; a farther one that writes a rejected object
    // still keeps the fix from being safe (below: not every save holds only tensors).
    if let Some(ps) = info
        .pairs
        .iter()
        .filter(|ps| ps.near)
        .find(|ps| matches!(ps.content.saved, Saved::Rejected(..)))
    {
        let Saved::Rejected(what, _) = &ps.content.saved else {
            unreachable!("filtered on rejected content")
        };
        let save = ps.call(&p.model).call;
        let file = ps.func.file;
        let at = if file == p.file {
            SaveAt::Here(save)
        } else {
            SaveAt::Other(p.clone(), file, save)
        };
        return Some(Verdict::Fails {
            what: what.clone(),
            site: site(p, file, save),
            at,
        });
    }
    Some(
        if paired_by_path(checker, info)
            && info
                .pairs
                .iter()
                .all(|ps| ps.content.saved == Saved::WeightsOnly)
        {
            Verdict::WeightsOnly(info.pairs.iter().all(|ps| ps.func.file == p.file))
        } else {
            Verdict::Unknown
        },
    )
}

/// Does the project model pair this load with its saves by the load's own path (the same
/// path, or a save helper and a load helper that pass it through)? Only then are the paired
/// saves the writers of the file it reads: saves paired by the keys read or by module use, or
/// the other saves of the same file, may write other files. A checkpoint written by
/// something that is not a `torch.save` (a Lightning `Trainer` / `ModelCheckpoint`, whose
/// `.ckpt` files carry `save_hyperparameters()` objects) is never paired, so a load of one
/// never gets a safe fix.
///
/// A helper pair in the load's own function (`def export(ckpt_path, out_path):
/// torch.load(ckpt_path) ... torch.save(sd, out_path)`, a converter) pairs two different
/// parameters, not one path: it does not count.
fn paired_by_path(checker: &Checker, info: &LoadInfo) -> bool {
    use torchvet_semantic::project::facts::PairBy;
    let here = crate::rules::facts::current_function(checker, &info.project);
    !info.pairs.is_empty()
        && info.pairs.iter().all(|ps| match ps.by {
            PairBy::Path => true,
            PairBy::Helper => here.is_some_and(|f| f != ps.func),
            PairBy::Keys | PairBy::ModuleUse => false,
        })
}

/// The verdict from this file's saves when the project model pairs the load with none: a
/// save with the same path text, or else any save of the file, that writes an object a
/// weights-only load rejects makes the fix unsafe (named); nothing here shows what the file
/// read holds, so it is never taken to be weights-only (a script that saves a quantized
/// `state_dict()` may load a Lightning checkpoint written elsewhere).
fn file_verdict(checker: &Checker, paired: &[&SaveSite]) -> Verdict {
    match weights_only_load_fails(paired) {
        Some(site) => match &site.content {
            Saved::Rejected(what, _) => Verdict::Fails {
                what: what.clone(),
                site: format!("line {}", checker.source.position(site.call.start()).1),
                at: SaveAt::Here(site.call),
            },
            _ => Verdict::Unknown,
        },
        None => Verdict::Unknown,
    }
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if !name.is_some_and(torchvet_semantic::helpers::is_torch_load) {
        return;
    }
    if helpers::has_kwargs_splat(call) {
        return;
    }
    let explicit = helpers::keyword(call, "weights_only");
    let explicit_false = match explicit {
        None => false,
        Some(v) => match helpers::is_truthy(v) {
            Some(false) => true,
            // `weights_only=True`, or a value decided elsewhere.
            _ => return,
        },
    };
    // `weights_only` exists since torch 1.13: recommending it to an older target is wrong.
    if !checker.torch_at_least(1, 13) {
        return;
    }
    // The retry without the argument of a `try: torch.load(p, weights_only=True)` whose
    // `except TypeError:` runs only on a torch older than 1.13, which has no `weights_only`.
    if !explicit_false && in_old_torch_fallback(checker, call) {
        return;
    }
    // `weights_only=True` is the default from 2.6 on: nothing is unpickled when every torch
    // the project runs on has it. A project that bounds its torch nowhere may as well run on
    // an older one: such a load is reported one severity lower, as a "may".
    let torches = torches(checker);
    if !explicit_false && matches!(torches, Torches::WeightsOnlyDefault) {
        return;
    }
    let may = !explicit_false && matches!(torches, Torches::Unbounded);
    // A load that `checkpoint-fails-weights-only-load` reports (the weights-only load fails
    // on the project's own checkpoint) is that rule's: the two never report one call.
    if load_fails_weights_only(checker, call) {
        return;
    }
    let path = helpers::argument(call, "f", 0);
    let path_text = path.map(|p| checker.text(p.range()).to_string());
    let saves = saves(checker);
    let paired = saves_for_load(&saves, path_text.as_deref());
    // The project's saves this load may read (any file), asked once.
    let info = load_info(checker, call);
    let mut origin = match path {
        Some(p) => origin_of(checker, p, info.as_ref(), &saves),
        None => Origin::Unknown,
    };
    // A path built from the module's own location and literals (`os.path.join(
    // os.path.dirname(__file__), "../data/pnet.pt")`): a checkpoint that ships with the code.
    if matches!(origin, Origin::Unknown) {
        if let Some(at) = path.and_then(|p| shipped(checker, p)) {
            origin = Origin::Shipped(at);
        }
    }
    // A parameter that some caller fills with a download (`evaluate(hf_hub_download(...))`
    // in the script's `__main__`) is an outside file, whatever else the callers pass.
    if matches!(origin, Origin::Unknown) && info.as_ref().is_some_and(|i| i.downloaded) {
        origin = Origin::CallerDownload;
    }
    if matches!(origin, Origin::Unknown) {
        origin = info
            .as_ref()
            .and_then(|i| project_save_origin(checker, i))
            .unwrap_or(Origin::Unknown);
    }
    // Test code loading a file that the test itself (or its fixture) just wrote.
    if matches!(origin, Origin::OwnSave(_)) && !explicit_false && checker.is_test_file() {
        return;
    }
    // Test code loading, even with an explicit `weights_only=False`, a file the project
    // writes into a temporary directory the test creates itself (`tempfile.mkdtemp()` in
    // `setUp`, `tmp_path`): nobody else can have put a file there.
    if matches!(origin, Origin::OwnSave(_) | Origin::ProjectSave(..))
        && checker.is_test_file()
        && path.is_some_and(|p| temp_dir(checker, p).is_some())
    {
        return;
    }
    let target = if may {
        "the project declares no torch version; declare `torch>=2.6` if that is the torch it runs on".to_string()
    } else {
        target_label(checker, &torches)
    };
    let before = if may {
        "may unpickle arbitrary objects: it does before torch 2.6"
    } else {
        "unpickles arbitrary objects before torch 2.6"
    };
    let (severity, source) = match &origin {
        Origin::Outside(what, _) => (Severity::Critical, format!("the path comes from {what}")),
        Origin::CallerDownload => (
            Severity::Critical,
            "a caller passes it a downloaded file".to_string(),
        ),
        Origin::OwnSave(_) => (
            Severity::Warning,
            "this file writes the checkpoint itself, so it is not an outside file, but".to_string(),
        ),
        Origin::ProjectSave(_, _, _, at) => (
            Severity::Warning,
            format!("the project writes this checkpoint itself ({at}), so it is not an outside file, but"),
        ),
        Origin::Shipped(_) => (
            Severity::Warning,
            "the path is built from this module's own location (`__file__`), so it is taken to be a checkpoint that ships with the code, not an outside file; still,".to_string(),
        ),
        Origin::Unknown => (
            if explicit_false {
                Severity::Warning
            } else {
                Severity::Critical
            },
            "a malicious checkpoint runs code when loaded".to_string(),
        ),
    };
    let message = if explicit_false {
        match &origin {
            Origin::Outside(..) | Origin::CallerDownload => format!(
                "`weights_only=False` unpickles arbitrary objects and {source}: a malicious checkpoint runs code when loaded ({target})"
            ),
            Origin::OwnSave(_) | Origin::ProjectSave(..) | Origin::Shipped(_) => format!(
                "`weights_only=False` unpickles arbitrary objects; {source} any file placed at that path runs code when loaded: save `state_dict()`s and load with `weights_only=True` ({target})"
            ),
            Origin::Unknown => format!(
                "`weights_only=False` unpickles arbitrary objects: a malicious checkpoint runs code when loaded; load trusted files only, or save `state_dict()`s and use `weights_only=True` ({target})"
            ),
        }
    } else {
        match &origin {
            Origin::Outside(..) | Origin::CallerDownload => format!(
                "`torch.load` without `weights_only=True` {before}, and {source}: a malicious checkpoint runs code when loaded ({target})"
            ),
            Origin::OwnSave(_) | Origin::ProjectSave(..) | Origin::Shipped(_) => format!(
                "`torch.load` without `weights_only=True` {before}; {source} any file placed at that path runs code when loaded ({target})"
            ),
            Origin::Unknown => format!(
                "`torch.load` without `weights_only=True` {before}: {source} ({target})"
            ),
        }
    };
    // What the checkpoint holds: the project's saves this load may read (any file), else the
    // saves of this file (a file's loads usually read what it saves).
    let verdict = info
        .as_ref()
        .and_then(|i| project_verdict(checker, i))
        .unwrap_or_else(|| file_verdict(checker, &paired));
    // `weights_only` exists since torch 1.13: a project that still allows older torch would
    // get a TypeError there.
    let old_torch_allowed = !checker.declared_min_at_least(1, 13);
    let fix = (!explicit_false).then(|| {
        let edit = add_keyword_argument(call, "weights_only=True");
        if old_torch_allowed {
            return RawFix::unsafe_edit(
                "Add `weights_only=True` (unsafe: the project allows torch older than 1.13, whose `torch.load` has no `weights_only` argument)",
                vec![edit],
            );
        }
        match &verdict {
            Verdict::Fails { what, site, .. } => RawFix::unsafe_edit(
                format!(
                    "Add `weights_only=True` (unsafe: the `torch.save` on {site} writes {}, which a weights-only load rejects; {} first)",
                    what.describe(),
                    what.remedy()
                ),
                vec![edit],
            ),
            Verdict::WeightsOnly(true) => RawFix::safe(
                "Add `weights_only=True` (this file's saves hold only tensors, state_dicts and plain containers)",
                vec![edit],
            ),
            Verdict::WeightsOnly(false) => RawFix::safe(
                "Add `weights_only=True` (the project's saves of this checkpoint hold only tensors, state_dicts and plain containers)",
                vec![edit],
            ),
            Verdict::Unknown => RawFix::unsafe_edit(
                "Add `weights_only=True` (unsafe: what the checkpoint holds is not known here; whole modules, optimizer objects or custom classes in it would fail to load)",
                vec![edit],
            ),
        }
    });
    let anchor = match explicit {
        Some(v) if explicit_false => call
            .arguments
            .find_keyword("weights_only")
            .map_or(v.range(), Ranged::range),
        _ => call.func.range(),
    };
    // A "may" (no torch version declared) is one severity lower.
    let severity = match (may, severity) {
        (false, s) => s,
        (true, Severity::Critical) => Severity::Warning,
        (true, _) => Severity::Info,
    };
    let d = checker.report(anchor, message);
    d.set_severity(severity);
    match origin {
        Origin::Outside(what, range) => {
            d.add_related(range, format!("the path comes from {what} here"));
        }
        Origin::OwnSave(range) => {
            d.add_related(range, "the checkpoint is written here");
        }
        Origin::ProjectSave(project, file, range, _) => {
            d.add_remote(&project, file, range, "the checkpoint is written here");
        }
        Origin::Shipped(range) => {
            d.add_related(
                range,
                "the path is relative to this file: taken as a checkpoint shipped with the code",
            );
        }
        Origin::CallerDownload | Origin::Unknown => {}
    }
    if let Verdict::Fails { what, at, .. } = &verdict {
        let note = format!(
            "this save writes {}: a weights-only load rejects it",
            what.describe()
        );
        match at {
            SaveAt::Here(range) => {
                d.add_related(*range, note);
            }
            SaveAt::Other(project, file, range) => {
                d.add_remote(project, *file, *range, note);
            }
        }
    }
    if let Some(f) = fix {
        d.set_fix(f);
    }
}

/// Where the loaded path comes from: a URL, a download, the command line or user input
/// (looked up through the assignments of the function and the module), a save of this file
/// that the project model pairs with the load by its path (the same literal, constant,
/// attribute, file name joined to a directory, ...), a save in a pytest fixture that fills
/// the parameter, or unknown.
fn origin_of(
    checker: &Checker,
    path: &Expr,
    info: Option<&LoadInfo>,
    saves: &[SaveSite],
) -> Origin {
    use torchvet_semantic::project::facts::PairBy;
    if let Some((what, range)) = outside(checker, path, 0) {
        return Origin::Outside(what, range);
    }
    if let Some(info) = info {
        let p = &info.project;
        if let Some(ps) = info
            .pairs
            .iter()
            .find(|ps| ps.by == PairBy::Path && ps.func.file == p.file)
        {
            return Origin::OwnSave(ps.call(&p.model).call);
        }
    }
    fixture_save(checker, path, saves)
        .or_else(|| helper_save(checker, path))
        .map_or(Origin::Unknown, Origin::OwnSave)
}

/// The save of a helper function of this file that writes the checkpoint and returns its
/// path (`path = _write_checkpoint(tmp_dir)`; see
/// [`torchvet_semantic::project::facts::helper_saved_path`]).
fn helper_save(checker: &Checker, path: &Expr) -> Option<TextRange> {
    let module: &[Stmt] = &checker.module().body;
    let bodies: Vec<&[Stmt]> = match checker.function() {
        Some(f) => vec![&f.body, module],
        None => vec![module],
    };
    torchvet_semantic::project::facts::helper_saved_path(
        path,
        &bodies,
        &|e| checker.resolve(e),
        path.start(),
    )
}

/// Is the call in the handler of a `try` that retries without `weights_only` (see
/// [`torchvet_semantic::helpers::is_keyword_fallback_try`])?
fn in_old_torch_fallback(checker: &Checker, call: &ExprCall) -> bool {
    checker.stmt_stack().iter().any(|s| match s {
        Stmt::Try(t) => {
            t.handlers
                .iter()
                .any(|h| h.range().contains_range(call.range()))
                && helpers::is_keyword_fallback_try(t, "weights_only")
        }
        _ => false,
    })
}

/// The temporary directory a path lies in, when the code creates it itself (see
/// [`torchvet_semantic::project::facts::temp_dir_path`]).
fn temp_dir(checker: &Checker, path: &Expr) -> Option<TextRange> {
    let module: &[Stmt] = &checker.module().body;
    let (bodies, params): (Vec<&[Stmt]>, Vec<&str>) = match checker.function() {
        Some(f) => (
            vec![&f.body, module],
            f.parameters.iter().map(|p| p.name().as_str()).collect(),
        ),
        None => (vec![module], Vec::new()),
    };
    let methods: Vec<&[Stmt]> = checker
        .method_class()
        .map(|c| {
            c.def
                .body
                .iter()
                .filter_map(|s| match s {
                    Stmt::FunctionDef(f) => Some(&f.body[..]),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    torchvet_semantic::project::facts::temp_dir_path(
        path,
        &bodies,
        &methods,
        &params,
        &|e| checker.resolve(e),
        path.start(),
    )
}

/// The `__file__` a path is built from, when it names a file shipped with the code (see
/// [`torchvet_semantic::project::facts::shipped_path`]).
fn shipped(checker: &Checker, path: &Expr) -> Option<TextRange> {
    let module: &[Stmt] = &checker.module().body;
    let bodies: Vec<&[Stmt]> = match checker.function() {
        Some(f) => vec![&f.body, module],
        None => vec![module],
    };
    torchvet_semantic::project::facts::shipped_path(
        path,
        &bodies,
        &|e| checker.resolve(e),
        path.start(),
    )
}

/// A test's parameter filled by a pytest fixture of the same file that saves the file it
/// returns (`def weights_path(tmp_path_factory): ...; torch.save(sd, path); return path`, then
/// `def test_x(weights_path): torch.load(weights_path)`): the save in the fixture.
fn fixture_save(checker: &Checker, path: &Expr, saves: &[SaveSite]) -> Option<TextRange> {
    let name = helpers::name_of(path)?;
    let f = checker.function()?;
    if !f.parameters.iter().any(|p| p.name().as_str() == name) {
        return None;
    }
    checker.module().body.iter().find_map(|s| {
        let Stmt::FunctionDef(def) = s else {
            return None;
        };
        if def.name.as_str() != name {
            return None;
        }
        let fixture = def.decorator_list.iter().any(|d| {
            let e = match &d.expression {
                Expr::Call(c) => &*c.func,
                e => e,
            };
            checker
                .resolve(e)
                .is_some_and(|q| q == "pytest.fixture" || q == "pytest_asyncio.fixture")
        });
        if !fixture {
            return None;
        }
        saves
            .iter()
            .find(|sv| def.range().contains_range(sv.call))
            .map(|sv| sv.call)
    })
}

/// Does `e` (or a part of it, or the value of a name in it) come from outside?
fn outside(checker: &Checker, e: &Expr, depth: u32) -> Option<(&'static str, TextRange)> {
    if depth > 4 {
        return None;
    }
    struct Parts<'e>(Vec<&'e Expr>);
    impl<'e> Visitor<'e> for Parts<'e> {
        fn visit_expr(&mut self, e: &'e Expr) {
            self.0.push(e);
            if !matches!(e, Expr::Lambda(_)) {
                visitor::walk_expr(self, e);
            }
        }
    }
    let mut parts = Parts(Vec::new());
    parts.visit_expr(e);
    for part in parts.0 {
        match part {
            Expr::StringLiteral(s) => {
                let v = s.value.to_str();
                if v.starts_with("http://") || v.starts_with("https://") || v.starts_with("s3://") {
                    return Some(("a URL", part.range()));
                }
            }
            Expr::Call(c) => {
                let q = checker.resolve(&c.func);
                let last = q
                    .as_deref()
                    .map(helpers::last_segment)
                    .or_else(|| match &*c.func {
                        Expr::Attribute(a) => Some(a.attr.as_str()),
                        Expr::Name(n) => Some(n.id.as_str()),
                        _ => None,
                    })
                    .unwrap_or("");
                if torchvet_semantic::project::facts::DOWNLOAD_CALLS.contains(&last)
                    || q.as_deref()
                        .is_some_and(|q| q.starts_with("requests.") || q.starts_with("urllib."))
                {
                    return Some(("a download", part.range()));
                }
                if q.as_deref() == Some("input") || (q.is_none() && last == "input") {
                    return Some(("user input", part.range()));
                }
                if matches!(last, "parse_args" | "parse_known_args") {
                    return Some(("the command line", part.range()));
                }
            }
            Expr::Subscript(s) if checker.resolve(&s.value).as_deref() == Some("sys.argv") => {
                return Some(("the command line", part.range()));
            }
            Expr::Attribute(a) => {
                if let Expr::Name(n) = &*a.value {
                    if is_cli_namespace(checker, n.id.as_str()) {
                        return Some(("the command line", part.range()));
                    }
                }
            }
            Expr::Name(n) => {
                if let Some(v) = last_assignment(checker, n.id.as_str(), e.start()) {
                    if let Some(o) = outside(checker, v, depth + 1) {
                        return Some((o.0, part.range()));
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// Is `name` the namespace of parsed command-line arguments (`args = parser.parse_args()`
/// in this function or the module, or a parameter called `args`/`opt`/`opts`)?
fn is_cli_namespace(checker: &Checker, name: &str) -> bool {
    if let Some(v) = last_assignment(checker, name, ruff_text_size::TextSize::new(u32::MAX)) {
        return helpers::parsed_cli_args(v);
    }
    matches!(name, "args" | "opt" | "opts")
        && checker
            .function()
            .is_some_and(|f| f.parameters.iter().any(|p| p.name().as_str() == name))
}

/// The value last assigned to `name` before `at` in the current function, or else at module
/// level.
fn last_assignment<'a>(
    checker: &Checker<'a>,
    name: &str,
    at: ruff_text_size::TextSize,
) -> Option<&'a Expr> {
    let find = |body: &'a [Stmt]| {
        let mut found: Option<&'a Expr> = None;
        for_each_stmt(body, &mut |s| {
            if let Stmt::Assign(a) = s {
                let binds = |t: &Expr| match t {
                    Expr::Tuple(t) => t.elts.iter().any(|e| helpers::name_of(e) == Some(name)),
                    t => helpers::name_of(t) == Some(name),
                };
                if a.value.start() < at && a.targets.iter().any(binds) {
                    found = Some(&a.value);
                }
            }
        });
        found
    };
    checker
        .function()
        .and_then(|f| find(&f.body))
        .or_else(|| find(&checker.module().body))
}

#[cfg(test)]
mod fix_safety_tests {
    use crate::{FileContext, LintSettings, Linter, Version};
    use torchvet_diagnostics::Applicability;
    use torchvet_python::SourceFile;

    fn applicability(min: Option<Version>) -> Applicability {
        let src = "import torch\n\
                   sd = torch.load(\"w.pt\")\n\
                   model.load_state_dict(sd)\n\
                   torch.save(model.state_dict(), \"w.pt\")\n";
        let mut settings = LintSettings::only("torch-load-without-weights-only");
        settings.target_torch = Some(Version::new(2, 4));
        let file = SourceFile::from_python("train.py", src.to_string());
        let ctx = FileContext {
            min_torch: min,
            ..FileContext::default()
        };
        let d = Linter::new(settings).lint_file(&file, None, "train.py", &ctx);
        assert_eq!(d.len(), 1, "{d:?}");
        d[0].fix.as_ref().expect("a fix").applicability
    }

    /// The finding on a bare load from the command line, under these declarations: (severity,
    /// message), or `None` when silent.
    fn bare_load(ctx: FileContext) -> Option<(torchvet_diagnostics::Severity, String)> {
        let src = "import sys\nimport torch\nsd = torch.load(sys.argv[1])\n";
        let settings = LintSettings::only("torch-load-without-weights-only");
        let file = SourceFile::from_python("predict.py", src.to_string());
        let d = Linter::new(settings).lint_file(&file, None, "predict.py", &ctx);
        assert!(d.len() <= 1, "{d:?}");
        d.first().map(|d| (d.severity, d.message.clone()))
    }

    #[test]
    fn the_lowest_torch_the_project_allows_decides() {
        use torchvet_diagnostics::Severity;
        let v = |major, minor| Some(Version::new(major, minor));
        // Nothing declared: a "may", one severity lower, saying how to declare the torch.
        let (sev, msg) = bare_load(FileContext::default()).expect("a may");
        assert_eq!(sev, Severity::Warning);
        assert!(
            msg.contains("may unpickle") && msg.contains("torch>=2.6"),
            "{msg}"
        );
        // `torch>=2.0` beside the file: it runs on torches whose default unpickles.
        let (sev, msg) = bare_load(FileContext {
            min_torch: v(2, 0),
            nearest_min_torch: v(2, 0),
            ..FileContext::default()
        })
        .expect("a finding");
        assert_eq!(sev, Severity::Critical);
        assert!(msg.contains("the project allows torch 2.0"), "{msg}");
        // `torch>=2.6` beside the file: silent, whatever a legacy app of the repository pins.
        assert_eq!(
            bare_load(FileContext {
                min_torch: v(2, 4),
                nearest_min_torch: v(2, 6),
                ..FileContext::default()
            }),
            None
        );
        // The nearest declaration has no bound (`torch`), another of the repository pins 2.4.
        let (sev, msg) = bare_load(FileContext {
            min_torch: v(2, 4),
            ..FileContext::default()
        })
        .expect("a finding");
        assert_eq!(sev, Severity::Critical);
        assert!(msg.contains("allows torch 2.4"), "{msg}");
        // Only the README names a torch ("Requirements: pytorch 1.5.1").
        let (sev, msg) = bare_load(FileContext {
            documented_min_torch: v(1, 5),
            ..FileContext::default()
        })
        .expect("a finding");
        assert_eq!(sev, Severity::Critical);
        assert!(msg.contains("documentation names torch 1.5"), "{msg}");
        // A pinned modern torch.
        assert_eq!(
            bare_load(FileContext {
                target: Some(v(2, 7)),
                min_torch: v(2, 7),
                nearest_min_torch: v(2, 7),
                ..FileContext::default()
            }),
            None
        );
    }

    #[test]
    fn weights_only_fix_is_unsafe_when_the_project_allows_torch_before_1_13() {
        assert_eq!(applicability(None), Applicability::Safe);
        assert_eq!(
            applicability(Some(Version::new(1, 13))),
            Applicability::Safe
        );
        assert_eq!(
            applicability(Some(Version::new(1, 7))),
            Applicability::Unsafe
        );
    }
}

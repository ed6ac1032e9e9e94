//! `torchvet server`: a language server over stdio (`lsp-server` + `lsp-types`).
//!
//! - Diagnostics are pushed on open and (debounced) on change, with the rule code, name, a
//!   link to the docs and related locations.
//! - Code actions: a quick fix per fixable finding (safe fixes preferred, unsafe ones marked),
//!   `source.fixAll.torchvet` (all safe fixes), and "add `# noqa: <rule>`".
//! - Hover on a finding shows the rule's documentation.
//! - Settings come from `[tool.torchvet]` / `torchvet.toml` and are reloaded when they change.
//!
//! - The server keeps the whole-project model of the workspace roots ([`project`]), built in
//!   the background at `initialize`, with the open documents' unsaved text overlaid. Until it
//!   is ready each document is linted alone, then everything open is checked again.
//!
//! What an edit re-checks is decided in one place, [`Session::recheck_set`]: the edited
//! document, plus the open documents among its dependents whose view of the project changed.
// `lsp_types::Uri` caches parsed parts inside; its `Hash`/`Eq` read the string only.
#![allow(clippy::mutable_key_type)]

mod actions;
mod project;
pub mod text;

use crate::settings::SettingsCache;
use lsp_server::{Connection, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::Notification as _;
use lsp_types::request::Request as _;
use lsp_types::{
    notification, request, CodeActionKind, CodeActionOptions, CodeActionProviderCapability,
    DiagnosticRelatedInformation, DiagnosticSeverity, DiagnosticTag, DidChangeTextDocumentParams,
    DidChangeWatchedFilesParams, DidChangeWatchedFilesRegistrationOptions,
    DidCloseTextDocumentParams, DidOpenTextDocumentParams, DidSaveTextDocumentParams,
    FileSystemWatcher, GlobPattern, HoverProviderCapability, InitializeParams, Location,
    MessageType, NumberOrString, PositionEncodingKind, PublishDiagnosticsParams, Registration,
    RegistrationParams, ServerCapabilities, ServerInfo, ShowMessageParams,
    TextDocumentSyncCapability, TextDocumentSyncKind, Uri,
};
use project::ProjectState;
use rustc_hash::{FxHashMap, FxHashSet};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use text::{path_to_uri, uri_to_path, Document, Encoding};
use torchvet_diagnostics::{Diagnostic, Severity};
use torchvet_linter::project::summary_of;
use torchvet_linter::FileContext;
use torchvet_python::SourceFile;
use torchvet_semantic::project::ProjectModel;

/// The code action kind of "fix all safe fixes".
pub const FIX_ALL_KIND: &str = "source.fixAll.torchvet";

/// Debounce applied to `didChange` before re-checking (overridable with the initialization
/// option `debounceMs`).
const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(100);

/// Run the language server on stdin/stdout until the client says `exit`.
pub fn run_stdio() -> anyhow::Result<()> {
    let (connection, io_threads) = Connection::stdio();
    serve(connection)?;
    io_threads.join()?;
    Ok(())
}

/// Run the language server on a connection (stdio, or in memory for tests).
pub fn serve(connection: Connection) -> anyhow::Result<()> {
    let (id, params) = connection.initialize_start()?;
    let params: InitializeParams = serde_json::from_value(params)?;
    let encoding = negotiate_encoding(&params);
    let capabilities = ServerCapabilities {
        position_encoding: Some(match encoding {
            Encoding::Utf8 => PositionEncodingKind::UTF8,
            Encoding::Utf16 => PositionEncodingKind::UTF16,
        }),
        text_document_sync: Some(TextDocumentSyncCapability::Kind(
            TextDocumentSyncKind::INCREMENTAL,
        )),
        code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
            code_action_kinds: Some(vec![
                CodeActionKind::QUICKFIX,
                CodeActionKind::SOURCE_FIX_ALL,
                CodeActionKind::new(FIX_ALL_KIND),
            ]),
            ..CodeActionOptions::default()
        })),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        ..ServerCapabilities::default()
    };
    let result = serde_json::json!({
        "capabilities": capabilities,
        "serverInfo": ServerInfo {
            name: "torchvet".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        },
    });
    connection.initialize_finish(id, result)?;
    let debounce = params
        .initialization_options
        .as_ref()
        .and_then(|o| o.get("debounceMs"))
        .and_then(|v| v.as_u64())
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_DEBOUNCE);
    let options = params.initialization_options.as_ref();
    let use_project = options
        .and_then(|o| o.get("project"))
        .and_then(|v| v.as_bool())
        .unwrap_or(true);
    let max_files = options
        .and_then(|o| o.get("projectMaxFiles"))
        .and_then(|v| v.as_u64())
        .map_or(project::DEFAULT_MAX_FILES, |n| n as usize);
    let roots = if use_project {
        workspace_roots(&params)
    } else {
        Vec::new()
    };
    let watch = params
        .capabilities
        .workspace
        .as_ref()
        .and_then(|w| w.did_change_watched_files)
        .and_then(|w| w.dynamic_registration)
        .unwrap_or(false);
    let mut session = Session {
        connection: &connection,
        encoding,
        debounce,
        documents: FxHashMap::default(),
        pending: FxHashMap::default(),
        settings: SettingsCache::default(),
        last_config_error: None,
        next_id: 0,
        project: ProjectState::new(roots, max_files),
        watch,
    };
    if watch {
        session.watch_files();
    }
    session.project.start_build();
    session.main_loop()
}

/// The workspace folders (or the root) the client opened, as absolute directories.
fn workspace_roots(params: &InitializeParams) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = match &params.workspace_folders {
        Some(folders) if !folders.is_empty() => {
            folders.iter().filter_map(|f| uri_to_path(&f.uri)).collect()
        }
        _ => {
            #[allow(deprecated)]
            let root = params
                .root_uri
                .as_ref()
                .and_then(uri_to_path)
                .or_else(|| params.root_path.as_ref().map(PathBuf::from));
            root.into_iter().collect()
        }
    };
    roots.retain(|r| r.is_dir());
    for r in roots.iter_mut() {
        *r = std::path::absolute(&*r).unwrap_or_else(|_| r.clone());
    }
    roots.sort();
    roots.dedup();
    roots
}

fn negotiate_encoding(params: &InitializeParams) -> Encoding {
    let offered = params
        .capabilities
        .general
        .as_ref()
        .and_then(|g| g.position_encodings.as_ref());
    match offered {
        Some(list) if list.contains(&PositionEncodingKind::UTF8) => Encoding::Utf8,
        _ => Encoding::Utf16,
    }
}

/// An open Python document and its latest findings.
pub(crate) struct OpenDocument {
    pub(crate) doc: Document,
    pub(crate) path: PathBuf,
    /// Findings for `doc` at `checked_version` (fixes included, for the code actions).
    pub(crate) diagnostics: Vec<Diagnostic>,
    pub(crate) checked_version: Option<i32>,
    /// The version whose findings the client was last sent.
    pub(crate) published_version: Option<i32>,
    /// The next check is a re-check because the project changed (see [`Session::mark_stale`]).
    pub(crate) quiet: bool,
}

pub(crate) struct Session<'c> {
    connection: &'c Connection,
    pub(crate) encoding: Encoding,
    debounce: Duration,
    pub(crate) documents: FxHashMap<Uri, OpenDocument>,
    /// Documents waiting for a re-check, with the time it is due.
    pending: FxHashMap<Uri, Instant>,
    pub(crate) settings: SettingsCache,
    last_config_error: Option<String>,
    next_id: i32,
    /// The whole-project model.
    pub(crate) project: ProjectState,
    /// The client tells us about changed files.
    watch: bool,
}

impl Session<'_> {
    fn main_loop(&mut self) -> anyhow::Result<()> {
        loop {
            let next_due = self.pending.values().min().copied();
            let timer = match next_due {
                Some(due) => crossbeam_channel::at(due),
                None => crossbeam_channel::never(),
            };
            let mut msg = None;
            crossbeam_channel::select! {
                recv(self.connection.receiver) -> m => match m {
                    Ok(m) => msg = Some(m),
                    Err(_) => return Ok(()),
                },
                recv(self.project.rx) -> built => {
                    if let Ok(built) = built {
                        self.model_built(built)?;
                    }
                }
                recv(self.project.relink_rx) -> r => {
                    if let Ok(r) = r {
                        self.relinked(r);
                    }
                }
                recv(timer) -> _ => {}
            }
            if let Some(msg) = msg {
                match msg {
                    Message::Request(req) => {
                        if self.connection.handle_shutdown(&req)? {
                            return Ok(());
                        }
                        // A request the server cannot read is answered with an error; the
                        // server goes on.
                        let id = req.id.clone();
                        let method = req.method.clone();
                        if let Err(e) = self.on_request(req) {
                            self.send(Response::new_err(
                                id,
                                lsp_server::ErrorCode::InvalidParams as i32,
                                format!("{method}: {e}"),
                            ))?;
                        }
                    }
                    Message::Notification(n) => {
                        let method = n.method.clone();
                        if let Err(e) = self.on_notification(n) {
                            eprintln!("torchvet server: {method}: {e}");
                        }
                    }
                    Message::Response(_) => {}
                }
            }
            self.check_due()?;
        }
    }

    fn on_request(&mut self, req: Request) -> anyhow::Result<()> {
        let id = req.id.clone();
        let result = match req.method.as_str() {
            request::CodeActionRequest::METHOD => {
                let params: lsp_types::CodeActionParams = serde_json::from_value(req.params)?;
                self.check_now(&params.text_document.uri)?;
                serde_json::to_value(actions::code_actions(self, &params))?
            }
            request::HoverRequest::METHOD => {
                let params: lsp_types::HoverParams = serde_json::from_value(req.params)?;
                let uri = &params.text_document_position_params.text_document.uri;
                self.check_now(uri)?;
                serde_json::to_value(actions::hover(
                    self,
                    uri,
                    params.text_document_position_params.position,
                ))?
            }
            _ => {
                self.send(Response::new_err(
                    id,
                    lsp_server::ErrorCode::MethodNotFound as i32,
                    format!("torchvet does not handle {}", req.method),
                ))?;
                return Ok(());
            }
        };
        self.send(Response::new_ok(id, result))
    }

    fn on_notification(&mut self, n: Notification) -> anyhow::Result<()> {
        match n.method.as_str() {
            notification::DidOpenTextDocument::METHOD => {
                let p: DidOpenTextDocumentParams = serde_json::from_value(n.params)?;
                let uri = p.text_document.uri;
                let lang = p.text_document.language_id;
                let Some(path) = uri_to_path(&uri).filter(|path| is_python(path, &lang)) else {
                    return Ok(());
                };
                let path = std::path::absolute(&path).unwrap_or(path);
                self.documents.insert(
                    uri.clone(),
                    OpenDocument {
                        doc: Document::new(p.text_document.text, p.text_document.version),
                        path,
                        diagnostics: Vec::new(),
                        checked_version: None,
                        published_version: None,
                        quiet: false,
                    },
                );
                self.check_now(&uri)?;
            }
            notification::DidChangeTextDocument::METHOD => {
                let p: DidChangeTextDocumentParams = serde_json::from_value(n.params)?;
                let uri = p.text_document.uri;
                let enc = self.encoding;
                let Some(open) = self.documents.get_mut(&uri) else {
                    return Ok(());
                };
                for change in p.content_changes {
                    open.doc.apply_change(change.range, &change.text, enc);
                }
                open.doc.version = p.text_document.version;
                // The dependents of the document are found when it is checked (its new
                // summary is compared with the model's then).
                self.pending.insert(uri, Instant::now() + self.debounce);
            }
            notification::DidSaveTextDocument::METHOD => {
                let p: DidSaveTextDocumentParams = serde_json::from_value(n.params)?;
                // A saved configuration file (or any save, if the client does not watch
                // files for us) may change the settings: re-resolve them and re-check.
                let is_config = uri_to_path(&p.text_document.uri).is_some_and(|p| is_config(&p));
                if is_config {
                    self.config_changed()?;
                } else if !self.watch {
                    self.settings_changed()?;
                }
            }
            notification::DidCloseTextDocument::METHOD => {
                let p: DidCloseTextDocumentParams = serde_json::from_value(n.params)?;
                self.pending.remove(&p.text_document.uri);
                if let Some(closed) = self.documents.remove(&p.text_document.uri) {
                    self.publish(p.text_document.uri, Vec::new(), None)?;
                    // The model goes back to the file on disk (or forgets a file that was
                    // never saved).
                    self.disk_changed(vec![closed.path]);
                }
            }
            notification::DidChangeWatchedFiles::METHOD => {
                let p: DidChangeWatchedFilesParams = serde_json::from_value(n.params)?;
                let paths: Vec<PathBuf> = p
                    .changes
                    .iter()
                    .filter_map(|c| uri_to_path(&c.uri))
                    .collect();
                if paths.iter().any(|p| is_config(p)) {
                    self.config_changed()?;
                }
                let sources: Vec<PathBuf> = paths
                    .into_iter()
                    .filter(|p| is_python(p, "") || is_notebook(p))
                    .map(|p| std::path::absolute(&p).unwrap_or(p))
                    .collect();
                if !sources.is_empty() {
                    self.disk_changed(sources);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The open documents to re-check after the files at `changed` got new summaries in the
    /// model (`old` before, `new` after).
    ///
    /// This is the one place that decides it: the open documents among the dependents of the
    /// changed files (their importers and the callers of what they define, transitively, and
    /// the files whose parameters they pass values to), in either model, whose view of the
    /// project ([`ProjectModel::view_digest`]) differs between the two. The changed files
    /// themselves are not included (an edited document is being checked already).
    pub(crate) fn recheck_set(
        &self,
        changed: &[PathBuf],
        old: &ProjectModel,
        new: &ProjectModel,
    ) -> Vec<Uri> {
        let mut candidates: FxHashSet<&Path> = FxHashSet::default();
        for m in [old, new] {
            for p in changed {
                if let Some(id) = m.file_id(p) {
                    candidates.extend(
                        m.dependents(id)
                            .into_iter()
                            .map(|d| m.file(d).path.as_path()),
                    );
                }
            }
        }
        let mut out = Vec::new();
        for (uri, open) in &self.documents {
            let path = open.path.as_path();
            if changed.iter().any(|c| c == path) || !candidates.contains(path) {
                continue;
            }
            let differs = match (old.file_id(path), new.file_id(path)) {
                (Some(a), Some(b)) => old.view_digest(a) != new.view_digest(b),
                _ => true,
            };
            if differs {
                out.push(uri.clone());
            }
        }
        out
    }

    /// Re-check the given open documents now (their text did not change, their context did).
    /// With `quiet`, findings equal to those already published are not published again.
    fn mark_stale(&mut self, uris: Vec<Uri>, quiet: bool) {
        let now = Instant::now();
        for uri in uris {
            if let Some(open) = self.documents.get_mut(&uri) {
                if open.checked_version.is_some() {
                    open.quiet = quiet;
                }
                open.checked_version = None;
                self.pending.insert(uri, now);
            }
        }
    }

    /// A background relink finished: take the new model, and re-check the open documents it
    /// changes (quietly: only different findings are published again).
    fn relinked(&mut self, r: project::Relinked) {
        let Some(new) = self.project.finish_relink(&r) else {
            if r.new.is_none() {
                eprintln!(
                    "torchvet server: internal error while updating the project model (please report it)"
                );
            }
            return;
        };
        let t0 = Instant::now();
        let mut stale = self.recheck_set(&r.paths, &r.old, &new);
        // The changed documents themselves were checked against the previous model with
        // their new summaries overlaid; once more against the relinked one.
        stale.extend(
            self.documents
                .iter()
                .filter(|(_, o)| r.paths.contains(&o.path))
                .map(|(u, _)| u.clone()),
        );
        if timing() {
            eprintln!(
                "torchvet server: relink of {:?} {:.1} ms (background), recheck set {:.1} ms ({} documents)",
                r.paths
                    .iter()
                    .filter_map(|p| p.file_name())
                    .collect::<Vec<_>>(),
                r.elapsed.as_secs_f64() * 1e3,
                t0.elapsed().as_secs_f64() * 1e3,
                stale.len()
            );
        }
        self.mark_stale(stale, true);
    }

    /// Files changed on disk (or an open document was closed): read the ones that are not
    /// open into the model, drop the deleted ones.
    fn disk_changed(&mut self, paths: Vec<PathBuf>) {
        if self.project.is_building() {
            self.project.changed_while_building.extend(paths);
            return;
        }
        let Some(model) = self.project.model.clone() else {
            return;
        };
        let open: FxHashSet<PathBuf> = self.documents.values().map(|o| o.path.clone()).collect();
        for path in paths {
            if open.contains(&path) {
                // The model follows the buffer while it is open.
                continue;
            }
            let known = model.file_id(&path);
            if !path.exists() {
                if known.is_some_and(|id| model.is_checked(id)) || self.project.is_pending(&path) {
                    self.project.queue(path, None);
                }
                continue;
            }
            if known.is_none() && !self.project.covers(&path) {
                continue;
            }
            let summary = std::panic::catch_unwind(AssertUnwindSafe(|| {
                let source = SourceFile::load(&path).ok()?;
                let parsed = source.parse();
                Some(match known {
                    Some(id) => model.view(id).summarise_text(&source, parsed.syntax()),
                    None => summary_of(&source, &parsed),
                })
            }))
            .ok()
            .flatten();
            let expected = self
                .project
                .pending_fingerprint(&path)
                .unwrap_or_else(|| known.map(|id| model.file(id).fingerprint));
            match (summary, known) {
                (Some(s), _) if expected == Some(s.fingerprint) => {}
                (Some(s), _) => self.project.queue(path, Some(s)),
                (None, Some(id)) if model.is_checked(id) => self.project.queue(path, None),
                (None, _) => {}
            }
        }
    }

    /// A background build finished: check every open document against the model (each
    /// one's buffer is overlaid as it is checked), and apply what changed on disk meanwhile.
    fn model_built(&mut self, built: project::Built) -> anyhow::Result<()> {
        let files = built.files;
        let elapsed = built.elapsed;
        if self.project.finish(built).is_none() {
            if let Some(reason) = self.project.off_reason.clone() {
                self.show_config_error(reason)?;
            }
            return Ok(());
        }
        self.send(Notification::new(
            notification::LogMessage::METHOD.into(),
            lsp_types::LogMessageParams {
                typ: MessageType::INFO,
                message: format!(
                    "torchvet: project model of {files} files built in {:.2}s",
                    elapsed.as_secs_f64()
                ),
            },
        ))?;
        let changed = std::mem::take(&mut self.project.changed_while_building);
        if !changed.is_empty() {
            self.disk_changed(changed);
        }
        let all: Vec<Uri> = self.documents.keys().cloned().collect();
        self.mark_stale(all, true);
        Ok(())
    }

    fn settings_changed(&mut self) -> anyhow::Result<()> {
        self.settings.clear();
        let all: Vec<Uri> = self.documents.keys().cloned().collect();
        self.mark_stale(all, false);
        Ok(())
    }

    /// A configuration file changed: new settings, and the model is built again (its
    /// excludes may have changed); the current model stays in use meanwhile.
    fn config_changed(&mut self) -> anyhow::Result<()> {
        self.settings_changed()?;
        if self.project.enabled() {
            self.project.start_build();
        }
        Ok(())
    }

    fn check_due(&mut self) -> anyhow::Result<()> {
        let now = Instant::now();
        let due: Vec<Uri> = self
            .pending
            .iter()
            .filter(|(_, &t)| t <= now)
            .map(|(u, _)| u.clone())
            .collect();
        for uri in due {
            self.check_now(&uri)?;
        }
        Ok(())
    }

    /// Check a document now if its findings are out of date, and publish them.
    pub(crate) fn check_now(&mut self, uri: &Uri) -> anyhow::Result<()> {
        self.pending.remove(uri);
        let Some(open) = self.documents.get(uri) else {
            return Ok(());
        };
        if open.checked_version == Some(open.doc.version) {
            return Ok(());
        }
        let (diagnostics, error) = self.lint_document(uri);
        if let Some(e) = error {
            self.show_config_error(e)?;
        }
        let open = &self.documents[uri];
        let version = open.doc.version;
        // A quiet re-check (the project changed, not the text) that finds the same as what
        // the client has is not published again.
        let unchanged = open.quiet
            && open.published_version == Some(version)
            && open.diagnostics == diagnostics;
        let lsp: Vec<_> = if unchanged {
            Vec::new()
        } else {
            diagnostics
                .iter()
                .map(|d| to_lsp(d, &open.doc, uri, self.encoding, &self.documents))
                .collect()
        };
        let open = self.documents.get_mut(uri).expect("checked above");
        open.checked_version = Some(version);
        open.quiet = false;
        open.diagnostics = diagnostics;
        if unchanged {
            return Ok(());
        }
        open.published_version = Some(version);
        self.publish(uri.clone(), lsp, Some(version))
    }

    /// The document's context in the project: the model's view of it with the summary of its
    /// current text overlaid. When that summary differs from the model's, it is queued for a
    /// background relink (which then re-checks the open documents it changes).
    /// Without a model (not ready yet, no workspace, a file outside it, a new file before its
    /// first relink): linted alone.
    fn context_for(&mut self, path: &Path, source: &SourceFile, parsed: &Parsed) -> FileContext {
        let Some(model) = self.project.model.clone() else {
            return FileContext::default();
        };
        let known = model.file_id(path);
        if known.is_none() && !self.project.covers(path) {
            return FileContext::default();
        }
        let Ok(summary) = std::panic::catch_unwind(AssertUnwindSafe(|| match known {
            // As the model summarised it (the torch names its star imports bring).
            Some(id) => model.view(id).summarise_text(source, parsed.syntax()),
            None => summary_of(source, parsed),
        })) else {
            return FileContext::default();
        };
        // What the model holds for the file, or will once the pending relinks are done: a
        // re-check while a relink of this very text runs must not queue it again.
        let expected = self
            .project
            .pending_fingerprint(path)
            .unwrap_or_else(|| known.map(|id| model.file(id).fingerprint));
        if expected != Some(summary.fingerprint) {
            self.project
                .queue(path.to_path_buf(), Some(summary.clone()));
        }
        match known {
            Some(id) => FileContext {
                project: Some(model.view(id).with_overlay(summary)),
                ..FileContext::default()
            },
            None => FileContext::default(),
        }
    }

    /// Lint a document's text with the settings of its configuration file, in its context.
    fn lint_document(&mut self, uri: &Uri) -> (Vec<Diagnostic>, Option<String>) {
        let open = &self.documents[uri];
        let path = open.path.clone();
        let text = open.doc.text.clone();
        let (ws, error) = self.settings.for_file(&path);
        let name = display_name(&path, &ws.root);
        let source = match std::panic::catch_unwind(|| {
            SourceFile::from_bytes(path.clone(), text.into_bytes(), false)
        }) {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return (Vec::new(), Some(format!("{name}: {e}"))),
            Err(_) => {
                return (
                    Vec::new(),
                    Some(format!(
                        "{name}: internal error while reading (please report it)"
                    )),
                )
            }
        };
        let t0 = Instant::now();
        let parsed = source.parse();
        let t1 = Instant::now();
        let ctx = self.context_for(&path, &source, &parsed);
        let t2 = Instant::now();
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let mut d = ws.linter.lint_file(&source, Some(&parsed), &name, &ctx);
            ws.apply_per_file_ignores(&path, &mut d);
            d
        }));
        if timing() {
            let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
            eprintln!(
                "torchvet server: {name}: parse {:.1} ms, summary and model {:.1} ms, rules {:.1} ms",
                ms(t0, t1),
                ms(t1, t2),
                ms(t2, Instant::now())
            );
        }
        match result {
            Ok(d) => (d, error),
            Err(_) => (
                Vec::new(),
                Some(format!(
                    "{name}: internal error while linting (please report it)"
                )),
            ),
        }
    }

    /// The context to fix a document in (code actions): the model's view with the
    /// document's current text.
    pub(crate) fn fix_context(&self, path: &Path, source: &SourceFile) -> FileContext {
        let Some(model) = &self.project.model else {
            return FileContext::default();
        };
        let Some(id) = model.file_id(path) else {
            return FileContext::default();
        };
        let ctx = FileContext {
            project: Some(model.view(id)),
            ..FileContext::default()
        };
        std::panic::catch_unwind(AssertUnwindSafe(|| ctx.for_text(source))).unwrap_or_default()
    }
}

type Parsed = ruff_python_parser::Parsed<ruff_python_ast::ModModule>;

/// `TORCHVET_TIMING=1`: where the time of each check goes, on stderr.
fn timing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("TORCHVET_TIMING").is_some())
}

fn is_config(path: &Path) -> bool {
    matches!(
        path.file_name().and_then(|n| n.to_str()),
        Some("pyproject.toml" | "torchvet.toml")
    )
}

fn is_notebook(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()) == Some("ipynb")
}

impl Session<'_> {
    fn show_config_error(&mut self, message: String) -> anyhow::Result<()> {
        if self.last_config_error.as_deref() == Some(message.as_str()) {
            return Ok(());
        }
        self.last_config_error = Some(message.clone());
        self.send(Notification::new(
            notification::ShowMessage::METHOD.into(),
            ShowMessageParams {
                typ: MessageType::WARNING,
                message: format!("torchvet: {message}"),
            },
        ))
    }

    fn publish(
        &self,
        uri: Uri,
        diagnostics: Vec<lsp_types::Diagnostic>,
        version: Option<i32>,
    ) -> anyhow::Result<()> {
        self.send(Notification::new(
            notification::PublishDiagnostics::METHOD.into(),
            PublishDiagnosticsParams {
                uri,
                diagnostics,
                version,
            },
        ))
    }

    /// Ask the client to tell us when a configuration file or a source file changes.
    fn watch_files(&mut self) {
        let watchers = [
            "**/pyproject.toml",
            "**/torchvet.toml",
            "**/*.py",
            "**/*.ipynb",
        ]
        .into_iter()
        .map(|g| FileSystemWatcher {
            glob_pattern: GlobPattern::String(g.into()),
            kind: None,
        })
        .collect();
        let options = DidChangeWatchedFilesRegistrationOptions { watchers };
        let params = RegistrationParams {
            registrations: vec![Registration {
                id: "torchvet-watched-files".into(),
                method: notification::DidChangeWatchedFiles::METHOD.into(),
                register_options: serde_json::to_value(options).ok(),
            }],
        };
        self.next_id += 1;
        let _ = self.send(Request::new(
            RequestId::from(format!("torchvet-{}", self.next_id)),
            request::RegisterCapability::METHOD.into(),
            params,
        ));
    }

    pub(crate) fn send(&self, msg: impl Into<Message>) -> anyhow::Result<()> {
        self.connection
            .sender
            .send(msg.into())
            .map_err(|e| anyhow::anyhow!("the client connection is closed: {e}"))
    }
}

fn is_python(path: &Path, language_id: &str) -> bool {
    language_id == "python"
        || matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("py" | "pyw" | "pyi")
        )
}

fn display_name(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// A torchvet finding as an LSP diagnostic.
/// Related locations in other files of the project are given in those files (positions from
/// their open documents when they are open; byte columns otherwise).
pub(crate) fn to_lsp(
    d: &Diagnostic,
    doc: &Document,
    uri: &Uri,
    enc: Encoding,
    open: &FxHashMap<Uri, OpenDocument>,
) -> lsp_types::Diagnostic {
    let severity = match d.severity {
        Severity::Critical => DiagnosticSeverity::ERROR,
        Severity::Warning => DiagnosticSeverity::WARNING,
        Severity::Info => DiagnosticSeverity::INFORMATION,
    };
    let related = d
        .related
        .iter()
        .filter_map(|r| {
            let (uri, doc) = match &r.filename {
                None => (uri.clone(), Some(doc)),
                Some(f) => {
                    let path = Path::new(f);
                    let path = if path.is_absolute() {
                        path.to_path_buf()
                    } else {
                        std::env::current_dir().ok()?.join(path)
                    };
                    let other = path_to_uri(&path)?;
                    let doc = open.get(&other).map(|o| &o.doc);
                    (other, doc)
                }
            };
            let pos = |row: usize, column: usize| match doc {
                Some(doc) => doc.lines.position_of_row_col(&doc.text, row, column, enc),
                None => lsp_types::Position::new(
                    row.saturating_sub(1) as u32,
                    column.saturating_sub(1) as u32,
                ),
            };
            Some(DiagnosticRelatedInformation {
                location: Location {
                    uri,
                    range: lsp_types::Range::new(
                        pos(r.location.row, r.location.column),
                        pos(r.end_location.row, r.end_location.column),
                    ),
                },
                message: r.message.clone(),
            })
        })
        .collect::<Vec<_>>();
    let deprecated = torchvet_linter::find_rule(d.code)
        .map(|i| torchvet_linter::all_rules()[i].group == torchvet_linter::Group::DeprecatedApi)
        .unwrap_or(false);
    lsp_types::Diagnostic {
        range: doc.range(d.range.0, d.range.1, enc),
        severity: Some(severity),
        code: Some(NumberOrString::String(d.code.to_string())),
        code_description: d
            .url
            .parse()
            .ok()
            .map(|href| lsp_types::CodeDescription { href }),
        source: Some("torchvet".into()),
        message: format!("{} [{}]", d.message, d.name),
        related_information: (!related.is_empty()).then_some(related),
        tags: deprecated.then(|| vec![DiagnosticTag::DEPRECATED]),
        data: Some(serde_json::json!({
            "name": d.name,
            "fix": d.fix.as_ref().map(|f| f.applicability),
        })),
    }
}

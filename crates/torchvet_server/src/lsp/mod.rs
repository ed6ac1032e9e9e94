//! `torchvet server`: a language server over stdio (`lsp-server` + `lsp-types`).
//!
//! - Diagnostics are pushed on open and (debounced) on change, with the rule code, name, a
//!   link to the docs and related locations.
//! - Code actions: a quick fix per fixable finding (safe fixes preferred, unsafe ones marked),
//!   `source.fixAll.torchvet` (all safe fixes), and "add `# noqa: <rule>`".
//! - Hover on a finding shows the rule's documentation.
//! - Settings come from `[tool.torchvet]` / `torchvet.toml` and are reloaded when they change.
//!
//! What an edit re-checks is decided in one place, [`Session::recheck_set`]: with the
//! per-file linter it is the edited document alone; with the project model it becomes the
//! document plus the open documents that depend on it.
// `lsp_types::Uri` caches parsed parts inside; its `Hash`/`Eq` read the string only.
#![allow(clippy::mutable_key_type)]

mod actions;
pub mod text;

use crate::settings::SettingsCache;
use crossbeam_channel::RecvTimeoutError;
use lsp_server::{Connection, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::Notification as _;
use lsp_types::request::Request as _;
use lsp_types::{
    notification, request, CodeActionKind, CodeActionOptions, CodeActionProviderCapability,
    DiagnosticRelatedInformation, DiagnosticSeverity, DiagnosticTag, DidChangeTextDocumentParams,
    DidChangeWatchedFilesRegistrationOptions, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, FileSystemWatcher, GlobPattern, HoverProviderCapability,
    InitializeParams, Location, MessageType, NumberOrString, PositionEncodingKind,
    PublishDiagnosticsParams, Registration, RegistrationParams, ServerCapabilities, ServerInfo,
    ShowMessageParams, TextDocumentSyncCapability, TextDocumentSyncKind, Uri,
};
use rustc_hash::FxHashMap;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use text::{uri_to_path, Document, Encoding};
use torchvet_diagnostics::{Diagnostic, Severity};
use torchvet_python::SourceFile;

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
    };
    if watch {
        session.watch_config_files();
    }
    session.main_loop()
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
}

impl Session<'_> {
    fn main_loop(&mut self) -> anyhow::Result<()> {
        loop {
            let next_due = self.pending.values().min().copied();
            let msg = match next_due {
                None => match self.connection.receiver.recv() {
                    Ok(m) => Some(m),
                    Err(_) => return Ok(()),
                },
                Some(due) => {
                    let wait = due.saturating_duration_since(Instant::now());
                    match self.connection.receiver.recv_timeout(wait) {
                        Ok(m) => Some(m),
                        Err(RecvTimeoutError::Timeout) => None,
                        Err(RecvTimeoutError::Disconnected) => return Ok(()),
                    }
                }
            };
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
                self.documents.insert(
                    uri.clone(),
                    OpenDocument {
                        doc: Document::new(p.text_document.text, p.text_document.version),
                        path,
                        diagnostics: Vec::new(),
                        checked_version: None,
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
                let due = Instant::now() + self.debounce;
                for u in self.recheck_set(&uri) {
                    self.pending.insert(u, due);
                }
            }
            notification::DidSaveTextDocument::METHOD => {
                // A saved configuration file (or any save, if the client does not watch
                // files for us) may change the settings: re-resolve them and re-check.
                self.settings_changed()?;
            }
            notification::DidCloseTextDocument::METHOD => {
                let p: DidCloseTextDocumentParams = serde_json::from_value(n.params)?;
                self.pending.remove(&p.text_document.uri);
                if self.documents.remove(&p.text_document.uri).is_some() {
                    self.publish(p.text_document.uri, Vec::new(), None)?;
                }
            }
            notification::DidChangeWatchedFiles::METHOD => self.settings_changed()?,
            _ => {}
        }
        Ok(())
    }

    /// The open documents to re-check after `changed` was edited.
    ///
    /// This is the one place that decides it. The per-file linter needs the edited document
    /// only; once rules read the whole-project model, this asks the model for the documents
    /// whose facts depend on `changed` (its importers, the callers of what it defines) and
    /// returns those that are open too.
    pub(crate) fn recheck_set(&mut self, changed: &Uri) -> Vec<Uri> {
        vec![changed.clone()]
    }

    fn settings_changed(&mut self) -> anyhow::Result<()> {
        self.settings.clear();
        let now = Instant::now();
        for (uri, open) in self.documents.iter_mut() {
            open.checked_version = None;
            self.pending.insert(uri.clone(), now);
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
        let (diagnostics, error) = lint_document(&mut self.settings, open);
        if let Some(e) = error {
            self.show_config_error(e)?;
        }
        let open = self.documents.get_mut(uri).expect("checked above");
        open.checked_version = Some(open.doc.version);
        open.diagnostics = diagnostics;
        let version = open.doc.version;
        let lsp = open
            .diagnostics
            .iter()
            .map(|d| to_lsp(d, &open.doc, uri, self.encoding))
            .collect();
        self.publish(uri.clone(), lsp, Some(version))
    }
}

/// Lint a document's text with the settings of its configuration file.
fn lint_document(
    settings: &mut SettingsCache,
    open: &OpenDocument,
) -> (Vec<Diagnostic>, Option<String>) {
    let (ws, error) = settings.for_file(&open.path);
    let name = display_name(&open.path, &ws.root);
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let source =
            SourceFile::from_bytes(open.path.clone(), open.doc.text.clone().into_bytes(), false)
                .map_err(|e| e.to_string())?;
        let mut d = ws.linter.lint(&source, &name);
        ws.apply_per_file_ignores(&open.path, &mut d);
        Ok::<_, String>(d)
    }));
    match result {
        Ok(Ok(d)) => (d, error),
        Ok(Err(e)) => (Vec::new(), Some(format!("{name}: {e}"))),
        Err(_) => (
            Vec::new(),
            Some(format!(
                "{name}: internal error while linting (please report it)"
            )),
        ),
    }
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

    /// Ask the client to tell us when a configuration file changes.
    fn watch_config_files(&mut self) {
        let watchers = ["**/pyproject.toml", "**/torchvet.toml"]
            .into_iter()
            .map(|g| FileSystemWatcher {
                glob_pattern: GlobPattern::String(g.into()),
                kind: None,
            })
            .collect();
        let options = DidChangeWatchedFilesRegistrationOptions { watchers };
        let params = RegistrationParams {
            registrations: vec![Registration {
                id: "torchvet-config-files".into(),
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
pub(crate) fn to_lsp(
    d: &Diagnostic,
    doc: &Document,
    uri: &Uri,
    enc: Encoding,
) -> lsp_types::Diagnostic {
    let severity = match d.severity {
        Severity::Critical => DiagnosticSeverity::ERROR,
        Severity::Warning => DiagnosticSeverity::WARNING,
        Severity::Info => DiagnosticSeverity::INFORMATION,
    };
    let related = d
        .related
        .iter()
        .map(|r| DiagnosticRelatedInformation {
            location: Location {
                uri: uri.clone(),
                range: lsp_types::Range::new(
                    doc.lines.position_of_row_col(
                        &doc.text,
                        r.location.row,
                        r.location.column,
                        enc,
                    ),
                    doc.lines.position_of_row_col(
                        &doc.text,
                        r.end_location.row,
                        r.end_location.column,
                        enc,
                    ),
                ),
            },
            message: r.message.clone(),
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

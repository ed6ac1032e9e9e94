//! `torchvet mcp`: a Model Context Protocol server over stdio (`rmcp`, the official Rust SDK),
//! so AI coding agents can ask torchvet for facts.
//!
//! Tools (each with a JSON schema; results are structured, plus a short text rendering):
//! `check`, `review`, `project`, `summary`, `ckpt_scan`, `ckpt_inspect`, `ckpt_diff`, `rule`.
//! The rule catalog is exposed as resources (`torchvet://rules`, `torchvet://rules/<name>`).
//!
//! Every path is resolved against the server's workspace roots and refused when it leads
//! outside them (symbolic links included). Nothing is executed, imported or unpickled: the
//! tools run the torchvet binary's own subcommands (the same code and output as the command
//! line, with JSON output) in a child process with a time limit, and `check` writes files only
//! when `fix: true` is given.
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock as Content, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, ErrorData, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Longest a tool may run before its child process is stopped.
const TOOL_TIMEOUT: Duration = Duration::from_secs(600);
/// Findings returned by `check` unless `limit` says otherwise.
const DEFAULT_LIMIT: usize = 200;

/// Run the MCP server on stdin/stdout. `exe` is the torchvet binary the tools run; `roots`
/// are the directories the tools may read.
pub fn run_stdio(exe: PathBuf, roots: &[PathBuf]) -> anyhow::Result<()> {
    let server = McpServer::new(exe, roots)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let service = server.serve(rmcp::transport::stdio()).await?;
        service.waiting().await?;
        Ok(())
    })
}

/// The server: the binary it runs, the roots it confines paths to, and its tools.
#[derive(Clone)]
pub struct McpServer {
    exe: Arc<PathBuf>,
    roots: Arc<Vec<PathBuf>>,
    tool_router: ToolRouter<Self>,
}

/// Arguments of `check`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CheckParams {
    /// Files or directories to check, relative to the workspace root or absolute inside it
    /// (default: the whole workspace root).
    #[serde(default)]
    pub paths: Vec<String>,
    /// Rules to enable instead of the configured/default ones: names, codes (TV007), code
    /// prefixes, groups (correctness, security, memory, ...), TorchFix codes, or ALL.
    pub select: Option<Vec<String>>,
    /// Rules to enable on top of the selection.
    pub extend_select: Option<Vec<String>>,
    /// Rules to disable.
    pub ignore: Option<Vec<String>>,
    /// Enable preview rules (lower-confidence flow rules).
    #[serde(default)]
    pub preview: bool,
    /// The torch version the code targets, e.g. "2.1" (default: configuration, then the
    /// project's declared version, then latest).
    pub target_torch: Option<String>,
    /// Apply the safe fixes to the files. Off unless explicitly true: without it nothing is
    /// ever written.
    #[serde(default)]
    pub fix: bool,
    /// Most findings to return (default 200); `count` always gives the total.
    pub limit: Option<usize>,
}

/// Arguments of `review`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReviewParams {
    /// File or directory to review (default: the workspace root).
    pub path: Option<String>,
    /// `json` (structured sections, the default) or `markdown` (the report as text).
    pub format: Option<ReviewFormat>,
}

/// Output of `review`.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReviewFormat {
    /// Structured sections.
    Json,
    /// The Markdown report.
    Markdown,
}

/// Arguments of `project`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ProjectParams {
    /// The project directory (default: the workspace root).
    pub dir: Option<String>,
}

/// Arguments of `summary`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SummaryParams {
    /// A Python file, optionally followed by `::ClassName` (e.g. `models/net.py::Net`).
    pub target: String,
}

/// Arguments of `ckpt_scan`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ScanParams {
    /// Checkpoint files or directories (walked for checkpoint files).
    pub paths: Vec<String>,
}

/// Arguments of `ckpt_inspect`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct InspectParams {
    /// The checkpoint file.
    pub file: String,
}

/// Arguments of `ckpt_diff`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DiffParams {
    /// Reference checkpoint (what the model expects); with `against`, the checkpoint to check.
    pub a: String,
    /// Checkpoint to compare with `a` (omit when `against` is given).
    pub b: Option<String>,
    /// Compare `a` with the state_dict of a model class instead: `FILE.py::Class`.
    pub against: Option<String>,
    /// Subtree of both files to compare (e.g. `model_state_dict`).
    pub key: Option<String>,
    /// Also compare values (largest absolute difference per tensor).
    #[serde(default)]
    pub values: bool,
}

/// Arguments of `rule`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RuleParams {
    /// A rule name (`missing-zero-grad`), code (`TV007`) or TorchFix code (`TOR102`).
    pub rule: String,
}

/// A tool's failure, shown to the agent as an error result (not a protocol error).
struct ToolError(String);

type ToolResult = Result<CallToolResult, ErrorData>;

fn tool_error(message: impl Into<String>) -> ToolResult {
    Ok(CallToolResult::error(vec![Content::text(message.into())]))
}

/// Structured content must be an object: wrap anything else under `key`.
fn as_object(value: Value, key: &str) -> Value {
    if value.is_object() {
        value
    } else {
        json!({ key: value })
    }
}

fn ok(structured: Value, text: String) -> ToolResult {
    let mut r = CallToolResult::structured(structured);
    r.content = vec![Content::text(text)];
    Ok(r)
}

impl McpServer {
    /// A server running `exe`, confined to `roots` (which must exist).
    pub fn new(exe: PathBuf, roots: &[PathBuf]) -> anyhow::Result<Self> {
        let mut canon = Vec::new();
        for r in roots {
            let c = r
                .canonicalize()
                .map_err(|e| anyhow::anyhow!("workspace root {}: {e}", r.display()))?;
            if !c.is_dir() {
                anyhow::bail!("workspace root {} is not a directory", r.display());
            }
            canon.push(c);
        }
        if canon.is_empty() {
            anyhow::bail!("no workspace root");
        }
        Ok(Self {
            exe: Arc::new(exe),
            roots: Arc::new(canon),
            tool_router: Self::tool_router(),
        })
    }

    /// Resolve a path given by the client: relative paths are relative to the first root;
    /// the result (symbolic links resolved) must exist and lie inside a root.
    fn confine(&self, given: &str) -> Result<PathBuf, ToolError> {
        let p = Path::new(given);
        let joined = if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.roots[0].join(p)
        };
        let canon = joined
            .canonicalize()
            .map_err(|e| ToolError(format!("{given}: {e}")))?;
        if self.roots.iter().any(|r| canon.starts_with(r)) {
            Ok(canon)
        } else {
            Err(ToolError(format!(
                "{given}: outside the workspace roots ({}); refused",
                self.roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    }

    /// A `FILE.py::Class` target with its file confined.
    fn confine_target(&self, target: &str) -> Result<String, ToolError> {
        let (file, class) = match target.rsplit_once("::") {
            Some((f, c)) => (f, Some(c)),
            None => (target, None),
        };
        let file = self.display(&self.confine(file)?);
        Ok(match class {
            Some(c) => format!("{file}::{c}"),
            None => file,
        })
    }

    /// How a confined path is passed to the child (relative to the first root when inside
    /// it, so file names in results read as the agent gave them).
    fn display(&self, p: &Path) -> String {
        match p.strip_prefix(&self.roots[0]) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => p.to_string_lossy().into_owned(),
        }
    }

    fn confine_all(&self, paths: &[String]) -> Result<Vec<String>, ToolError> {
        paths
            .iter()
            .map(|p| self.confine(p).map(|c| self.display(&c)))
            .collect()
    }

    /// Run `torchvet <args>` in the first root; returns (exit code, stdout, stderr).
    async fn run(&self, args: &[String]) -> Result<(i32, String, String), ToolError> {
        let mut cmd = tokio::process::Command::new(self.exe.as_path());
        cmd.args(args)
            .current_dir(&self.roots[0])
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let out = tokio::time::timeout(TOOL_TIMEOUT, cmd.output())
            .await
            .map_err(|_| ToolError(format!("timed out after {}s", TOOL_TIMEOUT.as_secs())))?
            .map_err(|e| ToolError(format!("cannot run torchvet: {e}")))?;
        Ok((
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ))
    }

    /// Run a subcommand whose stdout is JSON; a non-JSON answer is an error with stderr.
    async fn run_json(&self, args: &[String]) -> Result<(Value, Vec<String>), ToolError> {
        let (code, out, err) = self.run(args).await?;
        let errors: Vec<String> = err
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect();
        match serde_json::from_str::<Value>(&out) {
            Ok(v) => Ok((v, errors)),
            Err(_) => Err(ToolError(if err.trim().is_empty() {
                format!("torchvet exited {code} without a result")
            } else {
                err.trim().to_string()
            })),
        }
    }
}

/// The user's cache directory for this workspace (`$XDG_CACHE_HOME/torchvet/mcp/<hash>`, or
/// `~/.cache/...`), or `None` when there is no such directory.
fn cache_dir(root: &Path) -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    root.hash(&mut h);
    Some(
        base.join("torchvet")
            .join("mcp")
            .join(format!("{:016x}", h.finish())),
    )
}

fn strings(list: &[String]) -> String {
    list.join(",")
}

#[tool_router(router = tool_router)]
impl McpServer {
    /// Lint Python files and notebooks for PyTorch mistakes.
    #[tool(
        name = "check",
        description = "Lint Python files and notebooks for PyTorch mistakes (missing zero_grad, softmax fed to CrossEntropyLoss, eval in train mode, unsafe torch.load, ...). Returns findings with rule code and name, severity, message, location and fix. Read-only unless fix is true."
    )]
    async fn check(&self, Parameters(p): Parameters<CheckParams>) -> ToolResult {
        let paths = if p.paths.is_empty() {
            vec![".".to_string()]
        } else {
            p.paths.clone()
        };
        let paths = match self.confine_all(&paths) {
            Ok(p) => p,
            Err(ToolError(e)) => return tool_error(e),
        };
        let mut args: Vec<String> = vec!["check".into()];
        args.extend(paths);
        args.extend(["--output-format".into(), "json".into()]);
        if let Some(s) = &p.select {
            args.push(format!("--select={}", strings(s)));
        }
        if let Some(s) = &p.extend_select {
            args.push(format!("--extend-select={}", strings(s)));
        }
        if let Some(s) = &p.ignore {
            args.push(format!("--ignore={}", strings(s)));
        }
        if p.preview {
            args.push("--preview".into());
        }
        if let Some(v) = &p.target_torch {
            args.push(format!("--target-torch={v}"));
        }
        if p.fix {
            args.push("--fix".into());
        }
        // The result cache lives outside the workspace: without `fix`, nothing is written
        // there.
        match cache_dir(&self.roots[0]) {
            Some(dir) => args.push(format!("--cache-dir={}", dir.display())),
            None => args.push("--no-cache".into()),
        }
        let (value, errors) = match self.run_json(&args).await {
            Ok(v) => v,
            Err(ToolError(e)) => return tool_error(e),
        };
        let mut findings = match value {
            Value::Array(a) => a,
            other => vec![other],
        };
        let count = findings.len();
        let limit = p.limit.unwrap_or(DEFAULT_LIMIT);
        let mut by_rule: Map<String, Value> = Map::new();
        for f in &findings {
            let name = f["name"].as_str().unwrap_or("?").to_string();
            let n = by_rule.get(&name).and_then(Value::as_u64).unwrap_or(0);
            by_rule.insert(name, json!(n + 1));
        }
        findings.truncate(limit);
        let mut text = format!(
            "{count} finding{}{}",
            if count == 1 { "" } else { "s" },
            if p.fix {
                " left after applying safe fixes"
            } else {
                ""
            }
        );
        text.push_str(if count == 0 { ".\n" } else { ":\n" });
        for f in findings.iter().take(50) {
            text.push_str(&format!(
                "{}:{}:{}: {} {} [{}] {}\n",
                f["filename"].as_str().unwrap_or(""),
                f["location"]["row"],
                f["location"]["column"],
                f["code"].as_str().unwrap_or(""),
                f["name"].as_str().unwrap_or(""),
                f["severity"].as_str().unwrap_or(""),
                f["message"].as_str().unwrap_or(""),
            ));
        }
        if count > 50 {
            text.push_str(&format!(
                "... and {} more (see the structured result)\n",
                count - 50
            ));
        }
        for e in &errors {
            text.push_str(&format!("{e}\n"));
        }
        ok(
            json!({
                "count": count,
                "truncated": count > findings.len(),
                "by_rule": by_rule,
                "findings": findings,
                "errors": errors,
                "fixed": p.fix,
            }),
            text,
        )
    }

    /// The reviewer's structured report.
    #[tool(
        name = "review",
        description = "A PyTorch code review of a file or directory: critical issues, performance, best practices, positive aspects and tests to write, each backed by findings and facts. format: json (default, structured) or markdown."
    )]
    async fn review(&self, Parameters(p): Parameters<ReviewParams>) -> ToolResult {
        let path = match self.confine(p.path.as_deref().unwrap_or(".")) {
            Ok(c) => self.display(&c),
            Err(ToolError(e)) => return tool_error(e),
        };
        let markdown = matches!(p.format, Some(ReviewFormat::Markdown));
        let format = if markdown { "markdown" } else { "json" };
        let args = vec!["review".into(), path, "--format".into(), format.into()];
        if markdown {
            return match self.run(&args).await {
                Ok((0, out, _)) => ok(json!({ "markdown": out }), out),
                Ok((_, _, err)) => tool_error(err.trim().to_string()),
                Err(ToolError(e)) => tool_error(e),
            };
        }
        match self.run_json(&args).await {
            Ok((v, _)) => {
                let text = summarize_sections(&v);
                ok(as_object(v, "review"), text)
            }
            Err(ToolError(e)) => tool_error(e),
        }
    }

    /// The project facts.
    #[tool(
        name = "project",
        description = "Detect a PyTorch project and describe it: triggers, torch version, model/training/checkpoint directories, commands to run, each with its evidence (the facts a PyTorch agent needs before editing)."
    )]
    async fn project(&self, Parameters(p): Parameters<ProjectParams>) -> ToolResult {
        let dir = match self.confine(p.dir.as_deref().unwrap_or(".")) {
            Ok(c) => self.display(&c),
            Err(ToolError(e)) => return tool_error(e),
        };
        let args = vec!["project".into(), dir, "--format".into(), "json".into()];
        match self.run_json(&args).await {
            Ok((v, _)) => {
                let text = summarize_fields(&v);
                ok(as_object(v, "project"), text)
            }
            Err(ToolError(e)) => tool_error(e),
        }
    }

    /// Model cards.
    #[tool(
        name = "summary",
        description = "A static model card for nn.Module classes in a file (target: FILE.py or FILE.py::Class): layer tree, parameter counts, expected state_dict keys and shapes. Nothing is imported or run."
    )]
    async fn summary(&self, Parameters(p): Parameters<SummaryParams>) -> ToolResult {
        let target = match self.confine_target(&p.target) {
            Ok(t) => t,
            Err(ToolError(e)) => return tool_error(e),
        };
        let args = vec!["summary".into(), target, "--format".into(), "json".into()];
        match self.run_json(&args).await {
            Ok((v, _)) => {
                let text = match &v {
                    Value::Array(models) => models
                        .iter()
                        .map(summarize_fields)
                        .collect::<Vec<_>>()
                        .join("\n"),
                    other => summarize_fields(other),
                };
                ok(as_object(v, "models"), text)
            }
            Err(ToolError(e)) => tool_error(e),
        }
    }

    /// Checkpoint scan verdicts.
    #[tool(
        name = "ckpt_scan",
        description = "Scan PyTorch checkpoints (torch zip, legacy, pickle, npy/npz, safetensors, ...) for code that would run on load. Verdict per file: safe, unsafe, dangerous or malformed, with the imported names. Never unpickles."
    )]
    async fn ckpt_scan(&self, Parameters(p): Parameters<ScanParams>) -> ToolResult {
        let paths = match self.confine_all(&p.paths) {
            Ok(p) => p,
            Err(ToolError(e)) => return tool_error(e),
        };
        if paths.is_empty() {
            return tool_error("paths: give at least one checkpoint file or directory");
        }
        let mut args: Vec<String> = vec!["ckpt".into(), "scan".into()];
        args.extend(paths);
        args.extend([
            "--format".into(),
            "json".into(),
            "--fail-on".into(),
            "never".into(),
        ]);
        match self.run_json(&args).await {
            Ok((v, errors)) => {
                let mut text = String::new();
                if let Value::Array(files) = &v {
                    for f in files {
                        text.push_str(&format!(
                            "{}: {}\n",
                            f.get("path")
                                .or(f.get("file"))
                                .and_then(Value::as_str)
                                .unwrap_or("?"),
                            f.get("verdict").and_then(Value::as_str).unwrap_or("?")
                        ));
                    }
                }
                ok(json!({ "files": v, "errors": errors }), text)
            }
            Err(ToolError(e)) => tool_error(e),
        }
    }

    /// What a checkpoint holds.
    #[tool(
        name = "ckpt_inspect",
        description = "Show what a checkpoint holds without loading it: tensors (name, dtype, shape), shared storages, parameter counts, metadata."
    )]
    async fn ckpt_inspect(&self, Parameters(p): Parameters<InspectParams>) -> ToolResult {
        let file = match self.confine(&p.file) {
            Ok(c) => self.display(&c),
            Err(ToolError(e)) => return tool_error(e),
        };
        let args = vec![
            "ckpt".into(),
            "inspect".into(),
            file,
            "--format".into(),
            "json".into(),
        ];
        match self.run_json(&args).await {
            Ok((v, _)) => {
                let text = summarize_fields(&v);
                ok(as_object(v, "inspect"), text)
            }
            Err(ToolError(e)) => tool_error(e),
        }
    }

    /// Compare two checkpoints, or a checkpoint with a model class.
    #[tool(
        name = "ckpt_diff",
        description = "Compare two checkpoints the way load_state_dict would (missing/unexpected keys, shape and dtype mismatches, optionally value differences), or one checkpoint with the state_dict a model class would produce (against: FILE.py::Class)."
    )]
    async fn ckpt_diff(&self, Parameters(p): Parameters<DiffParams>) -> ToolResult {
        let resolved = (|| -> Result<Vec<String>, ToolError> {
            let mut args: Vec<String> = vec!["ckpt".into(), "diff".into()];
            args.push(self.display(&self.confine(&p.a)?));
            match (&p.b, &p.against) {
                (Some(b), None) => args.push(self.display(&self.confine(b)?)),
                (None, Some(t)) => args.push(format!("--against={}", self.confine_target(t)?)),
                _ => return Err(ToolError("give exactly one of `b` and `against`".into())),
            }
            if let Some(k) = &p.key {
                args.push(format!("--key={k}"));
            }
            if p.values {
                args.push("--values".into());
            }
            args.extend(["--format".into(), "json".into()]);
            Ok(args)
        })();
        let args = match resolved {
            Ok(a) => a,
            Err(ToolError(e)) => return tool_error(e),
        };
        match self.run_json(&args).await {
            Ok((v, _)) => {
                let text = summarize_fields(&v);
                ok(as_object(v, "diff"), text)
            }
            Err(ToolError(e)) => tool_error(e),
        }
    }

    /// A rule's documentation.
    #[tool(
        name = "rule",
        description = "A torchvet rule's documentation (what it does, why it is bad, example, fix, fix safety, references), by name (missing-zero-grad), code (TV007) or TorchFix code (TOR102)."
    )]
    async fn rule(&self, Parameters(p): Parameters<RuleParams>) -> ToolResult {
        let Some(i) = torchvet_linter::find_rule(&p.rule) else {
            return tool_error(format!(
                "unknown rule `{}` (the resource torchvet://rules lists them all)",
                p.rule
            ));
        };
        let rule = torchvet_linter::all_rules()[i];
        let docs = rule.docs_text();
        ok(rule_json(rule, Some(&docs)), docs)
    }
}

/// The same record as `torchvet rule NAME --format json` (plus the docs URL).
fn rule_json(rule: &torchvet_linter::Rule, docs: Option<&str>) -> Value {
    let mut v = json!({
        "name": rule.name,
        "code": rule.code,
        "group": rule.group.as_str(),
        "severity": rule.severity.as_str(),
        "title": rule.title,
        "default": rule.default_on && !rule.preview,
        "status": if rule.preview { "preview" } else { "stable" },
        "autofix": rule.autofix.as_str(),
        "torchfix": rule.torchfix,
        "url": torchvet_diagnostics::rule_url(rule.name),
    });
    if let Some(d) = docs {
        v["docs"] = json!(d);
    }
    v
}

/// One line per top-level field: scalars as they are, lists and objects by their size.
fn summarize_fields(v: &Value) -> String {
    match v {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| match v {
                Value::Array(a) => format!("{k}: {} item(s)", a.len()),
                Value::Object(o) => match o.get("value") {
                    Some(x) if !x.is_object() && !x.is_array() => format!("{k}: {x}"),
                    _ => format!("{k}: {} field(s)", o.len()),
                },
                other => format!("{k}: {other}"),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

/// The review's verdict and description, then its sections with their item counts.
fn summarize_sections(v: &Value) -> String {
    let mut out = String::new();
    for key in ["verdict", "description"] {
        if let Some(s) = v["summary"][key].as_str() {
            out.push_str(s);
            out.push('\n');
        }
    }
    if let Value::Object(map) = v {
        for (k, x) in map {
            if let (Value::Array(a), true) = (x, k != "paths" && k != "sections") {
                out.push_str(&format!("{k}: {} item(s)\n", a.len()));
            }
        }
    }
    out
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(rmcp::model::Implementation::new(
            "torchvet",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(
            "torchvet is a PyTorch expert: `check` finds PyTorch mistakes in Python files and \
             notebooks, `review` writes a structured review, `project` describes the project, \
             `summary` gives model cards, `ckpt_*` read checkpoints without unpickling them, \
             `rule` explains a finding. Paths are relative to the workspace root. Nothing is \
             executed; `check` writes files only with fix: true.",
        )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut items = vec![Resource::new("torchvet://rules", "rules")
            .with_title("The torchvet rule catalog")
            .with_description("Every rule: name, code, group, severity, default, fix")
            .with_mime_type("application/json")];
        for rule in torchvet_linter::all_rules() {
            items.push(
                Resource::new(format!("torchvet://rules/{}", rule.name), rule.name)
                    .with_title(format!("{} {}", rule.code, rule.name))
                    .with_description(rule.title)
                    .with_mime_type("text/markdown"),
            );
        }
        Ok(ListResourcesResult::with_all_items(items))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        if uri == "torchvet://rules" {
            let rules: Vec<Value> = torchvet_linter::all_rules()
                .iter()
                .map(|r| rule_json(r, None))
                .collect();
            let text = serde_json::to_string_pretty(&rules).unwrap_or_default();
            let contents = ResourceContents::text(text, request.uri.clone())
                .with_mime_type("application/json");
            return Ok(ReadResourceResult::new(vec![contents]).into());
        }
        let rule = uri
            .strip_prefix("torchvet://rules/")
            .and_then(torchvet_linter::find_rule)
            .map(|i| torchvet_linter::all_rules()[i]);
        match rule {
            Some(r) => {
                let text = format!(
                    "# {} `{}`\n\n{} (group {}, severity {})\n\n{}",
                    r.code,
                    r.name,
                    r.title,
                    r.group.as_str(),
                    r.severity.as_str(),
                    r.docs_text()
                );
                let contents = ResourceContents::text(text, request.uri.clone())
                    .with_mime_type("text/markdown");
                Ok(ReadResourceResult::new(vec![contents]).into())
            }
            None => Err(ErrorData::resource_not_found(
                format!("no resource at {uri}"),
                None,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_outside_the_roots_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("ws");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.py"), "").unwrap();
        std::fs::write(d.path().join("secret.py"), "").unwrap();
        std::os::unix::fs::symlink(d.path().join("secret.py"), root.join("link.py")).unwrap();
        let s = McpServer::new(PathBuf::from("torchvet"), std::slice::from_ref(&root)).unwrap();
        assert_eq!(s.display(&s.confine("src/a.py").ok().unwrap()), "src/a.py");
        assert_eq!(s.display(&s.confine(".").ok().unwrap()), ".");
        assert!(s.confine("../secret.py").is_err());
        assert!(s
            .confine(d.path().join("secret.py").to_str().unwrap())
            .is_err());
        // A link inside the root that leads outside is refused too.
        assert!(s.confine("link.py").is_err());
        assert!(s.confine("missing.py").is_err());
        assert_eq!(
            s.confine_target("src/a.py::Net").ok().unwrap(),
            "src/a.py::Net"
        );
    }

    #[test]
    fn every_tool_has_an_input_schema() {
        let s = McpServer::new(PathBuf::from("torchvet"), &[std::env::temp_dir()]).unwrap();
        let tools = s.tool_router.list_all();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        for want in [
            "check",
            "review",
            "project",
            "summary",
            "ckpt_scan",
            "ckpt_inspect",
            "ckpt_diff",
            "rule",
        ] {
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
        let check = tools.iter().find(|t| t.name == "check").unwrap();
        let schema = serde_json::to_string(&check.input_schema).unwrap();
        assert!(
            schema.contains("\"fix\"") && schema.contains("\"paths\""),
            "{schema}"
        );
    }
}

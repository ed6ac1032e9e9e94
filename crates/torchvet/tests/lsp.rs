//! Protocol tests of `torchvet server`: the binary is driven over stdio with JSON-RPC
//! messages, as an editor drives it.
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

const BUGGY: &str = "import torch
from torch import nn, optim

model = nn.Linear(10, 2)
torch.save(model.state_dict(), \"ckpt.pt\")
state = torch.load(\"ckpt.pt\")
opt = optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
";

struct Client {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<Value>,
    next_id: i64,
}

impl Client {
    fn start(init_options: Value) -> Self {
        Self::start_in(None, init_options)
    }

    /// Start with `root` as the workspace (the server models the project there).
    fn start_in(root: Option<&Path>, init_options: Value) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_torchvet"))
            .arg("server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the server starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut len = 0usize;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(v) = line.strip_prefix("Content-Length: ") {
                        len = v.parse().unwrap();
                    }
                }
                let mut body = vec![0; len];
                r.read_exact(&mut body).unwrap();
                if std::env::var_os("LSP_TRACE").is_some() {
                    eprintln!("<- {}", String::from_utf8_lossy(&body));
                }
                if tx.send(serde_json::from_slice(&body).unwrap()).is_err() {
                    return;
                }
            }
        });
        let mut c = Self {
            child,
            stdin,
            rx,
            next_id: 0,
        };
        let caps = json!({
            "workspace": {"didChangeWatchedFiles": {"dynamicRegistration": true}},
            "textDocument": {"publishDiagnostics": {"relatedInformation": true, "versionSupport": true}},
        });
        let root_uri = root.map(uri_of);
        let r = c.request(
            "initialize",
            json!({"processId": null, "rootUri": root_uri, "capabilities": caps, "initializationOptions": init_options}),
        );
        assert_eq!(r["result"]["serverInfo"]["name"], "torchvet");
        assert_eq!(r["result"]["capabilities"]["hoverProvider"], true);
        c.notify("initialized", json!({}));
        c
    }

    fn send(&mut self, msg: Value) {
        let body = msg.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{}", body.len(), body).unwrap();
        self.stdin.flush().unwrap();
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait_for(|m| m["id"] == id && m.get("method").is_none())
    }

    /// The next message that satisfies `pred` (others are dropped; server requests such as
    /// `client/registerCapability` are answered).
    fn wait_for(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let m = self.rx.recv_timeout(left).expect("an answer in time");
            if m.get("method").is_some() && m.get("id").is_some() {
                let id = m["id"].clone();
                self.send(json!({"jsonrpc": "2.0", "id": id, "result": null}));
            }
            if pred(&m) {
                return m;
            }
        }
    }

    fn diagnostics(&mut self, uri: &str) -> Value {
        let m = self.wait_for(|m| {
            m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri
        });
        m["params"].clone()
    }

    fn shutdown(mut self) {
        let r = self.request("shutdown", Value::Null);
        assert!(r.get("error").is_none(), "{r}");
        self.notify("exit", Value::Null);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
    }
}

fn uri_of(path: &Path) -> String {
    format!("file://{}", path.display())
}

fn open(c: &mut Client, uri: &str, text: &str) {
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
    );
}

fn find<'a>(diags: &'a Value, name: &str) -> Option<&'a Value> {
    diags["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["data"]["name"] == name)
}

/// Apply LSP text edits (UTF-16 positions; the test text is ASCII) to a string.
fn apply(text: &str, edits: &[Value]) -> String {
    let lines: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let off = |p: &Value| {
        lines[p["line"].as_u64().unwrap() as usize] + p["character"].as_u64().unwrap() as usize
    };
    let mut edits: Vec<(usize, usize, String)> = edits
        .iter()
        .map(|e| {
            (
                off(&e["range"]["start"]),
                off(&e["range"]["end"]),
                e["newText"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut out = text.to_string();
    for (s, e, t) in edits {
        out.replace_range(s..e, &t);
    }
    out
}

#[test]
fn diagnostics_code_actions_hover_and_edits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("train.py");
    std::fs::write(&path, BUGGY).unwrap();
    // Before torch 2.6 a bare `torch.load` unpickles whatever the file holds.
    std::fs::write(
        dir.path().join("pyproject.toml"),
        "[tool.torchvet]\ntarget-torch = \"2.4\"\n",
    )
    .unwrap();
    let uri = uri_of(&path);
    let mut c = Client::start(json!({"debounceMs": 10}));
    open(&mut c, &uri, BUGGY);
    let d = c.diagnostics(&uri);
    assert_eq!(d["version"], 1);

    // Code, name, docs link, severity and related locations.
    let load = find(&d, "torch-load-without-weights-only").expect("torch.load finding");
    assert_eq!(load["source"], "torchvet");
    assert!(load["code"].as_str().unwrap().starts_with("TV"));
    assert!(load["codeDescription"]["href"]
        .as_str()
        .unwrap()
        .contains("torch-load-without-weights-only"));
    assert_eq!(load["range"]["start"]["line"], 5);
    let zero = find(&d, "missing-zero-grad").expect("missing-zero-grad finding");
    assert_eq!(zero["severity"], 1, "critical is an error");
    let related = zero["relatedInformation"]
        .as_array()
        .expect("related locations");
    assert!(
        related
            .iter()
            .any(|r| r["location"]["range"]["start"]["line"] == 9),
        "{related:?}"
    );

    // Quick fix (safe, preferred) and noqa for the torch.load line.
    let range = load["range"].clone();
    let r = c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": range, "context": {"diagnostics": [load]}}),
    );
    let actions = r["result"].as_array().unwrap();
    let fix = actions
        .iter()
        .find(|a| {
            a["title"]
                .as_str()
                .unwrap()
                .starts_with("torch-load-without-weights-only:")
        })
        .expect("a quick fix");
    assert_eq!(fix["kind"], "quickfix");
    assert_eq!(fix["isPreferred"], true);
    let edits = fix["edit"]["changes"][&uri].as_array().unwrap();
    let fixed = apply(BUGGY, edits);
    assert!(
        fixed.contains("torch.load(\"ckpt.pt\", weights_only=True)"),
        "{fixed}"
    );
    let noqa = actions
        .iter()
        .find(|a| a["title"].as_str().unwrap().contains("noqa"))
        .expect("a noqa action");
    let with_noqa = apply(BUGGY, noqa["edit"]["changes"][&uri].as_array().unwrap());
    assert!(with_noqa
        .contains("state = torch.load(\"ckpt.pt\")  # noqa: torch-load-without-weights-only\n"));

    // Fix all (only safe fixes), asked for by kind.
    let r = c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
               "context": {"diagnostics": [], "only": ["source.fixAll"]}}),
    );
    let all = r["result"].as_array().unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0]["kind"], "source.fixAll.torchvet");
    let fixed_all = apply(BUGGY, all[0]["edit"]["changes"][&uri].as_array().unwrap());
    assert!(fixed_all.contains("weights_only=True"), "{fixed_all}");

    // Hover on the finding shows the rule's documentation.
    let r = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": {"line": 5, "character": 12}}),
    );
    let hover = r["result"]["contents"]["value"].as_str().unwrap();
    assert!(
        hover.contains("torch-load-without-weights-only") && hover.contains("## What it does"),
        "{hover}"
    );
    let r = c.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}),
    );
    assert!(r["result"].is_null());

    // An incremental edit applying the fix: re-checked (debounced), the finding is gone.
    let start = fix["edit"]["changes"][&uri][0]["range"]["start"].clone();
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2},
               "contentChanges": [{"range": {"start": start, "end": start}, "text": ", weights_only=True"}]}),
    );
    let d = c.diagnostics(&uri);
    assert_eq!(d["version"], 2);
    assert!(find(&d, "torch-load-without-weights-only").is_none(), "{d}");
    assert!(find(&d, "missing-zero-grad").is_some());

    // Closing clears the findings.
    c.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": uri}}),
    );
    let d = c.diagnostics(&uri);
    assert_eq!(d["diagnostics"], json!([]));
    c.shutdown();
}

#[test]
fn configuration_is_read_and_reloaded_on_change() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("train.py");
    std::fs::write(&path, BUGGY).unwrap();
    let cfg = dir.path().join("pyproject.toml");
    std::fs::write(
        &cfg,
        "[tool.torchvet]\ntarget-torch = \"2.4\"\nignore = [\"missing-zero-grad\"]\n",
    )
    .unwrap();
    let uri = uri_of(&path);
    let mut c = Client::start(json!({}));
    // The server asks to be told about configuration files.
    c.wait_for(|m| m["method"] == "client/registerCapability");
    open(&mut c, &uri, BUGGY);
    let d = c.diagnostics(&uri);
    assert!(
        find(&d, "missing-zero-grad").is_none(),
        "ignored by pyproject.toml: {d}"
    );
    assert!(find(&d, "torch-load-without-weights-only").is_some());

    std::fs::write(
        &cfg,
        "[tool.torchvet]\ntarget-torch = \"2.4\"\nignore = [\"torch-load-without-weights-only\"]\n",
    )
    .unwrap();
    c.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri_of(&cfg), "type": 2}]}),
    );
    let d = c.diagnostics(&uri);
    assert!(find(&d, "missing-zero-grad").is_some(), "{d}");
    assert!(find(&d, "torch-load-without-weights-only").is_none(), "{d}");

    // A broken configuration is reported, and the defaults are used meanwhile.
    std::fs::write(&cfg, "[tool.torchvet]\nselect = [\"no-such-rule\"]\n").unwrap();
    c.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri_of(&cfg), "type": 2}]}),
    );
    let m = c.wait_for(|m| m["method"] == "window/showMessage");
    assert!(
        m["params"]["message"]
            .as_str()
            .unwrap()
            .contains("no-such-rule"),
        "{m}"
    );
    let d = c.diagnostics(&uri);
    assert!(find(&d, "missing-zero-grad").is_some(), "{d}");
    c.shutdown();
}

#[test]
fn other_documents_and_unknown_requests() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = Client::start(json!({}));
    // Not Python: ignored, no diagnostics published.
    let toml = uri_of(&dir.path().join("pyproject.toml"));
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": toml, "languageId": "toml", "version": 1, "text": "[x]"}}),
    );
    // A file with a syntax error gets a syntax-error finding, not a crash.
    let bad = uri_of(&dir.path().join("bad.py"));
    open(&mut c, &bad, "import torch\ndef f(:\n");
    let d = c.diagnostics(&bad);
    assert!(find(&d, "syntax-error").is_some(), "{d}");
    let r = c.request(
        "textDocument/definition",
        json!({"textDocument": {"uri": bad}, "position": {"line": 0, "character": 0}}),
    );
    assert_eq!(r["error"]["code"], -32601);
    c.shutdown();
}

const MODELS: &str = "import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 3)

    def forward(self, x):
        return torch.softmax(self.fc(x), dim=-1)
";

const TRAIN: &str = "import torch
from torch import nn

from models import Net

model = Net()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    optimizer.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    optimizer.step()
";

const CROSS_FILE: &str = "cross-entropy-after-softmax";

/// The next diagnostics of `uri` whose having the finding `name` is `present` (earlier
/// publications, e.g. before the project model is ready, are skipped).
fn diagnostics_until(c: &mut Client, uri: &str, name: &str, present: bool) -> Value {
    let m = c.wait_for(|m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["uri"] == uri
            && find(&m["params"], name).is_some() == present
    });
    m["params"].clone()
}

#[test]
fn project_model_across_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let models = root.join("models.py");
    let train = root.join("train.py");
    std::fs::write(&models, MODELS).unwrap();
    std::fs::write(&train, TRAIN).unwrap();
    let (models_uri, train_uri) = (uri_of(&models), uri_of(&train));
    let mut c = Client::start_in(Some(&root), json!({"debounceMs": 10}));

    // The softmax is in models.py, the loss in train.py: found through the project model.
    open(&mut c, &train_uri, TRAIN);
    let d = diagnostics_until(&mut c, &train_uri, CROSS_FILE, true);
    assert_eq!(d["version"], 1);
    let f = find(&d, CROSS_FILE).unwrap();
    assert_eq!(f["range"]["start"]["line"], 10, "{f}");

    // Editing models.py in the editor (unsaved) re-checks the open train.py.
    open(&mut c, &models_uri, MODELS);
    c.diagnostics(&models_uri);
    let without_softmax = MODELS.replace("torch.softmax(self.fc(x), dim=-1)", "self.fc(x)");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": models_uri, "version": 2},
               "contentChanges": [{"text": without_softmax}]}),
    );
    let d = diagnostics_until(&mut c, &train_uri, CROSS_FILE, false);
    assert_eq!(d["version"], 1, "train.py itself did not change");
    assert!(find(&d, "syntax-error").is_none(), "{d}");

    // An edit that changes nothing other files see re-checks only the edited document.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": models_uri, "version": 3},
               "contentChanges": [{"text": format!("{without_softmax}# a comment\n")}]}),
    );
    let m = c.wait_for(|m| m["method"] == "textDocument/publishDiagnostics");
    assert_eq!(m["params"]["uri"], models_uri.as_str(), "{m}");
    assert_eq!(m["params"]["version"], 3);

    // Closing models.py without saving: the model goes back to the file on disk.
    c.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": models_uri}}),
    );
    diagnostics_until(&mut c, &train_uri, CROSS_FILE, true);

    // A change on disk of a file that is not open (the client watches files for us).
    std::fs::write(&models, &without_softmax).unwrap();
    c.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": models_uri, "type": 2}]}),
    );
    diagnostics_until(&mut c, &train_uri, CROSS_FILE, false);

    // A new file that train.py imports from, created on disk.
    let helpers = root.join("helpers.py");
    std::fs::write(
        &helpers,
        "import torch\n\n\ndef build():\n    return torch.nn.Sequential(torch.nn.Linear(10, 3), torch.nn.Softmax(dim=-1))\n",
    )
    .unwrap();
    c.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri_of(&helpers), "type": 1}]}),
    );
    let train2 = TRAIN
        .replace("from models import Net", "from helpers import build")
        .replace("model = Net()", "model = build()");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": train_uri, "version": 2},
               "contentChanges": [{"text": train2}]}),
    );
    let d = diagnostics_until(&mut c, &train_uri, CROSS_FILE, true);
    assert_eq!(d["version"], 2);
    c.shutdown();
}

#[test]
fn related_locations_in_other_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(
        root.join("pyproject.toml"),
        "[tool.torchvet]\ntarget-torch = \"2.6\"\n",
    )
    .unwrap();
    let save = root.join("save.py");
    std::fs::write(
        &save,
        "import torch\nfrom torch import nn\n\nmodel = nn.Linear(10, 2)\ntorch.save(model, \"ckpt.pt\")\n",
    )
    .unwrap();
    let load = root.join("load.py");
    let text = "import torch\n\nmodel = torch.load(\"ckpt.pt\")\n";
    std::fs::write(&load, text).unwrap();
    let mut c = Client::start_in(Some(&root), json!({}));
    let uri = uri_of(&load);
    open(&mut c, &uri, text);
    // The whole module saved in save.py cannot be read back with weights_only (torch 2.6).
    let d = diagnostics_until(&mut c, &uri, "checkpoint-fails-weights-only-load", true);
    let f = find(&d, "checkpoint-fails-weights-only-load").unwrap();
    let related = f["relatedInformation"]
        .as_array()
        .expect("related locations");
    assert!(
        related
            .iter()
            .any(|r| r["location"]["uri"] == uri_of(&save).as_str()
                && r["location"]["range"]["start"]["line"] == 4),
        "the save site is in save.py: {f}"
    );
    c.shutdown();
}

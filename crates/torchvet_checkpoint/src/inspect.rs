//! `torchvet ckpt inspect`: what is in a checkpoint, read from its pickle and directory only.

use crate::model::{Checkpoint, Node, TensorInfo};
use serde::Serialize;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One tensor row.
#[derive(Debug, Clone, Serialize)]
pub struct TensorRow {
    /// Name path in the object tree.
    pub name: String,
    /// dtype.
    pub dtype: String,
    /// Shape.
    pub shape: Vec<i64>,
    /// Strides.
    pub stride: Vec<i64>,
    /// Storage offset (elements).
    pub storage_offset: i64,
    /// Bytes of the tensor's elements.
    pub nbytes: u64,
    /// Device tag.
    pub device: String,
    /// Storage key.
    pub storage: Option<String>,
    /// Row-major contiguous.
    pub contiguous: bool,
    /// nn.Parameter.
    pub parameter: bool,
    /// requires_grad.
    pub requires_grad: bool,
    /// Kind.
    pub kind: String,
}

/// Tensors sharing one storage.
#[derive(Debug, Clone, Serialize)]
pub struct SharedGroup {
    /// Storage key.
    pub storage: String,
    /// Tensor names.
    pub tensors: Vec<String>,
    /// True when all views are identical (tied weights).
    pub identical_views: bool,
}

/// Parameter counts under one prefix.
#[derive(Debug, Clone, Serialize)]
pub struct PrefixCount {
    /// Prefix.
    pub prefix: String,
    /// Tensors.
    pub tensors: usize,
    /// Elements.
    pub params: u64,
    /// Bytes.
    pub bytes: u64,
}

/// The inspect report.
#[derive(Debug, Clone, Serialize)]
pub struct InspectReport {
    /// File.
    pub path: String,
    /// Format.
    pub format: String,
    /// Object-pickle protocol.
    pub protocol: u8,
    /// Scan verdict of the same file.
    pub verdict: String,
    /// Writer records.
    pub records: BTreeMap<String, String>,
    /// Tensors.
    pub tensors: Vec<TensorRow>,
    /// Shared storages.
    pub shared_storages: Vec<SharedGroup>,
    /// Counts per prefix.
    pub param_counts: Vec<PrefixCount>,
    /// Total elements (unique storages views counted once per name).
    pub total_params: u64,
    /// Total bytes of tensor elements.
    pub total_bytes: u64,
    /// Non-tensor metadata.
    pub metadata: Json,
    /// Notes.
    pub notes: Vec<String>,
}

/// Build the report.
pub fn inspect(ck: &Checkpoint, verdict: &str) -> InspectReport {
    let named = ck.named_tensors();
    let mut rows = Vec::new();
    let mut by_storage: BTreeMap<String, Vec<(String, &TensorInfo)>> = BTreeMap::new();
    for (name, i) in &named {
        let Some(t) = ck.tensors.get(*i) else {
            continue;
        };
        rows.push(row(name, t));
        if let Some(s) = &t.storage {
            by_storage
                .entry(s.key.clone())
                .or_default()
                .push((name.clone(), t));
        }
    }
    let mut shared = Vec::new();
    for (k, v) in &by_storage {
        if v.len() > 1 {
            let first = v[0].1;
            let identical = v.iter().all(|(_, t)| {
                t.shape == first.shape
                    && t.stride == first.stride
                    && t.storage_offset == first.storage_offset
                    && t.dtype == first.dtype
            });
            shared.push(SharedGroup {
                storage: k.clone(),
                tensors: v.iter().map(|(n, _)| n.clone()).collect(),
                identical_views: identical,
            });
        }
    }
    let firsts: Vec<&str> = rows
        .iter()
        .map(|r| r.name.split('.').next().unwrap_or(""))
        .collect();
    let one_root = !firsts.is_empty()
        && firsts.iter().all(|f| *f == firsts[0])
        && rows.iter().all(|r| r.name.contains('.'));
    let mut counts: BTreeMap<String, PrefixCount> = BTreeMap::new();
    let mut total_params = 0;
    let mut total_bytes = 0;
    for r in &rows {
        let mut parts = r.name.split('.');
        let mut prefix = parts.next().unwrap_or("").to_string();
        if one_root {
            if let Some(p) = parts.next() {
                prefix = format!("{prefix}.{p}");
            }
        }
        let n: u64 = r.shape.iter().map(|&d| d.max(0) as u64).product();
        let c = counts.entry(prefix.clone()).or_insert(PrefixCount {
            prefix,
            tensors: 0,
            params: 0,
            bytes: 0,
        });
        c.tensors += 1;
        c.params += n;
        c.bytes += r.nbytes;
        total_params += n;
        total_bytes += r.nbytes;
    }
    InspectReport {
        path: ck.path.display().to_string(),
        format: ck.format.as_str().to_string(),
        protocol: ck.protocol,
        verdict: verdict.to_string(),
        records: ck.records.iter().cloned().collect(),
        tensors: rows,
        shared_storages: shared,
        param_counts: counts.into_values().collect(),
        total_params,
        total_bytes,
        metadata: metadata(ck),
        notes: ck.notes.clone(),
    }
}

fn row(name: &str, t: &TensorInfo) -> TensorRow {
    TensorRow {
        name: name.to_string(),
        dtype: t.dtype.clone(),
        shape: t.shape.clone(),
        stride: t.stride.clone(),
        storage_offset: t.storage_offset,
        nbytes: t.nbytes(),
        device: t.device().to_string(),
        storage: t.storage.as_ref().map(|s| s.key.clone()),
        contiguous: t.is_contiguous(),
        parameter: t.parameter,
        requires_grad: t.requires_grad,
        kind: format!("{:?}", t.kind).to_lowercase(),
    }
}

/// JSON rendering of a node, with tensors summarised and size limits.
pub fn node_json(ck: &Checkpoint, n: &Node, depth: u32) -> Json {
    if depth > 6 {
        return json!("…");
    }
    match n {
        Node::None => Json::Null,
        Node::Bool(b) => json!(b),
        Node::Int(i) => json!(i),
        Node::BigInt(s) => json!(s),
        Node::Float(f) => json!(f),
        Node::Str(s) => json!(if s.len() > 200 {
            format!(
                "{}…",
                &s[..s.char_indices().nth(200).map(|x| x.0).unwrap_or(s.len())]
            )
        } else {
            s.clone()
        }),
        Node::Bytes(n) => json!(format!("<{n} bytes>")),
        Node::List(v) => {
            if v.len() > 32 {
                json!(format!("<list of {}>", v.len()))
            } else {
                Json::Array(v.iter().map(|x| node_json(ck, x, depth + 1)).collect())
            }
        }
        Node::Dict(items) => {
            let mut m = serde_json::Map::new();
            for (k, v) in items.iter().take(64) {
                m.insert(k.clone(), node_json(ck, v, depth + 1));
            }
            if items.len() > 64 {
                m.insert("…".into(), json!(format!("{} more", items.len() - 64)));
            }
            Json::Object(m)
        }
        Node::Tensor(i) => match ck.tensors.get(*i) {
            Some(t) => json!(format!("<tensor {} {:?}>", t.dtype, t.shape)),
            None => json!("<tensor>"),
        },
        Node::Global(g) => json!(g),
        Node::Object { class, fields } => {
            let mut m = serde_json::Map::new();
            m.insert("__class__".into(), json!(class));
            for (k, v) in fields.iter().take(64) {
                m.insert(k.clone(), node_json(ck, v, depth + 1));
            }
            Json::Object(m)
        }
        Node::Elided(why) => json!(format!("<{why}>")),
    }
}

fn fields(n: &Node) -> Option<&Vec<(String, Node)>> {
    match n {
        Node::Dict(items) => Some(items),
        Node::Object { fields, .. } => Some(fields),
        _ => None,
    }
}

fn get<'a>(n: &'a Node, key: &str) -> Option<&'a Node> {
    fields(n)?.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn count_tensors(n: &Node, out: &mut (usize, u64), ck: &Checkpoint, depth: u32) {
    if depth > 64 {
        return;
    }
    match n {
        Node::Tensor(i) => {
            out.0 += 1;
            out.1 += ck.tensors.get(*i).map(|t| t.nbytes()).unwrap_or(0);
        }
        Node::List(v) => v.iter().for_each(|x| count_tensors(x, out, ck, depth + 1)),
        Node::Dict(items) | Node::Object { fields: items, .. } => items
            .iter()
            .for_each(|(_, x)| count_tensors(x, out, ck, depth + 1)),
        _ => {}
    }
}

fn optimizer_summary(ck: &Checkpoint, n: &Node) -> Json {
    let groups = match get(n, "param_groups") {
        Some(Node::List(g)) => g.clone(),
        _ => Vec::new(),
    };
    let mut group_json = Vec::new();
    let mut keys = std::collections::BTreeSet::new();
    for g in &groups {
        let mut m = serde_json::Map::new();
        if let Some(items) = fields(g) {
            for (k, v) in items {
                keys.insert(k.clone());
                if k == "params" {
                    let c = match v {
                        Node::List(p) => p.len(),
                        _ => 0,
                    };
                    m.insert("params".into(), json!(c));
                } else {
                    m.insert(k.clone(), node_json(ck, v, 4));
                }
            }
        }
        group_json.push(Json::Object(m));
    }
    let has = |k: &str| keys.contains(k);
    let decoupled = groups
        .iter()
        .any(|g| matches!(get(g, "decoupled_weight_decay"), Some(Node::Bool(true))));
    let kind = if has("betas") && has("decoupled_weight_decay") {
        if decoupled {
            "AdamW"
        } else {
            "Adam"
        }
    } else if has("betas") && has("amsgrad") {
        "Adam or AdamW"
    } else if has("betas") && has("momentum_decay") {
        "NAdam"
    } else if has("betas") {
        "Adam family"
    } else if has("momentum") && has("nesterov") {
        "SGD"
    } else if has("alpha") && has("centered") {
        "RMSprop"
    } else if has("lr_decay") {
        "Adagrad"
    } else if has("rho") {
        "Adadelta"
    } else if has("lambd") {
        "ASGD"
    } else {
        "unknown"
    };
    let (mut entries, mut state_keys) = (0usize, std::collections::BTreeSet::new());
    if let Some(st) = get(n, "state").and_then(fields) {
        entries = st.len();
        for (_, v) in st {
            if let Some(f) = fields(v) {
                for (k, _) in f {
                    state_keys.insert(k.clone());
                }
            }
        }
    }
    let mut counts = (0, 0);
    if let Some(st) = get(n, "state") {
        count_tensors(st, &mut counts, ck, 0);
    }
    json!({
        "kind": kind,
        "param_groups": group_json,
        "state_entries": entries,
        "state_keys": state_keys,
        "state_tensors": counts.0,
        "state_bytes": counts.1,
    })
}

fn is_optimizer(n: &Node) -> bool {
    get(n, "state").is_some() && get(n, "param_groups").is_some()
}

fn is_scheduler(n: &Node) -> bool {
    get(n, "last_epoch").is_some()
        && (get(n, "base_lrs").is_some()
            || get(n, "_last_lr").is_some()
            || get(n, "_step_count").is_some())
}

fn metadata(ck: &Checkpoint) -> Json {
    let mut scalars = serde_json::Map::new();
    let mut optimizers = serde_json::Map::new();
    let mut schedulers = serde_json::Map::new();
    let mut hparams = serde_json::Map::new();
    let mut other = serde_json::Map::new();
    let Some(items) = fields(&ck.root) else {
        return json!({});
    };
    for (k, v) in items {
        match v {
            Node::Int(_)
            | Node::Float(_)
            | Node::Str(_)
            | Node::Bool(_)
            | Node::BigInt(_)
            | Node::None => {
                scalars.insert(k.clone(), node_json(ck, v, 0));
            }
            _ if is_optimizer(v) => {
                optimizers.insert(k.clone(), optimizer_summary(ck, v));
            }
            _ if is_scheduler(v) => {
                schedulers.insert(k.clone(), node_json(ck, v, 3));
            }
            _ => {
                // lists of optimizers (Lightning "optimizer_states", "lr_schedulers")
                if let Node::List(l) = v {
                    if !l.is_empty() && l.iter().all(is_optimizer) {
                        for (i, o) in l.iter().enumerate() {
                            optimizers.insert(format!("{k}.{i}"), optimizer_summary(ck, o));
                        }
                        continue;
                    }
                    if !l.is_empty() && l.iter().all(is_scheduler) {
                        for (i, o) in l.iter().enumerate() {
                            schedulers.insert(format!("{k}.{i}"), node_json(ck, o, 3));
                        }
                        continue;
                    }
                }
                let lk = k.to_ascii_lowercase();
                if [
                    "hyper_parameters",
                    "hparams",
                    "hyperparameters",
                    "config",
                    "args",
                    "cfg",
                    "opt",
                    "params",
                    "hparams_name",
                ]
                .contains(&lk.as_str())
                {
                    hparams.insert(k.clone(), node_json(ck, v, 1));
                    continue;
                }
                let mut c = (0, 0);
                count_tensors(v, &mut c, ck, 0);
                if c.0 == 0 {
                    other.insert(k.clone(), node_json(ck, v, 3));
                }
            }
        }
    }
    json!({
        "scalars": scalars,
        "optimizers": optimizers,
        "schedulers": schedulers,
        "hyperparameters": hparams,
        "other": other,
    })
}

fn human(n: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < units.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Render the report as a readable tree.
pub fn render_text(r: &InspectReport, max_tensors: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", r.path);
    let _ = writeln!(
        s,
        "├─ format: {} (pickle protocol {}), scan verdict: {}",
        r.format, r.protocol, r.verdict
    );
    if !r.records.is_empty() {
        let recs: Vec<String> = r.records.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(s, "├─ records: {}", recs.join(", "));
    }
    let _ = writeln!(
        s,
        "├─ tensors: {} ({} parameters, {})",
        r.tensors.len(),
        count(r.total_params),
        human(r.total_bytes)
    );
    for (i, t) in r.tensors.iter().enumerate() {
        if i == max_tensors {
            let _ = writeln!(
                s,
                "│  └─ … {} more (use --all or --format json)",
                r.tensors.len() - max_tensors
            );
            break;
        }
        let mut extra = Vec::new();
        if !t.contiguous {
            extra.push(format!("strides {:?}", t.stride));
        }
        if t.storage_offset != 0 {
            extra.push(format!("offset {}", t.storage_offset));
        }
        if t.device != "cpu" {
            extra.push(t.device.clone());
        }
        if t.parameter {
            extra.push("Parameter".into());
        }
        if t.kind != "dense" {
            extra.push(t.kind.clone());
        }
        let branch = if i + 1 == r.tensors.len().min(max_tensors) && r.tensors.len() <= max_tensors
        {
            "└─"
        } else {
            "├─"
        };
        let _ = writeln!(
            s,
            "│  {branch} {:<40} {:<9} {:<18} {:>10}{}",
            t.name,
            t.dtype,
            format!("{:?}", t.shape),
            human(t.nbytes),
            if extra.is_empty() {
                String::new()
            } else {
                format!("  [{}]", extra.join(", "))
            }
        );
    }
    if !r.param_counts.is_empty() {
        let _ = writeln!(s, "├─ parameters by prefix:");
        for c in &r.param_counts {
            let _ = writeln!(
                s,
                "│  ├─ {:<40} {:>6} tensors {:>16} params {:>10}",
                c.prefix,
                c.tensors,
                count(c.params),
                human(c.bytes)
            );
        }
        let _ = writeln!(s, "│  └─ total {:>63} params", count(r.total_params));
    }
    if !r.shared_storages.is_empty() {
        let _ = writeln!(s, "├─ shared storages:");
        for g in &r.shared_storages {
            let _ = writeln!(
                s,
                "│  ├─ storage {}: {}{}",
                g.storage,
                g.tensors.join(", "),
                if g.identical_views {
                    " (identical views: tied)"
                } else {
                    " (different views)"
                }
            );
        }
    }
    let meta = &r.metadata;
    for (title, key) in [
        ("scalars", "scalars"),
        ("optimizers", "optimizers"),
        ("schedulers", "schedulers"),
        ("hyperparameters", "hyperparameters"),
        ("other metadata", "other"),
    ] {
        if let Some(m) = meta.get(key).and_then(Json::as_object) {
            if m.is_empty() {
                continue;
            }
            let _ = writeln!(s, "├─ {title}:");
            for (k, v) in m {
                let text = v.to_string();
                let text = if text.len() > 300 {
                    format!(
                        "{}…",
                        &text[..text
                            .char_indices()
                            .nth(300)
                            .map(|x| x.0)
                            .unwrap_or(text.len())]
                    )
                } else {
                    text
                };
                let _ = writeln!(s, "│  ├─ {k}: {text}");
            }
        }
    }
    for n in &r.notes {
        let _ = writeln!(s, "├─ note: {n}");
    }
    let _ = writeln!(s, "└─ end");
    s
}

//! Text scans of the source: what the code does (loops, AMP, seeds, ...), each with its line.

use crate::{
    Check, CheckStatus, Counts, Evidence, Finding, Item, Positive, Summary, TestRecommendation,
};
use torchvet_diagnostics::Severity;
use torchvet_python::CellMap;
use torchvet_summary::{Layer, ModelCard};

/// One file: its lines with comments and docstrings blanked, and the enclosing scope of each.
pub(crate) struct FileFacts {
    pub(crate) file: String,
    raw: Vec<String>,
    code: Vec<String>,
    scopes: Vec<Option<String>>,
    cells: Option<CellMap>,
}

fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match (quote, c) {
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, '#') => return &line[..i],
            _ => {}
        }
    }
    line
}

fn def_name(trimmed: &str) -> Option<&str> {
    let rest = trimmed
        .strip_prefix("def ")
        .or_else(|| trimmed.strip_prefix("async def "))
        .or_else(|| trimmed.strip_prefix("class "))?;
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

impl FileFacts {
    pub(crate) fn new(file: String, text: &str, cells: Option<CellMap>) -> Self {
        let raw: Vec<String> = text.lines().map(str::to_string).collect();
        let mut code = Vec::with_capacity(raw.len());
        let mut in_doc: Option<&str> = None;
        for line in &raw {
            let t = line.trim();
            if let Some(q) = in_doc {
                if t.contains(q) {
                    in_doc = None;
                }
                code.push(String::new());
                continue;
            }
            let triple = ["\"\"\"", "'''"].into_iter().find(|q| t.starts_with(q));
            if let Some(q) = triple {
                if t.len() < 6 || !t[3..].contains(q) {
                    in_doc = Some(q);
                }
                code.push(String::new());
                continue;
            }
            code.push(strip_comment(line).to_string());
        }
        let mut scopes = Vec::with_capacity(raw.len());
        let mut stack: Vec<(usize, String)> = Vec::new();
        let mut current: Option<String> = None;
        for line in &code {
            let t = line.trim_start();
            if !t.is_empty() {
                let indent = line.len() - t.len();
                while stack.last().is_some_and(|(i, _)| *i >= indent) {
                    stack.pop();
                }
                if let Some(name) = def_name(t) {
                    stack.push((indent, name.to_string()));
                }
                current = (!stack.is_empty()).then(|| {
                    stack
                        .iter()
                        .map(|(_, n)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(".")
                });
            }
            scopes.push(current.clone());
        }
        FileFacts {
            file,
            raw,
            code,
            scopes,
            cells,
        }
    }

    /// (cell, row inside the cell) of a 1-based row of the analysed text.
    pub(crate) fn display_row(&self, row: usize) -> (Option<usize>, usize) {
        match &self.cells {
            Some(map) => {
                let (cell, r) = map.cell_row(row);
                (Some(cell), r)
            }
            None => (None, row),
        }
    }

    /// `file:line` (or `file:cell N:line`) of a 1-based row of the analysed text.
    pub(crate) fn loc(&self, row: usize) -> String {
        match self.display_row(row) {
            (Some(c), r) => format!("{}:cell {c}:{r}", self.file),
            (None, r) => format!("{}:{r}", self.file),
        }
    }

    /// The enclosing `Class.function` of a 1-based line.
    pub(crate) fn scope_at(&self, row: usize) -> Option<String> {
        self.scopes.get(row.checked_sub(1)?).cloned().flatten()
    }

    fn evidence(&self, idx: usize) -> Evidence {
        let (cell, line) = self.display_row(idx + 1);
        Evidence {
            file: self.file.clone(),
            cell,
            line,
            text: self.raw[idx].trim().chars().take(160).collect(),
        }
    }

    /// Lines whose code contains any of `pats`.
    fn find(&self, pats: &[&str]) -> Vec<Evidence> {
        self.code
            .iter()
            .enumerate()
            .filter(|(_, l)| pats.iter().any(|p| l.contains(p)))
            .map(|(i, _)| self.evidence(i))
            .collect()
    }

    /// The full text of the call starting at the first `pat` of line `idx` (parens balanced).
    fn call_text(&self, idx: usize, pat: &str) -> String {
        let mut out = String::new();
        let Some(start) = self.code[idx].find(pat) else {
            return out;
        };
        let mut depth = 0i32;
        let mut seen_open = false;
        for (n, line) in self.code[idx..].iter().enumerate().take(40) {
            let part = if n == 0 {
                &line[start..]
            } else {
                line.as_str()
            };
            for c in part.chars() {
                out.push(c);
                match c {
                    '(' => {
                        depth += 1;
                        seen_open = true;
                    }
                    ')' => depth -= 1,
                    _ => {}
                }
                if seen_open && depth <= 0 {
                    return out;
                }
            }
            out.push(' ');
        }
        out
    }

    fn calls(&self, pat: &str) -> Vec<(Evidence, String)> {
        self.code
            .iter()
            .enumerate()
            .filter(|(_, l)| l.contains(pat))
            .map(|(i, _)| (self.evidence(i), self.call_text(i, pat)))
            .collect()
    }
}

fn find_all(files: &[&FileFacts], pats: &[&str]) -> Vec<Evidence> {
    files.iter().flat_map(|f| f.find(pats)).collect()
}

fn calls_all(files: &[&FileFacts], pat: &str) -> Vec<(Evidence, String)> {
    files.iter().flat_map(|f| f.calls(pat)).collect()
}

const NO_GRAD: &[&str] = &[
    "with torch.no_grad()",
    "with torch.inference_mode(",
    "@torch.no_grad()",
    "@torch.inference_mode(",
    "with no_grad()",
    "with inference_mode(",
];

/// Functions calling `backward()`: (name, evidence of the backward call).
fn training_loops(files: &[&FileFacts]) -> Vec<(String, Evidence)> {
    let mut out: Vec<(String, Evidence)> = Vec::new();
    for f in files {
        for e in f.find(&[".backward("]) {
            let name = f.scope_at(e.line).unwrap_or_else(|| "<module>".into());
            if !out.iter().any(|(n, o)| *n == name && o.file == e.file) {
                out.push((name, e));
            }
        }
    }
    out
}

/// Functions named like evaluation (`evaluate`, `validate`, `eval_*`).
fn evaluation_functions(files: &[&FileFacts]) -> Vec<(String, Evidence)> {
    let mut out = Vec::new();
    for f in files {
        for (i, line) in f.code.iter().enumerate() {
            let t = line.trim_start();
            if !(t.starts_with("def ") || t.starts_with("async def ")) {
                continue;
            }
            if let Some(name) = def_name(t) {
                let lower = name.to_ascii_lowercase();
                if lower.starts_with("eval") || lower.starts_with("valid") {
                    out.push((name.to_string(), f.evidence(i)));
                }
            }
        }
    }
    out
}

fn check(
    id: &'static str,
    title: &'static str,
    status: CheckStatus,
    note: impl Into<String>,
    evidence: Vec<Evidence>,
) -> Check {
    Check {
        id,
        title,
        status,
        note: note.into(),
        evidence,
    }
}

fn first(v: &[Evidence], n: usize) -> Vec<Evidence> {
    v.iter().take(n).cloned().collect()
}

fn checklist(files: &[&FileFacts], cards: &[(String, ModelCard)]) -> Vec<Check> {
    use CheckStatus::*;
    let loops = training_loops(files);
    let loop_ev: Vec<Evidence> = loops.iter().map(|(_, e)| e.clone()).collect();
    let evals = evaluation_functions(files);
    let no_grad = find_all(files, NO_GRAD);
    let has_model_code = !cards.is_empty() || !loops.is_empty();
    let mut out = Vec::new();

    // Device.
    let device_def = find_all(files, &["torch.device(", "device = ", "device="]);
    let moved = find_all(files, &[".to(device", ".to(self.device", ".to(args.device"]);
    out.push(if !has_model_code && moved.is_empty() {
        check(
            "device",
            "Device handled explicitly",
            NotApplicable,
            "no model or training code",
            vec![],
        )
    } else if !device_def.is_empty() && !moved.is_empty() {
        let mut ev = first(&device_def, 1);
        ev.extend(first(&moved, 2));
        check(
            "device",
            "Device handled explicitly",
            Pass,
            "a device is chosen and used with .to(device)",
            ev,
        )
    } else {
        let cuda = find_all(files, &[".cuda("]);
        check(
            "device",
            "Device handled explicitly",
            Fail,
            "no device chosen once and used with .to(device)",
            first(&cuda, 2),
        )
    });

    // train()/eval() modes.
    let train = find_all(files, &[".train()"]);
    let eval = find_all(files, &[".eval()"]);
    out.push(if loops.is_empty() && evals.is_empty() {
        check(
            "train-eval-modes",
            "model.train() / model.eval() set",
            NotApplicable,
            "no training or evaluation code",
            vec![],
        )
    } else {
        let mut ev = first(&train, 1);
        ev.extend(first(&eval, 1));
        let (status, note) = match (
            loops.is_empty() || !train.is_empty(),
            evals.is_empty() && no_grad.is_empty() || !eval.is_empty(),
        ) {
            (true, true) => (Pass, "both modes are set"),
            (false, _) => (Fail, "training runs without model.train()"),
            (true, false) => (Fail, "evaluation runs without model.eval()"),
        };
        if status == Fail && ev.is_empty() {
            ev = first(&loop_ev, 1);
            ev.extend(evals.iter().take(1).map(|(_, e)| e.clone()));
        }
        check(
            "train-eval-modes",
            "model.train() / model.eval() set",
            status,
            note,
            ev,
        )
    });

    // Gradients zeroed; clipping for RNN/transformers.
    let zero = find_all(files, &["zero_grad("]);
    let clip = find_all(files, &["clip_grad_norm_(", "clip_grad_value_("]);
    let seq = find_all(
        files,
        &[
            "nn.LSTM(",
            "nn.GRU(",
            "nn.RNN(",
            "Transformer",
            "MultiheadAttention(",
        ],
    );
    out.push(if loops.is_empty() {
        check(
            "gradients",
            "Gradients zeroed each step; clipping for RNNs/transformers",
            NotApplicable,
            "no training loop",
            vec![],
        )
    } else if zero.is_empty() {
        check(
            "gradients",
            "Gradients zeroed each step; clipping for RNNs/transformers",
            Fail,
            "backward() without zero_grad()",
            first(&loop_ev, 2),
        )
    } else if !seq.is_empty() && clip.is_empty() {
        let mut ev = first(&seq, 1);
        ev.extend(first(&zero, 1));
        check(
            "gradients",
            "Gradients zeroed each step; clipping for RNNs/transformers",
            Fail,
            "recurrent/attention layers trained without gradient clipping",
            ev,
        )
    } else {
        let mut ev = first(&zero, 2);
        ev.extend(first(&clip, 1));
        check(
            "gradients",
            "Gradients zeroed each step; clipping for RNNs/transformers",
            Pass,
            "zero_grad() is called",
            ev,
        )
    });

    // Mixed precision.
    let legacy_amp = find_all(files, &["torch.cuda.amp"]);
    let amp = find_all(files, &["autocast(", "GradScaler("]);
    let unscale = find_all(files, &["unscale_("]);
    let scaler = find_all(files, &["GradScaler("]);
    out.push(if amp.is_empty() && legacy_amp.is_empty() {
        check(
            "amp",
            "Mixed precision used correctly (or not used)",
            NotApplicable,
            "mixed precision not used",
            vec![],
        )
    } else if !legacy_amp.is_empty() {
        check(
            "amp",
            "Mixed precision used correctly (or not used)",
            Fail,
            "uses the deprecated torch.cuda.amp API (use torch.amp)",
            first(&legacy_amp, 2),
        )
    } else if !scaler.is_empty() && !clip.is_empty() && unscale.is_empty() {
        let mut ev = first(&scaler, 1);
        ev.extend(first(&clip, 1));
        check(
            "amp",
            "Mixed precision used correctly (or not used)",
            Fail,
            "gradients clipped without scaler.unscale_() first",
            ev,
        )
    } else {
        check(
            "amp",
            "Mixed precision used correctly (or not used)",
            Pass,
            "torch.amp autocast/GradScaler",
            first(&amp, 2),
        )
    });

    // torch.compile.
    let compile = find_all(files, &["torch.compile("]);
    out.push(if compile.is_empty() {
        check(
            "compile",
            "torch.compile applied (suggested, never required)",
            NotApplicable,
            "not used; optional speed-up",
            vec![],
        )
    } else {
        check(
            "compile",
            "torch.compile applied (suggested, never required)",
            Pass,
            "torch.compile is applied",
            first(&compile, 2),
        )
    });

    // Checkpoints.
    let saves = calls_all(files, "torch.save(");
    let loads = calls_all(files, "torch.load(");
    let has_opt = !find_all(files, &["torch.optim.", "optim."]).is_empty();
    let has_sched = !find_all(files, &["lr_scheduler."]).is_empty();
    out.push(if saves.is_empty() && loads.is_empty() {
        check(
            "checkpoints",
            "Checkpoints save state_dicts; loading uses weights_only=True",
            NotApplicable,
            "no torch.save / torch.load",
            vec![],
        )
    } else {
        let mut problems = Vec::new();
        let mut ev = Vec::new();
        for (e, call) in &saves {
            if !call.contains("state_dict") {
                problems.push("saves a whole object instead of a state_dict");
                ev.push(e.clone());
            } else if (has_opt && !call.contains("optim") && !call.contains("opt."))
                || (has_sched && !call.contains("sched"))
            {
                problems.push("checkpoint lacks optimizer/scheduler state");
                ev.push(e.clone());
            }
        }
        for (e, call) in &loads {
            if !call.contains("weights_only=True") {
                problems.push("torch.load without weights_only=True");
                ev.push(e.clone());
            }
        }
        problems.dedup();
        if problems.is_empty() {
            let ev = saves
                .iter()
                .chain(&loads)
                .take(3)
                .map(|(e, _)| e.clone())
                .collect();
            check(
                "checkpoints",
                "Checkpoints save state_dicts; loading uses weights_only=True",
                Pass,
                "state_dict checkpoints, safe loading",
                ev,
            )
        } else {
            check(
                "checkpoints",
                "Checkpoints save state_dicts; loading uses weights_only=True",
                Fail,
                problems.join("; "),
                ev,
            )
        }
    });

    // Held-out evaluation.
    out.push(if !no_grad.is_empty() {
        check(
            "evaluation",
            "Held-out evaluation under no_grad / inference_mode",
            Pass,
            "evaluation runs without autograd",
            first(&no_grad, 2),
        )
    } else if !evals.is_empty() {
        let ev = evals.iter().take(2).map(|(_, e)| e.clone()).collect();
        check(
            "evaluation",
            "Held-out evaluation under no_grad / inference_mode",
            Fail,
            "evaluation code without a no_grad/inference_mode block",
            ev,
        )
    } else if !loops.is_empty() {
        check(
            "evaluation",
            "Held-out evaluation under no_grad / inference_mode",
            Fail,
            "training without any held-out evaluation",
            first(&loop_ev, 1),
        )
    } else {
        check(
            "evaluation",
            "Held-out evaluation under no_grad / inference_mode",
            NotApplicable,
            "no training or evaluation code",
            vec![],
        )
    });

    // Seeds.
    let torch_seed = find_all(files, &["manual_seed(", "seed_everything("]);
    let np_used = find_all(files, &["import numpy", "np.random."]);
    let np_seed = find_all(
        files,
        &["np.random.seed(", "numpy.random.seed(", "default_rng("],
    );
    let py_random = find_all(files, &["import random"]);
    let py_seed = find_all(files, &["random.seed("]);
    out.push(if loops.is_empty() && torch_seed.is_empty() {
        check(
            "seeds",
            "Seeds set (torch, numpy, random)",
            NotApplicable,
            "no training code",
            vec![],
        )
    } else if torch_seed.is_empty() {
        check(
            "seeds",
            "Seeds set (torch, numpy, random)",
            Fail,
            "no torch.manual_seed",
            first(&loop_ev, 1),
        )
    } else if !np_used.is_empty() && np_seed.is_empty() {
        check(
            "seeds",
            "Seeds set (torch, numpy, random)",
            Fail,
            "numpy used but not seeded",
            first(&np_used, 1),
        )
    } else if !py_random.is_empty() && py_seed.iter().all(|e| e.text.contains("np.random")) {
        check(
            "seeds",
            "Seeds set (torch, numpy, random)",
            Fail,
            "random used but not seeded",
            first(&py_random, 1),
        )
    } else {
        check(
            "seeds",
            "Seeds set (torch, numpy, random)",
            Pass,
            "seeds are set",
            first(&torch_seed, 2),
        )
    });

    // DataLoader tuning.
    let loaders = calls_all(files, "DataLoader(");
    let loaders: Vec<_> = loaders
        .into_iter()
        .filter(|(e, _)| !e.text.starts_with("from ") && !e.text.starts_with("import "))
        .collect();
    let gpu = find_all(files, &["cuda"]);
    out.push(if loaders.is_empty() || gpu.is_empty() {
        check(
            "dataloader",
            "DataLoader tuned for GPU (workers, pin_memory, persistent workers)",
            NotApplicable,
            if loaders.is_empty() {
                "no DataLoader"
            } else {
                "no GPU use found"
            },
            vec![],
        )
    } else {
        let untuned: Vec<Evidence> = loaders
            .iter()
            .filter(|(_, c)| !(c.contains("num_workers") && c.contains("pin_memory")))
            .map(|(e, _)| e.clone())
            .collect();
        if untuned.is_empty() {
            check(
                "dataloader",
                "DataLoader tuned for GPU (workers, pin_memory, persistent workers)",
                Pass,
                "num_workers and pin_memory set",
                loaders.iter().take(2).map(|(e, _)| e.clone()).collect(),
            )
        } else {
            check(
                "dataloader",
                "DataLoader tuned for GPU (workers, pin_memory, persistent workers)",
                Fail,
                "DataLoader without num_workers and pin_memory on a GPU run",
                untuned,
            )
        }
    });
    out
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub(crate) fn summarize(
    files: &[&FileFacts],
    cards: &[(String, ModelCard)],
    counts: Counts,
    torch_requirement: Option<String>,
) -> Summary {
    let models: Vec<Item> = cards
        .iter()
        .map(|(f, c)| Item {
            name: c.name.clone(),
            location: f.clone(),
        })
        .collect();
    let item = |(n, e): &(String, Evidence)| Item {
        name: n.clone(),
        location: e.location(),
    };
    let training_loops: Vec<Item> = training_loops(files).iter().map(item).collect();
    let mut evaluation: Vec<Item> = evaluation_functions(files).iter().map(item).collect();
    for e in find_all(files, NO_GRAD) {
        evaluation.push(Item {
            name: e.text.trim_end_matches(':').to_string(),
            location: e.location(),
        });
    }
    let data_loaders: Vec<Item> = calls_all(files, "DataLoader(")
        .into_iter()
        .filter(|(e, _)| !e.text.starts_with("from ") && !e.text.starts_with("import "))
        .map(|(e, _)| Item {
            name: "DataLoader".into(),
            location: e.location(),
        })
        .collect();
    let distributed = find_all(
        files,
        &[
            "DistributedDataParallel(",
            "init_process_group(",
            "FullyShardedDataParallel(",
            "DDP(",
            "FSDP(",
        ],
    );
    let amp = find_all(files, &["autocast(", "GradScaler("]);
    let lines: usize = files.iter().map(|f| f.raw.len()).sum();
    let names = |v: &[Item]| {
        v.iter()
            .map(|i| i.name.clone())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = vec![format!(
        "{} ({})",
        plural(files.len(), "Python file", "Python files"),
        plural(lines, "line", "lines")
    )];
    parts.push(if models.is_empty() {
        "no nn.Module classes".to_string()
    } else {
        format!(
            "{} ({})",
            plural(models.len(), "nn.Module class", "nn.Module classes"),
            names(&models)
        )
    });
    parts.push(if training_loops.is_empty() {
        "no training loop".to_string()
    } else {
        format!(
            "{} ({})",
            plural(training_loops.len(), "training loop", "training loops"),
            names(&training_loops)
        )
    });
    parts.push(plural(
        evaluation.len(),
        "evaluation function/block",
        "evaluation functions/blocks",
    ));
    parts.push(plural(data_loaders.len(), "DataLoader", "DataLoaders"));
    parts.push(if distributed.is_empty() {
        "single process (no distributed setup)".into()
    } else {
        "distributed".into()
    });
    parts.push(if amp.is_empty() {
        "no mixed precision".into()
    } else {
        "mixed precision".into()
    });
    let description = format!("{}.", parts.join(", "));
    let verdict = if counts.critical > 0 {
        format!(
            "Not ready: {} must be fixed before results can be trusted; {} and {} follow.",
            plural(counts.critical, "critical issue", "critical issues"),
            plural(counts.warning, "warning", "warnings"),
            plural(counts.info, "suggestion", "suggestions")
        )
    } else if counts.warning > 0 {
        format!(
            "No critical issue; {} (performance, deprecations or best practice) and {}.",
            plural(counts.warning, "warning", "warnings"),
            plural(counts.info, "suggestion", "suggestions")
        )
    } else {
        format!(
            "No critical issue or warning; {}.",
            plural(counts.info, "suggestion", "suggestions")
        )
    };
    Summary {
        files: files.len(),
        lines,
        torch_requirement,
        checklist: checklist(files, cards),
        models,
        training_loops,
        evaluation,
        data_loaders,
        distributed,
        amp,
        description,
        verdict,
        counts,
    }
}

pub(crate) fn positives(files: &[&FileFacts]) -> Vec<Positive> {
    let mut out = Vec::new();
    let mut push = |id, title, detail, evidence: Vec<Evidence>| {
        if !evidence.is_empty() {
            out.push(Positive {
                id,
                title,
                detail,
                evidence,
            });
        }
    };
    push(
        "zero-grad-set-to-none",
        "zero_grad(set_to_none=True)",
        "frees gradient memory between steps instead of writing zeros",
        find_all(files, &["zero_grad(set_to_none=True)"]),
    );
    let eval = find_all(files, &[".eval()"]);
    let no_grad = find_all(files, NO_GRAD);
    if !eval.is_empty() && !no_grad.is_empty() {
        let mut ev = first(&eval, 2);
        ev.extend(first(&no_grad, 2));
        push(
            "eval-no-grad",
            "Evaluation in eval mode without autograd",
            "model.eval() switches dropout/batch-norm to inference and no_grad/inference_mode saves memory and time",
            ev,
        );
    }
    for f in files {
        let unscale = f.find(&["unscale_("]);
        let clip = f.find(&["clip_grad_norm_(", "clip_grad_value_("]);
        if let (Some(u), Some(c)) = (unscale.first(), clip.first()) {
            if u.line < c.line {
                push(
                    "unscale-before-clip",
                    "GradScaler.unscale_ before gradient clipping",
                    "clipping works on the true gradient values under AMP",
                    vec![u.clone(), c.clone()],
                );
            }
        }
    }
    push(
        "modern-amp",
        "torch.amp autocast API",
        "the device-generic AMP API (torch.cuda.amp is deprecated)",
        find_all(
            files,
            &[
                "torch.amp.autocast(",
                "torch.autocast(",
                "torch.amp.GradScaler(",
            ],
        ),
    );
    push(
        "weights-only",
        "torch.load(..., weights_only=True)",
        "loading a checkpoint cannot execute code",
        find_all(files, &["weights_only=True"]),
    );
    push(
        "seeds",
        "Seeds set",
        "runs are repeatable",
        find_all(
            files,
            &[
                "manual_seed(",
                "np.random.seed(",
                "random.seed(",
                "seed_everything(",
            ],
        ),
    );
    push(
        "set-epoch",
        "DistributedSampler.set_epoch each epoch",
        "every epoch gets a different shuffle across ranks",
        find_all(files, &["set_epoch("]),
    );
    let pin = find_all(files, &["pin_memory=True"]);
    let nb = find_all(files, &["non_blocking=True"]);
    if !pin.is_empty() && !nb.is_empty() {
        let mut ev = first(&pin, 1);
        ev.extend(first(&nb, 1));
        push(
            "pin-memory-non-blocking",
            "pin_memory + non_blocking transfers",
            "host-to-device copies overlap with compute",
            ev,
        );
    }
    let sd: Vec<Evidence> = calls_all(files, "torch.save(")
        .into_iter()
        .filter(|(_, c)| c.contains("state_dict"))
        .map(|(e, _)| e)
        .collect();
    push(
        "state-dict-checkpoints",
        "state_dict checkpoints",
        "checkpoints survive code refactors and load without unpickling classes",
        sd,
    );
    push(
        "torch-compile",
        "torch.compile applied",
        "graph compilation can speed up training and inference",
        find_all(files, &["torch.compile("]),
    );
    out
}

fn layer_types(layer: &Layer, out: &mut Vec<String>) {
    out.push(layer.type_name.clone());
    for c in &layer.children {
        layer_types(c, out);
    }
}

pub(crate) fn testing(
    files: &[&FileFacts],
    cards: &[(String, ModelCard)],
) -> Vec<TestRecommendation> {
    let mut out = Vec::new();
    for (file, card) in cards {
        let args: Vec<String> = card
            .init_args
            .iter()
            .map(|(k, v)| {
                if v == "?" {
                    format!("{k}=...")
                } else {
                    format!("{k}={v}")
                }
            })
            .collect();
        let ctor = format!("{}({})", card.name, args.join(", "));
        let mut types = Vec::new();
        layer_types(&card.root, &mut types);
        let stochastic = types
            .iter()
            .any(|t| t.contains("Dropout") || t.contains("BatchNorm"));
        let mut tests = vec![
            format!("output shape: build `{ctor}`, run a small batch through it and assert the output shape"),
            "gradient flow: after `model(x).sum().backward()`, every parameter in `model.parameters()` has a finite, non-None `.grad`".to_string(),
            format!(
                "state_dict round trip: save and load `model.state_dict()` into a fresh `{ctor}` ({} expected, strict loading), outputs identical",
                plural(card.state_dict.len(), "entry", "entries")
            ),
            format!(
                "eval determinism: two forward passes under `model.eval()` give identical outputs{}",
                if stochastic { " (the module has dropout/batch-norm layers)" } else { "" }
            ),
            "device move: after `model.to(device)` (CPU, and CUDA when available) every parameter and buffer is on that device and a forward pass runs".to_string(),
        ];
        if card.unknown_layers > 0 {
            tests.push(format!(
                "parameter count: assert `sum(p.numel() for p in model.parameters())` ({} layers have run-time sizes)",
                card.unknown_layers
            ));
        } else if let Some(n) = card.total_params {
            tests.push(format!(
                "parameter count: `sum(p.numel() for p in model.parameters()) == {n}`"
            ));
        }
        out.push(TestRecommendation {
            kind: "module",
            target: card.name.clone(),
            location: file.clone(),
            tests,
        });
    }
    for (name, e) in training_loops(files) {
        out.push(TestRecommendation {
            kind: "training-loop",
            target: name,
            location: e.location(),
            tests: vec![
                "overfit one batch: repeat the step on one fixed small batch; the loss must fall close to zero".to_string(),
                "one step changes every trainable parameter and leaves the model in train mode".to_string(),
                "a checkpoint saved after a step reloads and resumes with the same loss".to_string(),
            ],
        });
    }
    for (name, e) in evaluation_functions(files) {
        out.push(TestRecommendation {
            kind: "evaluation",
            target: name,
            location: e.location(),
            tests: vec![
                "runs without building a graph (`torch.is_grad_enabled()` is False inside) and returns the same result twice".to_string(),
                "does not change any parameter and restores the model's training mode afterwards".to_string(),
            ],
        });
    }
    out
}

/// `forward` definitions without type hints (code-quality observations).
pub(crate) fn missing_type_hints(facts: &FileFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, line) in facts.code.iter().enumerate() {
        let t = line.trim_start();
        if !t.starts_with("def forward(") || !t.trim_end().ends_with(':') {
            continue;
        }
        let params = t
            .strip_prefix("def forward(")
            .and_then(|r| r.rfind(')').map(|j| &r[..j]))
            .unwrap_or("");
        let annotated = params.contains(':');
        if annotated && t.contains("->") {
            continue;
        }
        let hinted: Vec<String> = params
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| {
                if p == "self" || p.contains(':') || p.contains('=') || p.starts_with('*') {
                    p.to_string()
                } else {
                    format!("{p}: torch.Tensor")
                }
            })
            .collect();
        out.push(Finding {
            code: "REVIEW".into(),
            rule: "forward-type-hints".into(),
            severity: Severity::Info,
            title: "forward() without type hints".into(),
            file: facts.file.clone(),
            cell: facts.display_row(i + 1).0,
            line: facts.display_row(i + 1).1,
            column: line.len() - t.len() + 1,
            scope: facts.scope_at(i + 1),
            message:
                "`forward` has no type hints: annotate the tensor arguments and the return type"
                    .into(),
            why: Some(
                "Hints document the expected inputs and let type checkers catch wrong calls."
                    .into(),
            ),
            fix: Some(crate::Snippet {
                origin: "suggestion",
                applicability: None,
                description: "annotate the arguments and the return type".into(),
                before: t.trim_end().to_string(),
                after: format!("def forward({}) -> torch.Tensor:", hinted.join(", ")),
            }),
            note: None,
        });
    }
    out
}

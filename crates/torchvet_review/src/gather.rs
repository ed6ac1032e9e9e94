//! What the review says about the project beyond its findings (the summary lists, the
//! checklist, the positive aspects, the tests to write), read from the project model the
//! rules use: classes and functions of each file summary, their training events
//! (`backward`, `zero_grad`, `eval`/`train`, clipping, GradScaler), loops and their roles,
//! `torch.save` contents resolved through the project, and the recorded practices (seeds,
//! device, AMP, loaders, loads, `torch.compile`).

use crate::{
    Check, CheckFinding, CheckStatus, Counts, Duplicate, Evidence, Finding, Item, Positive,
    Summary, TestRecommendation,
};
use ruff_text_size::TextSize;
use torchvet_python::SourceFile;
use torchvet_semantic::flow::EventKind;
use torchvet_semantic::project::facts::{LoopRole, StateRole};
use torchvet_semantic::project::practices::{ApiUse, Practices};
use torchvet_semantic::project::summary::{FileSummary, Ref};
use torchvet_semantic::project::{ClassId, Entity, FuncId, ProjectFile};
use torchvet_semantic::saves::{RejectedKind, Saved};

/// A file the review looked at (one per distinct content).
pub(crate) struct ReviewedFile<'a> {
    /// As displayed.
    pub name: String,
    /// Its source.
    pub source: &'a SourceFile,
    /// Its view of the project model.
    pub project: Option<ProjectFile>,
    /// The calls that tell how it trains (empty for files that never say torch).
    pub practices: Practices,
}

impl ReviewedFile<'_> {
    fn summary(&self) -> Option<&FileSummary> {
        self.project.as_ref().map(ProjectFile::summary)
    }

    fn evidence(&self, offset: TextSize) -> Evidence {
        let (cell, line, _) = self.source.position(offset);
        let mut text = self.source.line_text(offset).trim().to_string();
        if text.chars().count() > 90 {
            text = text.chars().take(87).collect::<String>() + "...";
        }
        Evidence {
            file: self.name.clone(),
            cell,
            line,
            text,
        }
    }

    fn loc(&self, offset: TextSize) -> String {
        self.evidence(offset).location()
    }

    /// The innermost `Class.function` holding a byte offset (from the file summary).
    pub(crate) fn scope_at(&self, offset: usize) -> Option<String> {
        let s = self.summary()?;
        let at = TextSize::try_from(offset).ok()?;
        let f = s
            .functions
            .iter()
            .skip(1)
            .filter(|f| f.range.contains(at))
            .min_by_key(|f| f.range.len())?;
        Some(match f.class.and_then(|c| s.classes.get(c as usize)) {
            Some(c) => format!("{}.{}", c.name, f.name),
            None => f.name.to_string(),
        })
        .map(|n| n.replace("<module>.", ""))
    }
}

struct Model {
    name: String,
    at: String,
    init_params: Vec<String>,
    mode_layer: Option<&'static str>,
    submodule_of_other: bool,
    /// Built by code that is not itself a module (a builder function, a training script).
    built_outside: bool,
}

struct Save {
    at: Evidence,
    roles: Vec<StateRole>,
    whole: Option<RejectedKind>,
    /// Every resolved content loads with `weights_only=True` (tensors, state_dicts, plain
    /// values).
    weights_only: bool,
}

/// Everything gathered, per kind, with evidence.
#[derive(Default)]
pub(crate) struct Facts {
    files: usize,
    lines: usize,
    models: Vec<Model>,
    training: Vec<Item>,
    evaluation: Vec<Item>,
    loaders: Vec<(Evidence, ApiUse)>,
    uses: Vec<(Evidence, ApiUse)>,
    eval_events: Vec<Evidence>,
    train_events: Vec<Evidence>,
    zero_grad: Vec<Evidence>,
    clip: Vec<Evidence>,
    unscale: Vec<Evidence>,
    eval_no_grad_loops: Vec<Evidence>,
    saves: Vec<Save>,
    main_guard: bool,
    notebooks: usize,
}

pub(crate) struct SummaryInput {
    pub counts: Counts,
    pub torch_requirement: Option<String>,
    pub verdict_level: &'static str,
    pub verdict: String,
    pub checklist: Vec<Check>,
    pub duplicates: Vec<Duplicate>,
}

fn func_label(s: &FileSummary, index: usize) -> String {
    let f = &s.functions[index];
    if index == 0 {
        return if s.notebook {
            "notebook cells".to_string()
        } else {
            "module body".to_string()
        };
    }
    match f.class.and_then(|c| s.classes.get(c as usize)) {
        Some(c) => format!("{}.{}", c.name, f.name),
        None => f.name.to_string(),
    }
}

fn ref_name(r: &Ref) -> Option<&str> {
    match r {
        Ref::Local(n) | Ref::Qualified(n) => n.rsplit('.').next(),
        _ => None,
    }
}

impl Facts {
    /// The top-level models: built by non-module code (builder functions, scripts), else the
    /// modules no other module holds.
    fn roots(&self) -> Vec<&Model> {
        let built: Vec<&Model> = self.models.iter().filter(|m| m.built_outside).collect();
        if !built.is_empty() {
            return built;
        }
        self.models
            .iter()
            .filter(|m| !m.submodule_of_other)
            .collect()
    }

    pub(crate) fn collect(files: &[ReviewedFile]) -> Facts {
        let mut out = Facts {
            files: files.len(),
            lines: files.iter().map(|f| f.source.text.lines().count()).sum(),
            notebooks: files.iter().filter(|f| f.source.cells().is_some()).count(),
            ..Facts::default()
        };
        let mut submodule_names: Vec<String> = Vec::new();
        let mut model_ids: Vec<ClassId> = Vec::new();
        let mut built: Vec<ClassId> = Vec::new();
        for rf in files {
            let (Some(pf), Some(s)) = (rf.project.as_ref(), rf.summary()) else {
                continue;
            };
            let model = &pf.model;
            out.main_guard |= rf.practices.main_guard;
            for (ci, c) in s.classes.iter().enumerate() {
                let id = ClassId {
                    file: pf.file,
                    index: ci as u32,
                };
                if !model.is_module(id) {
                    continue;
                }
                submodule_names.extend(c.submodules.iter().filter_map(ref_name).map(String::from));
                let init_params = c
                    .methods
                    .iter()
                    .find(|(n, _)| &**n == "__init__")
                    .and_then(|(_, fi)| s.functions.get(*fi as usize))
                    .map(|f| f.params.iter().skip(1).map(|p| p.to_string()).collect())
                    .unwrap_or_default();
                model_ids.push(id);
                out.models.push(Model {
                    name: c.name.to_string(),
                    at: rf.loc(c.range.start()),
                    init_params,
                    mode_layer: model.mode_layer(id).map(|(l, _)| l),
                    submodule_of_other: false,
                    built_outside: false,
                });
            }
            for (fi, f) in s.functions.iter().enumerate() {
                let in_module = f.class.is_some_and(|c| {
                    model.is_module(ClassId {
                        file: pf.file,
                        index: c,
                    })
                });
                if !in_module {
                    // The classes this code builds, resolved by the model.
                    let ctx = FuncId {
                        file: pf.file,
                        index: fi as u32,
                    };
                    for c in &f.calls {
                        if let Some(Entity::Class(cid)) = model.callee_entity(ctx, &c.callee) {
                            built.push(cid);
                        }
                    }
                }
            }
            for (fi, f) in s.functions.iter().enumerate() {
                let in_module = f.class.is_some_and(|c| {
                    model.is_module(ClassId {
                        file: pf.file,
                        index: c,
                    })
                });
                let id = FuncId {
                    file: pf.file,
                    index: fi as u32,
                };
                let label = func_label(s, fi);
                let mut trains = false;
                let switches_to_eval = f.events.iter().any(|e| e.kind == EventKind::Eval);
                for e in &f.events {
                    let ev = || rf.evidence(e.range.start());
                    match e.kind {
                        EventKind::Backward => trains = true,
                        EventKind::Eval => out.eval_events.push(ev()),
                        EventKind::Train => out.train_events.push(ev()),
                        EventKind::ZeroGrad => out.zero_grad.push(ev()),
                        EventKind::ClipGrad => out.clip.push(ev()),
                        EventKind::ScalerUnscale => out.unscale.push(ev()),
                        _ => {}
                    }
                }
                if trains {
                    out.training.push(Item {
                        name: label.clone(),
                        location: rf.loc(f.range.start()),
                    });
                }
                // An evaluation: a loop that evaluates after a switch to eval mode (not a
                // parameter update under `no_grad`, not a metric helper).
                let mut evaluates = false;
                for (li, l) in f.facts.loops.iter().enumerate() {
                    if model.loop_role(id, li as u32) == LoopRole::Eval
                        && (l.eval_before || switches_to_eval)
                    {
                        evaluates = true;
                        if l.no_grad {
                            out.eval_no_grad_loops.push(rf.evidence(l.range.start()));
                        }
                    }
                }
                if fi > 0 && !trains && !in_module && evaluates {
                    out.evaluation.push(Item {
                        name: label,
                        location: rf.loc(f.range.start()),
                    });
                }
                for save in &f.facts.saves {
                    let mut roles = Vec::new();
                    let mut whole = None;
                    let contents = model.resolve_content(id, &save.content, 0);
                    let weights_only = !contents.is_empty()
                        && contents.iter().all(|c| c.saved == Saved::WeightsOnly);
                    for rc in contents {
                        if let Saved::Rejected(k, _) = &rc.saved {
                            whole.get_or_insert(k.clone());
                        }
                        for (_, _, role) in rc.keys.iter().flatten() {
                            if *role != StateRole::None && !roles.contains(role) {
                                roles.push(*role);
                            }
                        }
                    }
                    out.saves.push(Save {
                        at: rf.evidence(save.call.start()),
                        roles,
                        whole,
                        weights_only,
                    });
                }
            }
            for u in &rf.practices.uses {
                let ev = rf.evidence(u.range.start());
                if u.name.ends_with("DataLoader") {
                    out.loaders.push((ev.clone(), u.clone()));
                }
                out.uses.push((ev, u.clone()));
            }
        }
        for (m, id) in out.models.iter_mut().zip(&model_ids) {
            m.submodule_of_other = submodule_names.contains(&m.name);
            m.built_outside = built.contains(id);
        }
        out
    }

    fn uses_of(&self, names: &[&str]) -> Vec<&(Evidence, ApiUse)> {
        self.uses
            .iter()
            .filter(|(_, u)| names.contains(&&*u.name))
            .collect()
    }

    fn ev_of(&self, names: &[&str]) -> Vec<Evidence> {
        self.uses_of(names)
            .into_iter()
            .map(|(e, _)| e.clone())
            .collect()
    }

    /// The expert checklist, each row from facts, each fail linked to its findings.
    pub(crate) fn checklist(&self, sections: &[&Vec<Finding>]) -> Vec<Check> {
        let all: Vec<&Finding> = sections.iter().flat_map(|s| s.iter()).collect();
        let linked = |rules: &[&str]| -> Vec<CheckFinding> {
            all.iter()
                .filter(|f| rules.contains(&f.rule.as_str()))
                .map(|f| CheckFinding {
                    code: f.code.clone(),
                    rule: f.rule.clone(),
                    count: f.locations.len(),
                    first: f.location(),
                })
                .collect()
        };
        let trains = !self.training.is_empty();
        let has_models = !self.models.is_empty() || trains;
        let mut rows = Vec::new();
        let mut row = |id: &'static str,
                       title: &'static str,
                       rules: &[&str],
                       applicable: bool,
                       evidence: Vec<Evidence>,
                       pass_note: String,
                       absent_note: &str| {
            let findings = linked(rules);
            let (status, note) = if !findings.is_empty() {
                let n: usize = findings.iter().map(|f| f.count).sum();
                (
                    CheckStatus::Fail,
                    format!("{} finding{} (see below)", n, if n == 1 { "" } else { "s" }),
                )
            } else if !evidence.is_empty() {
                (CheckStatus::Pass, pass_note)
            } else if !applicable {
                (CheckStatus::NotApplicable, absent_note.to_string())
            } else {
                (CheckStatus::NotShown, absent_note.to_string())
            };
            let mut evidence = evidence;
            evidence.truncate(3);
            rows.push(Check {
                id,
                title,
                status,
                note,
                evidence,
                findings,
            });
        };

        // A device chosen (`torch.device`), then modules and batches moved to a named device
        // (`.to(device)`, `.cuda()`), then moves that follow another tensor's device.
        let mut device = self.ev_of(&["torch.device"]);
        let named = |u: &ApiUse| u.name.as_ref() == ".to" && u.device_arg && !u.follows_tensor;
        device.extend(
            self.uses
                .iter()
                .filter(|(_, u)| named(u) || u.name.as_ref() == ".cuda")
                .map(|(e, _)| e.clone()),
        );
        device.extend(
            self.uses
                .iter()
                .filter(|(_, u)| u.name.as_ref() == ".to" && u.device_arg && u.follows_tensor)
                .map(|(e, _)| e.clone()),
        );
        let moves = device.len();
        row(
            "device",
            "Device handled explicitly",
            &[
                "input-not-moved-to-model-device",
                "cuda-is-available-not-called",
                "hardcoded-device-in-forward",
                "model-to-device-in-loop",
            ],
            has_models,
            device,
            format!("a device is chosen and used ({})", crate::places(moves)),
            if has_models {
                "no device chosen: everything runs where it is created (CPU)"
            } else {
                "no model or training code"
            },
        );

        let mut modes = self.eval_events.clone();
        modes.extend(self.train_events.iter().cloned());
        let note = match (self.eval_events.len(), self.train_events.len()) {
            (e, 0) => format!(
                "`.eval()` in {}; `.train()` never called (modules start in training mode)",
                crate::places(e)
            ),
            (0, t) => format!("`.train()` in {}; `.eval()` never called", crate::places(t)),
            (e, t) => format!("`.eval()` in {}, `.train()` in {t}", crate::places(e)),
        };
        row(
            "train-eval-modes",
            "`model.train()` / `model.eval()` set",
            &[
                "missing-eval-mode",
                "missing-train-after-eval",
                "functional-dropout-without-training",
            ],
            has_models,
            modes,
            note,
            "no mode switch found",
        );

        let zn = self.zero_grad.len();
        let cn = self.clip.len();
        let mut grads = self.zero_grad.clone();
        grads.extend(self.clip.iter().cloned());
        row(
            "zero-grad",
            "Gradients zeroed each step (clipped where needed)",
            &[
                "missing-zero-grad",
                "zero-grad-misplaced",
                "clip-grad-after-step",
                "clip-grad-norm-amp-without-unscale",
                "grad-accum-loss-not-scaled",
            ],
            trains,
            grads,
            format!("`zero_grad` in {}; clipping in {cn}", crate::places(zn)),
            if trains {
                "no gradient clearing found"
            } else {
                "no training loop"
            },
        );

        let amp = self.ev_of(torchvet_semantic::project::practices::AMP);
        let amp_note = if self.unscale.is_empty() {
            "autocast / GradScaler used".to_string()
        } else {
            "autocast / GradScaler used, `unscale_` before clipping".to_string()
        };
        row(
            "mixed-precision",
            "Mixed precision used correctly (or not used)",
            &[
                "clip-grad-norm-amp-without-unscale",
                "amp-scaler-step-without-scale",
                "manual-half-training",
                "backward-inside-autocast",
            ],
            false,
            amp,
            amp_note,
            "not used",
        );

        row(
            "torch-compile",
            "`torch.compile` applied (optional)",
            &[
                "torch-compile-in-loop",
                "torch-compile-result-discarded",
                "ddp-compile-order",
            ],
            false,
            self.ev_of(&["torch.compile"]),
            "compiled".to_string(),
            "not used (a suggestion, never required)",
        );

        let mut ck: Vec<Evidence> = self
            .saves
            .iter()
            .filter(|s| s.whole.is_none() && (s.weights_only || !s.roles.is_empty()))
            .map(|s| s.at.clone())
            .collect();
        let safe_loads: Vec<Evidence> = self
            .uses_of(&["torch.load"])
            .into_iter()
            .filter(|(_, u)| u.kwarg("weights_only").is_some_and(|v| v.is_on()))
            .map(|(e, _)| e.clone())
            .collect();
        let with_opt = self
            .saves
            .iter()
            .filter(|s| s.roles.contains(&StateRole::Optimizer))
            .count();
        let ck_note = format!(
            "{} save(s) of state_dicts / tensors ({with_opt} with optimizer state); {} load(s) with `weights_only=True`",
            ck.len(),
            safe_loads.len()
        );
        ck.extend(safe_loads);
        let ckpt_applicable = !self.saves.is_empty() || !self.uses_of(&["torch.load"]).is_empty();
        row(
            "checkpoints",
            "Checkpoints hold state_dicts; loads use `weights_only=True`",
            &[
                "torch-load-without-weights-only",
                "torch-save-whole-model",
                "resume-without-optimizer-state",
                "checkpoint-fails-weights-only-load",
                "best-state-dict-not-copied",
                "ddp-state-dict-module-prefix",
            ],
            ckpt_applicable,
            ck,
            ck_note,
            if ckpt_applicable {
                "checkpoint contents not known"
            } else {
                "no checkpoints saved or loaded"
            },
        );

        let mut ev = self.eval_no_grad_loops.clone();
        ev.extend(self.ev_of(&["torch.inference_mode"]));
        let evn = self.eval_no_grad_loops.len();
        row(
            "eval-no-grad",
            "Held-out evaluation under `no_grad` / `inference_mode`",
            &[
                "eval-without-no-grad",
                "eval-loader-shuffled",
                "backward-inside-no-grad",
            ],
            trains || !self.evaluation.is_empty(),
            ev,
            format!("{evn} evaluation loop(s) run without autograd"),
            if trains {
                "no evaluation loop found"
            } else {
                "no training or evaluation loop"
            },
        );

        let seeds = self.ev_of(torchvet_semantic::project::practices::SEEDS);
        let sn = seeds.len();
        row(
            "seeds",
            "Seeds set (torch, numpy, random)",
            &["missing-seed", "numpy-rng-in-dataset-without-worker-seed"],
            trains,
            seeds,
            format!("{sn} seed call(s)"),
            if trains { "no seed set" } else { "no training" },
        );

        let tuned: Vec<Evidence> = self
            .loaders
            .iter()
            .filter(|(_, u)| {
                u.kwarg("num_workers").is_some_and(|v| !v.is_off())
                    || u.kwarg("pin_memory").is_some_and(|v| v.is_on())
            })
            .map(|(e, _)| e.clone())
            .collect();
        let dl_note = format!(
            "{} of {} DataLoader(s) set workers or pin_memory",
            tuned.len(),
            self.loaders.len()
        );
        row(
            "dataloader",
            "DataLoader tuned (workers, pin_memory)",
            &[
                "dataloader-num-workers-zero",
                "dataloader-pin-memory-missing",
                "persistent-workers-without-workers",
                "prefetch-factor-without-workers",
                "dataloader-workers-without-main-guard",
                "dataloader-sampler-with-shuffle",
            ],
            !self.loaders.is_empty(),
            tuned,
            dl_note,
            if self.loaders.is_empty() {
                "no DataLoader"
            } else {
                "loaders keep the defaults (no workers, no pinned memory)"
            },
        );
        rows
    }

    pub(crate) fn summary(&self, input: SummaryInput) -> Summary {
        let models: Vec<Item> = self
            .models
            .iter()
            .map(|m| Item {
                name: m.name.clone(),
                location: m.at.clone(),
            })
            .collect();
        let data_loaders: Vec<Item> = self
            .loaders
            .iter()
            .map(|(e, _)| Item {
                name: "DataLoader".to_string(),
                location: e.location(),
            })
            .collect();
        let distributed = self.ev_of(&[
            "torch.nn.parallel.DistributedDataParallel",
            "torch.distributed.init_process_group",
            "torch.distributed.fsdp.FullyShardedDataParallel",
        ]);
        let data_parallel =
            self.ev_of(&["torch.nn.DataParallel", "torch.nn.parallel.DataParallel"]);
        let amp = self.ev_of(torchvet_semantic::project::practices::AMP);
        let mut parts = Vec::new();
        let count =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let roots = self.roots();
        if !self.models.is_empty() {
            let names: Vec<String> = roots
                .iter()
                .take(4)
                .map(|m| format!("`{}`", m.name))
                .collect();
            let more = roots.len().saturating_sub(4);
            let tail = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            parts.push(format!(
                "{} (top-level: {}{tail})",
                count(self.models.len(), "model class", "model classes"),
                names.join(", ")
            ));
        }
        if !self.training.is_empty() {
            parts.push(count(
                self.training.len(),
                "training loop",
                "training loops",
            ));
        }
        if !self.evaluation.is_empty() {
            parts.push(count(
                self.evaluation.len(),
                "evaluation function",
                "evaluation functions",
            ));
        }
        if !self.loaders.is_empty() {
            parts.push(count(self.loaders.len(), "DataLoader", "DataLoaders"));
        }
        parts.push(if !distributed.is_empty() {
            "distributed".to_string()
        } else if !data_parallel.is_empty() {
            "single-process, multi-GPU through `nn.DataParallel`".to_string()
        } else {
            "single-process".to_string()
        });
        parts.push(if amp.is_empty() {
            "full precision".to_string()
        } else {
            "mixed precision".to_string()
        });
        let what = if self.notebooks > 0 {
            format!(
                "{} ({} notebooks)",
                count(self.files, "file", "files"),
                self.notebooks
            )
        } else {
            count(self.files, "file", "files")
        };
        let description = format!("{what}, {} lines: {}.", self.lines, parts.join(", "));
        Summary {
            files: self.files,
            lines: self.lines,
            torch_requirement: input.torch_requirement,
            models,
            training_loops: self.training.clone(),
            evaluation: self.evaluation.clone(),
            data_loaders,
            distributed,
            amp,
            description,
            verdict_level: input.verdict_level,
            verdict: input.verdict,
            counts: input.counts,
            checklist: input.checklist,
            duplicates: input.duplicates,
        }
    }

    /// Good practices the facts show, each with where.
    pub(crate) fn positives(&self) -> Vec<Positive> {
        let mut out = Vec::new();
        let mut push = |id, title, detail, mut evidence: Vec<Evidence>| {
            if !evidence.is_empty() {
                evidence.truncate(3);
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
            "`zero_grad(set_to_none=True)`",
            "frees gradient memory between steps instead of filling it with zeros",
            self.uses
                .iter()
                .filter(|(_, u)| {
                    u.name.as_ref() == ".zero_grad"
                        && u.kwarg("set_to_none").is_some_and(|v| v.is_on())
                })
                .map(|(e, _)| e.clone())
                .collect(),
        );
        push(
            "eval-no-grad",
            "Evaluation without autograd",
            "evaluation loops run under `no_grad`/`inference_mode` after `.eval()`: no graph is kept, dropout and batch norm are in inference mode",
            if self.eval_events.is_empty() {
                Vec::new()
            } else {
                self.eval_no_grad_loops.clone()
            },
        );
        push(
            "unscale-before-clip",
            "AMP with `unscale_` before clipping",
            "gradients are clipped at their true scale",
            if self.clip.is_empty() {
                Vec::new()
            } else {
                self.unscale.clone()
            },
        );
        push(
            "weights-only",
            "`torch.load(..., weights_only=True)`",
            "loading a checkpoint cannot run code",
            self.uses_of(&["torch.load"])
                .into_iter()
                .filter(|(_, u)| u.kwarg("weights_only").is_some_and(|v| v.is_on()))
                .map(|(e, _)| e.clone())
                .collect(),
        );
        push(
            "seeds",
            "Seeds set",
            "runs can be repeated",
            self.ev_of(&[
                "torch.manual_seed",
                "torch.cuda.manual_seed_all",
                "numpy.random.seed",
                "random.seed",
                "pytorch_lightning.seed_everything",
                "lightning.seed_everything",
                "lightning.pytorch.seed_everything",
                "transformers.set_seed",
            ]),
        );
        push(
            "set-epoch",
            "`DistributedSampler.set_epoch` called",
            "each epoch gets a new shuffle on every rank",
            self.uses
                .iter()
                .filter(|(_, u)| u.name.as_ref() == ".set_epoch")
                .map(|(e, _)| e.clone())
                .collect(),
        );
        let pinned: Vec<Evidence> = self
            .loaders
            .iter()
            .filter(|(_, u)| u.kwarg("pin_memory").is_some_and(|v| v.is_on()))
            .map(|(e, _)| e.clone())
            .collect();
        let non_blocking: Vec<Evidence> = self
            .uses
            .iter()
            .filter(|(_, u)| {
                u.name.as_ref() == ".to" && u.kwarg("non_blocking").is_some_and(|v| v.is_on())
            })
            .map(|(e, _)| e.clone())
            .collect();
        push(
            "pin-memory-non-blocking",
            "`pin_memory` + `non_blocking` transfers",
            "host-to-GPU copies overlap with compute",
            if non_blocking.is_empty() {
                Vec::new()
            } else {
                pinned.into_iter().chain(non_blocking).collect()
            },
        );
        push(
            "state-dict-checkpoints",
            "Checkpoints with model and optimizer state",
            "a resumed run continues where it stopped",
            self.saves
                .iter()
                .filter(|s| {
                    s.whole.is_none()
                        && s.roles.contains(&StateRole::Optimizer)
                        && s.roles.contains(&StateRole::Module)
                })
                .map(|s| s.at.clone())
                .collect(),
        );
        push(
            "compile",
            "`torch.compile` used",
            "the model is compiled for faster steps",
            self.ev_of(&["torch.compile"]),
        );
        out
    }

    /// The few tests most worth writing: one per model family (top-level models, one per
    /// shared base class), one per training loop (at most two), one for evaluation.
    pub(crate) fn testing(&self) -> Vec<TestRecommendation> {
        let mut out = Vec::new();
        let roots = self.roots();
        if roots.len() > 3 {
            // A model zoo: one parametrised test over every top-level model.
            let mut names: Vec<String> = Vec::new();
            for m in &roots {
                if !names.contains(&m.name) {
                    names.push(m.name.clone());
                }
            }
            let with_modes = roots.iter().any(|m| m.mode_layer.is_some());
            let mut tests = vec![
                format!("one test parametrised over the {} top-level models: each, built as the code builds it, returns the expected output shape on a batch of 2, and `loss.backward()` gives every parameter a gradient", names.len()),
                "`state_dict()` saved and loaded into a fresh instance gives identical outputs".to_string(),
            ];
            if with_modes {
                tests.push("in `.eval()` two calls on the same input give identical outputs (dropout / batch norm in inference mode)".to_string());
            }
            out.push(TestRecommendation {
                kind: "model",
                target: "every top-level model".to_string(),
                location: roots[0].at.clone(),
                covers: names,
                tests,
            });
        }
        for m in roots.iter().filter(|_| roots.len() <= 3) {
            let args = if m.init_params.is_empty() {
                String::new()
            } else {
                m.init_params
                    .iter()
                    .map(|p| format!("{p}=..."))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let mut tests = vec![
                format!("`{}({args})` on a batch of 2 returns the expected output shape, and `loss.backward()` gives every parameter a gradient", m.name),
                "`state_dict()` saved and loaded into a fresh instance gives identical outputs".to_string(),
            ];
            if let Some(layer) = m.mode_layer {
                tests.push(format!("in `.eval()` two calls on the same input give identical outputs (it has {layer} layers)"));
            }
            out.push(TestRecommendation {
                kind: "model",
                target: m.name.clone(),
                location: m.at.clone(),
                covers: Vec::new(),
                tests,
            });
        }
        for t in self
            .training
            .iter()
            .filter(|t| !t.name.contains(' '))
            .take(2)
        {
            out.push(TestRecommendation {
                kind: "training-loop",
                target: t.name.clone(),
                location: t.location.clone(),
                covers: Vec::new(),
                tests: vec![
                    "a few steps on one small batch drive the loss close to zero (overfit one batch)".to_string(),
                    "after one step every trainable parameter changed and no gradient is left over from the previous step".to_string(),
                ],
            });
        }
        if let Some(e) = self.evaluation.first() {
            out.push(TestRecommendation {
                kind: "evaluation",
                target: e.name.clone(),
                location: e.location.clone(),
                covers: Vec::new(),
                tests: vec![
                    "leaves the model's parameters and `training` flag as they were, and builds no autograd graph".to_string(),
                ],
            });
        }
        out
    }
}

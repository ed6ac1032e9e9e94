//! The checker: one pass over the AST that keeps the context facts rules need and dispatches
//! each node to the enabled rules.
use crate::fix::RawFix;
use crate::registry::{all_rules, CallHook, EndHook, ExprHook, ExprKinds, Hooks, Rule, StmtHook};
use crate::settings::{LintSettings, Version};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, CmpOp, ExceptHandler, Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use rustc_hash::FxHashMap;
use torchvet_python::SourceFile;
use torchvet_semantic::kinds::{Kind, KindContext, KindTable};
use torchvet_semantic::project::ProjectFile;
use torchvet_semantic::{helpers, KeptScopes, ModuleClasses, Scope, ScopeKind, Scopes};

/// A finding before it is placed on rows and columns.
#[derive(Debug, Clone)]
pub struct RawDiagnostic {
    /// Index of the rule in the registry.
    pub rule: usize,
    /// Where.
    pub range: TextRange,
    /// What.
    pub message: String,
    /// Fix, if any.
    pub fix: Option<RawFix>,
    /// Related locations.
    pub related: Vec<(TextRange, String)>,
    /// Related locations in other files of the project.
    pub remote: Vec<torchvet_diagnostics::Related>,
    /// This finding's severity when it differs from the rule's (e.g. a `torch.load` of a file
    /// the project wrote itself is a warning, of a downloaded one critical).
    pub severity: Option<torchvet_diagnostics::Severity>,
}

impl RawDiagnostic {
    /// Give this finding its own severity (instead of the rule's).
    pub fn set_severity(&mut self, severity: torchvet_diagnostics::Severity) -> &mut Self {
        self.severity = Some(severity);
        self
    }

    /// Attach a fix.
    pub fn set_fix(&mut self, fix: RawFix) -> &mut Self {
        self.fix = Some(fix);
        self
    }

    /// Add a secondary location.
    pub fn add_related(&mut self, range: TextRange, message: impl Into<String>) -> &mut Self {
        self.related.push((range, message.into()));
        self
    }

    /// Add a secondary location in another file of the project.
    pub fn add_remote(
        &mut self,
        project: &ProjectFile,
        file: torchvet_semantic::project::FileId,
        range: TextRange,
        message: impl Into<String>,
    ) -> &mut Self {
        let summary = project.model.file(file);
        let (row, column) = summary.row_col(range.start());
        let (end_row, end_column) = summary.row_col(range.end());
        self.remote.push(torchvet_diagnostics::Related {
            message: message.into(),
            location: torchvet_diagnostics::Location { row, column },
            end_location: torchvet_diagnostics::Location {
                row: end_row,
                column: end_column,
            },
            cell: None,
            filename: Some(display_path(&summary.path)),
        });
        self
    }

    /// [`RawDiagnostic::add_related`] when the location is known.
    pub fn add_related_opt(
        &mut self,
        range: Option<TextRange>,
        message: impl Into<String>,
    ) -> &mut Self {
        match range {
            Some(r) => self.add_related(r, message),
            None => self,
        }
    }
}

/// Grad-mode and precision regions in effect.
#[derive(Clone, Copy, Debug, Default)]
pub struct Regions {
    /// Inside `torch.no_grad()` (with or decorator).
    pub no_grad: u32,
    /// Inside `torch.inference_mode()`.
    pub inference_mode: u32,
    /// Inside `torch.enable_grad()`.
    pub enable_grad: u32,
    /// Inside an autocast region.
    pub autocast: u32,
}

/// One function (or the module) being visited.
#[derive(Debug)]
pub struct Frame<'a> {
    /// The function, `None` for the module frame.
    pub function: Option<&'a ast::StmtFunctionDef>,
    /// The class the function is directly defined in, with whether it is an nn.Module / Dataset.
    pub method_of: Option<ClassInfo<'a>>,
    /// `for`/`while` nesting inside this frame.
    pub loop_depth: u32,
    /// The loops, innermost last.
    pub loops: Vec<&'a Stmt>,
    /// Regions in effect in this frame.
    pub regions: Regions,
    /// Value kinds of this frame's names, computed on first use.
    kinds: Option<std::rc::Rc<KindTable>>,
}

/// A class being visited.
#[derive(Debug, Clone, Copy)]
pub struct ClassInfo<'a> {
    /// Its definition.
    pub def: &'a ast::StmtClassDef,
    /// Derives from nn.Module (directly or through a class of this file).
    pub is_module: bool,
    /// Derives from Dataset.
    pub is_dataset: bool,
}

/// Facts about the whole file. The calls by qualified name are gathered during the pass (a
/// name resolves in the scope of its call), for rules' `end` hooks; the method calls by name
/// need no scope and are the whole file's from the start (a walk of the module, made the
/// first time a rule asks), so a `call` or `stmt` hook sees the `model.train()` below it too.
#[derive(Debug)]
pub struct FileFacts<'a> {
    /// Calls by resolved qualified name.
    pub calls: FxHashMap<String, Vec<&'a ExprCall>>,
    module: &'a ast::ModModule,
    /// Every method call (`x.name(...)`) of the file, by method name, in source order.
    method_calls: std::cell::OnceCell<FxHashMap<&'a str, Vec<&'a ExprCall>>>,
}

impl<'a> FileFacts<'a> {
    fn of(module: &'a ast::ModModule) -> Self {
        FileFacts {
            calls: FxHashMap::default(),
            module,
            method_calls: std::cell::OnceCell::new(),
        }
    }

    /// Calls of a qualified name.
    pub fn calls_of(&self, q: &str) -> &[&'a ExprCall] {
        self.calls.get(q).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Every method call (`x.name(...)`) of the file, by method name, in source order.
    pub fn method_calls(&self) -> &FxHashMap<&'a str, Vec<&'a ExprCall>> {
        self.method_calls.get_or_init(|| {
            struct Calls<'a>(FxHashMap<&'a str, Vec<&'a ExprCall>>);
            impl<'a> Visitor<'a> for Calls<'a> {
                fn visit_expr(&mut self, expr: &'a Expr) {
                    if let Expr::Call(call) = expr {
                        if let Expr::Attribute(a) = &*call.func {
                            self.0.entry(a.attr.as_str()).or_default().push(call);
                        }
                    }
                    visitor::walk_expr(self, expr);
                }
            }
            let mut v = Calls(FxHashMap::default());
            v.visit_body(&self.module.body);
            v.0
        })
    }

    /// Calls of a method name, anywhere in the file.
    pub fn method_calls_of(&self, name: &str) -> &[&'a ExprCall] {
        self.method_calls()
            .get(name)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Any call whose qualified name satisfies `pred`.
    pub fn any_call(&self, pred: impl Fn(&str) -> bool) -> bool {
        self.calls.keys().any(|k| pred(k))
    }
}

/// Enabled hooks, built once per settings.
#[derive(Default)]
pub(crate) struct Dispatch {
    stmt: Vec<(usize, StmtHook)>,
    call: Vec<(usize, CallHook)>,
    /// The `expr` hooks by [`ExprKinds::bucket`] of the expression.
    expr: [Vec<(usize, ExprHook)>; ExprKinds::BUCKETS],
    end: Vec<(usize, EndHook)>,
}

impl Dispatch {
    pub(crate) fn new(settings: &LintSettings) -> Self {
        let mut d = Dispatch::default();
        for (i, rule) in all_rules().iter().enumerate() {
            if !settings.is_enabled(i) {
                continue;
            }
            let Hooks {
                stmt,
                call,
                expr,
                expr_on,
                end,
            } = rule.hooks;
            if let Some(f) = stmt {
                d.stmt.push((i, f));
            }
            if let Some(f) = call {
                d.call.push((i, f));
            }
            if let Some(f) = expr {
                let kinds = expr_on.unwrap_or(ExprKinds::ALL);
                for (b, hooks) in d.expr.iter_mut().enumerate() {
                    if kinds.has_bucket(b) {
                        hooks.push((i, f));
                    }
                }
            }
            if let Some(f) = end {
                d.end.push((i, f));
            }
        }
        d
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.stmt.is_empty()
            && self.call.is_empty()
            && self.expr.iter().all(Vec::is_empty)
            && self.end.is_empty()
    }
}

/// The state of the one pass.
pub struct Checker<'a> {
    /// The file.
    pub source: &'a SourceFile,
    /// Settings of the run.
    pub settings: &'a LintSettings,
    /// Name bindings in scope.
    pub scopes: Scopes,
    /// Module / Dataset classes of the file.
    pub classes: ModuleClasses,
    /// Whole-file facts (complete only in `end` hooks).
    pub facts: FileFacts<'a>,
    frames: Vec<Frame<'a>>,
    class_stack: Vec<ClassInfo<'a>>,
    stmt_stack: Vec<&'a Stmt>,
    expr_stack: Vec<&'a Expr>,
    main_guard: u32,
    version_guard: u32,
    /// Depth of type annotations being visited (parameters, returns, annotated assignments).
    annotation_depth: u32,
    class_attrs: FxHashMap<ruff_text_size::TextSize, std::rc::Rc<KindTable>>,
    flow: FlowState<'a>,
    rule: usize,
    module: &'a ast::ModModule,
    dispatch: &'a Dispatch,
    diagnostics: Vec<RawDiagnostic>,
    taint: TaintCache,
    /// Answers of [`Checker::mentions`], per word.
    mentions: std::cell::RefCell<FxHashMap<(usize, usize), bool>>,
    /// Answers of [`Checker::mentions_attribute_of`], per name.
    mentioned_objects: std::cell::RefCell<FxHashMap<Box<str>, bool>>,
    /// Answer of [`Checker::may_see_probabilities`] (asked at every call by the loss-input
    /// rules).
    sees_probabilities: std::cell::OnceCell<bool>,
    /// Answer of [`Checker::flow_relevant`] (asked at every statement by the flow rules).
    flow_relevant: std::cell::OnceCell<bool>,
    /// A model of this file alone, for [`Checker::project_or_file`] when the run built none.
    single_file_model: std::cell::OnceCell<Option<ProjectFile>>,
    /// The file's `torch.save` calls (see [`Checker::file_saves`]).
    saves: std::cell::OnceCell<std::rc::Rc<Vec<torchvet_semantic::saves::SaveSite>>>,
    /// The scopes of functions and classes phase 1 collected for this tree, taken as each
    /// definition is entered.
    kept: KeptScopes,
    /// The memo of the train/eval and grad mode queries ([`torchvet_semantic::modes`]).
    modes: torchvet_semantic::modes::ModeCache,
}

fn grad_region(q: &str) -> Option<fn(&mut Regions) -> &mut u32> {
    Some(match q {
        "torch.no_grad" | "torch.autograd.no_grad" | "torch.autograd.grad_mode.no_grad" => {
            |r| &mut r.no_grad
        }
        "torch.inference_mode"
        | "torch.autograd.inference_mode"
        | "torch.autograd.grad_mode.inference_mode" => |r| &mut r.inference_mode,
        "torch.enable_grad"
        | "torch.autograd.enable_grad"
        | "torch.autograd.grad_mode.enable_grad" => |r| &mut r.enable_grad,
        "torch.autocast"
        | "torch.amp.autocast"
        | "torch.cuda.amp.autocast"
        | "torch.cpu.amp.autocast"
        | "torch.amp.autocast_mode.autocast" => |r| &mut r.autocast,
        _ => return None,
    })
}

impl<'a> Checker<'a> {
    pub(crate) fn new(
        source: &'a SourceFile,
        settings: &'a LintSettings,
        dispatch: &'a Dispatch,
        module: &'a ast::ModModule,
        project: Option<ProjectFile>,
        kept: Option<KeptScopes>,
    ) -> Self {
        let mut scopes = Scopes::default();
        let star = project
            .as_ref()
            .filter(|p| !p.summary().star_imports.is_empty());
        let (scope, kept) = match (star, kept) {
            // Without star-imported names to bind, the module scope is the file's own
            // bindings: the one phase 1 collected.
            (None, Some(mut k)) if k.module().is_some() => {
                let scope = k.take_module().unwrap_or_else(|| {
                    Scope::collect(ScopeKind::Module, &module.body, None, &scopes)
                });
                (scope, k)
            }
            (star, kept) => {
                let mut scope = Scope::collect(ScopeKind::Module, &module.body, None, &scopes);
                if let Some(p) = star {
                    for (name, q) in p.star_imported_torch_names() {
                        scope.import_if_unbound(&name, &q);
                    }
                }
                // Phase 1's scopes of this tree hold when its module scope is this one (then
                // every scope around a definition is the same too).
                let kept = kept
                    .filter(|k| k.module() == Some(&scope))
                    .unwrap_or_default();
                (scope, kept)
            }
        };
        scopes.push(scope);
        let classes = ModuleClasses::compute_in(&module.body, &scopes, project);
        Self {
            source,
            settings,
            scopes,
            classes,
            facts: FileFacts::of(module),
            frames: vec![Frame {
                function: None,
                method_of: None,
                loop_depth: 0,
                loops: Vec::new(),
                regions: Regions::default(),
                kinds: None,
            }],
            class_attrs: FxHashMap::default(),
            flow: FlowState::default(),
            class_stack: Vec::new(),
            stmt_stack: Vec::new(),
            expr_stack: Vec::new(),
            main_guard: 0,
            version_guard: 0,
            annotation_depth: 0,
            rule: 0,
            module,
            dispatch,
            diagnostics: Vec::new(),
            taint: TaintCache::default(),
            mentions: std::cell::RefCell::default(),
            mentioned_objects: std::cell::RefCell::default(),
            sees_probabilities: std::cell::OnceCell::new(),
            flow_relevant: std::cell::OnceCell::new(),
            single_file_model: std::cell::OnceCell::new(),
            saves: std::cell::OnceCell::new(),
            kept,
            modes: torchvet_semantic::modes::ModeCache::default(),
        }
    }

    pub(crate) fn run(mut self, module: &'a ast::ModModule) -> Vec<RawDiagnostic> {
        self.visit_body(&module.body);
        let dispatch = self.dispatch;
        for &(i, f) in &dispatch.end {
            self.rule = i;
            f(&mut self);
        }
        self.diagnostics
    }

    // ----- reporting -----

    /// Report a finding of the current rule.
    pub fn report(&mut self, range: TextRange, message: impl Into<String>) -> &mut RawDiagnostic {
        self.diagnostics.push(RawDiagnostic {
            rule: self.rule,
            range,
            message: message.into(),
            fix: None,
            related: Vec::new(),
            remote: Vec::new(),
            severity: None,
        });
        let last = self.diagnostics.len() - 1;
        &mut self.diagnostics[last]
    }

    /// The module being checked (for whole-file look-ups in `end` hooks and module-level code).
    pub fn module(&self) -> &'a ast::ModModule {
        self.module
    }

    /// May values in this file carry probabilities (softmax / sigmoid outputs): the file says
    /// so, or the project model sees them arrive from another file. The cheap gate of the
    /// loss-input rules.
    pub fn may_see_probabilities(&self) -> bool {
        // The model's answer first: it needs no search of the text.
        *self.sees_probabilities.get_or_init(|| {
            self.project()
                .is_some_and(|p| p.model.sees_probabilities(p.file))
                || self.mentions("oftmax")
                || self.mentions("igmoid")
        })
    }

    /// Is this file unit-test code, by path and pytest / unittest conventions (under `tests/`,
    /// `conftest.py`, a `test_*.py` / `*_test.py` module with pytest-collected tests, or
    /// importing pytest / unittest; see [`torchvet_semantic::project::is_test_module`])?
    /// Tests run models in every mode on purpose. A function's name never decides it: `def
    /// test(model, loader)` in a training script is its evaluation function.
    pub fn is_test_file(&self) -> bool {
        match self.project() {
            Some(p) => p.is_test_code(),
            None => {
                torchvet_semantic::project::is_test_module(&self.source.path, self.module)
                    || self.mentions("import pytest")
                    || self.mentions("import unittest")
            }
        }
    }

    /// The file's view of the project model, when the run built one.
    pub fn project(&self) -> Option<&ProjectFile> {
        self.classes.project()
    }

    /// The file's view of the project model; when the run built none (one file linted alone,
    /// `--no-project`), a model of this file alone, built on first use. The rules of
    /// whole-project facts (checkpoints, schedulers, loaders) ask this: a file checked alone is
    /// a project of one file.
    pub fn project_or_file(&self) -> Option<&ProjectFile> {
        if let Some(p) = self.project() {
            return Some(p);
        }
        self.single_file_model
            .get_or_init(|| {
                let path = std::path::absolute(&self.source.path)
                    .unwrap_or_else(|_| self.source.path.clone());
                let summary =
                    torchvet_semantic::project::summarise_source(&path, self.source, self.module);
                let model = std::sync::Arc::new(torchvet_semantic::project::ProjectModel::build(
                    vec![summary],
                    Vec::new(),
                    &|_| None,
                ));
                Some(model.view(0))
            })
            .as_ref()
    }

    /// The rule currently running.
    pub fn rule(&self) -> &'static Rule {
        all_rules()[self.rule]
    }

    /// The file's `torch.save` calls, what each writes and where (computed once per file, on
    /// first use): the loads of the same file are matched against them.
    pub fn file_saves(&self) -> std::rc::Rc<Vec<torchvet_semantic::saves::SaveSite>> {
        self.saves
            .get_or_init(|| {
                std::rc::Rc::new(torchvet_semantic::saves::file_saves(
                    &self.module.body,
                    &self.source.text,
                    &self.scopes,
                    &self.classes,
                ))
            })
            .clone()
    }

    /// Does the file's text contain `word` anywhere? Cached per word: rules use it as a cheap
    /// exit before costlier analyses (`checker.mentions("CrossEntropyLoss")`).
    pub fn mentions(&self, word: &'static str) -> bool {
        // Keyed by the literal's address: no hashing or comparing of the text per query (a
        // word spelled at two places is searched twice at most).
        let key = (word.as_ptr() as usize, word.len());
        if let Some(&b) = self.mentions.borrow().get(&key) {
            return b;
        }
        let b = memchr::memmem::find(self.source.text.as_bytes(), word.as_bytes()).is_some();
        self.mentions.borrow_mut().insert(key, b);
        b
    }

    /// Does the file's text contain `name.` anywhere (an attribute or method of it)? Cached
    /// per name: asked at calls of names, where a scan of the file per call is quadratic in
    /// the file's size.
    pub fn mentions_attribute_of(&self, name: &str) -> bool {
        if let Some(&b) = self.mentioned_objects.borrow().get(name) {
            return b;
        }
        let text = self.source.text.as_bytes();
        let b = memchr::memmem::find_iter(text, name.as_bytes())
            .any(|at| text.get(at + name.len()) == Some(&b'.'));
        self.mentioned_objects.borrow_mut().insert(name.into(), b);
        b
    }

    /// Source text of a range.
    pub fn text(&self, range: TextRange) -> &'a str {
        self.source
            .text
            .get(range.start().to_usize()..range.end().to_usize())
            .unwrap_or("")
    }

    // ----- names -----

    /// Resolve an expression to the qualified name it stands for through imports.
    pub fn resolve(&self, expr: &Expr) -> Option<String> {
        self.scopes.resolve(expr)
    }

    /// What a loop over `iter` draws from: through `enumerate` / `tqdm` / `iter` wrappers,
    /// also held in a local first (`pbar = tqdm(enumerate(loader))`; `for i, b in pbar`),
    /// see [`torchvet_semantic::iterables::loop_source`].
    pub fn loop_source(&self, iter: &'a Expr) -> &'a Expr {
        let body: &'a [Stmt] = self.scope_body();
        torchvet_semantic::iterables::loop_source(iter, body, &|e| self.scopes.resolve(e))
    }

    /// Which loop wrapper (`enumerate`, `tqdm`, `iter`, ...) this call is, if any: see
    /// [`torchvet_semantic::iterables::loop_wrapper`].
    pub fn loop_wrapper(&self, call: &ExprCall) -> Option<&'static str> {
        torchvet_semantic::iterables::loop_wrapper(call, &|e| self.scopes.resolve(e))
    }

    /// Does `expr` name a loss class: a torch or library loss (`nn.CrossEntropyLoss`,
    /// `monai.losses.DiceLoss`), or a project loss class defined in any file (see
    /// [`torchvet_semantic::project::ProjectModel::is_loss_class`])?
    pub fn is_loss_class(&self, expr: &Expr) -> bool {
        use torchvet_semantic::project::Entity;
        let q = self.resolve(expr);
        if let Some(q) = &q {
            if torchvet_semantic::is_known_loss_class(q) {
                return true;
            }
        }
        // Project classes: a class name (the model is built only for one).
        let last = match expr {
            Expr::Name(n) => n.id.as_str(),
            Expr::Attribute(a) => a.attr.as_str(),
            _ => return false,
        };
        if !last.starts_with(|c: char| c.is_ascii_uppercase()) {
            return false;
        }
        let Some(p) = self.project_or_file() else {
            return false;
        };
        let entity = match (expr, q) {
            (Expr::Name(n), _) => p.local(n.id.as_str()),
            (_, Some(q)) => p.entity(&q),
            _ => None,
        };
        matches!(entity, Some(Entity::Class(c)) if p.model.is_loss_class(c))
    }

    /// Does `expr` resolve to one of these qualified names?
    pub fn resolves_to(&self, expr: &Expr, names: &[&str]) -> bool {
        self.resolve(expr)
            .is_some_and(|q| names.contains(&q.as_str()))
    }

    /// Is a name bound by an import to `qualified`?
    pub fn name_is(&self, name: &str, qualified: &str) -> bool {
        self.scopes.name_is(name, qualified)
    }

    /// The name under which `module` (e.g. `torch`) is bound at module level, if it is.
    pub fn module_alias(&self, module: &str) -> Option<String> {
        let mut best: Option<String> = None;
        for stmt in &self.module.body {
            if let Stmt::Import(imp) = stmt {
                for alias in &imp.names {
                    let bound = match &alias.asname {
                        Some(a) if alias.name.as_str() == module => Some(a.to_string()),
                        None if alias.name.as_str() == module
                            || alias.name.as_str().starts_with(&format!("{module}.")) =>
                        {
                            Some(module.to_string())
                        }
                        _ => None,
                    };
                    if let Some(b) = bound {
                        // Prefer the plain name when both exist.
                        if best.as_deref() != Some(module) {
                            best = Some(b);
                        }
                    }
                }
            }
        }
        best.filter(|b| self.scopes.lookup(b).as_deref() == Some(module))
    }

    /// How to write `module` in a fix: the existing module-level alias (`th` for
    /// `import torch as th`), or `module` plus an edit that adds `import module` after the
    /// docstring, `__future__` imports and the leading import block.
    pub fn import_module(&self, module: &str) -> (String, Option<crate::fix::RawEdit>) {
        if let Some(alias) = self.module_alias(module) {
            return (alias, None);
        }
        (
            module.to_string(),
            Some(self.add_import_edit(&format!("import {module}"))),
        )
    }

    /// An edit inserting `line` (an import statement) at the right place of the module.
    pub fn add_import_edit(&self, line: &str) -> crate::fix::RawEdit {
        let mut after: Option<TextRange> = None;
        for (i, stmt) in self.module.body.iter().enumerate() {
            let is_doc = i == 0
                && matches!(stmt, Stmt::Expr(e) if matches!(&*e.value, Expr::StringLiteral(_)));
            match stmt {
                Stmt::Import(_) | Stmt::ImportFrom(_) => after = Some(stmt.range()),
                _ if is_doc => after = Some(stmt.range()),
                _ => break,
            }
        }
        let newline = if self.source.text.contains("\r\n") {
            "\r\n"
        } else {
            "\n"
        };
        match after {
            Some(r) => {
                let line_idx = self.source.line_index.line_of(r.end());
                let next = self.source.line_index.line_start(line_idx + 1);
                if next <= self.source.text.len() {
                    crate::fix::RawEdit::insert(
                        ruff_text_size::TextSize::new(next as u32),
                        format!("{line}{newline}"),
                    )
                } else {
                    crate::fix::RawEdit::insert(
                        ruff_text_size::TextSize::new(self.source.text.len() as u32),
                        format!("{newline}{line}{newline}"),
                    )
                }
            }
            None => crate::fix::RawEdit::insert(
                ruff_text_size::TextSize::new(0),
                format!("{line}{newline}"),
            ),
        }
    }

    // ----- value kinds -----

    fn frame_kinds(&mut self, index: usize) -> std::rc::Rc<KindTable> {
        if let Some(k) = &self.frames[index].kinds {
            return k.clone();
        }
        let table = match self.frames[index].function {
            None => KindTable::infer_module(&self.module.body, &self.scopes, &self.classes),
            Some(f) => {
                let outer = self.outer_kinds(index);
                KindTable::infer_function(f, &self.scopes, &self.classes, Some(&outer))
            }
        };
        let rc = std::rc::Rc::new(table);
        self.frames[index].kinds = Some(rc.clone());
        rc
    }

    /// The names visible from frame `index` that it does not bind: the module's, and for a
    /// function nested in another (a closure in `main()`), the enclosing function's over them.
    fn outer_kinds(&mut self, index: usize) -> std::rc::Rc<KindTable> {
        let module = self.frame_kinds(0);
        if index >= 2
            && self.frames[index - 1].function.is_some()
            && self.frames[index].method_of.is_none()
        {
            let enclosing = self.frame_kinds(index - 1);
            return std::rc::Rc::new(KindTable::chained(&enclosing, Some(&module)));
        }
        module
    }

    fn class_kinds(&mut self, class: &'a ast::StmtClassDef) -> std::rc::Rc<KindTable> {
        if let Some(k) = self.class_attrs.get(&class.range.start()) {
            return k.clone();
        }
        let t = std::rc::Rc::new(KindTable::infer_self_attributes(
            class,
            &self.scopes,
            &self.classes,
        ));
        self.class_attrs.insert(class.range.start(), t.clone());
        t
    }

    /// What an expression holds (Module, Tensor, Optimizer...), from the assignments of the
    /// current function (and the module, and `self.<attr>` in the class). `Unknown` when unsure.
    pub fn kind_of(&mut self, expr: &Expr) -> Kind {
        let last = self.frames.len() - 1;
        let local = self.frame_kinds(last);
        let outer = if last == 0 {
            None
        } else {
            Some(self.outer_kinds(last))
        };
        let attrs = self.frames[last].method_of.map(|c| self.class_kinds(c.def));
        KindContext {
            local: &local,
            outer: outer.as_deref(),
            attrs: attrs.as_deref(),
            scopes: &self.scopes,
            classes: &self.classes,
        }
        .kind(expr)
    }

    /// The kind of a name or `self.<attr>`, from this file ([`Checker::kind_of`]) or, when
    /// the file alone does not tell, from the project model: a parameter's kind from every
    /// call site, a `self.<attr>` from what the class assigns to it (through the methods and
    /// functions that build it: `self.optimizer = self.create_optimizer()`).
    pub fn value_kind(&mut self, expr: &Expr) -> Kind {
        let k = self.kind_of(expr);
        if k != Kind::Unknown {
            return k;
        }
        if let Some(r) = self.value_resolved(expr) {
            return r.kind;
        }
        self.attribute_resolved(expr).map_or(k, |r| r.kind)
    }

    /// `<x>.<attr>` where `x` is an instance of a project class as far as the project model
    /// or this file's dataflow can tell ([`Checker::project_class_of`]: `vae = VAE(16)` at
    /// module level): what that class assigns to `self.<attr>`.
    fn attribute_resolved(&mut self, expr: &Expr) -> Option<torchvet_semantic::project::Resolved> {
        let Expr::Attribute(a) = expr else {
            return None;
        };
        // Outside a project there is no class to ask (and the object's class is not looked for).
        self.project()?;
        let c = self.project_class_of(&a.value)?;
        Some(self.project()?.model.class_attr(c, a.attr.as_str(), 0))
    }

    /// What the project model knows of a name or an attribute: for a parameter of the
    /// enclosing function, what every call site passes (joined); for `self.<attr>`, what the
    /// class assigns to it; for `<x>.<attr>` where the model resolves `x` to an instance of a
    /// project class, what that class assigns. `None` outside a project, for other
    /// expressions, and for names that are not parameters.
    pub fn value_resolved(&self, expr: &Expr) -> Option<torchvet_semantic::project::Resolved> {
        let p = self.project()?;
        match expr {
            Expr::Name(n) => {
                let name = n.id.as_str();
                if let Some((id, i)) = self.param_of_function(name) {
                    return Some(p.model.param(id, i));
                }
                // A local bound to an object only the model resolves (`enc` of
                // `enc, dec = load_model(path)`, `model = MODELS[args.arch]()`), in the function
                // that binds it or at module level.
                let module = torchvet_semantic::project::FuncId {
                    file: p.file,
                    index: 0,
                };
                let scope = match self.function() {
                    Some(f) if self.scopes.current().is_some_and(|s| s.binds_locally(name)) => {
                        p.function_at(f.range.start())?
                    }
                    Some(_) if !self.scopes.module_binds(name) => return None,
                    _ => module,
                };
                // Module-level code of a notebook that rebinds the name in several cells:
                // the binding above this use.
                if self.function().is_none() {
                    if let Some(r) = p
                        .model
                        .global_value_at(p.file, name, n.range.start().to_u32())
                    {
                        return Some(r);
                    }
                }
                p.model.local_value(scope, name)
            }
            Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => {
                let c = self.method_class_id()?;
                Some(p.model.class_attr(c, a.attr.as_str(), 0))
            }
            // `vae.decoder`, `self.model.backbone`: the attribute of an object the model
            // resolves to a project class.
            Expr::Attribute(a) => {
                let object = self.value_resolved(&a.value)?;
                p.model.attr_of(&object, a.attr.as_str())
            }
            _ => None,
        }
    }

    /// The project class of the object a name or `self.<attr>` holds: as the project model
    /// resolves it ([`Checker::value_resolved`]: parameters, computed values, attributes),
    /// else as the file's dataflow builds it (`model = Pix2PixModel(opt)`, the class spelled
    /// as the file imports or defines it).
    pub fn project_class_of(&mut self, expr: &Expr) -> Option<torchvet_semantic::project::ClassId> {
        use torchvet_semantic::project::{ClassRef, Entity};
        if let Some(ClassRef::Project(c)) = self.value_resolved(expr).and_then(|r| r.class) {
            return Some(c);
        }
        if let Some(ClassRef::Project(c)) = self.attribute_resolved(expr).and_then(|r| r.class) {
            return Some(c);
        }
        if let Some(name) = self.taint_of(expr).class().map(str::to_string) {
            let p = self.project_or_file()?;
            if let Some(Entity::Class(c)) = p.entity(&name).or_else(|| p.local(&name)) {
                return Some(c);
            }
        }
        // Built by the one assignment of the name, through an imported module
        // (`encoder = model.VGG19Encoder()` after `from scripts import model`).
        let value = self.value_bound_once(expr)?;
        let Expr::Call(call) = torchvet_semantic::dataflow::module_chain(value).0 else {
            return None;
        };
        torchvet_semantic::modes::project_class_built(self, call)
    }

    /// The innermost function (in the project model) and the index of its parameter `name`.
    pub fn param_of_function(
        &self,
        name: &str,
    ) -> Option<(torchvet_semantic::project::FuncId, usize)> {
        let f = self.function()?;
        let i = f
            .parameters
            .iter()
            .position(|prm| prm.name().as_str() == name)?;
        Some((self.project()?.function_at(f.range.start())?, i))
    }

    /// The class (in the project model) of the method being checked.
    pub fn method_class_id(&self) -> Option<torchvet_semantic::project::ClassId> {
        let class = self.frame().method_of?;
        self.project()?.class_at(class.def.range.start())
    }

    /// Where the value whose kind [`Checker::kind_of`] reports for a name or `self.<attr>` was
    /// created (`opt = torch.optim.LBFGS(...)`): the assigned expression, when the kind is known.
    pub fn kind_origin(&mut self, expr: &Expr) -> Option<TextRange> {
        let last = self.frames.len() - 1;
        match expr {
            Expr::Name(n) => {
                let local = self.frame_kinds(last);
                if local.get(n.id.as_str()).is_some() {
                    return local.origin(n.id.as_str());
                }
                self.frame_kinds(0).origin(n.id.as_str())
            }
            Expr::Attribute(a) if torchvet_semantic::helpers::name_of(&a.value) == Some("self") => {
                let class = self.frames[last].method_of?;
                self.class_kinds(class.def).origin(a.attr.as_str())
            }
            _ => None,
        }
    }

    // ----- context -----

    /// The innermost frame (function or module).
    pub fn frame(&self) -> &Frame<'a> {
        self.frames
            .last()
            .expect("the module frame is never popped")
    }

    /// All frames, outermost first.
    pub fn frames(&self) -> &[Frame<'a>] {
        &self.frames
    }

    /// The assignments of `name` that may reach offset `at` ([`torchvet_semantic::reaching`]):
    /// in the current function when it binds `name`, otherwise at module level (a function
    /// reading a module-level name sees the module's assignments before its `def`). `None` in
    /// a class body, and when no assignment reaches `at`.
    pub fn reaching_defs(
        &self,
        name: &str,
        at: TextSize,
    ) -> Option<Vec<torchvet_semantic::reaching::Def<'a>>> {
        torchvet_semantic::reaching::reaching_in_frame(
            &self.scopes,
            self.function(),
            self.module(),
            name,
            at,
        )
    }

    /// The one binding of `name` that reaches `at`, for the style, distributed and
    /// data-loading rules' evidence: the innermost enclosing comprehension's `for` that binds
    /// it, else the frame's ([`torchvet_semantic::reaching::bindings_at`] in the function, its
    /// parameters bound on entry, or in the module), when exactly one binding reaches (no
    /// loop-carried ones). `None` when none or several do.
    pub fn binding_at(
        &self,
        name: &str,
        at: TextSize,
    ) -> Option<torchvet_semantic::reaching::Def<'a>> {
        use torchvet_semantic::reaching;
        if let Some(d) = reaching::comprehension_binding(&self.expr_stack, name, at) {
            return Some(d);
        }
        let mut defs = match self.function() {
            Some(f) => reaching::bindings_at(&f.body, Some(&f.parameters), name, at),
            None => reaching::bindings_at(&self.module().body, None, name, at),
        };
        if defs.len() == 1 {
            defs.pop()
        } else {
            None
        }
    }

    /// The function being visited, if any.
    pub fn function(&self) -> Option<&'a ast::StmtFunctionDef> {
        self.frame().function
    }

    /// Inside a method defined directly in an nn.Module subclass: that class.
    pub fn module_method(&self) -> Option<ClassInfo<'a>> {
        self.frame().method_of.filter(|c| c.is_module)
    }

    /// Inside `__init__` (or `forward`, ...) of an nn.Module subclass?
    pub fn in_module_method(&self, name: &str) -> bool {
        self.module_method().is_some() && self.function().is_some_and(|f| f.name.as_str() == name)
    }

    /// The class the current function is a method of (defined directly in its body).
    pub fn method_class(&self) -> Option<ClassInfo<'a>> {
        self.frame().method_of
    }

    /// The innermost class whose body (not a method) is being visited.
    pub fn class(&self) -> Option<ClassInfo<'a>> {
        self.class_stack.last().copied()
    }

    /// Inside a `for`/`while` loop of the current function (or module).
    pub fn in_loop(&self) -> bool {
        self.frame().loop_depth > 0
    }

    /// Inside a loop, or a comprehension, of the current function (cheap: the first test of
    /// anything about evaluation loops)?
    pub fn in_loop_or_comprehension(&self) -> bool {
        self.in_loop()
            || self.expr_stack.iter().any(|e| {
                matches!(
                    e,
                    Expr::ListComp(_) | Expr::SetComp(_) | Expr::DictComp(_) | Expr::Generator(_)
                )
            })
    }

    /// The statements of the function being visited, or the module body at module level.
    pub fn scope_body(&self) -> &'a [Stmt] {
        match self.function() {
            Some(f) => &f.body,
            None => &self.module().body,
        }
    }

    /// Regions in effect.
    pub fn regions(&self) -> Regions {
        self.frame().regions
    }

    /// Autograd disabled here (no_grad / inference_mode, not re-enabled)?
    pub fn in_no_grad(&self) -> bool {
        let r = self.regions();
        (r.no_grad > 0 || r.inference_mode > 0) && r.enable_grad == 0
    }

    /// Does the project model's summary of this function say autograd is off in its body (a
    /// grad-off decorator, including the file's own: see
    /// `torchvet_semantic::dataflow::grad_off_decorators`)?
    fn summary_says_no_grad(&self, f: &ast::StmtFunctionDef) -> bool {
        // Only a decorator turns a whole body's autograd off (and the lookup is linear).
        if f.decorator_list.is_empty() {
            return false;
        }
        self.project()
            .and_then(|p| {
                Some(
                    p.model
                        .function_summary(p.function_at(f.range.start())?)
                        .no_grad,
                )
            })
            .unwrap_or(false)
    }

    /// Is the function starting at `at` called in the project, and only with autograd off
    /// (every call site under `torch.no_grad()` / `inference_mode` or in a no-grad decorated
    /// caller)?
    pub fn called_only_without_grad(&self, at: TextSize) -> bool {
        let Some(p) = self.project() else {
            return false;
        };
        let Some(id) = p.function_at(at) else {
            return false;
        };
        let (sites, no_grad) = p.model.call_sites_no_grad(id);
        sites > 0 && sites == no_grad
    }

    /// Inside `if __name__ == "__main__":`?
    pub fn in_main_guard(&self) -> bool {
        self.main_guard > 0
    }

    /// Inside a torch-version check (or an ImportError/AttributeError compatibility shim)?
    pub fn in_version_guard(&self) -> bool {
        self.version_guard > 0
    }

    /// Under a test that probes one of these attributes (`if hasattr(ds, "train_data"):`,
    /// `x.a if hasattr(x, "a") else x.b`, also inside `not`/`and`/`or`): code written for
    /// both sides of an API change, like a version check but for one attribute.
    pub fn in_attribute_probe(&self, attrs: &[&str]) -> bool {
        fn probes(test: &Expr, attrs: &[&str]) -> bool {
            match test {
                Expr::Call(c) => {
                    helpers::name_of(&c.func) == Some("hasattr")
                        && c.arguments
                            .args
                            .get(1)
                            .and_then(helpers::str_value)
                            .is_some_and(|s| attrs.contains(&s))
                }
                Expr::UnaryOp(u) => probes(&u.operand, attrs),
                Expr::BoolOp(b) => b.values.iter().any(|v| probes(v, attrs)),
                _ => false,
            }
        }
        self.stmt_stack.iter().any(|s| match s {
            Stmt::If(i) => {
                probes(&i.test, attrs)
                    || i.elif_else_clauses
                        .iter()
                        .any(|c| c.test.as_ref().is_some_and(|t| probes(t, attrs)))
            }
            _ => false,
        }) || self
            .expr_stack
            .iter()
            .any(|e| matches!(e, Expr::If(i) if probes(&i.test, attrs)))
    }

    /// Is the target torch at least `v` (latest when unknown)? Deprecation rules use this: an
    /// API deprecated or removed in `v` is reported only when the target is `v` or later.
    pub fn torch_at_least(&self, major: u32, minor: u32) -> bool {
        self.settings
            .target_torch
            .is_none_or(|t| t >= Version::new(major, minor))
    }

    /// Does every torch the project declares it supports have `major.minor` (the lowest
    /// version any of its dependency files allows, wherever in the project they sit, is at
    /// least that)? `true` when no lower bound is declared: the target is then the latest
    /// torch. Fixes that write an API added in `major.minor` are safe only then: this (and
    /// [`Checker::declared_torchvision_min_at_least`]) is the one query for that.
    ///
    /// The torch the project's documentation says it runs on ("PyTorch >= 1.6" in the README,
    /// [`LintSettings::documented_min_torch`]) counts too, but only this way: it can make the
    /// answer `false`, never `true`.
    pub fn declared_min_at_least(&self, major: u32, minor: u32) -> bool {
        let v = Version::new(major, minor);
        self.settings.min_torch.is_none_or(|m| m >= v) && self.documented_min_allows(v)
    }

    /// A fix that writes an API added in torch `major.minor`: kept safe only when every torch
    /// the project declares or documents has it ([`Checker::declared_min_at_least`]); else
    /// offered as unsafe, saying why.
    pub fn fix_needs_torch(
        &self,
        fix: crate::fix::RawFix,
        major: u32,
        minor: u32,
    ) -> crate::fix::RawFix {
        let ok = self.declared_min_at_least(major, minor);
        unsafe_unless_declared(fix, ok, "torch", major, minor)
    }

    /// [`Checker::fix_needs_torch`] for an API added in torchvision `major.minor`
    /// ([`Checker::declared_torchvision_min_at_least`]).
    pub fn fix_needs_torchvision(
        &self,
        fix: crate::fix::RawFix,
        major: u32,
        minor: u32,
    ) -> crate::fix::RawFix {
        let ok = self.declared_torchvision_min_at_least(major, minor);
        unsafe_unless_declared(fix, ok, "torchvision", major, minor)
    }

    /// Does the torch the project's documentation mentions (if any) have `v`?
    fn documented_min_allows(&self, v: Version) -> bool {
        self.settings.documented_min_torch.is_none_or(|m| m >= v)
    }

    /// Is the target torchvision at least `0.minor` (latest when unknown)? The declared
    /// torchvision bounds it, and so does the target torch through the release pairing
    /// ([`crate::settings::torch_for_torchvision`]: torchvision 0.13 came with torch 1.12).
    pub fn torchvision_at_least(&self, major: u32, minor: u32) -> bool {
        let v = Version::new(major, minor);
        let torch = crate::settings::torch_for_torchvision(v);
        self.settings.target_torchvision.is_none_or(|t| t >= v)
            && self.torch_at_least(torch.major, torch.minor)
    }

    /// Does every torchvision the project allows have `major.minor`? Every declaration of the
    /// project counts (torchvision's own, and torch's through the release pairing); `true`
    /// when none bounds it from below. Fixes that write a torchvision API added in
    /// `major.minor` (`weights=`, 0.13) are safe only then.
    pub fn declared_torchvision_min_at_least(&self, major: u32, minor: u32) -> bool {
        let v = Version::new(major, minor);
        let torch = crate::settings::torch_for_torchvision(v);
        self.settings.min_torchvision.is_none_or(|m| m >= v)
            && self.declared_min_at_least(torch.major, torch.minor)
    }

    /// Does the project declare a lowest torch, and is it at least `major.minor`? Unlike
    /// [`Checker::declared_min_at_least`], an undeclared bound answers `false`: a fix that
    /// writes an API added in a recent release (`torch.amp.GradScaler`, 2.3) is safe only when
    /// the project says it never runs on an older torch.
    pub fn declared_min_known_at_least(&self, major: u32, minor: u32) -> bool {
        let v = Version::new(major, minor);
        self.settings.min_torch.is_some_and(|m| m >= v) && self.documented_min_allows(v)
    }

    /// Does the code at `range` (a function; `None`: the module-level statements of a script)
    /// look written for a torch older than
    /// 0.4, where `torch.no_grad` does not exist yet and `Variable(x, volatile=True)` turns
    /// autograd off? It reads `.data[0]` (how a pre-0.4 loss gave its number; an error on a
    /// 0-dim tensor since 0.5), and the project uses the `volatile` flag somewhere or this file
    /// imports `Variable` from `torch.autograd`; and the project declares no lowest torch of
    /// 0.4 or later. For wording and fix safety: no rule fires on it.
    pub fn written_for_old_torch(&self, range: Option<TextRange>) -> bool {
        if self.declared_min_known_at_least(0, 4) || !self.mentions(".data[0]") {
            return false;
        }
        let reads = |r: TextRange| reads_scalar_the_old_way(self.text(r));
        let here = match range {
            Some(r) => reads(r),
            // The script's own statements (its training loop), not those of the functions
            // and classes it defines.
            None => self.module().body.iter().any(|s| {
                !matches!(s, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) && reads(s.range())
            }),
        };
        if !here {
            return false;
        }
        let Some(p) = self.project_or_file() else {
            return false;
        };
        p.model.uses_volatile_flag()
            || p.model
                .file(p.file)
                .imports
                .iter()
                .any(|(_, q)| &**q == "torch.autograd.Variable")
    }

    /// Is the expression being visited part of a type annotation (of a parameter, a return or
    /// an annotated assignment)? Annotations name types; they do not call them.
    pub fn in_annotation(&self) -> bool {
        self.annotation_depth > 0
    }

    /// Does the value of `call` (or what is computed from it, through local names or
    /// `self.<attr>` of the class) reach the input of a call that may record a graph: a model,
    /// a `forward`, a project function, or leave the function (returned)? Torch functions
    /// pass the value on to their result; `.item()`, `.tolist()`, `.data`, indexing and
    /// comparisons only read it (see [`torchvet_semantic::consumers`]).
    pub fn reaches_graph_call(&self, call: &ExprCall) -> bool {
        self.output_reaches(call, &|| true)
    }

    /// [`Checker::reaches_graph_call`], where a value the function returns reaches a graph
    /// only when a caller may differentiate it: the project has calls of the function and
    /// the model ([`torchvet_semantic::project::ProjectModel::result_differentiated`]) finds
    /// none that differentiates the result. A char-RNN's `predict()` that returns the next
    /// character and the hidden state, fed back by `sample()`, needs no graph.
    pub fn output_needs_graph(&self, call: &ExprCall) -> bool {
        let returned = || {
            let (Some(f), Some(p)) = (self.function(), self.project_or_file()) else {
                return true;
            };
            p.function_at(f.range.start()).is_none_or(|id| {
                p.model.callers(id).is_empty() || p.model.result_differentiated(id)
            })
        };
        self.output_reaches(call, &returned)
    }

    fn output_reaches(&self, call: &ExprCall, return_consumes: &dyn Fn() -> bool) -> bool {
        let Some(stmt) = self.current_stmt() else {
            return true;
        };
        let body: &[Stmt] = self.scope_body();
        let class_body = self.frame().method_of.map(|c| &c.def.body[..]);
        // Tensor functions (torch's, einops' reshapes, torchvision's image grid) hand the value
        // on; serialisation and plotting only read it. None of them differentiates it.
        let passes_through = |func: &Expr| {
            use torchvet_semantic::consumers::CallUse;
            let Some(q) = self.resolve(func) else {
                return CallUse::Consumes;
            };
            if (q.starts_with("torch.") && !torchvet_semantic::is_module_base(&q))
                || q.starts_with("einops.")
                || q == "torchvision.utils.make_grid"
            {
                CallUse::PassesThrough
            } else if matches!(
                q.as_str(),
                "pickle.dump"
                    | "pickle.dumps"
                    | "numpy.save"
                    | "numpy.savez"
                    | "torchvision.utils.save_image"
            ) || q.starts_with("matplotlib.pyplot.")
            {
                CallUse::Reads
            } else {
                CallUse::Consumes
            }
        };
        torchvet_semantic::consumers::reaches_call(
            stmt,
            call.range(),
            body,
            class_body,
            &passes_through,
            return_consumes,
        )
    }

    /// The statement being visited (innermost).
    pub fn current_stmt(&self) -> Option<&'a Stmt> {
        self.stmt_stack.last().copied()
    }

    /// The enclosing statements, outermost first.
    pub fn stmt_stack(&self) -> &[&'a Stmt] {
        &self.stmt_stack
    }

    /// Inside the body of a `try` whose handlers catch one of `errors` (by last name segment,
    /// `Exception`, or a bare `except:`)? Code that shows an error on purpose
    /// (`try: z.backward() except RuntimeError as e: print(e)`) sits there.
    pub fn in_try_catching(&self, errors: &[&str]) -> bool {
        let at = self
            .expr_stack
            .last()
            .map(|e| e.start())
            .or_else(|| self.stmt_stack.last().map(|s| s.start()));
        let Some(at) = at else { return false };
        self.stmt_stack.iter().any(|s| {
            let Stmt::Try(t) = s else { return false };
            let in_body = t
                .body
                .first()
                .zip(t.body.last())
                .is_some_and(|(a, b)| a.start() <= at && at < b.end());
            in_body
                && t.handlers.iter().any(|h| {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    let Some(ty) = h.type_.as_deref() else {
                        return true;
                    };
                    let caught = |e: &Expr| {
                        helpers_last(e).is_some_and(|n| n == "Exception" || errors.contains(&n))
                    };
                    match ty {
                        Expr::Tuple(t) => t.elts.iter().any(caught),
                        e => caught(e),
                    }
                })
        })
    }

    /// Is `call` the fallback of a signature probe: in an `except TypeError:` handler of a
    /// `try` whose body calls the same function with a keyword `call` leaves out
    /// (`try: inception_v3(weights=w, init_weights=False) except TypeError:
    /// inception_v3(pretrained=True)`)? The handler runs only on a release whose signature
    /// rejects that keyword, an old one, where the API it uses is the current one.
    pub fn in_signature_fallback(&self, call: &ExprCall) -> bool {
        let callee = self.text(call.func.range());
        let at = call.start();
        self.stmt_stack.iter().any(|s| {
            let Stmt::Try(t) = s else { return false };
            let in_type_error_handler = t.handlers.iter().any(|h| {
                let ExceptHandler::ExceptHandler(h) = h;
                let catches = h.type_.as_deref().is_some_and(|ty| {
                    let is_type_error = |e: &Expr| helpers_last(e) == Some("TypeError");
                    match ty {
                        Expr::Tuple(t) => t.elts.iter().any(is_type_error),
                        e => is_type_error(e),
                    }
                });
                catches && h.range.contains(at)
            });
            if !in_type_error_handler {
                return false;
            }
            struct Probe<'c, 'x> {
                callee: &'c str,
                source: &'c str,
                fallback: &'x ExprCall,
                found: bool,
            }
            impl<'x> Visitor<'x> for Probe<'_, 'x> {
                fn visit_expr(&mut self, e: &'x Expr) {
                    if let Expr::Call(c) = e {
                        if &self.source[c.func.range()] == self.callee
                            && c.arguments.keywords.iter().any(|k| {
                                k.arg.as_ref().is_some_and(|name| {
                                    self.fallback
                                        .arguments
                                        .find_keyword(name.as_str())
                                        .is_none()
                                })
                            })
                        {
                            self.found = true;
                        }
                    }
                    visitor::walk_expr(self, e);
                }
            }
            let mut probe = Probe {
                callee,
                source: &self.source.text,
                fallback: call,
                found: false,
            };
            probe.visit_body(&t.body);
            probe.found
        })
    }

    /// The expression enclosing the one being visited.
    pub fn parent_expr(&self) -> Option<&'a Expr> {
        let n = self.expr_stack.len();
        if n >= 2 {
            Some(self.expr_stack[n - 2])
        } else {
            None
        }
    }

    /// The enclosing expressions, outermost first (the last is the one being visited).
    pub fn expr_stack(&self) -> &[&'a Expr] {
        &self.expr_stack
    }

    // ----- traversal helpers -----

    fn with_frame(&mut self, frame: Frame<'a>, scope: Scope, f: impl FnOnce(&mut Self)) {
        self.frames.push(frame);
        self.scopes.push(scope);
        f(self);
        self.scopes.pop();
        self.frames.pop();
    }

    fn is_main_test(test: &Expr) -> bool {
        let Expr::Compare(c) = test else { return false };
        if c.ops.len() != 1 || !matches!(c.ops[0], CmpOp::Eq) {
            return false;
        }
        let sides = [&*c.left, &c.comparators[0]];
        sides
            .iter()
            .any(|e| helpers::name_of(e) == Some("__name__"))
            && sides
                .iter()
                .any(|e| helpers::str_value(e) == Some("__main__"))
    }

    fn is_version_test(&self, test: &Expr) -> bool {
        struct Finder<'c, 'b> {
            checker: &'c Checker<'b>,
            found: bool,
        }
        impl<'x> Visitor<'x> for Finder<'_, '_> {
            fn visit_expr(&mut self, expr: &'x Expr) {
                if self.found {
                    return;
                }
                match expr {
                    Expr::Name(n) if mentions_version(n.id.as_str()) => self.found = true,
                    Expr::Attribute(a) if mentions_version(a.attr.as_str()) => self.found = true,
                    Expr::Call(c)
                        if helpers::name_of(&c.func) == Some("hasattr")
                            && c.arguments.args.first().is_some_and(|a| {
                                self.checker
                                    .resolve(a)
                                    .is_some_and(|q| q.starts_with("torch"))
                            }) =>
                    {
                        self.found = true
                    }
                    _ => visitor::walk_expr(self, expr),
                }
            }
        }
        let mut f = Finder {
            checker: self,
            found: false,
        };
        f.visit_expr(test);
        f.found
    }

    fn is_compat_try(t: &ast::StmtTry) -> bool {
        // `try: torch.load(p, weights_only=True) except TypeError: torch.load(p)`: the retry
        // of a torch older than 1.13.
        if torchvet_semantic::helpers::is_keyword_fallback_try(t, "weights_only") {
            return true;
        }
        t.handlers.iter().any(|h| {
            let ExceptHandler::ExceptHandler(h) = h;
            // `try: from torch._six import inf / except: from torch import inf`: a bare (or
            // `except Exception`) handler that imports is a compatibility shim too.
            let imports = h
                .body
                .iter()
                .any(|s| matches!(s, Stmt::Import(_) | Stmt::ImportFrom(_)));
            let Some(ty) = &h.type_ else { return imports };
            if imports && helpers::name_of(ty) == Some("Exception") {
                return true;
            }
            let names: Vec<&Expr> = match &**ty {
                Expr::Tuple(t) => t.elts.iter().collect(),
                e => vec![e],
            };
            names.iter().any(|e| {
                matches!(
                    helpers::name_of(e),
                    Some("ImportError" | "ModuleNotFoundError" | "AttributeError")
                )
            })
        })
    }

    fn region_of(&self, expr: &Expr) -> Option<fn(&mut Regions) -> &mut u32> {
        let target = match expr {
            Expr::Call(c) => {
                // torch.set_grad_enabled(False) as a context manager behaves as no_grad.
                let q = self.resolve(&c.func)?;
                if matches!(
                    q.as_str(),
                    "torch.set_grad_enabled" | "torch.autograd.set_grad_enabled"
                ) {
                    return match c.arguments.args.first().and_then(helpers::is_truthy) {
                        Some(false) => Some(|r| &mut r.no_grad),
                        Some(true) => Some(|r| &mut r.enable_grad),
                        None => None,
                    };
                }
                if q.ends_with("inference_mode")
                    && c.arguments.args.first().and_then(helpers::is_truthy) == Some(false)
                {
                    return None;
                }
                q
            }
            e => self.resolve(e)?,
        };
        grad_region(&target)
    }

    fn dispatch_stmt(&mut self, stmt: &'a Stmt) {
        let dispatch = self.dispatch;
        for &(i, f) in &dispatch.stmt {
            self.rule = i;
            f(self, stmt);
        }
    }
}

/// The mode queries read the place being visited through the checker.
impl<'a> torchvet_semantic::modes::ModeSite<'a> for Checker<'a> {
    fn source(&self) -> &'a str {
        self.source.text.as_ref()
    }

    fn module(&self) -> &'a ast::ModModule {
        self.module
    }

    fn scopes(&self) -> &Scopes {
        &self.scopes
    }

    fn classes(&self) -> &ModuleClasses {
        &self.classes
    }

    fn project(&self) -> Option<&ProjectFile> {
        Checker::project(self)
    }

    fn project_or_file(&self) -> Option<&ProjectFile> {
        Checker::project_or_file(self)
    }

    fn function(&self) -> Option<&'a ast::StmtFunctionDef> {
        Checker::function(self)
    }

    fn method_of(&self) -> Option<torchvet_semantic::modes::EnclosingClass<'a>> {
        self.frame()
            .method_of
            .map(|c| torchvet_semantic::modes::EnclosingClass {
                def: c.def,
                is_module: c.is_module,
            })
    }

    fn loops(&self) -> &[&'a Stmt] {
        &self.frame().loops
    }

    fn stmt_stack(&self) -> &[&'a Stmt] {
        &self.stmt_stack
    }

    fn in_no_grad(&self) -> bool {
        Checker::in_no_grad(self)
    }

    fn in_main_guard(&self) -> bool {
        Checker::in_main_guard(self)
    }

    fn mode_cache(&self) -> &torchvet_semantic::modes::ModeCache {
        &self.modes
    }
}

impl<'a> Visitor<'a> for Checker<'a> {
    fn visit_annotation(&mut self, expr: &'a Expr) {
        self.annotation_depth += 1;
        self.visit_expr(expr);
        self.annotation_depth -= 1;
    }

    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        self.stmt_stack.push(stmt);
        self.dispatch_stmt(stmt);
        match stmt {
            Stmt::FunctionDef(func) => {
                for d in &func.decorator_list {
                    self.visit_decorator(d);
                }
                self.visit_parameters(&func.parameters);
                if let Some(r) = &func.returns {
                    self.visit_annotation(r);
                }
                let mut regions = Regions::default();
                for d in &func.decorator_list {
                    if let Some(field) = self.region_of(&d.expression) {
                        *field(&mut regions) += 1;
                    }
                }
                // The file's own grad-off decorator (`@nograd`, a wrapper that calls the
                // function inside `torch.no_grad()`), from the function's summary.
                if regions.no_grad == 0
                    && regions.inference_mode == 0
                    && self.summary_says_no_grad(func)
                {
                    regions.no_grad += 1;
                }
                let method_of = match self.scopes.current().map(|s| s.kind) {
                    Some(ScopeKind::Class) => self.class_stack.last().copied(),
                    _ => None,
                };
                let scope = match self.kept.take(func.range.start().to_u32()) {
                    Some(s) => s,
                    None => Scope::collect(
                        ScopeKind::Function,
                        &func.body,
                        Some(&func.parameters),
                        &self.scopes,
                    ),
                };
                let frame = Frame {
                    function: Some(func),
                    method_of,
                    loop_depth: 0,
                    loops: Vec::new(),
                    regions,
                    kinds: None,
                };
                self.with_frame(frame, scope, |c| c.visit_body(&func.body));
            }
            Stmt::ClassDef(class) => {
                for d in &class.decorator_list {
                    self.visit_decorator(d);
                }
                if let Some(args) = &class.arguments {
                    self.visit_arguments(args);
                }
                let name = class.name.as_str();
                let info = ClassInfo {
                    def: class,
                    is_module: self.classes.is_module(name),
                    is_dataset: self.classes.is_dataset(name),
                };
                let scope = match self.kept.take(class.range.start().to_u32()) {
                    Some(s) => s,
                    None => Scope::collect(ScopeKind::Class, &class.body, None, &self.scopes),
                };
                self.class_stack.push(info);
                self.scopes.push(scope);
                self.visit_body(&class.body);
                self.scopes.pop();
                self.class_stack.pop();
            }
            Stmt::For(f) => {
                self.visit_expr(&f.iter);
                self.visit_expr(&f.target);
                if let Some(fr) = self.frames.last_mut() {
                    fr.loop_depth += 1;
                    fr.loops.push(stmt);
                }
                self.visit_body(&f.body);
                if let Some(fr) = self.frames.last_mut() {
                    fr.loop_depth -= 1;
                    fr.loops.pop();
                }
                self.visit_body(&f.orelse);
            }
            Stmt::While(w) => {
                self.visit_expr(&w.test);
                if let Some(fr) = self.frames.last_mut() {
                    fr.loop_depth += 1;
                    fr.loops.push(stmt);
                }
                self.visit_body(&w.body);
                if let Some(fr) = self.frames.last_mut() {
                    fr.loop_depth -= 1;
                    fr.loops.pop();
                }
                self.visit_body(&w.orelse);
            }
            Stmt::With(w) => {
                let mut entered = Vec::new();
                for item in &w.items {
                    self.visit_with_item(item);
                    if let Some(field) = self.region_of(&item.context_expr) {
                        entered.push(field);
                    }
                }
                for field in &entered {
                    if let Some(fr) = self.frames.last_mut() {
                        *field(&mut fr.regions) += 1;
                    }
                }
                self.visit_body(&w.body);
                for field in &entered {
                    if let Some(fr) = self.frames.last_mut() {
                        *field(&mut fr.regions) -= 1;
                    }
                }
            }
            Stmt::If(i) => {
                self.visit_expr(&i.test);
                let main = Self::is_main_test(&i.test);
                let version = self.is_version_test(&i.test)
                    || i.elif_else_clauses
                        .iter()
                        .any(|c| c.test.as_ref().is_some_and(|t| self.is_version_test(t)));
                if version {
                    self.version_guard += 1;
                }
                if main {
                    self.main_guard += 1;
                }
                self.visit_body(&i.body);
                if main {
                    self.main_guard -= 1;
                }
                for clause in &i.elif_else_clauses {
                    if let Some(t) = &clause.test {
                        self.visit_expr(t);
                    }
                    self.visit_body(&clause.body);
                }
                if version {
                    self.version_guard -= 1;
                }
            }
            Stmt::Try(t) => {
                let compat = Self::is_compat_try(t);
                if compat {
                    self.version_guard += 1;
                }
                self.visit_body(&t.body);
                for h in &t.handlers {
                    self.visit_except_handler(h);
                }
                if compat {
                    self.version_guard -= 1;
                }
                self.visit_body(&t.orelse);
                self.visit_body(&t.finalbody);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
        self.stmt_stack.pop();
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        self.expr_stack.push(expr);
        let dispatch = self.dispatch;
        match expr {
            Expr::Call(call) => {
                let q = self.scopes.resolve(&call.func);
                for &(i, f) in &dispatch.call {
                    self.rule = i;
                    f(self, call, q.as_deref());
                }
                if let Some(q) = q {
                    self.facts.calls.entry(q).or_default().push(call);
                }
            }
            _ => {
                for &(i, f) in &dispatch.expr[ExprKinds::bucket(expr)] {
                    self.rule = i;
                    f(self, expr);
                }
            }
        }
        match expr {
            Expr::If(ifexp) if self.is_version_test(&ifexp.test) => {
                // `new_api() if TORCH_GE_2_4 else old_api()`: both arms are version-gated.
                self.visit_expr(&ifexp.test);
                self.version_guard += 1;
                self.visit_expr(&ifexp.body);
                self.visit_expr(&ifexp.orelse);
                self.version_guard -= 1;
            }
            Expr::Lambda(l) => {
                if let Some(p) = &l.parameters {
                    self.visit_parameters(p);
                }
                let scope = Scope::collect(
                    ScopeKind::Function,
                    &[],
                    l.parameters.as_deref(),
                    &self.scopes,
                );
                self.scopes.push(scope);
                self.visit_expr(&l.body);
                self.scopes.pop();
            }
            _ => visitor::walk_expr(self, expr),
        }
        self.expr_stack.pop();
    }
}

/// Does an identifier name a version check: it mentions "version" (any case), or it
/// mentions torch together with a number (`_TORCH_GREATER_EQUAL_2_4`, `TORCH_GE_1_13`,
/// `is_torch_2_available`) or with "major"/"minor" (`TORCH_MAJOR`, `TORCH_MINOR`)? No
/// allocation.
pub(crate) fn mentions_version(id: &str) -> bool {
    let b = id.as_bytes();
    b.windows(7).any(|w| w.eq_ignore_ascii_case(b"version"))
        || (b.windows(5).any(|w| w.eq_ignore_ascii_case(b"torch"))
            && (b.iter().any(u8::is_ascii_digit)
                || b.windows(5)
                    .any(|w| w.eq_ignore_ascii_case(b"major") || w.eq_ignore_ascii_case(b"minor"))))
}

/// How a path of another file is shown: relative to the current directory when below it.
pub fn display_path(path: &std::path::Path) -> String {
    let rel = std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok().map(|p| p.to_path_buf()));
    rel.as_deref()
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// Full range of a call (for reporting).
pub fn call_range(call: &ExprCall) -> TextRange {
    call.range()
}

// ----- flow analysis -----

/// What a region's code is (for collecting the names it binds).
enum RegionBody<'a> {
    Stmts(&'a [Stmt]),
    Expr(&'a Expr),
}

/// Names a region binds or grows (`x = ...`, `x += ...`, `xs.append(...)`), which a later
/// backward might consume.
fn names_bound_in(body: RegionBody) -> Vec<String> {
    struct Names(Vec<String>);
    impl<'x> Visitor<'x> for Names {
        fn visit_stmt(&mut self, stmt: &'x Stmt) {
            match stmt {
                Stmt::Assign(a) => {
                    for t in &a.targets {
                        collect_target(t, &mut self.0);
                    }
                }
                Stmt::AugAssign(a) => collect_target(&a.target, &mut self.0),
                Stmt::AnnAssign(a) => collect_target(&a.target, &mut self.0),
                _ => {}
            }
            visitor::walk_stmt(self, stmt);
        }
        fn visit_expr(&mut self, expr: &'x Expr) {
            if let Expr::Call(c) = expr {
                if let Some((m, recv)) = helpers::method_call(c) {
                    if matches!(m, "append" | "extend" | "add" | "insert") {
                        if let Some(n) = helpers::name_of(recv) {
                            self.0.push(n.to_string());
                        }
                    }
                }
            }
            visitor::walk_expr(self, expr);
        }
    }
    fn collect_target(t: &Expr, out: &mut Vec<String>) {
        helpers::for_each_bound_name(t, &mut |n| out.push(n.to_string()));
    }
    let mut n = Names(Vec::new());
    match body {
        RegionBody::Stmts(s) => n.visit_body(s),
        RegionBody::Expr(e) => n.visit_expr(e),
    }
    n.0
}

/// Is the last mode switch between `from` and `to` (the enclosing loop's start and a region's)
/// a `train()` with nothing trained after it: the code that follows runs the model in
/// training mode, in a training loop whose backward pass is still to be written? (After a
/// training step, a prediction loop is an evaluation whatever the mode.)
fn switched_to_train_before(
    events: &[torchvet_semantic::flow::Event<'_>],
    from: TextSize,
    to: TextSize,
) -> bool {
    use torchvet_semantic::flow::EventKind;
    let within =
        |e: &torchvet_semantic::flow::Event<'_>| e.site().start() >= from && e.site().start() < to;
    let Some(last) = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Train | EventKind::Eval) && within(e))
        .max_by_key(|e| e.site().start())
    else {
        return false;
    };
    last.kind == EventKind::Train
        && !events
            .iter()
            .any(|e| trains_event(e.kind) && within(e) && e.site().start() >= last.site().start())
}

/// Does `text` read a tensor's value the pre-0.4 way, `loss.data[0]` (a 0-dim tensor indexed
/// like the 1-element tensor it used to be)? The first item of a dataset's own `data` array
/// (`train_dataset.data[0]`, `trainset.data[0]`, `mnist.data[0]`) is no such read.
fn reads_scalar_the_old_way(text: &str) -> bool {
    text.match_indices(".data[0]").any(|(i, _)| {
        let receiver = text[..i]
            .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        !(receiver.ends_with("set")
            || ["dataset", "data", "loader", "mnist", "cifar"]
                .iter()
                .any(|w| receiver.contains(w)))
    })
}

/// Does an expression mention any of these names?
fn mentions_any(expr: &Expr, names: &[String]) -> bool {
    struct Find<'n> {
        names: &'n [String],
        found: bool,
    }
    impl<'x> Visitor<'x> for Find<'_> {
        fn visit_expr(&mut self, expr: &'x Expr) {
            if let Expr::Name(n) = expr {
                if self.names.iter().any(|m| m == n.id.as_str()) {
                    self.found = true;
                }
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut f = Find {
        names,
        found: false,
    };
    f.visit_expr(expr);
    f.found
}

/// Why a region counts as evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// It iterates validation / test data (`val_loader`, `loaders["test"]`).
    Data,
    /// It is in an evaluation-named function (`validate`, `evaluate`, `test`).
    Function,
    /// An `eval()` call precedes it in the same scope.
    EvalMode,
    /// It computes a loss or metric from outputs.
    Metric,
}

/// A training event: a backward pass, an optimizer step or its preparation (`zero_grad`,
/// gradient clipping, loss scaling, an optimizer built). A region with one is not evaluation.
fn trains_event(k: torchvet_semantic::flow::EventKind) -> bool {
    use torchvet_semantic::flow::EventKind;
    matches!(
        k,
        EventKind::Backward
            | EventKind::Step
            | EventKind::ZeroGrad
            | EventKind::ClipGrad
            | EventKind::ScalerScale
            | EventKind::OptimizerCreated
    )
}

/// The name whose truth a test is: `P`, `P is not None`, `bool(P)` (the name expression).
fn param_truth(test: &Expr) -> Option<&Expr> {
    let name = match test {
        Expr::Name(_) => test,
        Expr::Compare(c)
            if c.ops.len() == 1
                && matches!(c.ops[0], CmpOp::IsNot)
                && matches!(c.comparators.first(), Some(Expr::NoneLiteral(_))) =>
        {
            &c.left
        }
        Expr::Call(c)
            if helpers::name_of(&c.func) == Some("bool") && c.arguments.args.len() == 1 =>
        {
            &c.arguments.args[0]
        }
        _ => return None,
    };
    matches!(name, Expr::Name(_)).then_some(name)
}

/// Does the text name a grad-mode switch (`no_grad`, `set_grad_enabled`, `inference_mode`,
/// `enable_grad`)? Code that manages the grad mode itself is left to it.
fn names_grad_mode(text: &str) -> bool {
    [
        "no_grad",
        "set_grad_enabled",
        "inference_mode",
        "enable_grad",
    ]
    .iter()
    .any(|w| text.contains(w))
}

/// Can the text switch a model to eval mode (`model.eval()`, `model.train(False)`, a helper
/// named for evaluation)? A cheap test before a function's events are computed.
fn may_switch_mode(text: &str) -> bool {
    text.contains("eval") || text.contains(".train(")
}

/// Does `body` (nested definitions included) hold an `if` whose test is a name's truth (see
/// [`param_truth`]) and whose branch may train (its text names a backward pass, a step, an
/// optimizer, an update or training)? `text` gives the source of a range.
fn has_name_truth_if<'t>(body: &[Stmt], text: &dyn Fn(TextRange) -> &'t str) -> bool {
    const TRAINING_WORDS: [&str; 5] = ["backward", "step", "optim", "train", "update"];
    let mut found = false;
    helpers::for_each_own_stmt(body, &mut |s| match s {
        Stmt::If(i) if !found && param_truth(&i.test).is_some() => {
            if let (Some(first), Some(last)) = (i.body.first(), i.body.last()) {
                let branch = text(TextRange::new(first.start(), last.end()));
                found = TRAINING_WORDS.iter().any(|w| branch.contains(w));
            }
        }
        Stmt::FunctionDef(d) if !found => found = has_name_truth_if(&d.body, text),
        _ => {}
    });
    found
}

/// The statement of `body` (at any depth) that trained at offset `site`: the outermost loop
/// around it, else the innermost statement holding it; when a later statement of the suite
/// holding it contains offset `call` (which then runs after the training, in sequence).
fn training_stmt(body: &[Stmt], site: TextSize, call: TextSize) -> Option<&Stmt> {
    let i = body.iter().position(|s| s.range().contains(site))?;
    let stmt = &body[i];
    let in_sequence = || body[i + 1..].iter().any(|s| s.range().contains(call));
    let inner: Vec<&[Stmt]> = match stmt {
        Stmt::For(_) | Stmt::While(_) => return in_sequence().then_some(stmt),
        Stmt::If(s) => std::iter::once(&s.body[..])
            .chain(s.elif_else_clauses.iter().map(|c| &c.body[..]))
            .collect(),
        Stmt::With(s) => vec![&s.body[..]],
        Stmt::Try(s) => std::iter::once(&s.body[..])
            .chain(s.handlers.iter().map(|h| match h {
                ast::ExceptHandler::ExceptHandler(h) => &h.body[..],
            }))
            .chain([&s.orelse[..], &s.finalbody[..]])
            .collect(),
        Stmt::Match(s) => s.cases.iter().map(|c| &c.body[..]).collect(),
        _ => return in_sequence().then_some(stmt),
    };
    match inner.into_iter().find(|b| {
        b.first()
            .zip(b.last())
            .is_some_and(|(f, l)| TextRange::new(f.start(), l.end()).contains(site))
    }) {
        Some(b) => training_stmt(b, site, call),
        None => in_sequence().then_some(stmt),
    }
}

/// An evaluation region (see [`Checker::eval_region`] and [`Checker::eval_function_region`]).
#[derive(Clone, Copy, Debug)]
pub struct EvalRegion<'a> {
    /// The loop or comprehension (the whole function for a function-level region).
    pub range: TextRange,
    /// The loop statement (`None` for a comprehension).
    pub loop_stmt: Option<&'a Stmt>,
    /// Why it counts as evaluation.
    pub evidence: Evidence,
}

/// Per-file state of the flow analysis: analysed loops (each at most once) and the
/// functions callable from loops.
#[derive(Default)]
pub struct FlowState<'a> {
    loops: FxHashMap<ruff_text_size::TextSize, std::rc::Rc<torchvet_semantic::flow::LoopFlow<'a>>>,
    functions: FxHashMap<u32, std::rc::Rc<Vec<torchvet_semantic::flow::Event<'a>>>>,
    module_functions: Option<std::rc::Rc<Vec<&'a ast::StmtFunctionDef>>>,
    /// [`Checker::eval_region`] by the region (loop or comprehension) it answers for: the
    /// answer is the region's, whichever call in it asks.
    eval_regions: FxHashMap<(u32, u32), Option<EvalRegion<'a>>>,
    /// Per function (by where it starts), for [`Checker::eval_function_region`]: where its
    /// first `eval()` event is when the function can be one evaluation region (the tests
    /// that do not depend on the model call's place), `None` when it cannot be one.
    eval_functions: FxHashMap<u32, Option<TextSize>>,
    /// Per function (by where it starts), [`Checker::trains_nowhere`].
    trains_nowhere: FxHashMap<u32, bool>,
    /// Does the module body use gradients on purpose ([`Checker::uses_gradients_in_body`]),
    /// once asked by [`Checker::module_inference_region`].
    module_uses_gradients: Option<bool>,
    /// Per function (by where it starts), [`Checker::training_flag_param`].
    training_flags: FxHashMap<u32, Option<(&'a str, Vec<TextRange>)>>,
}

impl<'a> Checker<'a> {
    /// Can this file contain training events at all (it mentions `backward`)? Cheap, cached:
    /// flow rules call it first.
    pub fn flow_relevant(&mut self) -> bool {
        // Every training event the flow rules reason about sits in a file that runs a
        // backward pass (`loss.backward()`, `accelerator.backward`, `manual_backward`...);
        // inference pipelines that only call `scheduler.step(...)` are skipped.
        *self.flow_relevant.get_or_init(|| {
            self.mentions("backward") || self.project().is_some_and(|p| p.model.trains(p.file))
        })
    }

    /// The per-iteration training events of the loop being visited (the current statement
    /// must be a `for`/`while`; `None` otherwise or when the file has no training calls).
    /// Computed once per loop and cached. See [`torchvet_semantic::flow`].
    pub fn loop_flow(&mut self) -> Option<std::rc::Rc<torchvet_semantic::flow::LoopFlow<'a>>> {
        let stmt = self.current_stmt()?;
        if !matches!(stmt, Stmt::For(_) | Stmt::While(_)) || !self.flow_relevant() {
            return None;
        }
        Some(self.flow_of(stmt))
    }

    /// The per-iteration events of a Lightning `training_step` under manual optimization
    /// (`self.optimizers()`, `self.manual_backward(...)`, `automatic_optimization = False`),
    /// asked at the first statement of its body: Lightning calls it once per batch, so the
    /// body is one iteration of a training loop the user's own `zero_grad()`/`step()` calls
    /// order (the framework owns only the iteration). `None` elsewhere.
    pub fn manual_step_hook_flow(
        &mut self,
        stmt: &Stmt,
    ) -> Option<std::rc::Rc<torchvet_semantic::flow::LoopFlow<'a>>> {
        let f = self.function()?;
        if f.name.as_str() != "training_step"
            || f.body.first().is_none_or(|s| s.range() != stmt.range())
            || !self.flow_relevant()
        {
            return None;
        }
        let class = self.frame().method_of?;
        let body = self.text(f.range);
        let manual = body.contains("manual_backward(")
            || body.contains("self.optimizers(")
            || self
                .text(class.def.range())
                .contains("automatic_optimization = False");
        if !manual || !self.in_framework_hook() {
            return None;
        }
        let def = self
            .stmt_stack
            .iter()
            .rev()
            .copied()
            .find(|s| matches!(s, Stmt::FunctionDef(d) if d.range == f.range))?;
        Some(self.flow_of(def))
    }

    /// The flow of the innermost loop (of the current function) enclosing the node being
    /// visited, for `call`/`expr` hooks.
    pub fn enclosing_loop_flow(
        &mut self,
    ) -> Option<std::rc::Rc<torchvet_semantic::flow::LoopFlow<'a>>> {
        let stmt = *self.frame().loops.last()?;
        if !self.flow_relevant() {
            return None;
        }
        Some(self.flow_of(stmt))
    }

    fn flow_of(&mut self, stmt: &'a Stmt) -> std::rc::Rc<torchvet_semantic::flow::LoopFlow<'a>> {
        use torchvet_semantic::flow::analyze_loop;
        if let Some(f) = self.flow.loops.get(&stmt.start()) {
            return f.clone();
        }
        let flow = std::rc::Rc::new(self.with_flow_input(|input| analyze_loop(stmt, input)));
        self.flow.loops.insert(stmt.start(), flow.clone());
        flow
    }

    /// The training events of the whole function being visited (or of the module body), in
    /// source order, loops and project helpers included. Cached per function.
    pub fn function_events(&mut self) -> std::rc::Rc<Vec<torchvet_semantic::flow::Event<'a>>> {
        let key = self
            .function()
            .map_or(u32::MAX, |f| f.range.start().to_u32());
        if let Some(e) = self.flow.functions.get(&key) {
            return e.clone();
        }
        let events = match (self.function(), self.current_def_stmt()) {
            (Some(f), Some(anchor)) => self.with_flow_input(|input| {
                torchvet_semantic::flow::analyze_suite(&f.body, anchor, input)
            }),
            _ => match self.module.body.first() {
                Some(anchor) => {
                    let body = &self.module.body;
                    self.with_flow_input(|input| {
                        torchvet_semantic::flow::analyze_suite(body, anchor, input)
                    })
                }
                None => Vec::new(),
            },
        };
        let rc = std::rc::Rc::new(events);
        self.flow.functions.insert(key, rc.clone());
        rc
    }

    /// The `def` statement of the function being visited.
    fn current_def_stmt(&self) -> Option<&'a Stmt> {
        let f = self.function()?;
        self.stmt_stack
            .iter()
            .rev()
            .find(|s| matches!(s, Stmt::FunctionDef(d) if d.range == f.range))
            .copied()
    }

    fn with_flow_input<R>(
        &mut self,
        run: impl FnOnce(&torchvet_semantic::flow::FlowInput<'a, '_>) -> R,
    ) -> R {
        use torchvet_semantic::flow::FlowInput;
        let module_functions = match &self.flow.module_functions {
            Some(f) => f.clone(),
            None => {
                let f: Vec<&'a ast::StmtFunctionDef> =
                    torchvet_semantic::helpers::function_defs(&self.module.body).collect();
                let rc = std::rc::Rc::new(f);
                self.flow.module_functions = Some(rc.clone());
                rc
            }
        };
        let current = self.function();
        let mut functions: Vec<&'a ast::StmtFunctionDef> = module_functions.to_vec();
        // Closures of the enclosing functions (`_eval_epoch` beside `_train_epoch` in `main`),
        // outermost first, then the current function's own: the innermost definition of a
        // name comes last, which is the one a call by that name runs.
        let last = self.frames.len() - 1;
        for frame in &self.frames[..last] {
            if let (Some(f), None) = (frame.function, frame.method_of) {
                functions.extend(torchvet_semantic::helpers::function_defs(&f.body));
            }
        }
        if let Some(cur) = current {
            functions.extend(torchvet_semantic::helpers::function_defs(&cur.body));
        }
        let methods: Vec<&'a ast::StmtFunctionDef> = self
            .frame()
            .method_of
            .map(|c| torchvet_semantic::helpers::function_defs(&c.def.body).collect())
            .unwrap_or_default();
        let local = self.frame_kinds(last);
        let outer = self.outer_kinds(last);
        let attrs = self.frames[last].method_of.map(|c| self.class_kinds(c.def));
        let input = FlowInput {
            kinds: KindContext {
                local: &local,
                outer: Some(&outer),
                attrs: attrs.as_deref(),
                scopes: &self.scopes,
                classes: &self.classes,
            },
            functions: &functions,
            methods: &methods,
            current,
            class: self.frames[last].method_of.map(|c| c.def),
        };
        run(&input)
    }

    /// The evaluation region the node being visited is in, if any: the innermost loop (or
    /// comprehension) of the current function that runs no backward pass or optimizer step,
    /// directly, in nested loops or in the project functions it calls; after which the same
    /// iteration of the enclosing loop (or the rest of the function) runs none either; that
    /// uses no gradients on purpose; and that says evaluation: it iterates validation / test
    /// data, sits in an evaluation-named function, follows an `eval()` call, or computes a loss
    /// or metric. Wherever it is written: a function, a notebook cell, or nested in the epoch
    /// loop right after the training loop.
    pub fn eval_region(&mut self) -> Option<EvalRegion<'a>> {
        let (range, iter, loop_stmt) = self.innermost_region()?;
        let key = (range.start().to_u32(), range.end().to_u32());
        if let Some(r) = self.flow.eval_regions.get(&key) {
            return *r;
        }
        let region = self.compute_eval_region(range, iter, loop_stmt);
        self.flow.eval_regions.insert(key, region);
        region
    }

    /// The region [`Checker::eval_region`] tests: the innermost comprehension over data,
    /// else the innermost `for` or `while` loop, of the node being visited.
    fn innermost_region(&self) -> Option<(TextRange, &'a Expr, Option<&'a Stmt>)> {
        // The innermost comprehension over data, else the innermost loop.
        let comprehension = self.expr_stack.iter().rev().find_map(|e| match e {
            Expr::ListComp(c) => c.generators.first().map(|g| (e.range(), &g.iter)),
            Expr::SetComp(c) => c.generators.first().map(|g| (e.range(), &g.iter)),
            Expr::Generator(c) => c.generators.first().map(|g| (e.range(), &g.iter)),
            Expr::DictComp(c) => c.generators.first().map(|g| (e.range(), &g.iter)),
            _ => None,
        });
        let innermost_loop = self.frame().loops.last().copied();
        match (comprehension, innermost_loop) {
            (Some((r, it)), Some(l)) if l.range().contains_range(r) => Some((r, it, None)),
            (Some((r, it)), None) => Some((r, it, None)),
            (_, Some(l @ Stmt::For(f))) => Some((l.range(), &*f.iter, Some(l))),
            // `while True:` generating until enough images, `while not done:` acting in an
            // environment: the test stands for the iterable.
            (_, Some(l @ Stmt::While(w))) => Some((l.range(), &*w.test, Some(l))),
            _ => None,
        }
    }

    fn compute_eval_region(
        &mut self,
        range: TextRange,
        iter: &'a Expr,
        loop_stmt: Option<&'a Stmt>,
    ) -> Option<EvalRegion<'a>> {
        use torchvet_semantic::flow::EventKind;
        use torchvet_semantic::regions::{
            computes_metric, is_eval_name, is_train_name, iterates_eval_data, uses_gradients_expr,
            uses_gradients_stmt,
        };
        let trains = trains_event;
        let text = self.text(range);
        // Every spelling of a gradient use names "grad" or an attack: the syntax walk runs
        // only then.
        let uses_gradients = torchvet_semantic::regions::may_use_gradients(text)
            && match loop_stmt {
                Some(l) => uses_gradients_stmt(l),
                None => self
                    .expr_stack
                    .iter()
                    .rev()
                    .find(|e| e.range() == range)
                    .is_some_and(|e| uses_gradients_expr(e)),
            };
        if uses_gradients {
            return None;
        }
        if let Some(l) = loop_stmt {
            if self.flow_relevant() && self.flow_of(l).events.iter().any(|e| trains(e.kind)) {
                return None;
            }
            if torchvet_semantic::regions::runs_custom_train_step(
                torchvet_semantic::regions::loop_body(l),
            ) {
                return None;
            }
        }
        // Nothing trains after the region in the same iteration of the enclosing loop (or in
        // the rest of the function): the outputs do not feed a backward pass.
        let events = self.function_events();
        let enclosing = self
            .frame()
            .loops
            .iter()
            .rev()
            .find(|l| l.range().contains_range(range) && l.range() != range)
            .map(|l| l.range());
        let scope_end = enclosing.map_or(TextSize::new(u32::MAX), |r| r.end());
        let produced = names_bound_in(self.region_body(range, loop_stmt));
        let body: &'a [Stmt] = self.scope_body();
        // What the region produced, and the names computed from it between the region and a
        // later backward (SCST: the sampled logits appended to `net_policies`, then
        // `policies_v = torch.cat(...)`, `log_prob_v`, ..., `loss_v.backward()`).
        let derived = |at: TextSize| {
            torchvet_semantic::uses::derived_between(body, &produced, range.end(), at)
        };
        if events.iter().any(|e| {
            if !trains(e.kind) || e.site().start() < range.end() {
                return false;
            }
            match e.loss {
                // A later backward whose loss uses what the region produced (`losses` appended
                // in the loop, then `sum(losses).backward()`), directly or through the values
                // computed from it.
                Some(loss) => {
                    mentions_any(loss, &produced) || mentions_any(loss, &derived(e.site().start()))
                }
                // A backward in a helper: anywhere in the same iteration counts. With no
                // enclosing loop, a later step, `zero_grad` or clipping (a later training
                // phase or notebook cell; its backward is an event with a loss of its own)
                // is weaker: see `trains_later` below.
                None => {
                    e.site().start() < scope_end
                        && (enclosing.is_some() || e.kind == EventKind::Backward)
                }
            }
        }) {
            return None;
        }
        let trains_later = enclosing.is_none()
            && events
                .iter()
                .any(|e| trains(e.kind) && e.loss.is_none() && e.site().start() >= range.end());
        if events
            .iter()
            .any(|e| trains(e.kind) && range.contains_range(e.site()))
        {
            return None;
        }
        let scope_start = enclosing.map_or(TextSize::new(0), |r| r.start());
        let evidence = if iterates_eval_data(iter) || iterates_eval_data(self.loop_source(iter)) {
            Evidence::Data
        } else if self.function().is_some_and(|f| {
            is_eval_name(f.name.as_str())
                || torchvet_semantic::regions::is_sampling_name(f.name.as_str())
        }) {
            // Named for evaluation, or for sampling from the model (`generate()` of a
            // char-RNN feeding its hidden state back): a caller that trains on what it returns
            // is the rule's question.
            Evidence::Function
        } else if events.iter().any(|e| {
            e.kind == EventKind::Eval
                && e.site().start() < range.start()
                && e.site().start() >= scope_start
        }) {
            Evidence::EvalMode
        } else if computes_metric(text)
            && !self
                .function()
                .is_some_and(|f| is_train_name(f.name.as_str()))
            && !switched_to_train_before(&events, scope_start, range.start())
        {
            // Words of a metric in a training routine's loop (`forward_train`'s teacher-forced
            // decode) say nothing: its outputs feed the loss. Nor in a loop right after
            // `model.train()` with nothing trained since (a tutorial's training loop that
            // computes the loss before its backward pass is written).
            Evidence::Metric
        } else {
            return None;
        };
        // Training after the region, with no loop around it: an evaluation over held-out data
        // or after `eval()` is still one (an evaluation cell between training cells); a loop
        // that only looks like one by its metric words is not reported.
        if trains_later {
            // The `eval()` must come after the last training before the region (the cell
            // that trains, then `model.eval()` and the evaluation loop), not from an
            // unrelated earlier part of the module.
            let last_training = events
                .iter()
                .filter(|e| trains(e.kind) && e.site().end() <= range.start())
                .map(|e| e.site().end())
                .max()
                .unwrap_or_default();
            let evaled_since = events.iter().any(|e| {
                e.kind == EventKind::Eval
                    && e.site().start() >= last_training
                    && e.site().start() < range.start()
                    && e.target
                        .as_ref()
                        .is_some_and(|t| text.contains(t.key.as_str()))
            });
            match evidence {
                Evidence::Data => {}
                Evidence::EvalMode if evaled_since => {}
                _ => return None,
            }
        }
        Some(EvalRegion {
            range,
            loop_stmt,
            evidence,
        })
    }

    /// The function being visited as one evaluation region, for a model call at `at` outside
    /// any loop: the function puts a model in eval mode before `at` (`model.eval()`), trains
    /// nowhere (no backward pass, optimizer step, `zero_grad`, clipping or loss scaling,
    /// directly or in the project functions it calls), is not named for training, and uses no
    /// gradients on purpose (saliency, attacks). One-shot inference (`model.eval(); out =
    /// model(batch)`) is evaluation as much as a loop over a test loader is. `None` at module
    /// level.
    pub fn eval_function_region(&mut self, at: TextSize) -> Option<EvalRegion<'a>> {
        let f = self.function()?;
        let key = f.range.start().to_u32();
        let first_eval = match self.flow.eval_functions.get(&key) {
            Some(&first) => first,
            None => {
                let first = self.function_first_eval(f);
                self.flow.eval_functions.insert(key, first);
                first
            }
        };
        if first_eval.is_none_or(|first| first >= at) {
            return None;
        }
        Some(EvalRegion {
            range: f.range,
            loop_stmt: None,
            evidence: Evidence::EvalMode,
        })
    }

    /// The function being visited as one evaluation region for a model call outside any loop
    /// whose output is only read (`.item()`, `.tolist()`, `argmax`, indexing: it reaches no
    /// call that could differentiate it, and is not returned), in a function named for
    /// evaluation (`predict_sentiment`, `evaluate`, `inference`) or for looking at what the
    /// model makes (`sample_images`, `generate`, `visualize`) that trains nowhere and uses
    /// no gradients on purpose: single-input prediction helpers that never call `eval()`
    /// themselves (their caller did, or the model has no mode-dependent layers).
    pub fn inference_function_region(&mut self, call: &ExprCall) -> Option<EvalRegion<'a>> {
        let f = self.function()?;
        let name = f.name.as_str();
        if !(torchvet_semantic::regions::is_eval_name(name)
            || torchvet_semantic::regions::is_sampling_name(name)
            || torchvet_semantic::regions::is_action_name(name)
            || torchvet_semantic::regions::is_pred_name(name))
            || !self.trains_nowhere(f)
            || self.output_needs_graph(call)
        {
            return None;
        }
        Some(EvalRegion {
            range: f.range,
            loop_stmt: None,
            evidence: Evidence::Function,
        })
    }

    /// A model call at a script's or notebook's top level (outside any function and loop) as
    /// one-shot inference: the module put a model in eval mode before the call, nothing at
    /// top level runs a backward pass or an optimizer step after that switch, the module uses
    /// no gradients on purpose (saliency, `requires_grad_()`, `enable_grad()`), and the
    /// output is only read (`model.eval()`; `pred = model(x_test).detach().numpy()` to plot
    /// a trained model's predictions). Whether the switch was on the called model is the
    /// rule's question.
    ///
    /// The same holds in a function that trained before the switch (`train_vqvae()`: the
    /// epoch loop, then `model.eval()` and one reconstruction of test images for a figure).
    pub fn module_inference_region(&mut self, call: &ExprCall) -> Option<EvalRegion<'a>> {
        use torchvet_semantic::flow::EventKind;
        if !(self.mentions("eval") || self.mentions(".train(")) {
            return None;
        }
        // In a function, its own text must switch a model (the same cheap test as
        // `function_first_eval`) before its events are computed.
        if let Some(f) = self.function() {
            let text = self.text(f.range);
            if !may_switch_mode(text) {
                return None;
            }
        }
        let events = self.function_events();
        let last_eval = events
            .iter()
            .filter(|e| e.kind == EventKind::Eval && e.site().start() < call.start())
            .map(|e| e.site().start())
            .max()?;
        if events
            .iter()
            .any(|e| trains_event(e.kind) && e.site().start() > last_eval)
        {
            return None;
        }
        self.one_shot_region(call)
    }

    /// A forward pass of the model keyed `model` (`G`, `self.net`) inside a training loop,
    /// between a switch of that model to eval mode earlier in the same iteration and its switch
    /// back with `train()` (or the end of the loop's training): `G.eval(); samples =
    /// G(fixed_z); G.train()` to look at a GAN's progress each epoch, `policy.eval(); action =
    /// policy(state); policy.train()`. No training event lies between the switches, the
    /// output is only read, and the code uses no gradients on purpose: that stretch
    /// evaluates.
    pub fn eval_segment_region(&mut self, call: &ExprCall, model: &str) -> Option<EvalRegion<'a>> {
        use torchvet_semantic::flow::EventKind;
        let l = *self.frame().loops.last()?;
        let events = self.function_events();
        let on_model = |e: &torchvet_semantic::flow::Event| {
            e.target.as_ref().is_some_and(|t| t.key.as_str() == model)
        };
        let switched = events
            .iter()
            .filter(|e| {
                e.kind == EventKind::Eval
                    && on_model(e)
                    && l.range().contains_range(e.site())
                    && e.site().end() <= call.start()
            })
            .map(|e| e.site().start())
            .max()?;
        // Training between the switch and the call, or after the call before the model is
        // switched back.
        let back = events
            .iter()
            .filter(|e| e.kind == EventKind::Train && on_model(e) && e.site().start() > call.end())
            .map(|e| e.site().start())
            .min()
            .unwrap_or(TextSize::new(u32::MAX));
        if events.iter().any(|e| {
            let at = e.site().start();
            trains_event(e.kind)
                && ((at > switched && at < call.start())
                    || (at > call.end() && at < back && l.range().contains(at)))
        }) {
            return None;
        }
        self.one_shot_region(call)
    }

    /// A forward pass after the code around it trained: the statement that holds the last
    /// backward pass or optimizer step before `call` in the function being visited (or the
    /// module body of a script or notebook), the outermost loop around it (the epoch loop) or
    /// the call of a training helper (`train(model, loader, opt)`), when `call` runs after it
    /// in sequence (a later statement of the suite that holds it, not the other branch of an
    /// `if`), no model was switched to eval or train mode in between, nothing trains after
    /// `call`, and the code uses no gradients on purpose (saliency, `requires_grad_()`).
    /// Whether that statement trained the called model, and whether anything touched the
    /// model since, is the rule's question.
    pub fn after_training(&mut self, call: &ExprCall) -> Option<&'a Stmt> {
        use torchvet_semantic::flow::EventKind;
        if self.in_loop_or_comprehension() {
            return None;
        }
        let events = self.function_events();
        let last = events
            .iter()
            .filter(|e| e.kind.trains() && e.site().end() <= call.start())
            .max_by_key(|e| e.site().start())?;
        let from = last.site().start();
        if events.iter().any(|e| {
            let at = e.site().start();
            (matches!(e.kind, EventKind::Eval | EventKind::Train) && at > from && at < call.start())
                || (trains_event(e.kind) && at > call.start())
        }) {
            return None;
        }
        let trained = training_stmt(self.scope_body(), from, call.start())?;
        (!self.scope_uses_gradients()).then_some(trained)
    }

    /// Does the function being visited (or the module body) use gradients on purpose
    /// (saliency, `requires_grad_()`, `enable_grad()`; see [`Checker::uses_gradients_in`])?
    fn scope_uses_gradients(&mut self) -> bool {
        match self.function() {
            Some(f) => self.uses_gradients_in(f),
            None => self.module_uses_gradients(),
        }
    }

    /// The forward pass at `call` as an evaluation region of its own (after `eval()`), when
    /// the code around it uses no gradients on purpose and its output is only read.
    fn one_shot_region(&mut self, call: &ExprCall) -> Option<EvalRegion<'a>> {
        if self.scope_uses_gradients() || self.reaches_graph_call(call) {
            return None;
        }
        Some(EvalRegion {
            range: call.range(),
            loop_stmt: None,
            evidence: Evidence::EvalMode,
        })
    }

    /// The one value a name (or `self.<attr>`) is bound to in the function being visited (or
    /// the module body), when it is bound exactly once.
    fn value_bound_once(&self, name: &Expr) -> Option<&'a Expr> {
        match torchvet_semantic::modes::assigned_values(self, name)[..] {
            [(v, _)] => Some(v),
            _ => None,
        }
    }

    /// The parameter that switches the function being visited between training and
    /// evaluation: every backward pass and optimizer step of it runs under `if P:`,
    /// `if P is not None:`, or `if flag:` with `flag = P is not None` (or `flag = P`,
    /// `bool(P)`) bound once in the function (`def run_epoch(model, loader, optimizer=None)`
    /// with `training = optimizer is not None`), while the function manages no grad mode
    /// itself (`set_grad_enabled`, `no_grad`, `inference_mode`). Its name, and the `if`
    /// statements that gate the training; called with `P` falsy, the function evaluates with
    /// autograd on.
    pub fn training_flag_param(&mut self) -> Option<(&'a str, Vec<TextRange>)> {
        let f = self.function()?;
        let key = f.range.start().to_u32();
        if let Some(answer) = self.flow.training_flags.get(&key) {
            return answer.clone();
        }
        let answer = self.find_training_flag_param(f);
        self.flow.training_flags.insert(key, answer.clone());
        answer
    }

    /// The phase loop around the node at `at` (`for phase in ["train", "val"]:`, the
    /// transfer-learning tutorial's epoch body) when the loop trains only in its training
    /// phases (every backward pass and optimizer step in it runs under `if phase ==
    /// "train":`, directly or through a flag bound once from such a test, or after `if phase
    /// == "val": continue`), the node runs in the evaluation phases too (not in a
    /// training-only branch, no exit of those phases before it), and the loop manages no
    /// grad mode (`torch.set_grad_enabled(phase == "train")`, `no_grad`, `inference_mode`).
    /// There, in an evaluation phase, the node evaluates with autograd on.
    pub fn phase_loop_evaluating(
        &mut self,
        at: TextRange,
    ) -> Option<(&'a Stmt, torchvet_semantic::regions::PhaseLoop<'a>)> {
        use torchvet_semantic::flow::Guard;
        // Asked for model calls in training loops: a file that spells no "train" phase
        // literal has none (the cached text search spares the loops' iterables).
        if !(self.mentions("\"train") || self.mentions("'train")) {
            return None;
        }
        let loops = self.frame().loops.clone();
        let found = loops.iter().find_map(|&l| {
            let Stmt::For(f) = l else { return None };
            let iter: &'a Expr = match &*f.iter {
                e @ Expr::Name(_) => self.value_bound_once(e)?,
                e => e,
            };
            torchvet_semantic::regions::phase_loop(&f.target, iter).map(|p| (l, p))
        });
        // Over phases the code does not spell here (`for phase in dataset_names:`, a
        // parameter): the ones its body compares the target with.
        let (stmt, phases) = match found {
            Some(found) => found,
            None => loops.iter().find_map(|&l| {
                let Stmt::For(f) = l else { return None };
                if !matches!(&*f.iter, Expr::Name(_) | Expr::Attribute(_))
                    || self.value_bound_once(&f.iter).is_some()
                {
                    return None;
                }
                torchvet_semantic::regions::phase_loop_from_tests(&f.target, &f.body)
                    .map(|p| (l, p))
            })?,
        };
        let text = self.text(stmt.range());
        if names_grad_mode(text) {
            return None;
        }
        let events = self.function_events();
        // A test on the phase, or a name bound once from one (`is_train = phase == "train"`).
        let phase_test = |t: &Expr| -> Option<bool> {
            phases
                .test(t)
                .or_else(|| phases.test(self.value_bound_once(t)?))
        };
        let within = |r: TextRange| stmt.range().contains_range(r);
        // A branch that runs in the training phases only.
        let training_only = |g: &Guard| match g {
            Guard::If {
                stmt: s,
                clause: 0,
                test: Some(t),
                ..
            } => within(s.range) && phase_test(t) == Some(true),
            Guard::If {
                stmt: s,
                clause: 1,
                test: None,
                ..
            } => {
                within(s.range)
                    && s.elif_else_clauses.len() == 1
                    && phase_test(&s.test) == Some(false)
            }
            Guard::AfterExit { stmt: s, test, .. } => {
                within(s.range) && phase_test(test) == Some(false)
            }
            _ => false,
        };
        let mut trains = false;
        for e in events
            .iter()
            .filter(|e| e.kind.trains() && within(e.site()))
        {
            if !e.guards.iter().any(training_only) {
                return None;
            }
            trains = true;
        }
        if !trains {
            return None;
        }
        // The node runs in the evaluation phases: no training-only branch holds it, and no
        // statement before it in the suites that hold it leaves the iteration in those
        // phases (`if phase != "train": continue`).
        for s in self.stmt_stack().iter().filter(|s| within(s.range())) {
            match s {
                Stmt::If(i) => {
                    if i.body.iter().any(|b| b.range().contains_range(at))
                        && phase_test(&i.test) == Some(true)
                    {
                        return None;
                    }
                    if let [c] = &i.elif_else_clauses[..] {
                        if c.test.is_none()
                            && c.body.iter().any(|b| b.range().contains_range(at))
                            && phase_test(&i.test) == Some(false)
                        {
                            return None;
                        }
                    }
                }
                Stmt::For(_) | Stmt::While(_) | Stmt::With(_) | Stmt::Try(_) => {}
                _ => continue,
            }
            for suite in helpers::suites_of(s) {
                let Some(i) = suite.iter().position(|b| b.range().contains_range(at)) else {
                    continue;
                };
                let exits_eval = suite[..i].iter().any(|b| match b {
                    Stmt::If(x) => {
                        phase_test(&x.test) == Some(false)
                            && matches!(
                                x.body.last(),
                                Some(Stmt::Continue(_) | Stmt::Break(_) | Stmt::Return(_))
                            )
                    }
                    _ => false,
                });
                if exits_eval {
                    return None;
                }
            }
        }
        Some((stmt, phases))
    }

    fn find_training_flag_param(
        &mut self,
        f: &'a ast::StmtFunctionDef,
    ) -> Option<(&'a str, Vec<TextRange>)> {
        use torchvet_semantic::flow::Guard;
        let text = self.text(f.range);
        if names_grad_mode(text) {
            return None;
        }
        let params: Vec<&'a str> = f
            .parameters
            .iter_non_variadic_params()
            .map(|p| p.parameter.name.as_str())
            .collect();
        // Only an `if` whose test is a name's truth (`if optimizer:`, `if opt is not None:`,
        // `if bool(train):`) can gate the training: a syntactic look before the function's
        // events are computed (most functions have no such `if`; nested definitions count,
        // for the closures the events follow).
        if params.is_empty() || !has_name_truth_if(&f.body, &|r| self.text(r)) {
            return None;
        }
        let events = self.function_events();
        // `P`, or `flag` bound once to `P is not None` / `P` / `bool(P)`.
        let param_of_test = |test: &'a Expr| -> Option<&'a str> {
            let e = param_truth(test)?;
            let p = helpers::name_of(e)?;
            if params.contains(&p) {
                return Some(p);
            }
            let q = helpers::name_of(param_truth(self.value_bound_once(e)?)?)?;
            params.contains(&q).then_some(q)
        };
        let mut flag: Option<&'a str> = None;
        let mut gates = Vec::new();
        for e in events.iter().filter(|e| e.kind.trains()) {
            let (gated, gate) = e.guards.iter().find_map(|g| match g {
                Guard::If {
                    stmt,
                    clause: 0,
                    test: Some(t),
                    ..
                } => param_of_test(t).map(|p| (p, stmt.range)),
                _ => None,
            })?;
            if flag.is_some_and(|p| p != gated) {
                return None;
            }
            flag = Some(gated);
            gates.push(gate);
        }
        flag.map(|p| (p, gates))
    }

    /// Does the module body use gradients on purpose (see [`Checker::uses_gradients_in`])?
    /// Asked once per file.
    fn module_uses_gradients(&mut self) -> bool {
        if let Some(answer) = self.flow.module_uses_gradients {
            return answer;
        }
        let module = self.module;
        let answer = self.uses_gradients_in_body(module.range, &module.body);
        self.flow.module_uses_gradients = Some(answer);
        answer
    }

    /// Where the first `eval()` event of function `f` (the one being visited) is, when `f`
    /// can be one evaluation region: see [`Checker::eval_function_region`].
    fn function_first_eval(&mut self, f: &'a ast::StmtFunctionDef) -> Option<TextSize> {
        use torchvet_semantic::flow::EventKind;
        // Only where the text can switch a model to eval mode (`model.eval()`,
        // `model.train(False)`, a helper named for evaluation): a cheap test before the
        // function's events are computed.
        let text = self.text(f.range);
        if !(self.mentions("eval") || self.mentions(".train("))
            || !may_switch_mode(text)
            || !self.trains_nowhere(f)
        {
            return None;
        }
        self.function_events()
            .iter()
            .filter(|e| e.kind == EventKind::Eval)
            .map(|e| e.site().start())
            .min()
    }

    /// Can function `f` (the one being visited) be evaluation as a whole: it is not named for
    /// training, uses no gradients on purpose (saliency, attacks), and has no training event
    /// (backward, step, `zero_grad`, clipping, loss scaling), directly or in the project
    /// functions it calls? Cached per function.
    fn trains_nowhere(&mut self, f: &'a ast::StmtFunctionDef) -> bool {
        use torchvet_semantic::regions::is_train_name;
        let key = f.range.start().to_u32();
        if let Some(&answer) = self.flow.trains_nowhere.get(&key) {
            return answer;
        }
        let named_for_training = is_train_name(f.name.as_str());
        let answer = !named_for_training
            && !self.uses_gradients_in(f)
            && !self.function_events().iter().any(|e| trains_event(e.kind));
        self.flow.trains_nowhere.insert(key, answer);
        answer
    }

    /// Does function `f` use gradients on purpose somewhere in its body (saliency, an attack,
    /// `enable_grad()`, `requires_grad_()`; see
    /// [`torchvet_semantic::regions::uses_gradients_stmt`])?
    pub fn uses_gradients_in(&self, f: &ast::StmtFunctionDef) -> bool {
        self.uses_gradients_in_body(f.range, &f.body)
    }

    /// The same question for any suite spanning `range` (a module body).
    fn uses_gradients_in_body(&self, range: TextRange, body: &[Stmt]) -> bool {
        torchvet_semantic::regions::may_use_gradients(self.text(range))
            && body
                .iter()
                .any(torchvet_semantic::regions::uses_gradients_stmt)
    }

    /// The statements (or the comprehension's element) of a region, for name collection.
    fn region_body(&self, range: TextRange, loop_stmt: Option<&'a Stmt>) -> RegionBody<'a> {
        match loop_stmt {
            Some(l) => RegionBody::Stmts(torchvet_semantic::regions::loop_body(l)),
            None => match self.expr_stack.iter().rev().find(|e| e.range() == range) {
                Some(e) => RegionBody::Expr(e),
                None => RegionBody::Stmts(&[]),
            },
        }
    }

    /// Inside code whose training loop a framework owns (a Lightning / HF Trainer subclass, or
    /// a `training_step`-style hook)? Flow rules stay silent there.
    pub fn in_framework_hook(&self) -> bool {
        if self.function().is_some_and(|f| {
            matches!(
                f.name.as_str(),
                "training_step" | "validation_step" | "test_step" | "predict_step"
            )
        }) {
            return true;
        }
        self.frame().method_of.is_some_and(|c| {
            c.def.bases().iter().any(|b| {
                let q = self.resolve(b).unwrap_or_default();
                let t = helpers::dotted(b).unwrap_or_default();
                q.starts_with("pytorch_lightning")
                    || q.starts_with("lightning")
                    || q.starts_with("transformers.")
                    || t.contains("Lightning")
                    || t.ends_with("Trainer")
            })
        })
    }
}

// ----- taint (tensor-property dataflow) analysis -----

/// Per-file cache of the taint analysis: the file's summaries and one analysis per function,
/// each computed on first use.
#[derive(Default)]
struct TaintCache {
    summaries: Option<std::rc::Rc<torchvet_semantic::dataflow::Summaries>>,
    flows: FxHashMap<u32, std::rc::Rc<torchvet_semantic::dataflow::FunctionFlow>>,
    params: FxHashMap<u32, std::rc::Rc<FxHashMap<String, torchvet_semantic::dataflow::Value>>>,
}

impl<'a> Checker<'a> {
    fn taint_summaries(&mut self) -> std::rc::Rc<torchvet_semantic::dataflow::Summaries> {
        if let Some(s) = &self.taint.summaries {
            return s.clone();
        }
        let s = std::rc::Rc::new(torchvet_semantic::dataflow::Summaries::compute(
            &self.module.body,
            &self.classes,
            &self.source.text,
        ));
        self.taint.summaries = Some(s.clone());
        s
    }

    /// The tensor properties of `expr` (an expression of the function being visited, or of
    /// module-level code) at its place in statement order: probabilities, log-probabilities,
    /// graph-carrying, maybe-non-contiguous, unreduced loss, each with its producer's range,
    /// and the object it is (`nn.CrossEntropyLoss` instance...). The function is analysed once,
    /// on first use, and cached; the file's summaries likewise. See
    /// [`torchvet_semantic::dataflow`].
    pub fn taint_of(&mut self, expr: &Expr) -> torchvet_semantic::dataflow::Value {
        use torchvet_semantic::dataflow::{FlowContext, FunctionFlow};
        let summaries = self.taint_summaries();
        let last = self.frames.len() - 1;
        let local = self.frame_kinds(last);
        let outer = if last == 0 {
            None
        } else {
            Some(self.outer_kinds(last))
        };
        let method_of = self.frames[last].method_of;
        let attrs = method_of.map(|c| self.class_kinds(c.def));
        let function = self.frames[last].function;
        let key = function.map_or(u32::MAX, |f| f.range.start().to_u32());
        let params = match self.taint.params.get(&key) {
            Some(p) => p.clone(),
            None => {
                let p = std::rc::Rc::new(self.project_param_values(function));
                self.taint.params.insert(key, p.clone());
                p
            }
        };
        let kinds = KindContext {
            local: &local,
            outer: outer.as_deref(),
            attrs: attrs.as_deref(),
            scopes: &self.scopes,
            classes: &self.classes,
        };
        let cx = FlowContext {
            scopes: &self.scopes,
            classes: &self.classes,
            kinds: Some(kinds),
            summaries: Some(&summaries),
            class: method_of.map(|c| c.def.name.as_str()),
            params: (!params.is_empty()).then_some(&*params),
        };
        let flow = match self.taint.flows.get(&key) {
            Some(f) => f.clone(),
            None => {
                let f = std::rc::Rc::new(match function {
                    Some(f) => FunctionFlow::analyze(
                        &cx,
                        &f.body,
                        torchvet_semantic::dataflow::decorated_no_grad(f, &self.scopes)
                            || self.summary_says_no_grad(f),
                    ),
                    None => FunctionFlow::analyze(&cx, &self.module.body, false),
                });
                self.taint.flows.insert(key, f.clone());
                f
            }
        };
        flow.value_of(&cx, expr)
    }

    /// Does `expr` still carry an autograd graph produced inside `within` (a loop: one
    /// iteration's graph)? The producing expression and whether it is a loss (the dataflow's
    /// definite [`Prop::GraphCarrying`](torchvet_semantic::dataflow::Prop::GraphCarrying)
    /// fact). A literal-key entry of a dict (`d["loss"]`) is what the last store to it in
    /// `scope` put there ([`torchvet_semantic::entries::last_entry_store`]): logging code turns
    /// a dict of loss tensors into numbers (`for k, v in d.items(): d[k] = v.item()`).
    pub fn graph_of<'e>(
        &mut self,
        expr: &'e Expr,
        scope: &'e [ast::Stmt],
        within: ruff_text_size::TextRange,
    ) -> Option<(ruff_text_size::TextRange, bool)> {
        use torchvet_semantic::dataflow::{Prop, LOSS};
        let mut expr = expr;
        if let Expr::Subscript(s) = expr {
            if let Some(name) = torchvet_semantic::helpers::name_of(&s.value) {
                if let Some(st) = torchvet_semantic::entries::last_entry_store(
                    scope,
                    name,
                    &s.slice,
                    expr.start(),
                ) {
                    expr = st.value;
                }
            }
        }
        let v = self.taint_of(expr);
        let f = v.definite(Prop::GraphCarrying)?;
        within
            .contains_range(f.origin)
            .then(|| (f.origin, f.op == LOSS))
    }

    /// [`Checker::graph_of`] for a name that holds a plain number on some paths and a
    /// graph-carrying value on the others, by the assignments that reach it (`d_loss = 0`, then
    /// `d_loss = criterion(...)` in a branch): whenever the branch runs, the value carries its
    /// graph; the number holds nothing. `None` when any reaching binding is something else.
    pub fn graph_or_number_of(
        &mut self,
        expr: &Expr,
        scope: &'a [ast::Stmt],
        within: ruff_text_size::TextRange,
    ) -> Option<(ruff_text_size::TextRange, bool)> {
        use torchvet_semantic::reaching::{reaching, Def};
        let Expr::Name(n) = expr else { return None };
        let mut found = None;
        for d in reaching(self.scope_body(), n.id.as_str(), n.start())? {
            let Def::Value(e) = d else { return None };
            if !matches!(e, Expr::NumberLiteral(_)) {
                found = Some(self.graph_of(e, scope, within)?);
            }
        }
        found
    }

    /// The values the project model gives a function's parameters (the objects passed at its
    /// call sites: a model of a class whose forward ends in softmax, a loss instance...).
    fn project_param_values(
        &self,
        function: Option<&'a ast::StmtFunctionDef>,
    ) -> FxHashMap<String, torchvet_semantic::dataflow::Value> {
        let mut out = FxHashMap::default();
        let Some(p) = self.project() else {
            return out;
        };
        let id = match function {
            Some(f) => match p.function_at(f.range.start()) {
                Some(id) => id,
                None => return out,
            },
            None => torchvet_semantic::project::FuncId {
                file: p.file,
                index: 0,
            },
        };
        // Locals bound to objects only the model resolves (`enc, dec = load_model(path)`,
        // `model = MODELS[args.arch]()`): the dataflow does not see through these calls, so
        // it falls back on these values where it tracks nothing.
        let body: &[ast::Stmt] = match function {
            Some(f) => &f.body,
            None => &self.module.body,
        };
        for (name, r) in p.model.computed_locals(id) {
            // Where the value enters: the first assignment to the name.
            let mut at = None;
            torchvet_semantic::helpers::for_each_own_stmt(body, &mut |st| {
                if at.is_some() {
                    return;
                }
                if let ast::Stmt::Assign(a) = st {
                    let binds = |t: &ast::Expr| match t {
                        ast::Expr::Name(n) => n.id.as_str() == name,
                        ast::Expr::Tuple(tt) => tt
                            .elts
                            .iter()
                            .any(|e| matches!(e, ast::Expr::Name(n) if n.id.as_str() == name)),
                        _ => false,
                    };
                    if a.targets.iter().any(binds) {
                        at = Some(a.value.range());
                    }
                }
            });
            let Some(at) = at else { continue };
            let v = torchvet_semantic::dataflow::value_of_resolved(p, &r, at);
            if !v.is_empty() {
                out.insert(name.to_string(), v);
            }
        }
        let Some(f) = function else {
            return out;
        };
        for (i, param) in f.parameters.iter().enumerate() {
            let r = p.model.param(id, i);
            if r.class.is_some() || r.props_from.is_some() {
                let v = torchvet_semantic::dataflow::value_of_resolved(p, &r, param.range());
                if !v.is_empty() {
                    out.insert(param.name().to_string(), v);
                }
            }
        }
        out
    }
}

/// The last segment of a dotted name expression (`RuntimeError`, `torch.cuda.OutOfMemoryError`).
fn helpers_last(e: &Expr) -> Option<&str> {
    match e {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Attribute(a) => Some(a.attr.as_str()),
        _ => None,
    }
}

/// A safe fix that needs `package >= major.minor` stays safe only when the project's declared
/// (or documented) lowest version has it (`declared`); otherwise it is offered as unsafe and
/// says why.
fn unsafe_unless_declared(
    fix: crate::fix::RawFix,
    declared: bool,
    package: &str,
    major: u32,
    minor: u32,
) -> crate::fix::RawFix {
    if fix.applicability != torchvet_diagnostics::Applicability::Safe || declared {
        return fix;
    }
    crate::fix::RawFix::unsafe_edit(
        format!(
            "{} (unsafe: needs {package} >= {major}.{minor}, and the project allows an older one)",
            fix.message
        ),
        fix.edits,
    )
}

impl torchvet_semantic::grad_source::ValueSite for Checker<'_> {
    fn resolve(&self, expr: &Expr) -> Option<String> {
        Checker::resolve(self, expr)
    }

    fn kind(&mut self, expr: &Expr) -> Kind {
        self.kind_of(expr)
    }
}

#[cfg(test)]
mod tests {
    use super::reads_scalar_the_old_way;

    #[test]
    fn old_scalar_reads_are_not_dataset_items() {
        assert!(reads_scalar_the_old_way("total += loss.data[0]"));
        assert!(reads_scalar_the_old_way(
            "correct += (pred == y).sum().data[0]"
        ));
        assert!(!reads_scalar_the_old_way("img = train_dataset.data[0]"));
        assert!(!reads_scalar_the_old_way("plt.imshow(trainset.data[0])"));
        assert!(!reads_scalar_the_old_way("x = mnist_train.data[0]"));
        assert!(reads_scalar_the_old_way(
            "img = train_dataset.data[0]\nprint(loss.data[0])"
        ));
    }
}

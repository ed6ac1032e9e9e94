use super::helpers::constructs_module;
use super::model_helpers::{
    analysed_body, binds_name, indentation_at, is_optimizer_call, own_exprs, visit_exprs,
    walk_body, Place,
};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for an optimizer built from `model.parameters()` after which the name `model`
    /// is re-bound to a different model object (a new constructor call, `copy.deepcopy(...)`,
    /// `torch.load(...)`, `from_pretrained(...)`) while the optimizer keeps being used to train
    /// (`opt.step()`, `opt.zero_grad()`, or passed together with `model` to a call).
    ///
    /// ## Why is this bad?
    /// The optimizer holds references to the old model's parameter tensors. After the
    /// re-binding, `opt.step()` updates weights nobody uses any more and the new `model` never
    /// changes: training silently does nothing. Moving the model (`model = model.to(dev)`),
    /// `torch.compile(model)`, `DataParallel(model)` and `DistributedDataParallel(model)` keep the same parameters
    /// and are not reported, nor are re-bindings in a branch exclusive with the optimizer's,
    /// nor uses in a branch exclusive with the re-binding.
    /// The rule is in preview: whether the stale optimizer is really used again is only
    /// visible inside one function.
    ///
    /// ## Example
    /// ```python
    /// model = Net()
    /// opt = torch.optim.SGD(model.parameters(), lr=0.1)
    /// model = Net(pretrained=True)
    /// train(model, opt)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model = Net(pretrained=True)
    /// opt = torch.optim.SGD(model.parameters(), lr=0.1)
    /// train(model, opt)
    /// ```
    ///
    /// ## Fix safety
    /// The fix moves the optimizer statement right after the re-binding. This is unsafe: the
    /// optimizer's arguments may depend on statements in between, and code in between that
    /// used the optimizer would now run before it exists. It is only offered when both
    /// statements are one-line siblings in the same block.
    ///
    /// ## References
    /// - [torch.optim](https://pytorch.org/docs/stable/optim.html)
    /// - [pytorch/pytorch#43815](https://github.com/pytorch/pytorch/issues/43815)
    pub(crate) static OPTIMIZER_ON_STALE_MODEL = {
        name: "optimizer-on-stale-model",
        code: "TV106",
        group: Correctness,
        severity: Warning,
        title: "Optimizer built from one model's parameters, then the name is rebound to a different model object",
        autofix: Suggest,
        preview: true,
        hooks: { stmt: check_stmt },
    };
}

/// Methods that return the module itself.
const SELF_METHODS: &[&str] = &[
    "to", "cuda", "cpu", "train", "eval", "half", "float", "double",
];

/// `model.parameters()` (or named_parameters) inside the optimizer's arguments: the model's
/// dotted text.
fn model_of_params(call: &ast::ExprCall) -> Option<String> {
    let mut found = None;
    for a in call
        .arguments
        .args
        .iter()
        .chain(call.arguments.keywords.iter().map(|k| &k.value))
    {
        visit_exprs(a, &mut |x| {
            if let Expr::Call(c) = x {
                if let Some(("parameters" | "named_parameters", recv)) = helpers::method_call(c) {
                    if found.is_none() {
                        found = helpers::dotted(recv);
                    }
                }
            }
        });
    }
    found
}

/// Does `value` build a new model object (not the same parameters)?
fn new_model(checker: &Checker, value: &Expr) -> Option<&'static str> {
    let mut e = value;
    while let Expr::Call(c) = e {
        match helpers::method_call(c) {
            Some((m, recv)) if SELF_METHODS.contains(&m) => e = recv,
            _ => break,
        }
    }
    let Expr::Call(c) = e else { return None };
    if constructs_module(checker, c) {
        return Some("a newly constructed model");
    }
    let q = checker.resolve(&c.func);
    match q.as_deref() {
        Some("copy.deepcopy") => Some("a deep copy"),
        Some("torch.load" | "torch.jit.load") => Some("a model loaded from disk"),
        _ => match helpers::method_call(c) {
            Some(("from_pretrained", _)) => Some("a model loaded with from_pretrained"),
            _ => None,
        },
    }
}

struct Opt<'a> {
    stmt: &'a Stmt,
    name: String,
    model: String,
    place: Place<'a>,
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Some(body) = analysed_body(checker, stmt) else {
        return;
    };
    if !super::model_helpers::body_mentions(checker, body, "parameters(") {
        return;
    }
    let mut stmts: Vec<(&Stmt, Place)> = Vec::new();
    walk_body(body, &mut |s, p| stmts.push((s, p.clone())));
    let mut opts = Vec::new();
    for (s, place) in &stmts {
        let Stmt::Assign(a) = s else { continue };
        let [t] = &a.targets[..] else {
            continue;
        };
        let Some(name) = helpers::dotted(t) else {
            continue;
        };
        let Expr::Call(c) = &*a.value else { continue };
        if !is_optimizer_call(checker, c) {
            continue;
        }
        if let Some(model) = model_of_params(c) {
            opts.push(Opt {
                stmt: s,
                name,
                model,
                place: place.clone(),
            });
        }
    }
    for opt in opts {
        analyse(checker, &stmts, &opt);
    }
}

fn uses_optimizer(stmt: &Stmt, opt: &str, model: &str) -> Option<TextRange> {
    let mut hit = None;
    for e in own_exprs(stmt) {
        visit_exprs(e, &mut |x| {
            let Expr::Call(c) = x else { return };
            if hit.is_some() {
                return;
            }
            if let Some(("step" | "zero_grad", recv)) = helpers::method_call(c) {
                if helpers::dotted(recv).as_deref() == Some(opt) {
                    hit = Some(c.range());
                    return;
                }
            }
            let args: Vec<&Expr> = c
                .arguments
                .args
                .iter()
                .chain(c.arguments.keywords.iter().map(|k| &k.value))
                .collect();
            let passes_opt = args
                .iter()
                .any(|a| helpers::dotted(a).as_deref() == Some(opt));
            let passes_model = args
                .iter()
                .any(|a| helpers::dotted(a).as_deref() == Some(model));
            if passes_opt && passes_model {
                hit = Some(c.range());
            }
        });
    }
    hit
}

fn analyse(checker: &mut Checker, stmts: &[(&Stmt, Place)], opt: &Opt) {
    let after = stmts
        .iter()
        .skip_while(|(s, _)| s.range() != opt.stmt.range())
        .skip(1);
    let mut rebind: Option<(&Stmt, &Place, &'static str)> = None;
    for (s, place) in after {
        match rebind {
            None => {
                if rebinds(s, &opt.name) {
                    return;
                }
                let Stmt::Assign(a) = s else { continue };
                let [t] = &a.targets[..] else { continue };
                if helpers::dotted(t).as_deref() != Some(opt.model.as_str()) {
                    continue;
                }
                if opt.place.exclusive_with(place) {
                    continue;
                }
                // A wrapper of the same module (`nn.DataParallel(model)`, itself a module
                // class) keeps its parameters.
                if same_params(checker, &a.value, &opt.model) {
                    continue;
                }
                match new_model(checker, &a.value) {
                    Some(what) => rebind = Some((s, place, what)),
                    None => {
                        // Re-bound to something we cannot judge (a wrapper, a helper): stop.
                        if !same_params(checker, &a.value, &opt.model) {
                            return;
                        }
                    }
                }
            }
            Some((r, rplace, what)) => {
                if rebinds(s, &opt.name) {
                    return;
                }
                if let Some(use_range) = uses_optimizer(s, &opt.name, &opt.model) {
                    // A use in a branch exclusive with the re-binding (`if fail: model =
                    // random_model() else: train(model, optimizer)`) never sees the new model.
                    if rplace.exclusive_with(place) {
                        continue;
                    }
                    let siblings = rplace.arms == opt.place.arms
                        && rplace.loops.len() == opt.place.loops.len()
                        && rplace
                            .loops
                            .iter()
                            .zip(&opt.place.loops)
                            .all(|(a, b)| a.range() == b.range());
                    report(checker, opt, r, what, use_range, siblings);
                    return;
                }
            }
        }
    }
}

/// `model.to(dev)`, `torch.compile(model)`, `DDP(model, ...)`: the same parameters.
fn same_params(checker: &Checker, value: &Expr, model: &str) -> bool {
    let mut e = value;
    while let Expr::Call(c) = e {
        if let Some((m, recv)) = helpers::method_call(c) {
            if SELF_METHODS.contains(&m) {
                e = recv;
                continue;
            }
        }
        let wrapper = checker.resolves_to(
            &c.func,
            &[
                "torch.compile",
                "torch.nn.parallel.DistributedDataParallel",
                "torch.nn.DataParallel",
                "torch.nn.parallel.DataParallel",
            ],
        );
        if wrapper {
            match c.arguments.args.first() {
                Some(a) => e = a,
                None => return false,
            }
            continue;
        }
        return false;
    }
    helpers::dotted(e).as_deref() == Some(model)
}

fn report(
    checker: &mut Checker,
    opt: &Opt,
    rebind: &Stmt,
    what: &str,
    use_range: TextRange,
    siblings: bool,
) {
    let fix = if siblings {
        move_fix(checker, opt.stmt, rebind)
    } else {
        None
    };
    let use_text = checker.text(use_range);
    let use_text = if use_text.len() > 40 {
        format!("{}.step()", opt.name)
    } else {
        use_text.to_string()
    };
    let model = &opt.model;
    let name = &opt.name;
    let d = checker.report(
        rebind.range(),
        format!(
            "`{model}` is re-bound to {what} after `{name}` was built from the old model's parameters: `{name}` still updates the old weights (used in `{use_text}`) and the new `{model}` never trains"
        ),
    );
    d.add_related(
        opt.stmt.range(),
        format!("`{name}` is built from the old `{model}` here"),
    );
    d.add_related(use_range, format!("`{name}` is used for training here"));
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

/// The whole source lines of a one-line statement that is alone on its line(s).
fn own_lines(checker: &Checker, stmt: &Stmt) -> Option<(TextRange, String)> {
    let (line_start, indent) = indentation_at(checker, stmt.start())?;
    let text = checker.source.text.as_ref();
    let end = stmt.end().to_usize();
    let rest = text.get(end..)?;
    let nl = rest.find('\n')?;
    let tail = rest.get(..nl)?;
    if !tail.trim().is_empty() && !tail.trim_start().starts_with('#') {
        return None;
    }
    let line_end = TextSize::try_from(end + nl + 1).ok()?;
    Some((TextRange::new(line_start, line_end), indent))
}

fn move_fix(checker: &Checker, opt_stmt: &Stmt, rebind: &Stmt) -> Option<RawFix> {
    let (opt_lines, opt_indent) = own_lines(checker, opt_stmt)?;
    let (rebind_lines, rebind_indent) = own_lines(checker, rebind)?;
    if opt_indent != rebind_indent || checker.text(opt_stmt.range()).contains('\n') {
        return None;
    }
    let moved = checker.text(opt_lines).to_string();
    Some(RawFix::unsafe_edit(
        "Build the optimizer after the final model object",
        vec![
            RawEdit::delete(opt_lines),
            RawEdit::insert(rebind_lines.end(), moved),
        ],
    ))
}

/// Does the statement bind `dotted` (a name, or `self.x` by assignment)?
fn rebinds(stmt: &Stmt, dotted: &str) -> bool {
    if !dotted.contains('.') {
        return binds_name(stmt, dotted);
    }
    match stmt {
        Stmt::Assign(a) => a
            .targets
            .iter()
            .any(|t| helpers::dotted(t).as_deref() == Some(dotted)),
        Stmt::AnnAssign(a) => helpers::dotted(&a.target).as_deref() == Some(dotted),
        _ => false,
    }
}

use super::model_helpers::{
    analysed_body, binds_name, builtin, is_optimizer_call, own_exprs, suite_binds, visit_exprs,
    walk_body, Place,
};
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;

crate::declare_rule! {
    /// ## What it does
    /// Checks for a one-shot iterator over a model's parameters (`model.parameters()`,
    /// `model.named_parameters()`, `filter(..., model.parameters())`, a generator expression
    /// over them, `itertools.chain(...)`) stored in a name and then consumed twice: by two
    /// optimizers, by a count and then an optimizer, or by `clip_grad_norm_` inside a loop.
    ///
    /// ## Why is this bad?
    /// `parameters()` returns a generator. The first consumer exhausts it and every later one
    /// sees an empty sequence: an optimizer built from it raises "optimizer got an empty
    /// parameter list", and `clip_grad_norm_(params, ...)` in a training loop clips the
    /// gradients on the first step only and silently does nothing afterwards. Consumers in
    /// different branches of an `if` (or after a branch that returns) are not reported.
    ///
    /// ## Example
    /// ```python
    /// params = filter(lambda p: p.requires_grad, model.parameters())
    /// print(sum(p.numel() for p in params))
    /// opt = torch.optim.Adam(params)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// params = list(filter(lambda p: p.requires_grad, model.parameters()))
    /// print(sum(p.numel() for p in params))
    /// opt = torch.optim.Adam(params)
    /// ```
    ///
    /// ## Fix safety
    /// The fix materialises the iterator once with `list(...)` (a generator expression
    /// becomes a list comprehension). The list holds the same parameter objects in the same
    /// order, so every consumer sees what the first one saw: the fix is safe. No fix is
    /// offered when `list` is shadowed.
    ///
    /// ## References
    /// - [nn.Module.parameters](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.parameters)
    /// - [pytorch/pytorch#47594](https://github.com/pytorch/pytorch/issues/47594)
    /// - [AdasOptimizer#2](https://github.com/YanaiEliyahu/AdasOptimizer/issues/2)
    pub(crate) static OPTIMIZER_PARAM_GENERATOR_REUSED = {
        name: "optimizer-param-generator-reused",
        code: "TV077",
        group: Correctness,
        severity: Critical,
        title: "A parameters() generator / filter() iterator is consumed twice (the second consumer gets an empty list)",
        autofix: Yes,
        hooks: { stmt: check_stmt },
    };
}

/// Builtins that iterate their (positional) arguments to the end.
const CONSUMING_BUILTINS: &[&str] = &[
    "list",
    "tuple",
    "set",
    "frozenset",
    "sorted",
    "sum",
    "any",
    "all",
    "max",
    "min",
    "dict",
    "enumerate",
    "zip",
    "map",
    "filter",
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Consumer {
    Optimizer,
    Clip,
    Other,
}

struct Site<'a> {
    /// The reported range (the consuming call, or the name).
    range: TextRange,
    /// Text naming the consumer.
    what: String,
    consumer: Consumer,
    place: Place<'a>,
    /// Runs again on every iteration of a loop that does not re-create the iterator.
    repeated: bool,
}

/// Is `expr` a one-shot iterator over parameters?
fn param_source(checker: &mut Checker, expr: &Expr) -> bool {
    match expr {
        Expr::Call(c) => {
            if let Some((m, recv)) = helpers::method_call(c) {
                if matches!(m, "parameters" | "named_parameters") {
                    return matches!(checker.kind_of(recv), Kind::Module | Kind::Unknown)
                        && checker.resolve(recv).is_none();
                }
            }
            let is_builtin_iter = match &*c.func {
                Expr::Name(n) => {
                    matches!(n.id.as_str(), "filter" | "map") && builtin(checker, n.id.as_str())
                }
                _ => false,
            };
            if is_builtin_iter {
                return c
                    .arguments
                    .args
                    .get(1)
                    .is_some_and(|a| param_source(checker, a));
            }
            if checker.resolves_to(&c.func, &["itertools.chain"]) {
                return !c.arguments.args.is_empty()
                    && c.arguments.args.iter().all(|a| param_source(checker, a));
            }
            false
        }
        Expr::Generator(g) => g
            .generators
            .first()
            .is_some_and(|gen| param_source(checker, &gen.iter)),
        _ => false,
    }
}

fn consumer_of(checker: &Checker, call: &ast::ExprCall) -> Option<(Consumer, bool)> {
    // (kind, whether keyword arguments `params=`/`parameters=` count)
    if let Expr::Name(n) = &*call.func {
        let id = n.id.as_str();
        if CONSUMING_BUILTINS.contains(&id) && builtin(checker, id) {
            return Some((Consumer::Other, false));
        }
    }
    let q = checker
        .resolve(&call.func)
        .or_else(|| helpers::dotted(&call.func))?;
    let last = helpers::last_segment(&q);
    if matches!(
        last,
        "clip_grad_norm_" | "clip_grad_value_" | "clip_grad_norm"
    ) {
        return Some((Consumer::Clip, true));
    }
    if is_optimizer_call(checker, call) {
        return Some((Consumer::Optimizer, true));
    }
    if matches!(
        q.as_str(),
        "torch.nn.utils.parameters_to_vector" | "torch.nn.ParameterList" | "itertools.chain"
    ) {
        return Some((Consumer::Other, false));
    }
    None
}

/// The consumptions of `name` in one statement's own expressions.
fn sites_in<'a>(
    checker: &Checker,
    stmt: &'a Stmt,
    name: &str,
    place: &Place<'a>,
    out: &mut Vec<Site<'a>>,
) {
    let is_name = |e: &Expr| match e {
        Expr::Name(n) => n.id.as_str() == name,
        Expr::Starred(s) => helpers::name_of(&s.value) == Some(name),
        _ => false,
    };
    let mut push = |range: TextRange, what: String, consumer: Consumer| {
        out.push(Site {
            range,
            what,
            consumer,
            place: place.clone(),
            repeated: false,
        });
    };
    if let Stmt::For(f) = stmt {
        if is_name(&f.iter) {
            push(
                f.iter.range(),
                "the `for` loop".to_string(),
                Consumer::Other,
            );
        }
    }
    for e in own_exprs(stmt) {
        visit_exprs(e, &mut |x| match x {
            Expr::Call(c) => {
                let Some((consumer, keywords)) = consumer_of(checker, c) else {
                    return;
                };
                let positional = c.arguments.args.iter().any(&is_name);
                let keyword = keywords
                    && c.arguments.keywords.iter().any(|k| {
                        matches!(
                            k.arg.as_ref().map(ast::Identifier::as_str),
                            Some("params" | "parameters")
                        ) && is_name(&k.value)
                    });
                if positional || keyword {
                    let what = format!("`{}(...)`", checker.text(c.func.range()));
                    push(c.range(), what, consumer);
                }
            }
            Expr::Generator(ast::ExprGenerator { generators, .. })
            | Expr::ListComp(ast::ExprListComp { generators, .. })
            | Expr::SetComp(ast::ExprSetComp { generators, .. })
            | Expr::DictComp(ast::ExprDictComp { generators, .. }) => {
                for g in generators {
                    if is_name(&g.iter) {
                        push(
                            g.iter.range(),
                            "a comprehension".to_string(),
                            Consumer::Other,
                        );
                    }
                }
            }
            Expr::List(l)
                if l.elts
                    .iter()
                    .any(|e| matches!(e, Expr::Starred(_)) && is_name(e)) =>
            {
                push(
                    l.range(),
                    "an unpacking `[*...]`".to_string(),
                    Consumer::Other,
                );
            }
            _ => {}
        });
    }
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Some(body) = analysed_body(checker, stmt) else {
        return;
    };
    if !super::model_helpers::body_mentions(checker, body, "parameters(") {
        return;
    }
    // Candidates: `name = <one-shot parameter iterator>`.
    let mut candidates: Vec<(&ast::StmtAssign, Place)> = Vec::new();
    let mut assigns = Vec::new();
    walk_body(body, &mut |s, place| {
        if let Stmt::Assign(a) = s {
            if let [Expr::Name(_)] = &a.targets[..] {
                if matches!(&*a.value, Expr::Call(_) | Expr::Generator(_)) {
                    assigns.push((a, place.clone()));
                }
            }
        }
    });
    for (a, place) in assigns {
        if param_source(checker, &a.value) {
            candidates.push((a, place));
        }
    }
    for (assign, assign_place) in candidates {
        analyse(checker, body, assign, &assign_place);
    }
}

fn analyse(checker: &mut Checker, body: &[Stmt], assign: &ast::StmtAssign, assign_place: &Place) {
    let Some(name) = helpers::name_of(&assign.targets[0]) else {
        return;
    };
    let mut sites: Vec<Site> = Vec::new();
    let mut done = false;
    let start = assign.end();
    let checker_ref: &Checker = checker;
    walk_body(body, &mut |s, place| {
        if done || s.start() < start {
            return;
        }
        sites_in(checker_ref, s, name, place, &mut sites);
        if binds_name(s, name) {
            done = true;
        }
    });
    // A consumer inside a loop that does not contain the assignment (and never re-binds the
    // name) runs again on the next iteration.
    for site in &mut sites {
        site.repeated = site
            .place
            .loops
            .iter()
            .any(|l| !assign_place.in_loop(l) && !loop_binds(l, name));
    }
    let Some(first) = sites.first() else {
        return;
    };
    let (second, repeated) = if first.repeated {
        (first, true)
    } else {
        match sites[1..]
            .iter()
            .find(|s| !first.place.exclusive_with(&s.place))
        {
            Some(s) => (s, false),
            None => return,
        }
    };
    let source = checker.text(assign.value.range());
    let source = if source.len() > 60 {
        "model.parameters()"
    } else {
        source
    };
    let effect = match second.consumer {
        Consumer::Optimizer => {
            "receives an empty parameter list (ValueError: optimizer got an empty parameter list)"
        }
        Consumer::Clip => "sees no parameters and clips nothing",
        Consumer::Other => "sees an empty sequence",
    };
    let message = if repeated {
        format!(
            "`{name}` is a one-shot iterator over `{source}`, but {} consumes it on every loop iteration: from the second iteration on it {effect}",
            second.what
        )
    } else {
        let later = if second.what == first.what {
            second.what.replacen("a ", "the next ", 1)
        } else {
            second.what.clone()
        };
        format!(
            "`{name}` is a one-shot iterator over `{source}`: {} already exhausted it, so {later} {effect}",
            first.what
        )
    };
    let fix = list_fix(checker, assign);
    let (second_range, first_range, repeat) = (second.range, first.range, repeated);
    let d = checker.report(second_range, message);
    d.add_related(
        assign.range(),
        format!("`{name}` is created here as a generator"),
    );
    if !repeat {
        d.add_related(first_range, "first consumed here");
    }
    if let Some(fix) = fix {
        d.set_fix(fix);
    }
}

fn loop_binds(l: &Stmt, name: &str) -> bool {
    match l {
        Stmt::For(f) => binds_name(l, name) || suite_binds(&f.body, name),
        Stmt::While(w) => suite_binds(&w.body, name),
        _ => false,
    }
}

fn list_fix(checker: &Checker, assign: &ast::StmtAssign) -> Option<RawFix> {
    let value = &*assign.value;
    let msg = "Materialise the parameters once with `list(...)`";
    if let Expr::Generator(g) = value {
        if g.parenthesized {
            let r = g.range();
            return Some(RawFix::safe(
                msg,
                vec![
                    RawEdit::replace(TextRange::at(r.start(), TextSize::new(1)), "["),
                    RawEdit::replace(TextRange::new(r.end() - TextSize::new(1), r.end()), "]"),
                ],
            ));
        }
        return None;
    }
    if !builtin(checker, "list") {
        return None;
    }
    Some(RawFix::safe(
        msg,
        vec![
            RawEdit::insert(value.start(), "list("),
            RawEdit::insert(value.end(), ")"),
        ],
    ))
}

use super::rank_helpers::{
    enclosing_rank_guard, for_each_call, is_rank_test, polarity, Polarity, RankGuard,
};
use crate::checker::Checker;
use ruff_python_ast::{self as ast, Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `torch.distributed` collectives (`barrier`, `all_reduce`, `broadcast`,
    /// `all_gather`, `reduce`, `scatter`, `gather`, `new_group`, ...), Accelerate's
    /// `wait_for_everyone()`, and calls of same-file functions that run one, reached only on
    /// some ranks: inside `if rank == 0:` / `if is_main_process():` (or its `else`), or after
    /// an early `if rank != 0: return`.
    ///
    /// ## Why is this bad?
    /// A collective completes only when every rank of the group enters it. When only rank 0
    /// reaches `dist.barrier()`, rank 0 waits for the others forever and they, in turn, block
    /// at their next collective: the job hangs without an error until the NCCL timeout (30
    /// minutes by default) kills it.
    ///
    /// Rank-0-only work followed by a barrier that every rank reaches is correct, and so are
    /// the balanced forms: a collective in every branch of the rank test
    /// (`if rank == 0: dist.gather(t, lst) else: dist.gather(t)`), the
    /// "`if rank != 0: barrier()` ... `if rank == 0: barrier()`" pair of
    /// `torch_distributed_zero_first`, and collectives on an explicit `group=`. These stay
    /// silent. The rule is in preview: it recognises rank tests by name (`rank`, `local_rank`,
    /// `is_main_process`, ...) and follows one level of same-file calls.
    ///
    /// ## Example
    /// ```python
    /// if rank == 0:
    ///     download_weights()
    ///     dist.barrier()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// if rank == 0:
    ///     download_weights()
    /// dist.barrier()
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: move the collective out of the rank branch so that every rank calls
    /// it, in the same order.
    ///
    /// ## References
    /// - [torch.distributed collectives](https://pytorch.org/docs/stable/distributed.html#collective-functions)
    /// - [transformers-bloom-inference#40](https://github.com/huggingface/transformers-bloom-inference/pull/40)
    /// - [pytorch/tutorials#2049](https://github.com/pytorch/tutorials/pull/2049)
    pub(crate) static COLLECTIVE_IN_RANK_CONDITIONAL = {
        name: "collective-in-rank-conditional",
        code: "TV028",
        group: Distributed,
        severity: Critical,
        title: "Collective (barrier/all_reduce/broadcast) reachable only on some ranks: deadlock",
        autofix: No,
        preview: true,
        hooks: { call: check_call, end: clear },
    };
}

const COLLECTIVES: &[&str] = &[
    "barrier",
    "monitored_barrier",
    "all_reduce",
    "all_gather",
    "all_gather_object",
    "all_gather_into_tensor",
    "all_to_all",
    "all_to_all_single",
    "broadcast",
    "broadcast_object_list",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "scatter",
    "scatter_object_list",
    "gather",
    "gather_object",
    "new_group",
];

/// The collective a resolved callee name stands for.
fn collective_of(q: &str) -> Option<&str> {
    let last = helpers::last_segment(q);
    let module = q.strip_suffix(last)?.strip_suffix('.')?;
    (matches!(
        module,
        "torch.distributed" | "torch.distributed.distributed_c10d"
    ) && COLLECTIVES.contains(&last))
    .then_some(last)
}

/// Per-file state.
#[derive(Default)]
struct State {
    /// Whether the file may contain collectives at all (computed on the first call).
    relevant: Option<bool>,
    /// Same-file functions (by name; methods as `self.name`) that run a collective directly:
    /// the collective's name and call range.
    summaries: Option<FxHashMap<String, (String, TextRange)>>,
    /// Per function (by start offset): the `if` statements (by start) with a rank test whose
    /// branches run a collective.
    guarded_ifs: FxHashMap<TextSize, Vec<(TextSize, Polarity)>>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// What a call does, collective-wise: the collective's name and where it runs (for a call of
/// a summarised function, inside that function).
fn classify(
    checker: &Checker,
    summaries: &FxHashMap<String, (String, TextRange)>,
    call: &ExprCall,
    name: Option<&str>,
) -> Option<(String, Option<TextRange>)> {
    let resolved;
    let q = match name {
        Some(q) => Some(q),
        None => {
            resolved = checker.resolve(&call.func);
            resolved.as_deref()
        }
    };
    if let Some(q) = q {
        return collective_of(q).map(|c| (c.to_string(), None));
    }
    match &*call.func {
        Expr::Attribute(a) if a.attr.as_str() == "wait_for_everyone" => {
            Some(("wait_for_everyone".to_string(), None))
        }
        Expr::Name(n) => summaries
            .get(n.id.as_str())
            .map(|(c, r)| (c.clone(), Some(*r))),
        Expr::Attribute(a) if helpers::name_of(&a.value) == Some("self") => summaries
            .get(&format!("self.{}", a.attr))
            .map(|(c, r)| (c.clone(), Some(*r))),
        _ => None,
    }
}

/// The first direct collective of a function body.
fn direct_collective(checker: &Checker, body: &[Stmt]) -> Option<(String, TextRange)> {
    let mut found = None;
    for_each_call(body, &mut |c| {
        if found.is_some() {
            return;
        }
        let name = match checker.resolve(&c.func) {
            Some(q) => collective_of(&q).map(str::to_string),
            None => match &*c.func {
                Expr::Attribute(a) if a.attr.as_str() == "wait_for_everyone" => {
                    Some("wait_for_everyone".to_string())
                }
                _ => None,
            },
        };
        if let Some(n) = name {
            if !has_group(c) {
                found = Some((n, c.range()));
            }
        }
    });
    found
}

fn summaries(checker: &Checker) -> FxHashMap<String, (String, TextRange)> {
    let mut map = FxHashMap::default();
    for stmt in &checker.module().body {
        match stmt {
            Stmt::FunctionDef(f) => {
                if let Some(c) = direct_collective(checker, &f.body) {
                    map.insert(f.name.to_string(), c);
                }
            }
            Stmt::ClassDef(class) => {
                for s in &class.body {
                    if let Stmt::FunctionDef(f) = s {
                        if let Some(c) = direct_collective(checker, &f.body) {
                            map.insert(format!("self.{}", f.name), c);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    map
}

/// A collective on an explicit process group only needs that group's ranks.
fn has_group(call: &ExprCall) -> bool {
    helpers::keyword(call, "group").is_some_and(|g| !g.is_none_literal_expr())
        || helpers::keyword(call, "process_group").is_some()
}

/// Does any statement of these blocks run a collective (directly or through a summary)?
fn blocks_run_collective(
    checker: &Checker,
    summaries: &FxHashMap<String, (String, TextRange)>,
    blocks: &[&[Stmt]],
) -> bool {
    let mut found = false;
    for b in blocks {
        for_each_call(b, &mut |c| {
            found = found || classify(checker, summaries, c, None).is_some();
        });
    }
    found
}

/// The polarity of each branch of a rank-test `if`: the `if` body selects what its test
/// selects, a final `else` the opposite, an `elif` something unknown.
fn branch_polarities(i: &ast::StmtIf) -> Vec<(&[Stmt], Polarity)> {
    let first = polarity(&i.test);
    let mut v: Vec<(&[Stmt], Polarity)> = vec![(&i.body, first)];
    let n = i.elif_else_clauses.len();
    for c in &i.elif_else_clauses {
        let p = if c.test.is_none() && n == 1 {
            first.negate()
        } else {
            Polarity::Unknown
        };
        v.push((&c.body, p));
    }
    v
}

/// The branches of rank-test `if` statements of a function body that run a collective: the
/// `if` (by start) and the branch's polarity.
fn rank_ifs_with_collectives(
    checker: &Checker,
    summaries: &FxHashMap<String, (String, TextRange)>,
    body: &[Stmt],
    out: &mut Vec<(TextSize, Polarity)>,
) {
    for stmt in body {
        match stmt {
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
            Stmt::If(i)
                if is_rank_test(&i.test)
                    || i.elif_else_clauses
                        .iter()
                        .filter_map(|c| c.test.as_ref())
                        .any(is_rank_test) =>
            {
                for (b, p) in branch_polarities(i) {
                    if blocks_run_collective(checker, summaries, &[b]) {
                        out.push((i.start(), p));
                    }
                }
            }
            s => {
                for b in super::rank_helpers::child_blocks(s) {
                    rank_ifs_with_collectives(checker, summaries, b, out);
                }
            }
        }
    }
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let relevant = STATE.with_borrow_mut(|s| {
        *s.relevant.get_or_insert_with(|| {
            let t = checker.source.text.as_bytes();
            memchr::memmem::find(t, b"distributed").is_some()
                || memchr::memmem::find(t, b"wait_for_everyone").is_some()
        })
    });
    if !relevant {
        return;
    }
    // Cheap shape test before anything else: only names and attributes can be collectives.
    if !matches!(&*call.func, Expr::Name(_) | Expr::Attribute(_)) {
        return;
    }
    let found = STATE.with_borrow_mut(|s| {
        let sums = s.summaries.get_or_insert_with(|| summaries(checker));
        classify(checker, sums, call, name)
    });
    let Some((collective, inner)) = found else {
        return;
    };
    if inner.is_none() && has_group(call) {
        return;
    }
    let Some(guard) = enclosing_rank_guard(checker) else {
        return;
    };
    let sums = STATE.with_borrow(|s| s.summaries.clone().unwrap_or_default());
    let if_stmt = guard.stmt();
    // Balanced: another branch of the same rank test (or the early-exit branch) runs a
    // collective too.
    let other: Vec<&[Stmt]> = match guard {
        RankGuard::Branch(i) => {
            let mut all: Vec<&[Stmt]> = vec![&i.body];
            all.extend(i.elif_else_clauses.iter().map(|c| c.body.as_slice()));
            all.into_iter()
                .filter(|b| !b.iter().any(|s| s.range().contains_range(call.range())))
                .collect()
        }
        RankGuard::EarlyExit(i) => vec![&i.body],
    };
    let mut other = other;
    // `if rank != 0: barrier(); return` pairs with the code after the `if`.
    if let RankGuard::Branch(i) = guard {
        let returns = i
            .body
            .iter()
            .any(|s| s.range().contains_range(call.range()))
            && matches!(i.body.last(), Some(Stmt::Return(_)));
        if returns && i.elif_else_clauses.is_empty() {
            other.push(following_siblings(checker, i.start()));
        }
    }
    if blocks_run_collective(checker, &sums, &other)
        || mentions_nested_collective_fn(checker, &other)
    {
        return;
    }
    // Balanced across statements: `if rank != 0: barrier()` ... `if rank == 0: barrier()`.
    let (frame_start, body): (TextSize, &[Stmt]) = match checker.function() {
        Some(f) => (f.start(), &f.body),
        None => (TextSize::new(0), &checker.module().body),
    };
    let ifs = STATE.with_borrow(|s| s.guarded_ifs.get(&frame_start).cloned());
    let ifs = ifs.unwrap_or_else(|| {
        let mut v = Vec::new();
        rank_ifs_with_collectives(checker, &sums, body, &mut v);
        STATE.with_borrow_mut(|s| s.guarded_ifs.insert(frame_start, v.clone()));
        v
    });
    if let RankGuard::Branch(i) = guard {
        let mine = branch_polarities(i)
            .into_iter()
            .find(|(b, _)| b.iter().any(|s| s.range().contains_range(call.range())))
            .map_or(Polarity::Unknown, |(_, p)| p);
        let paired = ifs.iter().any(|&(start, p)| {
            start != if_stmt.start()
                && (p != mine || p == Polarity::Unknown || mine == Polarity::Unknown)
        });
        if paired {
            return;
        }
    }
    report(checker, call, &collective, inner, guard);
}

/// The statements after the statement starting at `start`, in the block holding it.
fn following_siblings<'a>(checker: &Checker<'a>, start: TextSize) -> &'a [Stmt] {
    let stack = checker.stmt_stack();
    let Some(k) = stack.iter().position(|s| s.start() == start) else {
        return &[];
    };
    let blocks: Vec<&'a [Stmt]> = match k {
        0 => vec![&checker.module().body],
        _ => super::rank_helpers::child_blocks(stack[k - 1]),
    };
    for b in blocks {
        if let Some(pos) = b.iter().position(|s| s.start() == start) {
            return &b[pos + 1..];
        }
    }
    &[]
}

/// Do these blocks mention (call or pass along) a function defined inside the current
/// function that runs a collective (`study.optimize(_objective)`)?
fn mentions_nested_collective_fn(checker: &Checker, blocks: &[&[Stmt]]) -> bool {
    use ruff_python_ast::visitor::{self, Visitor};
    let Some(func) = checker.function() else {
        return false;
    };
    let mut names: Vec<&str> = Vec::new();
    fn collect<'b>(checker: &Checker, body: &'b [Stmt], names: &mut Vec<&'b str>) {
        for stmt in body {
            if let Stmt::FunctionDef(f) = stmt {
                if direct_collective(checker, &f.body).is_some() {
                    names.push(f.name.as_str());
                }
            }
            for b in super::rank_helpers::child_blocks(stmt) {
                collect(checker, b, names);
            }
        }
    }
    collect(checker, &func.body, &mut names);
    if names.is_empty() {
        return false;
    }
    struct V<'n> {
        names: &'n [&'n str],
        found: bool,
    }
    impl<'x> Visitor<'x> for V<'_> {
        fn visit_expr(&mut self, expr: &'x Expr) {
            if let Expr::Name(n) = expr {
                self.found |= self.names.contains(&n.id.as_str());
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut v = V {
        names: &names,
        found: false,
    };
    for b in blocks {
        v.visit_body(b);
    }
    v.found
}

fn report(
    checker: &mut Checker,
    call: &ExprCall,
    collective: &str,
    inner: Option<TextRange>,
    guard: RankGuard,
) {
    let test = checker.text(guard.test_range());
    let test = if test.len() <= 60 && !test.contains('\n') {
        test.to_string()
    } else {
        "the rank test".to_string()
    };
    let callee = checker.text(call.func.range());
    let what = match inner {
        None => format!("`{callee}()`"),
        Some(_) => format!("`{callee}()` calls `{collective}()` and"),
    };
    let message = match guard {
        RankGuard::Branch(_) => format!(
            "{what} runs only on the ranks that pass `{test}`: the other ranks never join this `{collective}`, so the job hangs here until the NCCL timeout"
        ),
        RankGuard::EarlyExit(_) => format!(
            "{what} runs after the early return under `{test}`: the ranks that returned never join this `{collective}`, so the job hangs here until the NCCL timeout"
        ),
    };
    let d = checker.report(call.range(), message);
    d.add_related(guard.test_range(), "the rank test that splits the ranks");
    if let Some(r) = inner {
        d.add_related(r, format!("the `{collective}` inside `{callee}`"));
    }
}

fn clear(_checker: &mut Checker) {
    STATE.with_borrow_mut(|s| *s = State::default());
}

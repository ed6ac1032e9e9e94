//! Rank-conditional region facts shared by the `distributed` rules (and the data-loading /
//! performance rules of the same helper).
//!
//! A *rank test* is an `if` condition whose value differs between the processes of a
//! distributed job: `rank == 0`, `dist.get_rank() == 0`, `local_rank in (-1, 0)`,
//! `is_main_process()`, `accelerator.is_main_process`, `args.rank % ngpus == 0`,
//! `int(os.environ["RANK"]) == 0`, `not trainer.is_global_zero`. Code in any branch of such an
//! `if`, and code after an early `if rank != 0: return` in the same function, runs on some
//! ranks only.
//!
//! Promotion candidate: the checker could keep this as a region counter (like `no_grad`)
//! instead of the rules recomputing it from the statement stack.
use crate::checker::Checker;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers;

/// Names that hold a process's rank (`rank`, `args.local_rank`, `self.global_rank`).
const RANK_NAMES: &[&str] = &[
    "rank",
    "local_rank",
    "global_rank",
    "world_rank",
    "node_rank",
    "rank_id",
    "rank_idx",
    "proc_rank",
    "process_rank",
    "my_rank",
    "dist_rank",
    "ddp_rank",
    "ddp_local_rank",
    "gpu_rank",
    "cur_rank",
    "current_rank",
    "local_rank_id",
    "process_index",
    "local_process_index",
    "_rank",
    "_local_rank",
    "_global_rank",
];

/// Functions returning the rank (`dist.get_rank()`, `xm.get_ordinal()`).
const RANK_FUNCTIONS: &[&str] = &[
    "get_rank",
    "get_local_rank",
    "get_global_rank",
    "get_world_rank",
    "get_node_rank",
    "get_process_rank",
    "get_ordinal",
    "get_local_ordinal",
];

/// Predicates (attributes or functions) that are true on the main process only.
const MAIN_PREDICATES: &[&str] = &[
    "is_main_process",
    "is_local_main_process",
    "is_main",
    "main_process",
    "is_master",
    "master_process",
    "is_master_process",
    "is_master_ordinal",
    "is_rank_zero",
    "is_rank_0",
    "rank_zero",
    "is_global_zero",
    "is_local_zero",
    "is_world_process_zero",
    "is_local_process_zero",
    "is_main_rank",
    "is_main_worker",
    "is_primary",
    "is_chief",
    "is_first_worker",
];

/// Environment variables holding a rank.
const RANK_ENV: &[&str] = &[
    "RANK",
    "LOCAL_RANK",
    "GLOBAL_RANK",
    "NODE_RANK",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "PMI_RANK",
];

/// The last identifier of a name or attribute chain (`args.local_rank` -> `local_rank`).
fn last_ident(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Attribute(a) => Some(a.attr.as_str()),
        _ => None,
    }
}

/// Is `id` a name that holds a rank (`rank`, `local_rank`, and the module-level constants
/// `RANK`, `LOCAL_RANK` that scripts read from the environment)?
fn is_rank_name(id: &str) -> bool {
    RANK_NAMES.contains(&id)
        || (id.bytes().any(|b| b.is_ascii_uppercase())
            && RANK_NAMES.iter().any(|n| n.eq_ignore_ascii_case(id)))
}

/// Does `expr` evaluate to the rank of the process?
pub(crate) fn is_rank_value(expr: &Expr) -> bool {
    match expr {
        Expr::Name(_) | Expr::Attribute(_) => last_ident(expr).is_some_and(is_rank_name),
        Expr::Call(c) => {
            if last_ident(&c.func).is_some_and(|f| RANK_FUNCTIONS.contains(&f)) {
                return true;
            }
            // int(x), os.environ.get("RANK"), os.getenv("LOCAL_RANK", 0)
            if helpers::name_of(&c.func) == Some("int") {
                return c.arguments.args.first().is_some_and(is_rank_value);
            }
            matches!(last_ident(&c.func), Some("get" | "getenv"))
                && c.arguments
                    .args
                    .first()
                    .and_then(helpers::str_value)
                    .is_some_and(|s| RANK_ENV.contains(&s))
        }
        // os.environ["RANK"]
        Expr::Subscript(s) => helpers::str_value(&s.slice).is_some_and(|k| RANK_ENV.contains(&k)),
        // args.rank % ngpus_per_node
        Expr::BinOp(b) => is_rank_value(&b.left),
        _ => false,
    }
}

/// Is `expr` a main-process predicate (`is_main_process()`, `accelerator.is_main_process`)?
pub(crate) fn is_main_predicate(expr: &Expr) -> bool {
    let target = match expr {
        Expr::Call(c) => &*c.func,
        e => e,
    };
    last_ident(target).is_some_and(|id| MAIN_PREDICATES.contains(&id))
}

/// Does this condition differ between ranks?
pub(crate) fn is_rank_test(test: &Expr) -> bool {
    match test {
        Expr::BoolOp(b) => b.values.iter().any(is_rank_test),
        Expr::UnaryOp(u) => is_rank_test(&u.operand),
        Expr::Compare(c) => {
            is_rank_value(&c.left)
                || c.comparators.iter().any(is_rank_value)
                || is_main_predicate(&c.left)
        }
        e => is_rank_value(e) || is_main_predicate(e),
    }
}

/// Names assigned a rank test in `body` (nested blocks included, not nested functions):
/// `main = rank == 0`, `save_ckpt = args.local_rank in [-1, 0]`.
pub(crate) fn rank_flags(body: &[Stmt]) -> Vec<String> {
    let mut out = Vec::new();
    crate::rules::correctness::helpers::for_each_stmt(body, &mut |s| {
        if let Stmt::Assign(a) = s {
            if let [Expr::Name(n)] = a.targets.as_slice() {
                if is_rank_test(&a.value) && !out.iter().any(|o: &String| o == n.id.as_str()) {
                    out.push(n.id.to_string());
                }
            }
        }
    });
    out
}

/// [`is_rank_test`], also counting names that hold a rank test (see [`rank_flags`]).
pub(crate) fn is_rank_test_with(test: &Expr, flags: &[String]) -> bool {
    if is_rank_test(test) {
        return true;
    }
    match test {
        Expr::Name(n) => flags.iter().any(|f| f == n.id.as_str()),
        Expr::BoolOp(b) => b.values.iter().any(|v| is_rank_test_with(v, flags)),
        Expr::UnaryOp(u) => is_rank_test_with(&u.operand, flags),
        _ => false,
    }
}

/// Which ranks a rank test selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Polarity {
    /// The main process (`rank == 0`, `is_main_process()`, `local_rank in (-1, 0)`).
    Main,
    /// The other processes (`rank != 0`, `not is_main_process()`, `local_rank not in [-1, 0]`).
    NonMain,
    /// Not known.
    Unknown,
}

impl Polarity {
    /// The ranks the `else` branch selects.
    pub(crate) fn negate(self) -> Polarity {
        match self {
            Polarity::Main => Polarity::NonMain,
            Polarity::NonMain => Polarity::Main,
            Polarity::Unknown => Polarity::Unknown,
        }
    }
}

/// The ranks a rank test selects.
pub(crate) fn polarity(test: &Expr) -> Polarity {
    use ruff_python_ast::{BoolOp, CmpOp, UnaryOp};
    match test {
        Expr::UnaryOp(u) if matches!(u.op, UnaryOp::Not) => polarity(&u.operand).negate(),
        Expr::BoolOp(b) if matches!(b.op, BoolOp::And) => {
            let ps: Vec<Polarity> = b
                .values
                .iter()
                .filter(|v| is_rank_test(v))
                .map(polarity)
                .collect();
            match ps.as_slice() {
                [p] => *p,
                _ => Polarity::Unknown,
            }
        }
        Expr::Compare(c) if c.ops.len() == 1 => {
            let zero =
                |e: &Expr| helpers::int_value(e) == Some(0) || helpers::str_value(e) == Some("0");
            let (value, other) = if is_rank_value(&c.left) {
                (&*c.left, &c.comparators[0])
            } else {
                (&c.comparators[0], &*c.left)
            };
            if !is_rank_value(value) && !is_main_predicate(value) {
                return Polarity::Unknown;
            }
            let contains_zero = match other {
                Expr::Tuple(t) => t.elts.iter().any(zero),
                Expr::List(l) => l.elts.iter().any(zero),
                Expr::Set(s) => s.elts.iter().any(zero),
                _ => false,
            };
            match c.ops[0] {
                CmpOp::Eq if zero(other) => Polarity::Main,
                CmpOp::NotEq if zero(other) => Polarity::NonMain,
                CmpOp::Gt if zero(other) && is_rank_value(&c.left) => Polarity::NonMain,
                CmpOp::In if contains_zero => Polarity::Main,
                CmpOp::NotIn if contains_zero => Polarity::NonMain,
                CmpOp::Is | CmpOp::Eq
                    if is_main_predicate(value) && helpers::is_truthy(other) == Some(true) =>
                {
                    Polarity::Main
                }
                _ => Polarity::Unknown,
            }
        }
        e if is_main_predicate(e) => Polarity::Main,
        // `if rank:` selects the non-zero ranks.
        e if is_rank_value(e) => Polarity::NonMain,
        _ => Polarity::Unknown,
    }
}

/// How a statement came to run on some ranks only.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RankGuard<'a> {
    /// Inside a branch of `if <rank test>:`; the `if` statement.
    Branch(&'a ast::StmtIf),
    /// After `if <rank test>: return` earlier in the same function; that `if` statement.
    EarlyExit(&'a ast::StmtIf),
}

impl<'a> RankGuard<'a> {
    /// The `if` statement responsible.
    pub(crate) fn stmt(self) -> &'a ast::StmtIf {
        match self {
            RankGuard::Branch(s) | RankGuard::EarlyExit(s) => s,
        }
    }

    /// The range of the rank test (for a secondary location).
    pub(crate) fn test_range(self) -> TextRange {
        let s = self.stmt();
        // The test that decided: the first clause test that is a rank test.
        if is_rank_test(&s.test) {
            return s.test.range();
        }
        s.elif_else_clauses
            .iter()
            .filter_map(|c| c.test.as_ref())
            .find(|t| is_rank_test(t))
            .map_or(s.test.range(), Ranged::range)
    }
}

/// The statement blocks directly inside a compound statement.
pub(crate) fn child_blocks(stmt: &Stmt) -> Vec<&[Stmt]> {
    match stmt {
        Stmt::If(i) => {
            let mut v = vec![i.body.as_slice()];
            v.extend(i.elif_else_clauses.iter().map(|c| c.body.as_slice()));
            v
        }
        Stmt::For(f) => vec![&f.body, &f.orelse],
        Stmt::While(w) => vec![&w.body, &w.orelse],
        Stmt::With(w) => vec![&w.body],
        Stmt::Try(t) => {
            let mut v = vec![t.body.as_slice()];
            for h in &t.handlers {
                let ast::ExceptHandler::ExceptHandler(h) = h;
                v.push(&h.body);
            }
            v.push(&t.orelse);
            v.push(&t.finalbody);
            v
        }
        Stmt::Match(m) => m.cases.iter().map(|c| c.body.as_slice()).collect(),
        Stmt::FunctionDef(f) => vec![&f.body],
        Stmt::ClassDef(c) => vec![&c.body],
        _ => Vec::new(),
    }
}

/// Does the `if` stop the rest of the function on the ranks that take its branch
/// (`if rank != 0: return`)?
fn is_rank_early_exit<'s>(stmt: &'s Stmt, flags: &[String]) -> Option<&'s ast::StmtIf> {
    let Stmt::If(i) = stmt else { return None };
    if !i.elif_else_clauses.is_empty() || !is_rank_test_with(&i.test, flags) {
        return None;
    }
    matches!(i.body.last(), Some(Stmt::Return(_))).then_some(i)
}

/// The rank guard in effect for the statement being visited (the innermost `if` branch whose
/// test is a rank test, or an earlier `if <rank test>: return` of the same function), without
/// crossing the enclosing function definition.
pub(crate) fn enclosing_rank_guard<'a>(checker: &Checker<'a>) -> Option<RankGuard<'a>> {
    let stack = checker.stmt_stack();
    // Only the statements of the innermost function count.
    let start = stack
        .iter()
        .rposition(|s| matches!(s, Stmt::FunctionDef(_) | Stmt::ClassDef(_)))
        .map_or(0, |i| i + 1);
    let mut found = None;
    let mut block: &[Stmt] = match start {
        0 => &checker.module().body,
        i => match stack[i - 1] {
            Stmt::FunctionDef(f) => &f.body,
            Stmt::ClassDef(c) => &c.body,
            _ => return None,
        },
    };
    // Names holding a rank test, in this function and at module level (`IS_MAIN = RANK in
    // {-1, 0}`): `if main:` is a rank test too.
    let mut flags = rank_flags(block);
    if start > 0 {
        for stmt in &checker.module().body {
            if let Stmt::Assign(a) = stmt {
                if let [Expr::Name(n)] = a.targets.as_slice() {
                    if is_rank_test(&a.value) {
                        flags.push(n.id.to_string());
                    }
                }
            }
        }
    }
    for (k, &stmt) in stack.iter().enumerate().skip(start) {
        // Early exits among the preceding siblings.
        for prev in block {
            if prev.start() >= stmt.start() {
                break;
            }
            if let Some(i) = is_rank_early_exit(prev, &flags) {
                found = Some(RankGuard::EarlyExit(i));
            }
        }
        let Some(&next) = stack.get(k + 1) else { break };
        if let Stmt::If(i) = stmt {
            // The child is in some branch: a rank test on this `if` (or on an earlier clause)
            // makes it conditional. A child inside the test itself is not a statement.
            let in_branch = i
                .body
                .iter()
                .any(|s| s.range().contains_range(next.range()))
                || i.elif_else_clauses.iter().any(|c| {
                    c.body
                        .iter()
                        .any(|s| s.range().contains_range(next.range()))
                });
            let tested = is_rank_test_with(&i.test, &flags)
                || i.elif_else_clauses
                    .iter()
                    .filter_map(|c| c.test.as_ref())
                    .any(|t| is_rank_test_with(t, &flags));
            if in_branch && tested {
                found = Some(RankGuard::Branch(i));
            }
        }
        block = child_blocks(stmt)
            .into_iter()
            .find(|b| b.iter().any(|s| s.range() == next.range()))
            .unwrap_or(&[]);
    }
    found
}

/// Visit every call in `body` (not entering nested function or class definitions).
pub(crate) fn for_each_call<'b>(body: &'b [Stmt], f: &mut impl FnMut(&'b ast::ExprCall)) {
    use ruff_python_ast::visitor::{self, Visitor};
    struct V<'f, F> {
        f: &'f mut F,
    }
    impl<'b, F: FnMut(&'b ast::ExprCall)> Visitor<'b> for V<'_, F> {
        fn visit_stmt(&mut self, stmt: &'b Stmt) {
            if matches!(stmt, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                return;
            }
            visitor::walk_stmt(self, stmt);
        }
        fn visit_expr(&mut self, expr: &'b Expr) {
            if let Expr::Call(c) = expr {
                (self.f)(c);
            }
            if matches!(expr, Expr::Lambda(_)) {
                return;
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut v = V { f };
    v.visit_body(body);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruff_python_parser::parse_module;

    fn test_of(src: &str) -> bool {
        let parsed = parse_module(src).expect("valid python");
        let Some(Stmt::If(i)) = parsed.syntax().body.first() else {
            panic!("not an if");
        };
        is_rank_test(&i.test)
    }

    #[test]
    fn recognises_rank_tests() {
        for src in [
            "if rank == 0: pass",
            "if dist.get_rank() == 0: pass",
            "if args.local_rank in (-1, 0): pass",
            "if is_main_process(): pass",
            "if accelerator.is_main_process: pass",
            "if args.rank % ngpus_per_node == 0: pass",
            "if not trainer.is_global_zero: pass",
            "if int(os.environ['RANK']) == 0: pass",
            "if os.environ.get('LOCAL_RANK', '0') == '0': pass",
            "if epoch % 5 == 0 and self.rank == 0: pass",
        ] {
            assert!(test_of(src), "{src}");
        }
        for src in [
            "if world_size > 1: pass",
            "if dist.is_initialized(): pass",
            "if args.distributed: pass",
            "if lora_rank > 0: pass",
            "if epoch % 5 == 0: pass",
        ] {
            assert!(!test_of(src), "{src}");
        }
    }

    fn polarity_of(src: &str) -> Polarity {
        let parsed = parse_module(src).expect("valid python");
        let Some(Stmt::If(i)) = parsed.syntax().body.first() else {
            panic!("not an if");
        };
        polarity(&i.test)
    }

    #[test]
    fn tells_main_from_other_ranks() {
        assert_eq!(polarity_of("if rank == 0: pass"), Polarity::Main);
        assert_eq!(
            polarity_of("if local_rank in [-1, 0]: pass"),
            Polarity::Main
        );
        assert_eq!(polarity_of("if is_main_process(): pass"), Polarity::Main);
        assert_eq!(
            polarity_of("if rank == 0 and epoch > 3: pass"),
            Polarity::Main
        );
        assert_eq!(
            polarity_of("if local_rank not in [-1, 0]: pass"),
            Polarity::NonMain
        );
        assert_eq!(
            polarity_of("if not accelerator.is_main_process: pass"),
            Polarity::NonMain
        );
        assert_eq!(
            polarity_of("if dist.get_rank() != 0: pass"),
            Polarity::NonMain
        );
        assert_eq!(polarity_of("if rank == 1: pass"), Polarity::Unknown);
    }
}

/// Per-file cache of the first call, in each function (or the module body), to one of a list
/// of qualified names: the distributed setup (`init_process_group`, `DistributedDataParallel`,
/// ...) that makes a frame a DDP frame. Keyed by the frame's start offset.
#[derive(Default)]
pub(crate) struct FrameCalls(rustc_hash::FxHashMap<ruff_text_size::TextSize, Option<TextRange>>);

impl FrameCalls {
    /// The first call to one of `names` in the current frame (nested defs included).
    pub(crate) fn first_call(&mut self, checker: &Checker, names: &[&str]) -> Option<TextRange> {
        let (key, body): (ruff_text_size::TextSize, &[Stmt]) = match checker.function() {
            Some(f) => (f.start(), &f.body),
            None => (
                ruff_text_size::TextSize::new(u32::MAX),
                &checker.module().body,
            ),
        };
        *self.0.entry(key).or_insert_with(|| {
            let mut found = None;
            for_each_call(body, &mut |c| {
                if found.is_none()
                    && checker
                        .resolve(&c.func)
                        .is_some_and(|q| names.contains(&q.as_str()))
                {
                    found = Some(c.range());
                }
            });
            found
        })
    }
}

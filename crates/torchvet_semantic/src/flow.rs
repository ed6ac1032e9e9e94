//! Per-iteration flow of training events inside one loop.
//!
//! [`analyze_loop`] linearises the body of a `for`/`while` loop in source order and records
//! every *training event* it meets ([`EventKind`]: `backward()`, `optimizer.step()`,
//! `zero_grad()`, `scheduler.step()`, `GradScaler` calls, gradient clipping, `eval()`/`train()`,
//! optimizer construction). Each [`Event`] says
//!
//! - **what** happened and on **which object** ([`Obj`]: a canonical key such as `opt` or
//!   `self.optimizer`, and a [`Role`] from value kinds or, failing that, from the name);
//! - **where** (`range` of the call, `stmt` the innermost statement, `top` the statement of the
//!   loop body that contains it);
//! - **under which conditions** inside the iteration ([`Guard`]s, outermost first: `if`
//!   branches with their test and whether it looks periodic (`(i + 1) % k == 0`), an earlier
//!   `if ...: continue`, nested loops, `except` handlers, `with` blocks);
//! - whether it comes from a **local function** called in the loop (`via`): one level of
//!   interprocedural summaries. A call `train_one_epoch(model, opt, loader)` to a function of
//!   the same file (or `self.train_step(...)` to a method of the enclosing class) contributes
//!   the events of that function's body, with its parameters mapped to the call's arguments
//!   (so `optimizer.step()` inside the helper is keyed `opt` in the loop).
//!
//! Events are in per-iteration execution order as far as source order tells: an event at a
//! lower index runs before one at a higher index in the same iteration, if both run. Nested
//! function definitions and lambdas in the body are not entered (they do not run in place).
//!
//! The analysis is purely syntactic plus value kinds: it never executes anything. Rules use it
//! through `Checker::loop_flow()` in the linter, which caches one [`LoopFlow`] per loop.
use crate::helpers;
use crate::kinds::{Kind, KindContext, KindTable};
use ruff_python_ast::{self as ast, Expr, ExprCall, Operator, Stmt};
use ruff_text_size::{Ranged, TextRange};

/// What a training event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// `X.backward()`, `scaler.scale(X).backward()`, `accelerator.backward(X)`,
    /// `self.manual_backward(X)`, `torch.autograd.backward(X)`. `loss` is `X`.
    Backward,
    /// `OPT.step()` (`target` = OPT) or `scaler.step(OPT)` (`target` = OPT, `scaler` set).
    Step,
    /// Gradients cleared: `R.zero_grad()` (`target` = R, optimizer or module), `p.grad = None`,
    /// `p.grad.zero_()`, or a call of a function whose name contains `zero_grad`/`clear_grad`
    /// (`target` = `None`: clears unknown, possibly all, gradients).
    ZeroGrad,
    /// `p.grad = <value other than None>`: gradients written by hand.
    GradWrite,
    /// Gradients scaled in place by hand: `p.grad /= k`, `p.grad *= s`, `p.grad.div_(k)`,
    /// `p.grad.data.mul_(1 / k)` (usually inside `for p in model.parameters():`): an
    /// accumulation window averaged before the step.
    GradScale,
    /// `SCHED.step(...)` on a learning-rate scheduler (`target` = SCHED).
    SchedulerStep,
    /// `scaler.scale(X)` not directly followed by `.backward()` (`scaler` set, `loss` = X).
    ScalerScale,
    /// `scaler.unscale_(OPT)` (`scaler` set, `target` = OPT).
    ScalerUnscale,
    /// `scaler.update()` (`scaler` set).
    ScalerUpdate,
    /// `torch.nn.utils.clip_grad_norm_/clip_grad_value_` (or the method form
    /// `accelerator.clip_grad_norm_(...)`, see [`Event::method_form`]).
    ClipGrad,
    /// `M.eval()` / `M.train(False)` (`target` = M).
    Eval,
    /// `M.train()` / `M.train(True)` (`target` = M).
    Train,
    /// `NAME = torch.optim.X(...)` (or a call assigned to an optimizer-like name) inside the
    /// loop: the optimizer is re-created every iteration (`target` = NAME).
    OptimizerCreated,
    /// An optimizer passed to a call the analysis cannot see into (an imported helper, a
    /// method of another object): `target` = the optimizer. The callee may step or clear it.
    Escape,
}

impl EventKind {
    /// A backward pass or an optimizer step: the events that train.
    pub fn trains(self) -> bool {
        matches!(self, EventKind::Backward | EventKind::Step)
    }
}

/// What an object is, from its value kind or (weaker) its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// A `torch.optim` optimizer (or a name like `opt`, `optimizer_g`, `optD`).
    Optimizer,
    /// A learning-rate scheduler; the class name when known (`StepLR`, `ReduceLROnPlateau`).
    Scheduler(Option<String>),
    /// A `GradScaler` (or a name containing `scaler`).
    Scaler,
    /// An `nn.Module` (or a name containing `model`, `net`, ...).
    Module,
    /// Known to be something else (tensor, data loader, ...).
    Other,
    /// Not known.
    Unknown,
}

/// An object an event acts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Obj {
    /// Canonical key: `opt`, `self.optimizer`, `optimizers[0]`. Through a local-function call
    /// the helper's parameter is replaced by the call's argument, so keys compare across the
    /// loop and its helpers.
    pub key: String,
    /// What it is.
    pub role: Role,
    /// The role comes from a value kind (constructor, annotation), not from the name.
    pub certain: bool,
    /// The expression naming the object at the event.
    pub range: TextRange,
    /// The name is a local variable of an inlined helper (not visible in the loop: do not
    /// write it into a fix at the loop).
    pub helper_local: bool,
}

/// A condition (or context) between the loop body and an event.
#[derive(Clone, Copy, Debug)]
pub enum Guard<'a> {
    /// Inside clause `clause` of an `if` (0 = the `if` body, `i` = `elif_else_clauses[i - 1]`).
    /// `test` is that clause's own test (`None` for `else`).
    If {
        /// The `if` statement.
        stmt: &'a ast::StmtIf,
        /// Which clause.
        clause: usize,
        /// The clause's test.
        test: Option<&'a Expr>,
        /// The test looks periodic (`%`, `accum`, `sync_gradients`, ...): see [`is_periodic_test`].
        periodic: bool,
    },
    /// After `if test: continue` (or `break`/`return`) earlier in the same block: runs only
    /// when `test` was false.
    AfterExit {
        /// The `if` statement that exits.
        stmt: &'a ast::StmtIf,
        /// Its test.
        test: &'a Expr,
        /// The test looks periodic.
        periodic: bool,
    },
    /// Inside a nested loop. `over_params` when it iterates parameters
    /// (`for p in model.parameters()`), which runs fully every time and is not a condition.
    Loop {
        /// The nested loop.
        stmt: &'a Stmt,
        /// It iterates parameters.
        over_params: bool,
    },
    /// Inside an `except` handler.
    Except {
        /// The handler.
        handler: &'a ast::ExceptHandlerExceptHandler,
    },
    /// Inside a `with` block (not a condition). `accumulate` for
    /// `with accelerator.accumulate(model):` / `with model.no_sync():`, whose framework skips
    /// step/zero_grad/all-reduce on non-update micro-steps.
    With {
        /// The `with` statement.
        stmt: &'a ast::StmtWith,
        /// A gradient-accumulation context.
        accumulate: bool,
    },
    /// Conditions inside a function of the project that the loop calls (the event comes from
    /// its summary): `site` is the call in this file.
    Remote {
        /// The call.
        site: TextRange,
        /// Conditional inside the callee (or its callees).
        condition: bool,
        /// Periodic inside the callee.
        periodic: bool,
        /// Inside a loop of the callee.
        in_loop: bool,
    },
}

impl Guard<'_> {
    /// Does this guard make execution conditional within the iteration?
    pub fn is_condition(&self) -> bool {
        match self {
            Guard::If { .. } | Guard::AfterExit { .. } | Guard::Except { .. } => true,
            Guard::Loop { over_params, .. } => !over_params,
            Guard::With { .. } => false,
            Guard::Remote {
                condition, in_loop, ..
            } => *condition || *in_loop,
        }
    }

    /// Is this a periodic `if` (or an exit after a periodic test)?
    pub fn is_periodic(&self) -> bool {
        matches!(
            self,
            Guard::If { periodic: true, .. }
                | Guard::AfterExit { periodic: true, .. }
                | Guard::Remote { periodic: true, .. }
        )
    }

    /// Same guard (same statement and clause)?
    pub fn same(&self, other: &Guard) -> bool {
        match (self, other) {
            (
                Guard::If {
                    stmt: a, clause: x, ..
                },
                Guard::If {
                    stmt: b, clause: y, ..
                },
            ) => a.range() == b.range() && x == y,
            (Guard::AfterExit { stmt: a, .. }, Guard::AfterExit { stmt: b, .. }) => {
                a.range() == b.range()
            }
            (Guard::Loop { stmt: a, .. }, Guard::Loop { stmt: b, .. }) => a.range() == b.range(),
            (Guard::Except { handler: a }, Guard::Except { handler: b }) => a.range() == b.range(),
            (Guard::With { stmt: a, .. }, Guard::With { stmt: b, .. }) => a.range() == b.range(),
            (Guard::Remote { site: a, .. }, Guard::Remote { site: b, .. }) => a == b,
            _ => false,
        }
    }

    /// The source range of the guarding statement (the `if`, loop, handler or `with`).
    pub fn range(&self) -> TextRange {
        match self {
            Guard::If { stmt, .. } | Guard::AfterExit { stmt, .. } => stmt.range(),
            Guard::Loop { stmt, .. } => stmt.range(),
            Guard::Except { handler } => handler.range(),
            Guard::With { stmt, .. } => stmt.range(),
            Guard::Remote { site, .. } => *site,
        }
    }
}

/// One training event of an iteration.
#[derive(Clone, Debug)]
pub struct Event<'a> {
    /// What.
    pub kind: EventKind,
    /// The call (or assignment) in the file. For an event inlined from a helper this is inside
    /// the helper's body; see [`Event::site`] for the position in the loop.
    pub range: TextRange,
    /// The call, when the event is a call.
    pub call: Option<&'a ExprCall>,
    /// The innermost statement containing the event (in the helper when inlined).
    pub stmt: &'a Stmt,
    /// The statement of the analysed loop's body that contains the event (or the helper call).
    pub top: &'a Stmt,
    /// The main object: the optimizer (Step, ZeroGrad of an optimizer, ScalerUnscale,
    /// OptimizerCreated), the module (ZeroGrad of a model, Eval, Train), the scheduler.
    pub target: Option<Obj>,
    /// The GradScaler involved (scaler.step, scaler.scale(..).backward(), unscale_, update).
    pub scaler: Option<Obj>,
    /// Backward / ScalerScale: the loss expression (inside `scaler.scale(...)`).
    pub loss: Option<&'a Expr>,
    /// Backward: `retain_graph=` given and not literally false.
    pub retain_graph: bool,
    /// Step: a closure is passed (`opt.step(closure)`: LBFGS style, the closure owns the
    /// zero_grad/backward).
    pub closure: bool,
    /// Backward through a framework object (`accelerator.backward(loss)`,
    /// `engine.backward(loss)`, `self.manual_backward(loss)`); ClipGrad in method form
    /// (`accelerator.clip_grad_norm_(...)`, which unscales itself).
    pub method_form: bool,
    /// Conditions and contexts between the loop body and the event, outermost first.
    pub guards: Vec<Guard<'a>>,
    /// The local-function call the event was inlined through.
    pub via: Option<&'a ExprCall>,
    /// For an event from the summary of a project function (another file, or deeper than one
    /// level): where the event itself is.
    pub remote: Option<(crate::project::FileId, TextRange)>,
}

impl<'a> Event<'a> {
    /// Where the event happens from the loop's point of view: the helper call when inlined.
    pub fn site(&self) -> TextRange {
        self.via.map_or(self.range, Ranged::range)
    }

    /// Does the event run only under some condition of the iteration (an `if`, an earlier
    /// `continue`, a nested non-parameter loop, an `except`)?
    pub fn is_conditional(&self) -> bool {
        self.guards.iter().any(Guard::is_condition)
    }

    /// [`Event::is_conditional`], except for `if` guards whose tests are flags the loop never
    /// changes (`if scheduler:`, `if args.sched is not None:`, `if mode == "epoch":`): such a
    /// branch runs in every iteration or in none, so when it runs at all it runs in the
    /// first. Ordering comparisons (`if epoch > 0:`) and calls stay conditional.
    pub fn varies_between_iterations(&self, loop_stmt: &Stmt) -> bool {
        self.guards.iter().any(|g| {
            g.is_condition()
                && !matches!(g, Guard::If { stmt, clause, periodic: false, .. }
                    if std::iter::once(&*stmt.test)
                        .chain(
                            stmt.elif_else_clauses
                                .iter()
                                .take(*clause)
                                .filter_map(|c| c.test.as_ref()),
                        )
                        .all(|t| is_flag_test(t) && loop_invariant(t, loop_stmt)))
        })
    }

    /// Reached through a helper call (`self.select_action(state)`, `run_epoch(train=False)`)
    /// under a condition of the helper itself that is not periodic (`if self.is_test:`,
    /// `if not train and valid_apply:`): whether it runs depends on the helper's state or
    /// arguments, which this loop does not show, so it is not a definite consequence of the
    /// call. `loop_range` is the analysed loop: guards outside it are inside the helper.
    pub fn conditional_in_callee(&self, loop_range: TextRange) -> bool {
        self.via.is_some()
            && self.guards.iter().any(|g| match g {
                Guard::Remote {
                    condition,
                    periodic,
                    ..
                } => *condition && !*periodic,
                Guard::Loop { .. } | Guard::With { .. } => false,
                _ => g.is_condition() && !g.is_periodic() && !loop_range.contains_range(g.range()),
            })
    }

    /// Inside a nested loop (other than a loop over parameters), here or in the project
    /// function the event comes from?
    pub fn in_nested_loop(&self) -> bool {
        self.guards.iter().any(|g| {
            matches!(
                g,
                Guard::Loop {
                    over_params: false,
                    ..
                } | Guard::Remote { in_loop: true, .. }
            )
        })
    }

    /// The innermost nested loop (not over parameters) containing the event.
    pub fn nested_loop(&self) -> Option<&'a Stmt> {
        self.guards.iter().rev().find_map(|g| match g {
            Guard::Loop {
                stmt,
                over_params: false,
            } => Some(*stmt),
            _ => None,
        })
    }

    /// The innermost periodic guard (`if (i + 1) % k == 0:` or after `if i % k: continue`).
    pub fn periodic_guard(&self) -> Option<&Guard<'a>> {
        self.guards.iter().rev().find(|g| g.is_periodic())
    }

    /// Inside `with accelerator.accumulate(...)` / `with model.no_sync()`?
    pub fn in_accumulate_context(&self) -> bool {
        self.guards.iter().any(|g| {
            matches!(
                g,
                Guard::With {
                    accumulate: true,
                    ..
                }
            )
        })
    }

    /// Does this event run whenever `other` runs in the same iteration, as far as guards tell
    /// (its conditions are a prefix of `other`'s)? `with` guards are ignored.
    pub fn dominates(&self, other: &Event) -> bool {
        let mine: Vec<&Guard> = self.guards.iter().filter(|g| g.is_condition()).collect();
        let theirs: Vec<&Guard> = other.guards.iter().filter(|g| g.is_condition()).collect();
        mine.len() <= theirs.len() && mine.iter().zip(&theirs).all(|(a, b)| a.same(b))
    }

    /// Can this event and `other` never both run in one iteration? True when they sit in
    /// different clauses of one `if` (`if fp16: scaler.step(opt) else: opt.step()`), or under
    /// `if T:` and the `else` of another `if T:` / under `if T:` and `if not T:` with the same
    /// test `T` (which the code between is assumed not to change).
    pub fn excludes(&self, other: &Event) -> bool {
        self.guards.iter().any(|a| {
            other
                .guards
                .iter()
                .any(|b| guards_exclusive(a, b) || guards_exclusive(b, a))
        })
    }

    /// Can this event and `other` never run in the same execution of the loop, because they
    /// sit under opposite values of a test the loop never changes (`if not train and
    /// valid_apply:` ... `if train:`, with `train` a parameter of the function)? Unlike
    /// [`Event::excludes`] this holds across iterations: the test's names are not bound
    /// anywhere in `loop_stmt`, and it is not periodic. A conjunct of an `if` test
    /// (`if not train and x:`) and a disjunct of the test before an `else` count as implied.
    pub fn never_in_same_loop_as(&self, other: &Event, loop_stmt: &Stmt) -> bool {
        let mine: Vec<(&Expr, bool)> = self.guards.iter().flat_map(implied_conditions).collect();
        let theirs: Vec<(&Expr, bool)> = other.guards.iter().flat_map(implied_conditions).collect();
        mine.iter().any(|(t1, n1)| {
            theirs.iter().any(|(t2, n2)| {
                n1 != n2
                    && ast::comparable::ComparableExpr::from(*t1)
                        == ast::comparable::ComparableExpr::from(*t2)
                    && !is_periodic_test(t1)
                    && loop_invariant(t1, loop_stmt)
            })
        })
    }

    /// Does the event run only on the last iteration of `loop_stmt` (`if i == len(steps) - 1:`,
    /// `if batch_idx + 1 == len(loader):` with `i` a name the loop binds)? For that loop it
    /// comes after the iteration's other events, as if written after the loop.
    pub fn only_on_last_iteration(&self, loop_stmt: &Stmt) -> bool {
        let Stmt::For(f) = loop_stmt else {
            return false;
        };
        // The `if` or `elif` clause whose own test holds only then (`elif epoch == epochs - 1:`).
        self.guards.iter().any(|g| match g {
            Guard::If {
                stmt,
                test: Some(test),
                ..
            } if f.range().contains_range(stmt.range()) => is_last_iteration_test(test, &f.target),
            _ => false,
        })
    }

    /// The key of the target object.
    pub fn target_key(&self) -> Option<&str> {
        self.target.as_ref().map(|o| o.key.as_str())
    }

    /// The key of the scaler.
    pub fn scaler_key(&self) -> Option<&str> {
        self.scaler.as_ref().map(|o| o.key.as_str())
    }
}

/// `i == len(x) - 1`, `i == n - 1`, `i + 1 == len(x)` (either order) for `i` a name the loop
/// target binds.
fn is_last_iteration_test(test: &Expr, target: &Expr) -> bool {
    let Expr::Compare(c) = test else {
        return false;
    };
    let ([ast::CmpOp::Eq], [right]) = (&*c.ops, &*c.comparators) else {
        return false;
    };
    let one = |e: &Expr| matches!(e, Expr::NumberLiteral(n) if matches!(&n.value, ast::Number::Int(i) if i.as_u8() == Some(1)));
    let is_index = |e: &Expr| helpers::name_of(e).is_some_and(|n| helpers::binds(target, n));
    // (`i`, `len(x) - 1`) or (`i + 1`, `len(x)`): the bound is no literal.
    let pair = |a: &Expr, b: &Expr| match a {
        Expr::BinOp(p)
            if matches!(p.op, ast::Operator::Add) && is_index(&p.left) && one(&p.right) =>
        {
            !matches!(b, Expr::NumberLiteral(_))
        }
        a if is_index(a) => matches!(b, Expr::BinOp(p)
            if matches!(p.op, ast::Operator::Sub) && one(&p.right)
                && !matches!(&*p.left, Expr::NumberLiteral(_))),
        _ => false,
    };
    pair(&c.left, right) || pair(right, &c.left)
}

/// The test a guard's branch runs under, as (test, negated): `if T:` body -> (T, false),
/// the `else` of `if T:` (no `elif`) -> (T, true), `if not T:` body -> (T, true).
fn branch_condition<'e>(g: &Guard<'e>) -> Option<(&'e Expr, bool)> {
    let Guard::If { stmt, clause, .. } = g else {
        return None;
    };
    let (test, negated) = match clause {
        0 => (&*stmt.test, false),
        1 if stmt.elif_else_clauses.len() == 1 && stmt.elif_else_clauses[0].test.is_none() => {
            (&*stmt.test, true)
        }
        _ => return None,
    };
    match test {
        Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOp::Not) => Some((&u.operand, !negated)),
        t => Some((t, negated)),
    }
}

/// The atomic conditions (test, negated) that hold wherever guard `g` holds: the test of an
/// `if` clause and each conjunct of an `and` test; for the `else` of a one-clause `if`, the
/// negation of the test and of each disjunct of an `or` test. `not x` is `x` negated.
fn implied_conditions<'e>(g: &Guard<'e>) -> Vec<(&'e Expr, bool)> {
    fn atoms<'e>(e: &'e Expr, negated: bool, out: &mut Vec<(&'e Expr, bool)>) {
        match e {
            Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOp::Not) => {
                atoms(&u.operand, !negated, out)
            }
            Expr::BoolOp(b)
                if (matches!(b.op, ast::BoolOp::And) && !negated)
                    || (matches!(b.op, ast::BoolOp::Or) && negated) =>
            {
                for v in &b.values {
                    atoms(v, negated, out);
                }
            }
            t => out.push((t, negated)),
        }
    }
    let Guard::If { stmt, clause, .. } = g else {
        return Vec::new();
    };
    let negated = match clause {
        0 => false,
        1 if stmt.elif_else_clauses.len() == 1 && stmt.elif_else_clauses[0].test.is_none() => true,
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    atoms(&stmt.test, negated, &mut out);
    out
}

/// Does no name of `test` get bound inside `loop_stmt` (its target included), so that the test
/// has the same value in every iteration (as far as plain bindings tell)?
/// A test of flags only: names and attribute chains, `not`, `and`/`or`, `x is (not) None`
/// and `x == "literal"`. No calls, subscripts or ordering comparisons.
fn is_flag_test(e: &Expr) -> bool {
    match e {
        Expr::Name(_) => true,
        Expr::Attribute(a) => is_flag_test(&a.value),
        Expr::UnaryOp(u) if u.op == ast::UnaryOp::Not => is_flag_test(&u.operand),
        Expr::BoolOp(b) => b.values.iter().all(is_flag_test),
        Expr::Compare(c) => {
            is_flag_test(&c.left)
                && c.ops
                    .iter()
                    .zip(c.comparators.iter())
                    .all(|(op, r)| match op {
                        ast::CmpOp::Is | ast::CmpOp::IsNot => r.is_none_literal_expr(),
                        ast::CmpOp::Eq | ast::CmpOp::NotEq => matches!(
                            r,
                            Expr::StringLiteral(_) | Expr::BooleanLiteral(_) | Expr::NoneLiteral(_)
                        ),
                        _ => false,
                    })
        }
        _ => false,
    }
}

fn loop_invariant(test: &Expr, loop_stmt: &Stmt) -> bool {
    use ruff_python_ast::visitor::{self, Visitor};
    struct Names<'a>(Vec<&'a str>);
    impl<'a> Visitor<'a> for Names<'a> {
        fn visit_expr(&mut self, e: &'a Expr) {
            if let Expr::Name(n) = e {
                self.0.push(n.id.as_str());
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut names = Names(Vec::new());
    names.visit_expr(test);
    if names.0.is_empty() {
        return false;
    }
    let mut bound: Vec<String> = Vec::new();
    let mut collect = |t: &Expr| {
        let mut b = Names(Vec::new());
        b.visit_expr(t);
        bound.extend(b.0.into_iter().map(str::to_string));
    };
    if let Stmt::For(f) = loop_stmt {
        collect(&f.target);
    }
    let body: &[Stmt] = match loop_stmt {
        Stmt::For(f) => &f.body,
        Stmt::While(w) => &w.body,
        _ => return false,
    };
    helpers::for_each_own_stmt(body, &mut |st: &Stmt| match st {
        Stmt::Assign(a) => a.targets.iter().for_each(&mut collect),
        Stmt::AugAssign(a) => collect(&a.target),
        Stmt::AnnAssign(a) => collect(&a.target),
        Stmt::For(f) => collect(&f.target),
        Stmt::With(w) => w
            .items
            .iter()
            .filter_map(|i| i.optional_vars.as_deref())
            .for_each(&mut collect),
        _ => {}
    });
    !names.0.iter().any(|n| bound.iter().any(|b| b == n))
}

/// Are the branches of guards `a` and `b` mutually exclusive?
fn guards_exclusive(a: &Guard, b: &Guard) -> bool {
    if let (
        Guard::If {
            stmt: s1,
            clause: c1,
            ..
        },
        Guard::If {
            stmt: s2,
            clause: c2,
            ..
        },
    ) = (a, b)
    {
        if s1.range() == s2.range() {
            return c1 != c2;
        }
    }
    match (branch_condition(a), branch_condition(b)) {
        (Some((t1, n1)), Some((t2, n2))) => {
            n1 != n2
                && ast::comparable::ComparableExpr::from(t1)
                    == ast::comparable::ComparableExpr::from(t2)
        }
        _ => false,
    }
}

/// The events of one loop iteration, in order.
#[derive(Clone, Debug)]
pub struct LoopFlow<'a> {
    /// The analysed loop (`for` or `while`).
    pub loop_stmt: &'a Stmt,
    /// Events in per-iteration source order (index = order).
    pub events: Vec<Event<'a>>,
}

impl<'a> LoopFlow<'a> {
    /// An empty flow.
    pub fn empty(loop_stmt: &'a Stmt) -> Self {
        Self {
            loop_stmt,
            events: Vec::new(),
        }
    }

    /// Indices and events of one kind.
    pub fn of_kind(&self, kind: EventKind) -> impl Iterator<Item = (usize, &Event<'a>)> + '_ {
        self.events
            .iter()
            .enumerate()
            .filter(move |(_, e)| e.kind == kind)
    }

    /// Any event of this kind?
    pub fn has(&self, kind: EventKind) -> bool {
        self.events.iter().any(|e| e.kind == kind)
    }

    /// Is this a per-step training loop: does each iteration run a backward pass or an
    /// optimizer step of its own (in its body or in a helper it calls), not only inside a
    /// nested loop? An epoch loop whose batch loop (here or in the helper it calls) trains,
    /// or whose own body only steps a learning-rate scheduler, is not.
    pub fn is_step_loop(&self) -> bool {
        self.events
            .iter()
            .any(|e| matches!(e.kind, EventKind::Backward | EventKind::Step) && !e.in_nested_loop())
    }

    /// The body statements of the loop.
    pub fn body(&self) -> &'a [Stmt] {
        match self.loop_stmt {
            Stmt::For(f) => &f.body,
            Stmt::While(w) => &w.body,
            _ => &[],
        }
    }

    /// Any event of `kind` in `range` of indices satisfying `pred`?
    pub fn any_between(
        &self,
        range: std::ops::Range<usize>,
        kind: EventKind,
        pred: impl Fn(&Event<'a>) -> bool,
    ) -> bool {
        self.events
            .get(range)
            .is_some_and(|s| s.iter().any(|e| e.kind == kind && pred(e)))
    }
}

/// What [`analyze_loop`] needs from its caller.
pub struct FlowInput<'a, 's> {
    /// Value kinds at the loop (its function, the module, `self.<attr>` of its class).
    pub kinds: KindContext<'s>,
    /// Functions callable by bare name from the loop (module-level defs, defs nested in the
    /// functions that enclose the loop's function, and defs nested in the loop's function;
    /// the innermost of a name last), inlined one level deep.
    pub functions: &'s [&'a ast::StmtFunctionDef],
    /// Methods of the enclosing class, inlined for `self.<name>(...)` calls.
    pub methods: &'s [&'a ast::StmtFunctionDef],
    /// The function containing the loop (never inlined into itself).
    pub current: Option<&'a ast::StmtFunctionDef>,
    /// The class whose method contains the loop.
    pub class: Option<&'a ast::StmtClassDef>,
}

/// Linearise the body of `loop_stmt` (a `for` or `while`; anything else gives no events).
pub fn analyze_loop<'a>(loop_stmt: &'a Stmt, input: &FlowInput<'a, '_>) -> LoopFlow<'a> {
    let body: &'a [Stmt] = match loop_stmt {
        Stmt::For(f) => &f.body,
        Stmt::While(w) => &w.body,
        // A per-batch hook that a framework calls once per iteration (a Lightning
        // `training_step` under manual optimization): its body is one iteration.
        Stmt::FunctionDef(f) => &f.body,
        _ => return LoopFlow::empty(loop_stmt),
    };
    let mut w = Walker {
        input,
        events: Vec::new(),
        guards: Vec::new(),
        fanout: Vec::new(),
        top: loop_stmt,
        stmt: loop_stmt,
        helper: None,
        scaled: Vec::new(),
        saved_modes: Vec::new(),
    };
    w.block(body, true);
    let mut events = w.events;
    not_torch_optimizers(&mut events);
    LoopFlow { loop_stmt, events }
}

/// An object named like an optimizer that the same code also calls `.backward(...)` on (a
/// NumPy course's solver: `self.opt.backward(y_pred, y); self.opt.step()`) is no torch
/// optimizer, which has no `backward`: its role becomes [`Role::Other`].
fn not_torch_optimizers(events: &mut [Event<'_>]) {
    let backwarded: Vec<String> = events
        .iter()
        .filter(|e| e.kind == EventKind::Backward)
        .filter_map(|e| helpers::dotted(e.loss?))
        .collect();
    if backwarded.is_empty() {
        return;
    }
    for e in events.iter_mut() {
        if let Some(t) = e.target.as_mut() {
            if t.role == Role::Optimizer && backwarded.contains(&t.key) {
                t.role = Role::Other;
            }
        }
    }
}

/// The training events of a suite that is not a loop body (a function body, for function
/// summaries), in source order, as [`analyze_loop`] records them for a loop body. `anchor` is
/// the statement that owns the suite (the `def`), reported as every event's `top`.
pub fn analyze_suite<'a>(
    body: &'a [Stmt],
    anchor: &'a Stmt,
    input: &FlowInput<'a, '_>,
) -> Vec<Event<'a>> {
    let mut w = Walker {
        input,
        events: Vec::new(),
        guards: Vec::new(),
        fanout: Vec::new(),
        top: anchor,
        stmt: anchor,
        helper: None,
        scaled: Vec::new(),
        saved_modes: Vec::new(),
    };
    w.block(body, false);
    let mut events = w.events;
    not_torch_optimizers(&mut events);
    events
}

/// Does an `if` test look like a periodic (accumulation) condition: a `%` anywhere, or a
/// name mentioning accumulation / gradient sync (`accum`, `grad_acc`, `sync_gradients`,
/// `update_freq`, `gradient_accumulation_steps`), e.g. `(i + 1) % k == 0`,
/// `ni - last_opt_step >= accumulate`, `accelerator.sync_gradients`?
pub fn is_periodic_test(test: &Expr) -> bool {
    let mut found = false;
    walk_names(test, &mut |e| match e {
        e if is_modulo(e) => found = true,
        Expr::Name(n) if periodic_name(n.id.as_str()) => found = true,
        Expr::Attribute(a) if periodic_name(a.attr.as_str()) => found = true,
        _ => {}
    });
    found
}

/// Does the test hold on all but one iteration in k (`if i % n_critic != 0:`, `if i % k:`)?
/// A block under it skips one iteration in k: a schedule, not a window that runs once per k
/// (after `if i % k != 0: continue`, an [`Guard::AfterExit`], the rest does run once per k).
pub fn is_skip_schedule(test: &Expr) -> bool {
    match test {
        Expr::Compare(c) => {
            matches!(c.ops.as_ref(), [ast::CmpOp::NotEq])
                && (is_modulo(&c.left) || c.comparators.first().is_some_and(is_modulo))
        }
        e => is_modulo(e),
    }
}

/// `a % b`, the arithmetic remainder (not `"%s" % x` string formatting).
fn is_modulo(e: &Expr) -> bool {
    matches!(e, Expr::BinOp(b) if b.op == Operator::Mod && !matches!(*b.left, Expr::StringLiteral(_)))
}

/// Is `stmt` a bounded micro-batch loop: `for _ in range(k)` (not `range(len(data))`, which
/// walks a dataset) or a helper given the accumulation count (`for _ in
/// accumulate_contexts(self.grad_accum_every, ...)`)? Such a loop runs a fixed, small number
/// of iterations inside one training step.
pub fn is_micro_batch_loop(stmt: &Stmt) -> bool {
    let Stmt::For(f) = stmt else { return false };
    let Expr::Call(c) = &*f.iter else {
        return false;
    };
    let mut walks_data = false;
    for a in &c.arguments.args {
        walk_names(a, &mut |e| {
            if let Expr::Call(inner) = e {
                if matches!(&*inner.func, Expr::Name(n) if n.id.as_str() == "len") {
                    walks_data = true;
                }
            }
        });
    }
    if walks_data {
        return false;
    }
    if matches!(&*c.func, Expr::Name(n) if n.id.as_str() == "range") {
        return !c.arguments.args.is_empty();
    }
    c.arguments.args.iter().any(|a| match a {
        Expr::Name(n) => periodic_name(n.id.as_str()),
        Expr::Attribute(at) => periodic_name(at.attr.as_str()),
        _ => false,
    })
}

/// The modulus `k` of a periodic test `... % k == 0` / `... % k != 0` / `not ... % k`
/// (the first `%` found), e.g. `accum_steps` in `(step + 1) % accum_steps == 0`.
pub fn modulus_of(test: &Expr) -> Option<&Expr> {
    match test {
        Expr::BinOp(b) if b.op == Operator::Mod => Some(&b.right),
        Expr::BinOp(b) => modulus_of(&b.left).or_else(|| modulus_of(&b.right)),
        Expr::Compare(c) => std::iter::once(&*c.left)
            .chain(c.comparators.iter())
            .find_map(modulus_of),
        Expr::BoolOp(b) => b.values.iter().find_map(modulus_of),
        Expr::UnaryOp(u) => modulus_of(&u.operand),
        _ => None,
    }
}

fn periodic_name(id: &str) -> bool {
    [
        "accum",
        "grad_acc",
        "sync_grad",
        "update_freq",
        "iters_to_acc",
    ]
    .iter()
    .any(|w| helpers::contains_ignore_ascii_case(id, w))
}

fn walk_names<'e>(expr: &'e Expr, f: &mut impl FnMut(&'e Expr)) {
    f(expr);
    match expr {
        Expr::BinOp(b) => {
            walk_names(&b.left, f);
            walk_names(&b.right, f);
        }
        Expr::Compare(c) => {
            walk_names(&c.left, f);
            c.comparators.iter().for_each(|e| walk_names(e, f));
        }
        Expr::BoolOp(b) => b.values.iter().for_each(|e| walk_names(e, f)),
        Expr::UnaryOp(u) => walk_names(&u.operand, f),
        Expr::Attribute(a) => walk_names(&a.value, f),
        Expr::Call(c) => {
            walk_names(&c.func, f);
            c.arguments.args.iter().for_each(|e| walk_names(e, f));
        }
        Expr::Subscript(s) => walk_names(&s.value, f),
        _ => {}
    }
}

/// A canonical key for an object expression: `a`, `a.b`, `a[0]`, `a["g"]`; `None` otherwise.
pub fn object_key(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Name(n) => Some(n.id.as_str().to_owned()),
        // A plain dotted chain in one allocation.
        Expr::Attribute(_) if root_is_name(expr) => helpers::dotted(expr),
        Expr::Attribute(a) => object_key(&a.value).map(|mut s| {
            s.push('.');
            s.push_str(a.attr.as_str());
            s
        }),
        Expr::Subscript(s) => {
            let base = object_key(&s.value)?;
            let idx = match &*s.slice {
                Expr::StringLiteral(l) => format!("{:?}", l.value.to_str()),
                e => helpers::int_value(e)?.to_string(),
            };
            Some(format!("{base}[{idx}]"))
        }
        _ => None,
    }
}

/// Is `expr` a name or an attribute chain on one (`a.b.c`)?
fn root_is_name(expr: &Expr) -> bool {
    match expr {
        Expr::Name(_) => true,
        Expr::Attribute(a) => root_is_name(&a.value),
        _ => false,
    }
}

fn root_name(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Attribute(a) => root_name(&a.value),
        Expr::Subscript(s) => root_name(&s.value),
        _ => None,
    }
}

/// The last name of an object key (`self.opt_g` -> `opt_g`, `opts[0]` -> `opts`).
fn last_name(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Name(n) => Some(n.id.as_str()),
        Expr::Attribute(a) => Some(a.attr.as_str()),
        Expr::Subscript(s) => last_name(&s.value),
        _ => None,
    }
}

/// The role a name suggests (weak evidence, used when the value kind is unknown).
pub fn role_from_name(name: &str) -> Role {
    // Case-insensitive without allocating, and the eight words in one pass over the name
    // (by their first letter): this runs for every receiver the flow walker classifies.
    const SCHED: u8 = 1;
    const SCALER: u8 = 2;
    const MODULE: u8 = 4;
    let b = name.as_bytes();
    let at =
        |i: usize, w: &[u8]| b.len() - i >= w.len() && b[i..i + w.len()].eq_ignore_ascii_case(w);
    let mut found = 0u8;
    for (i, c) in b.iter().enumerate() {
        found |= match c.to_ascii_lowercase() {
            b's' => {
                (if at(i, b"sched") { SCHED } else { 0 })
                    | (if at(i, b"scaler") { SCALER } else { 0 })
            }
            b'm' if at(i, b"model") => MODULE,
            b'n' if at(i, b"net") => MODULE,
            b'e' if at(i, b"encoder") => MODULE,
            b'd' if at(i, b"decoder") || at(i, b"discriminator") => MODULE,
            b'g' if at(i, b"generator") => MODULE,
            _ => 0,
        };
    }
    if found & SCHED != 0 {
        return Role::Scheduler(None);
    }
    if found & SCALER != 0 {
        return Role::Scaler;
    }
    let tokens_opt = name.split('_').any(|t| {
        t.eq_ignore_ascii_case("opt")
            || t.eq_ignore_ascii_case("opts")
            || t.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("optim"))
    });
    let camel_opt = name.strip_prefix("opt").is_some_and(|rest| {
        rest.chars()
            .next()
            .is_some_and(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    });
    let ends = |w: &str| {
        name.len() >= w.len()
            && name
                .get(name.len() - w.len()..)
                .is_some_and(|t| t.eq_ignore_ascii_case(w))
    };
    if tokens_opt || camel_opt || ends("optimizer") || ends("optimiser") {
        return Role::Optimizer;
    }
    if found & MODULE != 0 {
        return Role::Module;
    }
    Role::Unknown
}

fn role_from_kind(kind: &Kind) -> Option<Role> {
    Some(match kind {
        Kind::Optimizer(_) => Role::Optimizer,
        Kind::Scheduler(n) => Role::Scheduler(Some(n.clone())),
        Kind::GradScaler => Role::Scaler,
        Kind::Module => Role::Module,
        Kind::Unknown => return None,
        _ => Role::Other,
    })
}

const CLIP_FUNCTIONS: &[&str] = &[
    "torch.nn.utils.clip_grad_norm_",
    "torch.nn.utils.clip_grad_value_",
    "torch.nn.utils.clip_grad_norm",
    "torch.nn.utils.clip_grad.clip_grad_norm_",
    "torch.nn.utils.clip_grad.clip_grad_value_",
    "torch.nn.utils.clip_grad.clip_grad_norm",
];

/// Names of framework objects whose `.backward(loss)` takes the loss as argument.
fn framework_receiver(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    l.contains("accelerator")
        || l.contains("fabric")
        || l.contains("engine")
        || l.contains("deepspeed")
        || l == "self"
        || l == "trainer"
        || l == "model"
}

struct HelperFrame<'a> {
    call: &'a ExprCall,
    /// The inlined function.
    def: &'a ast::StmtFunctionDef,
    /// Parameter name -> argument expression at the call.
    params: Vec<(&'a str, &'a Expr)>,
    kinds: KindTable,
}

struct Walker<'a, 'i, 's> {
    input: &'i FlowInput<'a, 's>,
    events: Vec<Event<'a>>,
    guards: Vec<Guard<'a>>,
    top: &'a Stmt,
    stmt: &'a Stmt,
    helper: Option<HelperFrame<'a>>,
    /// Names bound to `scaler.scale(...)` (or `amp.scale_loss(...) as name`) in this iteration.
    scaled: Vec<(String, Obj)>,
    /// Loop variables of enclosing loops over a collection of optimizers (`for opt in
    /// self.optimizers:`), with the key that stands for every element (`self.optimizers[*]`).
    fanout: Vec<(&'a str, String)>,
    /// Names holding the mode an object had (`was_training = model.training`): the name's key
    /// and the object's key. `model.train(was_training)` restores that mode.
    saved_modes: Vec<(String, String)>,
}

impl<'a> Walker<'a, '_, '_> {
    // ----- objects -----

    fn obj(&self, expr: &'a Expr) -> Option<Obj> {
        let key = object_key(expr)?;
        let root = root_name(expr)?;
        // The loop variable of a loop over every optimizer stands for all of them.
        if let Some((_, all)) = self.fanout.iter().rev().find(|(n, _)| *n == root) {
            return Some(Obj {
                key: format!("{all}{}", &key[root.len()..]),
                role: if matches!(expr, Expr::Name(_)) {
                    Role::Optimizer
                } else {
                    role_from_name(last_name(expr).unwrap_or(root))
                },
                certain: false,
                range: expr.range(),
                helper_local: false,
            });
        }
        if let Some(h) = &self.helper {
            if let Some((_, arg)) = h.params.iter().find(|(p, _)| *p == root) {
                let arg_key = object_key(arg)?;
                let key = format!("{arg_key}{}", &key[root.len()..]);
                let kind_role = if matches!(expr, Expr::Name(_)) {
                    role_from_kind(&self.input.kinds.kind(arg))
                } else {
                    None
                };
                let (role, certain) = match kind_role {
                    Some(r) => (r, true),
                    None => (role_from_name(last_name(expr).unwrap_or(root)), false),
                };
                return Some(Obj {
                    key,
                    role,
                    certain,
                    range: expr.range(),
                    helper_local: false,
                });
            }
            let cx = KindContext {
                local: &h.kinds,
                ..self.input.kinds
            };
            let (role, certain) = match role_from_kind(&cx.kind(expr)) {
                Some(r) => (r, true),
                None => (role_from_name(last_name(expr).unwrap_or(root)), false),
            };
            return Some(Obj {
                key,
                role,
                certain,
                range: expr.range(),
                helper_local: root != "self" && h.kinds.get(root).is_some(),
            });
        }
        let (role, certain) = match role_from_kind(&self.input.kinds.kind(expr)) {
            Some(r) => (r, true),
            None => (role_from_name(last_name(expr).unwrap_or(root)), false),
        };
        Some(Obj {
            key,
            role,
            certain,
            range: expr.range(),
            helper_local: false,
        })
    }

    fn role(&self, expr: &'a Expr) -> Role {
        self.obj(expr).map_or(Role::Unknown, |o| o.role)
    }

    /// An event of a project function reached through `call`, placed at the call under the
    /// callee's own conditions (a [`Guard::Remote`]); the caller sets its object.
    fn push_remote(&mut self, call: &'a ExprCall, e: &crate::project::FlatEvent) -> &mut Event<'a> {
        self.guards.push(Guard::Remote {
            site: call.range(),
            condition: e.conditional,
            periodic: e.periodic,
            in_loop: e.in_loop,
        });
        let ev = self.push(e.kind, call.range(), None);
        ev.via = Some(call);
        ev.remote = Some(e.at);
        self.guards.pop();
        let last = self.events.len() - 1;
        &mut self.events[last]
    }

    fn push(
        &mut self,
        kind: EventKind,
        range: TextRange,
        call: Option<&'a ExprCall>,
    ) -> &mut Event<'a> {
        self.events.push(Event {
            kind,
            range,
            call,
            stmt: self.stmt,
            top: self.top,
            target: None,
            scaler: None,
            loss: None,
            retain_graph: false,
            closure: false,
            method_form: false,
            guards: self.guards.clone(),
            via: self.helper.as_ref().map(|h| h.call),
            remote: None,
        });
        let last = self.events.len() - 1;
        &mut self.events[last]
    }

    // ----- statements -----

    fn block(&mut self, body: &'a [Stmt], is_top: bool) {
        let pushed_before = self.guards.len();
        let mut exits = 0;
        for stmt in body {
            if is_top {
                self.top = stmt;
            }
            self.statement(stmt);
            if let Stmt::If(i) = stmt {
                if i.elif_else_clauses.is_empty()
                    && matches!(
                        i.body.last(),
                        Some(Stmt::Continue(_) | Stmt::Break(_) | Stmt::Return(_))
                    )
                {
                    self.guards.push(Guard::AfterExit {
                        stmt: i,
                        test: &i.test,
                        periodic: is_periodic_test(&i.test),
                    });
                    exits += 1;
                }
            }
        }
        self.guards.truncate(self.guards.len() - exits);
        debug_assert_eq!(self.guards.len(), pushed_before);
    }

    fn statement(&mut self, stmt: &'a Stmt) {
        let saved = std::mem::replace(&mut self.stmt, stmt);
        match stmt {
            Stmt::Expr(e) => self.expr(&e.value),
            Stmt::Assign(a) => {
                self.expr(&a.value);
                for t in &a.targets {
                    self.assigned(t, &a.value, stmt);
                }
            }
            Stmt::AnnAssign(a) => {
                if let Some(v) = &a.value {
                    self.expr(v);
                    self.assigned(&a.target, v, stmt);
                }
            }
            Stmt::AugAssign(a) => {
                self.expr(&a.value);
                if matches!(a.op, ast::Operator::Div | ast::Operator::Mult)
                    && has_grad_attribute(&a.target)
                {
                    self.push(EventKind::GradScale, stmt.range(), None);
                }
            }
            Stmt::Return(r) => {
                if let Some(v) = &r.value {
                    self.expr(v);
                }
            }
            Stmt::If(i) => {
                self.expr(&i.test);
                self.guards.push(Guard::If {
                    stmt: i,
                    clause: 0,
                    test: Some(&i.test),
                    periodic: is_periodic_test(&i.test) && !is_skip_schedule(&i.test),
                });
                self.block(&i.body, false);
                self.guards.pop();
                for (n, c) in i.elif_else_clauses.iter().enumerate() {
                    if let Some(t) = &c.test {
                        self.expr(t);
                    }
                    self.guards.push(Guard::If {
                        stmt: i,
                        clause: n + 1,
                        test: c.test.as_ref(),
                        periodic: c
                            .test
                            .as_ref()
                            .is_some_and(|t| is_periodic_test(t) && !is_skip_schedule(t)),
                    });
                    self.block(&c.body, false);
                    self.guards.pop();
                }
            }
            Stmt::For(f) => {
                self.expr(&f.iter);
                let over_params = self.iterates_params(&f.iter);
                // A loop over the optimizers (`for opt in self.optimizers:`) applies the event
                // to each of them in the same iteration: not a nested loop.
                let fanout = match (&*f.target, self.optimizer_collection(&f.iter)) {
                    (Expr::Name(n), Some(all)) => Some((n.id.as_str(), all)),
                    _ => None,
                };
                let pushed = fanout.is_some();
                self.guards.push(Guard::Loop {
                    stmt,
                    over_params: over_params || pushed,
                });
                if let Some(fo) = fanout {
                    self.fanout.push(fo);
                }
                self.block(&f.body, false);
                if pushed {
                    self.fanout.pop();
                }
                self.guards.pop();
            }
            Stmt::While(w) => {
                self.expr(&w.test);
                self.guards.push(Guard::Loop {
                    stmt,
                    over_params: false,
                });
                self.block(&w.body, false);
                self.guards.pop();
            }
            Stmt::With(w) => {
                let mut accumulate = false;
                for item in &w.items {
                    self.expr(&item.context_expr);
                    if let Expr::Call(c) = &item.context_expr {
                        if let Some((m, recv)) = helpers::method_call(c) {
                            accumulate |= matches!(m, "accumulate" | "no_sync");
                            if m == "scale_loss" {
                                if let (Some(v), Some(o)) = (&item.optional_vars, self.obj(recv)) {
                                    if let Some(k) = object_key(v) {
                                        self.scaled.push((k, o));
                                    }
                                }
                            }
                        }
                    }
                }
                self.guards.push(Guard::With {
                    stmt: w,
                    accumulate,
                });
                self.block(&w.body, false);
                self.guards.pop();
            }
            Stmt::Try(t) => {
                self.block(&t.body, false);
                for h in &t.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    self.guards.push(Guard::Except { handler: h });
                    self.block(&h.body, false);
                    self.guards.pop();
                }
                self.block(&t.orelse, false);
                self.block(&t.finalbody, false);
            }
            // Definitions do not run in place; other statements hold no training calls.
            _ => {}
        }
        self.stmt = saved;
    }

    /// `self.optimizers`, `opts`, `optimizers.values()`: a collection of optimizers (by its
    /// name), with the key standing for each element (`self.optimizers[*]`).
    fn optimizer_collection(&self, iter: &'a Expr) -> Option<String> {
        let inner = match iter {
            Expr::Call(c) => match helpers::method_call(c) {
                Some(("values", recv)) if c.arguments.is_empty() => recv,
                _ => return None,
            },
            e => e,
        };
        if !matches!(inner, Expr::Name(_) | Expr::Attribute(_)) {
            return None;
        }
        let name = last_name(inner)?.to_ascii_lowercase();
        let plural = name.ends_with("optimizers")
            || name.ends_with("optimisers")
            || name.ends_with("optims")
            || name == "opts"
            || name.ends_with("_opts");
        if !plural {
            return None;
        }
        Some(format!("{}[*]", object_key(inner)?))
    }

    fn iterates_params(&self, iter: &'a Expr) -> bool {
        let inner = match iter {
            Expr::Call(c) if helpers::name_of(&c.func) == Some("list") => {
                c.arguments.args.first().unwrap_or(iter)
            }
            e => e,
        };
        if let Expr::Call(c) = inner {
            if let Some((m, _)) = helpers::method_call(c) {
                if matches!(m, "parameters" | "named_parameters") {
                    return true;
                }
            }
        }
        if matches!(self.input.kinds.kind(inner), Kind::ParamGenerator) {
            return true;
        }
        last_name(inner).is_some_and(|n| n.to_ascii_lowercase().contains("param"))
    }

    fn assigned(&mut self, target: &'a Expr, value: &'a Expr, stmt: &'a Stmt) {
        if let Expr::Attribute(a) = value {
            if a.attr.as_str() == "training" {
                if let (Some(name), Some(o)) = (object_key(target), self.obj(&a.value)) {
                    self.saved_modes.retain(|(n, _)| *n != name);
                    self.saved_modes.push((name, o.key));
                }
            }
        }
        match target {
            Expr::Attribute(a) if a.attr.as_str() == "grad" => {
                let kind = if matches!(value, Expr::NoneLiteral(_)) {
                    EventKind::ZeroGrad
                } else {
                    EventKind::GradWrite
                };
                self.push(kind, stmt.range(), None);
            }
            Expr::Name(_) | Expr::Attribute(_) => {
                let Expr::Call(call) = value else { return };
                // `model = Net(...).to(dev).eval()`: the new object is put in eval mode (the
                // chain's object has no name of its own to carry the event).
                if let (base @ Expr::Call(_), Some(true)) = crate::dataflow::module_chain(value) {
                    if object_key(base).is_none() {
                        if let Some(mut o) = self.obj(target) {
                            if matches!(o.role, Role::Module | Role::Unknown) {
                                o.role = Role::Module;
                                self.push(EventKind::Eval, call.range(), Some(call)).target =
                                    Some(o);
                            }
                        }
                    }
                }
                if let Some((m, recv)) = helpers::method_call(call) {
                    if m == "scale" && self.role(recv) == Role::Scaler {
                        if let (Some(k), Some(o)) = (object_key(target), self.obj(recv)) {
                            self.scaled.push((k, o));
                        }
                        return;
                    }
                }
                let kind = match &self.helper {
                    Some(h) => KindContext {
                        local: &h.kinds,
                        ..self.input.kinds
                    }
                    .kind(value),
                    None => self.input.kinds.kind(value),
                };
                let created = matches!(kind, Kind::Optimizer(_))
                    || (kind == Kind::Unknown
                        && last_name(target).map(role_from_name) == Some(Role::Optimizer));
                if created {
                    if let Some(mut o) = self.obj(target) {
                        o.role = Role::Optimizer;
                        self.push(EventKind::OptimizerCreated, stmt.range(), Some(call))
                            .target = Some(o);
                    }
                }
            }
            _ => {}
        }
    }

    // ----- expressions -----

    fn expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Call(call) => self.call(call),
            Expr::Lambda(_) => {}
            Expr::Attribute(a) => self.expr(&a.value),
            Expr::BinOp(b) => {
                self.expr(&b.left);
                self.expr(&b.right);
            }
            Expr::UnaryOp(u) => self.expr(&u.operand),
            Expr::BoolOp(b) => b.values.iter().for_each(|v| self.expr(v)),
            Expr::Compare(c) => {
                self.expr(&c.left);
                c.comparators.iter().for_each(|v| self.expr(v));
            }
            Expr::Subscript(s) => {
                self.expr(&s.value);
                self.expr(&s.slice);
            }
            Expr::Tuple(t) => t.elts.iter().for_each(|v| self.expr(v)),
            Expr::List(t) => t.elts.iter().for_each(|v| self.expr(v)),
            Expr::Starred(s) => self.expr(&s.value),
            Expr::If(i) => {
                self.expr(&i.test);
                self.expr(&i.body);
                self.expr(&i.orelse);
            }
            Expr::Named(n) => self.expr(&n.value),
            Expr::Await(a) => self.expr(&a.value),
            Expr::Dict(d) => d.items.iter().for_each(|i| self.expr(&i.value)),
            Expr::FString(_) => {}
            _ => {}
        }
    }

    fn call(&mut self, call: &'a ExprCall) {
        // `scaler.scale(loss).backward()`: one event, the scale call is part of it.
        let scaled_backward = match helpers::method_call(call) {
            Some(("backward", Expr::Call(inner))) => match helpers::method_call(inner) {
                Some(("scale", s)) if self.role(s) == Role::Scaler => Some((inner, s)),
                _ => None,
            },
            _ => None,
        };
        match scaled_backward {
            Some((inner, _)) => {
                if let Expr::Attribute(a) = &*inner.func {
                    self.expr(&a.value);
                }
                inner.arguments.args.iter().for_each(|a| self.expr(a));
            }
            None => self.expr(&call.func),
        }
        for a in &call.arguments.args {
            self.expr(a);
        }
        for k in &call.arguments.keywords {
            self.expr(&k.value);
        }
        if let Some((inner, scaler)) = scaled_backward {
            let sc = self.obj(scaler);
            let loss = inner.arguments.args.first();
            let retain = retain_graph(call);
            let e = self.push(EventKind::Backward, call.range(), Some(call));
            e.scaler = sc;
            e.loss = loss;
            e.retain_graph = retain;
            return;
        }
        let before = self.events.len();
        self.classify(call);
        if self.events.len() == before {
            self.escapes(call);
        }
    }

    /// Record optimizers passed to an opaque call (not torch, not inlined).
    fn escapes(&mut self, call: &'a ExprCall) {
        if self
            .input
            .kinds
            .scopes
            .resolve(&call.func)
            .is_some_and(|q| q.starts_with("torch"))
        {
            return;
        }
        let args = call
            .arguments
            .args
            .iter()
            .chain(call.arguments.keywords.iter().map(|k| &k.value));
        for a in args {
            if !matches!(a, Expr::Name(_) | Expr::Attribute(_) | Expr::Subscript(_)) {
                continue;
            }
            if let Some(o) = self.obj(a).filter(|o| o.role == Role::Optimizer) {
                self.push(EventKind::Escape, call.range(), Some(call))
                    .target = Some(o);
            }
        }
    }

    fn classify(&mut self, call: &'a ExprCall) {
        let args = &call.arguments.args;
        if let Some((method, recv)) = helpers::method_call(call) {
            // `self.step(...)`, `self.train_one_epoch(...)`: a method of this class.
            if helpers::name_of(recv) == Some("self")
                && self.input.methods.iter().any(|f| f.name.as_str() == method)
            {
                self.inline_method(call, method);
                return;
            }
            // ... or of a base class in another file of the project.
            if helpers::name_of(recv) == Some("self")
                && !matches!(method, "backward" | "manual_backward")
                && self.inherited_method(call, method)
            {
                return;
            }
            // `engine.train_one_epoch(...)`: a function of a project module.
            if !matches!(
                method,
                "backward"
                    | "step"
                    | "zero_grad"
                    | "eval"
                    | "train"
                    | "update"
                    | "scale"
                    | "unscale_"
            ) {
                if let Some(q) = self.input.kinds.scopes.resolve(&call.func) {
                    if !q.starts_with("torch") {
                        self.project_call(call, &q);
                        return;
                    }
                }
            }
            match method {
                "backward" => {
                    let framework = !args.is_empty()
                        && last_name(recv).is_some_and(framework_receiver)
                        && !matches!(self.input.kinds.kind(recv), Kind::Tensor);
                    let (loss, scaler) = if framework {
                        (args.first(), None)
                    } else {
                        let sc = object_key(recv).and_then(|k| {
                            self.scaled
                                .iter()
                                .find(|(n, _)| *n == k)
                                .map(|(_, o)| o.clone())
                        });
                        (Some(recv), sc)
                    };
                    let retain = retain_graph(call);
                    let e = self.push(EventKind::Backward, call.range(), Some(call));
                    e.loss = loss;
                    e.scaler = scaler;
                    e.retain_graph = retain;
                    e.method_form = framework;
                }
                "manual_backward" if !args.is_empty() => {
                    let e = self.push(EventKind::Backward, call.range(), Some(call));
                    e.loss = args.first();
                    e.method_form = true;
                }
                "step" => {
                    let Some(o) = self.obj(recv) else { return };
                    match o.role {
                        Role::Scaler => {
                            let target = args.first().and_then(|a| self.obj(a));
                            let e = self.push(EventKind::Step, call.range(), Some(call));
                            e.target = target;
                            e.scaler = Some(o);
                        }
                        Role::Optimizer => {
                            let closure = !args.is_empty()
                                || helpers::keyword(call, "closure").is_some()
                                || helpers::has_kwargs_splat(call);
                            let e = self.push(EventKind::Step, call.range(), Some(call));
                            e.target = Some(o);
                            e.closure = closure;
                        }
                        Role::Scheduler(_) => {
                            self.push(EventKind::SchedulerStep, call.range(), Some(call))
                                .target = Some(o);
                        }
                        _ => {}
                    }
                }
                "zero_grad" => {
                    let o = self.obj(recv);
                    self.push(EventKind::ZeroGrad, call.range(), Some(call))
                        .target = o;
                }
                "zero_" if has_grad_attribute(recv) => {
                    self.push(EventKind::ZeroGrad, call.range(), Some(call));
                }
                "div_" | "mul_" if has_grad_attribute(recv) && args.len() == 1 => {
                    self.push(EventKind::GradScale, call.range(), Some(call));
                }
                "unscale_" => {
                    let sc = self.obj(recv);
                    let target = args.first().and_then(|a| self.obj(a));
                    let e = self.push(EventKind::ScalerUnscale, call.range(), Some(call));
                    e.scaler = sc;
                    e.target = target;
                }
                "update" if args.is_empty() && call.arguments.keywords.is_empty() => {
                    if let Some(o) = self.obj(recv).filter(|o| o.role == Role::Scaler) {
                        self.push(EventKind::ScalerUpdate, call.range(), Some(call))
                            .scaler = Some(o);
                    }
                }
                "scale" if args.len() == 1 => {
                    if let Some(o) = self.obj(recv).filter(|o| o.role == Role::Scaler) {
                        let e = self.push(EventKind::ScalerScale, call.range(), Some(call));
                        e.scaler = Some(o);
                        e.loss = args.first();
                    }
                }
                "clip_grad_norm_" | "clip_grad_value_" if !self.is_clip_function(call) => {
                    self.push(EventKind::ClipGrad, call.range(), Some(call))
                        .method_form = true;
                }
                "eval" | "train"
                    if args.len() + call.arguments.keywords.len() <= 1
                        && (args.len() == 1
                            || call.arguments.keywords.is_empty()
                            || (method == "train" && helpers::keyword(call, "mode").is_some())) =>
                {
                    // `model.cuda().eval()`, `model.to(device).train()`: those methods give
                    // the module itself back, so the switch is the model's.
                    let Some(o) = self.obj(crate::dataflow::module_chain(recv).0) else {
                        return;
                    };
                    if !matches!(o.role, Role::Module | Role::Unknown) {
                        return;
                    }
                    let mode = args.first().or_else(|| helpers::keyword(call, "mode"));
                    let kind = match (method, mode.and_then(helpers::is_truthy)) {
                        ("eval", _) | ("train", Some(false)) => EventKind::Eval,
                        // `model.train(was_training)` after `was_training = model.training`:
                        // the mode the model had is restored (a model that was training
                        // trains again), as a `@contextmanager` that evaluates temporarily
                        // does in its `finally` or after its `yield`.
                        ("train", None) if mode.is_some() => {
                            let restores = mode.and_then(object_key).is_some_and(|m| {
                                self.saved_modes.iter().any(|(n, k)| *n == m && *k == o.key)
                            });
                            if !restores {
                                return;
                            }
                            EventKind::Train
                        }
                        _ => EventKind::Train,
                    };
                    self.push(kind, call.range(), Some(call)).target = Some(o);
                }
                m if clears_grads_name(m) => {
                    self.push(EventKind::ZeroGrad, call.range(), Some(call));
                }
                _ => {
                    if self.is_clip_function(call) {
                        self.push(EventKind::ClipGrad, call.range(), Some(call));
                    } else if self.input.kinds.scopes.resolve(&call.func).as_deref()
                        == Some("torch.autograd.backward")
                    {
                        self.push(EventKind::Backward, call.range(), Some(call))
                            .loss = args.first();
                    } else if helpers::name_of(recv) == Some("self") {
                        // `self.net(x)`: a sub-module of a project class runs its forward.
                        self.instance_call(call);
                    } else {
                        self.object_method(call, method, recv);
                    }
                }
            }
            return;
        }
        if self.is_clip_function(call) {
            self.push(EventKind::ClipGrad, call.range(), Some(call));
            return;
        }
        let Some(name) = helpers::name_of(&call.func) else {
            return;
        };
        if let Some(q) = self.input.kinds.scopes.lookup_str(name) {
            if q == "torch.autograd.backward" {
                self.push(EventKind::Backward, call.range(), Some(call))
                    .loss = args.first();
                return;
            }
            self.project_call(call, q);
            return;
        }
        if clears_grads_name(name) {
            self.push(EventKind::ZeroGrad, call.range(), Some(call));
            return;
        }
        if !self.input.functions.iter().any(|f| f.name.as_str() == name) && self.instance_call(call)
        {
            return;
        }
        self.inline_function(call, name);
    }

    fn is_clip_function(&self, call: &ExprCall) -> bool {
        self.input
            .kinds
            .scopes
            .resolve(&call.func)
            .is_some_and(|q| CLIP_FUNCTIONS.contains(&q.as_str()))
    }

    // ----- one level of local-function summaries -----

    fn inline_function(&mut self, call: &'a ExprCall, name: &str) {
        let module_level = self.input.current.is_none() && self.helper.is_none();
        let f = helpers::visible_def(
            self.input.functions.iter().copied(),
            name,
            call.start(),
            module_level,
        );
        match f {
            Some(f) if self.helper.is_none() => self.inline(call, f, false),
            // Deeper than one level, or not a function the loop's file lists: the project
            // summary, when there is one.
            Some(f) => {
                if let Some(id) = self.project().and_then(|p| p.function_at(f.range.start())) {
                    self.summarised(call, id, false);
                }
            }
            None => {
                if self.helper.is_none() {
                    if let Some(crate::project::Entity::Function(id)) =
                        self.project().and_then(|p| p.local(name))
                    {
                        self.summarised(call, id, false);
                    }
                }
            }
        }
    }

    fn inline_method(&mut self, call: &'a ExprCall, name: &str) {
        let f = self
            .input
            .methods
            .iter()
            .find(|f| f.name.as_str() == name)
            .copied();
        match f {
            Some(f) if self.helper.is_none() => self.inline(call, f, true),
            Some(f) => {
                if let Some(id) = self.project().and_then(|p| p.function_at(f.range.start())) {
                    self.summarised(call, id, true);
                }
            }
            None => {}
        }
    }

    fn project(&self) -> Option<crate::project::ProjectFile> {
        self.input.kinds.classes.project().cloned()
    }

    /// A call of a project function through an import (`train_one_epoch(...)` from
    /// `engine`, `engine.train_one_epoch(...)`): the events of its summary.
    fn project_call(&mut self, call: &'a ExprCall, q: &str) {
        if self.helper.is_some() && self.input.current.is_none() {
            return;
        }
        let Some(p) = self.project() else { return };
        // (A constructor that trains is rare and not followed.)
        if let Some(crate::project::Entity::Function(id)) = p.entity(q) {
            self.summarised(call, id, false);
        }
    }

    /// `self.name(...)` where `name` is a method of a base class in another file.
    fn inherited_method(&mut self, call: &'a ExprCall, name: &str) -> bool {
        let Some(p) = self.project() else {
            return false;
        };
        let Some(cid) = self.input.class.and_then(|c| p.class_at(c.range.start())) else {
            return false;
        };
        match p.model.method(cid, name, 0) {
            Some(id) => {
                self.summarised(call, id, true);
                true
            }
            None => false,
        }
    }

    /// `discriminator.train_custom()`, `net.set_mode("valid")`: a method of a project module
    /// class (the only class defining that name) that puts the module or its sub-modules in
    /// training or evaluation mode; its `train()` / `eval()` events are the object's (a switch
    /// under a condition of the method stays conditional). A method that trains (a backward
    /// pass or an optimizer step) brings all its events, when it is the only one the call
    /// can run.
    fn object_method(&mut self, call: &'a ExprCall, method: &str, recv: &'a Expr) {
        if helpers::name_of(recv) == Some("self")
            || crate::classes::is_module_api(method)
            || !matches!(recv, Expr::Name(_) | Expr::Attribute(_))
        {
            return;
        }
        let Some(p) = self.project() else { return };
        // A method of an object built from a project class that is no module
        // (`self.validator.validate(decoder)`, see `Ref::Held`): its events, the object as
        // its `self` and the arguments as its parameters.
        let held = self.summary_function().and_then(|fid| {
            let g = p.summary().functions.get(fid.index as usize)?;
            let ci = g.calls.iter().position(|c| {
                c.range == call.range() && matches!(c.callee, crate::project::Ref::Held(..))
            })?;
            p.model.call_target(fid, ci)
        });
        if let Some(id) = held {
            let base = self.obj(recv);
            self.summarised_on(call, id, true, base);
            return;
        }
        // The methods the object's class may run, from the summary's record of this call; a
        // call the summary did not record (a function without training vocabulary) keeps to
        // the one module class method of that name.
        let ids = match self.summary_function().and_then(|fid| {
            p.summary()
                .functions
                .get(fid.index as usize)
                .and_then(|g| {
                    g.object_method_calls
                        .iter()
                        .find(|c| c.range == call.range())
                })
                .map(|c| p.model.object_call_methods(fid, c))
        }) {
            Some(ids) => ids,
            None => p.model.unique_module_method(method).into_iter().collect(),
        };
        if ids.is_empty() {
            return;
        }
        let Some(base) = self.obj(recv) else { return };
        if !matches!(base.role, Role::Module | Role::Unknown) {
            return;
        }
        // The one method it can be trains (`pi.train_policy()` of a REINFORCE policy, whose
        // body steps the module's own optimizer after `backward()`): all its events happen
        // at the call, on the object, as for a call of the module itself.
        if let [id] = ids[..] {
            if p.model.function_trains(id) {
                self.summarised_on(call, id, true, Some(base));
                return;
            }
        }
        for id in ids {
            for e in p.model.events(id) {
                if !matches!(e.kind, EventKind::Train | EventKind::Eval) {
                    continue;
                }
                let crate::project::Target::SelfAttr(a) = &e.target else {
                    continue;
                };
                let mut obj = base.clone();
                if !a.is_empty() {
                    obj.key.push('.');
                    obj.key.push_str(a);
                    obj.role = Role::Module;
                }
                self.push_remote(call, e).target = Some(obj);
            }
        }
    }

    /// The project function whose body this analysis walks: the inlined helper's, else the
    /// current function's, else the module body.
    fn summary_function(&self) -> Option<crate::project::FuncId> {
        let p = self.project()?;
        let def = match &self.helper {
            Some(h) => Some(h.def),
            None => self.input.current,
        };
        match def {
            Some(d) => p.function_at(d.range.start()),
            None => Some(crate::project::FuncId {
                file: p.file,
                index: 0,
            }),
        }
    }

    /// The events of a project function's summary (composed through its own calls), with its
    /// parameters mapped to the arguments of `call`.
    fn summarised(&mut self, call: &'a ExprCall, id: crate::project::FuncId, method: bool) {
        self.summarised_on(call, id, method, None);
    }

    /// `model(x)` / `self.net(x)`: calling an object that is an instance of a project module
    /// class runs its `forward` (the model's [`crate::project::InstanceCall`] fact): the
    /// forward's events (composed through what it calls) happen at the call, on the object
    /// (`self.zero_grad()` in the forward clears `model`'s gradients). False when the object
    /// is not known to be one.
    fn instance_call(&mut self, call: &'a ExprCall) -> bool {
        let Some(p) = self.project() else {
            return false;
        };
        let Some(fid) = self.summary_function() else {
            return false;
        };
        let Some(ic) = p
            .summary()
            .functions
            .get(fid.index as usize)
            .and_then(|g| g.instance_calls.iter().find(|c| c.range == call.range()))
        else {
            return false;
        };
        // A callable object that is not a module counts only when its call trains (the model's
        // `callable_object_target`).
        let Some(target) = p.model.instance_call_target(fid, &ic.recv).or_else(|| {
            p.model
                .callable_object_target(fid, &ic.recv)
                .filter(|&t| p.model.function_trains(t))
        }) else {
            return false;
        };
        if target == fid {
            return false;
        }
        let Some(recv) = self.obj(&call.func) else {
            return false;
        };
        self.summarised_on(call, target, true, Some(recv));
        true
    }

    /// [`Self::summarised`], with the callee's `self` standing for `recv` when given (a call
    /// of an instance) rather than for the caller's own `self` (a call of a method of the
    /// enclosing class).
    fn summarised_on(
        &mut self,
        call: &'a ExprCall,
        id: crate::project::FuncId,
        method: bool,
        recv: Option<Obj>,
    ) {
        use crate::project::{RoleTag, Target};
        let Some(p) = self.project() else { return };
        let model = p.model;
        let g = model.function(id);
        let shift = usize::from(method && g.params.first().is_some_and(|n| &**n == "self"));
        let callee_name = g.name.clone();
        for e in model.events(id) {
            if e.kind == EventKind::Escape {
                continue;
            }
            let role = match e.role {
                RoleTag::Optimizer => Role::Optimizer,
                RoleTag::Scheduler => Role::Scheduler(None),
                RoleTag::Scaler => Role::Scaler,
                RoleTag::Module => Role::Module,
                RoleTag::Other => Role::Other,
                RoleTag::Unknown => Role::Unknown,
            };
            let obj = match &e.target {
                Target::None => None,
                Target::Param(0, path) if recv.is_some() => recv.as_ref().map(|r| Obj {
                    key: format!("{}{path}", r.key),
                    role: if path.is_empty() {
                        r.role.clone()
                    } else {
                        role.clone()
                    },
                    ..r.clone()
                }),
                Target::SelfAttr(a) if recv.is_some() => recv.as_ref().map(|r| Obj {
                    key: if a.is_empty() {
                        r.key.clone()
                    } else {
                        format!("{}.{a}", r.key)
                    },
                    role: if a.is_empty() && r.role != Role::Unknown {
                        r.role.clone()
                    } else if a.is_empty() {
                        Role::Module
                    } else {
                        role.clone()
                    },
                    ..r.clone()
                }),
                Target::Param(i, path) => {
                    let i = *i as usize;
                    if method && i == 0 {
                        Some(Obj {
                            key: format!("self{path}"),
                            role: role.clone(),
                            certain: false,
                            range: call.range(),
                            helper_local: false,
                        })
                    } else {
                        let arg = i
                            .checked_sub(shift)
                            .and_then(|j| call.arguments.args.get(j))
                            .filter(|a| !matches!(a, Expr::Starred(_)))
                            .or_else(|| {
                                let pname = g.params.get(i)?;
                                helpers::keyword(call, pname)
                            });
                        match arg.and_then(|a| self.obj(a).map(|o| (a, o))) {
                            Some((_, mut o)) => {
                                o.key.push_str(path);
                                if o.role == Role::Unknown {
                                    o.role = role.clone();
                                }
                                Some(o)
                            }
                            None => Some(Obj {
                                key: format!("{callee_name}::<arg {i}>{path}"),
                                role: role.clone(),
                                certain: false,
                                range: call.range(),
                                helper_local: true,
                            }),
                        }
                    }
                }
                Target::SelfAttr(a) if method => Some(Obj {
                    key: format!("self.{a}"),
                    role: role.clone(),
                    certain: false,
                    range: call.range(),
                    helper_local: false,
                }),
                Target::SelfAttr(a) => Some(Obj {
                    key: format!("{callee_name}::self.{a}"),
                    role: role.clone(),
                    certain: false,
                    range: call.range(),
                    helper_local: true,
                }),
                Target::Global(k) | Target::Local(k) => Some(Obj {
                    key: format!("{callee_name}::{k}"),
                    role: role.clone(),
                    certain: false,
                    range: call.range(),
                    helper_local: true,
                }),
            };
            let ev = self.push_remote(call, e);
            match e.kind {
                EventKind::ScalerScale | EventKind::ScalerUpdate => ev.scaler = obj,
                EventKind::Backward
                | EventKind::ClipGrad
                | EventKind::GradWrite
                | EventKind::GradScale => {}
                _ => ev.target = obj,
            }
        }
    }

    fn inline(&mut self, call: &'a ExprCall, f: &'a ast::StmtFunctionDef, method: bool) {
        if self.input.current.is_some_and(|c| c.range() == f.range()) {
            return;
        }
        let positional: Vec<&'a ast::ParameterWithDefault> = f
            .parameters
            .posonlyargs
            .iter()
            .chain(f.parameters.args.iter())
            .skip(usize::from(method))
            .collect();
        let mut params: Vec<(&'a str, &'a Expr)> = Vec::new();
        for (p, a) in positional.iter().zip(call.arguments.args.iter()) {
            if matches!(a, Expr::Starred(_)) {
                break;
            }
            params.push((p.parameter.name.as_str(), a));
        }
        for k in &call.arguments.keywords {
            if let Some(arg) = &k.arg {
                params.push((arg.as_str(), &k.value));
            }
        }
        let kinds = KindTable::infer_function(
            f,
            self.input.kinds.scopes,
            self.input.kinds.classes,
            self.input.kinds.outer,
        );
        let saved_stmt = self.stmt;
        let saved_scaled = std::mem::take(&mut self.scaled);
        self.helper = Some(HelperFrame {
            call,
            def: f,
            params,
            kinds,
        });
        self.block(&f.body, false);
        self.helper = None;
        self.scaled = saved_scaled;
        self.stmt = saved_stmt;
    }
}

fn clears_grads_name(name: &str) -> bool {
    name != "zero_grad"
        && (name.contains("zero_grad")
            || name.contains("clear_grad")
            || name.contains("reset_grad"))
}

fn has_grad_attribute(expr: &Expr) -> bool {
    match expr {
        Expr::Attribute(a) => a.attr.as_str() == "grad" || has_grad_attribute(&a.value),
        _ => false,
    }
}

fn retain_graph(call: &ExprCall) -> bool {
    helpers::keyword(call, "retain_graph").is_some_and(|v| helpers::is_truthy(v) != Some(false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use torchvet_python::SourceFile;

    #[test]
    fn micro_batch_loops_are_bounded_and_not_over_data() {
        let loop_of = |src: &str| {
            let file = SourceFile::from_python("t.py", src.to_string());
            let module = file.parse().into_syntax();
            is_micro_batch_loop(&module.body[0])
        };
        assert!(loop_of("for _ in range(accum_steps):\n    pass\n"));
        assert!(loop_of("for _ in range(self.k):\n    pass\n"));
        assert!(loop_of(
            "for i in contexts(self.gradient_accumulate_every, ddps):\n    pass\n"
        ));
        assert!(!loop_of("for i in range(len(loader)):\n    pass\n"));
        assert!(!loop_of("for x, y in loader:\n    pass\n"));
        assert!(!loop_of("for x in batches(data, size):\n    pass\n"));
    }

    /// Analyse the first loop found in the function named `func` (or at module level when
    /// `func` is empty), then summarise each event as `kind target`.
    fn flow_of(src: &str, func: &str) -> Vec<String> {
        let (module, scopes, classes) = crate::test_support::module_context(src);
        let module_kinds = KindTable::infer(&module.body, None, &scopes, &classes, None);
        let functions: Vec<&ast::StmtFunctionDef> =
            crate::helpers::function_defs(&module.body).collect();
        let current = functions.iter().find(|f| f.name.as_str() == func).copied();
        let body: &[Stmt] = current.map_or(&module.body, |f| &f.body);
        let local = current.map(|f| {
            KindTable::infer(
                &f.body,
                Some(&f.parameters),
                &scopes,
                &classes,
                Some(&module_kinds),
            )
        });
        let loop_stmt = body
            .iter()
            .find(|s| matches!(s, Stmt::For(_) | Stmt::While(_)))
            .expect("a loop");
        let input = FlowInput {
            kinds: KindContext {
                local: local.as_ref().unwrap_or(&module_kinds),
                outer: Some(&module_kinds),
                attrs: None,
                scopes: &scopes,
                classes: &classes,
            },
            functions: &functions,
            methods: &[],
            current,
            class: None,
        };
        let flow = analyze_loop(loop_stmt, &input);
        flow.events
            .iter()
            .map(|e| {
                let mut s = format!("{:?}", e.kind);
                if let Some(t) = &e.target {
                    s.push_str(&format!(" {}:{:?}", t.key, t.role));
                }
                if let Some(sc) = &e.scaler {
                    s.push_str(&format!(" scaler={}", sc.key));
                }
                if e.is_conditional() {
                    s.push_str(" cond");
                }
                if e.periodic_guard().is_some() {
                    s.push_str(" periodic");
                }
                if e.via.is_some() {
                    s.push_str(" via");
                }
                s
            })
            .collect()
    }

    #[test]
    fn plain_loop_in_order() {
        let src = "import torch\nopt = torch.optim.SGD(ps)\nfor x, y in loader:\n    opt.zero_grad()\n    loss = crit(model(x), y)\n    loss.backward()\n    opt.step()\n";
        assert_eq!(
            flow_of(src, ""),
            ["ZeroGrad opt:Optimizer", "Backward", "Step opt:Optimizer"]
        );
    }

    #[test]
    fn amp_accumulation_and_periodic_guards() {
        let src = "import torch\nscaler = torch.amp.GradScaler()\nfor i, b in enumerate(loader):\n    scaler.scale(loss / k).backward()\n    if (i + 1) % k == 0:\n        scaler.unscale_(optimizer)\n        torch.nn.utils.clip_grad_norm_(ps, 1.0)\n        scaler.step(optimizer)\n        scaler.update()\n        optimizer.zero_grad(set_to_none=True)\n";
        assert_eq!(
            flow_of(src, ""),
            [
                "Backward scaler=scaler",
                "ScalerUnscale optimizer:Optimizer scaler=scaler cond periodic",
                "ClipGrad cond periodic",
                "Step optimizer:Optimizer scaler=scaler cond periodic",
                "ScalerUpdate scaler=scaler cond periodic",
                "ZeroGrad optimizer:Optimizer cond periodic",
            ]
        );
    }

    #[test]
    fn helper_functions_are_inlined_with_parameters_mapped() {
        let src = "import torch\ndef train_one_epoch(m, o, dl):\n    for x in dl:\n        o.zero_grad()\n        m(x).sum().backward()\n        o.step()\ndef main():\n    model = Net()\n    opt = torch.optim.AdamW(model.parameters())\n    sched = torch.optim.lr_scheduler.StepLR(opt, 10)\n    for epoch in range(3):\n        sched.step()\n        train_one_epoch(model, opt, loader)\n";
        assert_eq!(
            flow_of(src, "main"),
            [
                "SchedulerStep sched:Scheduler(Some(\"StepLR\"))",
                "ZeroGrad opt:Optimizer cond via",
                "Backward cond via",
                "Step opt:Optimizer cond via",
            ]
        );
    }

    #[test]
    fn continue_guards_param_loops_and_closures() {
        let src = "for step in range(n):\n    loss.backward()\n    if step % accum != 0:\n        continue\n    optimizer.step(closure)\n    for p in model.parameters():\n        p.grad = None\n    def inner():\n        optimizer.zero_grad()\n";
        assert_eq!(
            flow_of(src, ""),
            [
                "Backward",
                "Step optimizer:Optimizer cond periodic",
                "ZeroGrad cond periodic",
            ]
        );
    }

    #[test]
    fn framework_backward_scaled_names_and_look_alikes() {
        let src = "for batch in loader:\n    accelerator.backward(loss)\n    scaled = grad_scaler.scale(loss)\n    scaled.backward()\n    env.step(action)\n    lr_scheduler.step()\n    model.eval()\n    data.update()\n";
        assert_eq!(
            flow_of(src, ""),
            [
                "Backward",
                "ScalerScale scaler=grad_scaler",
                "Backward scaler=grad_scaler",
                "SchedulerStep lr_scheduler:Scheduler(None)",
                "Eval model:Module",
            ]
        );
    }

    #[test]
    fn optimizers_escaping_to_opaque_calls() {
        let src = "import torch\nfrom utils import after\nfor x in loader:\n    net(x).sum().backward()\n    opt.step()\n    after(opt)\n    log(net)\n    torch.save(opt, 'o.pt')\n";
        assert_eq!(
            flow_of(src, ""),
            ["Backward", "Step opt:Optimizer", "Escape opt:Optimizer"]
        );
    }

    #[test]
    fn self_methods_are_inlined() {
        let src = "import torch\nclass T:\n    def step(self, b):\n        self.opt.zero_grad()\n        self.net(b).backward()\n        self.opt.step()\n    def fit(self, loader):\n        for b in loader:\n            self.step(b)\n";
        let (module, scopes, classes) = crate::test_support::module_context(src);
        let empty = KindTable::default();
        let Stmt::ClassDef(c) = &module.body[1] else {
            panic!("class")
        };
        let methods: Vec<&ast::StmtFunctionDef> = crate::helpers::function_defs(&c.body).collect();
        let fit = methods[1];
        let input = FlowInput {
            kinds: KindContext {
                local: &empty,
                outer: None,
                attrs: None,
                scopes: &scopes,
                classes: &classes,
            },
            functions: &[],
            methods: &methods,
            current: Some(fit),
            class: None,
        };
        let flow = analyze_loop(&fit.body[0], &input);
        let kinds: Vec<EventKind> = flow.events.iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            [EventKind::ZeroGrad, EventKind::Backward, EventKind::Step]
        );
        assert!(flow.events.iter().all(|e| e.via.is_some()));
        assert_eq!(flow.events[2].target_key(), Some("self.opt"));
        let Stmt::For(f) = &fit.body[0] else {
            panic!("loop")
        };
        assert_eq!(flow.events[2].top.range(), f.body[0].range());
    }

    #[test]
    fn periodic_tests_and_modulus() {
        let parse = |s: &str| {
            let file = SourceFile::from_python("t.py", format!("if {s}:\n    pass\n"));
            let module = file.parse().into_syntax();
            let Stmt::If(i) = &module.body[0] else {
                panic!("not an if")
            };
            (*i.test).clone()
        };
        assert!(is_periodic_test(&parse("(i + 1) % k == 0")));
        assert!(is_periodic_test(&parse("ni - last_opt_step >= accumulate")));
        assert!(is_periodic_test(&parse("accelerator.sync_gradients")));
        assert!(!is_periodic_test(&parse("epoch > 0")));
        let t = parse("(i + 1) % args.accum == 0 or last");
        assert_eq!(
            modulus_of(&t).and_then(object_key).as_deref(),
            Some("args.accum")
        );
        assert_eq!(role_from_name("optD"), Role::Optimizer);
        assert_eq!(role_from_name("g_optimizer"), Role::Optimizer);
        assert_eq!(role_from_name("options"), Role::Unknown);
        assert_eq!(role_from_name("lr_sched"), Role::Scheduler(None));
        // The one-pass word test answers as a substring test per word, in the same order.
        for (name, role) in [
            ("LRScheduler_scaler", Role::Scheduler(None)),
            ("grad_SCALER", Role::Scaler),
            ("netG", Role::Module),
            ("vae_Encoder", Role::Module),
            ("text_decoder", Role::Module),
            ("D_discriminator_opt", Role::Optimizer),
            ("Generator", Role::Module),
            ("my_MODEL_optimizer", Role::Optimizer),
            ("scale", Role::Unknown),
            ("ne", Role::Unknown),
            ("sche", Role::Unknown),
            ("hidden_states", Role::Unknown),
        ] {
            assert_eq!(role_from_name(name), role, "{name}");
        }
    }
}

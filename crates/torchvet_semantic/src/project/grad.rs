//! Autograd across calls: is what a function returns differentiated by a caller, and does a
//! function only run with autograd off (every caller chain starts where the process turned it
//! off for good, or runs it under `no_grad`)? Built on the per-function
//! [`super::summary::GradFlow`] facts and the call sites; bounded by [`MAX_DEPTH`].
use super::facts::ArgPos;
use super::summary::ValueSinks;
use super::{FuncId, ProjectModel, MAX_DEPTH};
use rustc_hash::FxHashSet;

/// Visited (function, parameter or `u32::MAX` for its result, the call site the value
/// entered through).
type Seen = FxHashSet<(FuncId, u32, Option<(FuncId, u32)>)>;

impl ProjectModel {
    /// The autograd facts of function `f` (see [`super::FileSummary::grad_flow`]).
    pub(crate) fn grad_flow(&self, f: FuncId) -> &super::summary::GradFlow {
        self.files[f.file as usize].grad_flow(f.index)
    }

    /// Does some caller differentiate what `f` returns: the result reaches a `.backward()` or
    /// `torch.autograd.grad(...)` in the caller, or is returned by the caller to a caller that
    /// does, or is passed to a function that differentiates that parameter
    /// (`loss = train_loss(model, x); g = torch.autograd.grad(loss, params)`;
    /// `losses = computer.compute(...); losses["total"].backward()`)? Such a function needs
    /// its autograd graph. A module passed on to a function that trains it is not
    /// differentiated through, and a function that returns a module returns no graph.
    ///
    /// Context-sensitive through calls: a value passed into a function that returns it (a
    /// recurrent model's `forward(x, h)` returning the new `h`) comes back out at that call
    /// site only, not at every call of the function, so a sampling helper that feeds the
    /// hidden state back is not "differentiated" because the training loop differentiates
    /// what the same `forward` returns there.
    pub fn result_differentiated(&self, f: FuncId) -> bool {
        // A function that returns only numbers, lists, arrays or detached tensors returns no
        // graph, whatever its callers do with the result.
        if self.grad_flow(f).returns_graph_free {
            return false;
        }
        // A function that returns a module (`return model` after training it) returns no
        // graph, whatever its callers do with the module.
        if self.resolve_val(f, &self.func(f).returns, 0).kind == crate::kinds::Kind::Module {
            return false;
        }
        let mut seen = FxHashSet::default();
        self.result_diff(f, 0, &mut seen)
    }

    fn result_diff(&self, f: FuncId, depth: u32, seen: &mut Seen) -> bool {
        if depth > MAX_DEPTH || !seen.insert((f, u32::MAX, None)) {
            return false;
        }
        let Some(list) = self.sites.get(&f) else {
            return false;
        };
        list.iter()
            .any(|&(caller, ci, _)| self.call_result_diff(caller, ci as u32, &[], depth, seen))
    }

    /// Does the result of call `ci` of `caller` reach a differentiation (`ctx` as in
    /// [`Self::sinks_diff`])?
    fn call_result_diff(
        &self,
        caller: FuncId,
        ci: u32,
        ctx: &[(FuncId, u32)],
        depth: u32,
        seen: &mut Seen,
    ) -> bool {
        self.grad_flow(caller)
            .results
            .get(ci as usize)
            .is_some_and(|s| self.sinks_diff(caller, s, ctx, depth, seen))
    }

    /// Does parameter `i` of `f` reach a differentiation (in `f`, or through what `f` returns
    /// or passes on)?
    fn param_diff(
        &self,
        f: FuncId,
        i: usize,
        ctx: &[(FuncId, u32)],
        depth: u32,
        seen: &mut Seen,
    ) -> bool {
        if depth > MAX_DEPTH || !seen.insert((f, i as u32, ctx.last().copied())) {
            return false;
        }
        self.grad_flow(f)
            .params
            .get(i)
            .is_some_and(|s| self.sinks_diff(f, s, ctx, depth, seen))
    }

    /// Where one value of `f` goes (`s`). `ctx` holds the call sites the value entered
    /// through, innermost last: what `f` returns comes out at the last of them, or, when
    /// the value started in `f`, at every call of `f`.
    fn sinks_diff(
        &self,
        f: FuncId,
        s: &ValueSinks,
        ctx: &[(FuncId, u32)],
        depth: u32,
        seen: &mut Seen,
    ) -> bool {
        if s.differentiated {
            return true;
        }
        if s.returned {
            let back = match ctx.split_last() {
                Some((&(caller, ci), outer)) => {
                    self.call_result_diff(caller, ci, outer, depth + 1, seen)
                }
                None => self.result_diff(f, depth + 1, seen),
            };
            if back {
                return true;
            }
        }
        s.args.iter().any(|(ci, pos)| {
            let Some((callee, shift)) = self
                .targets
                .get(f.file as usize)
                .and_then(|t| t.get(f.index as usize))
                .and_then(|t| t.get(*ci as usize))
                .copied()
                .flatten()
            else {
                return false;
            };
            let index = match pos {
                ArgPos::Pos(i) => Some(*i as usize + shift),
                ArgPos::Kw(k) => self.func(callee).params.iter().position(|p| p == k),
            };
            // A module handed to a function that trains it (`train_model(model, ...)`) has
            // its parameters differentiated, not the history of the value: what built or
            // returned it needs no graph.
            index.is_some_and(|i| {
                if self.param_at(callee, i).kind == crate::kinds::Kind::Module {
                    return false;
                }
                let mut inner = ctx.to_vec();
                inner.push((f, *ci));
                self.param_diff(callee, i, &inner, depth + 1, seen)
            })
        })
    }

    /// Does `f` only run with autograd off: it has call sites, and each runs under
    /// `no_grad` / `inference_mode` (a block or a decorated caller), or after its caller
    /// turned autograd off for the process (`torch.set_grad_enabled(False)` as a statement
    /// before the call), or in a caller that itself only runs with autograd off. A method
    /// called only through objects (no resolved call site) runs with autograd off when every
    /// construction of its class comes after the process turned autograd off.
    pub fn runs_without_grad(&self, f: FuncId) -> bool {
        let mut seen = FxHashSet::default();
        self.without_grad(f, false, 0, &mut seen)
    }

    /// `process`: only a process-wide switch counts (the object escapes any `with` block).
    fn without_grad(
        &self,
        f: FuncId,
        process: bool,
        depth: u32,
        seen: &mut FxHashSet<(FuncId, u32)>,
    ) -> bool {
        if depth > MAX_DEPTH || !seen.insert((f, u32::from(process))) {
            return false;
        }
        match self.sites.get(&f) {
            Some(list) if !list.is_empty() => list.iter().all(|&(caller, ci, _)| {
                let g = self.func(caller);
                let call = &g.calls[ci];
                (!process && (call.no_grad || g.no_grad))
                    || self
                        .grad_flow(caller)
                        .grad_disabled_at
                        .is_some_and(|at| at < call.range.start())
                    || self.without_grad(caller, process, depth + 1, seen)
            }),
            _ => {
                // A method reached through objects: every construction of its class.
                let g = self.func(f);
                let Some(class) = g.class else {
                    return false;
                };
                if &*g.name == "__init__" {
                    return false;
                }
                let Some(init) = self
                    .class_summary(super::ClassId {
                        file: f.file,
                        index: class,
                    })
                    .methods
                    .iter()
                    .find(|(n, _)| &**n == "__init__")
                    .map(|(_, i)| FuncId {
                        file: f.file,
                        index: *i,
                    })
                else {
                    return false;
                };
                self.without_grad(init, true, depth + 1, seen)
            }
        }
    }
}

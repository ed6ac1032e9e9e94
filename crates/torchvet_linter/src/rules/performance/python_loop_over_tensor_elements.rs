use super::helpers::names_bound_in_loop;
use crate::checker::Checker;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers;
use torchvet_semantic::kinds::Kind;

crate::declare_rule! {
    /// ## What it does
    /// Checks for Python-level loops that do tensor work one element (or row) at a time:
    /// `for i in range(x.size(0)): out[i] = x[i] * w[i] + b`, and for tensors grown inside a
    /// loop with `x = torch.cat([x, y])`.
    ///
    /// ## Why is this bad?
    /// Each iteration runs in the Python interpreter and launches its own small kernels, so
    /// the loop costs thousands of times more than one vectorised operation over the whole
    /// tensor (`out = x * w + b`). Growing a tensor with `torch.cat` copies everything
    /// gathered so far on every iteration: quadratic time and memory traffic; collect the
    /// pieces in a list and concatenate once. Loops that call a model (real batched work per
    /// step, such as autoregressive decoding) are not reported. This rule is in preview: it
    /// recognises tensors by how they were created in the same function.
    ///
    /// ## Example
    /// ```python
    /// for i in range(x.size(0)):
    ///     out[i] = x[i] * w[i] + b
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// out = x * w + b
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: the vectorised form depends on what the loop computes.
    ///
    /// ## References
    /// - [Performance tuning guide](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html)
    /// - [torch.cat](https://pytorch.org/docs/stable/generated/torch.cat.html)
    pub(crate) static PYTHON_LOOP_OVER_TENSOR_ELEMENTS = {
        name: "python-loop-over-tensor-elements",
        code: "TV104",
        group: Performance,
        severity: Info,
        title: "Python-level per-element tensor loop, or a tensor grown with torch.cat in a loop",
        autofix: No,
        preview: true,
        hooks: { stmt: check_stmt, call: check_call },
    };
}

/// Does the body call a model: a known module, a `self.<attr>(...)`, or a callable that is a
/// parameter of the enclosing function?
fn calls_model(checker: &mut Checker, body: &[Stmt]) -> bool {
    struct Calls<'x>(Vec<&'x Expr>);
    impl<'x> Visitor<'x> for Calls<'x> {
        fn visit_expr(&mut self, e: &'x Expr) {
            if let Expr::Call(c) = e {
                self.0.push(&c.func);
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut calls = Calls(Vec::new());
    calls.visit_body(body);
    let mut params: Vec<String> = checker
        .function()
        .map(|f| f.parameters.iter().map(|p| p.name().to_string()).collect())
        .unwrap_or_default();
    // Loop variables (`for layer in self.children(): x = layer(x)`) called as functions.
    for l in &checker.frame().loops {
        if let Stmt::For(f) = l {
            if let Some(n) = helpers::name_of(&f.target) {
                params.push(n.to_string());
            }
        }
    }
    calls.0.into_iter().any(|f| {
        let looks_like_model = helpers::dotted(f).is_some_and(|d| {
            let d = d.to_ascii_lowercase();
            [
                "model", "module", "net", "encoder", "decoder", "forward", "generate",
            ]
            .iter()
            .any(|w| d.contains(w))
        });
        looks_like_model
            || matches!(f, Expr::Call(_))
            || helpers::self_attribute(f).is_some()
            || helpers::name_of(f).is_some_and(|n| params.iter().any(|p| p == n))
            || checker.kind_of(f) == Kind::Module
    })
}

fn check_call(checker: &mut Checker, call: &ExprCall, q: Option<&str>) {
    if !matches!(q, Some("torch.cat" | "torch.concat" | "torch.concatenate")) || !checker.in_loop()
    {
        return;
    }
    let Some(Stmt::Assign(assign)) = checker.current_stmt() else {
        return;
    };
    let [Expr::Name(target)] = &assign.targets[..] else {
        return;
    };
    let target_text = target.id.to_string();
    if assign.value.range() != call.range() {
        return;
    }
    let Some(seq) = call.arguments.args.first() else {
        return;
    };
    let elts = match seq {
        Expr::List(l) => &l.elts,
        Expr::Tuple(t) => &t.elts,
        _ => return,
    };
    if elts.len() != 2
        || !elts
            .iter()
            .any(|e| helpers::dotted(e).as_deref() == Some(target_text.as_str()))
    {
        return;
    }
    let Some(&innermost) = checker.frame().loops.last() else {
        return;
    };
    let body: &[Stmt] = match innermost {
        Stmt::For(f) => &f.body,
        Stmt::While(w) => &w.body,
        _ => return,
    };
    // Loop-carried: the name is bound nowhere else in the loop (not its target, not
    // recomputed earlier in the iteration).
    if names_bound_in_loop(innermost, Some(assign.range())).contains(&target_text) {
        return;
    }
    if calls_model(checker, body) {
        return;
    }
    // The accumulated tensor is read whole inside the loop (`torch.cat([row, col])` each
    // step): gathering pieces in a list would not remove the per-step cost.
    if read_elsewhere(body, assign, &target_text) {
        return;
    }
    // TorchScript / ONNX-export helpers use `torch.cat` growth as the scriptable idiom.
    if checker.function().is_some_and(|f| {
        f.decorator_list.iter().any(|d| {
            let e = match &d.expression {
                Expr::Call(c) => &*c.func,
                e => e,
            };
            checker
                .resolve(e)
                .is_some_and(|q| q.starts_with("torch.jit."))
        })
    }) {
        return;
    }
    let header = loop_header(innermost);
    checker
        .report(
            call.range(),
            format!(
                "`{target_text}` is grown with `torch.cat` on every iteration: each step copies everything gathered so far (quadratic); append the pieces to a list and concatenate once after the loop"
            ),
        )
        .add_related(header, "the loop that repeats the copy");
}

fn loop_header(s: &Stmt) -> TextRange {
    match s {
        Stmt::For(f) => TextRange::new(f.start(), f.iter.end()),
        Stmt::While(w) => TextRange::new(w.start(), w.test.end()),
        _ => s.range(),
    }
}

/// `range(T.size(0))`, `range(T.shape[0])`, `range(len(T))`: the tensor `T`.
fn ranged_tensor<'e>(checker: &mut Checker, iter: &'e Expr) -> Option<&'e Expr> {
    let Expr::Call(c) = iter else { return None };
    if helpers::name_of(&c.func) != Some("range") || c.arguments.args.len() != 1 {
        return None;
    }
    let bound = &c.arguments.args[0];
    let t = match bound {
        Expr::Call(s) => match helpers::method_call(s) {
            Some(("size", t))
                if s.arguments.args.len() == 1
                    && helpers::int_value(&s.arguments.args[0]) == Some(0) =>
            {
                t
            }
            _ if helpers::name_of(&s.func) == Some("len") && s.arguments.args.len() == 1 => {
                &s.arguments.args[0]
            }
            _ => return None,
        },
        Expr::Subscript(sub) => match &*sub.value {
            Expr::Attribute(a)
                if a.attr.as_str() == "shape" && helpers::int_value(&sub.slice) == Some(0) =>
            {
                &a.value
            }
            _ => return None,
        },
        _ => return None,
    };
    (checker.kind_of(t) == Kind::Tensor).then_some(t)
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::For(f) = stmt else { return };
    let Some(var) = helpers::name_of(&f.target) else {
        return;
    };
    let Some(tensor) = ranged_tensor(checker, &f.iter) else {
        return;
    };
    let Some(tensor_text) = helpers::dotted(tensor) else {
        return;
    };
    // An element-wise assignment `out[i] = ... T[i] ...` directly in the body.
    let element_assign = f.body.iter().find_map(|s| {
        let Stmt::Assign(a) = s else { return None };
        let indexed_target = a.targets.iter().any(|t| match t {
            Expr::Subscript(sub) => mentions(&sub.slice, var),
            _ => false,
        });
        (indexed_target && reads_element(&a.value, &tensor_text, var)).then(|| a.range())
    });
    let Some(assign) = element_assign else { return };
    if calls_model(checker, &f.body) {
        return;
    }
    let header = loop_header(stmt);
    let header_text = checker.text(header);
    checker
        .report(
            header,
            format!(
                "`{header_text}` does tensor arithmetic one element of `{tensor_text}` at a time: every iteration runs in Python and launches its own small kernels; write it as one operation on whole tensors"
            ),
        )
        .add_related(assign, "the per-element assignment");
}

fn mentions(e: &Expr, name: &str) -> bool {
    struct F<'n>(&'n str, bool);
    impl<'x> Visitor<'x> for F<'_> {
        fn visit_expr(&mut self, e: &'x Expr) {
            if helpers::name_of(e) == Some(self.0) {
                self.1 = true;
            }
            if !self.1 {
                visitor::walk_expr(self, e);
            }
        }
    }
    let mut f = F(name, false);
    f.visit_expr(e);
    f.1
}

/// Does `e` read `T[... i ...]`?
fn reads_element(e: &Expr, tensor: &str, var: &str) -> bool {
    struct F<'n> {
        tensor: &'n str,
        var: &'n str,
        hit: bool,
    }
    impl<'x> Visitor<'x> for F<'_> {
        fn visit_expr(&mut self, e: &'x Expr) {
            if let Expr::Subscript(s) = e {
                if helpers::dotted(&s.value).as_deref() == Some(self.tensor)
                    && mentions(&s.slice, self.var)
                {
                    self.hit = true;
                }
            }
            if !self.hit {
                visitor::walk_expr(self, e);
            }
        }
    }
    let mut f = F {
        tensor,
        var,
        hit: false,
    };
    f.visit_expr(e);
    f.hit
}

/// Is `name` read in `body` anywhere but in the statement `assign` itself?
fn read_elsewhere(body: &[Stmt], assign: &ruff_python_ast::StmtAssign, name: &str) -> bool {
    use ruff_python_ast::visitor::{walk_expr, walk_stmt, Visitor};
    struct Reads<'n> {
        name: &'n str,
        skip: TextRange,
        found: bool,
    }
    impl<'a> Visitor<'a> for Reads<'_> {
        fn visit_stmt(&mut self, s: &'a Stmt) {
            if s.range() != self.skip {
                walk_stmt(self, s);
            }
        }
        fn visit_expr(&mut self, e: &'a Expr) {
            if let Expr::Name(n) = e {
                if n.id.as_str() == self.name && matches!(n.ctx, ruff_python_ast::ExprContext::Load)
                {
                    self.found = true;
                }
            }
            walk_expr(self, e);
        }
    }
    let mut v = Reads {
        name,
        skip: assign.range(),
        found: false,
    };
    for s in body {
        v.visit_stmt(s);
    }
    v.found
}

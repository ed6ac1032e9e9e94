//! Small expression helpers shared by rules.
use ruff_python_ast::{self as ast, Expr, Number, UnaryOp};

/// A literal's value, as far as a rule needs it.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal<'a> {
    /// `True` / `False`.
    Bool(bool),
    /// An integer that fits in i64.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(std::borrow::Cow<'a, str>),
    /// `None`.
    None,
}

/// Evaluate a literal (with unary minus/not).
pub fn literal(expr: &Expr) -> Option<Literal<'_>> {
    match expr {
        Expr::BooleanLiteral(b) => Some(Literal::Bool(b.value)),
        Expr::NoneLiteral(_) => Some(Literal::None),
        Expr::NumberLiteral(n) => match &n.value {
            Number::Int(i) => i.as_i64().map(Literal::Int),
            Number::Float(f) => Some(Literal::Float(*f)),
            Number::Complex { .. } => None,
        },
        Expr::StringLiteral(s) => Some(Literal::Str(std::borrow::Cow::Borrowed(s.value.to_str()))),
        Expr::UnaryOp(u) => match (u.op, literal(&u.operand)?) {
            (UnaryOp::USub, Literal::Int(i)) => Some(Literal::Int(-i)),
            (UnaryOp::USub, Literal::Float(f)) => Some(Literal::Float(-f)),
            (UnaryOp::Not, l) => truthiness(&l).map(|b| Literal::Bool(!b)),
            _ => None,
        },
        _ => None,
    }
}

/// Python truthiness of a literal.
pub fn truthiness(l: &Literal) -> Option<bool> {
    Some(match l {
        Literal::Bool(b) => *b,
        Literal::Int(i) => *i != 0,
        Literal::Float(f) => *f != 0.0,
        Literal::Str(s) => !s.is_empty(),
        Literal::None => false,
    })
}

/// The literal truthiness of an expression, `None` when it depends on run-time values.
pub fn is_truthy(expr: &Expr) -> Option<bool> {
    literal(expr).as_ref().and_then(truthiness)
}

/// The integer value of a literal (bools count as 0/1).
pub fn int_value(expr: &Expr) -> Option<i64> {
    match literal(expr)? {
        Literal::Int(i) => Some(i),
        Literal::Bool(b) => Some(i64::from(b)),
        _ => None,
    }
}

/// The string value of a string literal.
pub fn str_value(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::StringLiteral(s) => Some(s.value.to_str()),
        _ => None,
    }
}

/// `x.attr(...)`: the method name and receiver of a call, when the callee is an attribute.
pub fn method_call(call: &ast::ExprCall) -> Option<(&str, &Expr)> {
    match &*call.func {
        Expr::Attribute(a) => Some((a.attr.as_str(), &a.value)),
        _ => None,
    }
}

/// A keyword argument's value.
pub fn keyword<'a>(call: &'a ast::ExprCall, name: &str) -> Option<&'a Expr> {
    call.arguments.find_keyword(name).map(|k| &k.value)
}

/// Does the call pass `**kwargs` (so any keyword may be present)?
pub fn has_kwargs_splat(call: &ast::ExprCall) -> bool {
    call.arguments.keywords.iter().any(|k| k.arg.is_none())
}

/// Does the call pass `*args`?
pub fn has_args_splat(call: &ast::ExprCall) -> bool {
    call.arguments
        .args
        .iter()
        .any(|a| matches!(a, Expr::Starred(_)))
}

/// Argument by keyword or position (only when no `*args` precedes that position).
pub fn argument<'a>(call: &'a ast::ExprCall, name: &str, position: usize) -> Option<&'a Expr> {
    if let Some(k) = keyword(call, name) {
        return Some(k);
    }
    let args = &call.arguments.args;
    if args
        .iter()
        .take(position + 1)
        .any(|a| matches!(a, Expr::Starred(_)))
    {
        return None;
    }
    args.get(position)
}

/// The last segment of a dotted name.
pub fn last_segment(q: &str) -> &str {
    q.rsplit('.').next().unwrap_or(q)
}

/// The name of a simple `Name` expression.
pub fn name_of(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Name(n) => Some(n.id.as_str()),
        _ => None,
    }
}

/// `self.x` -> `x`.
pub fn self_attribute(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Attribute(a) if name_of(&a.value) == Some("self") => Some(a.attr.as_str()),
        _ => None,
    }
}

/// Text of a dotted expression (`a.b.c`), unresolved.
pub fn dotted(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(a) => dotted(&a.value).map(|mut s| {
            s.push('.');
            s.push_str(a.attr.as_str());
            s
        }),
        _ => None,
    }
}

/// Every statement of a suite, descending into compound statements but not into nested
/// definitions.
pub fn for_each_own_stmt<'a>(
    body: &'a [ruff_python_ast::Stmt],
    f: &mut impl FnMut(&'a ruff_python_ast::Stmt),
) {
    use ruff_python_ast::Stmt;
    for stmt in body {
        f(stmt);
        match stmt {
            Stmt::For(s) => {
                for_each_own_stmt(&s.body, f);
                for_each_own_stmt(&s.orelse, f);
            }
            Stmt::While(s) => {
                for_each_own_stmt(&s.body, f);
                for_each_own_stmt(&s.orelse, f);
            }
            Stmt::If(s) => {
                for_each_own_stmt(&s.body, f);
                for c in &s.elif_else_clauses {
                    for_each_own_stmt(&c.body, f);
                }
            }
            Stmt::With(s) => for_each_own_stmt(&s.body, f),
            Stmt::Try(s) => {
                for_each_own_stmt(&s.body, f);
                for h in &s.handlers {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = h;
                    for_each_own_stmt(&h.body, f);
                }
                for_each_own_stmt(&s.orelse, f);
                for_each_own_stmt(&s.finalbody, f);
            }
            Stmt::Match(m) => {
                for c in &m.cases {
                    for_each_own_stmt(&c.body, f);
                }
            }
            _ => {}
        }
    }
}

/// The function definitions directly in a body (a module's functions, a class's methods).
pub fn function_defs(body: &[ast::Stmt]) -> impl Iterator<Item = &ast::StmtFunctionDef> {
    body.iter().filter_map(|s| match s {
        ast::Stmt::FunctionDef(f) => Some(f),
        _ => None,
    })
}

/// Does some name or attribute of the expression (`rank` in `str(args.rank)`) satisfy `pred`?
/// Lambdas are not entered.
pub fn any_identifier(e: &Expr, pred: &dyn Fn(&str) -> bool) -> bool {
    use ruff_python_ast::visitor::{self, Visitor};
    struct V<'p> {
        pred: &'p dyn Fn(&str) -> bool,
        found: bool,
    }
    impl<'a> Visitor<'a> for V<'_> {
        fn visit_expr(&mut self, e: &'a Expr) {
            if self.found {
                return;
            }
            match e {
                Expr::Name(n) => self.found = (self.pred)(n.id.as_str()),
                Expr::Attribute(a) => {
                    self.found = (self.pred)(a.attr.as_str());
                    visitor::walk_expr(self, e);
                }
                Expr::Lambda(_) => {}
                _ => visitor::walk_expr(self, e),
            }
        }
    }
    let mut v = V { pred, found: false };
    v.visit_expr(e);
    v.found
}

/// Does a call of `q` (a context manager or decorator, with its first positional argument)
/// turn autograd off: `torch.no_grad()`, `torch.inference_mode()` (not `inference_mode(False)`),
/// `torch.set_grad_enabled(False)`?
pub fn disables_grad(q: &str, first_arg: Option<&Expr>) -> bool {
    let first = first_arg.and_then(is_truthy);
    match q {
        "torch.no_grad" | "torch.autograd.no_grad" | "torch.autograd.grad_mode.no_grad" => true,
        "torch.inference_mode"
        | "torch.autograd.inference_mode"
        | "torch.autograd.grad_mode.inference_mode" => first != Some(false),
        "torch.set_grad_enabled"
        | "torch.autograd.set_grad_enabled"
        | "torch.autograd.grad_mode.set_grad_enabled" => first == Some(false),
        _ => false,
    }
}

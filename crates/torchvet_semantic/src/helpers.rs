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

/// Is `q` the qualified name of `torch.load` (also spelled `torch.serialization.load`)?
pub fn is_torch_load(q: &str) -> bool {
    TORCH_LOADS.contains(&q)
}

/// Is `q` the qualified name of `torch.save` (also spelled `torch.serialization.save`)?
pub fn is_torch_save(q: &str) -> bool {
    matches!(q, "torch.save" | "torch.serialization.save")
}

/// Is `value` a call that passes the name `id` as an argument (`model, losses = fit(model,
/// loader)`)? A name unpacked from such a call is, by the usual convention, the object handed
/// in, handed back: its earlier binding stands.
pub fn call_passes_name(value: &Expr, id: &str) -> bool {
    let Expr::Call(c) = value else { return false };
    c.arguments
        .args
        .iter()
        .chain(c.arguments.keywords.iter().map(|k| &k.value))
        .any(|a| matches!(a, Expr::Name(n) if n.id.as_str() == id))
}

/// The names of a tuple target paired with the values of a tuple of the same length
/// (`net, opt = Net(), SGD(...)`), when neither side has a starred element.
pub fn paired_elements<'a>(target: &'a Expr, value: &'a Expr) -> Option<Vec<(&'a Expr, &'a Expr)>> {
    let (Expr::Tuple(t), Expr::Tuple(v)) = (target, value) else {
        return None;
    };
    let starred = |e: &Expr| matches!(e, Expr::Starred(_));
    (t.elts.len() == v.elts.len() && !t.elts.iter().chain(&v.elts).any(starred))
        .then(|| t.elts.iter().zip(&v.elts).collect())
}

/// The qualified names of `torch.load`: the one list every rule and fact asks.
pub const TORCH_LOADS: &[&str] = &["torch.load", "torch.serialization.load"];

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

/// The names an assignment or loop target binds (a plain name, or inside a tuple, list or
/// starred unpacking), in order; attribute and subscript targets bind none.
pub fn bound_names<'a>(target: &'a Expr, out: &mut Vec<&'a str>) {
    for_each_bound_name(target, &mut |n| out.push(n));
}

/// [`bound_names`], one name at a time.
pub fn for_each_bound_name<'a>(target: &'a Expr, f: &mut impl FnMut(&'a str)) {
    match target {
        Expr::Name(n) => f(n.id.as_str()),
        Expr::Tuple(t) => t.elts.iter().for_each(|e| for_each_bound_name(e, f)),
        Expr::List(l) => l.elts.iter().for_each(|e| for_each_bound_name(e, f)),
        Expr::Starred(s) => for_each_bound_name(&s.value, f),
        _ => {}
    }
}

/// Is `e` the literal `0` or `0.0`?
pub fn is_literal_zero(e: &Expr) -> bool {
    match literal(e) {
        Some(Literal::Int(i)) => i == 0,
        Some(Literal::Float(f)) => f == 0.0,
        _ => false,
    }
}

/// Does the assignment target `target` bind `name` (a plain name, or inside a tuple, list or
/// starred unpacking)?
pub fn binds(target: &Expr, name: &str) -> bool {
    match target {
        Expr::Name(n) => n.id.as_str() == name,
        Expr::Tuple(t) => t.elts.iter().any(|e| binds(e, name)),
        Expr::List(l) => l.elts.iter().any(|e| binds(e, name)),
        Expr::Starred(s) => binds(&s.value, name),
        _ => false,
    }
}

/// Finds an expression satisfying a predicate, pre-order, nested definitions and lambdas
/// included (see [`any_expr`], [`any_expr_in`], [`any_expr_in_stmt`]).
struct FindExpr<'p> {
    pred: &'p dyn Fn(&Expr) -> bool,
    found: bool,
}

impl<'x> ruff_python_ast::visitor::Visitor<'x> for FindExpr<'_> {
    fn visit_expr(&mut self, e: &'x Expr) {
        if self.found {
            return;
        }
        if (self.pred)(e) {
            self.found = true;
            return;
        }
        ruff_python_ast::visitor::walk_expr(self, e);
    }
}

/// Does `expr` or any expression inside it satisfy `pred`?
pub fn any_expr(expr: &Expr, pred: impl Fn(&Expr) -> bool) -> bool {
    use ruff_python_ast::visitor::Visitor;
    let mut f = FindExpr {
        pred: &pred,
        found: false,
    };
    f.visit_expr(expr);
    f.found
}

/// Does any expression of the statements (nested definitions included) satisfy `pred`?
pub fn any_expr_in(body: &[ast::Stmt], pred: impl Fn(&Expr) -> bool) -> bool {
    use ruff_python_ast::visitor::Visitor;
    let mut f = FindExpr {
        pred: &pred,
        found: false,
    };
    f.visit_body(body);
    f.found
}

/// [`any_expr_in`] for one statement.
pub fn any_expr_in_stmt(stmt: &ast::Stmt, pred: impl Fn(&Expr) -> bool) -> bool {
    any_expr_in(std::slice::from_ref(stmt), pred)
}

/// Could this operand be a plain number (a count or a weight) rather than a tensor: a name
/// or attribute (`n`, `args.iterations`), `len(...)` / `int(...)` / `float(...)` of the
/// builtins (not rebound in `scopes`), a size (`x.size(0)`, `x.numel()`, `x.item()`,
/// `x.shape[0]`)? Arithmetic of a 0-dim tensor with one stays 0-dim.
pub fn may_be_count(e: &Expr, scopes: &crate::bindings::Scopes) -> bool {
    match e {
        Expr::Name(_) | Expr::Attribute(_) => true,
        Expr::Call(c) => match &*c.func {
            Expr::Name(n) => {
                matches!(n.id.as_str(), "len" | "int" | "float") && !scopes.is_bound(n.id.as_str())
            }
            Expr::Attribute(a) => matches!(a.attr.as_str(), "size" | "numel" | "item"),
            _ => false,
        },
        Expr::Subscript(s) => {
            matches!(&*s.value, Expr::Attribute(a) if a.attr.as_str() == "shape")
        }
        _ => false,
    }
}

/// What a call of the builtin `sum` (not rebound in `scopes`) adds up, as far as the suite
/// `body` shows it: a comprehension's element when it is a call (a bare name there is the
/// comprehension's own variable), a list literal's elements, or the values of a local list
/// filled only by appends ([`appended_values`]). `None` for any other call or argument.
pub fn summed_elements<'a>(
    call: &'a ast::ExprCall,
    body: &'a [ast::Stmt],
    scopes: &crate::bindings::Scopes,
) -> Option<Vec<&'a Expr>> {
    use ruff_text_size::Ranged;
    if name_of(&call.func) != Some("sum") || scopes.is_bound("sum") {
        return None;
    }
    let ([arg], true) = (&*call.arguments.args, call.arguments.keywords.is_empty()) else {
        return None;
    };
    match arg {
        Expr::ListComp(c) if matches!(&*c.elt, Expr::Call(_)) => Some(vec![&*c.elt]),
        Expr::Generator(g) if matches!(&*g.elt, Expr::Call(_)) => Some(vec![&*g.elt]),
        Expr::List(l) => Some(l.elts.iter().collect()),
        Expr::Name(n) => appended_values(body, n.id.as_str(), call.start()),
        _ => None,
    }
}

/// The iterable whose elements `name` takes in `for <target> in <iter>`: the iterable itself
/// for a plain target, the argument of `enumerate(...)` for `for i, name in enumerate(...)`.
pub fn loop_element_source<'a>(target: &Expr, iter: &'a Expr, name: &str) -> Option<&'a Expr> {
    match target {
        Expr::Name(t) if t.id.as_str() == name => Some(iter),
        Expr::Tuple(t) if t.elts.len() == 2 && name_of(&t.elts[1]) == Some(name) => {
            let Expr::Call(c) = iter else { return None };
            (name_of(&c.func) == Some("enumerate") && c.arguments.args.len() == 1)
                .then(|| &c.arguments.args[0])
        }
        _ => None,
    }
}

/// The values a local list holds at `before` when the suite builds it only by appending: bound
/// once, to a list literal (`losses = []`), then only `name.append(value)` statements, and no
/// other use of the name before `before` but as the argument of a builtin that only reads it
/// (`len`, `sum`, `print`, `min`, `max`) or as what a loop or comprehension iterates: nothing
/// it is passed to can change it. The literal's
/// elements and the appended values, in source order; `None` for any other list.
pub fn appended_values<'a>(
    body: &'a [ast::Stmt],
    name: &str,
    before: ruff_text_size::TextSize,
) -> Option<Vec<&'a Expr>> {
    use ruff_python_ast::visitor::{self, Visitor};
    use ruff_python_ast::Stmt;
    use ruff_text_size::Ranged;
    let mut values: Vec<&'a Expr> = Vec::new();
    let (mut bound, mut appends, mut other) = (0usize, 0usize, false);
    for_each_own_stmt(body, &mut |st: &'a Stmt| {
        if st.end() > before {
            return;
        }
        match st {
            Stmt::Assign(a) if matches!(a.targets.as_slice(), [t] if name_of(t) == Some(name)) => {
                match &*a.value {
                    Expr::List(l) => {
                        bound += 1;
                        values.extend(l.elts.iter());
                    }
                    _ => other = true,
                }
            }
            Stmt::Expr(e) => {
                if let Expr::Call(c) = &*e.value {
                    if let Expr::Attribute(at) = &*c.func {
                        if at.attr.as_str() == "append"
                            && name_of(&at.value) == Some(name)
                            && c.arguments.args.len() == 1
                            && c.arguments.keywords.is_empty()
                        {
                            appends += 1;
                            values.push(&c.arguments.args[0]);
                        }
                    }
                }
            }
            _ => {}
        }
    });
    if bound != 1 || other {
        return None;
    }
    // Every occurrence of the name before `before` is the binding or an append's receiver.
    struct Count<'n> {
        name: &'n str,
        before: ruff_text_size::TextSize,
        seen: usize,
        read_only: usize,
    }
    impl<'x> Visitor<'x> for Count<'_> {
        fn visit_stmt(&mut self, st: &'x Stmt) {
            if st.start() >= self.before || matches!(st, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                return;
            }
            if let Stmt::For(f) = st {
                if name_of(&f.iter) == Some(self.name) {
                    self.read_only += 1;
                }
            }
            visitor::walk_stmt(self, st);
        }
        fn visit_expr(&mut self, e: &'x Expr) {
            if e.start() >= self.before {
                return;
            }
            match e {
                Expr::Name(n) if n.id.as_str() == self.name => self.seen += 1,
                Expr::Call(c)
                    if matches!(
                        name_of(&c.func),
                        Some("len" | "sum" | "print" | "min" | "max")
                    ) =>
                {
                    self.read_only += c
                        .arguments
                        .args
                        .iter()
                        .filter(|a| name_of(a) == Some(self.name))
                        .count();
                }
                Expr::ListComp(ast::ExprListComp { generators, .. })
                | Expr::SetComp(ast::ExprSetComp { generators, .. })
                | Expr::DictComp(ast::ExprDictComp { generators, .. })
                | Expr::Generator(ast::ExprGenerator { generators, .. }) => {
                    self.read_only += generators
                        .iter()
                        .filter(|g| name_of(&g.iter) == Some(self.name))
                        .count();
                }
                _ => {}
            }
            visitor::walk_expr(self, e);
        }
    }
    let mut count = Count {
        name,
        before,
        seen: 0,
        read_only: 0,
    };
    count.visit_body(body);
    (count.seen == 1 + appends + count.read_only).then_some(values)
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
    // The length first, so the text is built in one allocation.
    fn len(expr: &Expr) -> Option<usize> {
        match expr {
            Expr::Name(n) => Some(n.id.len()),
            Expr::Attribute(a) => Some(len(&a.value)? + 1 + a.attr.len()),
            _ => None,
        }
    }
    fn push(expr: &Expr, s: &mut String) {
        match expr {
            Expr::Name(n) => s.push_str(n.id.as_str()),
            Expr::Attribute(a) => {
                push(&a.value, s);
                s.push('.');
                s.push_str(a.attr.as_str());
            }
            _ => {}
        }
    }
    let mut s = String::with_capacity(len(expr)?);
    push(expr, &mut s);
    Some(s)
}

/// Is `expr` the dotted expression written `text` (`dotted(expr).as_deref() == Some(text)`,
/// without building the text)?
pub fn is_dotted(expr: &Expr, text: &str) -> bool {
    match expr {
        Expr::Name(n) => n.id.as_str() == text,
        Expr::Attribute(a) => text
            .strip_suffix(a.attr.as_str())
            .and_then(|rest| rest.strip_suffix('.'))
            .is_some_and(|rest| is_dotted(&a.value, rest)),
        _ => false,
    }
}

/// Is `name` one of Python's builtins (functions, types and exception classes: `len`,
/// `print`, `isinstance`, `ValueError`)? Callers check first that nothing in the file binds
/// the name (see `bindings::Scopes::is_bound`).
pub fn is_python_builtin(name: &str) -> bool {
    matches!(
        name,
        "ArithmeticError"
            | "AssertionError"
            | "AttributeError"
            | "BaseException"
            | "BaseExceptionGroup"
            | "BlockingIOError"
            | "BrokenPipeError"
            | "BufferError"
            | "BytesWarning"
            | "ChildProcessError"
            | "ConnectionAbortedError"
            | "ConnectionError"
            | "ConnectionRefusedError"
            | "ConnectionResetError"
            | "DeprecationWarning"
            | "EOFError"
            | "EncodingWarning"
            | "EnvironmentError"
            | "Exception"
            | "ExceptionGroup"
            | "FileExistsError"
            | "FileNotFoundError"
            | "FloatingPointError"
            | "FutureWarning"
            | "GeneratorExit"
            | "IOError"
            | "ImportError"
            | "ImportWarning"
            | "IndentationError"
            | "IndexError"
            | "InterruptedError"
            | "IsADirectoryError"
            | "KeyError"
            | "KeyboardInterrupt"
            | "LookupError"
            | "MemoryError"
            | "ModuleNotFoundError"
            | "NameError"
            | "NotADirectoryError"
            | "NotImplementedError"
            | "OSError"
            | "OverflowError"
            | "PendingDeprecationWarning"
            | "PermissionError"
            | "ProcessLookupError"
            | "RecursionError"
            | "ReferenceError"
            | "ResourceWarning"
            | "RuntimeError"
            | "RuntimeWarning"
            | "StopAsyncIteration"
            | "StopIteration"
            | "SyntaxError"
            | "SyntaxWarning"
            | "SystemError"
            | "SystemExit"
            | "TabError"
            | "TimeoutError"
            | "TypeError"
            | "UnboundLocalError"
            | "UnicodeDecodeError"
            | "UnicodeEncodeError"
            | "UnicodeError"
            | "UnicodeTranslateError"
            | "UnicodeWarning"
            | "UserWarning"
            | "ValueError"
            | "Warning"
            | "ZeroDivisionError"
            | "abs"
            | "aiter"
            | "all"
            | "anext"
            | "any"
            | "ascii"
            | "bin"
            | "bool"
            | "breakpoint"
            | "bytearray"
            | "bytes"
            | "callable"
            | "chr"
            | "classmethod"
            | "compile"
            | "complex"
            | "delattr"
            | "dict"
            | "dir"
            | "divmod"
            | "enumerate"
            | "eval"
            | "exec"
            | "exit"
            | "filter"
            | "float"
            | "format"
            | "frozenset"
            | "getattr"
            | "globals"
            | "hasattr"
            | "hash"
            | "hex"
            | "id"
            | "input"
            | "int"
            | "isinstance"
            | "issubclass"
            | "iter"
            | "len"
            | "list"
            | "locals"
            | "map"
            | "max"
            | "memoryview"
            | "min"
            | "next"
            | "object"
            | "oct"
            | "open"
            | "ord"
            | "pow"
            | "print"
            | "property"
            | "quit"
            | "range"
            | "repr"
            | "reversed"
            | "round"
            | "set"
            | "setattr"
            | "slice"
            | "sorted"
            | "staticmethod"
            | "str"
            | "sum"
            | "super"
            | "tuple"
            | "type"
            | "vars"
            | "zip"
    )
}

/// Where offset `at` of a module is, for questions asked after the walk (`end` hooks, where
/// no frame of the visit is at hand): the innermost function definition holding it (`None`
/// at module level or directly in a class body), and the innermost simple statement holding
/// it (an assignment, a `return`, an expression statement; `None` when `at` is in a
/// compound statement's header or outside every statement).
pub fn location_at(
    module: &[ruff_python_ast::Stmt],
    at: ruff_text_size::TextSize,
) -> (
    Option<&ruff_python_ast::StmtFunctionDef>,
    Option<&ruff_python_ast::Stmt>,
) {
    use ruff_python_ast::Stmt;
    use ruff_text_size::Ranged;
    let holds = |s: &&Stmt| s.range().contains(at);
    let mut def = None;
    let mut suite = module;
    loop {
        let Some(s) = suite.iter().find(holds) else {
            return (def, None);
        };
        suite = match s {
            Stmt::FunctionDef(f) => {
                def = Some(f);
                &f.body
            }
            Stmt::ClassDef(c) => {
                def = None;
                &c.body
            }
            s => {
                let suites = suites_of(s);
                if suites.is_empty() {
                    return (def, Some(s));
                }
                // In a compound statement's header (`for x in DataLoader(...)`): no statement.
                match suites.into_iter().find(|b| b.iter().any(|x| holds(&x))) {
                    Some(b) => b,
                    None => return (def, None),
                }
            }
        };
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

/// Which of several same-named definitions a call of `name` at `at` runs. Code at module level
/// (a script, a notebook's cells) runs top to bottom, so it sees the last definition before the
/// call (`def val_loss` redefined in a later cell does not change an earlier cell's loop); a
/// call inside a function runs after the module has been loaded, so it sees the last
/// definition of the file. A module-level call before every definition falls back to the last.
pub fn visible_def<'a>(
    defs: impl Iterator<Item = &'a ast::StmtFunctionDef>,
    name: &str,
    at: ruff_text_size::TextSize,
    module_level: bool,
) -> Option<&'a ast::StmtFunctionDef> {
    let mut last = None;
    let mut before = None;
    for f in defs.filter(|f| f.name.as_str() == name) {
        if module_level && f.range.start() < at {
            before = Some(f);
        }
        last = Some(f);
    }
    before.or(last)
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

/// The suites a compound statement holds (a loop's body and `else`, each arm of an `if` or
/// `match`, a `with` body, every part of a `try`); empty for a simple statement.
pub fn suites_of(stmt: &ast::Stmt) -> Vec<&[ast::Stmt]> {
    use ruff_python_ast::Stmt;
    match stmt {
        Stmt::For(s) => vec![&s.body, &s.orelse],
        Stmt::While(s) => vec![&s.body, &s.orelse],
        Stmt::If(s) => std::iter::once(s.body.as_slice())
            .chain(s.elif_else_clauses.iter().map(|c| c.body.as_slice()))
            .collect(),
        Stmt::With(s) => vec![&s.body],
        Stmt::Try(s) => {
            let mut v: Vec<&[Stmt]> = vec![&s.body];
            for h in &s.handlers {
                let ast::ExceptHandler::ExceptHandler(h) = h;
                v.push(&h.body);
            }
            v.push(&s.orelse);
            v.push(&s.finalbody);
            v
        }
        Stmt::Match(m) => m.cases.iter().map(|c| c.body.as_slice()).collect(),
        _ => Vec::new(),
    }
}

/// The statements of `body` that run after the statement spanning `at` on every path that
/// completes it: its later siblings, then the later siblings of each compound statement that
/// holds it (an `if` arm's statement is followed by the rest of that arm, then by what follows
/// the `if`). Statements after a `return`, `raise`, `break` or `continue` in one of those
/// suites are not included, nor the other arms of a branch. Nested definitions are not
/// entered. Empty when `at` is no statement of `body`.
pub fn stmts_after_on_every_path(
    body: &[ast::Stmt],
    at: ruff_text_size::TextRange,
) -> Vec<&ast::Stmt> {
    use ruff_python_ast::Stmt;
    use ruff_text_size::Ranged;
    /// The statements of `suite` up to the first jump, and whether that jump leaves the
    /// function (`return`/`raise`: nothing after the suite runs on this path either).
    fn rest(suite: &[Stmt]) -> (&[Stmt], bool) {
        match suite.iter().position(|s| {
            matches!(
                s,
                Stmt::Return(_) | Stmt::Raise(_) | Stmt::Break(_) | Stmt::Continue(_)
            )
        }) {
            Some(end) => (
                &suite[..end],
                matches!(suite[end], Stmt::Return(_) | Stmt::Raise(_)),
            ),
            None => (suite, false),
        }
    }
    /// `None`: not found in `suite`; `Some(open)`: found, and the path still reaches the end
    /// of `suite` (`open`).
    fn find<'a>(
        suite: &'a [Stmt],
        at: ruff_text_size::TextRange,
        out: &mut Vec<&'a Stmt>,
    ) -> Option<bool> {
        for (i, s) in suite.iter().enumerate() {
            if !s.range().contains_range(at) {
                continue;
            }
            let open = if s.range() == at {
                true
            } else if matches!(s, Stmt::FunctionDef(_) | Stmt::ClassDef(_)) {
                return None;
            } else {
                suites_of(s)
                    .into_iter()
                    .find_map(|inner| find(inner, at, out))?
            };
            if open {
                let (later, leaves) = rest(&suite[i + 1..]);
                out.extend(later);
                return Some(!leaves);
            }
            return Some(false);
        }
        None
    }
    let mut out = Vec::new();
    find(body, at, &mut out);
    out
}

/// Which device a branch test selects, when it is a device test: `Some(true)` when the test
/// holds exactly when the code runs on a CUDA device (`torch.cuda.is_available()`, which the
/// caller recognises through `is_available` since it needs name resolution; `x.is_cuda`;
/// `device.type == "cuda"`; `device == "cuda"`; `str(device).startswith("cuda")`;
/// `"cuda" in str(device)`), `Some(false)` when it holds only off CUDA
/// (`device.type == "cpu"`, `device.type != "cuda"`, `not torch.cuda.is_available()`).
/// `None` for any other test: `device.type != "cpu"` may be an MPS device, so it is neither.
pub fn cuda_test(test: &Expr, is_available: &dyn Fn(&Expr) -> bool) -> Option<bool> {
    /// A device string: `Some(true)` for `"cuda"` / `"cuda:N"`, `Some(false)` for `"cpu"`.
    fn device_str(e: &Expr) -> Option<bool> {
        let s = str_value(e)?;
        if s == "cuda"
            || s.strip_prefix("cuda:")
                .is_some_and(|n| n.parse::<u32>().is_ok())
        {
            Some(true)
        } else if s == "cpu" {
            Some(false)
        } else {
            None
        }
    }
    /// Something that names a device: `x.device.type`, `device`, `self.device`, `str(device)`.
    fn names_device(e: &Expr) -> bool {
        match e {
            Expr::Attribute(a) => a.attr.as_str() == "type" || a.attr.as_str().contains("device"),
            Expr::Name(n) => n.id.as_str().contains("device"),
            Expr::Call(c) => {
                name_of(&c.func) == Some("str")
                    && c.arguments.args.len() == 1
                    && names_device(&c.arguments.args[0])
            }
            _ => false,
        }
    }
    match test {
        // `not` of a CUDA test is off CUDA; `not` of a CPU test may be any accelerator.
        Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOp::Not) => {
            (cuda_test(&u.operand, is_available) == Some(true)).then_some(false)
        }
        Expr::Attribute(a) if a.attr.as_str() == "is_cuda" => Some(true),
        Expr::Call(c) if c.arguments.is_empty() && is_available(&c.func) => Some(true),
        Expr::Call(c) => {
            let ("startswith", recv) = method_call(c)? else {
                return None;
            };
            if c.arguments.args.len() != 1 || !names_device(recv) {
                return None;
            }
            device_str(&c.arguments.args[0])
        }
        Expr::Compare(cmp) if cmp.ops.len() == 1 && cmp.comparators.len() == 1 => {
            let (l, r) = (&*cmp.left, &cmp.comparators[0]);
            match cmp.ops[0] {
                ast::CmpOp::Eq | ast::CmpOp::NotEq => {
                    let v = match (device_str(l), device_str(r)) {
                        (None, Some(v)) if names_device(l) => v,
                        (Some(v), None) if names_device(r) => v,
                        _ => return None,
                    };
                    match (cmp.ops[0], v) {
                        (ast::CmpOp::Eq, v) => Some(v),
                        (_, true) => Some(false),
                        (_, false) => None,
                    }
                }
                ast::CmpOp::In | ast::CmpOp::NotIn if names_device(r) => {
                    let v = device_str(l)?;
                    match (cmp.ops[0], v) {
                        (ast::CmpOp::In, v) => Some(v),
                        (_, true) => Some(false),
                        (_, false) => None,
                    }
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// Is the expression a NumPy array (or NumPy scalar), as its spelling shows: `t.numpy()`,
/// `t.cpu().numpy()[0]`, `a.astype(...)` / `a.reshape(...)` of one, or a call of a `numpy.`
/// function (`resolve` gives the qualified name of a callee: `np.asarray(x)` ->
/// `numpy.asarray`). A torch op given such a value raises before it computes anything.
pub fn is_numpy_value(e: &Expr, resolve: &dyn Fn(&Expr) -> Option<String>) -> bool {
    match e {
        Expr::Subscript(s) => is_numpy_value(&s.value, resolve),
        Expr::Call(c) => {
            if let Some((m, recv)) = method_call(c) {
                if m == "numpy" && c.arguments.is_empty() {
                    return true;
                }
                if matches!(m, "astype" | "reshape" | "squeeze" | "copy" | "transpose")
                    && is_numpy_value(recv, resolve)
                {
                    return true;
                }
            }
            resolve(&c.func).is_some_and(|q| q.starts_with("numpy."))
        }
        _ => false,
    }
}

/// Is this `try` the retry of an older library version that lacks a keyword argument: the
/// body passes `keyword=` to a call and a handler catching `TypeError` (the error of an
/// unexpected keyword) runs instead (`try: torch.load(p, weights_only=True) except
/// TypeError: torch.load(p)`, for torch < 1.13)? The handler runs only on such a version.
pub fn is_keyword_fallback_try(t: &ruff_python_ast::StmtTry, keyword: &str) -> bool {
    use ruff_python_ast::visitor::{self, Visitor};
    use ruff_python_ast::ExceptHandler;
    struct Passes<'k>(&'k str, bool);
    impl<'a> Visitor<'a> for Passes<'_> {
        fn visit_expr(&mut self, e: &'a Expr) {
            if let Expr::Call(c) = e {
                if c.arguments
                    .keywords
                    .iter()
                    .any(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == self.0))
                {
                    self.1 = true;
                }
            }
            visitor::walk_expr(self, e);
        }
    }
    let catches_type_error = t.handlers.iter().any(|h| {
        let ExceptHandler::ExceptHandler(h) = h;
        h.type_.as_deref().is_some_and(|ty| match ty {
            Expr::Tuple(tu) => tu.elts.iter().any(|e| name_of(e) == Some("TypeError")),
            e => name_of(e) == Some("TypeError"),
        })
    });
    if !catches_type_error {
        return false;
    }
    let mut v = Passes(keyword, false);
    v.visit_body(&t.body);
    v.1
}

/// The text of an f-string whose every interpolation `value` can spell (`None` when one
/// cannot, or has a format spec): `f"{root}/ckpt"` with `root` known.
pub fn fstring_text<'a>(
    f: &'a ast::ExprFString,
    mut value: impl FnMut(&'a ast::InterpolatedElement) -> Option<String>,
) -> Option<String> {
    let mut out = String::new();
    for part in f.value.iter() {
        match part {
            ast::FStringPart::Literal(l) => out.push_str(&l.value),
            ast::FStringPart::FString(fs) => {
                for el in fs.elements.iter() {
                    match el {
                        ast::InterpolatedStringElement::Literal(l) => out.push_str(&l.value),
                        ast::InterpolatedStringElement::Interpolation(i) => {
                            if i.format_spec.is_some() {
                                return None;
                            }
                            out.push_str(&value(i)?);
                        }
                    }
                }
            }
        }
    }
    Some(out)
}

/// Does `hay` contain `needle`? For short identifiers, where building a substring searcher
/// (as `str::contains` does) costs more than the search.
pub fn contains_short(hay: &str, needle: &str) -> bool {
    let n = needle.as_bytes();
    n.is_empty() || hay.as_bytes().windows(n.len()).any(|w| w == n)
}

/// Does `hay` contain `needle` (ASCII, any case), without allocating a lowercased copy? For
/// short identifiers, where building a substring searcher costs more than the search.
pub fn contains_ignore_ascii_case(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    let Some(&first) = n.first() else {
        return true;
    };
    if h.len() < n.len() {
        return false;
    }
    let first = first.to_ascii_lowercase();
    (0..=h.len() - n.len())
        .any(|i| h[i].to_ascii_lowercase() == first && h[i..i + n.len()].eq_ignore_ascii_case(n))
}

/// The expression of `body` (nested blocks and definitions included) whose range is exactly
/// `range`: turns a recorded origin (a kind table's "assigned here") back into its node.
pub fn expr_with_range(body: &[ast::Stmt], range: ruff_text_size::TextRange) -> Option<&Expr> {
    use ruff_python_ast::visitor::{self, Visitor};
    use ruff_text_size::Ranged;
    struct Find<'a> {
        range: ruff_text_size::TextRange,
        found: Option<&'a Expr>,
    }
    impl<'a> Visitor<'a> for Find<'a> {
        fn visit_stmt(&mut self, stmt: &'a ast::Stmt) {
            if self.found.is_none() && stmt.range().contains_range(self.range) {
                visitor::walk_stmt(self, stmt);
            }
        }
        fn visit_expr(&mut self, expr: &'a Expr) {
            if self.found.is_some() || !expr.range().contains_range(self.range) {
                return;
            }
            if expr.range() == self.range {
                self.found = Some(expr);
            } else {
                visitor::walk_expr(self, expr);
            }
        }
    }
    let mut f = Find { range, found: None };
    f.visit_body(body);
    f.found
}

/// `self.x = <value>` / `self.x: T = <value>` statements of a function body (nested blocks,
/// not nested definitions), with `x`, the value and the statement, in source order.
pub fn self_assignments(body: &[ast::Stmt]) -> Vec<(&str, &Expr, &ast::Stmt)> {
    let mut out = Vec::new();
    for_each_own_stmt(body, &mut |s| match s {
        ast::Stmt::Assign(a) => {
            for t in &a.targets {
                if let Some(x) = self_attribute(t) {
                    out.push((x, &*a.value, s));
                }
            }
        }
        ast::Stmt::AnnAssign(a) => {
            if let (Some(x), Some(v)) = (self_attribute(&a.target), a.value.as_deref()) {
                out.push((x, v, s));
            }
        }
        _ => {}
    });
    out
}

/// Every call of a suite in source pre-order (a call before the calls in its arguments), not
/// inside nested functions, classes or lambdas; with `skip_loops`, not inside nested
/// `for`/`while` statements either (one iteration of a loop body).
pub fn for_each_own_call<'a>(
    body: &'a [ast::Stmt],
    skip_loops: bool,
    f: &mut dyn FnMut(&'a ast::ExprCall),
) {
    use ruff_python_ast::visitor::{self, Visitor};
    struct Calls<'a, 'f> {
        skip_loops: bool,
        f: &'f mut dyn FnMut(&'a ast::ExprCall),
    }
    impl<'a> Visitor<'a> for Calls<'a, '_> {
        fn visit_stmt(&mut self, stmt: &'a ast::Stmt) {
            match stmt {
                ast::Stmt::FunctionDef(_) | ast::Stmt::ClassDef(_) => {}
                ast::Stmt::For(_) | ast::Stmt::While(_) if self.skip_loops => {}
                _ => visitor::walk_stmt(self, stmt),
            }
        }
        fn visit_expr(&mut self, expr: &'a Expr) {
            match expr {
                Expr::Lambda(_) => {}
                Expr::Call(c) => {
                    (self.f)(c);
                    visitor::walk_expr(self, expr);
                }
                _ => visitor::walk_expr(self, expr),
            }
        }
    }
    Calls { skip_loops, f }.visit_body(body);
}

/// The calls [`for_each_own_call`] visits (nested loops included), in that order.
pub fn own_calls(body: &[ast::Stmt]) -> Vec<&ast::ExprCall> {
    let mut out = Vec::new();
    for_each_own_call(body, false, &mut |c| out.push(c));
    out
}

/// The namespace of parsed command-line arguments: `parser.parse_args(...)`, or the first
/// element of `parser.parse_known_args(...)` (the second is the list of the other arguments).
pub fn parsed_cli_args(e: &Expr) -> bool {
    let call = match e {
        Expr::Call(c) => c,
        Expr::Subscript(s) => match &*s.value {
            Expr::Call(c) if int_value(&s.slice) == Some(0) => c,
            _ => return false,
        },
        _ => return false,
    };
    matches!(
        method_call(call),
        Some(("parse_args" | "parse_known_args", _))
    )
}

#[cfg(test)]
mod tests {
    use super::{contains_ignore_ascii_case, stmts_after_on_every_path};
    use ruff_python_ast::Stmt;
    use ruff_text_size::Ranged;
    use torchvet_python::parser::parse_module;

    #[test]
    fn location_at_finds_the_frame_and_statement() {
        let src = "x = 1\nclass T:\n    n = 2\n    def fit(self, loader):\n        for b in iter(loader):\n            if b:\n                y = f(b)\n";
        let parsed = parse_module(src).expect("parses");
        let body = &parsed.syntax().body;
        let at =
            |needle: &str| ruff_text_size::TextSize::try_from(src.find(needle).unwrap()).unwrap();
        let describe = |needle: &str| {
            let (def, stmt) = super::location_at(body, at(needle));
            (
                def.map(|f| f.name.to_string()),
                stmt.map(|s| src[s.range()].to_string()),
            )
        };
        assert_eq!(
            describe("f(b)"),
            (Some("fit".into()), Some("y = f(b)".into()))
        );
        // A compound statement's header holds no simple statement.
        assert_eq!(describe("iter("), (Some("fit".into()), None));
        // A class body is no function; module level neither.
        assert_eq!(describe("n = 2"), (None, Some("n = 2".into())));
        assert_eq!(describe("x = 1"), (None, Some("x = 1".into())));
    }

    /// The source lines of the statements that follow line `line` (1-based) of `src`.
    fn after(src: &str, line: usize) -> Vec<String> {
        let parsed = parse_module(src).expect("parses");
        let Stmt::FunctionDef(f) = &parsed.syntax().body[0] else {
            panic!("a function")
        };
        let start = src
            .lines()
            .take(line - 1)
            .map(|l| l.len() + 1)
            .sum::<usize>();
        let mut at = None;
        super::for_each_own_stmt(&f.body, &mut |s| {
            if s.start().to_usize()
                == start
                    + (src.lines().nth(line - 1).unwrap().len()
                        - src.lines().nth(line - 1).unwrap().trim_start().len())
            {
                at = Some(s.range());
            }
        });
        stmts_after_on_every_path(&f.body, at.expect("a statement on that line"))
            .into_iter()
            .map(|s| src[s.range()].lines().next().unwrap().trim().to_string())
            .collect()
    }

    #[test]
    fn later_siblings_then_enclosing_suites_not_other_arms() {
        let src = "def f(k):\n    if k:\n        a = 1\n        for i in range(3):\n            a += i\n        b = a\n    else:\n        c = 2\n    d = 3\n";
        assert_eq!(after(src, 3), ["for i in range(3):", "b = a", "d = 3"]);
        assert_eq!(after(src, 8), ["d = 3"]);
        assert_eq!(after(src, 9), Vec::<String>::new());
    }

    #[test]
    fn a_return_ends_the_path() {
        let src = "def f(k):\n    if k:\n        a = 1\n        return a\n    d = 3\n";
        assert!(after(src, 3).is_empty());
        let src = "def f(k):\n    for x in k:\n        a = 1\n        break\n    d = 3\n";
        assert_eq!(after(src, 3), ["d = 3"]);
    }

    fn expr(src: &str) -> ruff_python_ast::Expr {
        let parsed = parse_module(src).expect("parses");
        let Stmt::Expr(e) = &parsed.syntax().body[0] else {
            panic!("an expression")
        };
        (*e.value).clone()
    }

    #[test]
    fn device_tests() {
        let avail = |f: &ruff_python_ast::Expr| {
            super::dotted(f).as_deref() == Some("torch.cuda.is_available")
        };
        let t = |src: &str| super::cuda_test(&expr(src), &avail);
        assert_eq!(t("torch.cuda.is_available()"), Some(true));
        assert_eq!(t("not torch.cuda.is_available()"), Some(false));
        assert_eq!(t("x.device.type == 'cuda'"), Some(true));
        assert_eq!(t("device.type == \"cpu\""), Some(false));
        assert_eq!(t("device.type != 'cuda'"), Some(false));
        assert_eq!(t("device.type != 'cpu'"), None);
        assert_eq!(t("not device.type == 'cpu'"), None);
        assert_eq!(t("x.is_cuda"), Some(true));
        assert_eq!(t("str(device).startswith('cuda')"), Some(true));
        assert_eq!(t("'cuda' in str(self.device)"), Some(true));
        assert_eq!(t("use_events"), None);
        assert_eq!(t("mode == 'cuda'"), None);
    }

    #[test]
    fn numpy_values() {
        let resolve =
            |f: &ruff_python_ast::Expr| super::dotted(f).map(|d| d.replacen("np.", "numpy.", 1));
        let n = |src: &str| super::is_numpy_value(&expr(src), &resolve);
        assert!(n("out.data.cpu().numpy()"));
        assert!(n("t.numpy()[0]"));
        assert!(n("t.numpy().astype('float32')"));
        assert!(n("np.asarray(x)"));
        assert!(!n("out.data.cpu()"));
        assert!(!n("model(x)"));
        assert!(!n("x.numpy(force=True).to_tensor()"));
    }

    #[test]
    fn contains_ignore_ascii_case_matches_any_case() {
        assert!(contains_ignore_ascii_case("lr_Scheduler", "sched"));
        assert!(contains_ignore_ascii_case("NET", "net"));
        assert!(contains_ignore_ascii_case("x", ""));
        assert!(!contains_ignore_ascii_case("ne", "net"));
        assert!(!contains_ignore_ascii_case("n\u{e9}t", "net"));
    }
}

use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt, StmtFunctionDef};
use ruff_text_size::{Ranged, TextSize};

crate::declare_rule! {
    /// ## What it does
    /// Checks `__init__` and `forward` of `nn.Module` subclasses for mutable default
    /// arguments: list, dict and set displays, `nn` module instances and tensors.
    ///
    /// ## Why is this bad?
    /// Python evaluates a default once, when the `def` runs, and every call shares that one
    /// object. A default `act=nn.ReLU()` is harmless, but a default `norm=nn.LayerNorm(256)`
    /// or a default tensor is the same object in every instance: the "separate" layers share
    /// (tie) their weights, and in-place changes leak between instances. A default list that
    /// the constructor appends to grows with every model created.
    ///
    /// ## Example
    /// ```python
    /// class MLP(nn.Module):
    ///     def __init__(self, hidden=[256, 256], act=nn.ReLU()):
    ///         super().__init__()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// class MLP(nn.Module):
    ///     def __init__(self, hidden=(256, 256), act=None):
    ///         super().__init__()
    ///         act = act if act is not None else nn.ReLU()
    /// ```
    ///
    /// ## Fix safety
    /// The fix replaces the default with `None` and creates the value at the top of the body
    /// (`if act is None: act = nn.ReLU()`). Callers that pass `None` explicitly now get the
    /// default instead, and instances stop sharing the object, so the fix is unsafe. It is
    /// offered only when the body starts on its own line.
    ///
    /// ## References
    /// - [Python tutorial: default argument values](https://docs.python.org/3/tutorial/controlflow.html#default-argument-values)
    /// - [pylint W0102 dangerous-default-value](https://pylint.readthedocs.io/en/latest/user_guide/messages/warning/dangerous-default-value.html)
    /// - [Lightning-AI/pytorch-lightning#20412](https://github.com/Lightning-AI/pytorch-lightning/issues/20412)
    pub(crate) static MUTABLE_DEFAULT_IN_MODULE_INIT = {
        name: "mutable-default-in-module-init",
        code: "TV112",
        group: Style,
        severity: Info,
        title: "Mutable default arguments (list/dict/nn.Module/tensor) in nn.Module __init__/forward",
        autofix: Yes,
        hooks: { stmt: check_stmt },
    };
}

/// Torch tensor factories.
fn is_tensor_factory(q: &str) -> bool {
    matches!(
        q.strip_prefix("torch."),
        Some(
            "tensor"
                | "as_tensor"
                | "zeros"
                | "ones"
                | "empty"
                | "full"
                | "rand"
                | "randn"
                | "arange"
                | "linspace"
                | "eye"
                | "Tensor"
                | "FloatTensor"
                | "LongTensor"
        )
    )
}

/// What kind of shared object a default is, if mutable.
fn mutable_kind(checker: &Checker, default: &Expr) -> Option<&'static str> {
    match default {
        Expr::List(_) | Expr::ListComp(_) => Some("list"),
        Expr::Dict(_) | Expr::DictComp(_) => Some("dict"),
        Expr::Set(_) | Expr::SetComp(_) => Some("set"),
        Expr::Call(c) => {
            let q = checker.resolve(&c.func)?;
            if torchvet_semantic::constructs_module(&q) && q.starts_with("torch.nn.") {
                Some("module")
            } else if is_tensor_factory(&q) || q == "torch.nn.Parameter" {
                Some("tensor")
            } else {
                None
            }
        }
        _ => None,
    }
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::FunctionDef(func) = stmt else {
        return;
    };
    if !matches!(func.name.as_str(), "__init__" | "forward") {
        return;
    }
    // The def must be directly in the body of an nn.Module subclass.
    let Some(class) = checker.class() else { return };
    if !class.is_module || !class.def.body.iter().any(|s| std::ptr::eq(s, stmt)) {
        return;
    }
    let mut found = Vec::new();
    for p in func.parameters.iter_non_variadic_params() {
        let Some(default) = p.default.as_deref() else {
            continue;
        };
        if let Some(kind) = mutable_kind(checker, default) {
            found.push((p.parameter.name.as_str(), default, kind));
        }
    }
    if found.is_empty() {
        return;
    }
    let insert = body_insertion(checker, func);
    let class_name = class.def.name.as_str();
    for (name, default, kind) in found {
        let what = match kind {
            "module" => {
                "one module instance is shared by every model built with the default (a layer with parameters ends up with the same, tied weights in all of them)"
            }
            "tensor" => "one tensor is shared by every model built with the default",
            _ => "one object is shared by every call (mutations leak between instances)",
        };
        let text = checker.text(default.range());
        let fix = insert.as_ref().map(|(at, indent)| {
            RawFix::unsafe_edit(
                format!("Default `{name}` to `None` and create it in the body"),
                vec![
                    RawEdit::replace(default.range(), "None"),
                    RawEdit::insert(
                        *at,
                        format!("if {name} is None:\n{indent}    {name} = {text}\n{indent}"),
                    ),
                ],
            )
        });
        let diagnostic = checker.report(
            default.range(),
            format!(
                "the default `{name}={text}` of `{class_name}.{}` is evaluated once: {what}",
                func.name
            ),
        );
        if let Some(fix) = fix {
            diagnostic.set_fix(fix);
        }
    }
}

/// Where to insert set-up code in the body (after a docstring), with the body's indentation;
/// `None` when the body does not start on a line of its own.
fn body_insertion(checker: &Checker, func: &StmtFunctionDef) -> Option<(TextSize, String)> {
    let first = func.body.first()?;
    let is_doc = matches!(first, Stmt::Expr(e) if e.value.is_string_literal_expr());
    let target = if is_doc { func.body.get(1)? } else { first };
    let indent = crate::fix::own_line_indent(checker, target.start())?;
    if indent.is_empty() {
        return None;
    }
    let line_start = target.start().to_usize() - indent.len();
    if func.start().to_usize() >= line_start {
        return None;
    }
    Some((target.start(), indent.to_string()))
}

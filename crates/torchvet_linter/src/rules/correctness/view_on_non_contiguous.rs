use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, ExprCall, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::dataflow::Prop;
use torchvet_semantic::helpers;
use torchvet_semantic::project::{Lit, ParamDefault};

crate::declare_rule! {
    /// ## What it does
    /// Checks for `.view(...)` on a tensor that comes from `transpose`, `permute`, `.t()`,
    /// `.T`, `.mT`, `swapaxes`, `movedim` or `expand` (directly, through assignments, slicing
    /// and elementwise ops) with no `.contiguous()`, `.clone()` or `.reshape()` in between,
    /// when the view has to merge dimensions that the layout change separated in memory:
    /// `view(-1)`, or fewer sizes than the tensor has runs of memory-adjacent dimensions
    /// (`x.permute(0, 2, 1, 3).view(b, t, -1)`).
    ///
    /// ## Why is this bad?
    /// `transpose`/`permute`/`expand` only change strides; the data is not moved. `view` can
    /// only merge dimensions that are adjacent in memory, so on such a tensor it raises
    /// `RuntimeError: view size is not compatible with input tensor's size and stride`. The
    /// code often runs in tests where a size is 1 and fails later on real shapes. Views that
    /// only split dimensions, or merge dimensions still adjacent in memory
    /// (`x.permute(0, 2, 3, 1).view(n, -1, c)`), work and are not reported; so are two
    /// layout changes in a row, which may cancel out. So is the first row of a `.t()` result
    /// (`correct[:k].view(-1)` of the classic accuracy helper when `k` is 1): `.t()` takes
    /// only 2-D tensors, so one row has a single dimension of size above 1 and any view of it
    /// works. `k` counts as 1 when it is the literal `1`, or a loop over a parameter
    /// (`for k in topk:`) whose default and every value the project's call sites pass hold only
    /// 1 (`accuracy(output, target)` with `topk=(1,)`), or, when nobody in the project calls
    /// the helper, whose default holds only 1; a call with `topk=(1, 5)` keeps the finding,
    /// and so does a helper nobody calls whose parameter has no default.
    ///
    /// ## Example
    /// ```python
    /// correct = pred.t().eq(target.view(1, -1).expand_as(pred.t()))
    /// correct[:k].view(-1)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// correct[:k].reshape(-1)
    /// ```
    ///
    /// ## Fix safety
    /// The fix replaces `.view(` with `.reshape(`. `reshape` returns the same view whenever
    /// `view` would have worked and copies only where `view` raises, so the values are the
    /// same and the fix is safe. (Code that relies on the result aliasing the original storage
    /// for in-place writes could not have worked here anyway, because the view raises.)
    ///
    /// ## References
    /// - [torch.Tensor.view](https://pytorch.org/docs/stable/generated/torch.Tensor.view.html)
    /// - [torch.Tensor.reshape](https://pytorch.org/docs/stable/generated/torch.Tensor.reshape.html)
    /// - [open-mmlab/mmpretrain#104](https://github.com/open-mmlab/mmpretrain/pull/104)
    pub(crate) static VIEW_ON_NON_CONTIGUOUS = {
        name: "view-on-non-contiguous",
        code: "TV056",
        group: Correctness,
        severity: Warning,
        title: ".view() on a tensor derived from transpose/permute/.t()/.mT/expand (use .reshape)",
        autofix: Yes,
        preview: true,
        hooks: { call: check_call },
    };
}

/// How many sizes a `view(...)` call passes, when that is plain from the call (`None` for a
/// dtype view, a single name that may be a shape tuple, or `*shape`).
fn view_arity(checker: &Checker, call: &ExprCall) -> Option<usize> {
    if !call.arguments.keywords.is_empty() {
        return None;
    }
    let args = &call.arguments.args;
    if args.iter().any(|a| matches!(a, Expr::Starred(_))) {
        return None;
    }
    match &args[..] {
        [] => None,
        [Expr::Tuple(t)] => Some(t.elts.len()),
        [Expr::List(t)] => Some(t.elts.len()),
        [single] => {
            if checker.resolve(single).is_some() {
                // `view(torch.float16)`: a dtype reinterpretation, not a shape.
                return None;
            }
            match single {
                Expr::NumberLiteral(_) | Expr::UnaryOp(_) | Expr::BinOp(_) => Some(1),
                Expr::Call(c) if matches!(helpers::method_call(c), Some(("numel" | "size", _))) => {
                    Some(1)
                }
                _ => None,
            }
        }
        many => Some(many.len()),
    }
}

/// Is the receiver the first row of a `.t()` result (`correct[:k]` where `k` is 1 in every
/// run the project shows)? `.t()` only takes 2-D tensors, so one row has a single dimension
/// of size above 1, and any `view` of it works: `correct[:1].view(-1)` never raises. `k` is
/// a literal `1`, or the loop variable of `for k in topk:` over a parameter whose every
/// value across the project's call sites, and whose default, holds only 1
/// (`def accuracy(output, target, topk=(1,))` called without `topk`).
fn first_row_of_t(checker: &Checker, recv: &Expr, op: &str) -> bool {
    if op != "t" {
        return false;
    }
    let Expr::Subscript(sub) = recv else {
        return false;
    };
    let Expr::Slice(slice) = &*sub.slice else {
        return false;
    };
    let starts_at_0 = slice
        .lower
        .as_deref()
        .is_none_or(|l| Lit::of(l) == Lit::Int(0));
    if !starts_at_0 || slice.step.is_some() {
        return false;
    }
    let Some(upper) = slice.upper.as_deref() else {
        return false;
    };
    if Lit::of(upper) == Lit::Int(1) {
        return true;
    }
    let Some(k) = helpers::name_of(upper) else {
        return false;
    };
    // `for k in topk:` around the view, over a parameter of the enclosing function.
    let Some(seq) = checker.frame().loops.iter().rev().find_map(|s| match s {
        Stmt::For(l) if helpers::name_of(&l.target) == Some(k) => Some(&*l.iter),
        _ => None,
    }) else {
        return false;
    };
    let (Some(seq), Some(func)) = (helpers::name_of(seq), checker.function()) else {
        return false;
    };
    let Some(i) = func
        .parameters
        .iter()
        .position(|p| p.name().as_str() == seq)
    else {
        return false;
    };
    let Some(p) = checker.project_or_file() else {
        return false;
    };
    let Some(here) = crate::rules::facts::current_function(checker, p) else {
        return false;
    };
    let only_ones = |v: &Lit| match v {
        Lit::Int(1) => true,
        Lit::Tuple(items) => !items.is_empty() && items.iter().all(|x| *x == Lit::Int(1)),
        _ => false,
    };
    let default = p.model.function(here).param_defaults.get(i);
    let default_ok = match default {
        Some(ParamDefault::Given(d)) => only_ones(d),
        Some(ParamDefault::Required) => true,
        _ => false,
    };
    if !default_ok {
        return false;
    }
    // No call site in the project (a helper copied along with its module, `accuracy()` of
    // DETR's `util/misc.py`): the default is the only value the code shows.
    if p.model.call_sites_no_grad(here).0 == 0 {
        return matches!(default, Some(ParamDefault::Given(_)));
    }
    p.model
        .param_literals(here, i)
        .is_some_and(|vals| vals.iter().all(only_ones))
}

fn check_call(checker: &mut Checker, call: &ExprCall, _q: Option<&str>) {
    let Expr::Attribute(attr) = &*call.func else {
        return;
    };
    if attr.attr.as_str() != "view" {
        return;
    }
    // Cheap exit: nothing in the file makes a tensor non-contiguous (the producers the
    // dataflow knows: `transpose`, `permute`, `.t()`, `.T`/`.mT`/`.H`, `swapaxes`, `movedim`,
    // `expand`, `unfold`).
    const PRODUCERS: &[&str] = &[
        "transpose",
        "permute",
        ".t(",
        ".T",
        ".mT",
        ".H",
        ".mH",
        "swap",
        "move",
        "expand",
        "unfold",
    ];
    if !PRODUCERS.iter().any(|w| checker.mentions(w)) {
        return;
    }
    let recv = &*attr.value;
    if checker.resolve(recv).is_some() {
        return;
    }
    let Some(arity) = view_arity(checker, call) else {
        return;
    };
    let v = checker.taint_of(recv);
    let Some(f) = v.definite(Prop::MaybeNonContiguous).cloned() else {
        return;
    };
    let merges = arity == 1 || f.runs.is_some_and(|r| arity < usize::from(r));
    if !merges || first_row_of_t(checker, recv, f.op) {
        return;
    }
    let name = crate::rules::correctness::taint_helpers::short(checker.text(recv.range()));
    let via = if f.origin == recv.range() {
        String::new()
    } else {
        format!(" (it comes from `.{}()` without `.contiguous()`)", f.op)
    };
    let diag = checker.report(
        call.range(),
        format!(
            "`{name}` is not contiguous{via}: `.view()` cannot merge its dimensions and raises \"view size is not compatible with input tensor's size and stride\"; use `.reshape()`"
        ),
    );
    if f.origin != recv.range() {
        diag.add_related(
            f.origin,
            format!("the `.{}()` that makes it non-contiguous", f.op),
        );
    }
    diag.set_fix(RawFix::safe(
        "Use `.reshape()`",
        vec![RawEdit::replace(attr.attr.range(), "reshape")],
    ));
}

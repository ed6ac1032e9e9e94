use super::helpers;
use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

crate::declare_rule! {
    /// ## What it does
    /// Checks for the result of `torch.nn.utils.rnn.pack_padded_sequence(...)` (or
    /// `pack_sequence(...)`) unpacked into two names: `data, batch_sizes = pack_padded_sequence(...)`.
    ///
    /// ## Why is this bad?
    /// A `PackedSequence` is a named tuple. Until torch 1.0 it had two fields (`data`,
    /// `batch_sizes`), and code written then unpacked it into two names. torch 1.1 added
    /// `sorted_indices` and `unsorted_indices` (for `enforce_sorted=False`), so the same line
    /// now raises `ValueError: too many values to unpack (expected 2)`.
    ///
    /// `pad_packed_sequence(...)`, which returns `(padded, lengths)`, and reading `.data` from
    /// the packed sequence are correct and not reported.
    ///
    /// ## Example
    /// ```python
    /// targets, _ = pack_padded_sequence(tags, lengths, batch_first=True)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// targets = pack_padded_sequence(tags, lengths, batch_first=True).data
    /// ```
    ///
    /// ## Fix safety
    /// The fix appends `[:2]` to the call: the first two fields of the named tuple are exactly
    /// the `(data, batch_sizes)` the old two-field tuple held, so the names get the values they
    /// got before torch 1.1. Safe.
    ///
    /// ## References
    /// - [torch.nn.utils.rnn.PackedSequence](https://pytorch.org/docs/stable/generated/torch.nn.utils.rnn.PackedSequence.html)
    /// - [torch.nn.utils.rnn.pack_padded_sequence](https://pytorch.org/docs/stable/generated/torch.nn.utils.rnn.pack_padded_sequence.html)
    pub(crate) static PACK_PADDED_SEQUENCE_UNPACKED = {
        name: "pack-padded-sequence-unpacked",
        code: "TV131",
        group: DeprecatedApi,
        severity: Critical,
        title: "Two names unpacked from pack_padded_sequence(...) (a 4-field PackedSequence since torch 1.1: ValueError)",
        autofix: Yes,
        hooks: { stmt: check_stmt },
    };
}

fn check_stmt(checker: &mut Checker, stmt: &Stmt) {
    let Stmt::Assign(a) = stmt else { return };
    let [target] = a.targets.as_slice() else {
        return;
    };
    let n = match target {
        Expr::Tuple(t) => t.elts.len(),
        Expr::List(l) => l.elts.len(),
        _ => return,
    };
    if n != 2 {
        return;
    }
    let Expr::Call(call) = &*a.value else { return };
    let Some(q) = checker.resolve(&call.func) else {
        return;
    };
    let name = match q.as_str() {
        "torch.nn.utils.rnn.pack_padded_sequence" => "pack_padded_sequence",
        "torch.nn.utils.rnn.pack_sequence" => "pack_sequence",
        _ => return,
    };
    if !helpers::active(checker, 1, 1) {
        return;
    }
    let names = checker.text(target.range()).to_string();
    checker
        .report(
            stmt.range(),
            format!("`{name}` returns a 4-field `PackedSequence` (data, batch_sizes, sorted_indices, unsorted_indices) since torch 1.1: unpacking it into `{names}` raises `ValueError: too many values to unpack`; take `.data` / `.batch_sizes`"),
        )
        .set_fix(RawFix::safe(
            "Unpack the first two fields (`[:2]`)",
            vec![RawEdit::insert(call.end(), "[:2]")],
        ));
}

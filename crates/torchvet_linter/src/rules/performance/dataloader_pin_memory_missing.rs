use super::helpers::{
    dataloader_calls, device_tensor_dataset, file_trains, is_test_file, loader_dataset,
    tensor_dataset,
};
use crate::checker::Checker;
use crate::fix::{add_keyword_argument, RawFix};
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::{Ranged, TextRange};
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for a `DataLoader` built without `pin_memory` in a file that trains (or copies
    /// with `non_blocking=True`) and copies data to a CUDA device (`.cuda()`, `.to("cuda")`, or `.to(device)` with a
    /// `torch.device("cuda" ...)`), and points at `.to(..., non_blocking=True)` copies that
    /// cannot overlap because the batches are not pinned.
    ///
    /// ## Why is this bad?
    /// Batches from a loader without `pin_memory=True` live in pageable host memory. Copying
    /// them to the GPU goes through an extra staging copy, and `non_blocking=True` has no
    /// effect on them: the copy stays synchronous and cannot overlap with compute. Pinned
    /// batches copy faster and asynchronously. An explicit `pin_memory=False` (or a value
    /// chosen at run time), and files that pin tensors themselves with `.pin_memory()`, are
    /// not reported.
    ///
    /// ## Example
    /// ```python
    /// loader = DataLoader(ds, batch_size=64, num_workers=8)
    /// for x, y in loader:
    ///     x = x.to("cuda", non_blocking=True)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// loader = DataLoader(ds, batch_size=64, num_workers=8, pin_memory=True)
    /// for x, y in loader:
    ///     x = x.to("cuda", non_blocking=True)
    /// ```
    ///
    /// ## Fix safety
    /// The fix adds `pin_memory=True`. It is unsafe: pinned memory is page-locked host
    /// memory, a limited resource, and batches holding custom types need a `pin_memory()`
    /// method to be pinned.
    ///
    /// ## References
    /// - [Performance tuning guide: pin_memory](https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html)
    /// - [A guide on good usage of non_blocking and pin_memory](https://pytorch.org/tutorials/intermediate/pinmem_nonblock.html)
    pub(crate) static DATALOADER_PIN_MEMORY_MISSING = {
        name: "dataloader-pin-memory-missing",
        code: "TV107",
        group: Performance,
        severity: Info,
        title: "CUDA training loader without pin_memory=True; .to(device, non_blocking=True) on non-pinned tensors",
        autofix: Suggest,
        hooks: { end: check_end },
    };
}

/// Position of `pin_memory` in `DataLoader(...)`.
const PIN_MEMORY_POS: usize = 7;

/// Does a device expression name a CUDA device (`"cuda"`, `"cuda:0"`, `f"cuda:{rank}"`,
/// `"cuda" if ... else "cpu"`)?
fn names_cuda(checker: &Checker, e: &Expr) -> bool {
    match e {
        Expr::StringLiteral(s) => s.value.to_str().starts_with("cuda"),
        Expr::FString(_) => {
            let t = checker.text(e.range());
            t.trim_start_matches(['f', 'F', 'r', 'R'])
                .trim_start_matches(['"', '\''])
                .starts_with("cuda")
        }
        Expr::If(i) => names_cuda(checker, &i.body) || names_cuda(checker, &i.orelse),
        Expr::BoolOp(b) => b.values.iter().any(|v| names_cuda(checker, v)),
        _ => false,
    }
}

/// The device argument of `x.to(...)`.
fn to_device(call: &ExprCall) -> Option<&Expr> {
    helpers::argument(call, "device", 0)
}

/// Does the file move data to CUDA?
fn moves_to_cuda(checker: &Checker) -> bool {
    let facts = &checker.facts;
    if !facts.method_calls_of("cuda").is_empty() {
        return true;
    }
    let to_calls = facts.method_calls_of("to");
    if to_calls
        .iter()
        .any(|c| to_device(c).is_some_and(|d| names_cuda(checker, d)))
    {
        return true;
    }
    let cuda_device = facts.calls_of("torch.device").iter().any(|c| {
        c.arguments
            .args
            .first()
            .is_some_and(|a| names_cuda(checker, a))
    });
    cuda_device && !to_calls.is_empty()
}

fn check_end(checker: &mut Checker) {
    let loaders = dataloader_calls(checker);
    if loaders.is_empty() || is_test_file(checker) {
        return;
    }
    if !checker.facts.method_calls_of("pin_memory").is_empty() || !moves_to_cuda(checker) {
        return;
    }
    let non_blocking: Vec<TextRange> = checker
        .facts
        .method_calls_of("to")
        .iter()
        .filter(|c| {
            helpers::keyword(c, "non_blocking")
                .and_then(helpers::is_truthy)
                .unwrap_or(false)
        })
        .map(|c| c.range())
        .collect();
    // Training code, or copies that ask for overlap: the loader's batches feed the GPU.
    if non_blocking.is_empty() && !file_trains(checker) {
        return;
    }
    let mut found = Vec::new();
    for call in loaders {
        if helpers::has_kwargs_splat(call) {
            continue;
        }
        if helpers::argument(call, "pin_memory", PIN_MEMORY_POS).is_some()
            || helpers::has_args_splat(call)
        {
            continue;
        }
        // Batches of tensors already on the device: nothing to pin.
        if loader_dataset(checker, call)
            .and_then(|d| tensor_dataset(checker, d))
            .is_some_and(|d| device_tensor_dataset(checker, d))
        {
            continue;
        }
        found.push((
            call.range(),
            call.func.range(),
            add_keyword_argument(call, "pin_memory=True"),
        ));
    }
    for (range, func, edit) in found {
        let head = checker.text(func);
        let message = if non_blocking.is_empty() {
            format!("`{head}(...)` does not pin memory while this file copies batches to CUDA: copies from pageable memory are slower and cannot overlap with compute")
        } else {
            format!("`{head}(...)` does not pin memory, so the `non_blocking=True` copies of its batches to CUDA stay synchronous and slower")
        };
        let d = checker.report(range, message);
        d.set_fix(RawFix::unsafe_edit("Add `pin_memory=True`", vec![edit]));
        for nb in non_blocking.iter().take(3) {
            d.add_related(*nb, "a non_blocking copy that cannot overlap");
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::performance::helpers::count_findings;

    #[test]
    fn needs_cuda_evidence() {
        let rule = "dataloader-pin-memory-missing";
        let cpu = "import torch\nfrom torch.utils.data import DataLoader\ndl = DataLoader(ds)\nfor x in dl:\n    x = x.to('cpu')\n";
        assert_eq!(count_findings(rule, "train.py", cpu), 0);
        let gpu = "import torch\nfrom torch.utils.data import DataLoader\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\ndl = DataLoader(ds)\nfor x in dl:\n    x = x.to(device)\n    m(x).sum().backward()\n    opt.step()\n";
        assert_eq!(count_findings(rule, "train.py", gpu), 1);
        let pytest_module = format!("import pytest\n{gpu}");
        assert_eq!(count_findings(rule, "test_train.py", &pytest_module), 0);
        let inference = gpu.replace("    m(x).sum().backward()\n    opt.step()\n", "");
        assert_eq!(count_findings(rule, "infer.py", &inference), 0);
        let overlap = inference.replace("x.to(device)", "x.to(device, non_blocking=True)");
        assert_eq!(count_findings(rule, "infer.py", &overlap), 1);
        let pinned = gpu.replace("x.to(device)", "x.pin_memory().to(device)");
        assert_eq!(count_findings(rule, "train.py", &pinned), 0);
    }

    #[test]
    fn tensor_datasets_already_on_the_device() {
        let rule = "dataloader-pin-memory-missing";
        let on_device = "import torch\ndevice = torch.device('cuda')\ndef loaders(x, y):\n    xt = torch.from_numpy(x).float().to(device)\n    yt = torch.from_numpy(y).float().to(device)\n    ds = torch.utils.data.TensorDataset(xt, yt)\n    return torch.utils.data.DataLoader(ds, batch_size=32)\nfor xb, yb in loaders(a, b):\n    xb = xb.to(device)\n    m(xb).sum().backward()\n    opt.step()\n";
        assert_eq!(count_findings(rule, "train.py", on_device), 0);
        // Host tensors are copied per batch: pinning helps.
        let on_host = on_device.replace(".float().to(device)", ".float()");
        assert_eq!(count_findings(rule, "train.py", &on_host), 1);
    }
}

use crate::checker::Checker;
use ruff_python_ast::ExprCall;
use ruff_text_size::Ranged;

crate::declare_rule! {
    /// ## What it does
    /// Checks for constructions of `torch.nn.DataParallel`.
    ///
    /// ## Why is this bad?
    /// `DataParallel` runs every GPU replica from one Python process: each step it copies the
    /// module to every device, scatters the batch and gathers the outputs on the first GPU,
    /// all under the GIL. The first GPU ends up holding more memory than the others and the
    /// speed-up flattens quickly. `DistributedDataParallel` with one process per GPU (started
    /// by `torchrun`) avoids all of this and is faster even on a single machine. This is advice,
    /// not a bug: the rule is informational.
    ///
    /// ## Example
    /// ```python
    /// model = nn.DataParallel(model).cuda()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// # launched with: torchrun --nproc-per-node=4 train.py
    /// local_rank = int(os.environ["LOCAL_RANK"])
    /// torch.cuda.set_device(local_rank)
    /// dist.init_process_group("nccl")
    /// model = DDP(model.to(local_rank), device_ids=[local_rank])
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: moving to DDP changes how the script is launched, how data is
    /// sharded and how checkpoints are saved.
    ///
    /// ## References
    /// - [DistributedDataParallel](https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html)
    /// - [CUDA semantics: use DDP instead of DataParallel](https://pytorch.org/docs/stable/notes/cuda.html#cuda-nn-ddp-instead)
    pub(crate) static DATAPARALLEL_INSTEAD_OF_DDP = {
        name: "dataparallel-instead-of-ddp",
        code: "TV087",
        group: Distributed,
        severity: Info,
        title: "nn.DataParallel used for multi-GPU training (DistributedDataParallel is faster)",
        autofix: No,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if !matches!(
        name,
        Some(
            "torch.nn.DataParallel"
                | "torch.nn.parallel.DataParallel"
                | "torch.nn.parallel.data_parallel.DataParallel"
        )
    ) {
        return;
    }
    let wrapped = call
        .arguments
        .args
        .first()
        .or_else(|| call.arguments.find_keyword("module").map(|k| &k.value))
        .map(|a| checker.text(a.range()))
        .filter(|t| !t.is_empty() && t.len() <= 40 && !t.contains('\n'));
    let msg = match wrapped {
        Some(m) => format!(
            "`DataParallel` replicates `{m}` across GPUs from one process every step (GIL-bound, uneven memory on GPU 0); `DistributedDataParallel` with one process per GPU is faster"
        ),
        None => "`DataParallel` replicates the model across GPUs from one process every step (GIL-bound, uneven memory on GPU 0); `DistributedDataParallel` with one process per GPU is faster".to_string(),
    };
    checker.report(call.func.range(), msg);
}

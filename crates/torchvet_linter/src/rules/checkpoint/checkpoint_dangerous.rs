crate::declare_rule! {
    /// ## What it does
    /// Reports a checkpoint file (`.pt`, `.pth`, `.ckpt`, `.bin`, pickles, ...) in the checked
    /// tree whose pickle would run code when loaded: it imports a callable that can execute
    /// commands, touch files, the network or processes (`os.system`, `builtins.exec`,
    /// `runpy`, `pip.main`, ...), or uses a construct that has no business in a checkpoint
    /// (EXT opcodes, computed `STACK_GLOBAL` names, `BUILD` on a function, ...). The file is
    /// read by torchvet's own pickle machine, which never executes anything.
    ///
    /// ## Why is this bad?
    /// `torch.load(path, weights_only=False)` (the default before torch 2.6) and `pickle.load`
    /// execute whatever the pickle asks for. A dangerous checkpoint in a repository is a
    /// planted payload waiting for someone to load it.
    ///
    /// ## Example
    /// A file `weights.pt` whose `data.pkl` does `GLOBAL os system` then `REDUCE`.
    ///
    /// Use instead:
    /// ```python
    /// # Keep weights as a state_dict of tensors (or safetensors), and load with
    /// state = torch.load("weights.pt", weights_only=True)
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: delete the file, or convert a trusted copy with
    /// `torchvet ckpt convert`. `torchvet ckpt scan FILE` prints every finding with the archive
    /// member, byte offset, opcode and imported name.
    ///
    /// ## References
    /// - [torch.load and weights_only](https://pytorch.org/docs/stable/generated/torch.load.html)
    /// - [Python's pickle module: warning](https://docs.python.org/3/library/pickle.html)
    pub static CHECKPOINT_DANGEROUS = {
        name: "checkpoint-dangerous",
        code: "TV501",
        group: Checkpoint,
        severity: Critical,
        title: "Checkpoint file whose pickle would run code when loaded",
        autofix: No,
        hooks: {},
    };
}

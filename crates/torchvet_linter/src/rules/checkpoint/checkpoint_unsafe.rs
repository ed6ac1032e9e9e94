crate::declare_rule! {
    /// ## What it does
    /// Reports a checkpoint file whose pickle imports names outside torch's `weights_only`
    /// allowlist that do not obviously run code: a pickled `nn.Module` class, NumPy scalars,
    /// custom config objects.
    ///
    /// ## Why is this bad?
    /// Loading it needs `weights_only=False` (or `add_safe_globals`), i.e. trust in whoever
    /// wrote the file; on torch 2.6 and later the default `torch.load` refuses it. A whole
    /// pickled model also breaks when the class it names is renamed or moved. A NumPy
    /// `.npy`/`.npz` file that holds an object array is reported the same way: `numpy.load`
    /// unpickles it only with `allow_pickle=True`, the same trust.
    ///
    /// ## Example
    /// A file written by `torch.save(model, "model.pt")`.
    ///
    /// Use instead:
    /// ```python
    /// torch.save(model.state_dict(), "model.pt")
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: re-save the state_dict, or convert with `torchvet ckpt convert`.
    ///
    /// ## References
    /// - [Saving and loading models](https://pytorch.org/tutorials/beginner/saving_loading_models.html)
    /// - [torch.serialization.add_safe_globals](https://pytorch.org/docs/stable/notes/serialization.html)
    pub static CHECKPOINT_UNSAFE = {
        name: "checkpoint-unsafe",
        code: "TV502",
        group: Checkpoint,
        severity: Warning,
        title: "Checkpoint file that needs weights_only=False (trust) to load",
        autofix: No,
        hooks: {},
    };
}

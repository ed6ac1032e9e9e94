crate::declare_rule! {
    /// ## What it does
    /// Reports a file that looks like a checkpoint (a torch zip, a pickle, a legacy torch
    /// file) but is damaged, or is built so that different zip readers see different
    /// contents (CRC mismatches, duplicate members, local and central names that disagree,
    /// data glued before or after the archive).
    ///
    /// ## Why is this bad?
    /// torch refuses a damaged file at load time, far from where it was produced; and a file
    /// whose readers disagree is a known way to hide a payload from checkpoint scanners.
    ///
    /// ## Example
    /// A `.pt` zip with two `archive/data.pkl` members: torch reads the first, Python's
    /// `zipfile` the last.
    ///
    /// Use instead:
    /// ```python
    /// torch.save(model.state_dict(), "model.pt")  # re-save from a trusted source
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix. `torchvet ckpt scan FILE` shows each disagreement.
    ///
    /// ## References
    /// - [torch.save](https://pytorch.org/docs/stable/generated/torch.save.html)
    pub static CHECKPOINT_MALFORMED = {
        name: "checkpoint-malformed",
        code: "TV503",
        group: Checkpoint,
        severity: Warning,
        title: "Damaged checkpoint, or one whose zip readers disagree",
        autofix: No,
        hooks: {},
    };
}

use crate::checker::Checker;
use ruff_python_ast::ExprCall;
use ruff_text_size::Ranged;

crate::declare_rule! {
    /// ## What it does
    /// Checks, in test files, for `torch.library.Library(...)` objects created directly
    /// instead of through the `torch.library._scoped_library` context manager.
    ///
    /// ## Why is this bad?
    /// A `Library` registers operators and kernels globally for as long as the object lives.
    /// In a test suite, a library created by one test can outlive it and change the behaviour
    /// of the tests that run after it in the same process. `_scoped_library` removes the
    /// registrations when its `with` block ends. The rule is meant for the PyTorch repository
    /// itself (the helper is private), so it is off by default.
    ///
    /// ## Example
    /// ```python
    /// def test_custom_op(self):
    ///     lib = torch.library.Library("mylib", "FRAGMENT")
    ///     lib.define("foo(Tensor x) -> Tensor")
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def test_custom_op(self):
    ///     with torch.library._scoped_library("mylib", "FRAGMENT") as lib:
    ///         lib.define("foo(Tensor x) -> Tensor")
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: the code that uses the library has to move into the `with` block.
    ///
    /// ## References
    /// - [torch.library](https://pytorch.org/docs/stable/library.html)
    pub(crate) static LIBRARY_WITHOUT_SCOPED_LIBRARY = {
        name: "library-without-scoped-library",
        code: "TV124",
        group: Style,
        severity: Info,
        title: "torch.library.Library in tests: use torch.library._scoped_library",
        autofix: No,
        torchfix: ["TOR901"],
        default_on: false,
        hooks: { call: check_call },
    };
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    if !matches!(name, Some("torch.library.Library")) {
        return;
    }
    if !is_test_file(&checker.source.path) {
        return;
    }
    checker.report(
        call.func.range(),
        "`torch.library.Library` keeps its registrations for the rest of the test run: use `torch.library._scoped_library` in a `with` block",
    );
}

/// A test module by pytest's conventions, or any file under PyTorch's own `test/` directory.
fn is_test_file(path: &std::path::Path) -> bool {
    torchvet_semantic::project::is_test_path(path)
        || path
            .components()
            .any(|c| c.as_os_str().to_str() == Some("test"))
}

crate::declare_rule! {
    /// ## What it does
    /// Reports a file that Python cannot parse, at the position of the first error.
    ///
    /// ## Why is this bad?
    /// Python refuses to import the file at all, and no other rule can analyse it: torchvet
    /// reports this one finding for the file and moves on to the next.
    ///
    /// Project templates are not reported: a `.py` file under a directory or with a name
    /// holding a `{{ ... }}` placeholder (`{{cookiecutter.project_slug}}/train.py`), or whose
    /// text holds `{{ cookiecutter.x }}` placeholders or `{% if %}` tags at the start of a
    /// line, is a Jinja template that becomes Python only when cookiecutter or copier renders
    /// it. Such a file that does not parse is skipped without a finding (Ruff reports these as
    /// syntax errors unless the template directory is excluded; a template author expects no
    /// error here, and nobody can act on one).
    ///
    /// ## Example
    /// ```python
    /// model = nn.Sequential(nn.Linear(4, 2)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model = nn.Sequential(nn.Linear(4, 2))
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: the intended code cannot be known.
    ///
    /// ## References
    /// - [The Python grammar](https://docs.python.org/3/reference/grammar.html)
    pub(crate) static SYNTAX_ERROR = {
        name: "syntax-error",
        code: "TV000",
        group: Syntax,
        severity: Critical,
        title: "The file is not valid Python",
        autofix: No,
        hooks: {},
    };
}

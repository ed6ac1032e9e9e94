//! Shared set-up of the unit tests: a parsed module with its module scope and classes.
use crate::bindings::{Scope, ScopeKind, Scopes};
use crate::classes::ModuleClasses;
use ruff_python_ast::ModModule;
use torchvet_python::SourceFile;

/// `src` parsed as `t.py`, the scopes with its module scope pushed, and its module classes.
pub(crate) fn module_context(src: &str) -> (ModModule, Scopes, ModuleClasses) {
    let file = SourceFile::from_python("t.py", src.to_string());
    let module = file.parse().into_syntax();
    let mut scopes = Scopes::default();
    let scope = Scope::collect(ScopeKind::Module, &module.body, None, &scopes);
    scopes.push(scope);
    let classes = ModuleClasses::compute(&module.body, &scopes);
    (module, scopes, classes)
}

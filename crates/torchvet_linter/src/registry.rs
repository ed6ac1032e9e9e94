//! The one registry table: name <-> code <-> group <-> severity <-> default <-> status.
//!
//! Codes are `TV` + the rule's number in the catalog (`rules.md`), so they are assigned once
//! and never reused; `TV000` is `syntax-error`; checkpoint findings use `TV5xx`.
use crate::checker::Checker;
use ruff_python_ast::{Expr, ExprCall, Stmt};
use std::sync::LazyLock;
pub use torchvet_diagnostics::Severity;

/// Rule groups: the catalog's categories, plus `syntax` and `checkpoint`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    /// Wrong results.
    Correctness,
    /// Code execution.
    Security,
    /// Memory.
    Memory,
    /// Deprecated or removed APIs.
    DeprecatedApi,
    /// Distributed training.
    Distributed,
    /// Reproducibility.
    Reproducibility,
    /// Data loading.
    DataLoading,
    /// Performance.
    Performance,
    /// Style.
    Style,
    /// Checkpoint files.
    Checkpoint,
    /// Syntax errors.
    Syntax,
}

impl Group {
    /// Every group.
    pub const ALL: &'static [Group] = &[
        Group::Correctness,
        Group::Security,
        Group::Memory,
        Group::DeprecatedApi,
        Group::Distributed,
        Group::Reproducibility,
        Group::DataLoading,
        Group::Performance,
        Group::Style,
        Group::Checkpoint,
        Group::Syntax,
    ];

    /// The kebab-case name used in `--select` and the fixture directory.
    pub fn as_str(self) -> &'static str {
        match self {
            Group::Correctness => "correctness",
            Group::Security => "security",
            Group::Memory => "memory",
            Group::DeprecatedApi => "deprecated-api",
            Group::Distributed => "distributed",
            Group::Reproducibility => "reproducibility",
            Group::DataLoading => "data-loading",
            Group::Performance => "performance",
            Group::Style => "style",
            Group::Checkpoint => "checkpoint",
            Group::Syntax => "syntax",
        }
    }

    /// Parse a group name.
    pub fn parse(s: &str) -> Option<Group> {
        Group::ALL.iter().copied().find(|g| g.as_str() == s)
    }
}

/// What the catalog promises about fixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Autofix {
    /// A safe mechanical fix.
    Yes,
    /// A fix shown for review (unsafe or display-only).
    Suggest,
    /// Report only.
    No,
}

impl Autofix {
    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Autofix::Yes => "yes",
            Autofix::Suggest => "suggest",
            Autofix::No => "no",
        }
    }
}

/// A statement hook.
pub type StmtHook = fn(&mut Checker, &Stmt);
/// A call hook: the call and its callee's qualified name.
pub type CallHook = fn(&mut Checker, &ExprCall, Option<&str>);
/// An expression hook.
pub type ExprHook = fn(&mut Checker, &Expr);
/// An end-of-file hook.
pub type EndHook = fn(&mut Checker);

/// The entry points a rule may have. The checker calls them during its one pass.
#[derive(Clone, Copy)]
pub struct Hooks {
    /// Every statement, before its children.
    pub stmt: Option<StmtHook>,
    /// Every call, with the callee's qualified name when it resolves through an import.
    pub call: Option<CallHook>,
    /// Every expression that is not a call, before its children.
    pub expr: Option<ExprHook>,
    /// The kinds of expression the `expr` hook looks at (`None`: every kind). The checker
    /// calls the hook only for those: a hook that starts with `let Expr::Attribute(a) = expr
    /// else { return }` declares `expr_on: ExprKinds::ATTRIBUTE`.
    pub expr_on: Option<ExprKinds>,
    /// Once, after the whole file.
    pub end: Option<EndHook>,
}

impl Hooks {
    /// No hooks.
    pub const NONE: Hooks = Hooks {
        stmt: None,
        call: None,
        expr: None,
        expr_on: None,
        end: None,
    };
}

/// A set of expression kinds, for [`Hooks::expr_on`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExprKinds(u8);

impl ExprKinds {
    /// A bare name.
    pub const NAME: ExprKinds = ExprKinds(1 << 0);
    /// An attribute (`a.b`).
    pub const ATTRIBUTE: ExprKinds = ExprKinds(1 << 1);
    /// A subscript (`a[b]`).
    pub const SUBSCRIPT: ExprKinds = ExprKinds(1 << 2);
    /// A binary operation (`a / b`).
    pub const BIN_OP: ExprKinds = ExprKinds(1 << 3);
    /// A comparison (`a < b`).
    pub const COMPARE: ExprKinds = ExprKinds(1 << 4);
    /// A name or an attribute chain: a reference.
    pub const REFERENCE: ExprKinds = ExprKinds(Self::NAME.0 | Self::ATTRIBUTE.0);
    /// Every kind (what `None` means).
    pub const ALL: ExprKinds = ExprKinds(u8::MAX);
    /// How many buckets [`ExprKinds::bucket`] has.
    pub(crate) const BUCKETS: usize = 6;

    /// The bucket an expression falls in: one per named kind, and one for every other kind.
    #[inline]
    pub(crate) fn bucket(expr: &Expr) -> usize {
        match expr {
            Expr::Name(_) => 0,
            Expr::Attribute(_) => 1,
            Expr::Subscript(_) => 2,
            Expr::BinOp(_) => 3,
            Expr::Compare(_) => 4,
            _ => 5,
        }
    }

    /// Does the set hold the kinds of bucket `b`?
    pub(crate) fn has_bucket(self, b: usize) -> bool {
        match b {
            0..=4 => self.0 & (1 << b) != 0,
            // Every other kind: only a set that names no kind in particular.
            _ => self == Self::ALL,
        }
    }
}

/// A rule: its identity, docs and hooks.
pub struct Rule {
    /// Kebab-case name from the catalog (public interface).
    pub name: &'static str,
    /// Stable code.
    pub code: &'static str,
    /// Group (catalog category).
    pub group: Group,
    /// Severity from the catalog.
    pub severity: Severity,
    /// One-line title.
    pub title: &'static str,
    /// Fix promise.
    pub autofix: Autofix,
    /// TorchFix codes this rule replaces (accepted as aliases).
    pub torchfix: &'static [&'static str],
    /// On by default in `check`.
    pub default_on: bool,
    /// Preview rules are off unless `--preview`.
    pub preview: bool,
    /// The rule's documentation (Markdown).
    pub docs: &'static str,
    /// Entry points.
    pub hooks: Hooks,
}

impl Rule {
    /// The docs with the doc-comment leading space removed.
    pub fn docs_text(&self) -> String {
        let mut out = String::new();
        for line in self.docs.lines() {
            out.push_str(line.strip_prefix(' ').unwrap_or(line));
            out.push('\n');
        }
        out
    }
}

/// Declare a rule: doc comment (the rule's documentation) and its registry entry.
#[macro_export]
macro_rules! declare_rule {
    (
        $(#[doc = $doc:literal])*
        $vis:vis static $id:ident = {
            name: $name:literal,
            code: $code:literal,
            group: $group:ident,
            severity: $sev:ident,
            title: $title:literal,
            autofix: $fix:ident,
            $(torchfix: [$($tf:literal),* $(,)?],)?
            $(default_on: $def:expr,)?
            $(preview: $prev:expr,)?
            hooks: { $($hook:ident: $f:expr),* $(,)? } $(,)?
        };
    ) => {
        #[doc = concat!("The `", $name, "` rule (", $code, ").")]
        $vis static $id: $crate::registry::Rule = $crate::registry::Rule {
            name: $name,
            code: $code,
            group: $crate::registry::Group::$group,
            severity: $crate::registry::Severity::$sev,
            title: $title,
            autofix: $crate::registry::Autofix::$fix,
            torchfix: &[$($($tf),*)?],
            default_on: $crate::declare_rule!(@default $($def)?; $crate::registry::Severity::$sev),
            preview: $crate::declare_rule!(@preview $($prev)?),
            docs: concat!($($doc, "\n"),*),
            hooks: $crate::registry::Hooks {
                $($hook: Some($f),)*
                ..$crate::registry::Hooks::NONE
            },
        };
    };
    (@default $def:expr; $sev:expr) => { $def };
    (@default ; $sev:expr) => { !matches!($sev, $crate::registry::Severity::Info) };
    (@preview $prev:expr) => { $prev };
    (@preview) => { false };
}

/// Every rule, sorted by code. A rule's index here is its id for the run.
pub fn all_rules() -> &'static [&'static Rule] {
    static ALL: LazyLock<Vec<&'static Rule>> = LazyLock::new(|| {
        let mut v: Vec<&'static Rule> = crate::rules::RULES
            .iter()
            .flat_map(|g| g.iter().copied())
            .collect();
        v.sort_by_key(|r| r.code);
        v
    });
    &ALL
}

/// Index of a rule by exact name or code (or TorchFix alias).
pub fn find_rule(key: &str) -> Option<usize> {
    all_rules().iter().position(|r| {
        r.name == key
            || r.code.eq_ignore_ascii_case(key)
            || r.torchfix.iter().any(|t| t.eq_ignore_ascii_case(key))
    })
}

/// Why a selector matched nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownSelector(pub String);

impl std::fmt::Display for UnknownSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown rule selector `{}` (expected a rule name, a code such as TV007, a code prefix, a group such as `correctness`, a TorchFix code such as TOR102, or ALL)",
            self.0
        )
    }
}

/// The rule indices a selector names: `ALL`, a group, a name, a code, a code prefix
/// (`TV0`), or a TorchFix code or prefix (`TOR1`).
pub fn expand_selector(sel: &str) -> Result<Vec<usize>, UnknownSelector> {
    let sel = sel.trim();
    let rules = all_rules();
    let hits: Vec<usize> = if sel.eq_ignore_ascii_case("ALL") {
        (0..rules.len()).collect()
    } else if let Some(g) = Group::parse(sel) {
        (0..rules.len()).filter(|&i| rules[i].group == g).collect()
    } else if rules
        .iter()
        .any(|r| r.torchfix.iter().any(|t| t.eq_ignore_ascii_case(sel)))
    {
        // A TorchFix code may map to several rules (TOR101 covers four).
        (0..rules.len())
            .filter(|&i| {
                rules[i]
                    .torchfix
                    .iter()
                    .any(|t| t.eq_ignore_ascii_case(sel))
            })
            .collect()
    } else if let Some(i) = find_rule(sel) {
        vec![i]
    } else {
        let upper = sel.to_ascii_uppercase();
        if upper.len() >= 2 && (upper.starts_with("TV") || upper.starts_with("TOR")) {
            (0..rules.len())
                .filter(|&i| {
                    rules[i].code.starts_with(&upper)
                        || rules[i].torchfix.iter().any(|t| t.starts_with(&upper))
                })
                .collect()
        } else {
            Vec::new()
        }
    };
    if hits.is_empty() {
        Err(UnknownSelector(sel.to_string()))
    } else {
        Ok(hits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torchfix_codes_select_every_rule_they_map_to() {
        let hits = expand_selector("TOR101").unwrap();
        assert!(hits.len() >= 3, "{hits:?}");
        assert!(hits
            .iter()
            .all(|&i| all_rules()[i].torchfix.contains(&"TOR101")));
        assert_eq!(expand_selector("tor102").unwrap().len(), 1);
        assert!(expand_selector("TV0").unwrap().len() > 10);
        assert!(expand_selector("nope").is_err());
    }
}

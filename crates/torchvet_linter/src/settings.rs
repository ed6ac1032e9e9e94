//! Resolved lint settings: which rules run, and for which torch version.
use crate::registry::{all_rules, expand_selector, find_rule, UnknownSelector};
use std::fmt;

/// A `major.minor` version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Major.
    pub major: u32,
    /// Minor.
    pub minor: u32,
}

impl Version {
    /// Build.
    pub const fn new(major: u32, minor: u32) -> Self {
        Self { major, minor }
    }

    /// Parse `2`, `2.1`, `2.1.0`, `2.1.0+cu118`.
    pub fn parse(s: &str) -> Option<Self> {
        let mut parts = s.trim().split(['.', '+']);
        let major = parts.next()?.trim().parse().ok()?;
        let minor = match parts.next() {
            Some(m) => m.trim().parse().ok()?,
            None => 0,
        };
        Some(Self { major, minor })
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// What a run of the linter is configured to do.
#[derive(Clone, Debug)]
pub struct LintSettings {
    /// Enabled flag per rule index (see [`all_rules`]).
    pub enabled: Vec<bool>,
    /// The torch version the code targets; `None` = latest.
    pub target_torch: Option<Version>,
    /// The lowest torch the code's project declares it supports (`torch>=1.7`); `None` = no
    /// lower bound declared. Fixes that need a newer torch are not safe below it.
    pub min_torch: Option<Version>,
    /// Preview rules allowed.
    pub preview: bool,
}

impl Default for LintSettings {
    fn default() -> Self {
        Self::from_selectors(None, &[], &[], false).unwrap_or_else(|_| Self {
            enabled: vec![false; all_rules().len()],
            target_torch: None,
            min_torch: None,
            preview: false,
        })
    }
}

impl LintSettings {
    /// Resolve `select` (or the defaults), then `extend-select`, then `ignore`.
    /// Preview rules run only in preview mode, unless selected by exact name or code.
    pub fn from_selectors(
        select: Option<&[String]>,
        extend_select: &[String],
        ignore: &[String],
        preview: bool,
    ) -> Result<Self, UnknownSelector> {
        let rules = all_rules();
        let mut enabled = vec![false; rules.len()];
        let mut exact = vec![false; rules.len()];
        match select {
            Some(sel) => {
                for s in sel {
                    for i in expand_selector(s)? {
                        enabled[i] = true;
                    }
                    if let Some(i) = find_rule(s) {
                        exact[i] = true;
                    }
                }
            }
            None => {
                for (i, r) in rules.iter().enumerate() {
                    enabled[i] = r.default_on;
                }
            }
        }
        for s in extend_select {
            for i in expand_selector(s)? {
                enabled[i] = true;
            }
            if let Some(i) = find_rule(s) {
                exact[i] = true;
            }
        }
        for s in ignore {
            for i in expand_selector(s)? {
                enabled[i] = false;
            }
        }
        for (i, r) in rules.iter().enumerate() {
            if r.preview && !preview && !exact[i] {
                enabled[i] = false;
            }
        }
        Ok(Self {
            enabled,
            target_torch: None,
            min_torch: None,
            preview,
        })
    }

    /// Only the named rule (tests).
    pub fn only(name: &str) -> Self {
        let mut enabled = vec![false; all_rules().len()];
        if let Some(i) = find_rule(name) {
            enabled[i] = true;
        }
        Self {
            enabled,
            target_torch: None,
            min_torch: None,
            preview: true,
        }
    }

    /// Is the rule with this index on?
    pub fn is_enabled(&self, index: usize) -> bool {
        self.enabled.get(index).copied().unwrap_or(false)
    }
}

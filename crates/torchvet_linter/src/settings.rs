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
    /// `2.4`; an open minor (an upper bound such as `<3.0`, kept as `(2, u32::MAX)`) is `2.x`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.minor == u32::MAX {
            write!(f, "{}.x", self.major)
        } else {
            write!(f, "{}.{}", self.major, self.minor)
        }
    }
}

/// The torchvision release made for a torch release (`major.minor`), as the torchvision
/// README's compatibility table and PyTorch's release compatibility matrix
/// (`pytorch/pytorch` `RELEASE.md`) list them: torch 0.4 - 0.2, 1.0 - 0.2, 1.1 - 0.3, 1.2 - 0.4,
/// 1.3 - 0.4, then 1.x - 0.(x+1) from 1.4 - 0.5 to 1.13 - 0.14, and 2.y - 0.(15+y)
/// (2.0 - 0.15, 2.4 - 0.19, 2.8 - 0.23). A later major follows the 2.y rule from the last known
/// pairing. `1.<any>` (an upper bound `<2`) gives torchvision 0.14, the last one for torch 1.
pub fn torchvision_for_torch(torch: Version) -> Version {
    let minor = match (torch.major, torch.minor) {
        (0, _) => 2,
        (1, 0) => 2,
        (1, 1) => 3,
        (1, 2 | 3) => 4,
        (1, m) => m.min(13) + 1,
        (2, m) => m.saturating_add(15),
        _ => u32::MAX,
    };
    Version::new(0, minor)
}

/// The oldest torch release whose paired torchvision is at least `torchvision` (the inverse
/// of [`torchvision_for_torch`]): torchvision 0.13 - torch 1.12.
pub fn torch_for_torchvision(torchvision: Version) -> Version {
    if torchvision.major > 0 {
        return Version::new(u32::MAX, 0);
    }
    match torchvision.minor {
        0..=2 => Version::new(0, 4),
        3 => Version::new(1, 1),
        4 => Version::new(1, 2),
        m @ 5..=14 => Version::new(1, m - 1),
        m => Version::new(2, m - 15),
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
    /// The lowest torch the declaration nearest to the file allows (`None` = it has no lower
    /// bound, or there is none). [`Self::min_torch`] is the lowest of every declaration of the
    /// repository, which keeps fixes safe; this one says which torch a finding's code itself
    /// runs on: a `requirements.txt` with `torch>=2.6` beside an app is its torch, whatever a
    /// legacy app elsewhere in the repository pins.
    pub nearest_min_torch: Option<Version>,
    /// The lowest torch the project's documentation says it runs on (README / INSTALL /
    /// docs: "PyTorch >= 1.6"); `None` = none documented. Weaker than [`Self::min_torch`]:
    /// it keeps fixes that need a newer torch from being safe and never makes one safe. It
    /// changes one finding only: `torch-load-without-weights-only` in a project that bounds
    /// its torch nowhere says the load unpickles on the documented torch, instead of "may".
    pub documented_min_torch: Option<Version>,
    /// The torchvision version the code targets, when the project declares torchvision
    /// (`None` = what the target torch pairs with, see [`torchvision_for_torch`]).
    pub target_torchvision: Option<Version>,
    /// The lowest torchvision the project's declarations allow; `None` = none declared (the
    /// torch bound still applies through the pairing).
    pub min_torchvision: Option<Version>,
    /// A script or document of the project starts the file (by its name) with `python -m
    /// torch.distributed.launch` without `--use_env`, which passes the local rank as a
    /// command-line option (`--local-rank=N` since torch 2.0) even when the code reads
    /// `LOCAL_RANK` from the environment.
    pub launches_with_rank_argument: bool,
    /// A script or document of the project starts the file (by its name) with `torchrun`,
    /// `python -m torch.distributed.run` or `torch.distributed.launch --use_env`, and none
    /// with the legacy launcher: no rank option is passed to it.
    pub launches_with_env_rank: bool,
    /// Preview rules allowed.
    pub preview: bool,
}

impl Default for LintSettings {
    fn default() -> Self {
        Self::from_selectors(None, &[], &[], false).unwrap_or_else(|_| Self {
            enabled: vec![false; all_rules().len()],
            target_torch: None,
            min_torch: None,
            documented_min_torch: None,
            nearest_min_torch: None,
            target_torchvision: None,
            min_torchvision: None,
            launches_with_rank_argument: false,
            launches_with_env_rank: false,
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
            documented_min_torch: None,
            nearest_min_torch: None,
            target_torchvision: None,
            min_torchvision: None,
            launches_with_rank_argument: false,
            launches_with_env_rank: false,
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
            documented_min_torch: None,
            nearest_min_torch: None,
            target_torchvision: None,
            min_torchvision: None,
            launches_with_rank_argument: false,
            launches_with_env_rank: false,
            preview: true,
        }
    }

    /// Is the rule with this index on?
    pub fn is_enabled(&self, index: usize) -> bool {
        self.enabled.get(index).copied().unwrap_or(false)
    }
}

#[cfg(test)]
mod pairing_tests {
    use super::*;

    #[test]
    fn torch_and_torchvision_releases_pair_as_the_compatibility_table_lists() {
        let tv = |a, b| torchvision_for_torch(Version::new(a, b));
        assert_eq!(tv(1, 4), Version::new(0, 5));
        assert_eq!(tv(1, 8), Version::new(0, 9));
        assert_eq!(tv(1, 11), Version::new(0, 12));
        assert_eq!(tv(1, 12), Version::new(0, 13));
        assert_eq!(tv(1, 13), Version::new(0, 14));
        assert_eq!(tv(1, u32::MAX), Version::new(0, 14));
        assert_eq!(tv(2, 0), Version::new(0, 15));
        assert_eq!(tv(2, 4), Version::new(0, 19));
        assert_eq!(tv(1, 2), Version::new(0, 4));
        assert_eq!(tv(1, 3), Version::new(0, 4));
        let t = |m| torch_for_torchvision(Version::new(0, m));
        assert_eq!(t(13), Version::new(1, 12));
        assert_eq!(t(5), Version::new(1, 4));
        assert_eq!(t(15), Version::new(2, 0));
        assert_eq!(t(19), Version::new(2, 4));
        for m in 5..30 {
            assert_eq!(tv(t(m).major, t(m).minor), Version::new(0, m));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Version;

    #[test]
    fn an_open_minor_reads_as_x() {
        // `torch>=2.2,<3.0` targets the highest 2.x: messages say "target torch 2.x", not the
        // sentinel minor (audit 12 saw "target torch 2.4294967295").
        assert_eq!(Version::new(2, u32::MAX).to_string(), "2.x");
        assert_eq!(Version::new(2, 4).to_string(), "2.4");
    }
}

use crate::checker::Checker;
use ruff_python_ast::{Expr, ExprCall};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `torch.hub.load` (and `torch.hub.list` / `torch.hub.help`) on a third-party
    /// GitHub repository that is not pinned to a commit or release tag (reported with more
    /// weight when `trust_repo=True` also skips the trust prompt).
    ///
    /// ## Why is this bad?
    /// Loading from the hub downloads the repository and imports its `hubconf.py`, which runs
    /// arbitrary Python code. Without a pinned ref (`owner/repo:<commit>`), every run fetches
    /// whatever the default branch holds at that moment, so a compromised or changed upstream
    /// repository runs new code on your machine. `trust_repo=True` also skips the prompt that
    /// asks before trusting a new repository owner. Repositories owned by the PyTorch
    /// organisations that torch trusts by default (`pytorch`, `facebookresearch`, ...) and local
    /// sources (`source="local"`) are not reported.
    ///
    /// ## Example
    /// ```python
    /// model = torch.hub.load("someuser/repo", "model", trust_repo=True)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// model = torch.hub.load("someuser/repo:4f1c2e0", "model", trust_repo="check")
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: only the author can choose the commit to pin.
    ///
    /// ## References
    /// - [torch.hub](https://pytorch.org/docs/stable/hub.html)
    /// - [PyTorch security policy: untrusted models](https://github.com/pytorch/pytorch/blob/main/SECURITY.md)
    pub(crate) static TORCH_HUB_LOAD_UNTRUSTED = {
        name: "torch-hub-load-untrusted",
        code: "TV096",
        group: Security,
        severity: Info,
        title: "torch.hub.load from a non-pinned third-party repo or with trust_repo=True executes remote hubconf code",
        autofix: No,
        hooks: { call: check_call },
    };
}

/// Owners torch itself trusts without asking (`torch.hub._TRUSTED_REPO_OWNERS`).
const TRUSTED_OWNERS: &[&str] = &[
    "pytorch",
    "facebookresearch",
    "facebookincubator",
    "fairinternal",
];

/// Is the ref after `:` a commit hash or a release tag (`v1.2`, `0.10.0`)?
fn is_pinned_ref(r: &str) -> bool {
    let hex = r.len() >= 7 && r.len() <= 40 && r.chars().all(|c| c.is_ascii_hexdigit());
    let version = r.strip_prefix('v').unwrap_or(r);
    let tag = version.chars().next().is_some_and(|c| c.is_ascii_digit())
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    hex || tag
}

fn check_call(checker: &mut Checker, call: &ExprCall, name: Option<&str>) {
    let Some(name) = name else { return };
    let position_of_trust = match name {
        "torch.hub.load" => 3,
        "torch.hub.list" => 3,
        "torch.hub.help" => 4,
        _ => return,
    };
    if helpers::has_kwargs_splat(call) {
        return;
    }
    if let Some(source) = helpers::keyword(call, "source") {
        if helpers::str_value(source) != Some("github") {
            return;
        }
    }
    let Some(repo_expr) =
        helpers::argument(call, "repo_or_dir", 0).or_else(|| helpers::keyword(call, "github"))
    else {
        return;
    };
    let Some(repo) = helpers::str_value(repo_expr) else {
        return;
    };
    let (path, reference) = match repo.split_once(':') {
        Some((p, r)) => (p, Some(r)),
        None => (repo, None),
    };
    let Some((owner, _)) = path.split_once('/') else {
        return;
    };
    if TRUSTED_OWNERS.contains(&owner) {
        return;
    }
    let trust_true = helpers::keyword(call, "trust_repo")
        .or_else(|| {
            if name == "torch.hub.load" {
                None
            } else {
                call.arguments.args.get(position_of_trust)
            }
        })
        .is_some_and(|e| matches!(e, Expr::BooleanLiteral(b) if b.value));
    if reference.is_some_and(is_pinned_ref) {
        return;
    }
    let what = helpers::last_segment(name);
    let message = if trust_true {
        format!(
            "`torch.hub.{what}` imports `hubconf.py` from `{repo}` (not pinned to a commit) with `trust_repo=True`: whatever code that branch holds runs here, without the trust prompt"
        )
    } else {
        format!(
            "`torch.hub.{what}` imports `hubconf.py` from `{repo}` without a pinned commit: whatever code that ref holds on each run executes here"
        )
    };
    checker.report(repo_expr.range(), message);
}

#[cfg(test)]
mod tests {
    use super::is_pinned_ref;

    #[test]
    fn pinned_refs() {
        assert!(is_pinned_ref("4f1c2e0"));
        assert!(is_pinned_ref("v0.10.0"));
        assert!(is_pinned_ref("1.2.3"));
        assert!(!is_pinned_ref("main"));
        assert!(!is_pinned_ref("master"));
        assert!(!is_pinned_ref("dev"));
        assert!(!is_pinned_ref("abc"));
    }
}

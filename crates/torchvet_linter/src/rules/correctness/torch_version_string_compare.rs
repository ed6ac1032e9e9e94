use crate::checker::Checker;
use ruff_python_ast::{CmpOp, Expr, ExprCall, Stmt};
use ruff_text_size::Ranged;
use torchvet_semantic::helpers;

crate::declare_rule! {
    /// ## What it does
    /// Checks for version strings compared as plain strings in a way that some release orders
    /// wrongly: `torchvision.__version__ < "0.13"`, `torch.__version__[:3] >= "1.1"`,
    /// `str(torch.__version__) >= "1.5"`, `float(torch.__version__[:3])`, and
    /// `torch.__version__ >= "1.10"` when the target torch is older than 1.10.
    ///
    /// ## Why is this bad?
    /// Strings compare character by character: `"2.10" < "2.4"` and `"0.9" > "0.13"` are both
    /// true. Slices such as `__version__[:3]` turn `"2.10.0"` into `"2.1"`, and `float()` of
    /// it reads `"1.10"` as `1.1`. Version-gated code then takes the wrong branch on exactly
    /// the newest releases.
    ///
    /// The rule reports a comparison only when some real release makes it take the wrong
    /// branch. It checks every `major.minor` release of the package (torch 0.1-2.14, the
    /// releases to date and the next few; torchvision 0.1-0.29; ...): the comparison misorders when, for
    /// some release, comparing the derived string with the literal as strings disagrees with
    /// comparing the versions at the literal's precision (a release equal to the literal at
    /// that precision is left out). The message names the oldest such release. In particular:
    /// - `torch.__version__` itself is a `TorchVersion` since torch 1.10 and compares
    ///   correctly, so it is checked only when the target torch is older than 1.10, and only
    ///   against the releases before 1.10. Those all have one-digit parts (`0.4.1`, `1.9.0`),
    ///   and strings of one-digit parts order like versions: `torch.__version__ >= "1.5.0"`
    ///   is right on every release, and only a literal with a two-digit part (`"1.10"`, where
    ///   `"1.9.0" >= "1.10"`) can misorder.
    /// - `str(torch.__version__)`, `torch.__version__.split("+")[0]`, slices, indexes and
    ///   other packages' `__version__` are plain strings on every release. Against
    ///   `"1.5.0"` they misorder on torch 1.10-1.13 (`"1.13.0" < "1.5.0"`); against `"2.0"`
    ///   or the major digit alone (`__version__[0] >= "1"`) no release misorders.
    ///
    /// `float(torch.__version__[:3])` is reported only when the number reaches a comparison:
    /// compared on the spot, or assigned to a name (or `self.<attr>`) that a comparison reads
    /// in the same file, or, for a module-level name, in another file of the project
    /// (`onmt.constants.torch_version >= 1.2`). A parsed version that is never compared (only
    /// printed, or never read) takes no branch.
    ///
    /// ## Example
    /// ```python
    /// if torchvision.__version__ < "0.13":
    ///     model = resnet50(pretrained=True)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// from packaging.version import Version
    /// if Version(torchvision.__version__) < Version("0.13"):
    ///     model = resnet50(pretrained=True)
    /// ```
    ///
    /// ## Fix safety
    /// No automatic fix: the correct comparison needs `packaging` (or a `TorchVersion`), and
    /// slices must be rewritten by hand.
    ///
    /// ## References
    /// - [PyTorch versioning and TorchVersion](https://pytorch.org/docs/stable/notes/versioning.html)
    /// - [PyPOTS issue 520](https://github.com/WenjieDu/PyPOTS/issues/520)
    pub(crate) static TORCH_VERSION_STRING_COMPARE = {
        name: "torch-version-string-compare",
        code: "TV070",
        group: Correctness,
        severity: Warning,
        title: "__version__ compared as a string ('2.10' < '2.4' is True)",
        autofix: No,
        hooks: { expr: check_expr, expr_on: crate::registry::ExprKinds::COMPARE, call: check_call },
    };
}

/// How a version expression is derived from `<package>.__version__`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Package {
    Torch,
    Torchvision,
    Torchaudio,
    Torchtext,
    Torchdata,
}

/// A step from the version string to the compared value.
#[derive(Clone, Debug)]
enum Step {
    /// `v[a:b]` (Python slice bounds, `None` when omitted).
    Slice(Option<i64>, Option<i64>),
    /// `v[i]`.
    Index(i64),
    /// `v.split(sep)[i]` / `v.rsplit(sep)[i]` / `v.partition(sep)[i]`.
    Split(Option<String>, i64),
}

/// A version expression: the package, and what was done to its `__version__`.
struct VersionExpr {
    package: Package,
    /// `torch.__version__` itself, untouched (a `TorchVersion` since torch 1.10).
    torch_version_object: bool,
    steps: Vec<Step>,
}

fn version_expr(checker: &Checker, expr: &Expr) -> Option<VersionExpr> {
    match expr {
        Expr::Attribute(a) if a.attr.as_str() == "__version__" => {
            let q = checker.resolve(&a.value)?;
            let package = match q.as_str() {
                "torch" => Package::Torch,
                "torchvision" => Package::Torchvision,
                "torchaudio" => Package::Torchaudio,
                "torchtext" => Package::Torchtext,
                "torchdata" => Package::Torchdata,
                _ => return None,
            };
            Some(VersionExpr {
                package,
                torch_version_object: package == Package::Torch,
                steps: Vec::new(),
            })
        }
        // `str(torch.__version__)`: a plain str, no longer a TorchVersion.
        Expr::Call(c)
            if helpers::name_of(&c.func) == Some("str")
                && checker.scopes.lookup("str").is_none()
                && c.arguments.keywords.is_empty() =>
        {
            let [arg] = &*c.arguments.args else {
                return None;
            };
            let mut inner = version_expr(checker, arg)?;
            inner.torch_version_object = false;
            Some(inner)
        }
        // `__version__[:3]`, `__version__[0]`, `__version__.split("+")[0]`
        Expr::Subscript(s) => {
            let int = |e: &Option<Box<Expr>>| -> Option<Option<i64>> {
                match e.as_deref() {
                    None => Some(None),
                    Some(e) => helpers::int_value(e).map(Some),
                }
            };
            if let Expr::Call(c) = &*s.value {
                let Expr::Attribute(m) = &*c.func else {
                    return None;
                };
                if !matches!(m.attr.as_str(), "split" | "rsplit" | "partition") {
                    return None;
                }
                let index = helpers::int_value(&s.slice)?;
                let sep = match c.arguments.args.first() {
                    None => None,
                    Some(e) => Some(helpers::str_value(e)?.to_string()),
                };
                if m.attr.as_str() == "rsplit" && index != -1 && index != 0 {
                    return None;
                }
                let mut inner = version_expr(checker, &m.value)?;
                inner.torch_version_object = false;
                let step = if m.attr.as_str() == "partition" {
                    // partition(sep)[0] / [2] keep the text before / after the first sep.
                    match index {
                        0 => Step::Split(sep, 0),
                        _ => return None,
                    }
                } else if m.attr.as_str() == "rsplit" && index == -1 {
                    Step::Split(sep, -1)
                } else {
                    Step::Split(sep, index)
                };
                inner.steps.push(step);
                return Some(inner);
            }
            let step = match &*s.slice {
                Expr::Slice(sl) if sl.step.is_none() => {
                    Step::Slice(int(&sl.lower)?, int(&sl.upper)?)
                }
                e => Step::Index(helpers::int_value(e)?),
            };
            let mut inner = version_expr(checker, &s.value)?;
            inner.torch_version_object = false;
            inner.steps.push(step);
            Some(inner)
        }
        _ => None,
    }
}

/// The `major.minor` releases of each package, as far as they matter here: every torch from
/// 0.1 to 2.14 (the releases to date and the next few), torchvision 0.1-0.29, and so on.
fn releases(package: Package, before_1_10_only: bool) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let mut add = |major: u32, minors: std::ops::RangeInclusive<u32>| {
        out.extend(minors.map(|m| (major, m)));
    };
    match package {
        Package::Torch if before_1_10_only => {
            add(0, 1..=4);
            add(1, 0..=9);
        }
        Package::Torch => {
            add(0, 1..=4);
            add(1, 0..=13);
            add(2, 0..=14);
        }
        Package::Torchvision => add(0, 1..=29),
        Package::Torchaudio => {
            add(0, 1..=13);
            add(2, 0..=14);
        }
        Package::Torchtext => add(0, 1..=18),
        Package::Torchdata => add(0, 1..=11),
    }
    out
}

/// Python's `s[i]` / `s[a:b]` on an ASCII string.
fn py_index(s: &str, i: i64) -> Option<String> {
    let n = i64::try_from(s.len()).ok()?;
    let i = usize::try_from(if i < 0 { n + i } else { i }).ok()?;
    s.get(i..=i).map(str::to_string)
}

fn py_slice(s: &str, a: Option<i64>, b: Option<i64>) -> Option<String> {
    let n = i64::try_from(s.len()).ok()?;
    let clamp = |x: i64| if x < 0 { (n + x).max(0) } else { x.min(n) };
    let a = usize::try_from(clamp(a.unwrap_or(0))).ok()?;
    let b = usize::try_from(clamp(b.unwrap_or(n))).ok()?;
    Some(if a < b {
        s[a..b].to_string()
    } else {
        String::new()
    })
}

fn apply(steps: &[Step], version: &str) -> Option<String> {
    let mut v = version.to_string();
    for step in steps {
        v = match step {
            Step::Slice(a, b) => py_slice(&v, *a, *b)?,
            Step::Index(i) => py_index(&v, *i)?,
            Step::Split(sep, i) => {
                let parts: Vec<&str> = match sep {
                    Some(sep) if !sep.is_empty() => v.split(sep.as_str()).collect(),
                    Some(_) => return None,
                    None => v.split_whitespace().collect(),
                };
                let n = i64::try_from(parts.len()).ok()?;
                let i = if *i < 0 { n + i } else { *i };
                (*parts.get(usize::try_from(i).ok()?)?).to_string()
            }
        };
    }
    Some(v)
}

/// The leading numeric parts of a version literal (`"1.10.0a0"` -> [1, 10, 0]).
fn numeric_parts(lit: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for part in lit.trim().trim_start_matches('v').split('.') {
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        let Ok(n) = digits.parse() else { break };
        out.push(n);
        if digits.len() != part.len() {
            break;
        }
    }
    out
}

/// A release for which comparing the derived string with the literal as strings gives
/// another answer than comparing the versions (at the literal's precision: `"1.5"` asks
/// about major.minor). Releases equal to the literal at that precision are left out: there
/// the intent of `<` against `<=` is unclear, and no reader expects an answer. Returns the
/// release and the string the code compares.
fn misordering_release(ver: &VersionExpr, literal: &str) -> Option<(String, String)> {
    use std::cmp::Ordering;
    let lit = numeric_parts(literal);
    if lit.is_empty() {
        return None;
    }
    let before_1_10 = ver.torch_version_object;
    for (major, minor) in releases(ver.package, before_1_10) {
        let release = format!("{major}.{minor}.0");
        let full = [u64::from(major), u64::from(minor), 0];
        let intended = (0..lit.len())
            .map(|i| full.get(i).copied().unwrap_or(0).cmp(&lit[i]))
            .find(|o| *o != Ordering::Equal)
            .unwrap_or(Ordering::Equal);
        if intended == Ordering::Equal {
            continue;
        }
        let Some(compared) = apply(&ver.steps, &release) else {
            continue;
        };
        if compared.as_str().cmp(literal) != intended {
            return Some((release, compared));
        }
    }
    None
}

fn check_expr(checker: &mut Checker, expr: &Expr) {
    let Expr::Compare(cmp) = expr else { return };
    if !cmp
        .ops
        .iter()
        .any(|op| matches!(op, CmpOp::Lt | CmpOp::LtE | CmpOp::Gt | CmpOp::GtE))
    {
        return;
    }
    let operands: Vec<&Expr> = std::iter::once(&*cmp.left)
        .chain(cmp.comparators.iter())
        .collect();
    for (i, op) in cmp.ops.iter().enumerate() {
        if !matches!(op, CmpOp::Lt | CmpOp::LtE | CmpOp::Gt | CmpOp::GtE) {
            continue;
        }
        let (l, r) = (operands[i], operands[i + 1]);
        let (ver, lit) = if helpers::str_value(r).is_some() {
            (l, r)
        } else if helpers::str_value(l).is_some() {
            (r, l)
        } else {
            continue;
        };
        let Some(kind) = version_expr(checker, ver) else {
            continue;
        };
        // TorchVersion compares by version since torch 1.10.
        if kind.torch_version_object && checker.torch_at_least(1, 10) {
            continue;
        }
        let Some(literal) = helpers::str_value(lit) else {
            continue;
        };
        let Some((release, compared)) = misordering_release(&kind, literal) else {
            continue;
        };
        let lit_text = checker.text(lit.range());
        let ver_text = checker.text(ver.range());
        let order = if compared.as_str() < literal {
            "<"
        } else if compared.as_str() > literal {
            ">"
        } else {
            "=="
        };
        let message = if kind.torch_version_object {
            format!("`torch.__version__` is a plain string before torch 1.10: comparing it with {lit_text} is lexicographic (on torch {release}, \"{compared}\" {order} {lit_text}); parse both with `packaging.version.Version`")
        } else {
            format!("`{ver_text}` is a plain string: comparing it with {lit_text} is lexicographic (on release {release} it compares \"{compared}\" {order} {lit_text}); parse both with `packaging.version.Version`")
        };
        checker.report(expr.range(), message);
        return;
    }
}

fn check_call(checker: &mut Checker, call: &ExprCall, _name: Option<&str>) {
    // float(torch.__version__[:3])
    let Expr::Name(n) = &*call.func else { return };
    if n.id.as_str() != "float"
        || checker.scopes.lookup("float").is_some()
        || call.arguments.args.len() != 1
    {
        return;
    }
    let arg = &call.arguments.args[0];
    if !matches!(arg, Expr::Subscript(_)) {
        return;
    }
    let Some(ver) = version_expr(checker, arg) else {
        return;
    };
    if ver.torch_version_object || !ver.steps.iter().any(|s| matches!(s, Step::Slice(..))) {
        return;
    }
    if !reaches_comparison(checker, call) {
        return;
    }
    let text = checker.text(arg.range());
    checker.report(
        call.range(),
        format!("`float({text})` reads a version as a decimal number: \"1.10\" becomes 1.1 and \"2.10\" becomes 2.1, so newer releases compare as older; use `packaging.version.Version`"),
    );
}

/// Is the parsed version compared: `float(v[:3]) >= 1.2` (through arithmetic), or the name
/// (or `self.<attr>`) it is assigned to compared anywhere in the file, or, for a module-level
/// name, in another file of the project (`onmt.constants.torch_version >= 1.2`)? A parsed
/// version that is never compared misorders nothing.
fn reaches_comparison(checker: &Checker, call: &ExprCall) -> bool {
    let stack = checker.expr_stack();
    // The enclosing expressions, innermost first, without the call itself.
    for e in stack.iter().rev().skip(1) {
        match e {
            Expr::Compare(_) => return true,
            Expr::BinOp(_) | Expr::UnaryOp(_) => {}
            _ => break,
        }
    }
    let Some(Stmt::Assign(a)) = checker.current_stmt() else {
        return false;
    };
    if a.value.range() != call.range() {
        return false;
    }
    let module_level = checker.function().is_none() && checker.stmt_stack().len() == 1;
    a.targets.iter().any(|t| {
        let (name, attr) = match t {
            Expr::Name(n) => (n.id.as_str(), false),
            Expr::Attribute(x) => (x.attr.as_str(), true),
            _ => return false,
        };
        compared_in_file(checker.module(), name, attr)
            || (module_level
                && !attr
                && checker
                    .project_or_file()
                    .is_some_and(|p| p.model.compared_in_other_files(p.file, name)))
    })
}

/// Does a comparison anywhere in `module` read `name` (as a name, or as an attribute
/// `x.name` when `attr`)?
fn compared_in_file(module: &ruff_python_ast::ModModule, name: &str, attr: bool) -> bool {
    use ruff_python_ast::visitor::{self, Visitor};
    struct Finder<'n> {
        name: &'n str,
        attr: bool,
        in_compare: u32,
        found: bool,
    }
    impl<'x> Visitor<'x> for Finder<'_> {
        fn visit_expr(&mut self, e: &'x Expr) {
            if self.found {
                return;
            }
            if self.in_compare > 0 {
                let hit = match e {
                    Expr::Name(n) => !self.attr && n.id.as_str() == self.name,
                    Expr::Attribute(x) => x.attr.as_str() == self.name,
                    _ => false,
                };
                if hit {
                    self.found = true;
                    return;
                }
            }
            let compare = matches!(e, Expr::Compare(_));
            self.in_compare += u32::from(compare);
            visitor::walk_expr(self, e);
            self.in_compare -= u32::from(compare);
        }
    }
    let mut f = Finder {
        name,
        attr,
        in_compare: 0,
        found: false,
    };
    f.visit_body(&module.body);
    f.found
}

#[cfg(test)]
mod tests {
    use crate::settings::Version;
    use crate::{LintSettings, Linter};
    use torchvet_python::SourceFile;

    fn count(target: Option<Version>, line: &str) -> usize {
        let mut settings = LintSettings::only("torch-version-string-compare");
        settings.target_torch = target;
        let linter = Linter::new(settings);
        let src = format!("import torch\nimport torchvision\nok = {line}\n");
        let file = SourceFile::from_python("m.py", src);
        linter.lint(&file, "m.py").len()
    }

    #[test]
    fn bare_torch_version_before_1_10_misorders_only_against_two_digit_parts() {
        let old = Some(Version::new(1, 8));
        // Every release before 1.10 has one-digit parts: it orders right against "1.5.0".
        assert_eq!(count(old, "torch.__version__ >= '1.5.0'"), 0);
        assert_eq!(count(old, "torch.__version__ < '1.4'"), 0);
        assert_eq!(count(old, "torch.__version__ >= '2.0'"), 0);
        // "1.9.0" >= "1.10" as strings.
        assert_eq!(count(old, "torch.__version__ >= '1.10'"), 1);
        assert_eq!(count(old, "'1.12.0' > torch.__version__"), 1);
        // From 1.10 on torch.__version__ is a TorchVersion.
        assert_eq!(count(None, "torch.__version__ >= '1.10'"), 0);
    }

    #[test]
    fn plain_strings_misorder_against_any_release_of_two_digit_parts() {
        // "1.13.0" < "1.5.0" as strings.
        assert_eq!(count(None, "str(torch.__version__) >= '1.5.0'"), 1);
        assert_eq!(count(None, "torch.__version__[:3] >= '1.5'"), 1);
        assert_eq!(count(None, "torch.__version__.split('+')[0] >= '1.8'"), 1);
        // No release orders wrongly against these.
        assert_eq!(count(None, "torch.__version__.split('+')[0] >= '2.0'"), 0);
        assert_eq!(count(None, "torch.__version__[0] >= '1'"), 0);
        assert_eq!(count(None, "int(torch.__version__[0]) >= 1"), 0);
    }
}

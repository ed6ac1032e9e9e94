use crate::checker::Checker;
use crate::fix::{RawEdit, RawFix};
use crate::registry::Severity;
use crate::rules::facts::current_function;
use ruff_python_ast::{Expr, ExprContext};
use ruff_text_size::Ranged;

crate::declare_rule! {
    /// ## What it does
    /// Checks for `.train_data`, `.test_data`, `.train_labels` and `.test_labels` read from a
    /// torchvision dataset: `MNIST`, `FashionMNIST`, `KMNIST`, `EMNIST`, `QMNIST`, `CIFAR10`
    /// and `CIFAR100`. The dataset may be built in the same function, at module level, or by a
    /// project function in another file (`train_set = get_mnist(root, train=True)`).
    ///
    /// ## Why is this bad?
    /// torchvision 0.2.2 renamed these attributes to `.data` and `.targets` (one pair for either
    /// split). On `CIFAR10` / `CIFAR100` the old names are gone: `AttributeError: 'CIFAR10'
    /// object has no attribute 'train_data'`. The MNIST family keeps them as deprecated
    /// properties that warn on every read and return `.data` / `.targets` whatever the split:
    /// `test_set.train_labels` silently returns the test labels, and code written against the
    /// old names breaks as soon as the aliases go.
    ///
    /// A project's own dataset class with attributes of these names is not reported.
    ///
    /// ## Example
    /// ```python
    /// train_set = datasets.MNIST(root, train=True, download=True)
    /// counts = torch.bincount(train_set.train_labels)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// train_set = datasets.MNIST(root, train=True, download=True)
    /// counts = torch.bincount(train_set.targets)
    /// ```
    ///
    /// ## Fix safety
    /// The fix renames the attribute to `.data` / `.targets`: the MNIST properties return
    /// exactly those attributes, and on CIFAR they are where the values now live. Safe.
    ///
    /// ## References
    /// - [torchvision.datasets.MNIST](https://pytorch.org/vision/stable/generated/torchvision.datasets.MNIST.html)
    /// - [torchvision.datasets.CIFAR10](https://pytorch.org/vision/stable/generated/torchvision.datasets.CIFAR10.html)
    pub(crate) static MNIST_LEGACY_DATA_ATTRIBUTES = {
        name: "mnist-legacy-data-attributes",
        code: "TV132",
        group: DeprecatedApi,
        severity: Warning,
        title: "torchvision dataset .train_data/.test_data/.train_labels/.test_labels (renamed .data/.targets; gone on CIFAR)",
        autofix: Yes,
        hooks: { expr: check_expr, expr_on: crate::registry::ExprKinds::ATTRIBUTE },
    };
}

const MNIST_FAMILY: &[&str] = &["MNIST", "FashionMNIST", "KMNIST", "EMNIST", "QMNIST"];
const CIFAR: &[&str] = &["CIFAR10", "CIFAR100"];

/// The torchvision dataset class a qualified name creates: its short name.
fn dataset_class(q: &str) -> Option<&str> {
    let rest = q.strip_prefix("torchvision.datasets.")?;
    let name = rest.rsplit('.').next().unwrap_or(rest);
    (MNIST_FAMILY.contains(&name) || CIFAR.contains(&name)).then_some(name)
}

fn check_expr(checker: &mut Checker, expr: &Expr) {
    let Expr::Attribute(a) = expr else { return };
    let new = match a.attr.as_str() {
        "train_data" | "test_data" => "data",
        "train_labels" | "test_labels" => "targets",
        _ => return,
    };
    if a.ctx != ExprContext::Load || !checker.mentions("torchvision") && checker.project().is_none()
    {
        return;
    }
    // Code written for both sides of the rename: a version check, an `AttributeError`
    // fallback, or a probe of the old attribute itself (`if hasattr(ds, "train_data")`).
    // A project on torchvision 0.2 may still have the old names.
    if checker.in_version_guard()
        || checker.in_attribute_probe(&["train_data", "test_data", "train_labels", "test_labels"])
        || !checker.torchvision_at_least(0, 3)
    {
        return;
    }
    let Some(class) = receiver_class(checker, &a.value) else {
        return;
    };
    let removed = CIFAR.contains(&class.as_str());
    let old = a.attr.as_str();
    let message = if removed {
        format!("`{class}` has no `.{old}` since torchvision 0.2.2 (`AttributeError`): the attribute is `.{new}`")
    } else {
        format!("`{class}.{old}` is a deprecated alias of `.{new}` (renamed in torchvision 0.2.2): it warns on every read and returns `.{new}` whatever the split; use `.{new}`")
    };
    let d = checker.report(a.attr.range(), message);
    if removed {
        d.set_severity(Severity::Critical);
    }
    d.set_fix(RawFix::safe(
        format!("Rename to `.{new}`"),
        vec![RawEdit::replace(a.attr.range(), new)],
    ));
}

/// The torchvision dataset class of a receiver: built in place, bound in this function or at
/// module level (directly, or by a project function that returns one).
fn receiver_class(checker: &Checker, recv: &Expr) -> Option<String> {
    match recv {
        Expr::Call(c) => {
            let q = checker.resolve(&c.func)?;
            if let Some(n) = dataset_class(&q) {
                return Some(n.to_string());
            }
            let p = checker.project_or_file()?;
            match p.entity(&q)? {
                torchvet_semantic::project::Entity::Function(g) => {
                    let b = torchvet_semantic::project::facts::Binding {
                        call: c.range(),
                        element: None,
                        callee: q.into(),
                        project: true,
                    };
                    let _ = g;
                    let func = current_function(checker, p)?;
                    let q = p.model.binding_class(func, &b)?;
                    dataset_class(&q).map(str::to_string)
                }
                _ => None,
            }
        }
        Expr::Name(n) => {
            let p = checker.project_or_file()?;
            let func = current_function(checker, p)?;
            let (at, bindings) = p.model.bindings_of(func, n.id.as_str())?;
            let mut class: Option<String> = None;
            for b in bindings {
                let q = p.model.binding_class(at, b)?;
                let c = dataset_class(&q)?;
                match &class {
                    Some(prev) if prev != c => return None,
                    _ => class = Some(c.to_string()),
                }
            }
            class
        }
        _ => None,
    }
}

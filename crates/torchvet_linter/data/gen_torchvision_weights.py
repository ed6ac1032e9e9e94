#!/usr/bin/env python3
"""Generate torchvision_weights.tsv: for every torchvision model builder that still accepts the
legacy `pretrained=` / `pretrained_backbone=` arguments, the weights enum member those arguments
select when they are True.

The source of truth is torchvision's own registry: builders are the functions decorated with
`@register_model()` (what `torchvision.models.list_models()` returns), and the legacy meaning of
`pretrained=True` is the default that torchvision's `@handle_legacy_interface(...)` decorator
passes on (`weights=("pretrained", ResNet50_Weights.IMAGENET1K_V1)`). The installed package's
sources are read with `ast`; nothing is imported, so torch itself need not be installed (the
PyPI torch wheel for Linux pulls in the CUDA libraries).

Usage (what produced the committed table):
    python3 -m venv /tmp/tv && /tmp/tv/bin/pip install --no-deps torchvision
    /tmp/tv/bin/python crates/torchvet_linter/data/gen_torchvision_weights.py \
        > crates/torchvet_linter/data/torchvision_weights.tsv
or pass the torchvision package directory explicitly: `gen_torchvision_weights.py PATH`.
"""
import ast
import importlib.metadata
import importlib.util
import os
import sys


def package_dir(argv):
    if len(argv) > 1:
        return argv[1], "unknown"
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torchvision is not installed in this interpreter (pip install --no-deps torchvision)")
    return list(spec.submodule_search_locations)[0], importlib.metadata.version("torchvision")


def dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def decorator_name(dec):
    target = dec.func if isinstance(dec, ast.Call) else dec
    name = dotted(target)
    return name.rsplit(".", 1)[-1] if name else None


def enum_member(node):
    """`X_Weights.MEMBER` -> ("X_Weights", "MEMBER"); None for anything else."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.value.id, node.attr
    return None


def legacy_default(node):
    """The default of one handle_legacy_interface entry: (plain, quantized) enum members, the
    ones `pretrained=True` selects without and with `quantize=True`.
    A lambda `A if kwargs.get("quantize", False) else B` gives (B, A)."""
    if isinstance(node, ast.Constant) and node.value is None:
        return None, None
    member = enum_member(node)
    if member:
        return member, None
    if isinstance(node, ast.Lambda) and isinstance(node.body, ast.IfExp):
        test = node.body.test
        is_quantize = (
            isinstance(test, ast.Call)
            and isinstance(test.func, ast.Attribute)
            and test.func.attr == "get"
            and test.args
            and isinstance(test.args[0], ast.Constant)
            and test.args[0].value == "quantize"
        )
        if is_quantize:
            return enum_member(node.body.orelse), enum_member(node.body.body)
        # `A if kwargs["pretrained"] == "legacy" else B`: the string "legacy" picks the old
        # weights; `True` takes the else branch.
        is_legacy_string = (
            isinstance(test, ast.Compare)
            and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "legacy"
            and isinstance(test.ops[0], ast.Eq)
        )
        if is_legacy_string:
            return enum_member(node.body.orelse), None
    raise SystemExit(f"unrecognised legacy default: {ast.dump(node)}")


def main(argv):
    root, version = package_dir(argv)
    models = os.path.join(root, "models")
    files = []
    for dirpath, _, names in os.walk(models):
        for n in sorted(names):
            if n.endswith(".py"):
                files.append(os.path.join(dirpath, n))
    files.sort()
    enum_home = {}  # enum class -> module path relative to models ("segmentation.deeplabv3")
    builders = []  # (module, name, {param: (plain, quantized)})
    for path in files:
        rel = os.path.relpath(path, models)[: -len(".py")].replace(os.sep, ".")
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                if any(dotted(b) and dotted(b).endswith("WeightsEnum") for b in node.bases):
                    if node.name in enum_home:
                        raise SystemExit(f"weights enum {node.name} defined twice")
                    enum_home[node.name] = rel
            if not isinstance(node, ast.FunctionDef):
                continue
            names = [decorator_name(d) for d in node.decorator_list]
            if "register_model" not in names or "handle_legacy_interface" not in names:
                continue
            dec = node.decorator_list[names.index("handle_legacy_interface")]
            params = {}
            for kw in dec.keywords:
                if not (isinstance(kw.value, ast.Tuple) and len(kw.value.elts) == 2):
                    raise SystemExit(f"{rel}.{node.name}: unexpected legacy entry")
                legacy = kw.value.elts[0].value
                params[legacy] = (kw.arg, legacy_default(kw.value.elts[1]))
            builders.append((rel, node.name, params))

    trees = {}
    for path in files:
        rel = os.path.relpath(path, models)[: -len(".py")].replace(os.sep, ".")
        with open(path, encoding="utf-8") as f:
            trees[rel] = ast.parse(f.read(), path)

    def resolve(module, level, name):
        """The module path (relative to models) of `from .name import *` inside `module`."""
        parts = module.split(".")
        # The package the import is relative to: a package's own __init__ is inside it.
        package = parts[:-1]
        base = package[: len(package) - (level - 1)]
        target = ".".join(base + ([name] if name else []))
        if target in trees:
            return target
        if f"{target}.__init__" in trees:
            return f"{target}.__init__"
        return None

    exported = {}

    def exports(module):
        """Names `from <module> import *` brings in (its literal __all__, else its public
        top-level names and what it star-imports)."""
        if module in exported:
            return exported[module]
        exported[module] = set()
        names = set()
        literal_all = None
        for node in trees[module].body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                names.add(node.name)
            elif isinstance(node, ast.ImportFrom) and node.level > 0:
                if any(a.name == "*" for a in node.names):
                    target = resolve(module, node.level, node.module)
                    if target:
                        names |= exports(target)
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name) and t.id == "__all__":
                        try:
                            literal_all = set(ast.literal_eval(node.value))
                        except ValueError:
                            literal_all = None
        result = literal_all if literal_all is not None else {n for n in names if not n.startswith("_")}
        exported[module] = result
        return result

    def public_package(module, name):
        """The shallowest-from-the-module package that re-exports `name`: the module's own
        package when it does, else the nearest ancestor package that does."""
        parts = module.split(".")[:-1]
        while True:
            init = ".".join(parts + ["__init__"])
            if init in trees and name in exports(init):
                return ".".join(parts) or "."
            if not parts:
                return module
            parts = parts[:-1]

    def where(member):
        if member is None:
            return "-", "-"
        cls, name = member
        if cls not in enum_home:
            raise SystemExit(f"weights enum {cls} not found")
        return public_package(enum_home[cls], cls), f"{cls}.{name}"

    print(f"# torchvision {version}: legacy pretrained=True weights per builder.")
    print("# Generated by crates/torchvet_linter/data/gen_torchvision_weights.py from the")
    print("# @register_model/@handle_legacy_interface decorators; do not edit by hand.")
    print("# columns: builder_package builder_module builder legacy_param new_param")
    print("#          enum_package enum quantized_enum_package quantized_enum")
    print("# ('.' = torchvision.models itself; '-' = none)")
    rows = []
    for module, name, params in builders:
        for legacy, (new, (plain, quantized)) in params.items():
            rows.append(
                (public_package(module, name), module, name, legacy, new, *where(plain), *where(quantized))
            )
    for row in sorted(rows):
        print("\t".join(row))


if __name__ == "__main__":
    main(sys.argv)

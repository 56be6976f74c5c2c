"""The package layout holds: no module imports upward, and no import cycle.

Layers, lowest first (a module may import its own layer and the ones below):
base (errors, stats, serialize, progress, precision) -> model, examples -> planning -> diffusion -> policies -> sim -> sde -> mdp ->
tuning -> studies -> bench -> api -> cli. Every ``import`` statement counts, including those inside functions
(lazy imports are still dependencies).
"""

from __future__ import annotations

import ast
from pathlib import Path

import jaxq

ROOT = Path(jaxq.__file__).parent
LAYERS = [
    {"jaxq", "jaxq.errors", "jaxq.stats", "jaxq.serialize", "jaxq.progress", "jaxq.precision"},
    {"jaxq.model", "jaxq.examples"},
    {"jaxq.planning"},
    {"jaxq.diffusion"},
    {"jaxq.policies"},
    {"jaxq.sim"},
    {"jaxq.sde"},
    {"jaxq.mdp"},
    {"jaxq.tuning"},
    {"jaxq.studies"},
    {"jaxq.bench"},
    {"jaxq.api"},
    {"jaxq.cli", "jaxq.__main__"},
]


def layer(module: str) -> int:
    parts = module.split(".")
    for k in range(len(parts), 0, -1):
        name = ".".join(parts[:k])
        for i, group in enumerate(LAYERS):
            if name in group:
                return i
    raise AssertionError(f"{module} is in no layer")


def modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        rel = p.relative_to(ROOT.parent).with_suffix("")
        name = ".".join(rel.parts)
        out[name[: -len(".__init__")] if name.endswith(".__init__") else name] = p
    return out


def imports(path: Path, module: str, top_level_only: bool = False) -> set[str]:
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else ast.walk(tree)
    out = set()
    pkg = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in nodes:
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("jaxq")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(pkg.split(".")[: len(pkg.split(".")) - node.level + 1] + ([base] if base else []))
            if base.startswith("jaxq"):
                out.add(base)
                out |= {f"{base}.{a.name}" for a in node.names}
    return out


def test_no_module_imports_upward():
    mods = modules()
    bad = []
    for name, path in mods.items():
        for target in imports(path, name):
            if target not in mods and target.rpartition(".")[0] in mods:
                target = target.rpartition(".")[0]  # "from pkg import symbol"
            if target in mods and layer(target) > layer(name):
                bad.append(f"{name} -> {target}")
    assert not bad, "upward imports:\n" + "\n".join(sorted(bad))


def test_no_import_cycles_at_import_time():
    mods = modules()
    graph = {}
    for name, path in mods.items():
        deps = set()
        for target in imports(path, name, top_level_only=True):
            if target not in mods and target.rpartition(".")[0] in mods:
                target = target.rpartition(".")[0]
            if target in mods and target != name:
                deps.add(target)
        graph[name] = deps
    state: dict[str, int] = {}

    def visit(n, stack):
        state[n] = 1
        for d in graph[n]:
            if state.get(d) == 1 and not n.startswith(d + "."):  # a package importing its own submodule is fine
                raise AssertionError("import cycle: " + " -> ".join(stack + [n, d]))
            if d not in state:
                visit(d, stack + [n])
        state[n] = 2

    for n in graph:
        if n not in state:
            visit(n, [])


def test_every_module_is_in_a_layer():
    for name in modules():
        layer(name)

"""The package layout holds: no module imports upward, and no import cycle.

Layers, lowest first (a module may import its own layer and the ones below):
base (errors, options, stats, serialize, progress, precision) -> model, examples -> mc (the Monte Carlo core) -> planning -> diffusion -> policies -> sim -> sde -> mdp ->
tuning -> studies -> bench -> api -> cli. Every ``import`` statement counts, including those inside functions
(lazy imports are still dependencies).
"""

from __future__ import annotations

import ast
from pathlib import Path

import jaxq

ROOT = Path(jaxq.__file__).parent
LAYERS = [
    {"jaxq", "jaxq.errors", "jaxq.options", "jaxq.stats", "jaxq.serialize", "jaxq.progress", "jaxq.precision"},
    {"jaxq.model", "jaxq.examples"},
    {"jaxq.mc"},
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


def _outside_functions(tree: ast.AST):
    """The nodes run when a module is imported: everything but function bodies (``if TYPE_CHECKING`` blocks count:
    a type checker follows them, and they are how a hidden cycle starts)."""
    stack = list(ast.iter_child_nodes(tree))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def imports(path: Path, module: str, top_level_only: bool = False) -> set[str]:
    tree = ast.parse(path.read_text())
    nodes = _outside_functions(tree) if top_level_only else ast.walk(tree)
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


# ------------------------------------------------------------------------------------------ the command line
def _dynamic_target(call: ast.Call) -> str | None:
    """The module named by ``importlib.import_module(...)`` or ``__import__(...)``: its text, or the literal start of
    an f-string (``f"jaxq.cli.{name}"`` -> ``jaxq.cli.``); None for any other call."""
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    if name not in ("import_module", "__import__") or not call.args:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        return str(arg.values[0].value)
    return "?"  # a module name computed at run time: not checkable, so refused


def command_line_imports(source: str, module: str, is_package: bool = False) -> list[str]:
    """The jaxq modules a command-line module imports other than ``jaxq.api`` and ``jaxq.cli.*``: every import
    statement (inside functions too, relative ones resolved), ``from jaxq import name`` as ``jaxq.name``, and the
    modules named to ``importlib.import_module``."""
    pkg = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            found += [f"jaxq.{a.name}" for a in node.names] if base == "jaxq" else [base]
        elif isinstance(node, ast.Call) and (target := _dynamic_target(node)) is not None:
            found.append(target)
    allowed = lambda m: m == "jaxq.api" or m == "jaxq.cli" or m.startswith("jaxq.cli.")  # noqa: E731
    return sorted({m for m in found if (m == "jaxq" or m.startswith("jaxq.") or m == "?") and not allowed(m)})


def test_the_command_line_calls_the_public_api_only():
    """Every module of jaxq/cli imports from ``jaxq.api`` (and ``jaxq.cli``) only, lazily or not: the command line
    is a layer over the public API, never over the modules below it."""
    bad = []
    for name, path in modules().items():
        if name == "jaxq.cli" or name.startswith("jaxq.cli."):
            for target in command_line_imports(path.read_text(), name, path.name == "__init__.py"):
                bad.append(f"{name} -> {target}")
    assert not bad, "the command line imports below jaxq.api:\n" + "\n".join(bad)


def test_the_command_line_check_sees_every_kind_of_import():
    """The check above finds a lazy import inside a function, ``import jaxq.x``, ``from jaxq import x``, a relative
    import, a submodule of the API and a dynamic import; it lets the API and the command line's own modules pass."""
    source = '''
import jaxq.progress
from jaxq import bench, api
from jaxq.api import simulate_2x2
from jaxq.api.unchecked import wcp_value
from jaxq.cli.output import emit
from . import output
from ..sim import pss2x2
import importlib

def run(args):
    from jaxq.sim.pss2x2 import simulate_bounded
    importlib.import_module(f"jaxq.cli.{args.name}")
    importlib.import_module("jaxq.bench.pss2x2")
    return importlib.import_module(args.module)
'''
    assert command_line_imports(source, "jaxq.cli.fake") == [
        "?", "jaxq.api.unchecked", "jaxq.bench", "jaxq.bench.pss2x2", "jaxq.progress", "jaxq.sim", "jaxq.sim.pss2x2"]
    assert command_line_imports("from jaxq.api import InputError\nfrom jaxq.cli import add_common\n", "jaxq.cli.x") == []


# ------------------------------------------------------------------------------------------ the Monte Carlo core
def test_the_sde_package_builds_on_the_core_not_on_the_prelimit_simulators():
    mods = modules()
    bad = sorted(f"{n} -> {t}" for n, p in mods.items() if n.startswith("jaxq.sde")
                 for t in imports(p, n) if t == "jaxq.sim" or t.startswith("jaxq.sim."))
    assert not bad, bad


def test_random_streams_are_laid_out_only_by_the_core():
    """Keys, key splits and seeded generators are made in jaxq.mc.rng only (one layout: fold_in(PRNGKey(seed), r)
    per replication, derived seeds for a purpose); every other module asks it."""
    makers = ("PRNGKey(", "fold_in(", "random.split(", "SeedSequence(", "default_rng(", "random.key(")
    bad = []
    for name, path in modules().items():
        if name.startswith("jaxq.mc"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                text = ast.unparse(node.func) + "("
                if any(text.endswith(m) for m in makers):
                    bad.append(f"{name}:{node.lineno} {text}")
    assert not bad, bad


def test_public_class_names_are_unique_but_a_models_own_state_and_params():
    """One name per idea: a public class name is defined once in the package, except a Markov model's own
    ``State`` and ``Params`` (each model module defines its pair, read as ``model.State``)."""
    seen: dict[str, list[str]] = {}
    for name, path in modules().items():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                seen.setdefault(node.name, []).append(f"{name}:{node.lineno}")
    twice = {k: v for k, v in seen.items() if len(v) > 1}
    assert set(twice) <= {"State", "Params"}, twice
    assert all(p.startswith("jaxq.sim.models.") for k in ("State", "Params") for p in twice.get(k, []))


ENGINE_HELPERS = {"choose_engine"}  # the driver option's helpers: ``engine="auto"|"event"|"uniformized"``


def engine_names(source: str, label: str) -> list[str]:
    """The public classes and functions of a module (at any depth: methods and nested ones too) whose name has the
    word "engine" in it, other than the driver option's helpers (:data:`ENGINE_HELPERS`)."""
    return [f"{label}:{node.lineno} {node.name}" for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and not node.name.startswith("_") and "engine" in node.name.lower() and node.name not in ENGINE_HELPERS]


def test_engine_means_the_driver_option_only():
    """The word "engine" names the user's choice of driver (``engine="auto"|"event"|"uniformized"``,
    :func:`jaxq.sim.simulate_markov.choose_engine`) and nothing else: what the event driver runs is an
    :class:`jaxq.sim.event.EventModel`, so no other public class or function is named with it."""
    found = [f for name, path in modules().items() for f in engine_names(path.read_text(), name)]
    assert not found, found
    probe = "class Engine:\n    def run_engine(self): pass\ndef markov_engine(): pass\ndef _engines(): pass\n" \
            "def choose_engine(): pass\n"
    assert len(engine_names(probe, "probe")) == 3  # the check sees a class, a method and a function


def test_the_papers_are_cited_by_name_not_by_file_id():
    bad = [f"{name}:{i}" for name, path in modules().items()
           for i, line in enumerate(path.read_text().splitlines(), 1) if "seed 00" in line.lower()]
    assert not bad, bad


def _policy_branches(source: str, label: str) -> list[str]:
    """Where a module of the 2x2 simulator tells a built-in policy from a user's: a name ``hook`` (the old
    ``hook is None`` engines), ``isinstance(..., Policy2x2)``, or a comparison with ``BUILTIN``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        where = f"{label}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Name) and node.id == "hook" or isinstance(node, ast.arg) and node.arg == "hook":
            found.append(f"{where}: the name 'hook'")
        elif isinstance(node, ast.Attribute) and node.attr == "hook":
            found.append(f"{where}: the attribute '.hook'")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance"
              and "Policy2x2" in ast.unparse(node.args[1])):
            found.append(f"{where}: {ast.unparse(node)}")
        elif isinstance(node, ast.Compare) and "BUILTIN" in ast.unparse(node):
            found.append(f"{where}: {ast.unparse(node)}")
    return found


def test_the_2x2_simulator_has_one_path_for_every_policy():
    """The built-in policies are Policy2x2 values (jaxq.policies.hook.BUILTIN) and every run goes through one
    decision path: no module of jaxq.sim branches on whether the policy is built-in or a user's (what a policy
    needs is a field of its value: jobs, checked, mode, perturb, invariants)."""
    found = [f for path in sorted((ROOT / "sim").rglob("*.py"))
             for f in _policy_branches(path.read_text(), str(path.relative_to(ROOT.parent)))]
    assert not found, found
    probe = "if hook is None:\n    pass\nisinstance(p, Policy2x2)\np is hk.BUILTIN\ns.hook\n"
    assert len(_policy_branches(probe, "probe")) == 4  # the check sees each form

"""The public callables of the converted packages keep Google-style docstrings (mkdocs.yml: ``docstring_style:
google``): every public function or method that takes arguments has an ``Args:`` section, and every public class
that takes arguments (a dataclass, a NamedTuple, an ``__init__`` with parameters) an ``Args:`` or ``Attributes:``
section. Public: no leading underscore, in a module without one."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "jaxq"
CONVERTED = ["api", "mc", "planning", "model", "diffusion", "studies", "mdp", "tuning", "cli", "bench", "examples",
             "stats.py", "errors.py", "serialize.py", "progress.py", "options.py", "precision.py", "xla_flags.py"]


def _section(doc: str, *names: str) -> bool:
    return any(line.strip() == f"{name}:" for line in doc.splitlines() for name in names)


def _takes_args(fn: ast.FunctionDef) -> bool:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg not in ("self", "cls")]
    return bool(names or a.vararg or a.kwarg)


def _class_takes_args(cls: ast.ClassDef) -> bool:
    for item in cls.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            return _takes_args(item)
    return bool(cls.bases) or any(isinstance(i, ast.AnnAssign) and isinstance(i.target, ast.Name) for i in cls.body)


def _is_property(fn: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list)


def _files():
    for name in CONVERTED:
        path = ROOT / name
        for f in ([path] if path.is_file() else sorted(path.glob("*.py"))):
            if not f.name.startswith("_") or f.name == "__init__.py":
                yield f


def _missing(path: Path) -> list[str]:
    out = []
    for node in ast.parse(path.read_text()).body:
        if node.__class__ is ast.FunctionDef and not node.name.startswith("_") and _takes_args(node):
            if not _section(ast.get_docstring(node) or "", "Args"):
                out.append(node.name)
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            if _class_takes_args(node) and not _section(ast.get_docstring(node) or "", "Args", "Attributes"):
                out.append(node.name)
            for item in node.body:
                if (isinstance(item, ast.FunctionDef) and not item.name.startswith("_") and not _is_property(item)
                        and _takes_args(item) and not _section(ast.get_docstring(item) or "", "Args")):
                    out.append(f"{node.name}.{item.name}")
    return out


@pytest.mark.parametrize("path", list(_files()), ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_public_callables_have_google_sections(path):
    assert _missing(path) == [], f"{path.name}: public callables without an Args:/Attributes: section"


def test_the_packages_are_found():
    assert any(f.parent.name == "api" for f in _files())

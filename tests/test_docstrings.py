"""The public callables of every module under jaxq/ (sub-packages included) keep Google-style docstrings
(mkdocs.yml: ``docstring_style: google``): every public function or method that takes arguments has an ``Args:``
section, and every public class that takes arguments (a dataclass, a NamedTuple, an ``__init__`` with parameters)
an ``Args:`` or ``Attributes:`` section. Public: no leading underscore, in a module and a package without one."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "jaxq"


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


def _public(path: Path) -> bool:
    """Whether a module is public: no part of its path below jaxq/ starts with an underscore (``__init__.py``
    aside)."""
    return all(not part.startswith("_") or part == "__init__.py" for part in path.relative_to(ROOT).parts)


def _files():
    yield from (f for f in sorted(ROOT.rglob("*.py")) if _public(f))


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
    found = {f.relative_to(ROOT).parent.as_posix() for f in _files()}
    assert {"api", "sim", "sim/models", "sim/sampling", "sde", "policies"} <= found

"""The policy table is the one source: every list of policies, cases, rules or sampling times derives from it.

:mod:`jaxq.model.policy_table` holds the six policies of the switched-policies paper (Definitions 2.9-2.10,
Theorem 2.11) as rows; the simulators, the diffusion, the exact CTMC, the random systems and the command line read
them. The tests below check that each derived table says what the table says (so a policy added to the table shows up
everywhere), and that no other module writes the table out again: no literal collection of policy, rule or
sampling-time names, and no function comparing a value against two or more of them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import jaxq
from jaxq.model import policy_table as T
from jaxq.model.policy_table import POLICY_TABLE, ROLE_I1, RULE_NAMES, SAMPLING_NAMES

ROOT = Path(jaxq.__file__).parent
TABLE_MODULE = ROOT / "model" / "policy_table.py"
NAMES = frozenset(POLICY_TABLE) | frozenset(RULE_NAMES) | frozenset(SAMPLING_NAMES)


# ------------------------------------------------------------------------------------------ the derived tables
def test_the_policies_module_re_exports_the_table():
    from jaxq.policies import pss2x2 as pol
    from jaxq.sim import pss2x2 as sim

    for name in ("RULE_P", "RULE_T1", "RULE_T2", "RULE_NAMES", "SAMPLE_NEVER", "SAMPLE_K1_COMPLETION",
                 "SAMPLE_EVERY_EVENT", "PolicyRules", "POLICIES", "FIXED", "CHOICES", "uses_threshold"):
        assert getattr(pol, name) is getattr(T, name), name
    assert sim.POLICY_CHOICES is T.CHOICES
    assert T.POLICIES == {name: T.PolicyRules(s.lower, s.higher, s.sampling, s.dual) for name, s in POLICY_TABLE.items()}
    assert T.CHOICES == ("auto", *POLICY_TABLE, *T.FIXED)
    assert T.FIXED == {f"{r}@{m}": (code, m - 1) for code, r in enumerate(RULE_NAMES) for m in (1, 2)}


def test_the_command_line_offers_the_table():
    from jaxq.api import choices

    assert choices.POLICY_CHOICES == T.CHOICES


def test_the_diffusion_reads_the_table():
    from jaxq.diffusion import threshold, workload

    assert workload.POLICIES == tuple(POLICY_TABLE)
    with_threshold = [name for name, s in POLICY_TABLE.items() if s.threshold]
    assert sorted(threshold.THRESHOLD_POLICIES) == sorted(with_threshold)
    lower_rules = [POLICY_TABLE[name].lower for name in threshold.THRESHOLD_POLICIES]
    assert lower_rules == sorted(lower_rules, reverse=True)  # the module docstring's order: T2 in the lower mode first


def _roles_system(spec, p=0):
    """The single-activity classes i1 of two modes (and the mode(s) read) under which p has ``spec.roles``."""
    i1 = np.zeros(2, dtype=int)
    at = (0, 1) if spec.dual else (0,)
    for role, m in zip(spec.roles, at):
        i1[m] = p if role == ROLE_I1 else 1 - p
    if not spec.dual:
        i1[1] = 1 - i1[0]
    return i1, at


@pytest.mark.parametrize("name", list(POLICY_TABLE))
def test_theorem_2_11_picks_the_policy_of_the_roles(name):
    """:func:`policy_name` and :func:`target_hpc` (the random draw's class p of a case) both read the roles."""
    from jaxq.diffusion.workload import policy_name
    from jaxq.studies.random_draw import target_hpc

    spec = POLICY_TABLE[name]
    for p in (0, 1):
        i1, at = _roles_system(spec, p)
        case = "dual" if spec.dual else "single"
        active, lower, higher = (None, 0, 1) if spec.dual else (0, None, None)
        assert policy_name(case, p, i1, active, lower, higher) == name
        an = type("An", (), {})()
        an.modes = type("Md", (), {"i1": i1, "i2": 1 - i1})()
        an.case, an.active, an.lower, an.higher = case, active, lower, higher
        assert target_hpc(name, an) == p
        for other in POLICY_TABLE:
            if other != name:
                assert target_hpc(other, an) in (None, 1 - p)  # another case: not this p


def test_the_random_systems_read_the_table():
    from jaxq.studies import random_draw, random_systems

    assert random_draw.CASES == tuple(POLICY_TABLE)
    assert random_draw._DUAL == {name: s.dual for name, s in POLICY_TABLE.items()}
    assert random_draw._SWITCHING == {name: s.switching for name, s in POLICY_TABLE.items() if s.dual}
    assert random_systems.TUNABLE_CASES == tuple(name for name, s in POLICY_TABLE.items() if s.dual or s.threshold)


def test_the_exact_ctmc_reads_the_table():
    from jaxq.sim import exact_ctmc

    assert exact_ctmc.Switching().sampling == SAMPLING_NAMES[T.SAMPLE_NEVER]
    for names in (RULE_NAMES, SAMPLING_NAMES):
        assert [exact_ctmc._code(names, n, "x") for n in names] == list(range(len(names)))
        with pytest.raises(ValueError):
            exact_ctmc._code(names, "nope", "x")
    for spec in POLICY_TABLE.values():
        assert 0 <= spec.sampling < len(SAMPLING_NAMES) and {spec.lower, spec.higher} <= set(range(len(RULE_NAMES)))


def test_the_table_is_theorem_2_11():
    """One policy per role pattern of p (complete: one mode in the single case, two in the dual case); the names
    spell the rules (a dual-mode policy: lower then higher); dual-mode policies sample the mode, single-mode ones
    never and use one rule."""
    assert sorted(T.BY_ROLES) == sorted([(a,) for a in (1, 2)] + [(a, b) for a in (1, 2) for b in (1, 2)])
    for name, s in POLICY_TABLE.items():
        assert name == s.name == RULE_NAMES[s.lower] + (RULE_NAMES[s.higher] if s.dual else "")
        assert (s.sampling != T.SAMPLE_NEVER) == s.dual and (s.dual or s.lower == s.higher)
    with pytest.raises(ValueError):
        T.PolicySpec("X", T.RULE_P, T.RULE_T2, T.SAMPLE_NEVER, False, (ROLE_I1,))  # a single-mode one has one rule
    with pytest.raises(ValueError):
        T.PolicySpec("X", T.RULE_P, T.RULE_P, T.SAMPLE_EVERY_EVENT, True, (ROLE_I1,))  # two modes, two roles


# ------------------------------------------------------------------------------------------ no other copy
def table_copies(source: str) -> list[str]:
    """Where a module writes (part of) the policy table out: a literal tuple, list, set or dict holding two or more
    of the table's names (policies, rules, sampling times) among its elements, keys or values; or a function that
    compares values against two or more of them (an ``if``/``elif`` chain or ``in (...)`` spelling a table)."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            elts = node.elts
        elif isinstance(node, ast.Dict):
            elts = [k for k in node.keys if k is not None] + node.values
        else:
            continue
        hits = {e.value for e in elts if isinstance(e, ast.Constant) and e.value in NAMES}
        if len(hits) >= 2:
            found.append(f"{node.lineno}: literal {sorted(hits)}")
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            hits = {c.value for cmp in ast.walk(fn) if isinstance(cmp, ast.Compare)
                    for c in [cmp.left, *cmp.comparators] if isinstance(c, ast.Constant) and c.value in NAMES}
            if len(hits) >= 2:
                found.append(f"{fn.lineno}: {getattr(fn, 'name', 'lambda')} compares against {sorted(hits)}")
    return sorted(set(found))


def test_no_module_but_the_table_writes_the_table_out():
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        if path != TABLE_MODULE:
            bad += [f"{path.relative_to(ROOT.parent)}:{hit}" for hit in table_copies(path.read_text())]
    assert not bad, "policy tables written out of jaxq/model/policy_table.py (derive them from it):\n" + "\n".join(bad)


def test_the_copy_check_sees_every_kind_of_copy():
    """The check finds each kind of copy the package once had, and lets single names and derived tables pass."""
    copies = {
        'POLICIES = ("P", "T2", "PP", "T2T2", "T1T2", "T2T1")\n': 1,
        'THRESHOLD = ["T2", "T2T1"]\n': 1,
        '_DUAL = {"P": False, "PP": True}\n': 1,
        'def f(a, b):\n    return {"11": "PP", "21": "T2T1"}[a + b]\n': 1,
        'S = {0: "never", 1: "k1", 2: "every"}\n': 1,
        'def g(case):\n    if case in ("P", "T2"):\n        return 1\n': 1,
        'def decide(rule):\n    if rule == "P":\n        return 0\n    elif rule == "T1":\n        return 1\n': 1,
        'def nxt(s):\n    return s == "never" or s != "k1"\n': 1,
    }
    for source, count in copies.items():
        assert len(table_copies(source)) == count, source
    fine = ('from jaxq.model.policy_table import POLICY_TABLE\nCASES = tuple(POLICY_TABLE)\n'
            'def h(policy):\n    return policy == "T1T2"\nx = simulate(policy="P")\nD = {"P": 1, "other": 2}\n')
    assert table_copies(fine) == []

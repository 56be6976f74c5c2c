"""The options of :func:`jaxq.simulate`, declared once per kind of system.

Each kind of system takes a few typed groups (NamedTuples: :class:`jaxq.Truncation`, :class:`jaxq.Levels`,
:class:`jaxq.Outputs`, :class:`jaxq.Batching`, :class:`jaxq.Window`, :class:`jaxq.NetworkOutputs`) and a few plain
options. A group is given whole (``truncation=Truncation(horizon=5.0)``) or field by field as flat keywords
(``horizon=5.0``); :func:`flat` turns the groups given whole into their fields, so that both reach the simulators
the same way (:func:`jaxq.options.grouped` groups them again). These tables are the one list of what
``jaxq.simulate`` takes; a test holds them to the fields of the simulators' typed arguments.

``jaxq.api`` imports this module on first use (it imports the simulators, which ``import jaxq.api`` does not).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping, NamedTuple

from jaxq.errors import InputError
from jaxq.mc.replications import Batching
from jaxq.policies.thresholds import Levels
from jaxq.sim.network import NetworkOutputs, Window
from jaxq.sim.pss2x2 import Outputs, Truncation

__all__ = ["Batching", "Levels", "NetworkOutputs", "Outputs", "SimulateOptions", "Truncation", "Window", "KINDS",
           "GROUP_CLASSES", "OWN", "fields", "valid", "flat"]

OWN = ("system", "n", "reps", "policy", "engine", "seed", "rel_se", "max_reps", "budget")
"""The arguments of ``jaxq.simulate`` itself, for every kind (not options)."""

GROUP_CLASSES = {cls.__name__: cls for cls in (Truncation, Levels, Outputs, Batching, Window, NetworkOutputs)}
"""The typed groups by their public names (``jaxq.Truncation``, ...)."""

TUNED_REASON = "the tuned policy sets its own switching level and threshold; pass it to a policy other than 'tuned'"


class SimulateOptions(NamedTuple):
    """The options of ``jaxq.simulate`` for one kind of system.

    Attributes:
        where: The call, as the error messages name it (``jaxq.simulate (a 2x2 system)``).
        groups: Keyword -> the NamedTuple type of that typed group (its fields are options too, given flat).
        plain: The options outside every group.
        refused: Keywords this kind refuses when they are not None -> the reason.
    """

    where: str
    groups: Mapping[str, type]
    plain: tuple[str, ...] = ()
    refused: Mapping[str, str] = MappingProxyType({})


KINDS = MappingProxyType({
    "pss2x2": SimulateOptions(
        "jaxq.simulate (a 2x2 system)",
        MappingProxyType({"truncation": Truncation, "levels": Levels, "outputs": Outputs, "batching": Batching}),
        ("analysis",)),
    "pss2x2_tuned": SimulateOptions(
        "jaxq.simulate (a 2x2 system, tuned)",
        MappingProxyType({"truncation": Truncation, "outputs": Outputs, "batching": Batching}),
        ("analysis", "tune_reps", "theta_exponent"),
        MappingProxyType({key: TUNED_REASON for key in ("levels", *(f for f in Levels._fields
                                                                     if f != "theta_exponent"))})),
    "network": SimulateOptions(
        "jaxq.simulate (a network)",
        MappingProxyType({"window": Window, "outputs": NetworkOutputs, "batching": Batching}),
        ("observers",)),
    "markov": SimulateOptions(
        "jaxq.simulate (a MarkovModel)",
        MappingProxyType({"batching": Batching}),
        ("horizon", "discount", "warmup", "params", "observers")),
})
"""The options of ``jaxq.simulate`` per kind of system: a 2x2 system (``pss2x2``; ``pss2x2_tuned`` under the policy
``"tuned"``), a network and a :class:`jaxq.MarkovModel`."""


def fields(kind: SimulateOptions) -> dict[str, str]:
    """The fields of a kind's groups, each with the keyword of its group.

    Args:
        kind: The options of one kind of system.

    Returns:
        Field name -> group keyword (``{"horizon": "truncation", ...}``).
    """
    return {f: group for group, cls in kind.groups.items() for f in cls._fields}


def valid(kind: SimulateOptions) -> set[str]:
    """Every option a kind takes: its groups, their fields, its plain options and the keywords it refuses with a
    reason.

    Args:
        kind: The options of one kind of system.

    Returns:
        The option names.
    """
    return set(kind.groups) | set(fields(kind)) | set(kind.plain) | set(kind.refused)


def _group(kind: SimulateOptions, key: str, value):
    """A group given whole, checked to be of its kind's type."""
    cls = kind.groups[key]
    if not isinstance(value, cls):
        raise InputError(key, f"expected a jaxq.{cls.__name__} ({', '.join(cls._fields)}), got {value!r:.80}")
    return value


def flat(kind: SimulateOptions, options: dict, unknown) -> dict:
    """A kind's options with every group given whole replaced by its fields (as if given flat).

    A group given as None is no group. An option the kind does not take is ``unknown(key, valid)`` raised.

    Args:
        kind: The options of one kind of system.
        options: The options as given (groups and flat keywords).
        unknown (collections.abc.Callable[[str, set[str]], Exception]): The error of an option the kind does not
            take.

    Returns:
        The flat options: the fields of the groups given whole, then the flat keywords.

    Raises:
        InputError: Naming the key: a group not of its type, a field given both in its group and flat, a keyword
            the kind refuses with a reason.
    """
    names = valid(kind)
    for key, value in options.items():
        if key not in names:
            raise unknown(key, names)
        if key in kind.refused and value is not None:
            raise InputError(key, kind.refused[key])
    out = {}
    for key, value in options.items():
        if key in kind.groups and value is not None:
            for f, x in _group(kind, key, value)._asdict().items():
                if f in options:
                    raise InputError(f, f"given twice: as {f}= and in {key}= ({type(value).__name__}); give it once")
                out[f] = x
    return {**out, **{k: x for k, x in options.items() if k not in kind.groups}}

"""Flat keyword options grouped into a simulator's typed arguments, once, at the API.

The simulators take their settings as small typed objects (NamedTuples: a truncation, the levels of a policy, how
replications are batched, ...); users and the command line pass flat keywords (``horizon=``, ``chunk=``).
:func:`grouped` is the one translation between the two.
"""

from __future__ import annotations

from jaxq.errors import InputError


def grouped(options: dict, groups: dict, passthrough=None, where: str = "the simulator") -> dict:
    """Flat keyword options as typed arguments.

    A key that is a field of one of ``groups`` (argument name -> NamedTuple type) goes into that argument (on top of
    the argument when it is given whole, else of the type's defaults); an argument name given whole is kept. Other
    keys pass through when ``passthrough`` is None; otherwise they must be in ``passthrough``, and any other key is an
    :class:`~jaxq.errors.InputError` naming it and the valid keys (``where``: the simulator, for the message).

    Args:
        options: The flat keyword options.
        groups: Argument name -> NamedTuple type.
        passthrough (collections.abc.Container[str] | None): The other keys allowed (None: any).
        where: The simulator, for the message.

    Returns:
        The arguments.

    Raises:
        InputError: Naming a key that is neither a field, an argument nor in ``passthrough``.
    """
    out, fields = {}, {}
    for key, value in options.items():
        group = next((g for g, t in groups.items() if key in t._fields), None)
        if group is not None:
            fields.setdefault(group, {})[key] = value
        elif passthrough is None or key in groups or key in passthrough:
            out[key] = value
        else:
            valid = sorted({f for t in groups.values() for f in t._fields} | set(groups) | set(passthrough))
            raise InputError(key, f"is not an option of {where}; valid: {', '.join(valid)}")
    for group, given in fields.items():
        out[group] = out.get(group, groups[group]())._replace(**given)
    return out

"""What a user gives: systems and the values of options, checked before any work.

The functions of :mod:`jaxq.api` check their own arguments; these are the checks themselves, for a script or a
command line that takes its values as text (the ``jaxq`` command builds its options from them). A refusal is one
:class:`InputError` naming the key it is given (an argument or an option, ``--seed``) and the reason.
"""

from __future__ import annotations

from jaxq.errors import InputError
from jaxq.model.validate import (
    MAX_MAGNITUDE,
    arg_type,
    check_devices,
    check_output_file,
    check_rates,
    check_seed,
    check_work,
    pss_default_horizon,
    pss_events_per_replication,
)

__all__ = ["InputError", "MAX_MAGNITUDE", "arg_type", "check_devices", "check_output_file", "check_rates",
           "check_seed", "check_work", "example_path", "pss_default_horizon", "pss_events_per_replication",
           "read_system"]


def read_system(source):
    """A system from a TOML file or a bundled example's name (when no such file exists), as the command line reads it.

    :func:`jaxq.api.load` without the argument check of the API, so that a refusal names the file's keys as
    :func:`jaxq.model.load` does.

    Args:
        source (str | os.PathLike): A TOML file or a bundled example's name.

    Returns:
        (jaxq.model.pss2x2.PSS2x2 | jaxq.model.network.Network): A :class:`jaxq.model.pss2x2.PSS2x2` or a
            :class:`jaxq.model.network.Network`.

    Raises:
        InputError: Naming the file's key (``system`` for an empty path, ``system.kind``, ``arrivals.lambda``, ...).
    """
    from jaxq.model import load

    return load(source)


def example_path(name: str):
    """The TOML file of the bundled example ``name``.

    Args:
        name: ``"pss_PP"``, ``"network_N"``, ...; :func:`jaxq.api.example_names` lists them.

    Returns:
        (pathlib.Path): The file, whether or not a file of that name exists in the current folder.
    """
    from jaxq.examples import path

    return path(name)

"""Studies step by step: read and validate an experiment, check its output folder, run it (resumably, on several
devices or processes), read an earlier run's manifest.

:func:`jaxq.api.run_experiment` does all of it in one call; ``jaxq run`` and ``jaxq demo`` take the steps one at
a time (a progress report while a large grid is checked, the default folder named after the experiment, the
processes of a cluster).
"""

from __future__ import annotations

import os
from pathlib import Path

from jaxq.errors import InputError
from jaxq.precision import float64

__all__ = ["check_output_folder", "is_empty_folder", "load_experiment", "parse_experiment", "read_manifest",
           "run_study"]


@float64  # its checks compute the systems' limits: in float64 whatever the caller's JAX configuration
def load_experiment(path, seeds: list[int] | None = None, progress=None):
    """Read and validate an experiment file (its systems, grid, work and chunks) before anything is written.

    Args:
        path (str | os.PathLike): The experiment file (``experiments/*.toml``).
        seeds: Replaces the file's seeds.
        progress (typing.Callable | None): Called with the number of grid points (times seeds) checked since its last
            call, as the check goes (a counter for a large grid).

    Returns:
        (jaxq.studies.experiment.Experiment): ``.name``, ``.study``, ... for :func:`run_study`.

    Raises:
        InputError: Bad input, naming the key.
    """
    from jaxq.studies import experiment

    return experiment.load_experiment(path, seeds, progress)


@float64
def parse_experiment(text: str, file, seeds: list[int] | None = None):
    """:func:`load_experiment` of an experiment given as TOML text.

    Args:
        text: The TOML text.
        file (str | os.PathLike): Where it would live (relative system paths are resolved from its folder; it is also
            the file the run records).
        seeds: Replaces the text's seeds.

    Returns:
        (jaxq.studies.experiment.Experiment): As :func:`load_experiment`.

    Raises:
        InputError: Naming ``experiment``, for text that is not TOML.
    """
    import tomllib

    from jaxq.studies.experiment import from_dict

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError("experiment", f"not valid TOML ({e})") from None
    if seeds is not None and isinstance(data.get("experiment"), dict):
        data["experiment"]["seeds"] = list(seeds)
    return from_dict(data, Path(file))


def check_output_folder(out, *, resume: bool, default: bool = False) -> None:
    """Refuse, before any work, a folder a run must not write into.

    Args:
        out (str | os.PathLike): The folder.
        resume: Without ``resume`` a folder that is not empty is refused (its files would be overwritten or mixed with
            the run's); with ``resume`` one that holds files but no jaxq run, or a run in use by another process.
        default: ``out`` is the default folder ``results/<experiment name>`` (the message says so).

    Raises:
        InputError: Naming ``--out``: a path that cannot be a folder, or a folder refused as ``resume`` says.
    """
    from jaxq.studies.runner import check_output_folder as check

    check(Path(out), resume=resume, default=default)


def is_empty_folder(out, key: str = "--out") -> bool:
    """Whether ``out`` is missing or an empty folder.

    Args:
        out (str | os.PathLike): The folder.
        key: The name a refusal gives.

    Returns:
        Whether ``out`` is missing or an empty folder.

    Raises:
        InputError: Naming ``key``, for a folder that cannot be listed.
    """
    from jaxq.studies.runner import is_empty_folder as empty

    return empty(Path(out), key)


def read_manifest(out) -> dict | None:
    """The manifest of the jaxq run in the folder ``out``.

    Args:
        out (str | os.PathLike): The folder.

    Returns:
        Its fingerprint and experiment (``name``, ``study``, ``file``, ...), or None where there is none or it is not a
            jaxq run's.
    """
    from jaxq.studies.runner import read_manifest as read

    return read(Path(out))


def run_study(experiment, out: str | os.PathLike, *, resume: bool = False, devices=None, distributed: bool = False,
              progress: bool | None = None) -> dict | None:
    """Run a validated experiment (:func:`load_experiment`, :func:`parse_experiment`) into the folder ``out``.

    Args:
        experiment (jaxq.studies.experiment.Experiment): The validated experiment.
        out: The folder.
        resume: Keep the chunks of an earlier run of the same experiment and compute the rest.
        devices (list | None): None (all local devices; on a CPU, a chunk of at least
            ``jaxq.mc.replications.SPREAD_WORK`` events or steps, the first device below) or a list of local JAX
            devices to shard each chunk over.
        distributed: This process is one of several ``jax.distributed`` processes sharing ``out``.
        progress: The bar (None: on a terminal).

    Returns:
        The run record (``run.json``: tables, files, chunks, events, times), None on processes other than 0.
    """
    from jaxq.studies.runner import run

    return run(experiment, out, resume=resume, devices=devices, distributed=distributed, progress=progress)

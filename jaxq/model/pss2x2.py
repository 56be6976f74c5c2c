"""The 2x2 parallel server system of the switched-policies paper (two classes i, two servers k, four activities).

Arrays are indexed as in the paper: ``lam[i]``, ``mu[i, k]`` (class i row, server k column).
The n-th system has ``lambda_n = n lambda + sqrt(n) lambda_hat`` and
``mu_n = n mu + sqrt(n) mu_hat``; one server per pool; its cost is ``h.X / sqrt(n)``. ``system.at(n)`` is the n-th
system as one value (:class:`ScaledPSS2x2`), its rates computed once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from jaxq.errors import InputError
from jaxq.model.distributions import Dist, parse
from jaxq.model.validate import (MAX_MAGNITUDE, MAX_RATE, Positive, Real, check_tables, read_only, read_system,
                                 validate_model)

Pair = Annotated[list[Positive], Field(min_length=2, max_length=2)]
RealPair = Annotated[list[Real], Field(min_length=2, max_length=2)]
StrPair = Annotated[list[str], Field(min_length=2, max_length=2)]


class _System(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)
    kind: Literal["pss2x2"]
    lam: Pair = Field(alias="lambda")
    mu: Annotated[list[Pair], Field(min_length=2, max_length=2)]
    lambda_hat: RealPair = [0.0, 0.0]
    mu_hat: Annotated[list[RealPair], Field(min_length=2, max_length=2)] = [[0.0, 0.0], [0.0, 0.0]]
    interarrival: StrPair = ["exponential", "exponential"]
    service: Annotated[list[StrPair], Field(min_length=2, max_length=2)] = [
        ["exponential", "exponential"],
        ["exponential", "exponential"],
    ]


class _Cost(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    h: Pair
    gamma: Positive


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    system: _System
    cost: _Cost


def _check_arrays(lam, mu, lambda_hat, mu_hat, h, gamma) -> None:
    """Shapes, finiteness and ranges of a system built in Python (``from_dict`` checks the same first)."""
    for key, a, shape, positive in (("system.lambda", lam, (2,), True), ("system.mu", mu, (2, 2), True),
                                    ("system.lambda_hat", lambda_hat, (2,), False),
                                    ("system.mu_hat", mu_hat, (2, 2), False), ("cost.h", h, (2,), True),
                                    ("cost.gamma", gamma, (), True)):
        if isinstance(a, (np.ndarray, float, int, np.floating)):
            a = np.asarray(a)
            if a.shape != shape:
                raise InputError(key, f"expected shape {shape}, got {a.shape}")
            if not np.all(np.isfinite(a)) or np.any(np.abs(a) > MAX_MAGNITUDE):
                raise InputError(key, f"values must be finite and at most {MAX_MAGNITUDE:g} in magnitude")
            if positive and not np.all(a > 0):
                raise InputError(key, "values must be positive")


@dataclass(frozen=True, eq=False)
class PSS2x2:
    """First- and second-order data of the 2x2 system, its primitives and its cost (2.6).

    Attributes:
        lam: lambda_i, shape (2,).
        mu: mu_ik, shape (2, 2).
        lambda_hat: The second-order term of lam, shape (2,) (zeros by default).
        mu_hat: The second-order term of mu, shape (2, 2) (zeros by default).
        interarrival: The interarrival distribution of each class (exponential by default).
        service: The service distribution of each activity (i, k) (exponential by default).
        h: The holding cost rates h_i, shape (2,) (ones by default).
        gamma: The discount rate.

    Raises:
        InputError: Naming the key (``system.lambda``, ``system.mu``, ``system.lambda_hat``, ``system.mu_hat``,
            ``cost.h``, ``cost.gamma``) of an array of the wrong shape, not finite, beyond ``MAX_MAGNITUDE``, or not
            positive where it must be.
    """

    lam: np.ndarray  # lambda_i, shape (2,)
    mu: np.ndarray  # mu_ik, shape (2, 2)
    lambda_hat: np.ndarray = field(default_factory=lambda: np.zeros(2))
    mu_hat: np.ndarray = field(default_factory=lambda: np.zeros((2, 2)))
    interarrival: tuple[Dist, Dist] = (Dist("exponential", 1.0), Dist("exponential", 1.0))
    service: tuple[tuple[Dist, Dist], tuple[Dist, Dist]] = (
        (Dist("exponential", 1.0), Dist("exponential", 1.0)),
        (Dist("exponential", 1.0), Dist("exponential", 1.0)),
    )
    h: np.ndarray = field(default_factory=lambda: np.ones(2))
    gamma: float = 1.0

    def __post_init__(self):
        _check_arrays(self.lam, self.mu, self.lambda_hat, self.mu_hat, self.h, self.gamma)

    @property
    def ca2(self) -> np.ndarray:
        """SCV of the interarrival times, per class."""
        return np.array([d.scv for d in self.interarrival])

    @property
    def cs2(self) -> np.ndarray:
        """SCV of the service times, per activity (i, k)."""
        return np.array([[d.scv for d in row] for row in self.service])

    @property
    def exponential(self) -> bool:
        """True when every primitive is exponential (the system is a CTMC)."""
        dists = list(self.interarrival) + [d for row in self.service for d in row]
        return all(d.name == "exponential" for d in dists)

    def at(self, n: float) -> ScaledPSS2x2:
        """The n-th system: its rates ``lambda_n = n lambda + sqrt(n) lambda_hat``, ``mu_n = n mu + sqrt(n) mu_hat``
        and its cost scale ``h / sqrt(n)``, computed once; refuses n where a rate is not positive.

        Args:
            n: The scale n.

        Returns:
            The n-th system.

        Raises:
            InputError: Naming ``n`` when n is not a positive finite number, or gives rates beyond ``MAX_RATE`` or a
                non-positive rate.
        """
        if not (math.isfinite(n) and n > 0):
            raise InputError("n", f"must be a positive finite number, got {n}")
        rn = math.sqrt(n)
        with np.errstate(over="ignore", invalid="ignore"):
            lam_n = n * self.lam + rn * self.lambda_hat
            mu_n = n * self.mu + rn * self.mu_hat
        if not (np.all(np.isfinite(lam_n)) and np.all(np.isfinite(mu_n))) or max(
                np.max(np.abs(lam_n)), np.max(np.abs(mu_n))) > MAX_RATE:
            raise InputError("n", f"n = {n:g} gives rates beyond {MAX_RATE:g} (overflow)")
        if np.any(lam_n <= 0):
            raise InputError("n", f"n = {n:g} gives a non-positive arrival rate {lam_n.tolist()}")
        if np.any(mu_n <= 0):
            raise InputError("n", f"n = {n:g} gives a non-positive service rate {mu_n.tolist()}")
        return ScaledPSS2x2(self, n, rn, read_only(lam_n), read_only(mu_n), read_only(self.h / rn))

    def rates(self, n: float) -> tuple[np.ndarray, np.ndarray]:
        """Arrival and service rates of the n-th system (:meth:`at`); refuses n where a rate is not positive.

        Args:
            n: The scale n.

        Returns:
            ``(lam_n, mu_n)`` with shapes (2,) and (2, 2) (read-only).

        Raises:
            InputError: As :meth:`at`.
        """
        nth = self.at(n)
        return nth.lam_n, nth.mu_n

    def to_dict(self) -> dict:
        """The configuration as a TOML-shaped dictionary (``from_dict`` inverts it)."""
        return {
            "system": {
                "kind": "pss2x2",
                "lambda": self.lam.tolist(),
                "mu": self.mu.tolist(),
                "lambda_hat": self.lambda_hat.tolist(),
                "mu_hat": self.mu_hat.tolist(),
                "interarrival": [str(d) for d in self.interarrival],
                "service": [[str(d) for d in row] for row in self.service],
            },
            "cost": {"h": self.h.tolist(), "gamma": self.gamma},
        }


@dataclass(frozen=True, eq=False)
class ScaledPSS2x2:
    """The n-th 2x2 system (:meth:`PSS2x2.at`): the system with its n-th rates and cost scale, computed once.

    One value carries a run of the n-th system: the simulators, the exact solves and the control problem take it
    in place of ``(system, n)`` and read the rates off it. Its arrays are read-only.

    Attributes:
        system: The 2x2 system.
        n: The scale n, as given.
        sqrt_n: ``sqrt(n)``.
        lam_n: ``lambda_n = n lambda + sqrt(n) lambda_hat``, shape (2,).
        mu_n: ``mu_n = n mu + sqrt(n) mu_hat``, shape (2, 2).
        h_hat: ``h / sqrt(n)``: the cost of the n-th system is ``h.X / sqrt(n) = h_hat.X``, shape (2,).
    """

    system: PSS2x2
    n: float
    sqrt_n: float
    lam_n: np.ndarray
    mu_n: np.ndarray
    h_hat: np.ndarray

    def at(self, n: float) -> ScaledPSS2x2:
        """The n-th system of the same system: this value when ``n`` is its own, else ``system.at(n)``.

        Args:
            n: The scale n.

        Returns:
            The n-th system.

        Raises:
            InputError: As :meth:`PSS2x2.at`.
        """
        return self if n == self.n else self.system.at(n)


def system_of(system: PSS2x2 | ScaledPSS2x2) -> PSS2x2:
    """The 2x2 system itself: ``system``, or the system of an n-th system (nothing computed).

    Args:
        system: A 2x2 system or an n-th one.

    Returns:
        The system.
    """
    return system.system if isinstance(system, ScaledPSS2x2) else system


def from_dict(data: dict) -> PSS2x2:
    """Validate a TOML-shaped dictionary (sections ``system`` and ``cost``).

    Args:
        data: The TOML-shaped dictionary.

    Returns:
        The system.

    Raises:
        InputError: Naming the offending key: an unknown top-level table, a missing ``cost`` table, a value the schema
            refuses (:func:`~jaxq.model.validate.validate_model`) or a bad distribution
            (:func:`~jaxq.model.distributions.parse`).
    """
    check_tables(data, ("system", "cost"), "a 'pss2x2' system file")
    if "cost" not in data:
        raise InputError("cost", "missing [cost] table")
    f = validate_model(_File, data)
    s = f.system
    inter = tuple(parse(d, f"system.interarrival[{i}]") for i, d in enumerate(s.interarrival))
    serv = tuple(
        tuple(parse(d, f"system.service[{i}][{k}]") for k, d in enumerate(row)) for i, row in enumerate(s.service)
    )
    return PSS2x2(
        lam=np.array(s.lam, dtype=float),
        mu=np.array(s.mu, dtype=float),
        lambda_hat=np.array(s.lambda_hat, dtype=float),
        mu_hat=np.array(s.mu_hat, dtype=float),
        interarrival=inter,
        service=serv,
        h=np.array(f.cost.h, dtype=float),
        gamma=float(f.cost.gamma),
    )


def load(path) -> PSS2x2:
    """Load a ``kind = "pss2x2"`` configuration file.

    Args:
        path (str | pathlib.Path): The file.

    Returns:
        The system.

    Raises:
        InputError: As :func:`~jaxq.model.validate.read_system` and :func:`from_dict`.
    """
    return from_dict(read_system(path, "pss2x2"))

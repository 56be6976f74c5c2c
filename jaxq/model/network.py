"""Many-server parallel server networks (the uniform-stability and LAP-tightness papers): classes i, pools j, activities
(i, j).

Arrays are indexed as in the papers, 0-based: ``lam[i]``, ``mu[i, j]`` (class i row, pool j column),
``nu[j]`` (servers per unit of n in pool j). An activity (i, j) exists where ``mu[i, j] > 0``.

Two scalings of the n-th (or r-th) system:

* ``"halfin-whitt"`` (the uniform-stability paper, (2.2)): ``lambda_n = n lambda + sqrt(n) lambda_hat``,
  ``mu_n = mu + mu_hat / sqrt(n)``, ``N_n = round(n nu + sqrt(n) nu_hat)``; LP (2.3) must be critical.
* ``"underloaded"`` (the LAP-tightness paper): ``lambda_r = r lambda``, ``N_r = round(r beta)`` with ``beta = nu``,
  ``mu`` fixed; the static planning problem must have value rho < 1.

The default ``scaling = "auto"`` picks Halfin-Whitt when the LP value is 1 and underloaded when it is
below 1 (the analysis modules decide; this module only validates shapes and signs). ``network.at(n, scaling)`` is the
n-th system as one value (:class:`ScaledNetwork`), its rates and pool sizes computed once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from jaxq.errors import InputError
from jaxq.model.validate import (MAX_RATE, NonNegative, Positive, Real, check_tables, read_only, read_system,
                                 validate_model)

MAX_SERVERS = 2**31 - 1  # servers of one pool of the n-th system (int32 counters)
MAX_DIMENSION = 64  # classes or pools of a network
Pair = Annotated[list[Annotated[int, Field(ge=1, le=MAX_DIMENSION)]], Field(min_length=2, max_length=2)]
Vec = Annotated[list[Positive], Field(min_length=1, max_length=MAX_DIMENSION)]
RealVec = Annotated[list[Real], Field(min_length=1, max_length=MAX_DIMENSION)]


class _System(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)
    kind: Literal["network"]
    lam: Vec = Field(alias="lambda")
    mu: Annotated[list[Annotated[list[NonNegative], Field(max_length=MAX_DIMENSION)]],
                  Field(min_length=1, max_length=MAX_DIMENSION)]
    pool_size: Vec
    lambda_hat: RealVec | None = None
    mu_hat: Annotated[list[Annotated[list[Real], Field(max_length=MAX_DIMENSION)]],
                      Field(max_length=MAX_DIMENSION)] | None = None
    pool_size_hat: RealVec | None = None
    scaling: Literal["auto", "halfin-whitt", "underloaded"] = "auto"
    lap_order: Annotated[list[Pair], Field(max_length=MAX_DIMENSION**2)] | None = None  # 1-based pairs


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    system: _System


@dataclass(frozen=True, eq=False)
class Network:
    """First- and second-order data of a parallel server network.

    Attributes:
        lam: lambda_i, shape (I,).
        mu: mu_ij, shape (I, J); 0 where pool j cannot serve class i.
        nu: Pool sizes per unit of n (nu_j of the uniform-stability paper, beta_j of the LAP-tightness paper), shape
            (J,).
        lambda_hat: Halfin-Whitt second-order term of lam (zeros when absent).
        mu_hat: Halfin-Whitt second-order term of mu (zeros when absent).
        nu_hat: Halfin-Whitt second-order term of nu (zeros when absent).
        scaling: ``"auto"``, ``"halfin-whitt"`` or ``"underloaded"``.
        lap_order: Optional user-given LAP activity order, 0-based pairs, or None.
    """

    lam: np.ndarray
    mu: np.ndarray
    nu: np.ndarray
    lambda_hat: np.ndarray
    mu_hat: np.ndarray
    nu_hat: np.ndarray
    scaling: str = "auto"
    lap_order: tuple[tuple[int, int], ...] | None = None

    @property
    def num_classes(self) -> int:
        return self.lam.shape[0]

    @property
    def num_pools(self) -> int:
        return self.nu.shape[0]

    @property
    def edges(self) -> np.ndarray:
        """Boolean (I, J) activity graph: True where ``mu[i, j] > 0``."""
        return self.mu > 0

    @property
    def has_second_order(self) -> bool:
        return bool(np.any(self.lambda_hat) or np.any(self.mu_hat) or np.any(self.nu_hat))

    def at(self, n: float, scaling: str = "halfin-whitt") -> ScaledNetwork:
        """The n-th (r-th) system: its arrival rates, service rates and pool sizes (integers), computed once.

        Args:
            n: Scale parameter (n of the uniform-stability paper, r of the LAP-tightness paper), positive.
            scaling: ``"halfin-whitt"`` (2.2) or ``"underloaded"`` (the LAP-tightness paper); any other value is
                Halfin-Whitt.

        Returns:
            The n-th system.

        Raises:
            InputError: Naming ``n`` when n is not positive and finite or gives rates beyond ``MAX_RATE``, pools of more
                than 2^31 - 1 servers, a non-positive rate or an empty pool; ``system.pool_size_hat`` when a pool would
                be negative.
        """
        if not (n > 0 and math.isfinite(n)):
            raise InputError("n", f"must be positive, got {n}")
        rn = math.sqrt(n)
        with np.errstate(over="ignore", invalid="ignore"):
            if scaling == "underloaded":
                lam_n, mu_n, size = n * self.lam, self.mu.copy(), n * self.nu
            else:
                lam_n = n * self.lam + rn * self.lambda_hat
                mu_n = np.where(self.edges, self.mu + self.mu_hat / rn, 0.0)
                size = n * self.nu + rn * self.nu_hat
        if not (np.all(np.isfinite(lam_n)) and np.all(np.isfinite(mu_n))) or max(
                np.max(np.abs(lam_n)), np.max(np.abs(mu_n))) > MAX_RATE:
            raise InputError("n", f"n = {n:g} gives rates beyond {MAX_RATE:g} (overflow)")
        if np.any(size < 0):  # only a negative pool_size_hat can do this (n > 0, pool_size > 0)
            j = int(np.argmin(size))
            raise InputError("system.pool_size_hat", f"pool {j + 1} of the n = {n:g} system would have "
                                                     f"{size[j]:.6g} servers (n pool_size + sqrt(n) pool_size_hat < 0): "
                                                     f"a pool cannot be negative")
        if not np.all(size <= MAX_SERVERS):
            raise InputError("n", f"n = {n:g} gives pools of more than 2^31 - 1 servers {size.tolist()}")
        big_n = np.rint(size).astype(np.int64)
        if np.any(lam_n <= 0):
            raise InputError("n", f"n = {n:g} gives a non-positive arrival rate {lam_n.tolist()}")
        if np.any(mu_n[self.edges] <= 0):
            raise InputError("n", f"n = {n:g} gives a non-positive service rate")
        if np.any(big_n < 1):
            raise InputError("n", f"n = {n:g} gives an empty server pool {big_n.tolist()}")
        return ScaledNetwork(self, n, _effective(scaling), rn, read_only(lam_n), read_only(mu_n), read_only(big_n))

    def rates(self, n: float, scaling: str = "halfin-whitt") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Arrival rates, service rates and pool sizes (integers) of the n-th (r-th) system (:meth:`at`).

        Args:
            n: Scale parameter (n of the uniform-stability paper, r of the LAP-tightness paper), positive.
            scaling: ``"halfin-whitt"`` (2.2) or ``"underloaded"`` (the LAP-tightness paper).

        Returns:
            ``(lam_n, mu_n, N_n)`` with shapes (I,), (I, J), (J,); ``N_n`` is an int array (read-only).

        Raises:
            InputError: As :meth:`at`.
        """
        nth = self.at(n, scaling)
        return nth.lam_n, nth.mu_n, nth.N

    def to_dict(self) -> dict:
        """The configuration as a TOML-shaped dictionary (``from_dict`` inverts it)."""
        s = {
            "kind": "network",
            "lambda": self.lam.tolist(),
            "mu": self.mu.tolist(),
            "pool_size": self.nu.tolist(),
            "lambda_hat": self.lambda_hat.tolist(),
            "mu_hat": self.mu_hat.tolist(),
            "pool_size_hat": self.nu_hat.tolist(),
            "scaling": self.scaling,
        }
        if self.lap_order is not None:
            s["lap_order"] = [[i + 1, j + 1] for i, j in self.lap_order]
        return {"system": s}


def _effective(scaling: str) -> str:
    """The scaling :meth:`Network.at` applies: ``"underloaded"``, or ``"halfin-whitt"`` for any other value."""
    return "underloaded" if scaling == "underloaded" else "halfin-whitt"


@dataclass(frozen=True, eq=False)
class ScaledNetwork:
    """The n-th (r-th) network (:meth:`Network.at`): the network with its n-th rates and pool sizes, computed once.

    One value carries a run of the n-th system: the simulator and the prelimit quantities of the uniform-stability
    paper take it in place of ``(network, n)``. Its arrays are read-only.

    Attributes:
        network: The network.
        n: The scale n (r), as given.
        scaling: ``"halfin-whitt"`` or ``"underloaded"``: the scaling applied.
        sqrt_n: ``sqrt(n)``.
        lam_n: The arrival rates, shape (I,): ``n lambda + sqrt(n) lambda_hat`` (Halfin-Whitt), ``r lambda``
            (underloaded).
        mu_n: The service rates, shape (I, J), 0 off the activity graph: ``mu + mu_hat / sqrt(n)`` (Halfin-Whitt),
            ``mu`` (underloaded).
        N: The servers of each pool, int, shape (J,): ``round(n nu + sqrt(n) nu_hat)`` (Halfin-Whitt),
            ``round(r beta)`` (underloaded).
    """

    network: Network
    n: float
    scaling: str
    sqrt_n: float
    lam_n: np.ndarray
    mu_n: np.ndarray
    N: np.ndarray

    def at(self, n: float, scaling: str = "halfin-whitt") -> ScaledNetwork:
        """The n-th system of the same network: this value when ``n`` and the scaling are its own, else
        ``network.at(n, scaling)``.

        Args:
            n: The scale n.
            scaling: ``"halfin-whitt"`` or ``"underloaded"``.

        Returns:
            The n-th system.

        Raises:
            InputError: As :meth:`Network.at`.
        """
        return self if n == self.n and _effective(scaling) == self.scaling else self.network.at(n, scaling)


def _matrix(rows: list[list[float]], shape: tuple[int, int], key: str) -> np.ndarray:
    if len(rows) != shape[0] or any(len(r) != shape[1] for r in rows):
        raise InputError(key, f"expected a {shape[0]}x{shape[1]} matrix (classes x pools)")
    return np.array(rows, dtype=float).reshape(shape)


def from_dict(data: dict) -> Network:
    """Validate a TOML-shaped dictionary with a ``[system]`` table of ``kind = "network"``.

    Checks shapes, signs, that every class has a pool and every pool a class, that the second-order
    terms vanish off the activity graph, and the user's LAP order (pairs must be activities).

    Args:
        data: The TOML-shaped dictionary.

    Returns:
        The network.

    Raises:
        InputError: Naming the offending key: an unknown top-level table, a value the schema refuses
            (:func:`~jaxq.model.validate.validate_model`), ``system.mu`` (shape, a class without a pool or a pool
            without a class), ``system.lambda_hat``, ``system.pool_size_hat``, ``system.mu_hat`` (shape, nonzero off
            the activity graph), ``system.scaling`` (second-order terms with ``"underloaded"``) or ``system.lap_order``
            (not an activity, an activity twice).
    """
    check_tables(data, ("system",), "a 'network' system file")
    s = validate_model(_File, data).system
    num_i, num_j = len(s.lam), len(s.pool_size)
    lam = np.array(s.lam, dtype=float)
    nu = np.array(s.pool_size, dtype=float)
    mu = _matrix(s.mu, (num_i, num_j), "system.mu")
    edges = mu > 0
    for i in range(num_i):
        if not edges[i].any():
            raise InputError("system.mu", f"class {i + 1} has no pool that can serve it (row {i + 1} is zero)")
    for j in range(num_j):
        if not edges[:, j].any():
            raise InputError("system.mu", f"pool {j + 1} serves no class (column {j + 1} is zero)")
    lambda_hat = np.zeros(num_i) if s.lambda_hat is None else np.array(s.lambda_hat, dtype=float)
    if lambda_hat.shape != (num_i,):
        raise InputError("system.lambda_hat", f"expected {num_i} values, one per class")
    nu_hat = np.zeros(num_j) if s.pool_size_hat is None else np.array(s.pool_size_hat, dtype=float)
    if nu_hat.shape != (num_j,):
        raise InputError("system.pool_size_hat", f"expected {num_j} values, one per pool")
    mu_hat = np.zeros((num_i, num_j)) if s.mu_hat is None else _matrix(s.mu_hat, (num_i, num_j), "system.mu_hat")
    if np.any(mu_hat[~edges] != 0):
        raise InputError("system.mu_hat", "must be 0 where mu is 0 (no activity)")
    if s.scaling == "underloaded" and (np.any(lambda_hat) or np.any(mu_hat) or np.any(nu_hat)):
        raise InputError("system.scaling", "second-order terms (lambda_hat, mu_hat, pool_size_hat) need 'halfin-whitt'")
    order = None
    if s.lap_order is not None:
        order = tuple((i - 1, j - 1) for i, j in s.lap_order)
        for i, j in order:
            if i >= num_i or j >= num_j or not edges[i, j]:
                raise InputError("system.lap_order", f"[{i + 1}, {j + 1}] is not an activity")
        if len(set(order)) != len(order):
            raise InputError("system.lap_order", "an activity appears twice")
    return Network(lam, mu, nu, lambda_hat, mu_hat, nu_hat, s.scaling, order)


def load(path) -> Network:
    """Load a ``kind = "network"`` configuration file.

    Args:
        path (str | pathlib.Path): The file.

    Returns:
        The network.

    Raises:
        InputError: As :func:`~jaxq.model.validate.read_system` and :func:`from_dict`.
    """
    return from_dict(read_system(path, "network"))

"""The elementary functions of the samplers, written out in ``jax.numpy`` (XLA:CPU's float64 ``log`` is a scalar
library call): fdlibm's logarithm (:func:`log`, and :func:`log_pair`: two logarithms with one division), Wichura's
normal quantile (:func:`ndtri`), ``sin`` and ``cos`` of ``2 pi u`` (:func:`sincos2pi`), the Box-Muller pairs of a
slot's normal block or of one block (:func:`box_muller`, :func:`_box_muller32`), and the materialisation of a
Threefry block as one array (:func:`_keep_block`).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
from jax import lax

from jaxq.mc import rng

__all__ = ["box_muller", "log", "log_pair", "ndtri", "sincos2pi"]


_LG = (6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01, 2.222219843214978396e-01,
       1.818357216161805012e-01, 1.531383769920937332e-01, 1.479819860511658591e-01)
_LN2_HI, _LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10
_U32 = jnp.uint32
_U64 = jnp.uint64


def _log_split(x):
    """fdlibm's reduction of a positive normal x: ``(f, dk, mant)`` with ``x = 2^k (1 + f)``, ``1 + f`` in
    [sqrt(2)/2, sqrt(2)), dk = k as a float64 (integer operations only)."""
    b = lax.bitcast_convert_type(jnp.asarray(x, jnp.float64), _U64)
    mant = b & _U64(0x000FFFFFFFFFFFFF)
    i = (mant + _U64(0x95F64 << 32)) & _U64(1 << 52)  # m >= sqrt(2): halve it, k + 1
    m = lax.bitcast_convert_type(mant | (i ^ _U64(0x3FF0000000000000)), jnp.float64)  # in [sqrt(2)/2, sqrt(2))
    e = (b >> _U64(52)) + (i >> _U64(52))  # k + 1023, as a float64 below
    dk = lax.bitcast_convert_type(_U64(0x4330000000000000) | e, jnp.float64) - (4503599627370496.0 + 1023.0)
    return m - 1.0, dk, mant


def _log_finish(f, dk, mant, s):
    """fdlibm's log from the reduction and ``s = f / (2 + f)``."""
    z = s * s
    w = z * z
    R = z * (_LG[0] + w * (_LG[2] + w * (_LG[4] + w * _LG[6]))) + w * (_LG[1] + w * (_LG[3] + w * _LG[5]))
    hx = mant >> _U64(32)
    hfsq = 0.5 * f * f
    big = (hx >= _U64(0x6147A)) & (hx <= _U64(0x6B851))
    a = dk * _LN2_HI - ((hfsq - (s * (hfsq + R) + dk * _LN2_LO)) - f)
    c = dk * _LN2_HI - ((s * (f - R) - dk * _LN2_LO) - f)
    return jnp.where(big, a, c)


def log(x):
    """Natural logarithm of a positive normal float64 (fdlibm's ``__ieee754_log``: error below 1 ulp).

    Written out in ``jax.numpy`` because XLA:CPU's float64 ``log`` is a scalar library call: in a vmapped
    scan at 10^3 replications it costs 8 ns an element against 1.9 ns for this one (the exponent and
    mantissa split with integer operations, ``s = f / (2 + f)`` and a degree-14 polynomial in s, no
    branch). Only positive normal numbers reach it here (uniforms on the midpoint grid, their products,
    ``1 + cZ > 0``); zero, negative, subnormal, infinite or NaN inputs give meaningless results.

    Args:
        x (jax.Array): Positive normal float64 numbers.

    Returns:
        (jax.Array): ``log x``.
    """
    f, dk, mant = _log_split(x)
    return _log_finish(f, dk, mant, f / (2.0 + f))


def log_pair(x, y):
    """``(log x, log y)`` as :func:`log`, with ONE division for both: ``q = 1/((2 + f_x)(2 + f_y))``,
    ``s_x = f_x (2 + f_y) q`` and ``s_y = f_y (2 + f_x) q``.

    Two effects on XLA:CPU, both measured in the event engine: a division is one instruction fewer, and the
    division's only user is a multiplication, so XLA fuses it into the consumer (``f / (2 + f)`` has three
    users, and XLA then computes it in a loop of its own and recomputes its inputs in the consumer). s gets
    two more roundings (relative error below 4 ulp instead of 1/2); s enters the result only through
    ``s (hfsq + R)`` with ``|s| <= 0.172`` and ``hfsq + R <= 0.09``, so the result stays within 1 ulp
    (tested against numpy beside :func:`log`).

    Args:
        x (jax.Array): Positive normal float64 numbers.
        y (jax.Array): Positive normal float64 numbers.

    Returns:
        (tuple[jax.Array, jax.Array]): ``(log x, log y)``.
    """
    fx, kx, mx = _log_split(x)
    fy, ky, my = _log_split(y)
    px, py = 2.0 + fx, 2.0 + fy
    q = 1.0 / (px * py)
    return _log_finish(fx, kx, mx, fx * py * q), _log_finish(fy, ky, my, fy * px * q)


def _identity(x):
    return x


# Wichura (1988), algorithm AS241 (PPND16): the standard normal quantile, relative error about 1e-16.
_A = (3.3871328727963666080e0, 1.3314166789178437745e2, 1.9715909503065514427e3, 1.3731693765509461125e4,
      4.5921953931549871457e4, 6.7265770927008700853e4, 3.3430575583588128105e4, 2.5090809287301226727e3)
_B = (1.0, 4.2313330701600911252e1, 6.8718700749205790830e2, 5.3941960214247511077e3,
      2.1213794301586595867e4, 3.9307895800092710610e4, 2.8729085735721942674e4, 5.2264952788528545610e3)
_C = (1.42343711074968357734e0, 4.63033784615654529590e0, 5.76949722146069140550e0, 3.64784832476320460504e0,
      1.27045825245236838258e0, 2.41780725177450611770e-1, 2.27238449892691845833e-2, 7.74545014278341407640e-4)
_D = (1.0, 2.05319162663775882187e0, 1.67638483018380384940e0, 6.89767334985100004550e-1,
      1.48103976427480074590e-1, 1.51986665636164571966e-2, 5.47593808499534494600e-4, 1.05075007164441684324e-9)
_E = (6.65790464350110377720e0, 5.46378491116411436990e0, 1.78482653991729133580e0, 2.96560571828504891230e-1,
      2.65321895265761230930e-2, 1.24266094738807843860e-3, 2.71155556874348757815e-5, 2.01033439929228813265e-7)
_F = (1.0, 5.99832206555887937690e-1, 1.36929880922735805310e-1, 1.48753612908506148525e-2,
      7.86869131145613259100e-4, 1.84631831751005468180e-5, 1.42151175831644588870e-7, 2.04426310338993978564e-15)


def _poly(c, x):
    y = c[-1]
    for k in c[-2::-1]:
        y = y * x + k
    return y


def ndtri(p, far: bool = True):
    """Standard normal quantile of ``p`` in (0, 1) (AS241).

    Args:
        p (jax.Array): Probabilities in (0, 1), float64.
        far: Keep the branch for ``min(p, 1-p) < exp(-25)``; False drops it (one-word uniforms, ``p >= 2^-33``,
            never reach it).

    Returns:
        (jax.Array): The quantiles.
    """
    q = p - 0.5
    central = jnp.abs(q) <= 0.425
    r2 = 0.180625 - q * q
    t = jnp.where(q < 0.0, p, 1.0 - p)  # min(p, 1 - p), exactly (1 - p is exact for p >= 1/2)
    r = jnp.sqrt(-log(jnp.where(central, 0.5, t)))
    rm = r - 1.6
    num = jnp.where(central, q * _poly(_A, r2), jnp.sign(q) * _poly(_C, rm))
    den = jnp.where(central, _poly(_B, r2), _poly(_D, rm))
    if far:
        rf = r - 5.0
        use_far = ~central & (r > 5.0)
        num = jnp.where(use_far, jnp.sign(q) * _poly(_E, rf), num)
        den = jnp.where(use_far, _poly(_F, rf), den)
    return num / den


# fdlibm's __kernel_sin / __kernel_cos minimax polynomials on [-pi/4, pi/4]
_SIN = (-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
      2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10)
_COS = (4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
      -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11)


def sincos2pi(u):
    """``(sin 2 pi u, cos 2 pi u)`` for a uniform ``u`` of :func:`jaxq.mc.rng.uniform` (a multiple of 2^-33).

    ``u = n/4 + y`` with ``n = round(4u)`` and ``|y| <= 1/8`` exactly (u has 33 significant bits), then
    fdlibm's kernels at ``a = 2 pi y`` and the quadrant's symmetry: within about 1 ulp, no library call.

    Args:
        u (jax.Array): The uniforms.

    Returns:
        (tuple[jax.Array, jax.Array]): ``(sin 2 pi u, cos 2 pi u)``.
    """
    n = jnp.round(4.0 * u)
    a = (u - 0.25 * n) * (2.0 * math.pi)
    z = a * a
    s = a + a * z * (_SIN[0] + z * (_SIN[1] + z * (_SIN[2] + z * (_SIN[3] + z * (_SIN[4] + z * _SIN[5])))))
    c = 1.0 - 0.5 * z + z * z * (_COS[0] + z * (_COS[1] + z * (_COS[2] + z * (_COS[3] + z * (_COS[4] + z * _COS[5])))))
    q = n.astype(jnp.int32) & 3
    sin = jnp.where(q == 0, s, jnp.where(q == 1, c, jnp.where(q == 2, -s, -c)))
    cos = jnp.where(q == 0, c, jnp.where(q == 1, -s, jnp.where(q == 2, -c, s)))
    return sin, cos


def box_muller(wa, wb, keep=_identity):
    """Two independent standard normals from a 52-bit uniform (words ``wa``) and an angle (word ``wb``).

    ``R = sqrt(-2 log U_1)``, ``(R cos 2 pi U_2, R sin 2 pi U_2)``: one logarithm, one square root and two
    short polynomials for two normals (a normal quantile costs two logarithms' worth and rational functions of
    degree 7 in three regions). U_1 has 52 random bits, so ``R <= 8.57``: the normal tail beyond it has mass
    below 2^-53 (more resolution than :func:`ndtri` of a 52-bit uniform, |Z| <= 8.2).

    Args:
        wa (Sequence[jax.Array]): The two uint32 words of the 52-bit uniform U_1.
        wb (jax.Array): The uint32 word of the angle's uniform U_2.
        keep (Callable): Materialises the uniforms (the identity by default).

    Returns:
        (tuple[jax.Array, jax.Array]): ``(R cos 2 pi U_2, R sin 2 pi U_2)``.
    """
    r = jnp.sqrt(-2.0 * log(keep(rng.uniform52(wa[0], wa[1]))))
    s, c = sincos2pi(keep(rng.uniform(wb)))
    return r * c, r * s


def _keep_block(w0, w1, keep):
    """A Threefry block's two words, materialised as ONE array (a uint64 divided by an opaque 1) when ``keep``
    materialises: every consumer then reads the block instead of recomputing it (XLA:CPU makes one loop per
    array, and a float materialisation of each word would compute the block in both loops)."""
    if keep is _identity:
        return w0, w1
    one = jnp.where(keep(jnp.ones((), jnp.float64)) > 0.0, _U64(1), _U64(3))  # 1, opaque to the compiler
    p = ((jnp.asarray(w0, _U32).astype(_U64) << _U64(32)) | jnp.asarray(w1, _U32).astype(_U64)) // one
    return (p >> _U64(32)).astype(_U32), p.astype(_U32)


def _box_muller32(w0, w1, keep):
    """The Box-Muller pair of one block: ``R = sqrt(-2 log U)`` from word ``w0``, the angle from ``w1`` (one-word
    uniforms: ``R <= 6.76``), the block materialised once (:func:`_keep_block`): ``(R cos, R sin)``."""
    wr, wt = _keep_block(w0, w1, keep)
    fr, kr, mr = _log_split(rng.uniform(wr))
    rad = jnp.sqrt(-2.0 * _log_finish(fr, kr, mr, fr * (1.0 / (2.0 + fr))))  # the division's one user: fused
    sn, cs = sincos2pi(rng.uniform(wt))
    return rad * cs, rad * sn

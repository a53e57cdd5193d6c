"""Math functions for the generated elementwise kernels, written from ``tl.exp``, ``tl.log``,
``tl.sqrt``, ``tl.sin``, ``tl.cos``, ``tl.erf``, ``tl.floor`` and ``tl.where`` alone: Triton's
interpreter has no libdevice, and the same source must run there and compile for the GPU.

Each helper works in the type of its arguments (float32, or float64 for float64 tensors) to that
type's accuracy over its whole range, with numpy's answers for 0, -0.0, inf and nan:

- log1p and expm1 take their series near 0, where ``1 + x`` or ``exp(x) - 1`` would cancel;
  the other logarithms, hyperbolic and inverse hyperbolic functions are written with them.
- atan reduces its argument to ``[0, 1]`` (``pi/2 - atan(1/x)``), halves the angle twice
  (``tan(a/2) = t / (1 + sqrt(1 + t^2))``) and sums the series; atan2, asin and acos are atan2 of
  ratios that do not overflow, with the quadrant from the operands' sign bits.
- floor division and the floor remainder follow numpy's ``npy_divmod`` from an exact ``fmod``
  (in float64): ``|a|`` reduced by ``|b| 2^k`` with one fma, about 52 bits of the quotient a
  round, so ``a mod b`` is exact even where ``a / b`` is far beyond ``2**53``.
- a tensor to a tensor power is ``exp(p log|v|)`` in float64, with C's signs and special cases.

Float32 results are within 3.5 ulp of the exact values in the interpreter (whose ``tl.exp`` and
``tl.log`` are numpy's); on the GPU, where float32 ``tl.exp``/``tl.log`` may be approximate
instructions, no helper takes ``tl.log`` near 1 or ``tl.exp(x) - 1`` near 0, where those would
lose the digits.

An expression of ``oar_triton.kernels.lowerings`` calls them by name (``elementwise.HELPERS``).
"""

from __future__ import annotations

import triton
import triton.language as tl

PI = tl.constexpr(3.141592653589793)  # constexpr: a kernel reads no other globals
HALF_PI = tl.constexpr(1.5707963267948966)
LN2 = tl.constexpr(0.6931471805599453)


@triton.jit
def _signbit(v):
    # the sign bit itself: set for -0.0 and a negative nan, which comparisons cannot see
    if v.dtype == tl.float64:
        bit = v.to(tl.int64, bitcast=True) < 0
    else:
        bit = v.to(tl.float32).to(tl.int32, bitcast=True) < 0
    return bit


@triton.jit
def _with_sign_of(r, x):
    return tl.where(_signbit(x), -r, r)


@triton.jit
def _log1p(x):
    # log(1 + x) = 2 atanh(s), s = x / (2 + x): the series where |x| < 1/4 (s^2 <= 0.0205, ten
    # terms reach float64's precision), where 1 + x would drop the low bits of x
    s = x / (2.0 + x)
    s2 = s * s
    p = 1.0 / 21.0
    p = p * s2 + 1.0 / 19.0
    p = p * s2 + 1.0 / 17.0
    p = p * s2 + 1.0 / 15.0
    p = p * s2 + 1.0 / 13.0
    p = p * s2 + 1.0 / 11.0
    p = p * s2 + 1.0 / 9.0
    p = p * s2 + 1.0 / 7.0
    p = p * s2 + 1.0 / 5.0
    p = p * s2 + 1.0 / 3.0
    p = p * s2 + 1.0
    return tl.where(tl.abs(x) < 0.25, 2.0 * s * p, tl.log(1.0 + x))


@triton.jit
def _log(x):
    # log(x) through log1p near 1 (x - 1 is exact there), where an approximate log loses digits
    return tl.where(tl.abs(x - 1.0) < 0.25, _log1p(x - 1.0), tl.log(x))


@triton.jit
def _expm1(x):
    # exp(x) - 1: the Taylor series where |x| < 0.35 (to x^14 / 14!), where the difference cancels
    p = 1.0 + x / 14.0
    p = 1.0 + x / 13.0 * p
    p = 1.0 + x / 12.0 * p
    p = 1.0 + x / 11.0 * p
    p = 1.0 + x / 10.0 * p
    p = 1.0 + x / 9.0 * p
    p = 1.0 + x / 8.0 * p
    p = 1.0 + x / 7.0 * p
    p = 1.0 + x / 6.0 * p
    p = 1.0 + x / 5.0 * p
    p = 1.0 + x / 4.0 * p
    p = 1.0 + x / 3.0 * p
    p = 1.0 + x / 2.0 * p
    return tl.where(tl.abs(x) < 0.35, x * p, tl.exp(x) - 1.0)


@triton.jit
def _half_exp_squared(a):
    # exp(a) / 2 for large a without overflowing before the result does: (exp(a/2) / 2) * exp(a/2)
    h = tl.exp(0.5 * a)
    return (0.5 * h) * h


@triton.jit
def _sinh(x):
    a = tl.abs(x)
    e = _expm1(a)
    near = 0.5 * (e + e / (e + 1.0))  # (e^a - e^-a) / 2 without the cancellation near 0
    return _with_sign_of(tl.where(a > 20.0, _half_exp_squared(a), near), x)


@triton.jit
def _cosh(x):
    a = tl.abs(x)
    e = tl.exp(a)
    return tl.where(a > 20.0, _half_exp_squared(a), 0.5 * (e + 1.0 / e))


@triton.jit
def _asinh(x):
    a = tl.abs(x)
    a2 = a * a
    near = _log1p(a + a2 / (1.0 + tl.sqrt(1.0 + a2)))
    far = tl.log(a) + LN2  # sqrt(1 + a^2) is a beyond 2^28, and a^2 would overflow
    return _with_sign_of(tl.where(a > 268435456.0, far, near), x)


@triton.jit
def _acosh(x):
    t = x - 1.0
    near = _log1p(t + tl.sqrt(t * (t + 2.0)))
    r = tl.where(x > 268435456.0, tl.log(x) + LN2, near)
    return tl.where(x < 1.0, float("nan"), r)


@triton.jit
def _atanh(x):
    a = tl.abs(x)
    return _with_sign_of(0.5 * _log1p(2.0 * a / (1.0 - a)), x)


@triton.jit
def _atan_unit(t):
    # atan(t) for 0 <= t <= 1: two angle halvings bring t to tan(pi/16) ~ 0.199 (t^2 < 0.04), where
    # twelve terms of the series reach float64's precision
    u = t / (1.0 + tl.sqrt(1.0 + t * t))
    u = u / (1.0 + tl.sqrt(1.0 + u * u))
    u2 = u * u
    p = -1.0 / 23.0
    p = p * u2 + 1.0 / 21.0
    p = p * u2 - 1.0 / 19.0
    p = p * u2 + 1.0 / 17.0
    p = p * u2 - 1.0 / 15.0
    p = p * u2 + 1.0 / 13.0
    p = p * u2 - 1.0 / 11.0
    p = p * u2 + 1.0 / 9.0
    p = p * u2 - 1.0 / 7.0
    p = p * u2 + 1.0 / 5.0
    p = p * u2 - 1.0 / 3.0
    p = p * u2 + 1.0
    return 4.0 * u * p


@triton.jit
def _atan(x):
    a = tl.abs(x)
    r = tl.where(a > 1.0, HALF_PI - _atan_unit(1.0 / a), _atan_unit(a))
    return _with_sign_of(r, x)


@triton.jit
def _atan2(y, x):
    # the angle of (x, y) as numpy's arctan2(y, x): atan of the smaller magnitude over the larger,
    # then the octant and the quadrant (x's sign bit: -0.0 gives pi), and y's sign
    ay = tl.abs(y)
    ax = tl.abs(x)
    steep = ay > ax
    big = tl.where(steep, ay, ax)
    small = tl.where(steep, ax, ay)
    t = small / big
    t = tl.where((ax == float("inf")) & (ay == float("inf")), 1.0, t)
    t = tl.where(big == 0.0, small, t)  # 0 for two zeros, nan beside a nan
    r = _atan_unit(t)
    r = tl.where(steep, HALF_PI - r, r)
    r = tl.where(_signbit(x), PI - r, r)
    return _with_sign_of(r, y)


@triton.jit
def _asin(x):
    return _atan2(x, tl.sqrt((1.0 - x) * (1.0 + x)))


@triton.jit
def _acos(x):
    return 2.0 * _atan2(tl.sqrt(1.0 - x), tl.sqrt(1.0 + x))


@triton.jit
def _trunc(v):
    return tl.where(v < 0, tl.ceil(v), tl.floor(v))


@triton.jit
def _round_half_even(v):
    r = tl.floor(v)
    d = v - r  # exact
    odd = tl.floor(r * 0.5) * 2.0 != r
    out = tl.where((d > 0.5) | ((d == 0.5) & odd), r + 1.0, r)
    return tl.where(out == 0.0, v * 0.0, out)  # -0.4 rounds to -0.0, as numpy's


@triton.jit
def _round(v, decimals, scale):
    # numpy's round: to even at decimals=0, else v * 10^d rounded, over 10^d (divided, then multiplied,
    # for d < 0); scale is 10^|d|
    return tl.where(decimals >= 0, _round_half_even(v * scale) / scale, _round_half_even(v / scale) * scale)


@triton.jit
def _round_int(v, decimals, scale):
    # numpy keeps an integer for decimals >= 0 and rounds it to a multiple of scale = 10^-decimals,
    # half to even, below: the floor quotient and remainder (C's division truncates), then up by one
    # where the remainder passes half of scale, or is half of it and the quotient is odd
    q = v // scale
    r = v % scale
    below = r < 0
    q = tl.where(below, q - 1, q)
    r = tl.where(below, r + scale, r)
    up = (r > scale - r) | ((r == scale - r) & (q % 2 != 0))
    return tl.where(decimals >= 0, v, (q + up.to(q.dtype)) * scale)


@triton.jit
def _floor_divide_int(a, b):
    # C's division truncates: one less where the remainder and b differ in sign. x // 0 is 0, as
    # numpy's (the cpu raises; a kernel cannot)
    safe = tl.where(b == 0, 1, b)
    q = a // safe
    r = a % safe
    q = tl.where((r != 0) & ((r < 0) != (safe < 0)), q - 1, q)
    return tl.where(b == 0, 0, q)


@triton.jit
def _remainder_int(a, b):
    # the remainder with b's sign; x % 0 is 0, as numpy's (the cpu raises; a kernel cannot)
    safe = tl.where(b == 0, 1, b)
    r = a % safe
    r = tl.where((r != 0) & ((r < 0) != (safe < 0)), r + safe, r)
    return tl.where(b == 0, 0, r)


@triton.jit
def _power_int(v, p):
    # v ** p by squaring, one bit of p a round (as many rounds as the largest p has bits), wrapping
    # as numpy's; a negative p (the cpu raises) gives C's truncated 1 / v^|p|: +-1 for v = +-1, else 0
    r = v * 0 + 1
    base = v
    e = tl.where(p < 0, 0, p)
    while tl.max(e, axis=0) > 0:
        r = tl.where((e & 1) != 0, r * base, r)
        base = base * base
        e = e >> 1
    odd = (p % 2) != 0
    inverse = tl.where(v == 1, 1, tl.where((v + 1 == 0) & odd, v, tl.where(v + 1 == 0, 1, 0)))
    return tl.where(p < 0, inverse, r)


@triton.jit
def _pow2(k):
    # 2^k for an int64 k in [0, 1023], built from its exponent bits (exact, unlike an approximate exp2)
    return ((k + 1023) << 52).to(tl.float64, bitcast=True)


@triton.jit
def _fmod(a, b):
    # C's fmod(a, b), exact, in float64: |a| is reduced by |b| 2^k, with k such that each quotient q
    # stays below 2^53, and r - q |b| 2^k is one fma; each round takes about 52 bits off the exponent
    # gap (one round unless a / b > 2^52)
    r = tl.abs(a.to(tl.float64))
    d = tl.abs(b.to(tl.float64))
    # divisors beyond 2^900 are scaled by 2^-600 (exactly), so that |b| 2^k cannot overflow
    scale = tl.where(d > 8.452712498170644e270, 2.409919865102884e-181, 1.0)
    r = r * scale
    d = d * scale
    # a subnormal divisor's exponent, read from it times 2^54
    subnormal = d < 2.2250738585072014e-308
    dn = tl.where(subnormal, d * 18014398509481984.0, d)
    ed = ((dn.to(tl.int64, bitcast=True) >> 52) & 2047) - tl.where(subnormal, 54, 0)
    go = r >= d
    while tl.max(go.to(tl.int32), axis=0) > 0:
        er = (r.to(tl.int64, bitcast=True) >> 52) & 2047
        k = tl.maximum(er - ed - 52, 0)
        half = k // 2
        dk = d * _pow2(tl.minimum(half, 1023)) * _pow2(tl.minimum(k - half, 1023))
        q = tl.floor(r / dk)  # never too small (rounding is monotonic), at most one too large
        # exact: the remainder is representable, and an fma rounds once (never a separate
        # product and difference, which the GPU compiler could contract differently)
        step = tl.fma(-q, dk, r)
        step = tl.where(step < 0, step + dk, step)
        r = tl.where(go, step, r)
        go = r >= d
    r = r / scale
    r = tl.where((tl.abs(a) == float("inf")) | (b == 0.0) | (b != b), float("nan"), r)
    return _with_sign_of(r.to(a.dtype), a)


@triton.jit
def _floor_divide(a, b):
    # numpy's npy_divmod in a's type from the exact fmod: (a - mod) / b, one less where mod and b
    # differ in sign, then snapped to the nearest integer; a / b where b == 0
    mod = _fmod(a, b)
    div = (a - mod) / b
    div = tl.where((mod != 0.0) & ((b < 0) != (mod < 0)), div - 1.0, div)
    floor = tl.floor(div)
    floor = tl.where(div - floor > 0.5, floor + 1.0, floor)
    ratio = a / b
    floor = tl.where(div == 0.0, tl.where(_signbit(ratio), -0.0, 0.0), floor)
    return tl.where(b == 0.0, ratio, floor)


@triton.jit
def _remainder(a, b):
    # numpy's: the fmod, plus b where their signs differ, a zero with b's sign; fmod(a, 0) is nan
    mod = _fmod(a, b)
    mod = tl.where((mod != 0.0) & ((b < 0) != (mod < 0)), mod + b, mod)
    return tl.where(mod == 0.0, tl.where(_signbit(b), -0.0, 0.0), mod)


@triton.jit
def _power(v, p):
    # v ** p for tensors of both, C's pow: |v| ** p by exp and log, negative for a negative v (or
    # -0.0, -inf) and an odd integral p, nan for a negative v and a fractional p; 1 for p == 0 and
    # for v == 1, and for v == -1 and an infinite p. exp and log in float64: exp's relative error
    # grows with p log|v|, which reaches 88 in float32
    a = tl.exp(p.to(tl.float64) * tl.log(tl.abs(v.to(tl.float64)))).to(v.dtype)
    integral = tl.floor(p) == p
    odd = integral & (tl.floor(p * 0.5) * 2.0 != p)
    r = tl.where(odd & _signbit(v), -a, a)
    r = tl.where((v < 0) & (v > float("-inf")) & (~integral), float("nan"), r)
    one = (p == 0.0) | (v == 1.0) | ((v == -1.0) & (tl.abs(p) == float("inf")))
    return tl.where(one, 1.0, r)


@triton.jit
def _hypot(x, y):
    ax = tl.abs(x)
    ay = tl.abs(y)
    big = tl.where(ax > ay, ax, ay)
    small = tl.where(ax > ay, ay, ax)
    t = small / big
    r = big * tl.sqrt(1.0 + t * t)  # no square overflows
    r = tl.where(big == 0.0, 0.0, r)
    r = tl.where((ax != ax) | (ay != ay), float("nan"), r)
    return tl.where((ax == float("inf")) | (ay == float("inf")), float("inf"), r)  # even beside a nan


@triton.jit
def _logaddexp(x, y):
    # numpy's: x + log(2) for equal arguments (infinities too), nan where x - y is
    d = x - y
    r = tl.where(d > 0, x + _log1p(tl.exp(-d)), y + _log1p(tl.exp(d)))
    r = tl.where(d != d, d, r)
    return tl.where(x == y, x + LN2, r)


@triton.jit
def _clamp(v, low, high):
    return tl.where(v < low, low, tl.where(v > high, high, v))  # nan stays nan, as np.clip's


@triton.jit
def _gelu_tanh_grad(x, g, t):
    # t = tanh(k (x + c x^3)): d/dx 0.5 x (1 + t) = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)
    du = 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * x * x)
    return g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du)


@triton.jit
def _gelu_erf_grad(x, g):
    cdf = 0.5 * (1.0 + tl.erf(x * 0.7071067811865476))
    pdf = 0.3989422804014327 * tl.exp(-0.5 * x * x)
    return g * (cdf + x * pdf)


# The names an elementwise expression may call (oar_triton.kernels.elementwise.HELPERS).
HELPERS = {fn.fn.__name__: fn for fn in (
    _signbit, _log1p, _log, _expm1, _sinh, _cosh, _asinh, _acosh, _atanh, _atan, _atan2, _asin, _acos, _trunc, _round,
    _round_int, _floor_divide, _floor_divide_int, _remainder, _remainder_int, _power, _power_int, _hypot, _logaddexp,
    _clamp, _gelu_tanh_grad, _gelu_erf_grad)}

__all__ = ["HELPERS"]

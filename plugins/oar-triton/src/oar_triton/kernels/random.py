"""Random kernels: ``uniform``, ``gaussian``, ``randint`` and ``bernoulli`` drawn on the device with
Triton's counter-based Philox generator.

A launch is keyed by one 64-bit Philox key; element blocks are its counters. Each Philox call
(``tl.randint4x``) gives four 32-bit words: four float32 values (24 bits each: ``u = (w >> 8) /
2**24``, exactly in ``[0, 1)``), or two float64 values or 64-bit integers (two words each, numpy's
53-bit construction). A program stores them as four (or two) contiguous sub-blocks, so every store
is coalesced. ``gaussian`` is Box-Muller on pairs of uniforms (both the cosine and the sine
branch are used); ``randint`` takes a 64-bit word modulo ``high - low`` (the bias, at most
``(high - low) / 2**64``, is far below what any test sees); ``bernoulli`` compares a uniform with
the probability in its float width.

Keys: an op's nonzero ``seed`` attribute is the key (the same numbers on every call, as on the
cpu). Otherwise each call draws its key from oar's global generator (``oar.ops.default_generator()``),
so ``oar.seed(n)`` and ``oar.set_rng_state`` make gpu draws reproducible and successive calls
differ. The numbers are not numpy's: the cpu and the gpu draw different streams from one seed.

``uniform`` keeps its values below ``max`` after rounding to the output dtype, as the reference
does. ``bernoulli`` refuses probabilities outside ``[0, 1]`` (or NaN) with the reference's
``ArgumentError``: the kernel records one in a device flag read back after the launch (a small
copy that waits for the kernel). ``randint`` refuses ranges of ``2**63`` or more.
"""

from __future__ import annotations

import numpy as np
import triton
import triton.language as tl
from oar_triton.backend import BACKEND, contiguous, empty
from oar_triton.launch import launch

from oar.errors import ArgumentError
from oar.ops import default_generator, get_dtype

BLOCK = 1024  # Philox calls per program: 4096 float32 values, 2048 float64 ones


def _key(seed: int = 0) -> int:
    """The Philox key of one launch: the op's own seed, else a draw from oar's global generator."""
    if seed:
        return int(seed) % 2**63
    return int(default_generator().integers(1, 2**63 - 1))


@triton.jit
def _u24(w):
    # a 32-bit word as a float32 in [0, 1): its top 24 bits, exactly representable
    return (w >> 8).to(tl.float32) * (1.0 / 16777216.0)


@triton.jit
def _u53(a, b):
    # two 32-bit words as a float64 in [0, 1): 27 + 26 bits, numpy's construction
    hi = (a >> 5).to(tl.uint64)
    lo = (b >> 6).to(tl.uint64)
    return ((hi << 26) | lo).to(tl.float64) * (1.0 / 9007199254740992.0)


@triton.jit
def _scaled_uniform(u, lo, span, top, below, out, offs, n):
    # min + (max - min) u in the compute type, kept below max once rounded to the output dtype
    v = (tl.cast(lo, u.dtype) + tl.cast(span, u.dtype) * u).to(out.dtype.element_ty).to(u.dtype)
    v = tl.where(v >= tl.cast(top, u.dtype), tl.cast(below, u.dtype), v)
    tl.store(out + offs, v.to(out.dtype.element_ty), mask=offs < n)


@triton.jit
def _uniform_kernel(out, n, seed: tl.int64, lo: tl.float64, span: tl.float64, top: tl.float64, below: tl.float64,
                    BLOCK: tl.constexpr, WIDE: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    w0, w1, w2, w3 = tl.randint4x(seed, pid * BLOCK + tl.arange(0, BLOCK))
    if WIDE:
        offs = pid * (2 * BLOCK) + tl.arange(0, BLOCK)
        _scaled_uniform(_u53(w0, w1), lo, span, top, below, out, offs, n)
        _scaled_uniform(_u53(w2, w3), lo, span, top, below, out, offs + BLOCK, n)
    else:
        offs = pid * (4 * BLOCK) + tl.arange(0, BLOCK)
        _scaled_uniform(_u24(w0), lo, span, top, below, out, offs, n)
        _scaled_uniform(_u24(w1), lo, span, top, below, out, offs + BLOCK, n)
        _scaled_uniform(_u24(w2), lo, span, top, below, out, offs + 2 * BLOCK, n)
        _scaled_uniform(_u24(w3), lo, span, top, below, out, offs + 3 * BLOCK, n)


@triton.jit
def _store_normal_pair(u1, u2, mean, std, out, offs, second, n):
    # Box-Muller: u1 in (0, 1] so the log is finite; the cosine and the sine branch both used
    radius = tl.sqrt(-2.0 * tl.log(u1))
    angle = 6.283185307179586 * u2
    m, s = tl.cast(mean, u1.dtype), tl.cast(std, u1.dtype)
    tl.store(out + offs, (radius * tl.cos(angle) * s + m).to(out.dtype.element_ty), mask=offs < n)
    tl.store(out + second, (radius * tl.sin(angle) * s + m).to(out.dtype.element_ty), mask=second < n)


@triton.jit
def _gaussian_kernel(out, n, seed: tl.int64, mean: tl.float64, std: tl.float64,
                     BLOCK: tl.constexpr, WIDE: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    w0, w1, w2, w3 = tl.randint4x(seed, pid * BLOCK + tl.arange(0, BLOCK))
    if WIDE:
        offs = pid * (2 * BLOCK) + tl.arange(0, BLOCK)
        _store_normal_pair(1.0 - _u53(w0, w1), _u53(w2, w3), mean, std, out, offs, offs + BLOCK, n)
    else:
        offs = pid * (4 * BLOCK) + tl.arange(0, BLOCK)
        _store_normal_pair(1.0 - _u24(w0), _u24(w1), mean, std, out, offs, offs + BLOCK, n)
        _store_normal_pair(1.0 - _u24(w2), _u24(w3), mean, std, out, offs + 2 * BLOCK, offs + 3 * BLOCK, n)


@triton.jit
def _randint_kernel(out, n, seed: tl.int64, low: tl.int64, span: tl.int64, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    w0, w1, w2, w3 = tl.randint4x(seed, pid * BLOCK + tl.arange(0, BLOCK))
    offs = pid * (2 * BLOCK) + tl.arange(0, BLOCK)
    width = tl.cast(span, tl.uint64)
    first = ((w0.to(tl.uint64) << 32) | w1.to(tl.uint64)) % width
    second = ((w2.to(tl.uint64) << 32) | w3.to(tl.uint64)) % width
    tl.store(out + offs, (first.to(tl.int64) + low).to(out.dtype.element_ty), mask=offs < n)
    tl.store(out + offs + BLOCK, (second.to(tl.int64) + low).to(out.dtype.element_ty), mask=offs + BLOCK < n)


@triton.jit
def _draw_bernoulli(x, out, flag, offs, n, u, p, USE_P: tl.constexpr):
    mask = offs < n
    if USE_P:
        prob = tl.cast(p, u.dtype)
    else:
        prob = tl.load(x + offs, mask=mask, other=0).to(u.dtype)
        bad = mask & ((prob < 0) | (prob > 1) | (prob != prob))
        tl.store(flag + offs * 0, 1, mask=bad)
    tl.store(out + offs, (u < prob).to(out.dtype.element_ty), mask=mask)


@triton.jit
def _bernoulli_kernel(x, out, flag, n, p: tl.float64, seed: tl.int64, BLOCK: tl.constexpr, WIDE: tl.constexpr,
                      USE_P: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    w0, w1, w2, w3 = tl.randint4x(seed, pid * BLOCK + tl.arange(0, BLOCK))
    if WIDE:
        offs = pid * (2 * BLOCK) + tl.arange(0, BLOCK)
        _draw_bernoulli(x, out, flag, offs, n, _u53(w0, w1), p, USE_P)
        _draw_bernoulli(x, out, flag, offs + BLOCK, n, _u53(w2, w3), p, USE_P)
    else:
        offs = pid * (4 * BLOCK) + tl.arange(0, BLOCK)
        _draw_bernoulli(x, out, flag, offs, n, _u24(w0), p, USE_P)
        _draw_bernoulli(x, out, flag, offs + BLOCK, n, _u24(w1), p, USE_P)
        _draw_bernoulli(x, out, flag, offs + 2 * BLOCK, n, _u24(w2), p, USE_P)
        _draw_bernoulli(x, out, flag, offs + 3 * BLOCK, n, _u24(w3), p, USE_P)


def _programs(n: int, per_call: int) -> tuple[int]:
    return (triton.cdiv(n, per_call * BLOCK),)


def uniform(*, shape, dtype, min, max, seed, place=None):
    np_dtype = get_dtype(dtype).np
    out = empty(shape, np_dtype)
    if out.size:
        wide = np_dtype == np.float64
        top = float(np.asarray(max).astype(np_dtype))
        # the largest value below max in the output dtype; min itself when the interval is empty
        below = float(np.nextafter(np.asarray(top, np_dtype), np.asarray(-np.inf, np_dtype))) if max > min else top
        launch(_uniform_kernel, _programs(out.size, 2 if wide else 4), out, out.size, _key(seed), float(min),
               float(max) - float(min), top, below, BLOCK=BLOCK, WIDE=wide)
    return out


def gaussian(*, shape, dtype, mean, std, seed, place=None):
    np_dtype = get_dtype(dtype).np
    out = empty(shape, np_dtype)
    if out.size:
        wide = np_dtype == np.float64
        launch(_gaussian_kernel, _programs(out.size, 2 if wide else 4), out, out.size, _key(seed), float(mean),
               float(std), BLOCK=BLOCK, WIDE=wide)
    return out


def randint(*, shape, dtype, low, high, place=None):
    span = int(high) - int(low)
    if not 0 < span < 2**63:
        raise ArgumentError(f"randint: the gpu draws ranges [low, high) of 1 to 2**63 - 1 values, got [{low}, {high})")
    out = empty(shape, get_dtype(dtype).np)
    if out.size:
        launch(_randint_kernel, _programs(out.size, 2), out, out.size, _key(), int(low), span, BLOCK=BLOCK)
    return out


def bernoulli(x, p=None):
    out = empty(x.shape, x.dtype)
    if not out.size:
        return out
    if p is not None and not 0.0 <= float(p) <= 1.0:
        raise ArgumentError(f"bernoulli: p must lie in [0, 1], got {p}")
    x = contiguous(x)
    wide = x.dtype == np.float64
    flag = BACKEND.zeros((1,), np.int32)
    launch(_bernoulli_kernel, _programs(out.size, 2 if wide else 4), x, out, flag, out.size,
           0.0 if p is None else float(p), _key(), BLOCK=BLOCK, WIDE=wide, USE_P=p is not None)
    if p is None and BACKEND.to_numpy(flag)[0]:
        raise ArgumentError(f"bernoulli: probabilities must lie in [0, 1]; x ({x.dtype}{list(x.shape)}) has values "
                            f"outside it or NaN")
    return out


KERNELS = {"uniform": uniform, "gaussian": gaussian, "randint": randint, "bernoulli": bernoulli}


# -- ahead-of-time compilation (oar_triton.aot) ---------------------------------------------------
def aot_configs() -> list[tuple]:
    """Each kernel in float32, bfloat16 and float64 (the 53-bit path), randint in int64 and int32."""
    from oar_triton.aot import POINTER_TYPES  # (aot imports the kernel modules)

    found = []
    for dtype in ("float32", "bfloat16", "float64"):
        t, wide = POINTER_TYPES[dtype], dtype == "float64"
        consts = {"BLOCK": BLOCK, "WIDE": wide}
        found.append((f"random.uniform[{dtype}]", _uniform_kernel,
                      {"out": t, "n": "i64", "seed": "i64", "lo": "fp64", "span": "fp64", "top": "fp64",
                       "below": "fp64", "BLOCK": "constexpr", "WIDE": "constexpr"}, consts))
        found.append((f"random.gaussian[{dtype}]", _gaussian_kernel,
                      {"out": t, "n": "i64", "seed": "i64", "mean": "fp64", "std": "fp64", "BLOCK": "constexpr",
                       "WIDE": "constexpr"}, consts))
        for use_p in (False, True):
            found.append((f"random.bernoulli[{dtype},p={use_p}]", _bernoulli_kernel,
                          {"x": t, "out": t, "flag": "*i32", "n": "i64", "p": "fp64", "seed": "i64",
                           "BLOCK": "constexpr", "WIDE": "constexpr", "USE_P": "constexpr"},
                          {**consts, "USE_P": use_p}))
    for dtype in ("int64", "int32"):
        found.append((f"random.randint[{dtype}]", _randint_kernel,
                      {"out": POINTER_TYPES[dtype], "n": "i64", "seed": "i64", "low": "i64", "span": "i64",
                       "BLOCK": "constexpr"}, {"BLOCK": BLOCK}))
    return found


__all__ = ["KERNELS", "aot_configs"]

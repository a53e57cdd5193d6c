"""The int8 layers of a converted model, ``quantized_conv2d`` and ``quantized_linear``, on AVX-512 VNNI.

Their references run float BLAS on the integers: exact, and no faster than the float model. What
makes int8 pay is ``vpdpbusd``: 64 unsigned-by-signed byte products a register, added in fours
into sixteen int32 lanes, four times the work of a float32 FMA. LLVM emits it only from its
intrinsic (the best-written numba dot product becomes ``vpdpwssd``, int16 pairs: twice an FMA's
work), so this module gives numba a 16 x int32 vector type and five intrinsics (zero, load,
broadcast, store, ``vpdpbusd``), and writes the GEMM's register tiles with them.

``_gemm``: ``acc[r, l] = sum over g of dot4(b[g, l], a[r, g])``, each word four bytes (b's
unsigned, a's signed), a word of ``a`` broadcast to all lanes: tiles of 4 rows x 64 lanes (16
accumulators; 4 loads and 4 broadcasts per 16 instructions), then 4 x 16 for the lanes left.
Rows come in fours and lanes in sixteens: the packing pads them.

The unsigned operand is an int8 one plus 128 (``v ^ 0x80``). What the 128 adds, and the zero
points, come off per output channel and position, in int32: exact modulo 2**32, hence exact
wherever the true sum fits int32 (``MAX_DEPTH``). With ``u = x + 128`` (a convolution's patches)
or ``v = w + 128`` (a linear's weight):

    sum (x - zx)(w - zw) = sum u w - zw sum u - (128 + zx)(sum w - k zw)
                         = sum x v - (128 + zw) sum x - zx (sum w - k zw).

- ``quantized_conv2d``: rows are output channels (the weight as ``[O, C * kh * kw]``, taps in
  fours), lanes the output positions of a chunk of samples (``CHUNK_BYTES``): word ``[g, p]``
  holds the patch values ``u`` of taps 4g..4g+3 at position p. A chunk is first copied into a
  padded buffer whose border holds the zero point (padding stands for the real value 0), with a
  plane of zeros after the channels for the taps past the last. At a column stride of 1 the
  output rows are laid at the padded input's width ("wide", as ``_fused`` does): a tap's patch
  row is then one contiguous run of the padded sample, and the few positions past the output's
  width are computed and dropped. The epilogue reads each channel's int32 sums once and writes
  ``act(acc * (x_scale * w_scale) + bias)``, and for ``max_pool`` each window's maximum only.
- ``quantized_linear``: rows are x's rows (its int8 values as they are: the signed operand),
  lanes the output features (the weight ``[in, out]`` as words of four input rows' ``v``); the
  output comes out in its own layout ``[rows, out]``.

The float epilogue is compiled without fast-math (no fused multiply-add): it rounds as the
reference does, so results are the reference's bit for bit for relu or no activation; the other
activations run the reference's ``apply_activation`` after it (and then the pooling). Each
thread keeps its buffers per geometry (``_plan``). With ``oar.set_num_threads(k > 1)`` a large
call runs in k shares of the samples (rows), one per numba thread; an executor's per-thread
parts of a batch run here on one thread each. Groups, a negative padding, a depth past
``MAX_DEPTH`` and a CPU without AVX-512 VNNI (``VNNI``; the plugin then registers none of these
kernels) go to the reference kernels.
"""

from __future__ import annotations

import threading

import llvmlite.binding as llvm
import numba
import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic, models, register_model

from oar.nn.functional import quant as _ref
from oar.nn.functional.fused import apply_activation, pool_output
from oar_numba._fused import _nan_max
from oar_numba._jit import SPLIT_BELOW, always_parallel

MAX_DEPTH = 1 << 15  # taps (k): the exact sum of k products of (x - zx)(w - zw), each below 2**16, fits int32
CHUNK_BYTES = 512 << 10  # a chunk's patches and int32 sums: they stay in L2 from packing to epilogue


def _has_vnni() -> bool:
    """Whether numba compiles for this machine's CPU and the CPU has AVX-512 VNNI: for any other
    target LLVM cannot select the instruction, which would end the process."""
    if numba.config.CPU_NAME not in (None, "host") or numba.config.CPU_FEATURES:
        return False
    return bool(llvm.get_host_cpu_features().get("avx512vnni"))


VNNI = _has_vnni()


# -- sixteen int32 lanes, and the five intrinsics on them -------------------------------------------
_LANE = ir.IntType(32)
_VECTOR = ir.VectorType(_LANE, 16)


class Int32x16(types.Type):
    """An AVX-512 register of sixteen int32 lanes, as a numba value."""

    def __init__(self):
        super().__init__(name="int32x16")


int32x16 = Int32x16()


@register_model(Int32x16)
class _Int32x16Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _VECTOR)


def _check_words(fn: str, words) -> None:
    if not (isinstance(words, types.Array) and words.ndim == 1 and words.layout == "C"
            and words.dtype in (types.int32, types.uint32)):
        raise TypingError(f"{fn}: words must be a 1-d C-contiguous int32 or uint32 array, got {words}")


def _pointer(context, builder, array_type, array, index, to):
    data = context.make_array(array_type)(context, builder, array).data
    return builder.bitcast(builder.gep(data, [index]), to.as_pointer())


@intrinsic
def vzero(typingctx):
    """Sixteen zero lanes."""
    return int32x16(), lambda context, builder, signature, args: ir.Constant(_VECTOR, None)


@intrinsic
def vload(typingctx, words, index):
    """``words[index:index + 16]``, unchecked: the caller keeps it inside the array."""
    _check_words("vload", words)

    def codegen(context, builder, signature, args):
        return builder.load(_pointer(context, builder, signature.args[0], args[0], args[1], _VECTOR), align=4)

    return int32x16(words, index), codegen


@intrinsic
def vsplat(typingctx, words, index):
    """``words[index]`` in every lane, unchecked."""
    _check_words("vsplat", words)

    def codegen(context, builder, signature, args):
        word = builder.load(_pointer(context, builder, signature.args[0], args[0], args[1], _LANE), align=4)
        one = builder.insert_element(ir.Constant(_VECTOR, None), word, ir.Constant(_LANE, 0))
        return builder.shuffle_vector(one, one, ir.Constant(_VECTOR, None))

    return int32x16(words, index), codegen


@intrinsic
def vstore(typingctx, words, index, vector):
    """``words[index:index + 16] = vector``, unchecked."""
    _check_words("vstore", words)

    def codegen(context, builder, signature, args):
        builder.store(args[2], _pointer(context, builder, signature.args[0], args[0], args[1], _VECTOR), align=4)
        return context.get_dummy_value()

    return types.none(words, index, int32x16), codegen


@intrinsic
def dpbusd(typingctx, acc, unsigned, signed):
    """``acc`` plus, per lane, the four products of the unsigned bytes of ``unsigned`` and the
    signed bytes of ``signed``, in int32 (wrapping, never saturating)."""
    if not all(t == int32x16 for t in (acc, unsigned, signed)):
        raise TypingError("dpbusd: acc, unsigned and signed must be int32x16")

    def codegen(context, builder, signature, args):
        function = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_VECTOR, [_VECTOR] * 3),
                                                  "llvm.x86.avx512.vpdpbusd.512")
        return builder.call(function, args)

    return int32x16(acc, unsigned, signed), codegen


# -- the GEMM -----------------------------------------------------------------------------------------
@numba.njit(cache=True, nogil=True)
def _gemm(a, b, b_stride, acc, rows, lanes):
    """acc[r * lanes + l] = sum over g of dot4(b[g * b_stride + l], a[r * groups + g]): ``a``
    [rows, groups] words of signed bytes (rows a multiple of 4), ``b`` [groups, b_stride] words of
    unsigned bytes (``lanes`` a multiple of 16, at most ``b_stride``), ``acc`` [rows, lanes]."""
    groups = a.size // rows
    wide = lanes - lanes % 64
    for l0 in range(0, wide, 64):
        for r0 in range(0, rows, 4):
            a0, a1, a2, a3 = r0 * groups, (r0 + 1) * groups, (r0 + 2) * groups, (r0 + 3) * groups
            c00 = c01 = c02 = c03 = c10 = c11 = c12 = c13 = vzero()
            c20 = c21 = c22 = c23 = c30 = c31 = c32 = c33 = vzero()
            for g in range(groups):
                p = g * b_stride + l0
                b0, b1, b2, b3 = vload(b, p), vload(b, p + 16), vload(b, p + 32), vload(b, p + 48)
                w = vsplat(a, a0 + g)
                c00, c01, c02, c03 = dpbusd(c00, b0, w), dpbusd(c01, b1, w), dpbusd(c02, b2, w), dpbusd(c03, b3, w)
                w = vsplat(a, a1 + g)
                c10, c11, c12, c13 = dpbusd(c10, b0, w), dpbusd(c11, b1, w), dpbusd(c12, b2, w), dpbusd(c13, b3, w)
                w = vsplat(a, a2 + g)
                c20, c21, c22, c23 = dpbusd(c20, b0, w), dpbusd(c21, b1, w), dpbusd(c22, b2, w), dpbusd(c23, b3, w)
                w = vsplat(a, a3 + g)
                c30, c31, c32, c33 = dpbusd(c30, b0, w), dpbusd(c31, b1, w), dpbusd(c32, b2, w), dpbusd(c33, b3, w)
            q = r0 * lanes + l0
            vstore(acc, q, c00), vstore(acc, q + 16, c01), vstore(acc, q + 32, c02), vstore(acc, q + 48, c03)
            q += lanes
            vstore(acc, q, c10), vstore(acc, q + 16, c11), vstore(acc, q + 32, c12), vstore(acc, q + 48, c13)
            q += lanes
            vstore(acc, q, c20), vstore(acc, q + 16, c21), vstore(acc, q + 32, c22), vstore(acc, q + 48, c23)
            q += lanes
            vstore(acc, q, c30), vstore(acc, q + 16, c31), vstore(acc, q + 32, c32), vstore(acc, q + 48, c33)
    for l0 in range(wide, lanes, 16):
        for r0 in range(0, rows, 4):
            a0, a1, a2, a3 = r0 * groups, (r0 + 1) * groups, (r0 + 2) * groups, (r0 + 3) * groups
            c0 = c1 = c2 = c3 = vzero()
            for g in range(groups):
                b0 = vload(b, g * b_stride + l0)
                c0, c1 = dpbusd(c0, b0, vsplat(a, a0 + g)), dpbusd(c1, b0, vsplat(a, a1 + g))
                c2, c3 = dpbusd(c2, b0, vsplat(a, a2 + g)), dpbusd(c3, b0, vsplat(a, a3 + g))
            q = r0 * lanes + l0
            vstore(acc, q, c0), vstore(acc, q + lanes, c1), vstore(acc, q + 2 * lanes, c2), vstore(acc, q + 3 * lanes, c3)


# -- the epilogue -----------------------------------------------------------------------------------------
@numba.njit(inline="always")
def _value(acc, corr, scale):
    """One output's float32 value, rounded as the reference rounds it: the exact int32 sum
    (``acc - corr``, modulo 2**32), converted, times the step."""
    return np.float32(np.int32(acc - corr)) * scale


@numba.njit(inline="always")
def _epilogue(row, corr, scale, b, relu, pool, width, dst):
    """dst[oh, ow] = act(value(row[oh * width + ow]) + b), or the max of each pool x pool window
    of that (as ``_fused._finish``, from the int32 sums: one pass, no float buffer)."""
    zero = np.float32(0)
    out_h, out_w = dst.shape
    if pool <= 1:
        for oh in range(out_h):
            src, target = row[oh * width:oh * width + out_w], dst[oh]
            for ow in range(out_w):
                v = _value(src[ow], corr, scale) + b
                target[ow] = (zero if v < zero else v) if relu else v  # NaN stays NaN
    elif pool == 2:
        for oh in range(out_h):
            r0 = row[2 * oh * width:2 * oh * width + 2 * out_w]
            r1 = row[(2 * oh + 1) * width:(2 * oh + 1) * width + 2 * out_w]
            target = dst[oh]
            for ow in range(out_w):
                top = _nan_max(_value(r0[2 * ow], corr, scale), _value(r0[2 * ow + 1], corr, scale))
                bottom = _nan_max(_value(r1[2 * ow], corr, scale), _value(r1[2 * ow + 1], corr, scale))
                v = _nan_max(top, bottom) + b
                target[ow] = (zero if v < zero else v) if relu else v
    else:
        for oh in range(out_h):
            for ow in range(out_w):
                best = _value(row[oh * pool * width + ow * pool], corr, scale)
                for i in range(pool):
                    for j in range(pool):
                        best = _nan_max(_value(row[(oh * pool + i) * width + ow * pool + j], corr, scale), best)
                v = best + b
                dst[oh, ow] = (zero if v < zero else v) if relu else v


# -- quantized_conv2d -----------------------------------------------------------------------------------
_FLIP = np.uint8(0x80)


@numba.njit(inline="always")
def _tap_offset(t, taps, kk, kw, dh, dw, plane, wp, channels):
    """Where tap ``t`` (channel, row, column of the kernel) starts in a padded sample; a tap past
    the last (``taps``) reads the plane of zeros after the channels."""
    if t >= taps:
        return channels * plane
    c, r = t // kk, t % kk
    return c * plane + (r // kw) * dh * wp + (r % kw) * dw


@numba.njit(cache=True, nogil=True)
def _conv_weights(weight, zx, zw, x_scale, weight_scale, w8):
    """The weight [O, taps] as rows of ``w8`` [rows, groups * 4] (zero beyond), and per channel:
    the zero-point term ``(128 + zx) * (sum w - taps * zw)`` (int32, wrapping), zw, the step
    ``x_scale * weight_scale``; and whether a zw is not 0."""
    o_size, taps = weight.shape
    corr, zws, scale = np.empty(o_size, np.int32), np.empty(o_size, np.int32), np.empty(o_size, np.float32)
    w8[:] = 0
    for o in range(o_size):
        total = 0
        for t in range(taps):
            w8[o, t] = weight[o, t]
            total += weight[o, t]
        zws[o] = zw[o if zw.size > 1 else 0]
        corr[o] = np.int32((128 + zx) * (total - taps * np.int64(zws[o])))
        scale[o] = x_scale * weight_scale[o if weight_scale.size > 1 else 0]
    return corr, zws, scale, bool(np.any(zws != 0))


@numba.njit(cache=True, nogil=True)
def _conv_chunks(x, w4, rows, corr, zws, need_u, scale, bias, zu, kh, kw, sh, sw, dh, dw, top, left, oh, pw, relu,
                 pool, xp, packed, packed8, stride, acc, sums, out):
    """out[n, o] = epilogue(channel o's int32 sums over x[n]'s patches), a chunk of
    ``xp.shape[0]`` samples at a time: x uint8 [N, C, H, W] (the int8 bits), ``w4`` [rows,
    groups] words; the chunk padded into ``xp`` [samples, C + 1, Hp + 1, Wp] (a row of slack
    under each plane: a wide tap's run ends past the last row), packed into ``packed`` [groups,
    stride] words (``packed8``: their bytes), summed into ``acc``; ``sums`` the patches' sums
    per position (read where ``need_u``: some zw is not 0)."""
    batch, channels, height, width = x.shape
    o_size, samples = out.shape[1], xp.shape[0]
    groups = w4.size // rows
    plane, wp, kk = xp.shape[2] * xp.shape[3], xp.shape[3], kh * kw
    taps, ps = channels * kk, oh * pw
    for s in range(samples):  # the border holds the zero point (+ 128), the last plane zeros
        xp[s, :channels] = zu
        xp[s, channels] = 0
    for n0 in range(0, batch, samples):
        count = min(samples, batch - n0)
        for s in range(count):
            for c in range(channels):
                src, dst = x[n0 + s, c], xp[s, c, top:top + height, left:left + width]
                for r in range(height):
                    for q in range(width):
                        dst[r, q] = src[r, q] ^ _FLIP
        for s in range(count):
            src = xp[s].reshape(-1)
            for g in range(groups):
                t0 = _tap_offset(4 * g, taps, kk, kw, dh, dw, plane, wp, channels)
                t1 = _tap_offset(4 * g + 1, taps, kk, kw, dh, dw, plane, wp, channels)
                t2 = _tap_offset(4 * g + 2, taps, kk, kw, dh, dw, plane, wp, channels)
                t3 = _tap_offset(4 * g + 3, taps, kk, kw, dh, dw, plane, wp, channels)
                dst = packed8[4 * (g * stride + s * ps):4 * (g * stride + (s + 1) * ps)]
                if sh == 1 and sw == 1:  # every tap's patch row is one run of the padded sample
                    r0, r1, r2, r3 = src[t0:t0 + ps], src[t1:t1 + ps], src[t2:t2 + ps], src[t3:t3 + ps]
                    for q in range(ps):  # byte stores, which LLVM interleaves with unpacks
                        dst[4 * q], dst[4 * q + 1], dst[4 * q + 2], dst[4 * q + 3] = r0[q], r1[q], r2[q], r3[q]
                else:
                    for r in range(oh):
                        for q in range(pw):
                            i, d = r * sh * wp + q * sw, 4 * (r * pw + q)
                            dst[d], dst[d + 1], dst[d + 2], dst[d + 3] = src[t0 + i], src[t1 + i], src[t2 + i], \
                                src[t3 + i]
        used = count * ps
        lanes = (used + 15) // 16 * 16
        _gemm(w4, packed, stride, acc, rows, lanes)
        if need_u:  # acc -= zw * (the patches' sums), in place
            sums[:used] = 0
            for g in range(groups):
                words = packed8[4 * g * stride:4 * (g * stride + used)]
                for q in range(used):
                    sums[q] += np.int32(words[4 * q]) + words[4 * q + 1] + words[4 * q + 2] + words[4 * q + 3]
            for o in range(o_size):
                z, row = zws[o], acc[o * lanes:o * lanes + used]
                for q in range(used):
                    row[q] = np.int32(row[q] - z * sums[q])
        for s in range(count):
            for o in range(o_size):
                b = bias[o] if bias.size else np.float32(0)
                _epilogue(acc[o * lanes + s * ps:o * lanes + (s + 1) * ps], corr[o], scale[o], b, relu, pool, pw,
                          out[n0 + s, o])


@numba.njit(cache=True, nogil=True)
def _conv(x, weight, zx, zw, x_scale, weight_scale, bias, kh, kw, sh, sw, dh, dw, top, left, oh, pw, relu, pool, w8,
          xp, packed, packed8, stride, acc, sums, out):
    """The weight prepared (``_conv_weights``), then ``_conv_chunks``: one call, one GIL release."""
    corr, zws, scale, need_u = _conv_weights(weight, zx, zw, x_scale, weight_scale, w8)
    _conv_chunks(x, w8.reshape(-1).view(np.int32), w8.shape[0], corr, zws, need_u, scale, bias, np.uint8(zx + 128), kh,
                 kw, sh, sw, dh, dw, top, left, oh, pw, relu, pool, xp, packed, packed8, stride, acc, sums, out)


@always_parallel
def _conv_parts(x, weight, zx, zw, x_scale, weight_scale, bias, kh, kw, sh, sw, dh, dw, top, left, oh, pw, relu, pool,
                w8, xp_shape, packed_size, stride, acc_size, parts, out):
    """``_conv`` over ``parts`` shares of the samples, one per numba thread, each with its own
    buffers (as ``_fused._direct_parts``)."""
    corr, zws, scale, need_u = _conv_weights(weight, zx, zw, x_scale, weight_scale, w8)
    w4, rows, n = w8.reshape(-1).view(np.int32), w8.shape[0], x.shape[0]
    for part in prange(parts):
        first, last = n * part // parts, n * (part + 1) // parts
        packed8 = np.empty(4 * packed_size, np.uint8)
        _conv_chunks(x[first:last], w4, rows, corr, zws, need_u, scale, bias, np.uint8(zx + 128), kh, kw, sh, sw, dh,
                     dw, top, left, oh, pw, relu, pool, np.empty(xp_shape, np.uint8), packed8.view(np.uint32), packed8,
                     stride, np.empty(acc_size, np.int32), np.empty(acc_size // rows, np.int32), out[first:last])


class _ConvPlan:
    """What one thread needs for convolutions of one geometry: sizes, and buffers reused from
    call to call (a fresh buffer of a few hundred KiB costs page faults on every call)."""

    def __init__(self, x_shape, w_shape, stride, padding, dilation):
        (n, c, height, width), (o, _, kh, kw) = x_shape, w_shape
        (self.sh, self.sw), (self.dh, self.dw), (self.top, bottom, self.left, right) = stride, dilation, padding
        hp, wp = height + self.top + bottom, width + self.left + right
        self.oh = (hp - self.dh * (kh - 1) - 1) // self.sh + 1
        self.ow = (wp - self.dw * (kw - 1) - 1) // self.sw + 1
        self.pw = wp if self.sw == 1 else self.ow  # wide rows at stride 1 (see the module's docstring)
        taps = c * kh * kw
        groups, self.rows = -(-taps // 4), -(-o // 4) * 4
        ps = self.oh * self.pw
        self.work = taps * ps  # patch bytes per sample
        samples = max(1, min(n, CHUNK_BYTES // ((groups + self.rows) * 4 * max(ps, 1))))
        lanes = -(-samples * ps // 16) * 16
        self.stride = lanes + 16 if lanes % 1024 == 0 else lanes  # rows 4 KiB apart would share L1 sets
        self.w8 = np.empty((self.rows, groups * 4), np.int8)
        self.xp = np.empty((samples, c + 1, hp + 1, wp), np.uint8)
        self.packed = np.empty(groups * self.stride, np.uint32)  # (a plan is one thread's: w8 too)
        self.acc = np.empty(self.rows * lanes, np.int32)
        self.sums = np.empty(lanes, np.int32)


_plans = threading.local()


def _plan(kind, key, make):
    plans = _plans.__dict__.setdefault(kind, {})
    plan = plans.get(key)
    if plan is None:
        if len(plans) > 32:  # shapes come and go (a varying batch): keep the set small
            plans.clear()
        plan = plans[key] = make()
    return plan


_NO_BIAS = np.zeros(0, np.float32)


def _qparams_fit(x_scale, x_zero_point, weight_scale, weight_zero_point, bias, channels: int) -> bool:
    return (x_scale.size == 1 and x_zero_point.size == 1 and weight_scale.ndim <= 1
            and weight_scale.size in (1, channels) and weight_zero_point.shape == weight_scale.shape
            and x_scale.dtype == weight_scale.dtype == np.float32 and x_zero_point.dtype == np.int8
            and weight_zero_point.dtype == np.int8 and (bias is None or bias.size == channels))


def _conv_fits(x, x_scale, x_zero_point, weight, weight_scale, weight_zero_point, bias, stride, padding, dilation,
               groups, max_pool) -> bool:
    if not (VNNI and x.ndim == 4 and weight.ndim == 4 and groups == 1 and x.dtype == weight.dtype == np.int8):
        return False
    if x.shape[1] != weight.shape[1] or x.size == 0 or weight.size == 0 or weight[0].size > MAX_DEPTH:
        return False
    if len(padding) != 4 or min(padding) < 0 or min(stride) < 1 or min(dilation) < 1:
        return False
    if max_pool is not None and not (type(max_pool) is int and max_pool >= 1):
        return False
    return _qparams_fit(x_scale, x_zero_point, weight_scale, weight_zero_point, bias, weight.shape[0])


def quantized_conv2d(x, x_scale, x_zero_point, weight, weight_scale, weight_zero_point, bias=None, stride=(1, 1),
                     padding=(0, 0, 0, 0), dilation=(1, 1), groups=1, act=None, act_attrs=None, max_pool=None):
    if not _conv_fits(x, x_scale, x_zero_point, weight, weight_scale, weight_zero_point, bias, stride, padding,
                      dilation, groups, max_pool):
        return _ref._quantized_conv2d_kernel(x, x_scale, x_zero_point, weight, weight_scale, weight_zero_point, bias,
                                             stride, padding, dilation, groups, act, act_attrs, max_pool)
    key = (x.shape, weight.shape, *stride, *padding, *dilation)
    plan = _plan("conv", key, lambda: _ConvPlan(x.shape, weight.shape, stride, padding, dilation))
    if plan.oh < 1 or plan.ow < 1:  # the reference says what is wrong
        return _ref._quantized_conv2d_kernel(x, x_scale, x_zero_point, weight, weight_scale, weight_zero_point, bias,
                                             stride, padding, dilation, groups, act, act_attrs, max_pool)
    n, (o, _, kh, kw) = x.shape[0], weight.shape
    fused = act in (None, "relu")
    pool = (max_pool or 0) if fused else 0
    out = np.empty((n, o, plan.oh // pool, plan.ow // pool) if pool else (n, o, plan.oh, plan.ow), np.float32)
    args = (np.ascontiguousarray(x).view(np.uint8), np.ascontiguousarray(weight).reshape(o, -1),
            int(x_zero_point.reshape(-1)[0]), weight_zero_point.reshape(-1), x_scale.reshape(-1)[0],
            weight_scale.reshape(-1), _NO_BIAS if bias is None else np.ascontiguousarray(bias, np.float32).reshape(-1),
            kh, kw, plan.sh, plan.sw, plan.dh, plan.dw, plan.top, plan.left, plan.oh, plan.pw, act == "relu", pool,
            plan.w8)
    parts = min(numba.get_num_threads(), n) if n * plan.work >= SPLIT_BELOW else 1
    if parts > 1:
        _conv_parts(*args, plan.xp.shape, plan.packed.size, plan.stride, plan.acc.size, parts, out)
    else:
        _conv(*args, plan.xp, plan.packed, plan.packed.view(np.uint8), plan.stride, plan.acc, plan.sums, out)
    if fused:
        return out
    return pool_output(apply_activation(out, act, act_attrs or {}), max_pool)


# -- quantized_linear -----------------------------------------------------------------------------------
@numba.njit(cache=True, nogil=True)
def _linear_weights(w, zx, zw, x_scale, weight_scale, packed, stride):
    """The weight (the bits of int8 [K, N] as uint8) into ``packed`` [groups, stride] words of
    four input rows' ``w ^ 0x80``, and per output feature: ``zx * (sum w - K * zw)`` (int32,
    wrapping), zw and the step ``x_scale * weight_scale``."""
    k, n = w.shape
    groups, lanes = (k + 3) // 4, (n + 15) // 16 * 16
    flipped_sums = np.zeros(n, np.int64)  # of w + 128
    for g in range(groups):
        dst = packed[g * stride:g * stride + lanes]
        dst[:] = 0
        for t in range(4 * g, min(4 * g + 4, k)):  # the missing bytes of a last group stay 0 (x's are 0 there)
            shift, row = np.uint32(8 * (t - 4 * g)), w[t]
            for j in range(n):
                f = row[j] ^ _FLIP
                dst[j] |= np.uint32(f) << shift
                flipped_sums[j] += f
    corr, zws, scale = np.empty(n, np.int32), np.empty(n, np.int32), np.empty(n, np.float32)
    for j in range(n):
        zws[j] = zw[j if zw.size > 1 else 0]
        corr[j] = np.int32(zx * (flipped_sums[j] - 128 * k - k * np.int64(zws[j])))
        scale[j] = x_scale * weight_scale[j if weight_scale.size > 1 else 0]
    return corr, zws, scale


@numba.njit(cache=True, nogil=True)
def _linear_rows(x, packed, stride, corr, zws, scale, bias, relu, a8, acc, out):
    """out [M, N] = epilogue(x [M, K] @ the packed weight), ``a8.shape[0]`` rows of x (int8) at a
    time copied into ``a8`` [chunk (a multiple of 4), groups * 4] (zero beyond K), ``acc`` [chunk,
    lanes] their sums."""
    m, k = x.shape
    n = out.shape[1]
    chunk, groups = a8.shape[0], a8.shape[1] // 4
    lanes = (n + 15) // 16 * 16
    a = a8.reshape(-1).view(np.int32)
    row_sums = np.empty(chunk, np.int32)
    zero = np.float32(0)
    for m0 in range(0, m, chunk):
        count = min(chunk, m - m0)
        rows = (count + 3) // 4 * 4
        a8[:rows] = 0
        for i in range(count):
            src, dst = x[m0 + i], a8[i]
            total = 0
            for p in range(k):
                dst[p] = src[p]
                total += src[p]
            row_sums[i] = total
        _gemm(a[:rows * groups], packed, stride, acc, rows, lanes)
        for i in range(count):
            row, target, sx = acc[i * lanes:i * lanes + n], out[m0 + i], row_sums[i]
            for j in range(n):  # acc - (128 + zw) * sum x - corr: the exact sum (see the module's docstring)
                v = _value(row[j] - (128 + zws[j]) * sx, corr[j], scale[j]) + (bias[j] if bias.size else zero)
                target[j] = (zero if v < zero else v) if relu else v  # NaN stays NaN


@numba.njit(cache=True, nogil=True)
def _linear(x, w, zx, zw, x_scale, weight_scale, bias, relu, packed, stride, a8, acc, out):
    """The weight packed (``_linear_weights``), then ``_linear_rows``: one call, one GIL release."""
    corr, zws, scale = _linear_weights(w, zx, zw, x_scale, weight_scale, packed, stride)
    _linear_rows(x, packed, stride, corr, zws, scale, bias, relu, a8, acc, out)


@always_parallel
def _linear_parts(x, w, zx, zw, x_scale, weight_scale, bias, relu, packed, stride, a8_shape, acc_size, parts, out):
    """``_linear`` over ``parts`` shares of the rows, one per numba thread, with their own buffers."""
    corr, zws, scale = _linear_weights(w, zx, zw, x_scale, weight_scale, packed, stride)
    m = x.shape[0]
    for part in prange(parts):
        first, last = m * part // parts, m * (part + 1) // parts
        _linear_rows(x[first:last], packed, stride, corr, zws, scale, bias, relu, np.empty(a8_shape, np.int8),
                     np.empty(acc_size, np.int32), out[first:last])


LINEAR_CHUNK_BYTES = 256 << 10  # the int32 sums of a chunk of rows
LINEAR_SHARE_ROWS = 64  # rows a numba thread takes at least


class _LinearPlan:
    def __init__(self, m, k, n):
        groups, lanes = -(-k // 4), -(-n // 16) * 16
        self.stride = lanes + 16 if lanes % 1024 == 0 else lanes
        chunk = min(-(-m // 4) * 4, max(4, LINEAR_CHUNK_BYTES // (4 * lanes) // 4 * 4))
        self.a8 = np.empty((chunk, groups * 4), np.int8)
        self.packed = np.empty(groups * self.stride, np.uint32)
        self.acc = np.empty(chunk * lanes, np.int32)


def _linear_fits(x, x_scale, x_zero_point, weight, weight_scale, weight_zero_point, bias) -> bool:
    if not (VNNI and x.ndim >= 1 and weight.ndim == 2 and x.dtype == weight.dtype == np.int8):
        return False
    if x.shape[-1] != weight.shape[0] or x.size == 0 or weight.size == 0 or weight.shape[0] > MAX_DEPTH:
        return False
    return _qparams_fit(x_scale, x_zero_point, weight_scale, weight_zero_point, bias, weight.shape[1])


def quantized_linear(x, x_scale, x_zero_point, weight, weight_scale, weight_zero_point, bias=None, act=None,
                     act_attrs=None):
    if not _linear_fits(x, x_scale, x_zero_point, weight, weight_scale, weight_zero_point, bias):
        return _ref._quantized_linear_kernel(x, x_scale, x_zero_point, weight, weight_scale, weight_zero_point, bias,
                                             act, act_attrs)
    k, n = weight.shape
    x2 = np.ascontiguousarray(x).reshape(-1, k)
    m = x2.shape[0]
    plan = _plan("linear", (m, k, n), lambda: _LinearPlan(m, k, n))
    out = np.empty((m, n), np.float32)
    args = (x2, np.ascontiguousarray(weight).view(np.uint8), int(x_zero_point.reshape(-1)[0]),
            weight_zero_point.reshape(-1), x_scale.reshape(-1)[0], weight_scale.reshape(-1),
            _NO_BIAS if bias is None else np.ascontiguousarray(bias, np.float32).reshape(-1), act == "relu",
            plan.packed, plan.stride)
    parts = min(numba.get_num_threads(), m // LINEAR_SHARE_ROWS) if m * k * n >= SPLIT_BELOW else 1
    if parts > 1:
        _linear_parts(*args, plan.a8.shape, plan.acc.size, parts, out)
    else:
        _linear(*args, plan.a8, plan.acc, out)
    out = out.reshape(*x.shape[:-1], n)
    return out if act in (None, "relu") else apply_activation(out, act, act_attrs or {})


KERNELS = {"quantized_conv2d": quantized_conv2d, "quantized_linear": quantized_linear} if VNNI else {}

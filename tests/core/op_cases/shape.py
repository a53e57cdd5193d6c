"""Op cases of the shape family: reshapes, permutations, joins, splits, repeats, slices, pads."""

from __future__ import annotations

import numpy as np

import oar
from oar.ops import pad_axes
from oar.testing import OpCase

from ._data import ints, rand

ALL_FLOATS = ("float32", "float64", "float16", "bfloat16")
INT = ("int64",)
BOOL = ("bool",)


def bools(*shape) -> np.ndarray:
    return ints(*shape, high=2).astype(bool)


def _unsqueeze_ref(x, axes):
    for a in axes:  # Paddle inserts one axis after another
        x = np.expand_dims(x, a if a >= 0 else a + x.ndim + 1)
    return x


def _squeeze_ref(x, axes):
    return np.squeeze(x, axis=tuple(a for a in axes if x.shape[a] == 1))


def _split_ref(x, sections, axis):
    return tuple(np.split(x, np.cumsum(sections)[:-1], axis=axis))


def _slice_ref(x, axes, starts, ends, strides=None):
    index = [slice(None)] * x.ndim
    for i, a in enumerate(axes):
        index[a] = slice(starts[i], ends[i], strides[i] if strides else 1)
    return x[tuple(index)]


def _pad_ref(x, pads, mode="constant", value=0.0):
    pairs = [(pads[2 * i], pads[2 * i + 1]) for i in range(x.ndim)]
    numpy_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    kwargs = {"constant_values": value} if mode == "constant" else {}
    return np.pad(x, pairs, mode=numpy_mode, **kwargs)


RESHAPE = [
    OpCase("reshape", lambda x: oar.reshape(x, [3, -1]), lambda x: x.reshape(3, -1), [rand(2, 3, 2)], dtypes=ALL_FLOATS),
    OpCase("reshape", lambda x: oar.reshape(x, [0, 6]), lambda x: x.reshape(2, 6), [rand(2, 3, 2)], id="reshape_zero_copies_dim"),
    OpCase("reshape", lambda x: oar.reshape(x, [1]), lambda x: x.reshape(1), [rand()], id="reshape_0d"),
    OpCase("reshape", lambda x: oar.reshape(x, []), lambda x: x.reshape(()), [rand(1, 1)], id="reshape_to_0d"),
    OpCase("reshape", lambda x: oar.reshape(x, [-1, 2]), lambda x: x.reshape(-1, 2), [rand(2, 0, 3)], id="reshape_empty"),
    OpCase("reshape", lambda x: oar.reshape(x, [4, 3]), lambda x: x.reshape(4, 3), [ints(2, 6)], dtypes=INT, grad=False, id="reshape_int64"),
    OpCase("reshape", lambda x: x.reshape([-1]), lambda x: x.reshape(-1), [bools(2, 3)], dtypes=BOOL, grad=False, id="reshape_method_bool"),
    OpCase("flatten", oar.flatten, lambda x: x.reshape(-1), [rand(2, 3, 4)], dtypes=ALL_FLOATS),
    OpCase("flatten", lambda x: oar.flatten(x, 1, 2), lambda x: x.reshape(2, 12, 1), [rand(2, 3, 4, 1)], id="flatten_middle"),
    OpCase("flatten", lambda x: x.flatten(start_axis=-3, stop_axis=-2), lambda x: x.reshape(6, 4), [rand(2, 3, 4)], id="flatten_negative_axes"),
    OpCase("flatten", oar.flatten, lambda x: x.reshape(1), [rand()], id="flatten_0d"),
    OpCase("flatten", lambda x: oar.flatten(x, 1), lambda x: x.reshape(2, 0), [rand(2, 0, 3)], id="flatten_empty"),
    OpCase("flatten", oar.flatten, lambda x: x.reshape(-1), [ints(2, 3)], dtypes=INT, grad=False, id="flatten_int64"),
    OpCase("squeeze", oar.squeeze, np.squeeze, [rand(1, 3, 1, 2)], dtypes=ALL_FLOATS),
    OpCase("squeeze", lambda x: oar.squeeze(x, [0, 1]), lambda x: _squeeze_ref(x, [0, 1]), [rand(1, 3, 1)], id="squeeze_ignores_non_1_axis"),
    OpCase("squeeze", lambda x: x.squeeze(-1), lambda x: x[..., 0], [rand(2, 3, 1)], id="squeeze_negative_axis"),
    OpCase("squeeze", oar.squeeze, np.squeeze, [rand()], id="squeeze_0d"),
    OpCase("squeeze", lambda x: oar.squeeze(x, 1), lambda x: x[:, 0], [rand(0, 1, 2)], id="squeeze_empty"),
    OpCase("squeeze", oar.squeeze, np.squeeze, [bools(1, 3)], dtypes=BOOL, grad=False, id="squeeze_bool"),
    OpCase("unsqueeze", lambda x: oar.unsqueeze(x, [0, 2]), lambda x: _unsqueeze_ref(x, [0, 2]), [rand(2, 3)], dtypes=ALL_FLOATS),
    OpCase("unsqueeze", lambda x: x.unsqueeze([-1, 0]), lambda x: _unsqueeze_ref(x, [-1, 0]), [rand(2, 3)], id="unsqueeze_negative"),
    OpCase("unsqueeze", lambda x: oar.unsqueeze(x, 0), lambda x: x[None], [rand()], id="unsqueeze_0d"),
    OpCase("unsqueeze", lambda x: oar.unsqueeze(x, -1), lambda x: x[..., None], [rand(0, 2)], id="unsqueeze_empty"),
    OpCase("unsqueeze", lambda x: oar.unsqueeze(x, 1), lambda x: x[:, None], [ints(3, 2)], dtypes=INT, grad=False, id="unsqueeze_int64"),
]

PERMUTE = [
    OpCase("transpose", lambda x: oar.transpose(x, [2, 0, 1]), lambda x: x.transpose(2, 0, 1), [rand(2, 3, 4)], dtypes=ALL_FLOATS),
    OpCase("transpose", lambda x: x.transpose([-1, 0, 1]), lambda x: x.transpose(2, 0, 1), [rand(2, 3, 4)], id="transpose_negative_perm"),
    OpCase("transpose", lambda x: oar.transpose(x, []), lambda x: x, [rand()], id="transpose_0d"),
    OpCase("transpose", lambda x: oar.transpose(x, [1, 0]), lambda x: x.T, [rand(0, 2)], id="transpose_empty"),
    OpCase("transpose", lambda x: oar.transpose(x, [1, 0]), lambda x: x.T, [bools(2, 3)], dtypes=BOOL, grad=False, id="transpose_bool"),
    OpCase("transpose", lambda x: oar.moveaxis(x, 0, -1), lambda x: np.moveaxis(x, 0, -1), [rand(2, 3, 4)], id="moveaxis"),
    OpCase("transpose", lambda x: x.moveaxis([0, 1], [2, 0]), lambda x: np.moveaxis(x, [0, 1], [2, 0]), [rand(2, 3, 4)], id="moveaxis_lists"),
    OpCase("transpose", oar.t, lambda x: x.T, [rand(2, 3)], id="t"),
    OpCase("transpose", lambda x: x.T, lambda x: x.T, [rand(2, 3, 4)], id="T_property"),
    OpCase("transpose", lambda x: x.T, lambda x: x.T, [ints(2, 3)], dtypes=INT, grad=False, id="T_int64"),
]

JOIN = [
    OpCase("concat", lambda a, b, c: oar.concat([a, b, c], axis=1), lambda a, b, c: np.concatenate([a, b, c], 1),
           [rand(2, 1, 3), rand(2, 2, 3), rand(2, 3, 3)], dtypes=ALL_FLOATS),
    OpCase("concat", lambda a, b: oar.concat((a, b), axis=-1), lambda a, b: np.concatenate([a, b], -1), [rand(2, 3), rand(2, 1)], id="concat_negative_axis"),
    OpCase("concat", lambda a: oar.concat([a]), lambda a: a, [rand(2, 3)], id="concat_single"),
    OpCase("concat", lambda a, b: oar.concat([a, b]), lambda a, b: np.concatenate([a, b]), [rand(0, 3), rand(2, 3)], id="concat_skips_empty"),
    OpCase("concat", lambda a, b: oar.concat([a, b], axis=1), lambda a, b: np.concatenate([a, b], 1), [rand(0, 3), rand(0, 2)], id="concat_all_empty"),
    OpCase("concat", lambda a, b: oar.concat([a, b]), lambda a, b: np.concatenate([a, b]), [ints(2, 3), ints(1, 3)], dtypes=INT, grad=False, id="concat_int64"),
    OpCase("concat", lambda a, b: oar.concat([a, b]), lambda a, b: np.concatenate([a, b]), [bools(2), bools(3)], dtypes=BOOL, grad=False, id="concat_bool"),
    OpCase("concat", lambda a, b: oar.concat([a, b]), lambda a, b: np.concatenate([a, b]), [ints(2, 2), ints(1, 2)], dtypes=INT, grad=False, id="concat_int64"),
    OpCase("stack", lambda a, b, c: oar.stack([a, b, c]), lambda a, b, c: np.stack([a, b, c]), [rand(2, 3), rand(2, 3), rand(2, 3)], dtypes=ALL_FLOATS),
    OpCase("stack", lambda a, b: oar.stack([a, b], axis=-1), lambda a, b: np.stack([a, b], -1), [rand(2, 3), rand(2, 3)], id="stack_last_axis"),
    OpCase("stack", lambda a, b: oar.stack([a, b]), lambda a, b: np.stack([a, b]), [rand(), rand()], id="stack_0d"),
    OpCase("stack", lambda a, b: oar.stack([a, b], 1), lambda a, b: np.stack([a, b], 1), [rand(0, 2), rand(0, 2)], id="stack_empty"),
    OpCase("stack", lambda a, b: oar.stack([a, b]), lambda a, b: np.stack([a, b]), [ints(3), ints(3)], dtypes=INT, grad=False, id="stack_int64"),
    ]

SPLIT = [
    OpCase("split", lambda x: oar.split(x, 3, axis=1), lambda x: tuple(np.split(x, 3, 1)), [rand(2, 6)], dtypes=ALL_FLOATS),
    OpCase("split", lambda x: oar.split(x, [2, -1, 1], axis=-1), lambda x: _split_ref(x, [2, 2, 1], -1), [rand(2, 5)], id="split_inferred_section"),
    OpCase("split", lambda x: x.split([0, 3]), lambda x: _split_ref(x, [0, 3], 0), [rand(3, 2)], id="split_zero_section"),
    OpCase("split", lambda x: oar.split(x, 2, axis=1), lambda x: tuple(np.split(x, 2, 1)), [rand(0, 4)], id="split_empty"),
    OpCase("split", lambda x: oar.split(x, [1, 2]), lambda x: _split_ref(x, [1, 2], 0), [ints(3, 2)], dtypes=INT, grad=False, id="split_int64"),
    OpCase("split", lambda x: oar.split(x, 2), lambda x: tuple(np.split(x, 2)), [bools(4)], dtypes=BOOL, grad=False, id="split_bool"),
    OpCase("split", lambda x: oar.chunk(x, 2, axis=-1), lambda x: tuple(np.split(x, 2, -1)), [rand(3, 4)], id="chunk"),
    OpCase("split", lambda x: x.chunk(3), lambda x: tuple(np.split(x, 3)), [rand(3, 2)], id="chunk_method"),
    OpCase("unbind", oar.unbind, lambda x: tuple(x), [rand(3, 2)], dtypes=ALL_FLOATS),
    OpCase("unbind", lambda x: oar.unbind(x, axis=-1), lambda x: tuple(np.moveaxis(x, -1, 0)), [rand(2, 3, 2)], id="unbind_last_axis"),
    OpCase("unbind", lambda x: x.unbind(1), lambda x: tuple(np.moveaxis(x, 1, 0)), [rand(0, 2)], id="unbind_empty"),
    OpCase("unbind", oar.unbind, lambda x: tuple(x), [ints(2, 3)], dtypes=INT, grad=False, id="unbind_int64"),
    OpCase("unbind", lambda x: oar.unstack(x, axis=1, num=3), lambda x: tuple(np.moveaxis(x, 1, 0)), [rand(2, 3)], id="unstack"),
]

REPEAT = [
    OpCase("tile", lambda x: oar.tile(x, [2, 1]), lambda x: np.tile(x, (2, 1)), [rand(2, 3)], dtypes=ALL_FLOATS),
    OpCase("tile", lambda x: x.tile([2, 1, 3]), lambda x: np.tile(x, (2, 1, 3)), [rand(2, 3)], id="tile_adds_axes"),
    OpCase("tile", lambda x: oar.tile(x, [2]), lambda x: np.tile(x, 2), [rand(2, 3)], id="tile_short_repeat_times"),
    OpCase("tile", lambda x: oar.tile(x, (3,)), lambda x: np.tile(x, 3), [rand()], id="tile_0d"),
    OpCase("tile", lambda x: oar.tile(x, [0, 2]), lambda x: np.tile(x, (0, 2)), [rand(2, 3)], id="tile_zero_times"),
    OpCase("tile", lambda x: oar.tile(x, [2, 2]), lambda x: np.tile(x, (2, 2)), [ints(2, 2)], dtypes=INT, grad=False, id="tile_int64"),
    OpCase("broadcast_to", lambda x: oar.broadcast_to(x, [4, 2, 3]), lambda x: np.broadcast_to(x, (4, 2, 3)), [rand(2, 1)], dtypes=ALL_FLOATS),
    OpCase("broadcast_to", lambda x: oar.broadcast_to(x, [2, 3]), lambda x: np.broadcast_to(x, (2, 3)), [rand()], id="broadcast_to_0d"),
    OpCase("broadcast_to", lambda x: oar.broadcast_to(x, [0, 3]), lambda x: np.broadcast_to(x, (0, 3)), [rand(1, 3)], id="broadcast_to_empty"),
    OpCase("broadcast_to", lambda x: oar.expand(x, [2, -1, 3]), lambda x: np.broadcast_to(x, (2, 4, 3)), [rand(4, 1)], id="expand"),
    OpCase("broadcast_to", lambda x: x.expand([3, 2]), lambda x: np.broadcast_to(x, (3, 2)), [bools(2)], dtypes=BOOL, grad=False, id="expand_bool"),
    OpCase("broadcast_to", lambda x, y: oar.expand_as(x, y), lambda x, y: np.broadcast_to(x, y.shape), [rand(3), rand(2, 3)],
           grad_inputs=[0], id="expand_as"),
    OpCase("broadcast_to", lambda x, y: x.expand_as(y), lambda x, y: np.broadcast_to(x, y.shape), [ints(1, 2), ints(3, 2)],
           dtypes=INT, grad=False, id="expand_as_int64"),
]

REORDER = [
    OpCase("flip", lambda x: oar.flip(x, [0, 2]), lambda x: np.flip(x, (0, 2)), [rand(2, 3, 4)], dtypes=ALL_FLOATS),
    OpCase("flip", lambda x: x.flip(-1), lambda x: np.flip(x, -1), [rand(2, 3)], id="flip_negative_axis"),
    OpCase("flip", lambda x: oar.flip(x, 0), lambda x: x, [rand()], id="flip_0d"),
    OpCase("flip", lambda x: oar.flip(x, 0), lambda x: np.flip(x, 0), [rand(0, 3)], id="flip_empty"),
    OpCase("flip", lambda x: oar.flip(x, [0, 1]), lambda x: np.flip(x), [bools(2, 3)], dtypes=BOOL, grad=False, id="flip_bool"),
    OpCase("roll", lambda x: oar.roll(x, 2), lambda x: np.roll(x, 2), [rand(2, 3)], dtypes=ALL_FLOATS, id="roll_flattened"),
    OpCase("roll", lambda x: oar.roll(x, [1, -2], axis=[0, -1]), lambda x: np.roll(x, (1, -2), (0, -1)), [rand(2, 3, 4)], id="roll_axes"),
    OpCase("roll", lambda x: x.roll(-4, axis=1), lambda x: np.roll(x, -4, 1), [rand(2, 3)], id="roll_more_than_size"),
    OpCase("roll", lambda x: oar.roll(x, 1), lambda x: x, [rand()], id="roll_0d"),
    OpCase("roll", lambda x: oar.roll(x, 1, 0), lambda x: x, [rand(0, 2)], id="roll_empty"),
    OpCase("roll", lambda x: oar.roll(x, 1, 0), lambda x: np.roll(x, 1, 0), [ints(3, 2)], dtypes=INT, grad=False, id="roll_int64"),
]

SLICE = [
    OpCase("slice", lambda x: oar.slice(x, [0, 1], [1, 0], [2, 3]), lambda x: x[1:2, 0:3], [rand(2, 4)], dtypes=ALL_FLOATS),
    OpCase("slice", lambda x: oar.slice(x, [1, -1], [-100, -3], [1000, -1]), lambda x: x[:, -100:1000, -3:-1], [rand(2, 3, 4)], id="slice_clamps"),
    OpCase("slice", lambda x: x.slice([0], [3], [1]), lambda x: x[3:1], [rand(4, 2)], id="slice_empty_result"),
    OpCase("slice", lambda x: oar.slice(x, [1], [1], [2]), lambda x: x[:, 1:2], [rand(0, 3)], id="slice_empty"),
    OpCase("slice", lambda x: oar.slice(x, [0], [1], [3]), lambda x: x[1:3], [ints(4, 2)], dtypes=INT, grad=False, id="slice_int64"),
    OpCase("strided_slice", lambda x: oar.strided_slice(x, [0, 1], [0, 1], [3, 6], [2, 2]),
           lambda x: _slice_ref(x, [0, 1], [0, 1], [3, 6], [2, 2]), [rand(3, 6)], dtypes=ALL_FLOATS),
    OpCase("strided_slice", lambda x: oar.strided_slice(x, [1, 2], [2, -1], [-100, 0], [-1, -2]),
           lambda x: _slice_ref(x, [1, 2], [2, -1], [-100, 0], [-1, -2]), [rand(2, 3, 5)], id="strided_slice_negative_strides"),
    OpCase("strided_slice", lambda x: x.strided_slice([-1], [1], [100], [3]), lambda x: x[:, 1::3], [rand(2, 6)], id="strided_slice_step_past_end"),
    OpCase("strided_slice", lambda x: oar.strided_slice(x, [0], [5], [-10], [-4]), lambda x: x[5:-10:-4], [rand(6, 2)], id="strided_slice_negative_step_4"),
    OpCase("strided_slice", lambda x: oar.strided_slice(x, [0], [0], [2], [-1]), lambda x: x[0:2:-1], [rand(3, 2)], id="strided_slice_empty_result"),
    OpCase("strided_slice", lambda x: oar.strided_slice(x, [0], [3], [0], [-1]), lambda x: x[3:0:-1], [rand(4, 0)], id="strided_slice_empty"),
    OpCase("strided_slice", lambda x: oar.strided_slice(x, [0], [-1], [-5], [-2]), lambda x: x[-1:-5:-2], [bools(5)], dtypes=BOOL,
           grad=False, id="strided_slice_bool"),
]

PAD = [
    OpCase("pad", lambda x: pad_axes(x, [1, 0, 2, 1], value=1.5), lambda x: _pad_ref(x, [1, 0, 2, 1], value=1.5), [rand(2, 3)], dtypes=ALL_FLOATS),
    OpCase("pad", lambda x: pad_axes(x, [1, 2, 2, 1], mode="reflect"), lambda x: _pad_ref(x, [1, 2, 2, 1], "reflect"), [rand(3, 4)], id="pad_reflect"),
    OpCase("pad", lambda x: pad_axes(x, [0, 0, 2, 3], mode="replicate"), lambda x: _pad_ref(x, [0, 0, 2, 3], "replicate"), [rand(2, 3)], id="pad_replicate"),
    OpCase("pad", lambda x: pad_axes(x, [1, 2, 3, 1], mode="circular"), lambda x: _pad_ref(x, [1, 2, 3, 1], "circular"), [rand(2, 3)], id="pad_circular"),
    OpCase("pad", lambda x: pad_axes(x, [0, 1, 2, 0, 1, 1], mode="reflect"), lambda x: _pad_ref(x, [0, 1, 2, 0, 1, 1], "reflect"),
           [rand(2, 3, 2)], dtypes=("float64", "bfloat16"), id="pad_reflect_3d"),
    OpCase("pad", lambda x: pad_axes(x, [2, 0, 1, 1]), lambda x: _pad_ref(x, [2, 0, 1, 1]), [rand(0, 3)], id="pad_empty"),
    OpCase("pad", lambda x: pad_axes(x, [1, 1], value=7), lambda x: _pad_ref(x, [1, 1], value=7), [ints(3)], dtypes=INT, grad=False, id="pad_int64"),
    OpCase("pad", lambda x: pad_axes(x, [1, 0, 0, 2], mode="circular"), lambda x: _pad_ref(x, [1, 0, 0, 2], "circular"), [bools(2, 3)],
           dtypes=BOOL, grad=False, id="pad_circular_bool"),
]

TRIANGLE = [
    OpCase("tril", oar.tril, np.tril, [rand(3, 4)], dtypes=ALL_FLOATS),
    OpCase("tril", lambda x: x.tril(diagonal=1), lambda x: np.tril(x, 1), [rand(2, 3, 3)], id="tril_batched_upper_diagonal"),
    OpCase("tril", lambda x: oar.tril(x, -1), lambda x: np.tril(x, -1), [rand(0, 3)], id="tril_empty"),
    OpCase("tril", oar.tril, np.tril, [bools(3, 3)], dtypes=BOOL, grad=False, id="tril_bool"),
    OpCase("triu", oar.triu, np.triu, [rand(4, 3)], dtypes=ALL_FLOATS),
    OpCase("triu", lambda x: oar.triu(x, -1), lambda x: np.triu(x, -1), [rand(2, 3, 4)], id="triu_batched_lower_diagonal"),
    OpCase("triu", lambda x: x.triu(2), lambda x: np.triu(x, 2), [ints(3, 3)], dtypes=INT, grad=False, id="triu_int64"),
]

CASES = RESHAPE + PERMUTE + JOIN + SPLIT + REPEAT + REORDER + SLICE + PAD + TRIANGLE

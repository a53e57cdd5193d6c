"""``convert_to_mixed_precision``: a saved model rewritten to compute, and store its weights, in
float16 or bfloat16, as Paddle Inference's function.

The saved model is loaded (``oar.jit.load``), its parameters cast to the low dtype, and it is
captured again under oar-amp's ``auto_cast(level='O2', use_promote=False)``: every op computes in
the low dtype except the black-listed ones (``black_list``, by oar's or Paddle's op names, plus
Paddle's extra black list: embedding, interpolation, scatter), which get float32 inputs through
cast nodes of the program. The parameters that a black-listed op reads stay float32 (with the
others of the sublayer that owns them). With ``keep_io_types`` the model still takes and returns
float32; without, its floating inputs and outputs are in the low dtype.

Differences from Paddle: ``backend`` is checked but does not change the result (oar's saved
programs are device-independent); the converted model is an oar model (``.json`` +
``.pdiparams``); it needs oar-amp (from a clone of oar: ``pip install ./plugins/oar-amp``), which oar-serving does not depend on.
"""

from __future__ import annotations

import os

import oar
from oar.errors import ArgumentError
from oar.inference.config import PlaceType, PrecisionType
from oar.static import InputSpec
from oar.utils import try_import

PROGRAM_SUFFIX, PARAMS_SUFFIX = ".json", ".pdiparams"
_LOW_DTYPES = {PrecisionType.Half: "float16", PrecisionType.Bfloat16: "bfloat16"}

__all__ = ["convert_to_mixed_precision"]


def _prefix(path, suffix: str, argument: str) -> str:
    path = os.fspath(path)
    if not path.endswith(suffix):
        raise ArgumentError(f"convert_to_mixed_precision: {argument} must end with {suffix!r} (a model saved by "
                            f"oar.jit.save), got {path!r}")
    return path[: -len(suffix)]


def _kept_float32(loaded, black_ops: set) -> list:
    """The sublayers whose parameters a black-listed op reads: they stay float32."""
    program = loaded.program()
    users = program.users()
    read_by_black = {name for name, value in program.params.items()
                     if any(node.op in black_ops for node in users.get(value, []))}
    owners = dict(loaded.named_sublayers(include_self=True))
    kept = []
    for name in read_by_black:
        owner = owners.get(name.rpartition(".")[0], loaded)
        if all(owner is not k for k in kept):
            kept.append(owner)
    return kept


def convert_to_mixed_precision(model_file, params_file, mixed_model_file, mixed_params_file, mixed_precision,
                               backend, keep_io_types=True, black_list=set(), **kwargs) -> None:  # noqa: B006 - Paddle's default
    """Write ``mixed_model_file``/``mixed_params_file``: the model of ``model_file``/``params_file``
    computing in ``mixed_precision`` (``PrecisionType.Half`` or ``Bfloat16``), with the ops of
    ``black_list`` (and ``white_list=`` in ``kwargs``, forced low) as Paddle's function.

    >>> import os, tempfile, numpy as np, oar
    >>> import oar.inference as paddle_infer
    >>> from oar.static import InputSpec
    >>> folder = tempfile.mkdtemp()
    >>> net = oar.nn.Sequential(oar.nn.Linear(3, 4), oar.nn.Softmax())
    >>> oar.jit.save(net, os.path.join(folder, "model"), input_spec=[InputSpec([None, 3], "float32", "x")])
    >>> paddle_infer.convert_to_mixed_precision(
    ...     os.path.join(folder, "model.json"), os.path.join(folder, "model.pdiparams"),
    ...     os.path.join(folder, "mixed.json"), os.path.join(folder, "mixed.pdiparams"),
    ...     paddle_infer.PrecisionType.Half, paddle_infer.PlaceType.CPU)
    >>> mixed = oar.jit.load(os.path.join(folder, "mixed"))
    >>> [p.dtype for p in mixed.parameters()], mixed(oar.ones([2, 3])).dtype
    ([oar.float16, oar.float16], oar.float32)
    """
    white_list = kwargs.pop("white_list", set())
    if kwargs:
        raise ArgumentError(f"convert_to_mixed_precision: unsupported arguments {sorted(kwargs)} (Paddle's kwargs "
                            f"take 'white_list')")
    if mixed_precision not in _LOW_DTYPES:
        raise ArgumentError(f"convert_to_mixed_precision: mixed_precision must be PrecisionType.Half or "
                            f"PrecisionType.Bfloat16, got {mixed_precision!r}")
    if not isinstance(backend, PlaceType):
        raise ArgumentError(f"convert_to_mixed_precision: backend must be an oar.inference.PlaceType, got "
                            f"{backend!r}")
    dtype = _LOW_DTYPES[mixed_precision]
    prefix = _prefix(model_file, PROGRAM_SUFFIX, "model_file")
    mixed_prefix = _prefix(mixed_model_file, PROGRAM_SUFFIX, "mixed_model_file")
    if os.path.abspath(os.fspath(mixed_params_file)) != os.path.abspath(mixed_prefix + PARAMS_SUFFIX):
        raise ArgumentError(f"convert_to_mixed_precision: mixed_params_file must be {mixed_prefix + PARAMS_SUFFIX!r} "
                            f"(oar.jit.save writes the parameters next to the program), got {mixed_params_file!r}")
    amp = try_import("oar.amp", "convert_to_mixed_precision casts through oar-amp, which is not installed: "
                                "from a clone of oar: pip install ./plugins/oar-amp")
    loaded = oar.jit.load(prefix, params_filename=os.path.relpath(os.fspath(params_file), os.path.dirname(prefix)))
    loaded.eval()
    black = set(black_list) | set(amp.amp_lists.EXTRA_BLACK_LIST)
    black_ops = amp.amp_lists.resolve_all(black) - amp.amp_lists.resolve_all(white_list)
    kept = _kept_float32(loaded, black_ops)
    if dtype == "float16":
        loaded.float16(excluded_layers=kept)
    else:
        loaded.bfloat16(excluded_layers=kept)
    specs = loaded.input_spec
    if not keep_io_types:
        specs = [InputSpec(s.shape, dtype if s.dtype.is_floating else s.dtype, s.name) for s in specs]
    mixed = _MixedPrecision(loaded, amp, dtype, sorted(black_ops), sorted(amp.amp_lists.resolve_all(white_list)),
                            "float32" if keep_io_types else dtype)
    mixed.eval()
    parent = os.path.dirname(mixed_prefix)
    if parent:
        os.makedirs(parent, exist_ok=True)
    oar.jit.save(mixed, mixed_prefix, input_spec=specs)


class _MixedPrecision(oar.nn.Layer):
    """The loaded model run under auto_cast, its floating outputs cast to ``output_dtype``."""

    def __init__(self, inner, amp, dtype: str, black: list, white: list, output_dtype: str):
        super().__init__()
        self.inner = inner
        self._amp, self._settings, self._output_dtype = amp, (dtype, black, white), output_dtype

    def forward(self, *inputs):
        dtype, black, white = self._settings
        # The loaded program takes its saved dtypes (exact: a low dtype widens to float32 without loss).
        inputs = [x.astype(spec.dtype) if isinstance(x, oar.Tensor) and x.dtype != spec.dtype else x
                  for x, spec in zip(inputs, self.inner.input_spec)]
        with self._amp.auto_cast(level="O2", dtype=dtype, custom_black_list=black or None,
                                 custom_white_list=white or None, use_promote=False):
            out = self.inner(*inputs)
        return self._cast(out)

    def _cast(self, out):
        if isinstance(out, (list, tuple)):
            return type(out)(self._cast(o) for o in out)
        if isinstance(out, oar.Tensor) and out.dtype.is_floating and out.dtype.name != self._output_dtype:
            return out.astype(self._output_dtype)
        return out

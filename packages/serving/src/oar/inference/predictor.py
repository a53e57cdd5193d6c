"""``oar.inference``'s Predictor: Paddle Inference's ``create_predictor``, handles and pool.

A predictor runs a saved model through a serving backend (``Config.set_serving_backend``; oar's
executor by default). Inputs are checked against the saved spec before anything runs: a wrong
rank, size or dtype, or an input never fed, is an error naming the input, what was given and what
the model expects, and the predictor keeps working afterwards.
"""

from __future__ import annotations

import contextlib
import ctypes
import enum
import os
import threading

import numpy as np

import oar
from oar.errors import ArgumentError, DTypeError
from oar.inference.config import Config, serving_backend
from oar.static.passes import observe


class DataType(enum.Enum):
    """A handle's element type (Paddle's ``paddle.inference.DataType``)."""

    FLOAT32 = "float32"
    FLOAT64 = "float64"
    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"
    INT64 = "int64"
    INT32 = "int32"
    INT16 = "int16"
    INT8 = "int8"
    UINT8 = "uint8"
    BOOL = "bool"


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of an oar dtype name (``"bfloat16"`` is ml_dtypes')."""
    return getattr(oar, name).np


def fmt_spec(spec: dict) -> str:
    return f"{spec['dtype']}{list(spec['shape'])}"


def check_input(spec: dict, array: np.ndarray) -> None:
    """A ValueError (rank or size) or a TypeError (dtype) naming the input when ``array`` does not
    fit the saved ``spec`` (-1: any size)."""
    expected = spec["shape"]
    if array.dtype == numpy_dtype(spec["dtype"]) and array.ndim == len(expected) and \
            all(d == -1 or d == s for d, s in zip(expected, array.shape)):
        return
    given = f"{array.dtype}{list(array.shape)}"
    where = f"input {spec['name']!r}: the model expects {fmt_spec(spec)} (the saved spec; -1: any size)"
    if array.dtype != numpy_dtype(spec["dtype"]):
        raise DTypeError(f"{where}, got {given}: convert with array.astype('{spec['dtype']}')")
    if array.ndim != len(expected):
        raise ArgumentError(f"{where}, got {given}: rank {array.ndim} where the model takes rank {len(expected)}")
    bad = next(i for i, (d, s) in enumerate(zip(expected, array.shape)) if d != -1 and d != s)
    raise ArgumentError(f"{where}, got {given}: dim {bad} is {array.shape[bad]}, not {expected[bad]}")


class InputCheck:
    """``check_input`` for one spec, with what it compares worked out once (a batch-1 request's
    whole run is tens of microseconds)."""

    __slots__ = ("spec", "dtype", "rank", "fixed")

    def __init__(self, spec: dict):
        self.spec = spec
        self.dtype = numpy_dtype(spec["dtype"])
        self.rank = len(spec["shape"])
        self.fixed = [(i, d) for i, d in enumerate(spec["shape"]) if d != -1]

    def __call__(self, array: np.ndarray) -> None:
        if array.dtype != self.dtype or array.ndim != self.rank or any(array.shape[i] != d for i, d in self.fixed):
            check_input(self.spec, array)  # raises, naming what differs


class Tensor:
    """An input or output handle of a Predictor (Paddle's ``paddle.inference.Tensor``)."""

    def __init__(self, spec: dict, is_input: bool):
        self._spec = spec
        self._is_input = is_input
        self._shape: list[int] | None = None
        self._data: np.ndarray | None = None

    def name(self) -> str:
        return self._spec["name"]

    def type(self) -> DataType:
        return DataType(self._spec["dtype"])

    def shape(self) -> list[int]:
        """The shape of the data held, else the one ``reshape`` set, else the saved spec's."""
        if self._data is not None:
            return list(self._data.shape)
        return list(self._shape) if self._shape is not None else list(self._spec["shape"])

    def reshape(self, shape) -> None:
        """Declare the shape of the data ``copy_from_cpu`` will bring (checked against the spec)."""
        if not self._is_input:
            raise ArgumentError(f"output {self.name()!r}: reshape is for input handles")
        shape = [int(d) for d in shape]
        check_input(self._spec, np.empty([max(d, 0) for d in shape], dtype=numpy_dtype(self._spec["dtype"])))
        self._shape, self._data = shape, None

    def copy_from_cpu(self, data) -> None:
        """Feed ``data`` (a numpy array of the input's dtype and a shape the spec allows)."""
        if not self._is_input:
            raise ArgumentError(f"output {self.name()!r}: copy_from_cpu is for input handles")
        array = np.asarray(data.numpy(copy=False) if isinstance(data, oar.Tensor) else data)
        if self._shape is not None and list(array.shape) != self._shape:
            raise ArgumentError(f"input {self.name()!r}: copy_from_cpu got shape {list(array.shape)} after "
                                f"reshape({self._shape}); give data of the reshaped shape or reshape again")
        check_input(self._spec, array)
        self._data = np.ascontiguousarray(array).copy()

    def share_external_data(self, tensor) -> None:
        """Feed an ``oar.Tensor`` (or array) without copying it."""
        array = np.asarray(tensor.numpy(copy=False) if isinstance(tensor, oar.Tensor) else tensor)
        check_input(self._spec, array)
        self._shape, self._data = None, array

    def copy_to_cpu(self) -> np.ndarray:
        """The data as a new numpy array (an output's after ``run()``)."""
        if self._data is None:
            what = "call predictor.run() first" if not self._is_input else "feed it with copy_from_cpu first"
            raise ArgumentError(f"{'input' if self._is_input else 'output'} {self.name()!r} holds no data: {what}")
        return self._data.copy()

    def lod(self) -> list:
        return []

    def __repr__(self) -> str:
        return f"<oar.inference.Tensor {self.name()!r} {fmt_spec(self._spec)}>"


def load_runner(config: Config):
    """The serving backend's runner for ``config``'s model."""
    backend = serving_backend(config.serving_backend(), "create_predictor")
    program_file, params_file = config.model_files()
    settings = config.to_dict()
    settings["params_file"] = params_file
    if config._threads is not None:
        oar.set_num_threads(config._threads)
    return backend(program_file, settings)


class Predictor:
    """Runs a saved model: by handles (``get_input_handle(name).copy_from_cpu(a)``, ``run()``,
    ``get_output_handle(name).copy_to_cpu()``) or by lists (``run([a])`` returns the outputs as
    ``oar.Tensor``s, Paddle 3's form). Made by ``create_predictor(config)``.

    >>> import os, tempfile, numpy as np, oar
    >>> from oar.static import InputSpec
    >>> from oar.inference import Config, create_predictor
    >>> prefix = os.path.join(tempfile.mkdtemp(), "model")
    >>> oar.jit.save(oar.nn.Linear(3, 2), prefix, input_spec=[InputSpec([None, 3], "float32", "x")])
    >>> predictor = create_predictor(Config(prefix))
    >>> handle = predictor.get_input_handle("x")
    >>> handle.reshape([4, 3])
    >>> handle.copy_from_cpu(np.ones([4, 3], "float32"))
    >>> predictor.run()
    True
    >>> predictor.get_output_handle("output_0").copy_to_cpu().shape
    (4, 2)
    """

    def __init__(self, config: Config, runner=None):
        self._config = config
        self._runner = runner if runner is not None else load_runner(config)
        self._inputs = {s["name"]: Tensor(s, True) for s in self._runner.input_specs}
        self._outputs = {s["name"]: Tensor(s, False) for s in self._runner.output_specs}
        self._hooks: list = []
        self._checks = [InputCheck(s) for s in self._runner.input_specs]
        self._run_list = getattr(self._runner, "run_list", None)

    # -- names and handles ----------------------------------------------------------------------
    def get_input_names(self) -> list[str]:
        return list(self._inputs)

    def get_output_names(self) -> list[str]:
        return list(self._outputs)

    def get_input_handle(self, name: str) -> Tensor:
        if name not in self._inputs:
            raise ArgumentError(f"get_input_handle: the model has no input {name!r}; its inputs are "
                                f"{self.get_input_names()}")
        return self._inputs[name]

    def get_output_handle(self, name: str) -> Tensor:
        if name not in self._outputs:
            raise ArgumentError(f"get_output_handle: the model has no output {name!r}; its outputs are "
                                f"{self.get_output_names()}")
        return self._outputs[name]

    def get_input_specs(self) -> list[dict]:
        """The saved inputs: ``[{"name", "shape" (-1: any size), "dtype"}]`` (oar's addition)."""
        return [dict(s) for s in self._runner.input_specs]

    def get_output_specs(self) -> list[dict]:
        return [dict(s) for s in self._runner.output_specs]

    # -- running --------------------------------------------------------------------------------
    def run(self, inputs=None):
        """With no argument: run on the fed input handles (True when done). With a list of arrays
        or tensors in ``get_input_names()`` order: the outputs as a list of ``oar.Tensor``."""
        if inputs is None:
            arrays = []
            for name, handle in self._inputs.items():
                if handle._data is None:
                    raise ArgumentError(f"run: input {name!r} was not fed; call get_input_handle({name!r})"
                                        f".copy_from_cpu(array) with a {fmt_spec(handle._spec)} array first")
                arrays.append(handle._data)
            self._run_arrays(arrays)
            return True
        if not isinstance(inputs, (list, tuple)):
            raise ArgumentError(f"run: inputs must be a list of arrays or tensors in the order "
                                f"{self.get_input_names()}, got {type(inputs).__name__}")
        if len(inputs) != len(self._inputs):
            raise ArgumentError(f"run: the model takes {len(self._inputs)} input(s) {self.get_input_names()}, "
                                f"got {len(inputs)}")
        arrays = []
        for check, x in zip(self._checks, inputs):
            array = np.asarray(x.numpy(copy=False) if isinstance(x, oar.Tensor) else x)
            check(array)
            arrays.append(array)
        return [oar.to_tensor(a) for a in self._run_arrays(arrays)]

    def infer(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """Run on numpy arrays in ``get_input_names()`` order (checked against the saved spec) and
        return numpy arrays, leaving the handles untouched (oar's addition, what the server calls:
        one predictor may serve several threads this way)."""
        if len(arrays) != len(self._inputs):
            raise ArgumentError(f"infer: the model takes {len(self._inputs)} input(s) {self.get_input_names()}, "
                                f"got {len(arrays)}")
        for check, array in zip(self._checks, arrays):
            check(array)
        if self._hooks:
            with self._hooked():
                return self._call_runner(arrays)
        return self._call_runner(arrays)

    def _call_runner(self, arrays) -> list[np.ndarray]:
        if self._run_list is not None:
            return self._run_list(list(arrays))
        return list(self._runner(dict(zip(self._inputs, arrays))).values())

    def _run_arrays(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        with self._hooked():
            outputs = self._call_runner(arrays)
        for handle, array in zip(self._outputs.values(), outputs):
            handle._data = np.asarray(array)
        return [h._data for h in self._outputs.values()]

    def register_output_hook(self, hookfunc) -> None:
        """Call ``hookfunc(op_type, value_name, tensor)`` after each op of every run (Paddle's
        hook on intermediate outputs; the oar serving backend only)."""
        self._hooks.append(hookfunc)

    @contextlib.contextmanager
    def _hooked(self):
        if not self._hooks:
            yield
            return

        def call_hooks(program, node, outputs):
            for vid, array in zip(node.outputs, outputs):
                if array is not None:
                    for hook in self._hooks:
                        hook(node.op, f"%{vid}", oar.to_tensor(array))

        with observe(call_hooks):
            yield

    # -- copies and memory ----------------------------------------------------------------------
    def clone(self) -> Predictor:
        """A predictor sharing this one's weights, for another thread (a backend's runner without
        ``clone()`` is shared: the Runner protocol lets several threads call it)."""
        clone_runner = getattr(self._runner, "clone", None)
        clone = Predictor(self._config, runner=clone_runner() if clone_runner is not None else self._runner)
        clone._hooks = list(self._hooks)
        return clone

    def clear_intermediate_tensor(self) -> None:
        for handle in self._outputs.values():
            handle._data = None

    def try_shrink_memory(self) -> int:
        """Drop the held outputs and give freed heap memory back to the system; returns the bytes
        the process's resident memory shrank by (0 where it cannot tell)."""
        self.clear_intermediate_tensor()
        before = _resident_bytes()
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).malloc_trim(0)  # glibc: oar keeps freed memory for reuse (oar-core's docs)
        return max(0, before - _resident_bytes())

    def get_config(self) -> Config:
        return self._config


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def create_predictor(config: Config) -> Predictor:
    """A Predictor for ``config``'s model (Paddle's ``paddle.inference.create_predictor``)."""
    if not isinstance(config, Config):
        raise ArgumentError(f"create_predictor: expected an oar.inference.Config, got {type(config).__name__}")
    return Predictor(config.copy())


class PredictorPool:
    """``size`` predictors sharing one model's weights, one per thread (Paddle's PredictorPool).

    >>> # pool = PredictorPool(config, 4); pool.retrive(i).run([...]) in thread i
    """

    def __init__(self, config: Config, size: int = 1):
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ArgumentError(f"PredictorPool: size must be an int >= 1, got {size!r}")
        first = create_predictor(config)
        self._predictors = [first] + [first.clone() for _ in range(size - 1)]
        self._lock = threading.Lock()

    def retrive(self, idx: int) -> Predictor:
        """The ``idx``-th predictor (Paddle's spelling; ``retrieve`` is the same)."""
        if not 0 <= idx < len(self._predictors):
            raise ArgumentError(f"PredictorPool.retrive: idx {idx} is out of range for a pool of "
                                f"{len(self._predictors)}")
        return self._predictors[idx]

    retrieve = retrive

    def __len__(self) -> int:
        return len(self._predictors)


def get_version() -> str:
    """The version of oar that runs the predictors."""
    return f"oar {oar.__version__}"


def get_num_bytes_of_data_type(dtype: DataType) -> int:
    """The bytes of one element of ``dtype`` (a ``DataType``), as Paddle's function.

    Paddle 3.3.1 returns -1 for FLOAT64, FLOAT16, BFLOAT16, INT8 and BOOL (its switch lists
    FLOAT32, INT64, INT32 and UINT8 only); oar gives every type's size.

    >>> import oar.inference as paddle_infer
    >>> paddle_infer.get_num_bytes_of_data_type(paddle_infer.DataType.FLOAT16)
    2
    """
    if not isinstance(dtype, DataType):
        raise ArgumentError(f"get_num_bytes_of_data_type: expected an oar.inference.DataType, got "
                            f"{type(dtype).__name__} ({dtype!r})")
    return int(numpy_dtype(dtype.value).itemsize)

"""``oar.jit.save`` / ``oar.jit.load``: a captured program and its parameters on disk.

``save(layer, prefix)`` writes two files, each atomically (temporary file, fsync, rename):

- ``prefix.json``: ``{"format": "oar.jit", "version": 1, "oar_version": ..., "program": <the
  program, schema oar.program>, "input_spec": [...], "output_spec": [{"name": "output_0", ...}, ...], "requires":
  {"plugins": {plugin: {"package": ..., "version": ...}}, "ops": {op: plugin}}}``;
- ``prefix.pdiparams``: the parameters, buffers and constants in the safetensors format, written
  by ``oar.save`` (checksummed; never pickle).

``load(prefix)`` checks the format version, that every op is registered (naming the package to
install otherwise) and that the parameters fit the program, and returns a ``TranslatedLayer``.
"""

from __future__ import annotations

import json
import os
import warnings

from oar._engine.registries import OPS
from oar._engine.serialization import atomic_file
from oar._engine.serialization import load as oar_load
from oar._engine.serialization import save as oar_save
from oar._graph.passes import optimize
from oar._graph.program import Program, check_ops_registered, iter_refs
from oar._version import __version__
from oar.errors import ArgumentError, SerializationError
from oar.jit.api import StaticFunction, _from_specs, _is_layer, as_input_specs
from oar.jit.translated_layer import translated_layer_class

FORMAT = "oar.jit"
VERSION = 1
PROGRAM_SUFFIX = ".json"
PARAMS_SUFFIX = ".pdiparams"


def _distribution_of(plugin: str) -> dict:
    """``{"package": ..., "version": ...}`` of the distribution whose entry point ``plugin`` is."""
    if plugin == "oar.core":
        return {"package": "oar-core", "version": __version__}
    from importlib.metadata import entry_points  # deferred (import time): jit.save alone reads it

    for ep in entry_points(group="oar"):
        if ep.name == plugin and getattr(ep, "dist", None) is not None:
            return {"package": ep.dist.name, "version": ep.dist.version}
    return {"package": plugin, "version": ""}


def requirements(program: Program) -> dict:
    """The plugins (with their package and version) that provide the program's ops, from the op
    registry: which plugin registered each op."""
    by_op = {name: OPS.source_of(name) for name in program.op_names()}
    plugins = {src: _distribution_of(src) for src in sorted(set(by_op.values()))}
    return {"plugins": plugins, "ops": by_op}


def _static_function(layer_or_fn, input_spec):
    if isinstance(layer_or_fn, StaticFunction):
        fn = layer_or_fn
        if input_spec is not None:
            fn = StaticFunction(fn.dygraph_function, input_spec, fn._build_strategy, fn._full_graph, instance=fn._instance)
        return fn
    if _is_layer(layer_or_fn):
        forward = layer_or_fn.forward
        if isinstance(forward, StaticFunction):
            if input_spec is None:
                return forward
            return StaticFunction(forward.dygraph_function, input_spec, forward._build_strategy, forward._full_graph,
                                  instance=layer_or_fn)
        func = getattr(forward, "__func__", None)
        if func is None:
            raise ArgumentError(f"jit.save: {type(layer_or_fn).__name__}.forward is not a method")
        return StaticFunction(func, input_spec, instance=layer_or_fn)
    if callable(layer_or_fn):
        return StaticFunction(layer_or_fn, input_spec)
    raise ArgumentError(f"jit.save: expected a Layer, a to_static function or a function, got {type(layer_or_fn).__name__}")


def _write_json_atomic(path: str, data: dict) -> None:
    with atomic_file(path, "w", encoding="utf-8") as f:
        json.dump(data, f, separators=(",", ":"), allow_nan=False)


def _recaptured(fn: StaticFunction, dynamic_batch: bool):
    """``fn``'s last call captured again in the layer's current mode (train or eval), with the first
    dim of every input dynamic if ``dynamic_batch``: (program, input spec leaves), or None when the
    program depends on that dim's size."""
    args, kwargs = as_input_specs(fn._last_call, dynamic_batch)
    spec = list(args) + [kwargs[k] for k in sorted(kwargs)]
    again = StaticFunction(fn.dygraph_function, spec, fn._build_strategy, fn._full_graph, instance=fn._instance)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a size-dependent capture is detected below
        program = again.get_concrete_program(*_from_specs(args), **_from_specs(kwargs))
    # A first dim the program specialized, or one Python decided on (``if x.shape[0] == 5``: the
    # saved program would keep the branch taken for the example size), is not dynamic.
    if dynamic_batch and (again._last.shapes is not None or any(
            program.values[v].shape and program.values[v].shape[0] is not None for v in program.feeds)):
        return None
    return program, again._spec_leaves


def _program_to_save(fn: StaticFunction, input_spec, what: str):
    """The program ``save`` writes for ``fn`` and its input spec leaves: from ``input_spec``, from
    the function's own, or from its last call with the batch dim made dynamic, as Paddle's jit.save
    keeps the batch size of a model traced without input_spec."""
    if input_spec is None and fn._input_spec is None:
        if fn._last_call is None:
            raise ArgumentError(f"jit.save: give input_spec (a list of oar.static.InputSpec) for {what}, or call "
                                f"it once before saving, so that the inputs are known")
        saved = _recaptured(fn, dynamic_batch=True)
        if saved is not None:
            return saved
        program, leaves = _recaptured(fn, dynamic_batch=False)
        sizes = [program.values[v].shape[0] for v in program.feeds if program.values[v].shape]
        warnings.warn(f"jit.save: {what} is saved for batch size {sizes[0] if sizes else '?'} only: its program "
                      f"depends on the size of the first dim (Python code decides on x.shape[0] or reshapes to "
                      f"it; a reshape to -1 keeps it dynamic)", UserWarning, stacklevel=3)
        return program, leaves
    program = fn.get_concrete_program() if (input_spec is not None or fn._last is None) else fn.concrete_program
    return program, fn._spec_leaves


def _other_static_methods(layer) -> dict:
    """The Layer's ``@to_static`` methods other than ``forward``, bound to it, by name."""
    names = {n for cls in type(layer).__mro__ for n, v in vars(cls).items() if isinstance(v, StaticFunction)}
    names |= {n for n, v in vars(layer).items() if isinstance(v, StaticFunction)}
    names.discard("forward")
    return {n: getattr(layer, n) for n in sorted(names)}


def _entry(program: Program, leaves: list) -> dict:
    """What the document holds of one saved program: the program, its inputs and its outputs."""
    # The feeds' shapes as captured: a dim the program specialized (see to_static) is static here.
    specs = [{"name": program.values[v].name, "shape": [-1 if d is None else d for d in program.values[v].shape],
              "dtype": program.values[v].dtype.name,
              "stop_gradient": leaves[i].stop_gradient if i < len(leaves) else True}
             for i, v in enumerate(program.feeds)]
    # Outputs are named by position: the names the Predictor and the server give them.
    outputs = [{"name": f"output_{i}", "shape": [-1 if d is None else d for d in program.values[r.id].shape],
                "dtype": program.values[r.id].dtype.name} for i, r in enumerate(iter_refs(program.outputs))]
    return {"program": program.to_json(inline_constants=False), "input_spec": specs, "output_spec": outputs}


def save(layer, path: str, input_spec=None, **configs) -> None:
    """Capture ``layer`` (a Layer, a ``to_static`` function or a function) and write
    ``path + '.json'`` (the program and what it needs) and ``path + '.pdiparams'`` (its
    parameters, safetensors), as ``paddle.jit.save``.

    ``input_spec`` (a list of ``InputSpec``) is needed unless ``layer``'s to_static forward has
    one or was called before; then, as Paddle's, the saved model takes any size of the first dim
    (unless the program depends on it: a warning says so). A Layer's other ``@to_static`` methods
    are saved too, each from its own input_spec or last call, and are methods of the loaded model.
    The layer's current mode is captured: call ``layer.eval()`` first for an inference model. The
    capture runs without side effects (no running statistics move).

    >>> import oar, os, tempfile
    >>> from oar.static import InputSpec
    >>> f = oar.jit.to_static(lambda x: oar.exp(x) + 1.0, input_spec=[InputSpec([None, 2], name="x")])
    >>> prefix = os.path.join(tempfile.mkdtemp(), "model")
    >>> oar.jit.save(f, prefix)
    >>> loaded = oar.jit.load(prefix)
    >>> loaded(oar.zeros([3, 2])).tolist()
    [[2.0, 2.0], [2.0, 2.0], [2.0, 2.0]]
    """
    if configs:
        raise ArgumentError(f"jit.save: unsupported arguments {sorted(configs)}")
    if not isinstance(path, (str, os.PathLike)) or not os.path.basename(os.fspath(path)):
        raise ArgumentError(f"jit.save: path must be a file prefix such as 'out/model', got {path!r}")
    path = os.fspath(path)
    fn = _static_function(layer, input_spec)
    programs = {"forward": _program_to_save(fn, input_spec, fn._name)}
    if _is_layer(layer):
        for name, method in _other_static_methods(layer).items():
            try:
                programs[name] = _program_to_save(method, None, f"{type(layer).__name__}.{name}")
            except ArgumentError as exc:
                warnings.warn(f"{exc}; {type(layer).__name__}.{name} is not saved", UserWarning, stacklevel=2)
    # Fine-tuning must still work on the loaded model: only the passes that keep the training
    # semantics run now; the inference passes run when the loaded model infers.
    programs = {name: (optimize(program, 1, inference=False), leaves) for name, (program, leaves) in programs.items()}
    program = programs["forward"][0]
    requires: dict = {"plugins": {}, "ops": {}}
    for other, _ in programs.values():
        for key, value in requirements(other).items():
            requires[key].update(value)
    document = {"format": FORMAT, "version": VERSION, "oar_version": __version__, **_entry(*programs["forward"]),
                "requires": requires}
    if len(programs) > 1:
        document["methods"] = {name: _entry(*entry) for name, entry in programs.items() if name != "forward"}
    json.dumps(document, allow_nan=False)  # fails here, before any file is written
    params = {}
    for other, _ in programs.values():
        params.update({name: t.numpy(copy=False) for name, t in other.param_tensors.items()})
    state = {"params": params, "constants": dict(program.constant_data)}
    if len(programs) > 1:
        state["method_constants"] = {name: dict(other.constant_data) for name, (other, _) in programs.items()
                                     if name != "forward"}
    oar_save(state, path + PARAMS_SUFFIX)
    _write_json_atomic(path + PROGRAM_SUFFIX, document)


def _read_document(path: str) -> dict:
    where = f"jit.load: {path + PROGRAM_SUFFIX!r}"
    if not os.path.exists(path + PROGRAM_SUFFIX):
        raise FileNotFoundError(f"{where}: no such file (jit.save writes <prefix>{PROGRAM_SUFFIX} and "
                                f"<prefix>{PARAMS_SUFFIX}; give the prefix)")
    try:
        with open(path + PROGRAM_SUFFIX, encoding="utf-8") as f:
            document = json.load(f)
    except (ValueError, UnicodeDecodeError) as exc:
        raise SerializationError(f"{where}: not valid JSON ({exc}): the file is truncated or corrupted") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise SerializationError(f"{where}: not a model written by oar.jit.save (no \"format\": \"{FORMAT}\")")
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise SerializationError(f"{where}: the format version {version!r} is not an int: the file is corrupted")
    if version > VERSION:
        raise SerializationError(f"{where}: written by a newer oar ({document.get('oar_version', 'unknown')}) in "
                                 f"format version {version}; this oar reads version {VERSION} and older: upgrade oar")
    return document


def load(path: str, **configs):
    """Load what ``jit.save`` wrote: a ``TranslatedLayer`` that runs the program with the saved
    parameters, without the original Python class, and that can be fine-tuned.

    A missing op says which package to install; a file from a newer oar says so; a truncated or
    corrupted file raises ``oar.errors.SerializationError``. ``params_filename`` (Paddle's config)
    names the parameters file when it is not ``path + '.pdiparams'`` (relative to ``path``'s folder).
    """

    params_filename = configs.pop("params_filename", None)
    if configs:
        raise ArgumentError(f"jit.load: unsupported arguments {sorted(configs)}")
    path = os.fspath(path)
    params_path = path + PARAMS_SUFFIX
    if params_filename is not None:
        params_path = os.path.join(os.path.dirname(path), os.fspath(params_filename))
    document = _read_document(path)
    where = f"jit.load: {path + PROGRAM_SUFFIX!r}"
    requires = document.get("requires") or {}
    plugins = requires.get("plugins") or {}
    op_sources = {}
    if isinstance(requires.get("ops"), dict):
        for op, plugin in requires["ops"].items():
            entry = plugins.get(plugin) or {}
            op_sources[op] = entry.get("package") or plugin
    data = document.get("program")
    saved = [data] + [m.get("program") for m in (document.get("methods") or {}).values() if isinstance(m, dict)]
    nodes = [n for d in saved if isinstance(d, dict) and isinstance(d.get("nodes"), list) for n in d["nodes"]]
    names = sorted({n.get("op") for n in nodes if isinstance(n, dict) and isinstance(n.get("op"), str)})
    check_ops_registered(names, op_sources, where)
    if not os.path.exists(params_path):
        raise FileNotFoundError(f"jit.load: {params_path!r}: no such file (the parameters jit.save wrote "
                                f"next to {path + PROGRAM_SUFFIX!r})")
    state = oar_load(params_path, return_numpy=True)
    if not isinstance(state, dict) or not isinstance(state.get("params"), dict) or \
            not isinstance(state.get("constants"), dict):
        raise SerializationError(f"jit.load: {params_path!r} does not hold jit.save's parameters")
    program = _read_program(data, state["params"], state["constants"], op_sources, params_path, where)
    methods = {}
    method_constants = state.get("method_constants") or {}
    for name, entry in (document.get("methods") or {}).items():
        if not isinstance(entry, dict) or not isinstance(method_constants.get(name, {}), dict):
            raise SerializationError(f"{where}: the saved method {name!r} is malformed: the file is corrupted")
        method = _read_program(entry.get("program"), state["params"], method_constants.get(name, {}), op_sources,
                               params_path, f"{where} (method {name!r})")
        methods[name] = (method, entry.get("input_spec") or [], entry.get("output_spec") or [])
    specs = document.get("input_spec") or []
    output_specs = document.get("output_spec") or []
    return translated_layer_class()._from_saved(program, state["params"], specs, output_specs, methods)


def _read_program(data, params: dict, constants: dict, op_sources: dict, params_path: str, where: str) -> Program:
    """A saved program, with the check that the parameters file holds each parameter it reads."""
    program = Program.from_json(data, constants=constants, op_sources=op_sources, where=where)
    for name, vid in program.params.items():
        array = params.get(name)
        value = program.values[vid]
        if array is None:
            raise SerializationError(f"jit.load: {params_path!r} has no parameter {name!r} the program "
                                     f"reads: the files do not belong together")
        if tuple(array.shape) != value.shape or array.dtype != value.dtype.np:
            raise SerializationError(f"jit.load: parameter {name!r} is {array.dtype}{list(array.shape)} in "
                                     f"{params_path!r} but the program expects {value.meta!r}")
    return program

"""The Open Inference Protocol (KServe v2) REST messages, with the binary tensor data extension.

An inference request is a JSON object ``{"id", "parameters", "inputs": [{"name", "shape",
"datatype", "data" | "parameters": {"binary_data_size": n}}], "outputs": [{"name",
"parameters": {"binary_data": bool}}]}``. With the binary extension the HTTP body is that JSON
(``Inference-Header-Content-Length`` bytes long) followed by the raw little-endian bytes of each
binary input, in order; outputs asked for as binary come back the same way.

Every problem with a request is a ``RequestError`` whose message names the tensor and says what
was given and what was expected; the server answers it with the protocol's ``{"error": ...}``.
"""

from __future__ import annotations

import json
import math

import numpy as np

from oar.inference.predictor import numpy_dtype

HEADER_LENGTH = "Inference-Header-Content-Length"

# The protocol's datatypes and the numpy dtypes of oar's dtype names.
DATATYPES = {
    "BOOL": "bool", "UINT8": "uint8", "UINT16": "uint16", "UINT32": "uint32", "UINT64": "uint64",
    "INT8": "int8", "INT16": "int16", "INT32": "int32", "INT64": "int64",
    "FP16": "float16", "FP32": "float32", "FP64": "float64", "BF16": "bfloat16",
}
DATATYPE_OF = {v: k for k, v in DATATYPES.items()}


class RequestError(ValueError):
    """A request the protocol or the model cannot take; ``status`` is the HTTP status to answer."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def datatype_of(oar_name: str) -> str:
    """The protocol's datatype of an oar dtype name (``"float32"`` -> ``"FP32"``)."""
    return DATATYPE_OF.get(oar_name, oar_name.upper())


def split_body(body: bytes, header_length: str | None) -> tuple[dict, memoryview]:
    """The request's JSON object and the binary data after it."""
    if header_length is None:
        json_bytes, binary = body, memoryview(b"")
    else:
        try:
            length = int(header_length)
        except ValueError:
            raise RequestError(f"{HEADER_LENGTH} must be an integer, got {header_length!r}") from None
        if not 0 <= length <= len(body):
            raise RequestError(f"{HEADER_LENGTH} is {length} but the body has {len(body)} bytes")
        view = memoryview(body)
        json_bytes, binary = view[:length], view[length:]
    try:
        request = json.loads(bytes(json_bytes))
    except (ValueError, UnicodeDecodeError) as exc:
        raise RequestError(f"the request body is not valid JSON: {exc}") from None
    if not isinstance(request, dict):
        raise RequestError(f"the request must be a JSON object, got {type(request).__name__}")
    return request, binary


def _shape_of(item: dict, name: str) -> list[int]:
    shape = item.get("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise RequestError(f"input {name!r}: 'shape' must be a list of non-negative ints, got {shape!r}")
    return shape


def decode_inputs(request: dict, binary: memoryview, specs: list[dict]) -> list[np.ndarray]:
    """The request's input arrays in the model's input order, checked against ``specs`` (the
    model's ``{"name", "shape" (-1: any size), "dtype"}``)."""
    items = request.get("inputs")
    if not isinstance(items, list) or not items:
        raise RequestError("the request has no 'inputs' list")
    by_name: dict[str, np.ndarray] = {}
    offset = 0
    known = {s["name"]: s for s in specs}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise RequestError("each entry of 'inputs' must be an object with a 'name'")
        name = item["name"]
        if name not in known:
            raise RequestError(f"the model has no input {name!r}; its inputs are {list(known)}")
        if name in by_name:
            raise RequestError(f"input {name!r} is given twice")
        spec = known[name]
        shape = _shape_of(item, name)
        datatype = item.get("datatype")
        expected = datatype_of(spec["dtype"])
        if datatype != expected:
            raise RequestError(f"input {name!r}: datatype {datatype!r}, but the model takes {expected} "
                               f"(shape {spec['shape']}, -1: any size)")
        dtype = numpy_dtype(spec["dtype"])
        count = math.prod(shape)
        parameters = item.get("parameters") or {}
        size = parameters.get("binary_data_size") if isinstance(parameters, dict) else None
        if size is not None:
            if not isinstance(size, int) or size < 0 or offset + size > len(binary):
                raise RequestError(f"input {name!r}: binary_data_size {size!r} does not fit the {len(binary) - offset} "
                                   f"binary bytes left in the body")
            if size != count * dtype.itemsize:
                raise RequestError(f"input {name!r}: {size} binary bytes for shape {shape} of {datatype} "
                                   f"({count * dtype.itemsize} bytes expected)")
            array = np.frombuffer(binary[offset:offset + size], dtype=dtype.newbyteorder("<")).astype(dtype, copy=False)
            offset += size
        else:
            if "data" not in item:
                raise RequestError(f"input {name!r} has neither 'data' nor a binary_data_size parameter")
            array = _json_array(item["data"], dtype, name, datatype)
            if array.size != count:
                raise RequestError(f"input {name!r}: 'data' holds {array.size} values but shape {shape} needs {count}")
        by_name[name] = array.reshape(shape)
        check_against_spec(by_name[name], spec)
    if offset != len(binary):
        raise RequestError(f"the body has {len(binary) - offset} binary bytes that no input's binary_data_size claims")
    missing = [s["name"] for s in specs if s["name"] not in by_name]
    if missing:
        raise RequestError(f"the request lacks input(s) {missing}; the model takes "
                           f"{[(s['name'], datatype_of(s['dtype']), s['shape']) for s in specs]}")
    return [by_name[s["name"]] for s in specs]


def _json_array(data, dtype: np.dtype, name: str, datatype: str) -> np.ndarray:
    if not isinstance(data, list):
        raise RequestError(f"input {name!r}: 'data' must be a list, got {type(data).__name__}")
    try:
        if dtype.kind == "b":
            flat = np.asarray(data, dtype=object).ravel()
            if not all(isinstance(v, bool) for v in flat):
                raise ValueError("BOOL data must be true or false")
            return flat.astype(bool)
        array = np.asarray(data)
    except ValueError as exc:  # ragged nesting, or values of mixed kinds
        raise RequestError(f"input {name!r}: 'data' is not a regular array of {datatype} values ({exc})") from None
    if array.dtype.kind not in "iuf" or (array.dtype.kind == "f" and dtype.kind in "iu"):
        raise RequestError(f"input {name!r}: 'data' must hold {datatype} numbers, got values of numpy kind "
                           f"{array.dtype.kind!r}")
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if array.size and (array.min() < info.min or array.max() > info.max):
            raise RequestError(f"input {name!r}: a value is out of {datatype}'s range")
    return array.ravel().astype(dtype)


def check_against_spec(array: np.ndarray, spec: dict) -> None:
    expected = spec["shape"]
    shown = f"{datatype_of(spec['dtype'])}{expected}"
    if array.ndim != len(expected) or any(d not in (-1, s) for d, s in zip(expected, array.shape)):
        raise RequestError(f"input {spec['name']!r}: shape {list(array.shape)} does not fit the model's {shown} "
                           f"(-1: any size)")


def requested_outputs(request: dict, names: list[str]) -> list[tuple[str, bool]]:
    """``(name, binary)`` for each output to answer with, in the request's order (all outputs when
    the request names none)."""
    parameters = request.get("parameters") or {}
    default_binary = bool(parameters.get("binary_data_output", False)) if isinstance(parameters, dict) else False
    items = request.get("outputs")
    if items is None:
        return [(n, default_binary) for n in names]
    if not isinstance(items, list):
        raise RequestError("'outputs' must be a list")
    chosen = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise RequestError("each entry of 'outputs' must be an object with a 'name'")
        if item["name"] not in names:
            raise RequestError(f"the model has no output {item['name']!r}; its outputs are {names}")
        params = item.get("parameters") or {}
        if not isinstance(params, dict):
            raise RequestError(f"output {item['name']!r}: 'parameters' must be an object")
        if params.get("classification"):
            raise RequestError("the classification extension is not supported: ask for the output tensor")
        chosen.append((item["name"], bool(params.get("binary_data", default_binary))))
    return chosen


def encode_response(model: str, version: str, request_id, outputs: list[tuple[str, bool, np.ndarray]]
                    ) -> tuple[bytes, dict[str, str]]:
    """The response body and its headers (``Content-Type``, and the header length when binary)."""
    entries, chunks = [], []
    for name, binary, array in outputs:
        entry = {"name": name, "datatype": datatype_of(str(array.dtype)), "shape": list(array.shape)}
        if binary:
            raw = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
            entry["parameters"] = {"binary_data_size": len(raw)}
            chunks.append(raw)
        else:
            entry["data"] = array.ravel().tolist()
        entries.append(entry)
    response = {"model_name": model, "model_version": version, "outputs": entries}
    if request_id is not None:
        response["id"] = request_id
    head = json.dumps(response, separators=(",", ":"), allow_nan=True).encode()
    if not chunks:
        return head, {"content-type": "application/json"}
    return head + b"".join(chunks), {"content-type": "application/octet-stream", HEADER_LENGTH: str(len(head))}

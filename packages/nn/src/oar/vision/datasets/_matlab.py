"""A reader of the numeric matrices in MATLAB level-5 ``.mat`` files (what ``scipy.io.loadmat``
returns for them), enough for the label files of datasets such as Flowers; oar needs no scipy.

A level-5 file is a 128-byte header (text, then the version and an endianness mark, ``IM`` for
little-endian) and a sequence of data elements, each a tag (type, byte count; a "small element"
packs both and up to 4 bytes of data in 8 bytes) and its data padded to 8 bytes. Variables are
``miMATRIX`` elements, often zlib-compressed inside ``miCOMPRESSED`` ones; a matrix holds its
flags (the class), dimensions, name and column-major real part. Cell arrays, structs, sparse,
complex and character matrices, and version 7.3 files (HDF5) are refused.
"""

from __future__ import annotations

import os
import zlib

import numpy as np

from oar.errors import SerializationError

MI_INT8, MI_INT32, MI_UINT32, MI_MATRIX, MI_COMPRESSED = 1, 5, 6, 14, 15
# data element type -> numpy dtype of the stored values
MI_DTYPES = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 9: "f8", 12: "i8", 13: "u8"}
# array class -> numpy dtype of the matrix (the values may be stored in a smaller type)
MX_DTYPES = {6: "f8", 7: "f4", 8: "i1", 9: "u1", 10: "i2", 11: "u2", 12: "i4", 13: "u4", 14: "i8", 15: "u8"}
MX_NAMES = {1: "cell", 2: "struct", 3: "object", 4: "char", 5: "sparse"}


def _elements(buffer: bytes, endian: str, path):
    """``(type, data)`` of each data element in ``buffer``."""
    pos = 0
    while pos + 8 <= len(buffer):
        first = int(np.frombuffer(buffer, endian + "u4", 1, pos)[0])
        if first >> 16:  # a small element: the byte count in the upper half, the data in the tag
            yield first & 0xFFFF, buffer[pos + 4 : pos + 4 + (first >> 16)]
            pos += 8
            continue
        size = int(np.frombuffer(buffer, endian + "u4", 1, pos + 4)[0])
        if pos + 8 + size > len(buffer):
            raise SerializationError(f"{os.fspath(path)!r} is not a valid .mat file: an element of {size} bytes "
                                     f"at offset {pos} runs past the end")
        yield first, buffer[pos + 8 : pos + 8 + size]
        pos += 8 + size + (-size % 8 if first != MI_COMPRESSED else 0)


def _matrix(data: bytes, endian: str, path) -> tuple[str, np.ndarray]:
    parts = list(_elements(data, endian, path))
    if len(parts) < 3 or parts[0][0] != MI_UINT32 or parts[1][0] != MI_INT32 or parts[2][0] != MI_INT8:
        raise SerializationError(f"{os.fspath(path)!r} is not a valid .mat file: a matrix without flags, "
                                 f"dimensions and a name")
    flags = np.frombuffer(parts[0][1], endian + "u4")
    array_class, complex_flag = int(flags[0]) & 0xFF, int(flags[0]) & 0x800
    name = parts[2][1].decode("ascii")
    if array_class not in MX_DTYPES or complex_flag:
        kind = "complex" if complex_flag else MX_NAMES.get(array_class, f"class {array_class}")
        raise SerializationError(f"{os.fspath(path)!r}: variable {name!r} is a {kind} array; only real numeric "
                                 f"matrices are read")
    dims = [int(d) for d in np.frombuffer(parts[1][1], endian + "i4")]
    stored_type, values = parts[3] if len(parts) > 3 else (9, b"")  # an empty matrix
    if stored_type not in MI_DTYPES:
        raise SerializationError(f"{os.fspath(path)!r}: variable {name!r} stores its values as type {stored_type}")
    array = np.frombuffer(values, endian + MI_DTYPES[stored_type]).astype(MX_DTYPES[array_class])
    if array.size != int(np.prod(dims)):
        raise SerializationError(f"{os.fspath(path)!r}: variable {name!r} has {array.size} values for dimensions "
                                 f"{dims}")
    return name, array.reshape(dims, order="F")


def load_mat(path) -> dict[str, np.ndarray]:
    """The numeric matrices of the level-5 ``.mat`` file at ``path``, by variable name, each with
    its MATLAB dimensions (at least 2) and class dtype (``double`` -> float64), as
    ``scipy.io.loadmat`` gives them."""
    with open(path, "rb") as f:
        content = f.read()
    if len(content) < 128 or content[126:128] not in (b"IM", b"MI"):
        hdf5 = content[:8] == b"\x89HDF\r\n\x1a\n" or b"MATLAB 7.3" in content[:128]
        why = "a version 7.3 (HDF5) file; save it with -v7 or older" if hdf5 else "no level-5 header"
        raise SerializationError(f"{os.fspath(path)!r} is not a readable .mat file: {why}")
    endian = "<" if content[126:128] == b"IM" else ">"
    variables = {}
    for kind, data in _elements(content[128:], endian, path):
        if kind == MI_COMPRESSED:
            try:
                data = zlib.decompress(data)
            except zlib.error as exc:
                raise SerializationError(f"{os.fspath(path)!r} is not a valid .mat file: {exc}") from None
            kind, data = next(_elements(data, endian, path))
        if kind == MI_MATRIX:
            name, array = _matrix(data, endian, path)
            variables[name] = array
    return variables

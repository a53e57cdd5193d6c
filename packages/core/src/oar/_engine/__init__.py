"""The eager engine (layer 1): dtypes, registries, the op, devices, tensors, dispatch, autograd.

Each module imports only the modules listed before it here, and nothing above the engine (the op
definitions, the static graph, the public surfaces); ``tests/core/test_layering.py`` checks it:
dtypes, dispatch, op, registries, device, memory, tensor, tape, eager, inplace, autograd, pylayer,
threads, serialization.
"""

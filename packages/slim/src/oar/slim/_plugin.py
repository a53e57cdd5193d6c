"""oar-slim's plugin entry point.

A converted model runs only nn's and core's ops (``quantize_linear``, ``dequantize_linear``,
``linear``, ``conv2d``), so a saved INT8 model needs no oar-slim: slim registers no op, kernel or
pass yet. Its quantization passes (the opt-in ``quantize`` phase) and config groups
(``oar-run slim=...``) will be registered here.
"""

from __future__ import annotations

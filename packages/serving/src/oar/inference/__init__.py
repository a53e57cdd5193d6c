"""``oar.inference``: Paddle Inference's Python API for models saved with ``oar.jit.save``.

>>> import os, tempfile, numpy as np, oar
>>> from oar.static import InputSpec
>>> import oar.inference as paddle_infer
>>> prefix = os.path.join(tempfile.mkdtemp(), "model")
>>> oar.jit.save(oar.nn.Linear(3, 2), prefix, input_spec=[InputSpec([None, 3], "float32", "x")])
>>> config = paddle_infer.Config(prefix + ".json", prefix + ".pdiparams")
>>> predictor = paddle_infer.create_predictor(config)
>>> [out] = predictor.run([np.ones([1, 3], "float32")])
>>> out.shape
[1, 2]

``Config`` says where the model is and how it runs (passes, threads, the serving backend);
``create_predictor`` loads it; ``PredictorPool`` holds one predictor per thread over shared
weights; ``check_parity`` (and ``python -m oar.inference check PREFIX --input x.npy``) says
whether the deployed model agrees with the training code, value by value. docs/serving.md has
the walk-through.
"""

from __future__ import annotations

from oar.utils import lazy_exports

# Names resolve on first use (PEP 562), so that loading oar-serving's plugin -- which every
# ``import oar`` program does on its first op -- imports none of the predictor's machinery.
_EXPORTS = {
    "oar.inference.config": ["Config", "PassBuilder", "PlaceType", "PrecisionType"],
    "oar.inference.mixed_precision": ["convert_to_mixed_precision"],
    "oar.inference.parity": ["Difference", "ParityReport", "check_parity"],
    "oar.inference.predictor": ["DataType", "Predictor", "PredictorPool", "Tensor", "create_predictor",
                                "get_version", "get_num_bytes_of_data_type"],
}
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)


def serving_backends() -> list[str]:
    """The names of the registered serving backends (``Config.set_serving_backend`` takes one)."""
    import oar.plugins  # deferred (import time): the plugin manager loads the entry points on first use

    return sorted(oar.plugins.registries().serving_backends)


__all__ = [*(name for names in _EXPORTS.values() for name in names), "serving_backends"]

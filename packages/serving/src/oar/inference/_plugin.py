"""oar-serving's plugin: registers the ``"oar"`` serving backend (oar's executor) through core's
hook, as the onnx plugin registers ``"onnxruntime"`` and a third party its own."""

from __future__ import annotations

from oar.plugins import Lazy, hookimpl


@hookimpl
def oar_register_serving_backends(serving_backends):
    serving_backends.register("oar", Lazy("oar.inference._backend:load"))


@hookimpl
def oar_register_config_groups(config_groups):
    # oar-run serve=oar: after training, a ready-to-run serving folder beside the exported model
    # (and, with serve.start=true, the server itself, until SIGTERM or Ctrl-C).
    config_groups.register("serve/oar", {
        "_target_": "oar.serving.serve_exported", "_partial_": True, "start": False, "host": "127.0.0.1",
        "port": 8000, "workers": 1, "max_batch_size": 32, "max_queue_delay_ms": 0.0,
    })

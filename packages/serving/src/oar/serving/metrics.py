"""The server's Prometheus metrics (``GET /metrics``), with ``prometheus_client``.

With ``--workers N`` each worker process counts in ``PROMETHEUS_MULTIPROC_DIR`` (set by the
command line before any worker starts) and ``/metrics`` sums over the processes.
"""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client import REGISTRY as DEFAULT_REGISTRY

disable_created_metrics()  # the *_created series double every counter's lines and no dashboard reads them

LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
# A request for a model the repository does not hold is counted under this name, so that a client
# sending made-up names cannot grow the label set without bound.
UNKNOWN_MODEL = "<unknown>"

REQUESTS = Counter("oar_inference_requests", "Inference requests answered, by model, version and HTTP status",
                   ["model", "version", "status"])
FAILURES = Counter("oar_inference_failures", "Inference requests answered with a 4xx or 5xx status",
                   ["model", "status"])
REQUEST_SECONDS = Histogram("oar_inference_request_duration_seconds",
                            "Time from a request's arrival to its answer", ["model"], buckets=LATENCY_BUCKETS)
QUEUE_SECONDS = Histogram("oar_inference_queue_duration_seconds",
                          "Time a request waited in its model's queue before its batch ran", ["model"],
                          buckets=LATENCY_BUCKETS)
COMPUTE_SECONDS = Histogram("oar_inference_compute_duration_seconds", "Time one batch took to run", ["model"],
                            buckets=LATENCY_BUCKETS)
BATCH_SIZE = Histogram("oar_inference_batch_size", "Rows per batched run", ["model"], buckets=BATCH_BUCKETS)
IN_FLIGHT = Gauge("oar_inference_in_flight_requests", "Inference requests being answered now", ["model"],
                  multiprocess_mode="livesum")


def model_label(name: str, known: bool) -> str:
    return name if known else UNKNOWN_MODEL


def exposition() -> tuple[bytes, str]:
    """The metrics in Prometheus' text format, summed over worker processes where there are several."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess  # only in multi-process mode

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(DEFAULT_REGISTRY), CONTENT_TYPE_LATEST

"""The ASGI application: the Open Inference Protocol's REST endpoints over a model repository.

```
GET  /v2/health/live                              200 while the process runs
GET  /v2/health/ready                             200 once the repository is loaded
GET  /v2                                          server metadata and extensions
GET  /v2/models/{model}[/versions/{v}]            model metadata: inputs, outputs, datatypes, shapes
GET  /v2/models/{model}[/versions/{v}]/ready      200 when that version serves
POST /v2/models/{model}[/versions/{v}]/infer      inference, JSON tensors or binary tensor data
POST /v2/repository/index                         every model and version, with why one did not load
GET  /metrics                                     Prometheus text format
```

Every error is a 4xx or 5xx with the protocol's ``{"error": "..."}`` body: 400 a bad request,
401 a missing or wrong API key, 404 an unknown model or version, 413 a body over the limit
(refused from its Content-Length before it is read, or as soon as a chunked body passes it),
500 the model raised on this request, 503 a full queue or a model that did not load, 504 a
timeout. No request can stop the server or harm another one.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import os
import time
import zlib

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

import oar
from oar.serving import metrics
from oar.serving.batching import ModelFailed, Overloaded, Scheduler, TimedOut
from oar.serving.protocol import (
    HEADER_LENGTH,
    RequestError,
    datatype_of,
    decode_inputs,
    encode_response,
    requested_outputs,
    split_body,
)
from oar.serving.repository import Model, ModelVersion, load_repository

log = logging.getLogger("oar.serving")
DEFAULT_MAX_REQUEST_BYTES = 8 << 20
OPEN_PATHS = ("/v2/health/live", "/v2/health/ready")  # a load balancer's probes need no key
OPTIONS_ENV = "OAR_SERVE_OPTIONS"  # how the command line hands its options to uvicorn's workers
API_KEY_ENV = "OAR_SERVE_API_KEY"


def error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


class ApiKeyMiddleware:
    """``Authorization: Bearer <key>`` (or ``X-API-Key: <key>``) on every path but the health probes."""

    def __init__(self, app, api_key: str):
        self.app = app
        self.api_key = api_key.encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] not in OPEN_PATHS:
            headers = dict(scope["headers"])
            given = headers.get(b"x-api-key", b"")
            auth = headers.get(b"authorization", b"")
            if auth[:7].lower() == b"bearer ":
                given = auth[7:].strip()
            if not hmac.compare_digest(given, self.api_key):
                response = JSONResponse({"error": "missing or wrong API key: send 'Authorization: Bearer <key>'"},
                                        status_code=401, headers={"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class Server:
    """The repository's models and their schedulers, and the endpoints' handlers."""

    def __init__(self, model_repository: str, *, max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
                 default_backend: str | None = None):
        self.model_repository = model_repository
        self.default_backend = default_backend
        self.max_request_bytes = max_request_bytes
        self.models: dict[str, Model] = {}
        self.schedulers: dict[tuple[str, str], Scheduler] = {}
        self.ready = False

    # -- lifespan -----------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def lifespan(self, app):
        self.models = load_repository(self.model_repository, self.default_backend)
        for model in self.models.values():
            for version in model.versions.values():
                if version.ready:
                    scheduler = Scheduler(version, model.config)
                    scheduler.start()
                    self.schedulers[(model.name, version.version)] = scheduler
        self.ready = True
        served = sorted(f"{m}/{v}" for m, v in self.schedulers)
        log.info("oar serving %d model version(s) from %s: %s", len(served), self.model_repository, ", ".join(served))
        yield
        self.ready = False
        for scheduler in self.schedulers.values():
            await scheduler.stop()

    # -- lookups --------------------------------------------------------------------------------
    def find(self, name: str, version: str | None) -> ModelVersion:
        model = self.models.get(name)
        if model is None:
            raise RequestError(f"unknown model {name!r}; the repository holds {sorted(self.models)}", 404)
        if model.error is not None:
            raise RequestError(f"model {name!r} is unavailable: {model.error}", 503)
        if version is None:
            chosen = model.default_version()
            if chosen is None:
                reasons = "; ".join(f"version {v.version}: {v.error}" for v in model.versions.values())
                raise RequestError(f"model {name!r} has no version that loaded ({reasons or 'no versions'})", 503)
            return chosen
        chosen = model.versions.get(version)
        if chosen is None:
            raise RequestError(f"model {name!r} has no version {version!r}; its versions are "
                               f"{sorted(model.versions, key=int)}", 404)
        if not chosen.ready:
            raise RequestError(f"model {name!r} version {version} did not load: {chosen.error}", 503)
        return chosen

    # -- endpoints ------------------------------------------------------------------------------
    async def live(self, request: Request) -> Response:
        return JSONResponse({"live": True})

    async def server_ready(self, request: Request) -> Response:
        if not self.ready:
            return error("the server is loading its models or shutting down", 503)
        return JSONResponse({"ready": True})

    async def server_metadata(self, request: Request) -> Response:
        return JSONResponse({"name": "oar", "version": oar.__version__,
                             "extensions": ["binary_tensor_data", "model_repository"]})

    async def model_metadata(self, request: Request) -> Response:
        try:
            version = self.find(request.path_params["model"], request.path_params.get("version"))
        except RequestError as exc:
            return error(str(exc), exc.status)
        model = self.models[version.model]
        return JSONResponse({
            "name": version.model,
            "versions": sorted((v for v, e in model.versions.items() if e.ready), key=int),
            "platform": version.backend,
            "inputs": [_tensor_metadata(s) for s in version.inputs],
            "outputs": [_tensor_metadata(s) for s in version.outputs],
        })

    async def model_ready(self, request: Request) -> Response:
        name = request.path_params["model"]
        try:
            version = self.find(name, request.path_params.get("version"))
        except RequestError as exc:
            return error(str(exc), exc.status)
        return JSONResponse({"name": name, "version": version.version, "ready": True})

    async def repository_index(self, request: Request) -> Response:
        entries = []
        for model in self.models.values():
            if model.error is not None or not model.versions:
                entries.append({"name": model.name, "state": "UNAVAILABLE", "reason": model.error or "no versions"})
            for v in model.versions.values():
                entry = {"name": model.name, "version": v.version, "state": "READY" if v.ready else "UNAVAILABLE"}
                if not v.ready:
                    entry["reason"] = v.error
                entries.append(entry)
        return JSONResponse(entries)

    async def metrics(self, request: Request) -> Response:
        body, content_type = metrics.exposition()
        return Response(body, media_type=content_type)

    async def infer(self, request: Request) -> Response:
        name = request.path_params["model"]
        known = name in self.models
        label = metrics.model_label(name, known)
        start = time.perf_counter()
        metrics.IN_FLIGHT.labels(label).inc()
        served: list[str] = []  # the version that answered, once found
        try:
            response = await self._infer(request, name, served)
        except ClientDisconnect:  # the client left mid-body: nobody to answer
            response = Response(status_code=499)
        except Exception as exc:  # noqa: BLE001 - the server answers every request, whatever happens
            log.exception("inference on model %r failed unexpectedly", name)
            response = error(f"internal error: {type(exc).__name__}: {exc}", 500)
        finally:
            metrics.IN_FLIGHT.labels(label).dec()
        status = str(response.status_code)
        version_label = served[0] if served else ""
        metrics.REQUESTS.labels(label, version_label, status).inc()
        if response.status_code >= 400:
            metrics.FAILURES.labels(label, status).inc()
        metrics.REQUEST_SECONDS.labels(label).observe(time.perf_counter() - start)
        return response

    async def _infer(self, request: Request, name: str, served: list[str]) -> Response:
        try:
            version = self.find(name, request.path_params.get("version"))
            served.append(version.version)
            body = await self._read_body(request)
            payload, binary = split_body(body, request.headers.get(HEADER_LENGTH))
            arrays = decode_inputs(payload, binary, version.inputs)
            wanted = requested_outputs(payload, [s["name"] for s in version.outputs])
        except RequestError as exc:
            return error(str(exc), exc.status)
        scheduler = self.schedulers[(version.model, version.version)]
        try:
            outputs = await scheduler.infer(arrays)
        except Overloaded as exc:
            return error(str(exc), 503)
        except TimedOut as exc:
            return error(str(exc), 504)
        except ModelFailed as exc:
            return error(f"model {name!r} version {version.version} failed on this request: {exc}", 500)
        by_name = dict(zip((s["name"] for s in version.outputs), outputs))
        body, headers = encode_response(version.model, version.version, payload.get("id"),
                                        [(n, binary_out, by_name[n]) for n, binary_out in wanted])
        media_type = headers.pop("content-type")
        return Response(body, media_type=media_type, headers=headers)

    async def _read_body(self, request: Request) -> bytes:
        limit = self.max_request_bytes
        length = request.headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                raise RequestError(f"Content-Length must be a number of bytes, got {length!r}")
            if int(length) > limit:
                raise RequestError(f"the request body is {int(length)} bytes, over the server's limit of {limit} "
                                   f"(--max-request-bytes)", 413)
        encoding = request.headers.get("content-encoding", "identity").lower()
        if encoding not in ("identity", "gzip", "deflate"):
            raise RequestError(f"Content-Encoding {encoding!r} is not supported (identity, gzip, deflate)", 415)
        inflate = None if encoding == "identity" else zlib.decompressobj(31 if encoding == "gzip" else 15)
        body = bytearray()
        async for chunk in request.stream():
            if inflate is not None:
                try:
                    chunk = inflate.decompress(chunk, limit + 1 - len(body))
                except zlib.error as exc:
                    raise RequestError(f"the {encoding} body does not decompress: {exc}") from None
            body += chunk
            if len(body) > limit:
                raise RequestError(f"the request body passes the server's limit of {limit} bytes "
                                   f"(--max-request-bytes)", 413)
        return bytes(body)


def _tensor_metadata(spec: dict) -> dict:
    return {"name": spec["name"], "datatype": datatype_of(spec["dtype"]), "shape": list(spec["shape"])}


def create_app(model_repository: str, *, api_key: str | None = None,
               max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES, default_backend: str | None = None) -> Starlette:
    """The ASGI application serving ``model_repository`` (run it with any ASGI server; ``oar-serve``
    runs it on uvicorn); ``default_backend`` runs the models whose config names no backend."""
    server = Server(model_repository, max_request_bytes=max_request_bytes, default_backend=default_backend)
    routes = [
        Route("/v2/health/live", server.live),
        Route("/v2/health/ready", server.server_ready),
        Route("/v2", server.server_metadata),
        Route("/v2/models/{model}", server.model_metadata),
        Route("/v2/models/{model}/versions/{version}", server.model_metadata),
        Route("/v2/models/{model}/ready", server.model_ready),
        Route("/v2/models/{model}/versions/{version}/ready", server.model_ready),
        Route("/v2/models/{model}/infer", server.infer, methods=["POST"]),
        Route("/v2/models/{model}/versions/{version}/infer", server.infer, methods=["POST"]),
        Route("/v2/repository/index", server.repository_index, methods=["POST"]),
        Route("/metrics", server.metrics),
    ]
    app = Starlette(routes=routes, lifespan=server.lifespan, exception_handlers={
        404: lambda request, exc: error(f"no endpoint {request.url.path!r} (see GET /v2)", 404),
        405: lambda request, exc: error(f"{request.method} is not allowed on {request.url.path!r}", 405),
    })
    app.state.server = server
    if api_key:
        return ApiKeyMiddleware(app, api_key)
    return app


def app_from_environment():
    """The application as the command line configured it (``OAR_SERVE_OPTIONS``): what each of
    uvicorn's worker processes builds."""
    options = json.loads(os.environ[OPTIONS_ENV])
    logging.basicConfig(level=options.pop("log_level", "INFO").upper(),
                        format="%(asctime)s %(levelname)s %(name)s [%(process)d] %(message)s")
    api_key = options.pop("api_key", None) or os.environ.get(API_KEY_ENV) or None
    return create_app(options["model_repository"], api_key=api_key,
                      max_request_bytes=options.get("max_request_bytes", DEFAULT_MAX_REQUEST_BYTES),
                      default_backend=options.get("backend"))

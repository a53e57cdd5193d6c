"""Faults a production server meets, each against a real server process on 127.0.0.1, bounded in
count and time: clients that leave mid-request, bursts beyond the queue, a model that raises,
timeouts, SIGTERM under load, batching under concurrency, several workers, keys and body limits."""

from __future__ import annotations

import concurrent.futures
import gzip
import http.client
import json
import os
import socket
import threading
import time

import numpy as np
import pytest
import tritonclient.http as triton

from oar.inference import Config, create_predictor
from oar.serving import ServerProcess, write_repository

from .conftest import assert_close, lenet_input
from .test_server import infer_json, metric_values, request

SLOW_ROWS = 512


def binary_infer(x: np.ndarray, name: str, datatype: str = "FP32") -> tuple[bytes, dict]:
    header = json.dumps({"inputs": [{"name": name, "shape": list(x.shape), "datatype": datatype,
                                     "parameters": {"binary_data_size": x.nbytes}}],
                         "outputs": [{"name": "output_0", "parameters": {"binary_data": True}}]}).encode()
    return header + x.tobytes(), {"Inference-Header-Content-Length": str(len(header))}


def in_parallel(calls, workers: int = 16) -> list:
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda call: call(), calls))


def test_clients_that_disconnect_mid_request_harm_nobody(server):
    host, port = server.host, server.port
    body = json.dumps(infer_json(lenet_input())).encode()
    for _ in range(5):
        with socket.create_connection((host, port), timeout=10) as s:  # half a body, then gone
            s.sendall(b"POST /v2/models/lenet/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body) + body[: len(body) // 2])
        with socket.create_connection((host, port), timeout=10) as s:  # a whole request, never read
            s.sendall(b"POST /v2/models/lenet/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body) + body)
    time.sleep(0.5)
    status, _, answer = request(server, "POST", "/v2/models/lenet/infer", infer_json(lenet_input()))
    assert status == 200 and answer["outputs"][0]["shape"] == [1, 10]
    assert "Traceback" not in server.log()


def test_a_burst_beyond_the_queue_gets_503s_then_the_model_recovers(server, saved):
    x = np.random.default_rng(1).random((SLOW_ROWS, 512), dtype=np.float32)
    body, headers = binary_infer(x, "x")
    results = in_parallel([lambda: request(server, "POST", "/v2/models/slow/infer", body, headers)] * 24)
    statuses = [status for status, _, _ in results]
    assert set(statuses) <= {200, 503}
    assert statuses.count(503) >= 1 and statuses.count(200) >= 1, statuses
    refused = next(answer for status, _, answer in results if status == 503)
    assert "max_queue_size 2" in refused["error"]
    status, headers, answer = request(server, "POST", "/v2/models/slow/infer", body, headers)
    assert status == 200
    length = int({k.lower(): v for k, v in headers.items()}["inference-header-content-length"])
    expected = create_predictor(Config(saved["slow"])).infer([x])[0]
    assert_close(np.frombuffer(answer[length:], "<f4"), expected, terms=512 * 8)


def test_a_model_that_raises_fails_that_request_only(server, saved):
    good = [np.array([[i % 8, (i + 1) % 8, (i + 2) % 8]], "int64") for i in range(8)]
    bad = np.array([[1, 99, 2]], "int64")
    calls = [lambda ids=ids: request(server, "POST", "/v2/models/lookup/infer", infer_json(ids, "ids", "INT64"))
             for ids in [*good[:4], bad, *good[4:]]]
    results = in_parallel(calls)  # batched together (max_queue_delay_ms 20): the bad one must not spoil the rest
    predictor = create_predictor(Config(saved["lookup"]))
    for ids, (status, _, answer) in zip([*good[:4], bad, *good[4:]], results):
        if ids is bad:
            assert status == 500 and "failed on this request" in answer["error"] and "99" in answer["error"]
        else:
            assert status == 200, answer
            assert_close(answer["outputs"][0]["data"], predictor.infer([ids])[0], terms=3)
    assert request(server, "POST", "/v2/models/lookup/infer", infer_json(good[0], "ids", "INT64"))[0] == 200


def test_a_request_past_its_timeout_gets_504_and_never_runs(server):
    # timeout_ms 0: the request is past its timeout before its batch can run, however fast the machine
    body, headers = binary_infer(np.ones((1, 512), "float32"), "x")
    status, _, answer = request(server, "POST", "/v2/models/hasty/infer", body, headers)
    assert status == 504 and "timeout_ms=0" in answer["error"]
    assert batch_counts(server, "hasty") == (0.0, 0.0)  # dropped from the queue, not run


def test_concurrent_requests_are_batched_and_split_back(server, saved):
    before = batch_counts(server, "lookup")
    inputs = [np.array([[i % 8, 3, (5 * i) % 8]] * (1 + i % 3), "int64") for i in range(24)]
    results = in_parallel([lambda ids=ids: request(server, "POST", "/v2/models/lookup/infer",
                                                   infer_json(ids, "ids", "INT64")) for ids in inputs])
    predictor = create_predictor(Config(saved["lookup"]))
    for ids, (status, _, answer) in zip(inputs, results):
        assert status == 200
        assert answer["outputs"][0]["shape"] == [len(ids), 4]
        assert_close(answer["outputs"][0]["data"], predictor.infer([ids])[0], terms=3)
    batches, rows = (after - start for after, start in zip(batch_counts(server, "lookup"), before))
    assert rows == sum(len(ids) for ids in inputs)
    assert batches < len(inputs), f"{len(inputs)} concurrent requests ran in {batches} batches: none was joined"


def batch_counts(server, model: str) -> tuple[float, float]:
    """(batches run, rows run) of ``model`` from /metrics."""
    text = request(server, "GET", "/metrics")[2].decode()
    key = (("model", model),)
    return (metric_values(text, "oar_inference_batch_size_count").get(key, 0.0),
            metric_values(text, "oar_inference_batch_size_sum").get(key, 0.0))


@pytest.fixture(scope="module")
def lenet_repository(saved, tmp_path_factory):
    root = str(tmp_path_factory.mktemp("lenet_only"))
    write_repository(saved["lenet"], root, "lenet", 1)
    write_repository(saved["slow"], root, "slow", 1, config={"max_batch_size": 0, "max_concurrency": 2})
    return root


def test_sigterm_under_load_finishes_every_accepted_request_and_exits_0(lenet_repository):
    server = ServerProcess(lenet_repository).start()
    x = np.random.default_rng(2).random((SLOW_ROWS, 512), dtype=np.float32)
    body, headers = binary_infer(x, "x")
    headers = {**headers, "Connection": "close"}
    outcomes: list[tuple[float, float, str]] = []  # (sent, done, result)
    stop = threading.Event()

    def client() -> None:
        while not stop.is_set():
            sent = time.monotonic()
            try:
                status = request(server, "POST", "/v2/models/slow/infer", body, headers)[0]
                outcomes.append((sent, time.monotonic(), str(status)))
            except (ConnectionError, OSError, http.client.HTTPException) as exc:
                outcomes.append((sent, time.monotonic(), type(exc).__name__))
                if isinstance(exc, ConnectionRefusedError):
                    return

    threads = [threading.Thread(target=client) for _ in range(6)]
    for t in threads:
        t.start()
    time.sleep(1.5)
    signalled = time.monotonic()
    code = server.stop(timeout_s=60)
    stop.set()
    for t in threads:
        t.join(30)
    accepted = [o for o in outcomes if o[0] < signalled - 0.05]  # sent well before SIGTERM: accepted
    in_flight = [o for o in outcomes if o[0] < signalled < o[1] and o[2] == "200"]
    assert code == 0, server.log()
    assert accepted and all(result == "200" for _, _, result in accepted), accepted
    assert in_flight, "no request was in flight at SIGTERM: the test proves nothing"
    later = {result for sent, _, result in outcomes if sent >= signalled - 0.05}
    assert later <= {"200", "ConnectionRefusedError", "ConnectionResetError", "RemoteDisconnected"}


def _wait_for_log(server: ServerProcess, text: str, count: int, timeout_s: float = 60.0) -> None:
    """Until ``text`` is ``count`` times in the server's log: the server is ready as soon as its
    first worker is, and the others start beside it."""
    deadline = time.monotonic() + timeout_s
    while server.log().count(text) < count:
        assert time.monotonic() < deadline, f"{count} x {text!r} not in the log after {timeout_s} s:\n{server.log()}"
        time.sleep(0.1)


def test_several_workers_behind_one_port_count_metrics_together(lenet_repository):
    with ServerProcess(lenet_repository, "--workers", "2") as server:
        _wait_for_log(server, "Started server process", 2)
        results = in_parallel([lambda: request(server, "POST", "/v2/models/lenet/infer",
                                               infer_json(lenet_input()), {"Connection": "close"})] * 20, 8)
        assert all(status == 200 for status, _, _ in results)
        text = request(server, "GET", "/metrics")[2].decode()
        counts = metric_values(text, "oar_inference_requests_total")
        assert counts[(("model", "lenet"), ("status", "200"), ("version", "1"))] == 20


def test_api_key_and_body_limits(lenet_repository, tmp_path):
    bomb = gzip.compress(b"0" * (200_000))  # small on the wire, over the limit once inflated
    env = {"OAR_SERVE_API_KEY": "s3cret"}
    with ServerProcess(lenet_repository, "--max-request-bytes", "20000", env=env) as server:
        body = json.dumps(infer_json(lenet_input())).encode()
        assert request(server, "GET", "/v2/health/live")[0] == 200  # probes need no key
        assert request(server, "GET", "/v2/health/ready")[0] == 200
        for path, method in (("/v2/models/lenet", "GET"), ("/v2/models/lenet/infer", "POST"), ("/metrics", "GET")):
            status, headers, answer = request(server, method, path, body if method == "POST" else None)
            assert status == 401 and "API key" in answer["error"]
        assert request(server, "GET", "/v2/models/lenet", headers={"Authorization": "Bearer wrong"})[0] == 401
        assert request(server, "POST", "/v2/models/lenet/infer", body, {"Authorization": "Bearer s3cret"})[0] == 200
        assert request(server, "POST", "/v2/models/lenet/infer", body, {"X-API-Key": "s3cret"})[0] == 200
        client = triton.InferenceServerClient(server.url.removeprefix("http://"))
        x = lenet_input()
        image = triton.InferInput("image", list(x.shape), "FP32")
        image.set_data_from_numpy(x)
        assert client.infer("lenet", [image], headers={"Authorization": "Bearer s3cret"}).as_numpy("output_0").shape \
            == (1, 10)
        key = {"Authorization": "Bearer s3cret"}

        # A huge Content-Length is refused from the header, before any of the body is sent.
        with socket.create_connection((server.host, server.port), timeout=10) as s:
            s.sendall(b"POST /v2/models/lenet/infer HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\n"
                      b"Content-Length: 1000000000\r\n\r\n")
            answer = b""
            while b"}" not in answer:  # the whole answer: headers, then the JSON body
                chunk = s.recv(4096)
                if not chunk:
                    break
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 413") and b"over the server's limit of 20000" in answer

        def chunks():
            for _ in range(30):
                yield b"x" * 1000

        status, _, answer = request(server, "POST", "/v2/models/lenet/infer", chunks(), key)  # sent chunked
        assert status == 413 and "passes the server's limit" in answer["error"]
        status, _, answer = request(server, "POST", "/v2/models/lenet/infer", bomb, {**key, "Content-Encoding": "gzip"})
        assert status == 413
        assert request(server, "POST", "/v2/models/lenet/infer", body, key)[0] == 200


def test_a_repository_that_is_not_a_folder_stops_the_command_with_a_message(tmp_path):
    server = ServerProcess(str(tmp_path / "nothing"), ready_timeout_s=60)
    with pytest.raises(RuntimeError, match=r"is not a folder"):
        server.start()
    assert os.path.exists(server.log_path)


@pytest.mark.parametrize("settings, message", [
    ({"max_batch_size": -1}, "max_batch_size must be an int >= 0"),
    ({"max_queue_size": 0}, "max_queue_size must be an int >= 1"),
    ({"timeout_ms": "soon"}, "timeout_ms must be a number >= 0"),
    ({"threads": 0}, "threads must be an int >= 1 or null"),
    ({"warmup": "yes"}, "warmup true or false"),
    ({"batch": 8}, "unknown setting(s) ['batch']"),
])
def test_a_bad_model_config_is_refused_naming_the_setting(settings, message):
    from oar.serving import ModelConfig

    with pytest.raises(ValueError) as info:
        ModelConfig.from_dict(settings, where="models/lenet/config.json")
    assert message in str(info.value) and "models/lenet/config.json" in str(info.value)

"""The server's Open Inference Protocol endpoints, through plain HTTP and through NVIDIA's
tritonclient, against a real server process."""

from __future__ import annotations

import http.client
import json
import struct
import urllib.parse

import numpy as np
import pytest
import tritonclient.http as triton
from tritonclient.utils import InferenceServerException

import oar
from oar.inference import Config, create_predictor

from .conftest import assert_close, lenet_input


def request(server, method: str, path: str, body: bytes | dict | None = None, headers: dict | None = None):
    """``(status, headers, body)``; a dict body is sent as JSON; JSON answers are parsed."""
    host = urllib.parse.urlparse(server.url)
    connection = http.client.HTTPConnection(host.hostname, host.port, timeout=60)
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    try:
        connection.request(method, path, body=data, headers=headers or {})
        response = connection.getresponse()
        raw = response.read()
    finally:
        connection.close()
    kind = response.getheader("content-type") or ""
    return response.status, dict(response.getheaders()), json.loads(raw) if "json" in kind else raw


def expected_lenet(saved, x: np.ndarray, version: str = "lenet") -> np.ndarray:
    return create_predictor(Config(saved[version])).infer([x])[0]


def infer_json(x: np.ndarray, name: str = "image", datatype: str = "FP32") -> dict:
    return {"inputs": [{"name": name, "shape": list(x.shape), "datatype": datatype, "data": x.ravel().tolist()}]}


def test_health_and_server_metadata(server):
    assert request(server, "GET", "/v2/health/live")[:1] == (200,)
    assert request(server, "GET", "/v2/health/ready")[0] == 200
    status, _, body = request(server, "GET", "/v2")
    assert status == 200 and body["name"] == "oar" and body["version"] == oar.__version__
    assert "binary_tensor_data" in body["extensions"]


def test_model_metadata_lists_inputs_outputs_with_dynamic_dims(server):
    status, _, body = request(server, "GET", "/v2/models/lenet")
    assert status == 200
    assert body["name"] == "lenet" and body["versions"] == ["1", "2"]
    assert body["inputs"] == [{"name": "image", "datatype": "FP32", "shape": [-1, 1, 28, 28]}]
    assert body["outputs"] == [{"name": "output_0", "datatype": "FP32", "shape": [-1, 10]}]
    assert request(server, "GET", "/v2/models/lenet/versions/1")[0] == 200
    assert request(server, "GET", "/v2/models/lookup")[2]["inputs"][0]["datatype"] == "INT64"
    assert request(server, "GET", "/v2/models/lenet/ready")[0] == 200
    assert request(server, "GET", "/v2/models/lenet/versions/2/ready")[0] == 200


def test_json_inference_gives_the_predictors_answer(server, saved):
    x = lenet_input(2, seed=3)
    status, _, body = request(server, "POST", "/v2/models/lenet/infer", {"id": "req-7", **infer_json(x)})
    assert status == 200, body
    assert body["model_name"] == "lenet" and body["model_version"] == "2" and body["id"] == "req-7"
    [out] = body["outputs"]
    assert out["name"] == "output_0" and out["datatype"] == "FP32" and out["shape"] == [2, 10]
    assert_close(out["data"], expected_lenet(saved, x, "lenet_v2"))


def test_versions_are_addressed_and_the_highest_is_the_default(server, saved):
    x = lenet_input(1, seed=4)
    _, _, v1 = request(server, "POST", "/v2/models/lenet/versions/1/infer", infer_json(x))
    assert_close(v1["outputs"][0]["data"], expected_lenet(saved, x))
    assert v1["model_version"] == "1"
    status, _, body = request(server, "POST", "/v2/models/lenet/versions/9/infer", infer_json(x))
    assert status == 404 and "no version '9'" in body["error"] and "['1', '2']" in body["error"]


def test_binary_tensor_data_both_ways(server, saved):
    x = lenet_input(3, seed=5)
    header = json.dumps({"inputs": [{"name": "image", "shape": [3, 1, 28, 28], "datatype": "FP32",
                                     "parameters": {"binary_data_size": x.nbytes}}],
                         "outputs": [{"name": "output_0", "parameters": {"binary_data": True}}]}).encode()
    status, headers, body = request(server, "POST", "/v2/models/lenet/versions/1/infer", header + x.tobytes(),
                                    {"Inference-Header-Content-Length": str(len(header)),
                                     "Content-Type": "application/octet-stream"})
    assert status == 200
    length = int({k.lower(): v for k, v in headers.items()}["inference-header-content-length"])
    meta = json.loads(body[:length])
    assert meta["outputs"][0]["parameters"]["binary_data_size"] == 3 * 10 * 4
    got = np.frombuffer(body[length:], "<f4").reshape(3, 10)
    assert_close(got, expected_lenet(saved, x))


def test_tritonclient_talks_to_the_server(server, saved):
    client = triton.InferenceServerClient(server.url.removeprefix("http://"))
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("lenet") and client.is_model_ready("lenet", "1")
    assert not client.is_model_ready("unknown")
    assert client.get_model_metadata("lenet")["inputs"][0]["shape"] == [-1, 1, 28, 28]
    x = lenet_input(4, seed=6)
    binary = triton.InferInput("image", list(x.shape), "FP32")
    binary.set_data_from_numpy(x, binary_data=True)
    result = client.infer("lenet", [binary], model_version="1")
    assert_close(result.as_numpy("output_0"), expected_lenet(saved, x))
    as_json = triton.InferInput("image", list(x.shape), "FP32")
    as_json.set_data_from_numpy(x, binary_data=False)
    result = client.infer("lenet", [as_json], model_version="1",
                          outputs=[triton.InferRequestedOutput("output_0", binary_data=False)])
    assert_close(result.as_numpy("output_0"), expected_lenet(saved, x))
    ids = np.array([[1, 2, 3]], "int64")
    lookup = triton.InferInput("ids", [1, 3], "INT64")
    lookup.set_data_from_numpy(ids)
    assert_close(client.infer("lookup", [lookup]).as_numpy("output_0"),
                 create_predictor(Config(saved["lookup"])).infer([ids])[0], terms=3)
    with pytest.raises(InferenceServerException, match="unknown model 'nope'") as info:
        client.infer("nope", [binary])
    assert info.value.status() == "404"
    client.close()


def test_compressed_requests(server, saved):
    import gzip
    import zlib

    x = lenet_input(1, seed=8)
    raw = json.dumps(infer_json(x)).encode()
    for encoding, body in (("gzip", gzip.compress(raw)), ("deflate", zlib.compress(raw))):
        status, _, answer = request(server, "POST", "/v2/models/lenet/versions/1/infer", body,
                                    {"Content-Encoding": encoding, "Content-Type": "application/json"})
        assert status == 200, encoding
        assert_close(answer["outputs"][0]["data"], expected_lenet(saved, x))
    status, _, answer = request(server, "POST", "/v2/models/lenet/infer", b"\x1f\x8bnot gzip",
                                {"Content-Encoding": "gzip"})
    assert status == 400 and "does not decompress" in answer["error"]
    status, _, answer = request(server, "POST", "/v2/models/lenet/infer", raw, {"Content-Encoding": "br"})
    assert status == 415 and "'br' is not supported" in answer["error"]


BAD_REQUESTS = [
    (b"{not json", 400, "not valid JSON"),
    (b"[1, 2]", 400, "must be a JSON object"),
    ({"inputs": []}, 400, "no 'inputs'"),
    ({"inputs": [{"name": "img", "shape": [1, 1, 28, 28], "datatype": "FP32", "data": [0] * 784}]}, 400,
     "no input 'img'; its inputs are ['image']"),
    ({"inputs": [{"name": "image", "shape": [1, 1, 28, 28], "datatype": "FP64", "data": [0] * 784}]}, 400,
     "datatype 'FP64', but the model takes FP32"),
    ({"inputs": [{"name": "image", "shape": [1, 3, 28, 28], "datatype": "FP32", "data": [0] * 2352}]}, 400,
     "shape [1, 3, 28, 28] does not fit the model's FP32[-1, 1, 28, 28]"),
    ({"inputs": [{"name": "image", "shape": [1, 1, 28, 28], "datatype": "FP32", "data": [0] * 783}]}, 400,
     "'data' holds 783 values but shape [1, 1, 28, 28] needs 784"),
    ({"inputs": [{"name": "image", "shape": [1, 1, 28, 28], "datatype": "FP32", "data": [[0, 1], [2]]}]}, 400,
     "not a regular array"),
    ({"inputs": [{"name": "image", "shape": [1, 1, 28, 28], "datatype": "FP32", "data": ["a"] * 784}]}, 400,
     "must hold FP32 numbers"),
    ({"inputs": [{"name": "image", "shape": "big", "datatype": "FP32", "data": []}]}, 400,
     "'shape' must be a list"),
    ({"inputs": [{"name": "image", "shape": [1, 1, 28, 28], "datatype": "FP32"}]}, 400, "neither 'data' nor"),
    ({"inputs": [{"name": "image", "shape": [1, 1, 28, 28], "datatype": "FP32", "data": [0] * 784}],
      "outputs": [{"name": "logits"}]}, 400, "no output 'logits'; its outputs are ['output_0']"),
]


@pytest.mark.parametrize("body, status, message", BAD_REQUESTS, ids=[m for _, _, m in BAD_REQUESTS])
def test_bad_requests_get_a_4xx_naming_the_problem_and_the_server_carries_on(server, saved, body, status, message):
    got, _, answer = request(server, "POST", "/v2/models/lenet/infer", body, {"Content-Type": "application/json"})
    assert got == status and message in answer["error"], answer
    x = lenet_input(1)
    assert request(server, "POST", "/v2/models/lenet/infer", infer_json(x))[0] == 200


def test_binary_sizes_that_do_not_add_up(server):
    header = json.dumps({"inputs": [{"name": "image", "shape": [1, 1, 28, 28], "datatype": "FP32",
                                     "parameters": {"binary_data_size": 3136}}]}).encode()
    short = header + b"\0" * 100
    status, _, answer = request(server, "POST", "/v2/models/lenet/infer", short,
                                {"Inference-Header-Content-Length": str(len(header))})
    assert status == 400 and "does not fit the 100 binary bytes" in answer["error"]
    status, _, answer = request(server, "POST", "/v2/models/lenet/infer", header + b"\0" * 3140,
                                {"Inference-Header-Content-Length": str(len(header))})
    assert status == 400 and "4 binary bytes that no input" in answer["error"]
    status, _, answer = request(server, "POST", "/v2/models/lenet/infer", header,
                                {"Inference-Header-Content-Length": "999999"})
    assert status == 400 and "Inference-Header-Content-Length is 999999" in answer["error"]


def test_unknown_models_endpoints_and_methods(server):
    status, _, body = request(server, "GET", "/v2/models/nope")
    assert status == 404 and "unknown model 'nope'" in body["error"] and "lenet" in body["error"]
    assert request(server, "POST", "/v2/models/nope/infer", {"inputs": []})[0] == 404
    assert request(server, "GET", "/v2/models/nope/ready")[0] == 404
    status, _, body = request(server, "GET", "/v3/everything")
    assert status == 404 and "error" in body
    status, _, body = request(server, "GET", "/v2/models/lenet/infer")
    assert status == 405 and "error" in body


def test_a_model_that_fails_to_load_is_reported_by_name_and_the_others_serve(server):
    status, _, body = request(server, "GET", "/v2/models/truncated/ready")
    assert status == 503 and "truncated" in body["error"] and "SerializationError" in body["error"]
    status, _, body = request(server, "GET", "/v2/models/foreign")
    assert status == 503 and "exactly one model saved by oar.jit.save" in body["error"]
    status, _, body = request(server, "POST", "/v2/models/misconfigured/infer", infer_json(lenet_input()))
    assert status == 503 and "max_batch_size must be an int >= 0, got -1" in body["error"]
    _, _, index = request(server, "POST", "/v2/repository/index")
    states = {(e["name"], e.get("version")): e for e in index}
    assert states[("lenet", "2")]["state"] == "READY"
    assert states[("truncated", "1")]["state"] == "UNAVAILABLE" and "not valid JSON" in states[("truncated", "1")]["reason"]
    assert request(server, "POST", "/v2/models/lenet/infer", infer_json(lenet_input()))[0] == 200
    assert "model 'truncated' version 1 failed to load" in server.log()


def test_metrics_count_requests_latency_batches_and_in_flight(server):
    for _ in range(3):
        request(server, "POST", "/v2/models/lenet/versions/1/infer", infer_json(lenet_input()))
    request(server, "POST", "/v2/models/lenet/infer", b"{")
    request(server, "POST", "/v2/models/made-up-name/infer", b"{")
    status, headers, body = request(server, "GET", "/metrics")
    text = body.decode()
    assert status == 200 and "text/plain" in headers.get("content-type", headers.get("Content-Type", ""))
    counts = metric_values(text, "oar_inference_requests_total")
    assert counts[(("model", "lenet"), ("status", "200"), ("version", "1"))] >= 3
    assert counts[(("model", "lenet"), ("status", "400"), ("version", "2"))] >= 1
    assert metric_values(text, "oar_inference_failures_total")[(("model", "<unknown>"), ("status", "404"))] >= 1
    assert "made-up-name" not in text  # a client cannot grow the label set
    for family in ("oar_inference_request_duration_seconds_bucket", "oar_inference_queue_duration_seconds_bucket",
                   "oar_inference_batch_size_bucket", "oar_inference_in_flight_requests"):
        assert family in text


def metric_values(text: str, name: str) -> dict:
    """``{sorted label pairs: value}`` of one metric in Prometheus' text format."""
    from prometheus_client.parser import text_string_to_metric_families

    values = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                values[tuple(sorted(sample.labels.items()))] = sample.value
    return values


def test_struct_of_a_binary_bool_and_fp16_round_trip():
    from oar.serving.protocol import decode_inputs, encode_response, split_body

    specs = [{"name": "mask", "shape": [-1, 2], "dtype": "bool"}, {"name": "h", "shape": [2], "dtype": "float16"}]
    mask = np.array([[True, False]])
    half = np.array([1.5, -2.0], "float16")
    header = json.dumps({"inputs": [
        {"name": "mask", "shape": [1, 2], "datatype": "BOOL", "parameters": {"binary_data_size": 2}},
        {"name": "h", "shape": [2], "datatype": "FP16", "data": [1.5, -2.0]}]}).encode()
    payload, binary = split_body(header + mask.tobytes(), str(len(header)))
    got_mask, got_half = decode_inputs(payload, binary, specs)
    np.testing.assert_array_equal(got_mask, mask)
    np.testing.assert_array_equal(got_half, half)
    body, headers = encode_response("m", "1", None, [("h", True, half)])
    length = int(headers["Inference-Header-Content-Length"])
    assert struct.unpack("<2e", body[length:]) == (1.5, -2.0)

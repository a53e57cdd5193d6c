"""W10: a load test of oar's HTTP server (``python -m oar.serving``, oar-serving) on Paddle's tutorial LeNet.

    python bench/serving_load.py --threads 1                 # every configuration, 16 clients, 15 s each
    python bench/serving_load.py --threads 2 --duration 5 --configs batching no-batching

For each configuration a fresh server is started on 127.0.0.1 (a free port) over a model
repository holding the LeNet of bench/suite.py's W9 (``oar.serving.write_repository``, with the
configuration's ``config.json``), with the suite's thread count (the thread variables and
``"threads"`` in the model's config). After a short unmeasured warm-up, 16 clients send batch-1
requests back to back for 15 s each, every client over its own keep-alive connection.

The clients are asyncio tasks in this process, writing HTTP/1.1 by hand with the Open Inference
Protocol's binary tensor extension both ways (a JSON header, then the raw float32 input; the
output asked for as binary), which costs the client far less CPU than JSON or an HTTP library.
Client and server share the machine's cores, so the CPU each used is reported too. Every answer
is compared with what an in-process ``oar.inference`` Predictor gives for that input (float32
tolerance); a mismatch, a non-200 status or a broken connection counts as an error. One JSON
request per configuration checks the JSON form as well.

Reported per configuration: requests answered, errors, throughput (requests/s over the window),
client-side latency p50 and p99, the mean rows per batched run (the server's /metrics) and the
CPU seconds per second of server and clients.
"""

from __future__ import annotations

import pin_threads

if __name__ == "__main__":
    pin_threads.from_argv()  # before numpy loads: it reads the thread variables once

import argparse  # noqa: E402
import asyncio  # noqa: E402
import http.client  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

import numpy as np  # noqa: E402
import suite  # noqa: E402
from suite import Case  # noqa: E402

MODEL = "lenet"
CLIENTS = 16
DURATION_S = 15.0
WARMUP_S = 1.5  # at least; then until the rate settles (WARMUP_WINDOW_S windows within 10%), at most WARMUP_MAX_S
WARMUP_WINDOW_S, WARMUP_MAX_S = 0.5, 15.0
QUICK_DURATION_S, QUICK_WARMUP_S = 2.0, 0.5
PRIMED_BATCHES = 32  # the default max_batch_size: every batch size a batched run can have
POOL = 64  # distinct inputs the clients cycle through
READY_TIMEOUT_S = 120.0
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}


@dataclass(frozen=True)
class ServingConfig:
    key: str
    label: str
    config: dict  # the model's config.json (the thread count is added)
    workers: int = 1
    variant: bool = False  # beyond the two the targets compare; left out by --quick


CONFIGS = (
    ServingConfig("batching", "dynamic batching (default config)", {}),
    ServingConfig("no-batching", "no batching (max_batch_size 0)", {"max_batch_size": 0}),
    ServingConfig("batching-delay-2", "dynamic batching, max_queue_delay_ms 2", {"max_queue_delay_ms": 2},
                  variant=True),
    ServingConfig("no-batching-concurrency-2", "no batching, max_concurrency 2",
                  {"max_batch_size": 0, "max_concurrency": 2}, variant=True),
    ServingConfig("batching-workers-2", "dynamic batching, --workers 2", {}, workers=2, variant=True),
    ServingConfig("no-batching-workers-2", "no batching, --workers 2", {"max_batch_size": 0}, workers=2, variant=True),
)
CONFIG_BY_KEY = {c.key: c for c in CONFIGS}


# -- the model and what it should answer -----------------------------------------------------------

def save_model(directory: str) -> str:
    """The suite's W9 LeNet (Paddle's tutorial form, seeded weights) saved by ``oar.jit.save``; its prefix."""
    from paddle_api import PaddleAPIWorkloads

    import oar
    import oar.nn  # noqa: F401 - the layers

    return PaddleAPIWorkloads(oar).w9_save("lenet_doc", 1, directory)


def expected_outputs(prefix: str, inputs: np.ndarray, threads: int) -> list[np.ndarray]:
    """What an in-process Predictor answers for each batch-1 input. It first runs every batch size
    a batched run can have, on the servers' thread count (which picks the kernels' variants): the
    kernels compiled for them land in numba's disk cache, which the servers then load instead of
    compiling during the measurement (a fresh environment has none; a first compile takes seconds)."""
    from oar.inference import Config, create_predictor

    config = Config(prefix)
    config.set_cpu_math_library_num_threads(threads)
    predictor = create_predictor(config)
    for rows in range(1, PRIMED_BATCHES + 1):
        predictor.infer([np.zeros((rows, *inputs.shape[2:]), np.float32)])
    return [predictor.infer([x])[0] for x in inputs]


def request_inputs() -> np.ndarray:
    return np.random.default_rng([suite.SEED, 10]).standard_normal((POOL, 1, 1, 28, 28), dtype=np.float32)


def binary_request(host: str, port: int, input_name: str, x: np.ndarray) -> bytes:
    """One whole HTTP/1.1 request: the protocol's JSON header, then ``x``'s raw bytes."""
    raw = np.ascontiguousarray(x, dtype="<f4").tobytes()
    header = json.dumps({"inputs": [{"name": input_name, "shape": list(x.shape), "datatype": "FP32",
                                     "parameters": {"binary_data_size": len(raw)}}],
                         "outputs": [{"name": "output_0", "parameters": {"binary_data": True}}]},
                        separators=(",", ":")).encode()
    body = header + raw
    head = (f"POST /v2/models/{MODEL}/infer HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Content-Type: application/octet-stream\r\nInference-Header-Content-Length: {len(header)}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    return head + body


def decode_response(headers: dict[str, str], body: bytes) -> np.ndarray:
    """The first output of an Open Inference Protocol answer, binary or JSON."""
    length = headers.get("inference-header-content-length")
    if length is None:
        output = json.loads(body)["outputs"][0]
        return np.asarray(output["data"], dtype=np.float32).reshape(output["shape"])
    head = json.loads(body[:int(length)])
    output = head["outputs"][0]
    return np.frombuffer(body[int(length):], dtype="<f4").reshape(output["shape"])


# -- the clients ---------------------------------------------------------------------------------------

@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    messages: list[str] = field(default_factory=list)

    def error(self, message: str) -> None:
        self.errors += 1
        if len(self.messages) < 3:
            self.messages.append(message)


async def read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return status, headers, body


async def client(index: int, host: str, port: int, requests: list[bytes], expected: list[np.ndarray],
                 start: asyncio.Event, stop_at: list[float], tally: Tally | None) -> None:
    """Send requests back to back until ``stop_at[0]``; record into ``tally`` (None: warm-up)."""
    reader, writer = await asyncio.open_connection(host, port)
    await start.wait()
    i = index
    try:
        while time.perf_counter() < stop_at[0]:
            k = i % len(requests)
            i += CLIENTS
            sent = time.perf_counter()
            try:
                writer.write(requests[k])
                status, headers, body = await read_response(reader)
            except (OSError, asyncio.IncompleteReadError, ValueError) as error:
                if tally is not None:
                    tally.error(f"connection: {type(error).__name__}: {error}")
                writer.close()
                reader, writer = await asyncio.open_connection(host, port)
                continue
            took = time.perf_counter() - sent
            if tally is None:
                continue
            if status != 200:
                tally.error(f"HTTP {status}: {body[:200]!r}")
                continue
            try:
                got = decode_response(headers, body)
            except (ValueError, KeyError) as error:
                tally.error(f"undecodable answer: {error}")
                continue
            if got.shape != expected[k].shape or not np.allclose(got, expected[k], **TOLERANCE):
                tally.error(f"answer for input {k} differs from the Predictor's (max |diff| "
                            f"{float(np.max(np.abs(got - expected[k]))) if got.shape == expected[k].shape else 'shape'})")
                continue
            tally.latencies.append(took)
    finally:
        writer.close()


async def load(host: str, port: int, requests: list[bytes], expected: list[np.ndarray], seconds: float,
               tally: Tally | None) -> float:
    """``CLIENTS`` clients for ``seconds``; returns the wall time from the start to the last answer."""
    start, stop_at = asyncio.Event(), [0.0]
    tasks = [asyncio.create_task(client(i, host, port, requests, expected, start, stop_at, tally))
             for i in range(CLIENTS)]
    await asyncio.sleep(0.05)  # every connection open before the clock starts
    began = time.perf_counter()
    stop_at[0] = began + seconds
    start.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException) and tally is not None:
            tally.error(f"client: {type(result).__name__}: {result}")
    return time.perf_counter() - began


# -- the server ------------------------------------------------------------------------------------------

def get(host: str, port: int, path: str, timeout: float = 5.0) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def post_json(host: str, port: int, input_name: str, x: np.ndarray) -> np.ndarray:
    body = json.dumps({"inputs": [{"name": input_name, "shape": list(x.shape), "datatype": "FP32",
                                   "data": x.ravel().tolist()}]}).encode()
    connection = http.client.HTTPConnection(host, port, timeout=30)
    try:
        connection.request("POST", f"/v2/models/{MODEL}/infer", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {data[:200]!r}")
        return decode_response({k.lower(): v for k, v in response.getheaders()}, data)
    finally:
        connection.close()


def batch_metrics(host: str, port: int) -> tuple[float, float]:
    """The server's ``oar_inference_batch_size`` sum and count for the model (rows, runs)."""
    status, text = get(host, port, "/metrics")
    total = count = 0.0
    if status != 200:
        return total, count
    for line in text.decode().splitlines():
        if line.startswith("oar_inference_batch_size_sum") and f'model="{MODEL}"' in line:
            total += float(line.rsplit(" ", 1)[1])
        elif line.startswith("oar_inference_batch_size_count") and f'model="{MODEL}"' in line:
            count += float(line.rsplit(" ", 1)[1])
    return total, count


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its descendants (``--workers`` processes), from /proc."""
    parents, cpu = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    family, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, its_parent in parents.items():
            if its_parent == parent and child not in family:
                family.add(child)
                frontier.append(child)
    return sum(cpu.get(p, 0.0) for p in family)


def start_server(repository: str, threads: int, workers: int):
    """``python -m oar.serving`` over ``repository`` on a free port, ready (``oar.serving.ServerProcess``)."""
    from oar.serving import ServerProcess

    env = {**pin_threads.thread_environment(threads), "PYTHONWARNINGS": "ignore"}
    return ServerProcess(repository, "--workers", str(workers), "--log-level", "warning", env=env,
                         ready_timeout_s=READY_TIMEOUT_S).start()


# -- one configuration ---------------------------------------------------------------------------------

def warm_up(host: str, port: int, requests: list[bytes], expected: list[np.ndarray], least_s: float) -> None:
    """Unmeasured load for ``least_s`` seconds, then until two windows in a row answer within 10% of
    each other (a kernel compiled or a worker still loading makes the first ones slow)."""
    asyncio.run(load(host, port, requests, expected, least_s, None))
    rates: list[float] = []
    started = time.perf_counter()
    while time.perf_counter() - started < WARMUP_MAX_S:
        tally = Tally()
        wall = asyncio.run(load(host, port, requests, expected, WARMUP_WINDOW_S, tally))
        rates.append(len(tally.latencies) / wall)
        if len(rates) >= 2 and abs(rates[-1] - rates[-2]) <= 0.1 * max(rates[-1], rates[-2]):
            return


def measure_config(spec: ServingConfig, prefix: str, directory: str, threads: int, duration_s: float,
                   warmup_s: float, inputs: np.ndarray, expected: list[np.ndarray], input_name: str) -> Case:
    from oar.serving import write_repository

    repository = os.path.join(directory, spec.key)
    write_repository(prefix, repository, MODEL, config={**spec.config, "threads": threads})
    case = f"{spec.label}"
    server = None
    try:
        server = start_server(repository, threads, spec.workers)
        host, port = server.host, server.port
        tally = Tally()
        try:
            got = post_json(host, port, input_name, inputs[0])
            if not np.allclose(got, expected[0], **TOLERANCE):
                tally.error("the JSON request's answer differs from the Predictor's")
        except (OSError, RuntimeError, ValueError, KeyError) as error:
            tally.error(f"JSON request: {type(error).__name__}: {error}")
        requests = [binary_request(host, port, input_name, x) for x in inputs]
        warm_up(host, port, requests, expected, warmup_s)
        rows_before, runs_before = batch_metrics(host, port)
        server_cpu, client_cpu = tree_cpu_seconds(server.process.pid), time.process_time()
        wall = asyncio.run(load(host, port, requests, expected, duration_s, tally))
        server_cpu = tree_cpu_seconds(server.process.pid) - server_cpu
        client_cpu = time.process_time() - client_cpu
        rows_after, runs_after = batch_metrics(host, port)
    except (RuntimeError, OSError) as error:  # the server did not start, or died: a result to report
        return Case("W10", case, "req/s", higher_is_better=True,
                    unavailable=f"{type(error).__name__}: {error}"[:300])
    finally:
        if server is not None:
            server.stop()
    latencies = np.asarray(tally.latencies) * 1e3
    runs = runs_after - runs_before
    extra = {
        "requests": float(len(latencies)),
        "errors": float(tally.errors),
        "p50_ms": float(np.percentile(latencies, 50)) if len(latencies) else float("nan"),
        "p99_ms": float(np.percentile(latencies, 99)) if len(latencies) else float("nan"),
        # with --workers 2 /metrics may sum one process only (if PROMETHEUS_MULTIPROC_DIR is not shared)
        "mean_batch": (rows_after - rows_before) / runs if runs > 0 else float("nan"),
        "server_cpu": server_cpu / wall,
        "client_cpu": client_cpu / wall,
        "workers": float(spec.workers),
        "clients": float(CLIENTS),
        "seconds": wall,
    }
    note = "; ".join(tally.messages)
    return Case("W10", case, "req/s", [len(latencies) / wall], higher_is_better=True, note=note, extra=extra)


def load_test_cases(threads: int, quick: bool = False, keys: list[str] | None = None,
                    duration_s: float | None = None) -> list[Case]:
    """W10's cases at ``threads``: one per configuration (``keys``, default every one; --quick: the two
    the targets compare, briefly)."""
    try:
        import oar.inference  # noqa: F401
        import oar.serving  # noqa: F401
    except ImportError as error:
        return [Case("W10", c.label, "req/s", higher_is_better=True,
                     unavailable=f"oar.serving is not installed (oar-serving): {error}")
                for c in CONFIGS if not c.variant]
    chosen = [CONFIG_BY_KEY[k] for k in keys] if keys else [c for c in CONFIGS if not (quick and c.variant)]
    duration = duration_s if duration_s is not None else (QUICK_DURATION_S if quick else DURATION_S)
    warmup = QUICK_WARMUP_S if quick else WARMUP_S
    with tempfile.TemporaryDirectory(prefix="oar-bench-serving-") as directory:
        prefix = save_model(directory)
        inputs = request_inputs()
        expected = expected_outputs(prefix, inputs, threads)
        from oar.inference import Config, create_predictor

        input_name = create_predictor(Config(prefix)).get_input_names()[0]
        return [measure_config(spec, prefix, directory, threads, duration, warmup * spec.workers, inputs, expected,
                               input_name) for spec in chosen]


def markdown(cases: list[Case]) -> str:
    rows = [suite.w10_row(c.case, c.samples[0] if c.samples else None, c.extra, c.unavailable) for c in cases]
    return "\n".join([*suite.W10_TABLE_HEAD, *rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="the server's threads (default 1)")
    parser.add_argument("--duration", type=float, default=None, help=f"seconds of load per configuration "
                        f"(default {DURATION_S:g})")
    parser.add_argument("--configs", nargs="+", choices=list(CONFIG_BY_KEY), default=None,
                        help="configurations to run (default: every one)")
    parser.add_argument("--quick", action="store_true", help="the two main configurations, briefly")
    args = parser.parse_args(argv)
    cases = load_test_cases(args.threads, args.quick, args.configs, args.duration)
    print(markdown(cases))
    for case in cases:
        if case.note:
            print(f"{case.case}: {case.note}")
    return 0 if all(c.samples and c.extra["errors"] == 0 for c in cases) else 1


if __name__ == "__main__":
    sys.exit(main())

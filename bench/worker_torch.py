"""The PyTorch worker of the benchmark suite: the same workloads as bench/worker_oar.py, in torch.

    python bench/worker_torch.py W2 W3 --threads 1
    python bench/worker_torch.py W6 --threads 1 --export-onnx /tmp/lenet.onnx   # also writes the ONNX model

The weights come from bench/suite.py in Paddle's layout; ``torch_state`` converts them (Linear
weights transposed, batch-norm statistics renamed, q/k/v projections stacked into ``in_proj``).
"""

from __future__ import annotations

import pin_threads

pin_threads.from_argv()  # before numpy and the framework load: they read the thread variables once

import sys  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402
import suite  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from suite import Case, WorkerArgs, time_case  # noqa: E402
from torch import nn  # noqa: E402

FRAMEWORK = "torch"


def scalar(tensor: torch.Tensor) -> float:
    return float(tensor.detach().reshape(-1)[0])


# -- models ------------------------------------------------------------------------------------

def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


class LeNet(nn.Module):
    """paddle.vision.models.LeNet, layer for layer."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 6, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2),
                                      nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2, 2))
        self.fc = nn.Sequential(nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10))

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


class BasicBlock(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + x)


class SmallResNet(nn.Module):
    def __init__(self, channels: int = suite.RESNET_CHANNELS):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels),
                                  nn.ReLU())
        self.blocks = nn.Sequential(BasicBlock(channels), BasicBlock(channels))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))


def encoder() -> nn.Module:
    e = suite.ENCODER
    return nn.TransformerEncoderLayer(e["d_model"], e["nhead"], e["dim_feedforward"], dropout=0.0, batch_first=True)


def torch_state(state: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    """Paddle-layout weights as a torch state dict."""
    out: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        prefix, _, name = key.rpartition(".")
        prefix = prefix + "." if prefix else ""
        if name == "_mean":
            out[prefix + "running_mean"] = torch.from_numpy(value)
            out[prefix + "num_batches_tracked"] = torch.tensor(0)
        elif name == "_variance":
            out[prefix + "running_var"] = torch.from_numpy(value)
        elif value.ndim == 2:  # Linear: Paddle stores [in, out], torch [out, in]
            out[key] = torch.from_numpy(value.T.copy())
        else:
            out[key] = torch.from_numpy(value)
    for part in ("weight", "bias"):  # nn.MultiheadAttention keeps q, k and v in one projection
        if f"self_attn.q_proj.{part}" in out:
            qkv = [out.pop(f"self_attn.{p}_proj.{part}") for p in "qkv"]
            out[f"self_attn.in_proj_{part}"] = torch.cat(qkv, 0)
    return out


def loaded(model: nn.Module, name: str) -> nn.Module:
    model.load_state_dict(torch_state(suite.weights(name)), strict=True)
    return model


# -- steps: each returns (step, probe); see PaddleAPIWorkloads.step -------------------------------

def training_step(model: nn.Module, optimizer, x: np.ndarray, label: np.ndarray):
    x, label = torch.from_numpy(x), torch.from_numpy(label)

    def step():
        loss = F.cross_entropy(model(x), label)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    return step, lambda: scalar(step())


def adam(model: nn.Module) -> torch.optim.Optimizer:
    a = suite.ADAM
    return torch.optim.Adam(model.parameters(), lr=a["learning_rate"], betas=(a["beta1"], a["beta2"]), eps=a["epsilon"])


def make_step(workload: str) -> tuple[Callable[[], torch.Tensor], Callable[[], float]]:
    data = suite.inputs(workload)
    if workload == "W5":
        model = loaded(encoder(), "encoder")
        x = torch.from_numpy(data["x"])

        def encoder_step():
            out = model(x).mean()
            out.backward()
            model.zero_grad()
            return out

        return encoder_step, lambda: scalar(model(x).abs().mean())
    if workload == "W4":
        model = loaded(SmallResNet(), "resnet")
        m = suite.MOMENTUM
        optimizer = torch.optim.SGD(model.parameters(), lr=m["learning_rate"], momentum=m["momentum"])
    else:
        model = loaded(mlp() if workload == "W2" else LeNet(), "mlp" if workload == "W2" else "lenet")
        optimizer = adam(model)
    return training_step(model, optimizer, data["x"], data["label"])


# -- workloads ---------------------------------------------------------------------------------

def w1(args: WorkerArgs) -> list[Case]:
    data = suite.inputs("W1")
    x, y = torch.from_numpy(data["x"]), torch.from_numpy(data["y"])
    linear = loaded(nn.Linear(4, 4), "linear4")
    lx = torch.from_numpy(data["linear_x"])

    def linear_fwd_bwd():
        linear(lx).sum().backward()
        linear.zero_grad()

    return [
        time_case("W1", suite.W1_CASES[0], lambda: x + y, args.budget("W1 add"), "µs", check=scalar(x + y)),
        time_case("W1", suite.W1_CASES[1], linear_fwd_bwd, args.budget("W1 linear"), "µs",
                  check=scalar(linear(lx).sum())),
    ]


def step_workload(workload: str, args: WorkerArgs) -> list[Case]:
    step, probe = make_step(workload)
    check = probe()
    return [time_case(workload, suite.STEP_CASES[workload], step, args.budget(workload), "ms", check=check)]


def w6(args: WorkerArgs) -> list[Case]:
    model = loaded(LeNet(), "lenet").eval()
    data = suite.inputs("W6")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit is deprecated in favour of torch.export; it still works
        traced = torch.jit.freeze(torch.jit.trace(model, torch.from_numpy(data["b1"])))
    if args.extra.export_onnx:
        export_onnx(model, data["b1"], args.extra.export_onnx)
    cases = []
    for batch in ("b1", "b64"):
        x = torch.from_numpy(data[batch])

        def eager(x=x):
            with torch.no_grad():
                return model(x)

        def graph(x=x):
            with torch.no_grad():
                return traced(x)

        budget = args.budget(f"W6 {batch}")
        cases.append(time_case("W6", suite.w6_case(batch, "eager"), eager, budget, "ms", check=scalar(eager().sum())))
        cases.append(time_case("W6", suite.w6_case(batch, "graph"), graph, budget, "ms", check=scalar(graph().sum()),
                               note="torch.jit.trace + freeze"))
    return cases


def export_onnx(model: nn.Module, example: np.ndarray, path: str) -> None:
    """LeNet as ONNX (opset 17, dynamic batch) for the onnxruntime worker."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript-based exporter is deprecated; it needs no onnxscript
        torch.onnx.export(model, (torch.from_numpy(example),), path, dynamo=False, input_names=["x"],
                          output_names=["logits"], dynamic_axes={"x": {0: "batch"}}, opset_version=17)


def w7(args: WorkerArgs) -> list[Case]:
    budget = args.budget("W7")
    n, size = suite.GEMM_N, suite.ADD_SIZE
    m1, m2, bias = (torch.from_numpy(a) for a in suite.gemm_operands())
    m2_t = m2.T.contiguous()  # F.linear takes [out, in]: the same product as oar's linear(m1, m2)
    a1, a2 = torch.ones(size), torch.ones(size)
    return [
        suite.rate_case("W7", suite.W7_CASES["matmul"], lambda: torch.matmul(m1, m2), budget, 2 * n**3, "GFLOP/s"),
        suite.rate_case("W7", suite.W7_CASES["linear"], lambda: F.linear(m1, m2_t, bias), budget, 2 * n**3,
                        "GFLOP/s"),
        suite.rate_case("W7", suite.W7_CASES["add"], lambda: a1 + a2, budget, 3 * size * 4, "GB/s"),
    ]


WORKLOADS = {"W1": w1, "W6": w6, "W7": w7} | {
    name: (lambda args, name=name: step_workload(name, args)) for name in ("W2", "W3", "W4", "W5")}


def main(argv: list[str] | None = None) -> int:
    def extend(parser):
        parser.add_argument("--export-onnx", metavar="PATH", help="with W6: write the LeNet as ONNX to PATH")

    args = suite.parse_worker_args(__doc__.splitlines()[0], extend, argv)
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)  # no inter-op parallelism in eager mode; keep its pool from competing
    details = f"numpy {np.__version__}; torch.get_num_threads() = {torch.get_num_threads()}"
    return suite.run_worker(FRAMEWORK, torch.__version__, details, args, WORKLOADS)


if __name__ == "__main__":
    sys.exit(main())

"""The PyTorch worker of the benchmark suite: the same workloads as bench/worker_oar.py, in torch.

    python bench/worker_torch.py W2 W3 --threads 1
    python bench/worker_torch.py W6 --threads 1 --export-onnx /tmp/lenet.onnx   # also writes the ONNX model
    python bench/worker_torch.py W9 --threads 1 --export-onnx-dir /tmp/w9      # W9's ONNX models, no timing

The weights come from bench/suite.py in Paddle's layout; ``torch_state`` converts them (Linear
weights transposed, batch-norm statistics renamed, q/k/v projections stacked into ``in_proj``).
W9's models are written here layer for layer as Paddle's (and oar's) ``vision.models`` write them,
with Paddle's layer names, so that suite.seeded_state gives them the same weights (torchvision is
not needed); W9 times them in eager mode under ``no_grad`` (a reference), and ``--export-onnx-dir``
exports them with ``torch.onnx.export`` for the ONNX Runtime worker. W15 reuses them, with copies of
paddle_api's depthwise-separable block and attention decoder (an embedding's and a recurrent cell's
2-D weights keep their layout: only Linear's are transposed, ``same_layout``).
"""

from __future__ import annotations

import pin_threads

pin_threads.from_argv()  # before numpy and the framework load: they read the thread variables once

import contextlib  # noqa: E402
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


# -- W9's models, with Paddle's layer names ----------------------------------------------------------

def lenet_doc() -> nn.Module:
    """LeNet as Paddle's tutorial writes it (a Sequential: Conv2D(1, 6, 5, padding=2) first)."""
    return nn.Sequential(nn.Conv2d(1, 6, 5, stride=1, padding=2), nn.ReLU(), nn.MaxPool2d(2, 2),
                         nn.Conv2d(6, 16, 5, stride=1), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Flatten(1),
                         nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10))


class ResNetBlock(nn.Module):
    """paddle.vision.models.resnet.BasicBlock."""

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + identity)


class ResNet18(nn.Module):
    """paddle.vision.models.resnet18(): the layout and names of torchvision's resnet18 too."""

    def __init__(self, num_classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        inplanes, stages = 64, []
        for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            downsample = None
            if stride != 1 or inplanes != planes:
                downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride=stride, bias=False),
                                           nn.BatchNorm2d(planes))
            stages.append(nn.Sequential(ResNetBlock(inplanes, planes, stride, downsample), ResNetBlock(planes, planes)))
            inplanes = planes
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def conv_bn_relu6(inp: int, oup: int, kernel: int = 3, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(inp, oup, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(oup), nn.ReLU6())


class InvertedResidual(nn.Module):
    """paddle.vision.models.mobilenetv2.InvertedResidual."""

    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: int):
        super().__init__()
        hidden = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = [conv_bn_relu6(inp, hidden, kernel=1)] if expand_ratio != 1 else []
        layers += [conv_bn_relu6(hidden, hidden, stride=stride, groups=hidden),
                   nn.Conv2d(hidden, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    """paddle.vision.models.mobilenet_v2() at scale 1.0 (every channel count a multiple of 8)."""

    def __init__(self, num_classes: int = 1000):
        super().__init__()
        features, inp = [conv_bn_relu6(3, 32, stride=2)], 32
        for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                           (6, 320, 1, 1)):
            for i in range(n):
                features.append(InvertedResidual(inp, c, s if i == 0 else 1, t))
                inp = c
        features.append(conv_bn_relu6(inp, 1280, kernel=1))
        self.features = nn.Sequential(*features)
        self.pool2d_avg = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool2d_avg(self.features(x)), 1))


W9_BUILDERS = {"lenet_doc": lenet_doc, "resnet18": ResNet18, "mobilenet_v2": MobileNetV2, "encoder": encoder}


# -- W15's own models, with Paddle's layer names (bench/paddle_api.py's make_models) ------------------

def depthwise_separable() -> nn.Module:
    """MobileNet's depthwise-separable block as users write it (the convolutions keep their bias)."""
    c, out = suite.W15_DWSEP["channels"], suite.W15_DWSEP["out"]
    return nn.Sequential(nn.Conv2d(c, c, 3, padding=1, groups=c), nn.BatchNorm2d(c), nn.ReLU(),
                         nn.Conv2d(c, out, 1), nn.BatchNorm2d(out), nn.ReLU())


class AttentionDecoder(nn.Module):
    """paddle_api's AttentionDecoder, line for line. torch's LSTMCell keeps Paddle's layout and gate
    order (``weight_ih [4 * hidden, input]``, ``weight_hh [4 * hidden, hidden]``, i, f, g, o) and
    returns ``(h, c)`` where Paddle's returns ``(h, (h, c))``."""

    def __init__(self, vocab: int, embedding: int, hidden: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embedding)
        self.lstm_cell = nn.LSTMCell(embedding, hidden)
        self.attention_out = nn.Linear(2 * hidden, hidden)
        self.output = nn.Linear(hidden, vocab)

    def forward(self, token, states, encoder_out):
        h, c = self.lstm_cell(self.embedding(token), states)
        scores = torch.bmm(h.unsqueeze(1), encoder_out.transpose(1, 2))  # [batch, 1, source]
        context = torch.bmm(F.softmax(scores, dim=-1), encoder_out).squeeze(1)
        return self.output(torch.tanh(self.attention_out(torch.cat([h, context], dim=-1)))), (h, c)


def decoder() -> nn.Module:
    d = suite.W15_DECODER
    return AttentionDecoder(d["vocab"], d["embedding"], d["hidden"])


BUILDERS = W9_BUILDERS | {"dwsep": depthwise_separable, "decoder": decoder}


def same_layout(model: nn.Module) -> frozenset[str]:
    """The 2-D weights of ``model`` that torch and Paddle store alike: an embedding's ``[vocab, dim]``,
    a recurrent cell's ``[gates * hidden, input]``; only Linear's are ``[in, out]`` in Paddle."""
    return frozenset(f"{prefix}.{name}" if prefix else name for prefix, module in model.named_modules()
                     if not isinstance(module, (nn.Linear, nn.MultiheadAttention))
                     for name, value in module.named_parameters(recurse=False) if value.ndim == 2)


def paddle_shapes(model: nn.Module) -> dict[str, list[int]]:
    """``model``'s state dict as Paddle names and shapes (the inverse of ``torch_state``)."""
    shapes: dict[str, list[int]] = {}
    keep = same_layout(model)
    for key, value in model.state_dict().items():
        prefix, _, name = key.rpartition(".")
        prefix = prefix + "." if prefix else ""
        if name == "num_batches_tracked":
            continue
        if name in ("running_mean", "running_var"):
            shapes[prefix + ("_mean" if name == "running_mean" else "_variance")] = list(value.shape)
        elif name in ("in_proj_weight", "in_proj_bias"):  # q, k, v stacked: Paddle keeps three projections
            d = value.shape[0] // 3
            for part in "qkv":  # a weight in Paddle's [in, out]
                shapes[f"{prefix}{part}_proj.{name[len('in_proj_'):]}"] = [value.shape[1], d] if value.ndim == 2 else [d]
        elif value.ndim == 2 and key not in keep:
            shapes[key] = list(value.shape)[::-1]
        else:
            shapes[key] = list(value.shape)
    return shapes


def w9_model(name: str) -> nn.Module:
    """W9's ``name`` (or W15's ``dwsep`` and ``decoder``) in eval mode with suite.seeded_state's weights."""
    model = BUILDERS[name]()
    state = torch_state(suite.seeded_state(name, paddle_shapes(model)), same_layout(model))
    model.load_state_dict(state, strict=True)
    return model.eval()


def torch_state(state: dict[str, np.ndarray], keep: frozenset[str] = frozenset()) -> dict[str, torch.Tensor]:
    """Paddle-layout weights as a torch state dict; the 2-D weights in ``keep`` are stored alike
    (``same_layout``), every other 2-D weight is a Linear's."""
    out: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        prefix, _, name = key.rpartition(".")
        prefix = prefix + "." if prefix else ""
        if name == "_mean":
            out[prefix + "running_mean"] = torch.from_numpy(value)
            out[prefix + "num_batches_tracked"] = torch.tensor(0)
        elif name == "_variance":
            out[prefix + "running_var"] = torch.from_numpy(value)
        elif value.ndim == 2 and key not in keep:  # Linear: Paddle stores [in, out], torch [out, in]
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

def momentum(model: nn.Module) -> torch.optim.Optimizer:
    """Paddle's Momentum (``v = momentum * v + g; p -= lr * v``): torch's SGD without dampening."""
    m = suite.MOMENTUM
    return torch.optim.SGD(model.parameters(), lr=m["learning_rate"], momentum=m["momentum"])


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
        optimizer = momentum(model)
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


def w9(args: WorkerArgs) -> list[Case]:
    """W9's models in eager mode under ``no_grad`` (the reference column), or, with
    ``--export-onnx-dir``, their ONNX files for the ONNX Runtime worker (and no timing)."""
    if args.extra.export_onnx_dir:
        export_w9_onnx(args.extra.export_onnx_dir)
        return []
    runs = {}
    for name, (_, _, batches) in suite.W9_MODELS.items():
        model = w9_model(name)
        for batch in batches:
            x = torch.from_numpy(suite.inputs(name)[f"b{batch}"])

            def eager(model=model, x=x):
                with torch.no_grad():
                    return model(x).numpy()

            runs[(name, batch)] = eager
    return suite.w9_cases("torch", runs, args, "torch eager, no_grad")


def export_w9_onnx(directory: str) -> None:
    """W9's models as ONNX (``torch.onnx.export``, opset 17): ``suite.w9_prefix(...) + ".onnx"``, a
    dynamic batch unless the model is saved per batch."""
    for name, (_, _, batches) in suite.W9_MODELS.items():
        model = w9_model(name)
        for batch in batches:
            path = suite.w9_prefix(directory, name, batch) + ".onnx"
            fixed = name in suite.W9_FIXED_BATCH
            dynamic = None if fixed else {"x": {0: "batch"}, "y": {0: "batch"}}
            with warnings.catch_warnings(), torch.no_grad(), mha_fastpath(False):
                warnings.simplefilter("ignore")  # the TorchScript-based exporter is deprecated; it needs no onnxscript
                torch.onnx.export(OneInput(model), (torch.from_numpy(suite.inputs(name)[f"b{batch}"]),), path, dynamo=False,
                                  input_names=["x"], output_names=["y"], dynamic_axes=dynamic, opset_version=17)
            if not fixed:
                break  # one file serves every batch


class OneInput(nn.Module):
    """``model`` with ``forward(x)`` alone: the exporter would otherwise trace the encoder layer's
    optional arguments (``is_causal``) as inputs, which ``scaled_dot_product_attention`` refuses."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)


@contextlib.contextmanager
def mha_fastpath(enabled: bool):
    """The encoder layer's fused inference kernel (``aten::_transformer_encoder_layer_fwd``) on or
    off: ONNX has no such op, so the exporter needs the layer's plain ops."""
    before = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(enabled)
    try:
        yield
    finally:
        torch.backends.mha.set_fastpath_enabled(before)


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


# -- W15: bench/paddle_api.py's w15_builds, in torch ------------------------------------------------

def without_dropout(model: nn.Module, fn: Callable[[], torch.Tensor]) -> float:
    """``scalar(fn())`` with ``model``'s Dropout layers off (PaddleAPIWorkloads.without_dropout)."""
    dropouts = [module for module in model.modules() if isinstance(module, nn.Dropout)]
    for module in dropouts:
        module.eval()
    try:
        return scalar(fn())
    finally:
        for module in dropouts:
            module.train()


def eager_inference(model: nn.Module, x: np.ndarray):
    model.eval()
    x = torch.from_numpy(x)

    def eager():
        with torch.no_grad():
            return model(x)

    return eager, lambda: scalar(eager().abs().mean())


def w15_decoder(mode: str, data: dict[str, np.ndarray]):
    """PaddleAPIWorkloads.decoder: ``mode`` "train" (one teacher-forced Adam step) or "greedy"."""
    d = suite.W15_DECODER
    model = w9_model("decoder")
    encoder_out, tokens = torch.from_numpy(data["encoder_out"]), torch.from_numpy(data["tokens"])

    def initial_states():
        h = encoder_out[:, -1]
        return h, torch.zeros_like(h)

    if mode == "greedy":
        def greedy():
            with torch.no_grad():
                states, token, decoded = initial_states(), torch.full([d["batch"]], d["bos"], dtype=torch.int64), []
                for _ in range(d["steps"]):
                    logits, states = model(token, states, encoder_out)
                    token = torch.argmax(logits, dim=-1)
                    decoded.append(token)
                return torch.stack(decoded, dim=1), logits

        return greedy, lambda: scalar(greedy()[1].abs().mean())
    model.train()
    optimizer = adam(model)

    def step():
        states, losses = initial_states(), []
        for t in range(d["steps"]):
            logits, states = model(tokens[:, t], states, encoder_out)
            losses.append(F.cross_entropy(logits, tokens[:, t + 1]))
        loss = sum(losses) / d["steps"]
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    return step, lambda: scalar(step())


TRACED_NOTE = "torch.jit.trace, not frozen (a call without no_grad records autograd, as Paddle's to_static does)"


def converted_lenet(x: np.ndarray, no_grad: bool):
    """The vision LeNet in eval mode through ``torch.jit.trace`` (torch's closest to ``to_static``),
    not frozen: its parameters stay parameters, so a call without no_grad builds the autograd graph
    as a converted Paddle model's does."""
    model = loaded(LeNet(), "lenet").eval()
    x = torch.from_numpy(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit is deprecated in favour of torch.export; it still works
        traced = torch.jit.trace(model, x)

    def call():
        if not no_grad:
            return traced(x)
        with torch.no_grad():
            return traced(x)

    return call, lambda: scalar(call().abs().mean())


def w15(args: WorkerArgs) -> list[Case]:
    data = suite.inputs("W15")

    def train(name: str, optimizer, batch: str):
        model = w9_model(name).train()
        step, _ = training_step(model, optimizer(model), data[batch], data[f"{batch}_label"])
        return step, lambda: without_dropout(model, step)

    def dwsep_train():
        model = w9_model("dwsep").train()
        optimizer = momentum(model)
        x = torch.from_numpy(data["dwsep"])

        def step():
            out = model(x).mean()
            out.backward()
            optimizer.step()
            optimizer.zero_grad()
            return out

        return step, lambda: scalar(step())

    builds = {
        "lenet_doc train": lambda: train("lenet_doc", adam, "lenet_doc"),
        "lenet_doc infer": lambda: eager_inference(w9_model("lenet_doc"), data["lenet_doc"]),
        "dwsep train": dwsep_train,
        "dwsep infer": lambda: eager_inference(w9_model("dwsep"), data["dwsep"]),
        "decoder train": lambda: w15_decoder("train", data),
        "decoder greedy": lambda: w15_decoder("greedy", data),
        "to_static grad": lambda: converted_lenet(data["to_static"], no_grad=False),
        "to_static no_grad": lambda: converted_lenet(data["to_static"], no_grad=True),
    }
    for name in suite.W15_VISION:
        for batch in suite.W15_VISION_SHAPES:
            builds[f"{name} {batch} train"] = lambda name=name, batch=batch: train(name, momentum, batch)
            builds[f"{name} {batch} infer"] = lambda name=name, batch=batch: eager_inference(w9_model(name),
                                                                                             data[batch])
    return [suite.w15_case(key, builds[key], args, note=TRACED_NOTE if key.startswith("to_static") else "")
            for key in suite.W15_CASES]


WORKLOADS = {"W1": w1, "W6": w6, "W7": w7, "W9": w9, "W15": w15} | {
    name: (lambda args, name=name: step_workload(name, args)) for name in ("W2", "W3", "W4", "W5")}


def main(argv: list[str] | None = None) -> int:
    def extend(parser):
        parser.add_argument("--export-onnx", metavar="PATH", help="with W6: write the LeNet as ONNX to PATH")
        parser.add_argument("--export-onnx-dir", metavar="DIR",
                            help="with W9: write its models as ONNX into DIR instead of timing them")

    args = suite.parse_worker_args(__doc__.splitlines()[0], extend, argv)
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)  # no inter-op parallelism in eager mode; keep its pool from competing
    details = f"numpy {np.__version__}; torch.get_num_threads() = {torch.get_num_threads()}"
    return suite.run_worker(FRAMEWORK, torch.__version__, details, args, WORKLOADS)


if __name__ == "__main__":
    sys.exit(main())

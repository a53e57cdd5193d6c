"""The workloads written once against Paddle's API, run by the oar worker with ``oar`` and by the
Paddle worker with ``paddle``: oar is meant to run Paddle code as it is, so both execute these very
lines (models, training steps, timed calls), each in its own process.

    from paddle_api import PaddleAPIWorkloads
    workloads = PaddleAPIWorkloads(oar)      # or paddle
    step, _ = workloads.step("W3")
    step()                                    # one LeNet Adam step; returns the loss
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import numpy as np
import suite
from suite import Case, WorkerArgs, time_case


def scalar(tensor) -> float:
    """A one-element tensor as a float (Paddle's ``float()`` wants zero dimensions)."""
    return float(np.asarray(tensor.numpy()).reshape(-1)[0])


def make_models(fw: ModuleType) -> dict[str, Callable[[], object]]:
    """Constructors of the suite's models in framework ``fw`` (``oar`` or ``paddle``)."""
    nn, F = fw.nn, fw.nn.functional

    class LeNet5(nn.Layer):
        """paddle.vision.models.LeNet, for a framework without vision.models."""

        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2D(1, 6, 3, padding=1), nn.ReLU(), nn.MaxPool2D(2, 2),
                                          nn.Conv2D(6, 16, 5), nn.ReLU(), nn.MaxPool2D(2, 2))
            self.fc = nn.Sequential(nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10))

        def forward(self, x):
            return self.fc(fw.flatten(self.features(x), 1))

    class BasicBlock(nn.Layer):
        def __init__(self, channels: int):
            super().__init__()
            self.conv1 = nn.Conv2D(channels, channels, 3, padding=1, bias_attr=False)
            self.bn1 = nn.BatchNorm2D(channels)
            self.conv2 = nn.Conv2D(channels, channels, 3, padding=1, bias_attr=False)
            self.bn2 = nn.BatchNorm2D(channels)

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            return F.relu(self.bn2(self.conv2(out)) + x)

    class SmallResNet(nn.Layer):
        def __init__(self, channels: int = suite.RESNET_CHANNELS):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2D(3, channels, 3, padding=1, bias_attr=False),
                                      nn.BatchNorm2D(channels), nn.ReLU())
            self.blocks = nn.Sequential(BasicBlock(channels), BasicBlock(channels))
            self.pool = nn.AdaptiveAvgPool2D(1)
            self.fc = nn.Linear(channels, 10)

        def forward(self, x):
            return self.fc(fw.flatten(self.pool(self.blocks(self.stem(x))), 1))

    def lenet():
        try:
            from importlib import import_module

            return import_module(f"{fw.__name__}.vision.models").LeNet()
        except (ImportError, AttributeError):
            return LeNet5()

    e = suite.ENCODER
    return {
        "linear4": lambda: nn.Linear(4, 4),
        "mlp": lambda: nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                     nn.Linear(512, 10)),
        "lenet": lenet,
        "resnet": SmallResNet,
        "encoder": lambda: nn.TransformerEncoderLayer(e["d_model"], e["nhead"], e["dim_feedforward"], dropout=0.0),
    }


class PaddleAPIWorkloads:
    """W1 to W5, W6 eager and W7's framework rows, in framework ``fw``."""

    def __init__(self, fw: ModuleType):
        self.fw = fw
        self.models = make_models(fw)

    def model(self, name: str):
        """A model of the suite with the suite's initial weights."""
        model = self.models[name]()
        model.set_state_dict({key: self.fw.to_tensor(value) for key, value in suite.weights(name).items()})
        return model

    # -- W9: the deployment path's models ----------------------------------------------------------

    def w9_model(self, name: str):
        """W9's ``name`` (a key of suite.W9_MODELS) in eval mode with suite.seeded_state's weights."""
        fw = self.fw
        nn = fw.nn
        if name == "lenet_doc":  # LeNet as Paddle's tutorial writes it (5x5 first convolution, padding 2)
            model = nn.Sequential(
                nn.Conv2D(in_channels=1, out_channels=6, kernel_size=5, stride=1, padding=2), nn.ReLU(),
                nn.MaxPool2D(kernel_size=2, stride=2),
                nn.Conv2D(in_channels=6, out_channels=16, kernel_size=5, stride=1), nn.ReLU(),
                nn.MaxPool2D(kernel_size=2, stride=2), nn.Flatten(),
                nn.Linear(in_features=400, out_features=120), nn.Linear(in_features=120, out_features=84),
                nn.Linear(in_features=84, out_features=10))
        elif name in ("resnet18", "mobilenet_v2"):
            from importlib import import_module

            model = getattr(import_module(f"{fw.__name__}.vision.models"), name)()
        elif name == "encoder":
            model = self.models["encoder"]()
        else:
            raise ValueError(f"no W9 model {name!r}")
        shapes = {key: list(value.shape) for key, value in model.state_dict().items()}
        model.set_state_dict({key: fw.to_tensor(value) for key, value in suite.seeded_state(name, shapes).items()})
        model.eval()
        return model

    def w9_save(self, name: str, batch: int, directory: str) -> str:
        """Save W9's ``name`` for inference as Paddle code does (``jit.to_static`` with an InputSpec,
        ``full_graph=True``, then ``jit.save``); returns the path prefix (``.json`` + ``.pdiparams``)."""
        fw = self.fw
        _, shape, _ = suite.W9_MODELS[name]
        spec = [fw.static.InputSpec([suite.w9_spec_batch(name, batch), *shape], "float32", name="x")]
        prefix = suite.w9_prefix(directory, name, batch)
        fw.jit.save(fw.jit.to_static(self.w9_model(name), input_spec=spec, full_graph=True), prefix)
        return prefix

    # -- steps: each returns a callable that runs one step and returns the loss -----------------

    def step(self, workload: str) -> tuple[Callable[[], object], Callable[[], float]]:
        """One step of ``workload`` and a probe: the number every framework must agree on (the
        first step's loss; for W5, whose loss is ~0 after LayerNorm, the mean |output|)."""
        fw = self.fw
        data = suite.inputs(workload)
        if workload == "W5":
            model = self.model("encoder")
            x = fw.to_tensor(data["x"])

            def encoder_step():
                out = model(x).mean()
                out.backward()
                model.clear_gradients()
                return out

            return encoder_step, lambda: scalar(model(x).abs().mean())
        model = self.model({"W2": "mlp", "W3": "lenet", "W4": "resnet"}[workload])
        if workload == "W4":
            optimizer = fw.optimizer.Momentum(parameters=model.parameters(), **suite.MOMENTUM)
        else:
            optimizer = fw.optimizer.Adam(parameters=model.parameters(), **suite.ADAM)
        x, label = fw.to_tensor(data["x"]), fw.to_tensor(data["label"])

        def training_step():
            loss = fw.nn.functional.cross_entropy(model(x), label)
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            return loss

        return training_step, lambda: scalar(training_step())

    # -- workloads --------------------------------------------------------------------------------

    def w1(self, args: WorkerArgs) -> list[Case]:
        fw = self.fw
        data = suite.inputs("W1")
        x, y = fw.to_tensor(data["x"]), fw.to_tensor(data["y"])
        linear = self.model("linear4")
        lx = fw.to_tensor(data["linear_x"])

        def linear_fwd_bwd():
            linear(lx).sum().backward()
            linear.clear_gradients()

        return [
            time_case("W1", suite.W1_CASES[0], lambda: x + y, args.budget("W1 add"), "µs", check=scalar(x + y)),
            time_case("W1", suite.W1_CASES[1], linear_fwd_bwd, args.budget("W1 linear"), "µs",
                      check=scalar(linear(lx).sum())),
        ]

    def step_workload(self, workload: str, args: WorkerArgs) -> list[Case]:
        step, probe = self.step(workload)
        check = probe()
        return [time_case(workload, suite.STEP_CASES[workload], step, args.budget(workload), "ms", check=check)]

    def w6_eager(self, args: WorkerArgs) -> tuple[object, list[Case]]:
        """LeNet in eval mode under no_grad at batch 1 and 64; returns the model too."""
        fw = self.fw
        model = self.model("lenet")
        model.eval()
        data = suite.inputs("W6")
        cases = []
        for batch in ("b1", "b64"):
            x = fw.to_tensor(data[batch])

            def eager(x=x):
                with fw.no_grad():
                    return model(x)

            cases.append(time_case("W6", suite.w6_case(batch, "eager"), eager, args.budget(f"W6 {batch}"), "ms",
                                   check=scalar(eager().sum())))
        return model, cases

    def w7(self, args: WorkerArgs) -> list[Case]:
        fw = self.fw
        budget = args.budget("W7")
        n, size = suite.GEMM_N, suite.ADD_SIZE
        m1, m2, bias = (fw.to_tensor(a) for a in suite.gemm_operands())
        a1, a2 = fw.to_tensor(np.ones(size, np.float32)), fw.to_tensor(np.ones(size, np.float32))
        return [
            suite.rate_case("W7", suite.W7_CASES["matmul"], lambda: fw.matmul(m1, m2), budget, 2 * n**3, "GFLOP/s"),
            suite.rate_case("W7", suite.W7_CASES["linear"], lambda: fw.nn.functional.linear(m1, m2, bias), budget,
                            2 * n**3, "GFLOP/s"),
            suite.rate_case("W7", suite.W7_CASES["add"], lambda: a1 + a2, budget, 3 * size * 4, "GB/s"),
        ]

    def workloads(self) -> dict[str, Callable[[WorkerArgs], list[Case]]]:
        table = {"W1": self.w1, "W7": self.w7}
        for name in ("W2", "W3", "W4", "W5"):
            table[name] = lambda args, name=name: self.step_workload(name, args)
        return table

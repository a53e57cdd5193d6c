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

    class AttentionDecoder(nn.Layer):
        """The decoder of Paddle's seq2seq-with-attention tutorial, one step per call: an LSTMCell on the
        previous token's embedding, dot-product attention of its output over the encoder's states, and
        both, concatenated, through tanh(Linear) and Linear to the vocabulary's logits."""

        def __init__(self, vocab: int, embedding: int, hidden: int):
            super().__init__()
            self.embedding = nn.Embedding(vocab, embedding)
            self.lstm_cell = nn.LSTMCell(embedding, hidden)
            self.attention_out = nn.Linear(2 * hidden, hidden)
            self.output = nn.Linear(hidden, vocab)

        def forward(self, token, states, encoder_out):
            h, states = self.lstm_cell(self.embedding(token), states)
            scores = fw.bmm(h.unsqueeze(1), encoder_out.transpose([0, 2, 1]))  # [batch, 1, source]
            context = fw.bmm(F.softmax(scores, axis=-1), encoder_out).squeeze(1)
            return self.output(fw.tanh(self.attention_out(fw.concat([h, context], axis=-1)))), states

    def depthwise_separable():
        """MobileNet's block as users write it: a depthwise 3x3 and a pointwise 1x1 convolution, each
        followed by batch norm and ReLU (the convolutions keep their default bias)."""
        c, out = suite.W15_DWSEP["channels"], suite.W15_DWSEP["out"]
        return nn.Sequential(nn.Conv2D(c, c, 3, padding=1, groups=c), nn.BatchNorm2D(c), nn.ReLU(),
                             nn.Conv2D(c, out, 1), nn.BatchNorm2D(out), nn.ReLU())

    e, d = suite.ENCODER, suite.W15_DECODER
    return {
        "linear4": lambda: nn.Linear(4, 4),
        "mlp": lambda: nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                     nn.Linear(512, 10)),
        "lenet": lenet,
        "resnet": SmallResNet,
        "encoder": lambda: nn.TransformerEncoderLayer(e["d_model"], e["nhead"], e["dim_feedforward"], dropout=0.0),
        "dwsep": depthwise_separable,
        "decoder": lambda: AttentionDecoder(d["vocab"], d["embedding"], d["hidden"]),
    }


class PaddleAPIWorkloads:
    """W1 to W5, W6 eager, W7's framework rows and W15, in framework ``fw``."""

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
        """W9's ``name`` (a key of suite.W9_MODELS, or W15's ``dwsep`` and ``decoder``) in eval mode with
        suite.seeded_state's weights."""
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
        elif name in ("dwsep", "decoder"):  # W15's own
            model = self.models[name]()
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
        training_step = self.training_step(model, "momentum" if workload == "W4" else "adam", data["x"], data["label"])
        return training_step, lambda: scalar(training_step())

    def training_step(self, model, optimizer: str, x: np.ndarray, label: np.ndarray) -> Callable[[], object]:
        """One classifier step on ``(x, label)``: cross-entropy, backward, the ``optimizer``'s step
        ("adam" or "momentum", suite.ADAM and suite.MOMENTUM), clear; it returns the loss."""
        fw = self.fw
        if optimizer == "momentum":
            step_rule = fw.optimizer.Momentum(parameters=model.parameters(), **suite.MOMENTUM)
        else:
            step_rule = fw.optimizer.Adam(parameters=model.parameters(), **suite.ADAM)
        x, label = fw.to_tensor(x), fw.to_tensor(label)

        def training_step():
            loss = fw.nn.functional.cross_entropy(model(x), label)
            loss.backward()
            step_rule.step()
            step_rule.clear_grad()
            return loss

        return training_step

    # -- W15: models as users write them ---------------------------------------------------------

    def without_dropout(self, model, fn: Callable[[], object]) -> float:
        """``scalar(fn())`` with ``model``'s Dropout layers off: their masks differ between frameworks,
        so the first loss of a model with dropout (MobileNetV2) is compared without it."""
        dropouts = [layer for layer in model.sublayers() if isinstance(layer, self.fw.nn.Dropout)]
        for layer in dropouts:
            layer.eval()
        try:
            return scalar(fn())
        finally:
            for layer in dropouts:
                layer.train()

    def eager_inference(self, model, x: np.ndarray) -> tuple[Callable[[], object], Callable[[], float]]:
        """``model`` in eval mode called under no_grad, and its mean |output| as the probe."""
        fw = self.fw
        model.eval()
        x = fw.to_tensor(x)

        def eager():
            with fw.no_grad():
                return model(x)

        return eager, lambda: scalar(eager().abs().mean())

    def w15_builds(self) -> dict[str, Callable[[], tuple[Callable[[], object], Callable[[], float]]]]:
        """W15's cases (keys of suite.W15_CASES), each a function that builds the model and returns
        ``(fn, probe)``: the timed call and the number every framework must agree on (the first
        step's loss, or the mean |output|)."""
        fw = self.fw
        data = suite.inputs("W15")

        def train(name: str, optimizer: str, batch: str):
            model = self.w9_model(name)
            model.train()
            step = self.training_step(model, optimizer, data[batch], data[f"{batch}_label"])
            return step, lambda: self.without_dropout(model, step)

        def dwsep_train():
            model = self.w9_model("dwsep")
            model.train()
            optimizer = fw.optimizer.Momentum(parameters=model.parameters(), **suite.MOMENTUM)
            x = fw.to_tensor(data["dwsep"])

            def step():
                out = model(x).mean()
                out.backward()
                optimizer.step()
                optimizer.clear_grad()
                return out

            return step, lambda: scalar(step())

        builds = {
            "lenet_doc train": lambda: train("lenet_doc", "adam", "lenet_doc"),
            "lenet_doc infer": lambda: self.eager_inference(self.w9_model("lenet_doc"), data["lenet_doc"]),
            "dwsep train": dwsep_train,
            "dwsep infer": lambda: self.eager_inference(self.w9_model("dwsep"), data["dwsep"]),
            "decoder train": lambda: self.decoder("train", data),
            "decoder greedy": lambda: self.decoder("greedy", data),
            "to_static grad": lambda: self.converted_lenet(data["to_static"], no_grad=False),
            "to_static no_grad": lambda: self.converted_lenet(data["to_static"], no_grad=True),
        }
        for name in suite.W15_VISION:
            for batch in suite.W15_VISION_SHAPES:
                builds[f"{name} {batch} train"] = lambda name=name, batch=batch: train(name, "momentum", batch)
                builds[f"{name} {batch} infer"] = lambda name=name, batch=batch: self.eager_inference(
                    self.w9_model(name), data[batch])
        return builds

    def decoder(self, mode: str, data: dict[str, np.ndarray]) -> tuple[Callable[[], object], Callable[[], float]]:
        """The attention decoder over the given encoder states, its initial state the encoder's last
        (c zero): ``mode`` "train" is one Adam step on the teacher-forced loss (cross-entropy per step,
        averaged over the steps), "greedy" decodes under no_grad, each step's argmax fed back. The
        probe: the first loss, or the last step's mean |logits| (which every earlier token shapes)."""
        fw = self.fw
        d = suite.W15_DECODER
        decoder = self.w9_model("decoder")
        encoder_out, tokens = fw.to_tensor(data["encoder_out"]), fw.to_tensor(data["tokens"])

        def initial_states():
            h = encoder_out[:, -1]
            return h, fw.zeros_like(h)

        if mode == "greedy":
            def greedy():
                with fw.no_grad():
                    states, token, decoded = initial_states(), fw.full([d["batch"]], d["bos"], dtype="int64"), []
                    for _ in range(d["steps"]):
                        logits, states = decoder(token, states, encoder_out)
                        token = fw.argmax(logits, axis=-1)
                        decoded.append(token)
                    return fw.stack(decoded, axis=1), logits

            return greedy, lambda: scalar(greedy()[1].abs().mean())
        decoder.train()
        optimizer = fw.optimizer.Adam(parameters=decoder.parameters(), **suite.ADAM)

        def step():
            states, losses = initial_states(), []
            for t in range(d["steps"]):
                logits, states = decoder(tokens[:, t], states, encoder_out)
                losses.append(fw.nn.functional.cross_entropy(logits, tokens[:, t + 1]))
            loss = sum(losses) / d["steps"]
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            return loss

        return step, lambda: scalar(step())

    def converted_lenet(self, x: np.ndarray, no_grad: bool) -> tuple[Callable[[], object], Callable[[], float]]:
        """vision.models.LeNet (the suite's weights) in eval mode, converted by ``jit.to_static`` as
        Paddle code converts it (a dynamic-batch InputSpec, full graph) and called as most users call
        a model after ``eval()``: without no_grad, or (``no_grad``) under it."""
        fw = self.fw
        model = self.model("lenet")
        model.eval()
        spec = [fw.static.InputSpec([None, 1, 28, 28], "float32", name="x")]
        static = fw.jit.to_static(model, input_spec=spec, full_graph=True)
        x = fw.to_tensor(x)

        def call():
            if not no_grad:
                return static(x)
            with fw.no_grad():
                return static(x)

        return call, lambda: scalar(call().abs().mean())

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

    def w15(self, args: WorkerArgs) -> list[Case]:
        builds = self.w15_builds()
        return [suite.w15_case(key, builds[key], args) for key in suite.W15_CASES]

    def workloads(self) -> dict[str, Callable[[WorkerArgs], list[Case]]]:
        table = {"W1": self.w1, "W7": self.w7, "W15": self.w15}
        for name in ("W2", "W3", "W4", "W5"):
            table[name] = lambda args, name=name: self.step_workload(name, args)
        return table

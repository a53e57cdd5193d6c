"""oar.slim.dist: the distillation losses against numpy and finite differences, ``Distill`` capturing
the configured intermediate outputs (checked against the layers run by hand), its errors, one
training step that leaves the teacher alone, and a small student distilled from the digits LeNet."""

from __future__ import annotations

import copy
import doctest

import numpy as np
import pytest

import oar
import oar.slim
import oar.slim.dist
from oar import nn
from oar.slim.dist import LOSSES, Distill, DistillError, fsp_loss, fsp_matrix, kl_loss, l2_loss, soft_label_loss
from oar.testing import OpCase, check_grad, check_output, sum_tolerance
from oar.vision.models import LeNet

from .conftest import accuracy, batches


def test_docstring_examples_run():
    assert doctest.testmod(oar.slim.dist, optionflags=doctest.ELLIPSIS).failed == 0


def test_names_load_from_oar_slim():
    assert oar.slim.Distill is Distill and oar.slim.soft_label_loss is soft_label_loss


# --- numpy references, in float64 --------------------------------------------------------------

def np_log_softmax(x):
    z = x - x.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def np_soft_label(s, t, ts=1.0, tt=1.0):
    return float(np.mean(-(np.exp(np_log_softmax(t / tt)) * np_log_softmax(s / ts)).sum(-1)))


def np_kl(s, t, temperature=1.0):
    log_s, log_t = np_log_softmax(s / temperature), np_log_softmax(t / temperature)
    return float(temperature ** 2 * np.mean((np.exp(log_t) * (log_t - log_s)).sum(-1)))


def np_fsp_matrix(x, y):
    n, c1, h, w = x.shape
    return x.reshape(n, c1, h * w) @ y.reshape(n, y.shape[1], h * w).transpose(0, 2, 1) / (h * w)


def np_fsp(sa, sb, ta, tb):
    return float(np.mean((np_fsp_matrix(sa, sb) - np_fsp_matrix(ta, tb)) ** 2))


rng = np.random.default_rng(0)
LOGITS = [rng.standard_normal((5, 7)) * 3, rng.standard_normal((5, 7)) * 3]
SEQUENCE_LOGITS = [rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))]
FEATURES = [rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((2, 3, 4, 5))]
# Student maps 3 and 4 channels at 4x4; teacher maps 3 and 4 channels at 6x6: only channels must match.
FSP_MAPS = [rng.standard_normal((2, 3, 4, 4)), rng.standard_normal((2, 4, 4, 4)),
            rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((2, 4, 6, 6))]

CASES = [
    OpCase("soft_label_loss", soft_label_loss, np_soft_label, LOGITS),
    OpCase("soft_label_loss", lambda s, t: soft_label_loss(s, t, 2.0, 5.0), lambda s, t: np_soft_label(s, t, 2.0, 5.0),
           LOGITS, id="soft_label_loss_temperatures"),
    OpCase("soft_label_loss", soft_label_loss, np_soft_label, SEQUENCE_LOGITS, id="soft_label_loss_3d"),
    OpCase("kl_loss", kl_loss, np_kl, LOGITS),
    OpCase("kl_loss", lambda s, t: kl_loss(s, t, 4.0), lambda s, t: np_kl(s, t, 4.0), LOGITS, id="kl_loss_t4"),
    OpCase("kl_loss", kl_loss, np_kl, SEQUENCE_LOGITS, id="kl_loss_3d"),
    OpCase("l2_loss", l2_loss, lambda a, b: float(np.mean((a - b) ** 2)), FEATURES),
    OpCase("fsp_matrix", fsp_matrix, np_fsp_matrix, FSP_MAPS[:2]),
    OpCase("fsp_loss", fsp_loss, np_fsp, FSP_MAPS),
    # PaddleSlim's config names: CELoss divides both logits by one temperature; KLLoss is
    # kl_div(log_softmax(s/T), softmax(t/T), reduction="mean"), a mean over classes too, without T**2.
    OpCase("CELoss", lambda s, t: LOSSES["CELoss"][0](s, t, temperature=3.0),
           lambda s, t: np_soft_label(s, t, 3.0, 3.0), LOGITS),
    OpCase("KLLoss", lambda s, t: LOSSES["KLLoss"][0](s, t, temperature=3.0),
           lambda s, t: np_kl(s, t, 3.0) / (9.0 * s.shape[-1]), LOGITS),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_loss_values_match_numpy(case):
    for dtype in ("float32", "float64"):
        check_output(case, dtype)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_loss_gradients_match_finite_differences(case):
    check_grad(case)  # with respect to every input: student's and teacher's


def test_kl_is_soft_label_minus_teacher_entropy_times_t_squared():
    s, t = (oar.to_tensor(a.astype(np.float32)) for a in LOGITS)
    p = np.exp(np_log_softmax(LOGITS[1] / 4.0))
    entropy = float(np.mean(-(p * np.log(p)).sum(-1)))
    got, expected = float(kl_loss(s, t, 4.0)), 16.0 * (float(soft_label_loss(s, t, 4.0, 4.0)) - entropy)
    np.testing.assert_allclose(got, expected, rtol=1e-4)
    assert float(kl_loss(t, t, 4.0)) == pytest.approx(0.0, abs=1e-6)


def test_shape_errors_name_the_shapes():
    a, b = oar.ones([2, 3, 4, 4]), oar.ones([2, 3, 5, 4])
    with pytest.raises(DistillError, match=r"l2_loss.*\[2, 3, 4, 4\] and \[2, 3, 5, 4\]"):
        l2_loss(a, b)
    with pytest.raises(DistillError, match=r"kl_loss.*\[2, 10\] and \[2, 12\]"):
        kl_loss(oar.ones([2, 10]), oar.ones([2, 12]))
    with pytest.raises(ValueError, match=r"fsp_matrix.*same N, H and W, got \[2, 3, 4, 4\] and \[2, 3, 5, 4\]"):
        fsp_loss(a, b, a, a)
    with pytest.raises(DistillError, match=r"FSP tensors.*\[2, 3, 3\] and \[2, 3, 5\]"):
        fsp_loss(a, a, a, oar.ones([2, 5, 4, 4]))


# --- Distill -----------------------------------------------------------------------------------

def run_prefix(sequential, x, n):
    for layer in list(sequential)[:n]:
        x = layer(x)
    return x


@pytest.fixture(scope="module")
def x(digits):
    return oar.to_tensor(digits["x_test"][:32])


@pytest.fixture()
def pair(float_lenet):
    oar.seed(1)
    return LeNet(), copy.deepcopy(float_lenet)


def test_distill_captures_the_configured_tensors(pair, x):
    student, teacher = pair
    configs = [
        {"loss_function": "l2", "weight": 0.5, "layers": [{"layers_name": ["features.3", "features.3"]}]},
        {"loss_function": "l2", "io": ["input", "input"], "layers": [{"layers_name": ["fc.0", "fc.0"]}]},
        {"loss_function": "kl", "temperature": 2.0, "layers": [{"layers_name": ["fc.2", "fc.2"], "weight": 3.0}]},
    ]
    distill = Distill(configs, student, teacher)
    distill_loss, student_out, teacher_out = distill(x)
    with oar.no_grad():
        s4, t4 = run_prefix(student.features, x, 4).numpy(), run_prefix(teacher.features, x, 4).numpy()
        s_flat, t_flat = (oar.flatten(m.features(x), 1).numpy() for m in (student, teacher))
        s_logits, t_logits = student(x).numpy(), teacher(x).numpy()
    np.testing.assert_array_equal(student_out.numpy(), s_logits)
    np.testing.assert_array_equal(teacher_out.numpy(), t_logits)
    expected = {
        "l2_student_0_teacher_0_features.3_features.3": 0.5 * np.mean((s4.astype(np.float64) - t4) ** 2),
        "l2_student_0_teacher_0_fc.0_fc.0": np.mean((s_flat.astype(np.float64) - t_flat) ** 2),
        "kl_student_0_teacher_0_fc.2_fc.2": 3.0 * np_kl(s_logits.astype(np.float64), t_logits, 2.0),
    }
    assert list(distill.last_losses) == list(expected)
    for key, value in expected.items():
        rtol, atol = sum_tolerance("float32", terms=s4.size, scale=value)
        np.testing.assert_allclose(float(distill.last_losses[key]), value, rtol=rtol, atol=atol, err_msg=key)
    rtol, atol = sum_tolerance("float32", terms=s4.size, scale=sum(expected.values()))
    np.testing.assert_allclose(float(distill_loss), sum(expected.values()), rtol=rtol, atol=atol)
    # Hooks live only during the call: the models run alone afterwards as before.
    assert not any(layer._forward_post_hooks for m in pair for layer in m.sublayers(include_self=True))
    assert float(Distill(configs, student, teacher, return_model_outputs=False)(x)) == float(distill_loss)


def conv_net(width):
    return nn.Sequential(nn.Conv2D(1, width, 3, padding=1), nn.ReLU(), nn.Conv2D(width, 2 * width, 3, padding=1),
                         nn.ReLU(), nn.AdaptiveAvgPool2D(1), nn.Flatten(), nn.Linear(2 * width, 3))


def test_fsp_and_aligned_features_between_different_widths():
    oar.seed(0)
    student, teacher = conv_net(2), conv_net(4)
    x = oar.randn([3, 1, 6, 6])
    configs = [
        # FSP between the first conv's output and the second's: [N, C, C*2] matrices, widths differ.
        {"loss_function": "fsp", "layers": [{"layers_name": [["1", "3"], ["1", "3"]]}]},
        {"loss_function": "l2", "layers": [{"layers_name": ["3", "3"],
                                            "align_params": {"align_type": "1x1conv", "in_channel": 4, "out_channel": 8}}]},
    ]
    with pytest.raises(DistillError, match=r"fsp.*student_0 layer '1' output \[3, 2, 6, 6\].*teacher_0 layer '1' "
                                           r"output \[3, 4, 6, 6\].*FSP tensors must have one shape"):
        Distill(configs[:1], student, teacher)(x)
    # The same widths for FSP (a width-4 student), an aligned L2 from a width-2 one.
    student4 = conv_net(4)
    distill = Distill([configs[0]], student4, teacher)
    with oar.no_grad():
        sa, sb = run_prefix(student4, x, 2).numpy(), run_prefix(student4, x, 4).numpy()
        ta, tb = run_prefix(teacher, x, 2).numpy(), run_prefix(teacher, x, 4).numpy()
    np.testing.assert_allclose(float(distill(x)[0]), np_fsp(*(a.astype(np.float64) for a in (sa, sb, ta, tb))),
                               rtol=1e-4)
    distill = Distill(configs[1:], student, teacher)
    align = distill._align_layers[0]
    assert {id(p) for p in distill.parameters()} == {id(p) for p in [*student.parameters(), *align.parameters()]}
    distill(x)[0].backward()
    assert align.weight.grad is not None and student[2].weight.grad is not None
    assert all(p.grad is None for p in teacher.parameters())


def test_one_training_step_trains_the_student_only(pair, digits):
    student, teacher = pair
    configs = [{"loss_function": "soft_label", "student_temperature": 4.0, "teacher_temperature": 4.0,
                "weight": 16.0, "layers": [{"layers_name": ["fc.2", "fc.2"]}]},
               {"loss_function": "l2", "layers": [{"layers_name": ["features.3", "features.3"]}]}]
    distill = Distill(configs, student, teacher)
    assert not any(k.startswith("_teacher") for k in distill.state_dict())
    distill.train()
    assert student.training and not teacher.training and not teacher.features[0].training
    teacher_before = {k: v.numpy().copy() for k, v in teacher.state_dict().items()}
    student_before = {k: v.numpy().copy() for k, v in student.state_dict().items()}
    optimizer = oar.optimizer.Adam(parameters=distill.parameters(), learning_rate=1e-3)
    task = nn.CrossEntropyLoss()
    for xb, yb in list(batches(digits["x_train"], digits["y_train"], 64, seed=0))[:2]:
        distill_loss, logits, _ = distill(xb)
        loss = task(logits, yb) + distill_loss
        loss.backward()
        assert all(p.grad is None for p in teacher.parameters())
        optimizer.step()
        optimizer.clear_grad()
    for key, value in teacher.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), teacher_before[key], err_msg=key)
    assert all(not np.array_equal(v.numpy(), student_before[k]) for k, v in student.state_dict().items())


class WithSpare(nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc, self.spare = nn.Linear(784, 10), nn.Linear(10, 10)

    def forward(self, x):
        return self.fc(x)


def test_config_errors_name_what_is_wrong(pair, x):
    student, teacher = pair

    def config(**kw):
        layer = {"layers_name": kw.pop("layers_name", ["fc.2", "fc.2"])}
        return [{"loss_function": kw.pop("loss_function", "l2"), "layers": [layer], **kw}]

    with pytest.raises(DistillError, match=r"config 0 layer 0: teacher_0 \(LeNet\) has no layer 'fc.9'; its layers "
                                           r"are features, features.0"):
        Distill(config(layers_name=["fc.2", "fc.9"]), student, teacher)
    with pytest.raises(DistillError, match=r"unknown loss_function 'cosine'; use one of l2, MSELoss, soft_label"):
        Distill(config(loss_function="cosine"), student, teacher)
    with pytest.raises(DistillError, match=r"loss 'l2' takes no parameter 'temperature'"):
        Distill(config(temperature=2.0), student, teacher)
    with pytest.raises(DistillError, match=r"no model 'teacher_1'; the models are student_0, teacher_0"):
        Distill(config(model_name_pairs=["student_0", "teacher_1"]), student, teacher)
    with pytest.raises(DistillError, match=r"loss takes 2 layer\(s\) of student_0"):
        Distill(config(loss_function="fsp"), student, teacher)
    with pytest.raises(DistillError, match=r"non-empty list of dicts"):
        Distill([], student, teacher)
    with pytest.raises(DistillError, match=r"align_params needs align_type"):
        Distill(config(align_params={"align_type": "5x5conv", "in_channel": 1, "out_channel": 2}), student, teacher)
    with pytest.raises(DistillError, match=r"l2.*student_0 layer 'features.3' output \[32, 16, 10, 10\]; teacher_0 "
                                           r"layer 'fc.2' output \[32, 10\]"):
        Distill(config(layers_name=["features.3", "fc.2"]), student, teacher)(x)
    shared = nn.ReLU()
    twice = nn.Sequential(nn.Linear(784, 10), shared, nn.Linear(10, 10), shared)
    flat = oar.flatten(x, 1)
    with pytest.raises(DistillError, match=r"student_0 layer '1' output ran 2 times in one forward"):
        Distill(config(layers_name=["1", "0"]), twice, nn.Sequential(nn.Linear(784, 10)))(flat)
    unused = WithSpare()
    with pytest.raises(DistillError, match=r"teacher_0 layer 'spare' output: the layer did not run in forward"):
        Distill(config(layers_name=["0", "spare"]), twice, unused)(flat)


# --- a small experiment ------------------------------------------------------------------------

def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10))


def train_student(digits, teacher, seed, epochs=5):
    """Adam (2e-3) on cross-entropy, plus Hinton's KL at T = 4 from ``teacher`` when one is given."""
    oar.seed(seed)
    student = mlp()
    model = student if teacher is None else Distill(
        [{"loss_function": "kl", "temperature": 4.0, "layers": [{"layers_name": ["3", "fc.2"]}]}], student, teacher)
    model.train()
    optimizer = oar.optimizer.Adam(parameters=model.parameters(), learning_rate=2e-3)
    task = nn.CrossEntropyLoss()
    distill_losses = []
    for epoch in range(epochs):
        for xb, yb in batches(digits["x_train"], digits["y_train"], 64, seed + epoch):
            if teacher is None:
                loss = task(model(xb), yb)
            else:
                distill_loss, logits, _ = model(xb)
                loss = task(logits, yb) + distill_loss
                distill_losses.append(float(distill_loss))
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
    return accuracy(student, digits["x_test"], digits["y_test"]), distill_losses


def test_a_small_mlp_distilled_from_lenet_trains(float_lenet, digits):
    teacher_accuracy = accuracy(float_lenet, digits["x_test"], digits["y_test"])
    plain = [train_student(digits, None, seed)[0] for seed in range(3)]
    runs = [train_student(digits, float_lenet, seed) for seed in range(3)]
    distilled = [a for a, _ in runs]
    print(f"teacher {teacher_accuracy:.4f}; MLP 784-32-10, 5 epochs, seeds 0-2: plain {np.mean(plain):.4f} "
          f"{plain}, distilled {np.mean(distilled):.4f} {distilled}")
    assert np.mean(distilled) >= 0.93
    for _, losses in runs:
        assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10])

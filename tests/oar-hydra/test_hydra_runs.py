"""oar-run end to end, in subprocesses: the run directory, a multirun, resume, bad configs,
missing packages, a user's own model and a third-party plugin's config groups."""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import oar

# A short run: 160 digits (5 batches of 32), one epoch, no progress lines.
QUICK = ["data.limit=160", "trainer.epochs=1", "trainer.verbose=0"]
AMP_INSTALLED = importlib.util.find_spec("oar.amp") is not None
DISTRIBUTED_INSTALLED = importlib.util.find_spec("oar.distributed") is not None


def test_a_short_run_fills_its_directory(oar_run):
    done = oar_run(*QUICK)
    assert done.returncode == 0, done.output
    run = done.run_dir
    for name in ("config.yaml", ".hydra/config.yaml", ".hydra/overrides.yaml", "oar-run.log", "lenet.pdparams",
                 "lenet.pdopt", "inference/lenet.json", "inference/lenet.pdiparams", "metrics.json", "curves.png",
                 "checkpoints/latest.json", "checkpoints/epoch_1/model.pdparams", "checkpoints/epoch_1/trainer.pdstate"):
        assert (run / name).is_file(), f"{name} is missing from the run directory"
    assert list((run / "tensorboard").glob("events.out.tfevents.*"))
    assert not (run / "profile").exists()  # trainer.profile is off by default
    assert (run / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    metrics = done.metrics()
    assert metrics["epochs"] == 1 and len(metrics["history"]) == 1
    assert 0 <= metrics["test_accuracy"] <= 1 and metrics["export_checked"] is True
    assert metrics["choices"]["model"] == "lenet" and metrics["overrides"] == QUICK
    config = (run / "config.yaml").read_text()
    assert "limit: 160" in config and "_target_: oar.vision.models.LeNet" in config
    log = (run / "oar-run.log").read_text()
    assert "LeNet on oar_hydra.data.digits (160 training" in log and "test accuracy" in log

    # The saved model and the exported one give the same predictions as each other.
    from oar.vision.models import LeNet

    network = LeNet()
    network.set_state_dict(oar.load(str(run / "lenet.pdparams")))
    network.eval()
    x = oar.rand([4, 1, 28, 28])
    exported = oar.jit.load(str(run / "inference" / "lenet"))
    np.testing.assert_allclose(exported(x).numpy(), network(x).numpy(), rtol=1e-4, atol=1e-5)


def test_trainer_profile_writes_a_trace_and_the_summary(oar_run):
    done = oar_run(*QUICK, "export=none", "trainer.profile=true")  # 5 batches: steps 2 to 4 recorded
    assert done.returncode == 0, done.output
    profile = done.run_dir / "profile"
    traces = list(profile.glob("oar-run_time_*.paddle_trace.json"))
    assert len(traces) == 1, sorted(profile.iterdir())
    events = json.loads(traces[0].read_text())["traceEvents"]
    kinds = {event.get("cat") for event in events}
    assert {"Operator", "Forward", "Backward", "Optimization", "Dataloader", "ProfileStep"} <= kinds, kinds
    names = {event["name"].partition("[")[0] for event in events}
    assert {"le_net_0", "conv2_d_0", "linear_0"} <= names, names  # layer forwards, by full_name()
    assert {"conv", "matmul", "conv_grad"} <= names, names  # eager ops and backward rules
    assert sorted(n for n in names if n.startswith("ProfileStep#")) == ["ProfileStep#2", "ProfileStep#3",
                                                                         "ProfileStep#4"]
    convs = [e for e in events if e["name"].startswith("conv[")]
    assert all("input_shapes" in e["args"] and "allocated_bytes" in e["args"] for e in convs)  # shapes, memory
    assert any(e["ph"] == "C" and e["name"] == "Tensor memory" for e in events)
    summary = (profile / "summary.txt").read_text()
    assert summary.startswith("oar-run trainer.profile: training steps 2-4 of the first epoch")
    for table in ("Overview Summary", "Operator Summary", "Layer Summary", "Memory Summary"):
        assert table in summary
    assert "Name" in summary and "Calls" in summary and "Peak increase" in summary
    log = (done.run_dir / "oar-run.log").read_text()
    assert f"profile: training steps 2-4 recorded; Chrome trace {traces[0]}" in log

    short = oar_run(*QUICK, "export=none", "trainer.profile=true", "data.limit=64")  # 2 batches: before step 2
    assert short.returncode == 0, short.output
    assert "trainer.profile: nothing recorded" in (short.run_dir / "oar-run.log").read_text()
    assert not (short.run_dir / "profile").exists()


def test_the_console_script_runs(oar_run):
    script = Path(sys.executable).with_name("oar-run")
    assert script.is_file(), "the oar-run console script is not installed next to the interpreter"
    done = oar_run("--help", command=[str(script)])
    assert done.returncode == 0, done.output
    assert "model: lenet, mlp, resnet" in done.stdout and "export: jit, none" in done.stdout


def test_multirun_prints_a_summary(oar_run):
    done = oar_run(*QUICK, "data.limit=64", "export=none", "optimizer.lr=1e-3,1e-2", multirun=True)
    assert done.returncode == 0, done.output
    sweep = done.run_dir
    rows = json.loads((sweep / "summary.json").read_text())
    assert [(r["job"], r["status"]) for r in rows] == [(0, "ok"), (1, "ok")]
    for row in rows:
        job = json.loads((sweep / str(row["job"]) / "metrics.json").read_text())
        assert row["test_accuracy"] == job["test_accuracy"] and row["test_loss"] == job["test_loss"]
    assert "optimizer.lr=0.001" in rows[0]["overrides"] and "optimizer.lr=0.01" in rows[1]["overrides"]
    table = (sweep / "summary.md").read_text()
    assert table in done.stdout  # printed at the end of the sweep
    cells = [[cell.strip() for cell in line.split("|")[1:-1]] for line in table.splitlines()]
    assert cells[0] == ["job", "overrides", "status", "test_accuracy", "test_loss", "train_loss", "epochs"]
    # Only what differs between the jobs is shown.
    assert cells[2][:4] == ["0", "optimizer.lr=0.001", "ok", f"{rows[0]['test_accuracy']:.4f}"]
    assert cells[3][:4] == ["1", "optimizer.lr=0.01", "ok", f"{rows[1]['test_accuracy']:.4f}"]


def test_resume_continues_the_same_trajectory(oar_run, tmp_path):
    # MLP with Adam and a cosine schedule: parameters, moments, the schedule and the data order all matter.
    common = ["model=mlp", "data.limit=160", "trainer.epochs=2", "trainer.verbose=0", "export=none"]
    straight = oar_run(*common)
    assert straight.returncode == 0, straight.output
    # Interrupted after the first epoch (5 batches of 32), then resumed to the end.
    first = oar_run(*common, "trainer.max_steps=5")
    assert first.returncode == 0, first.output
    assert json.loads((first.run_dir / "checkpoints" / "latest.json").read_text())["epochs_done"] == 1
    resumed = oar_run(f"trainer.resume={first.run_dir}", "trainer.max_steps=null")  # the rest comes from the run
    assert resumed.returncode == 0, resumed.output

    expected = oar.load(str(straight.run_dir / "mlp.pdparams"))
    got = oar.load(str(resumed.run_dir / "mlp.pdparams"))
    assert sorted(got) == sorted(expected)
    for name in expected:
        np.testing.assert_array_equal(got[name].numpy(), expected[name].numpy(), err_msg=name)
    a, b = straight.metrics(), resumed.metrics()
    assert b["resumed_from"] == str(first.run_dir) and b["choices"]["model"] == "mlp"
    assert (b["test_accuracy"], b["test_loss"], b["epochs"]) == (a["test_accuracy"], a["test_loss"], 2)
    assert b["history"] == a["history"]
    assert "resumed from" in (resumed.run_dir / "oar-run.log").read_text()

    other = oar_run(f"trainer.resume={first.run_dir}", "model=lenet")  # the checkpoint holds an MLP
    assert other.returncode == 2 and "'model=lenet' chooses another 'model'" in other.stderr, other.output


@pytest.mark.parametrize(("override", "message", "status"), [
    ("trainer.batch_size=-1", "oar-run: error: trainer.batch_size must be a positive number, got -1", 2),
    ("trainer.batch_size=abc", "Value 'abc' of type 'str' could not be converted to Integer", 1),
    ("optimizer=rmsprop", "Could not find 'optimizer/rmsprop'", 1),
    # With oar-amp, amp has options and Hydra names the unknown one; without, oar-run names the package.
    ("amp=fp16", "Could not find 'amp/fp16'", 1) if AMP_INSTALLED else
    ("amp=fp16", "oar-run: error: amp=fp16: the config group 'amp' comes with oar-amp, which is not installed", 2),
    # With oar-distributed, strategy has options (dp) and Hydra names the unknown one.
    ("strategy=ddp", "Could not find 'strategy/ddp'", 1) if DISTRIBUTED_INSTALLED else
    ("strategy=ddp", "pip install oar-distributed", 2),
    ("trainer.resume=nowhere", "has no checkpoints/latest.json", 2),
    ("trainer.device=tpu", "oar-run: error: trainer.device='tpu': set_device: no backend 'tpu' is installed", 2),
])
def test_bad_configs_fail_before_any_work(oar_run, override, message, status):
    done = oar_run(*QUICK, override)
    assert done.returncode == status, done.output
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert not (done.run_dir / "checkpoints").exists() and not (done.run_dir / "metrics.json").exists()


def test_a_users_model_class_is_named_by_target(oar_run, tmp_path):
    (tmp_path / "my_models").mkdir()
    (tmp_path / "my_models" / "__init__.py").write_text(textwrap.dedent("""
        import oar


        class TinyNet(oar.nn.Layer):
            def __init__(self, num_classes=10, hidden=32):
                super().__init__()
                self.hidden = oar.nn.Linear(28 * 28, hidden)
                self.out = oar.nn.Linear(hidden, num_classes)

            def forward(self, x):
                return self.out(oar.nn.functional.relu(self.hidden(oar.flatten(x, 1))))
    """))
    done = oar_run(*QUICK, "model._target_=my_models.TinyNet", "+model.hidden=16", pythonpath=[tmp_path])
    assert done.returncode == 0, done.output
    params = oar.load(str(done.run_dir / "tinynet.pdparams"))
    assert list(params["hidden.weight"].shape) == [784, 16]
    assert (done.run_dir / "inference" / "tinynet.json").is_file()
    assert done.metrics()["model"] == "my_models.TinyNet"


def test_a_plugins_config_groups_work_end_to_end(oar_run, tmp_path):
    """A third-party package, found through its entry point, contributes an option to each of the
    groups that other packages fill (amp, strategy, slim, export, serve), and oar-run uses them."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "oar_groups_demo.py").write_text(textwrap.dedent('''
        import json
        from pathlib import Path

        import numpy as np

        import oar


        @oar.plugins.hookimpl
        def oar_register_config_groups(config_groups):
            config_groups.register("slim/zero_bias", {"_target_": "oar_groups_demo.zero_bias", "_partial_": True})
            config_groups.register("export/npz", {"_target_": "oar_groups_demo.save_npz", "_partial_": True})
            config_groups.register("amp/fp32", {"_target_": "builtins.str", "_args_": ["O0"]})
            config_groups.register("strategy/tagged", {"_target_": "oar_groups_demo.tag", "_partial_": True})
            config_groups.register("serve/record", {"_target_": "oar_groups_demo.record", "_partial_": True})


        def tag(network):
            network.tagged_by_strategy = True
            return network


        def record(path):
            Path(path).with_suffix(".served").write_text(path)


        def zero_bias(model, train_data, eval_data):
            network = model.network
            assert network.tagged_by_strategy and len(train_data) == 160
            for name, param in network.named_parameters():
                if name.endswith("bias"):
                    param.set_value(np.zeros(param.shape, "float32"))
            return network


        def save_npz(layer, path, input_spec):
            np.savez(path + ".npz", **{k: v.numpy() for k, v in layer.state_dict().items()})
            Path(path + ".spec.json").write_text(json.dumps([list(s.shape) for s in input_spec]))
    '''))
    dist = site / "oar_groups_demo-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: oar-groups-demo\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[oar]\ngroups_demo = oar_groups_demo\n")

    help_text = oar_run("--help", pythonpath=[site]).stdout
    groups: dict[str, str] = {}  # the "group: options" lines come first, the composed config after them
    for line in help_text.splitlines():
        if ":" in line:
            groups.setdefault(line.split(":")[0].strip(), line.split(":", 1)[1])
    for group, options in [("amp", "fp32"), ("strategy", "tagged"), ("slim", "zero_bias"), ("export", "jit, none, npz"),
                           ("serve", "record")]:  # beside the options of the oar packages installed here
        assert options in groups.get(group, ""), help_text
    done = oar_run(*QUICK, "amp=fp32", "strategy=tagged", "slim=zero_bias", "export=npz", "serve=record",
                   pythonpath=[site])
    assert done.returncode == 0, done.output
    weights = np.load(done.run_dir / "inference" / "lenet.npz")
    assert not np.any(weights["fc.2.bias"]) and np.any(weights["fc.2.weight"])
    assert json.loads((done.run_dir / "inference" / "lenet.spec.json").read_text()) == [[-1, 1, 28, 28]]  # InputSpec: -1 is the open batch axis
    served = done.run_dir / "inference" / "lenet.served"
    assert served.read_text() == str(done.run_dir / "inference" / "lenet")
    metrics = done.metrics()
    assert 0 <= metrics["slim_test_accuracy"] <= 1 and metrics["choices"]["slim"] == "zero_bias"


def test_the_defaults_reproduce_the_main_job(oar_run):
    done = oar_run("trainer.min_accuracy=0.97", "trainer.verbose=0")
    assert done.returncode == 0, done.output
    metrics = done.metrics()
    assert metrics["epochs"] == 15 and metrics["test_accuracy"] >= 0.97
    assert metrics["choices"] == {"model": "lenet", "data": "digits", "optimizer": "adam", "lr_scheduler": "cosine",
                                  "trainer": "default", "export": "jit", "amp": None, "strategy": None, "slim": None,
                                  "serve": None}

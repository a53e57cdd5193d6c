"""``oar.Model`` across ranks: ``prepare`` wraps the network in ``oar.DataParallel``, ``fit`` and
``evaluate`` shard a Dataset over the ranks and reduce the metrics (and the loss) across them, and
only rank 0 prints and saves."""

from __future__ import annotations

import json

import numpy as np

import oar
from oar.vision.datasets import Digits

# Trains a small MLP on the bundled digits (8x8: a second per epoch), saves it from rank 0 and
# prints, per rank, evaluate's result on the test set (364 images: no padding) and on 363 of them
# (the sampler pads one sample, which the metrics must not count).
SCRIPT = """
import json, sys
import oar, oar.distributed as dist
from oar.io import Subset
from oar.vision.datasets import Digits

oar.seed(0)
train, test = Digits(mode="train", image_size=8), Digits(mode="test", image_size=8)
net = oar.nn.Sequential(oar.nn.Flatten(), oar.nn.Linear(64, 32), oar.nn.ReLU(), oar.nn.Linear(32, 10))
model = oar.Model(net)
model.prepare(oar.optimizer.Adam(learning_rate=0.01, parameters=model.parameters()), oar.nn.CrossEntropyLoss(),
              oar.metric.Accuracy())
assert isinstance(model._parallel, oar.DataParallel)
model.fit(train, epochs=2, batch_size=32, log_freq=10, verbose=2)
full = model.evaluate(test, batch_size=50, verbose=0)
odd = model.evaluate(Subset(test, list(range(363))), batch_size=50, verbose=0)
model.save(sys.argv[1])
dist.barrier()  # rank 0 has written the checkpoint: every rank can load it
model.load(sys.argv[1])
again = model.evaluate(test, batch_size=50, verbose=0)
print("RESULT", json.dumps({"full": [full["acc"], float(full["loss"][0])], "odd": [odd["acc"], float(odd["loss"][0])],
                            "again": again["acc"], "rank": dist.get_rank()}), flush=True)
"""


def _result(log: str) -> dict:
    return json.loads(next(line for line in log.splitlines() if line.startswith("RESULT "))[len("RESULT "):])


def test_fit_on_two_ranks_evaluates_as_one_process_and_only_rank_0_logs_and_saves(launch, tmp_path):
    prefix = tmp_path / "ckpt" / "mlp"
    job = launch(SCRIPT, nproc=2, args=[prefix]).check()
    results = [_result(job.log(rank)) for rank in (0, 1)]
    assert [r["rank"] for r in results] == [0, 1]
    assert results[0]["full"] == results[1]["full"] and results[0]["odd"] == results[1]["odd"]
    assert results[0]["again"] == results[0]["full"][0]
    assert results[0]["full"][0] > 0.8

    # Only rank 0 prints progress; the checkpoint was written once, and a single process evaluating
    # it on the same data gets the same accuracy and loss.
    assert "Epoch 1/2" in job.log(0) and "step 10/" in job.log(0) and "Eval" not in job.log(0)
    assert "Epoch" not in job.log(1) and "step" not in job.log(1)
    assert sorted(p.name for p in prefix.parent.iterdir()) == ["mlp.pdopt", "mlp.pdparams"]
    net = oar.nn.Sequential(oar.nn.Flatten(), oar.nn.Linear(64, 32), oar.nn.ReLU(), oar.nn.Linear(32, 10))
    model = oar.Model(net)
    model.prepare(loss=oar.nn.CrossEntropyLoss(), metrics=oar.metric.Accuracy())
    model.load(prefix)
    test = Digits(mode="test", image_size=8)
    single = model.evaluate(test, batch_size=64, verbose=0)
    assert single["acc"] == results[0]["full"][0]
    np.testing.assert_allclose(single["loss"][0], results[0]["full"][1], rtol=1e-5)
    odd = model.evaluate(oar.io.Subset(test, list(range(363))), batch_size=64, verbose=0)
    assert odd["acc"] == results[0]["odd"][0]
    np.testing.assert_allclose(odd["loss"][0], results[0]["odd"][1], rtol=1e-5)

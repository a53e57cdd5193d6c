"""docs/distributed.md's first example runs as written, on 2 ranks through the launcher and as a
plain single process, and saves one checkpoint that loads into one process."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np

import oar

DOC = Path(__file__).resolve().parents[2] / "docs" / "distributed.md"


def train_script() -> str:
    (script,) = re.findall(r"```python\n(# train\.py.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    return script


def accuracy(path: Path) -> float:
    """The saved LeNet's accuracy on the digits' test split."""
    model = oar.vision.models.LeNet()
    model.set_state_dict(oar.load(str(path)))
    model.eval()
    data = oar.vision.datasets.Digits(mode="test", transform=oar.vision.transforms.ToTensor())
    images = oar.to_tensor(np.stack([data[i][0] for i in range(len(data))]))
    labels = np.asarray([int(np.asarray(data[i][1]).reshape(-1)[0]) for i in range(len(data))])
    with oar.no_grad():
        predicted = model(images).numpy().argmax(1)
    return float((predicted == labels).mean())


def test_the_walkthrough_trains_on_two_ranks_and_alone(launch, tmp_path):
    launch(train_script(), nproc=2, timeout=180).check()
    saved = tmp_path / "lenet.pdparams"
    assert saved.exists()  # rank 0 wrote it (the script runs in tmp_path)
    assert accuracy(saved) > 0.9
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "train.py").write_text(train_script(), encoding="utf-8")
    done = subprocess.run([sys.executable, "train.py"], cwd=alone, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert accuracy(alone / "lenet.pdparams") > 0.9

"""From a trained Layer to a served model, end to end (docs/serving.md walks through it):
train a LeNet briefly, save it for inference, check that the deployed model agrees with the
training code, lay out a model repository, serve it from two replicas on two ports and send
requests to both with tritonclient, a real client of the Open Inference Protocol.

    python examples/serve_lenet.py          # needs oar-core, oar-nn, oar-serving and tritonclient[http]
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import tritonclient.http as triton

import oar
from oar.inference import Config, check_parity, create_predictor
from oar.serving import ServerProcess, write_repository
from oar.static import InputSpec


def train_lenet() -> oar.nn.Layer:
    nn = oar.nn
    model = nn.Sequential(
        nn.Conv2D(1, 6, 5, stride=1, padding=2), nn.ReLU(), nn.MaxPool2D(2, 2),
        nn.Conv2D(6, 16, 5, stride=1), nn.ReLU(), nn.MaxPool2D(2, 2),
        nn.Flatten(), nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10))
    optimizer = oar.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())
    rng = np.random.default_rng(0)
    for _ in range(20):  # a few steps on random images: the walk-through is about serving
        images = oar.to_tensor(rng.random((32, 1, 28, 28), dtype=np.float32))
        labels = oar.to_tensor(rng.integers(0, 10, (32, 1)))
        loss = oar.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
    return model


def main(workdir: str) -> None:
    # 1. Save the trained model for inference: lenet.json (the program) + lenet.pdiparams.
    model = train_lenet()
    model.eval()
    prefix = os.path.join(workdir, "lenet")
    oar.jit.save(model, prefix, input_spec=[InputSpec([None, 1, 28, 28], "float32", "image")])

    # 2. Run it as Paddle Inference would, and check it against the training code.
    images = np.random.default_rng(1).random((4, 1, 28, 28), dtype=np.float32)
    predictor = create_predictor(Config(prefix + ".json", prefix + ".pdiparams"))
    [logits] = predictor.run([images])
    print("predicted classes:", logits.numpy().argmax(axis=1).tolist())
    report = check_parity(model, prefix, [images])
    assert report.ok, report
    print(report.outputs[0].row())

    # 3. A model repository: models/lenet/1/model.json, models/lenet/config.json.
    repository = os.path.join(workdir, "models")
    write_repository(prefix, repository, "lenet", version=1,
                     config={"max_batch_size": 32, "max_queue_delay_ms": 0})

    # 4. Two stateless replicas on two ports: behind any HTTP load balancer they are one service.
    with ServerProcess(repository, port=None) as first, ServerProcess(repository, port=None) as second:
        for i, server in enumerate([first, second, first, second]):
            client = triton.InferenceServerClient(server.url.removeprefix("http://"))
            image = triton.InferInput("image", [1, 1, 28, 28], "FP32")
            image.set_data_from_numpy(images[i:i + 1])
            result = client.infer("lenet", [image])
            [alone] = predictor.run([images[i:i + 1]])  # the same batch of one: the same sums, bit for bit
            np.testing.assert_array_equal(result.as_numpy("output_0"), alone.numpy())
            client.close()
        print(f"served by {first.url} and {second.url}: answers equal the Predictor's")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as directory:
        main(directory)

"""Image transforms: ``oar.vision.transforms`` against Paddle's ``paddle.vision.transforms``.

    python bench/transforms.py                  # 224x224 and 500x375 RGB, 0.6 s per case and framework
    python bench/transforms.py --budget 0.2     # quicker, noisier
    python bench/transforms.py --only hue       # the cases whose name contains "hue"

Each transform runs on the same random uint8 RGB image, as a PIL image and as a numpy HxWxC
array, in one process. A sample is the mean over back-to-back calls (enough calls for about
2 ms); the figure is the median of the samples, oar's and Paddle's taken alternately so that
both see the same load. Paddle's numpy path needs OpenCV (``cv2``): where it is not installed,
and where torchvision is not installed, the column says so. Prints one markdown table with
milliseconds per call and oar's time over Paddle's (**above 1, oar is slower**).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import statistics
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

import oar  # noqa: E402
import oar.vision.transforms as oar_transforms  # noqa: E402

SIZES = {"224x224": (224, 224), "500x375": (375, 500)}  # name (width x height) -> (h, w)
CORNERS = [[0, 0], [1, 0], [1, 1], [0, 1]]  # scaled to the image below


def _perspective_points(h: int, w: int):
    start = [[x * (w - 1), y * (h - 1)] for x, y in CORNERS]
    end = [[3, 5], [w - 8, 2], [w - 4, h - 10], [6, h - 3]]
    return start, end


def cases(h: int, w: int):
    """``(name, call)`` pairs; ``call(T, img)`` runs the transform with module ``T``
    (``oar.vision.transforms`` or ``paddle.vision.transforms``)."""
    start, end = _perspective_points(h, w)
    return [
        ("resize 128x128 bilinear", lambda T, img: T.functional.resize(img, (128, 128), "bilinear")),
        ("resize 128x128 nearest", lambda T, img: T.functional.resize(img, (128, 128), "nearest")),
        ("rotate 30 nearest", lambda T, img: T.functional.rotate(img, 30)),
        ("rotate 30 bilinear expand", lambda T, img: T.functional.rotate(img, 30, "bilinear", expand=True)),
        ("affine", lambda T, img: T.functional.affine(img, 15, (4, -3), 0.9, (5, 2), "bilinear")),
        ("perspective", lambda T, img: T.functional.perspective(img, start, end, "bilinear")),
        ("adjust_brightness", lambda T, img: T.functional.adjust_brightness(img, 1.3)),
        ("adjust_contrast", lambda T, img: T.functional.adjust_contrast(img, 0.7)),
        ("adjust_saturation", lambda T, img: T.functional.adjust_saturation(img, 1.4)),
        ("adjust_hue", lambda T, img: T.functional.adjust_hue(img, 0.2)),
        ("to_grayscale", lambda T, img: T.functional.to_grayscale(img, 3)),
        ("pad 8 constant", lambda T, img: T.functional.pad(img, 8, fill=(1, 2, 3))),
        ("pad 8 reflect", lambda T, img: T.functional.pad(img, 8, padding_mode="reflect")),
        ("crop", lambda T, img: T.functional.crop(img, 10, 20, 100, 120)),
        ("center_crop", lambda T, img: T.functional.center_crop(img, 112)),
        ("hflip", lambda T, img: T.functional.hflip(img)),
        ("vflip", lambda T, img: T.functional.vflip(img)),
        ("normalize", lambda T, img: T.functional.normalize(img, [127.5] * 3, [127.5] * 3, "HWC")),
        ("to_tensor", lambda T, img: T.functional.to_tensor(img)),
        ("ColorJitter", lambda T, img: T.ColorJitter(0.4, 0.4, 0.4, 0.1)(img)),
        ("RandomResizedCrop 224", lambda T, img: T.RandomResizedCrop(224)(img)),
        ("RandomRotation 30", lambda T, img: T.RandomRotation(30)(img)),
    ]


def _sample_ms(call, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        call()
    return (time.perf_counter() - start) * 1e3 / number


def _calls_per_sample(call) -> int:
    once = _sample_ms(call, 1)  # also the warm-up
    return max(1, int(2.0 / max(once, 1e-3)))


def measure(calls: dict[str, object], budget_s: float) -> dict[str, float | str]:
    """Median milliseconds per call for each runnable entry of ``calls``, sampled alternately;
    an entry that raises on its first call is reported with the error's type instead."""
    results: dict[str, float | str] = {}
    runnable = {}
    for name, call in calls.items():
        try:
            # Paddle's Compose prints a traceback before re-raising: keep it out of the table
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                runnable[name] = (call, _calls_per_sample(call))
        except Exception as error:  # a peer that cannot run this input (e.g. no OpenCV)
            results[name] = f"n/a ({type(error).__name__})"
    samples: dict[str, list[float]] = {name: [] for name in runnable}
    deadline = time.perf_counter() + budget_s * len(runnable)
    while time.perf_counter() < deadline or min((len(s) for s in samples.values()), default=5) < 5:
        for name, (call, number) in runnable.items():
            samples[name].append(_sample_ms(call, number))
    results.update({name: statistics.median(s) for name, s in samples.items()})
    return results


def _fmt(value) -> str:
    if isinstance(value, str):
        return value
    return f"{value:.3f}" if value < 1 else f"{value:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=float, default=0.6, help="seconds of sampling per case and framework")
    parser.add_argument("--only", default="", help="run the cases whose name contains this text")
    args = parser.parse_args()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import paddle
        import paddle.vision.transforms as paddle_transforms
    paddle.set_device("cpu")
    try:
        import torchvision  # noqa: F401

        torchvision_note = "installed, not measured here"
    except ImportError:
        torchvision_note = "not installed"

    print(f"oar {oar.__version__}, Paddle {paddle.__version__}, Pillow {Image.__version__}, numpy {np.__version__}, "
          f"torchvision {torchvision_note}; Python {platform.python_version()} on {platform.machine()}, "
          f"{os.cpu_count()} CPUs\n")
    print("| transform | image | input | oar ms | Paddle ms | oar / Paddle |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    rng = np.random.default_rng(0)
    for size_name, (h, w) in SIZES.items():
        array = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        inputs = {"PIL": Image.fromarray(array), "numpy": array}
        for case_name, call in cases(h, w):
            if args.only not in case_name:
                continue
            for kind, img in inputs.items():
                oar.seed(0)
                paddle.seed(0)
                times = measure({"oar": lambda c=call, i=img: c(oar_transforms, i),
                                 "paddle": lambda c=call, i=img: c(paddle_transforms, i)}, args.budget)
                ours, theirs = times["oar"], times["paddle"]
                ratio = f"{ours / theirs:.2f}" if isinstance(ours, float) and isinstance(theirs, float) else "-"
                print(f"| {case_name} | {size_name} | {kind} | {_fmt(ours)} | {_fmt(theirs)} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()

"""A LeNet training step (forward, cross-entropy, backward, Adam), eager against to_static.

    python bench/static_train.py                          # b64, 1 thread, default passes
    python bench/static_train.py --batch 16 64 --repeats 41
    python bench/static_train.py --path replay            # also time the replay fallback
    python bench/static_train.py --profile graph          # cProfile of one path instead

The graph path is ``oar.jit.to_static(model, input_spec=[InputSpec([None, 1, 28, 28])])``: its
forward runs as a program and its backward as the gradient ops derived into that program
(``oar._graph.static_backward``). The replay path forces the fallback (the forward dispatched op by op
under eager autograd). Every path starts from the same weights and is checked to give eager's
losses for a few steps before timing. Each repeat times one step of every path back to back (A,
B, A, B, ...), in CPU time (``time.process_time``), and the ratio of the medians is reported.
"""

from __future__ import annotations

import pin_threads

pin_threads.from_argv(["--threads", "1"])  # before numpy loads; this script measures 1 thread

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import oar  # noqa: E402
import oar.nn.functional as F  # noqa: E402
from oar.static import InputSpec  # noqa: E402
from oar.vision.models import LeNet  # noqa: E402


def _force_replay(static) -> None:
    """Make every training call of ``static`` replay the forward (the fallback path)."""
    original = static.forward._capture

    def capture(*args, **kwargs):
        result = original(*args, **kwargs)
        for entry in static.forward.program_cache.values():
            entry.training_programs.not_derivable = "forced by bench/static_train.py --path replay"
        return result

    static.forward._capture = capture


def paths(batch: int, with_replay: bool) -> dict:
    """``{name: one training step}`` for eager, to_static (and the replay fallback)."""
    oar.seed(0)
    reference = LeNet()
    rng = np.random.default_rng(0)
    x = oar.to_tensor(rng.standard_normal((batch, 1, 28, 28)).astype(np.float32))
    y = oar.to_tensor(rng.integers(0, 10, (batch,)).astype(np.int64))
    models = {"eager": LeNet(), "graph": LeNet()}
    if with_replay:
        models["replay"] = LeNet()
    steps = {}
    for name, model in models.items():
        model.set_state_dict(reference.state_dict())
        if name != "eager":
            model = oar.jit.to_static(model, input_spec=[InputSpec([None, 1, 28, 28], "float32", name="x")],
                                      full_graph=True)
            if name == "replay":
                _force_replay(model)
        opt = oar.optimizer.Adam(learning_rate=1e-3, parameters=model.parameters())

        def step(model=model, opt=opt):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            return loss

        steps[name] = step
    losses = {name: [float(step()) for _ in range(3)] for name, step in steps.items()}
    for name, got in losses.items():
        np.testing.assert_allclose(got, losses["eager"], rtol=1e-5, err_msg=f"{name} losses differ from eager")
    training = models["graph"].forward._last.training_programs
    assert training.last_plan is not None, f"to_static did not use the derived backward: {training.not_derivable}"
    return steps


def measure(fns: dict, repeats: int) -> dict:
    for fn in fns.values():  # warm-up: kernels compiled, caches and buffers in place
        for _ in range(3):
            fn()
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.process_time()
            fn()
            times[name].append(time.process_time() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, nargs="*", default=[64])
    parser.add_argument("--repeats", type=int, default=41)
    parser.add_argument("--path", choices=("replay",), help="also time the replay fallback")
    parser.add_argument("--profile", choices=("eager", "graph", "replay"), help="cProfile this path instead")
    args = parser.parse_args()
    oar.set_num_threads(1)
    from oar.plugins import get_manager

    plugins = sorted(name for name, plugin in get_manager().list_name_plugin()
                     if name and "numba" in name and plugin is not None)  # a blocked plugin is listed as None
    print(f"plugins: {plugins or 'no numba'}; 1 thread; LeNet + cross_entropy + Adam; CPU-time medians of "
          f"{args.repeats}")
    for batch in args.batch:
        fns = paths(batch, args.path == "replay" or args.profile == "replay")
        if args.profile:
            import cProfile
            import pstats

            fn = fns[args.profile]
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(30):
                fn()
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(20)
            continue
        t = measure(fns, args.repeats)
        shown = ", ".join(f"{name} {v * 1e3:.2f} ms" for name, v in t.items())
        ratios = ", ".join(f"eager/{name} {t['eager'] / v:.2f}" for name, v in t.items() if name != "eager")
        print(f"b{batch}: {shown}; {ratios} (>1: faster than eager)")


if __name__ == "__main__":
    main()

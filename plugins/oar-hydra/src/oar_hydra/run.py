"""One ``oar-run`` job: build everything from the composed config, train with ``oar.Model``,
evaluate, save, export, and write the run directory.

The run directory (Hydra's output directory) holds::

    config.yaml                         the resolved config of this run (.hydra/ has Hydra's own records)
    oar-run.log                         the log, progress lines included
    <model>.pdparams, <model>.pdopt     the trained model (Model.save: safetensors, never pickle)
    checkpoints/                        the last checkpoint, what trainer.resume=<run dir> continues from
    inference/<model>.json, .pdiparams  the exported model (export=jit: oar.jit.save); with slim, the compressed one
    inference/<model>_float32.*         with slim: the float model too, for the comparison table
    metrics.json                        the final metrics, the per-epoch history and the settings (amp too)
    tensorboard/events.out.tfevents.*   TensorBoard logs (tensorboard --logdir <run dir>)
    curves.png                          loss and accuracy per epoch, train and test
    profile/                            with trainer.profile=true: a Chrome trace of a few training steps, summary.txt
    ranks/workerlog.<rank>              with a strategy of several processes (strategy=dp): each rank's output

With such a strategy, a plain ``oar-run`` starts the ranks through the strategy's launcher
(``_launch_ranks``: this same job, with ``hydra.run.dir`` pinned to this run directory) and waits;
every rank trains its share, and rank 0 alone writes the run directory.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import logging
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

import oar
from oar.hapi.model import parse_amp_configs
from oar.io import DataLoader, DistributedBatchSampler
from oar.testing import TOLERANCES
from oar_hydra.callbacks import CHECKPOINTS, LATEST, ContinuedRun, History, RunCheckpoint, RunProfiler, write_atomic
from oar_hydra.data import DataSplits
from oar_hydra.schema import ConfigValueError, validate

log = logging.getLogger("oar_hydra")


class _LogLines:
    """stdout for the terminal and for the run's log file: the log gets each finished line as it
    was last drawn (a progress bar's final state, not its redraws)."""

    def __init__(self, terminal, handlers: list[logging.Handler]):
        self.terminal, self.handlers, self.pending = terminal, handlers, ""

    def write(self, text: str) -> int:
        self.terminal.write(text)
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            self._emit(line)
        return len(text)

    def _emit(self, line: str) -> None:
        line = line.split("\r")[-1].rstrip()
        if line:
            record = logging.LogRecord("oar_hydra.progress", logging.INFO, __file__, 0, line, None, None)
            for handler in self.handlers:
                handler.handle(record)

    def flush(self) -> None:
        self.terminal.flush()

    def isatty(self) -> bool:  # the progress bar asks the terminal, not the log
        return self.terminal.isatty()


@contextlib.contextmanager
def _printed_lines_logged():
    handlers = [h for h in logging.getLogger().handlers if isinstance(h, logging.FileHandler)]
    previous = sys.stdout
    sys.stdout = tee = _LogLines(previous, handlers)
    try:
        yield
    finally:
        sys.stdout = previous
        if tee.pending.strip():
            tee._emit(tee.pending)


def _resume_config(cfg: DictConfig) -> tuple[DictConfig, Path, dict]:
    """The config of a resumed run: the original run's ``config.yaml`` with this command's value
    overrides on top (``trainer.epochs=30`` extends it). Choosing another option of a group would
    change what the checkpoint holds, so it is an error."""
    source = Path(cfg.trainer.resume).expanduser().resolve()
    if not (source / CHECKPOINTS / LATEST).is_file():
        raise ConfigValueError(f"trainer.resume={cfg.trainer.resume!r}: {source} has no {CHECKPOINTS}/{LATEST}; "
                               f"give the directory of an oar-run run that saved a checkpoint")
    if not (source / "config.yaml").is_file():
        raise ConfigValueError(f"trainer.resume={cfg.trainer.resume!r}: {source} has no config.yaml")
    resumed = OmegaConf.load(source / "config.yaml")
    overrides = HydraConfig.get().overrides.task if HydraConfig.initialized() else []
    for override in OverridesParser.create().parse_overrides(list(overrides)):
        key = override.key_or_group
        if key == "trainer.resume":
            continue
        if "." not in key and not key.startswith("hydra"):
            raise ConfigValueError(f"trainer.resume: {override.input_line!r} chooses another {key!r}, but a resumed "
                                   f"run continues with the original's; override values only (e.g. trainer.epochs=30)")
        if not key.startswith("hydra"):
            OmegaConf.update(resumed, key, override.value(), merge=True, force_add=override.is_add())
    resumed.trainer.resume = str(source)
    hydra_record = source / ".hydra" / "hydra.yaml"
    choices = dict(OmegaConf.load(hydra_record).hydra.runtime.choices) if hydra_record.is_file() else {}
    return resumed, source, choices


def _chosen(node) -> bool:
    """Whether a contributed group (amp, strategy, slim, export, serve) has an option that does something."""
    return node is not None and bool(node.get("_target_"))


def _rank() -> int:
    """This process's rank in a job that a launcher started (0 otherwise): only rank 0 writes."""
    try:
        return int(os.environ.get("PADDLE_TRAINER_ID", "0"))
    except ValueError:
        return 0


def _launch_ranks(cfg: DictConfig, run_dir: Path) -> dict | None:
    """With a strategy that runs as several processes (``strategy=dp``: its ``needs_launch`` says
    so in a plain process), run this job as the strategy's ranks -- the same overrides, the run
    directory pinned to ``run_dir`` so that rank 0 writes here -- wait for them, and return the
    metrics rank 0 wrote. None where no launch is needed (a strategy without ``needs_launch``,
    or this process is a rank already)."""
    if not _chosen(cfg.strategy):
        return None
    strategy = instantiate(cfg.strategy)
    if not getattr(strategy, "needs_launch", lambda: False)():
        return None
    if _chosen(cfg.slim):
        raise ConfigValueError("slim: compressing a model trained with a strategy of several processes is not "
                               "supported yet; train with strategy=dp, then compress the saved model in a run "
                               "without a strategy")
    overrides = list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []
    script = importlib.util.find_spec("oar_hydra.__main__").origin  # oar-run itself, as a script every rank runs
    command = strategy.launch_command(script, [*overrides, f"hydra.run.dir='{run_dir}'"], log_dir=run_dir / "ranks")
    log.info("strategy: running this job as %d ranks: %s", strategy.nproc_per_node, " ".join(command))
    for handler in logging.getLogger().handlers:  # rank 0 appends to the same log file
        handler.flush()
    done = subprocess.run(command, check=False)
    if done.returncode != 0:
        log.error("the ranks failed (exit status %d); their logs are in %s", done.returncode, run_dir / "ranks")
        raise SystemExit(done.returncode)
    record = json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))
    return {key: record.get(key) for key in ("test_accuracy", "test_loss", "train_accuracy", "train_loss", "epochs")}


def _build_data(cfg: DictConfig) -> DataSplits:
    data = instantiate(cfg.data)
    if isinstance(data, DataSplits):
        return data
    if isinstance(data, (tuple, list)) and len(data) == 2:
        train, test = data
        return DataSplits(train, test, tuple(np.shape(test[0][0])))
    raise ConfigValueError(f"data: {cfg.data._target_} returned a {type(data).__name__}; a data function must return "
                           f"oar_hydra.data.DataSplits or a pair (train, eval) of datasets")


def _build_optimizer(cfg: DictConfig, parameters, epochs: int, steps_per_epoch: int):
    options = OmegaConf.to_container(cfg.optimizer, resolve=True)
    learning_rate = options.pop("lr")
    schedule = cfg.lr_scheduler
    if schedule is not None and schedule.get("_target_"):
        learning_rate = instantiate(schedule, learning_rate=learning_rate, epochs=epochs,
                                    steps_per_epoch=steps_per_epoch)
    return instantiate(options, learning_rate=learning_rate, parameters=parameters)


def _amp_record(cfg: DictConfig, choices: dict) -> tuple:
    """The chosen ``amp`` option as ``Model.prepare``'s ``amp_configs``, and as metrics.json records
    it: the option's name, level, dtype and the auto_cast lists and GradScaler arguments it sets.
    (None, None) without one."""
    if not _chosen(cfg.amp):
        return None, None
    amp_configs = instantiate(cfg.amp)
    with warnings.catch_warnings():  # what the settings warn about, prepare warns about
        warnings.simplefilter("ignore")
        settings = parse_amp_configs(amp_configs)  # checked as prepare checks them
    record = {"option": choices.get("amp") or cfg.amp._target_, "level": "O0", "dtype": "float32"}
    if settings is not None:
        lists = {key: sorted(names) for key, names in settings.lists.items()}
        record.update(level=settings.level, dtype=settings.dtype, **lists, **settings.scaler)
    return amp_configs, record


def _export(cfg: DictConfig, network, run_dir: Path, name: str, data: DataSplits,
            auto_cast=contextlib.nullcontext) -> dict:
    """Export with the chosen ``export`` option and, for oar.jit, check that the exported model
    gives the trained model's outputs (an export that silently changes results is a bug).
    ``auto_cast`` is the block training ran the network in (``Model.auto_cast``): the export is
    captured in it, so that it computes as the evaluation did."""
    if not _chosen(cfg.export):
        return {}
    prefix = run_dir / "inference" / name
    with auto_cast():
        _save_inference(instantiate(cfg.export), network, prefix, data)
    was_training = network.training
    result = {"export": str(prefix.relative_to(run_dir))}
    onnx_file = Path(f"{prefix}.onnx")
    if Path(f"{prefix}.json").is_file() or onnx_file.is_file():
        count = min(len(data.eval), 64)
        batch = np.stack([np.asarray(data.eval[i][0]) for i in range(count)]).astype(np.float32)
        with oar.no_grad():
            network.eval()
            with auto_cast():
                expected = network(oar.to_tensor(batch)).numpy().astype(np.float32)
            if onnx_file.is_file():
                result["export"] = str(onnx_file.relative_to(run_dir))
                served = _run_onnx(onnx_file, batch)
            else:
                served = oar.jit.load(str(prefix))(oar.to_tensor(batch)).numpy()
            if was_training:
                network.train()
        rtol, atol = 1e-4, 1e-5
        if served.dtype != np.float32:  # amp: low-precision outputs, within that dtype's tolerance of the largest,
            rtol = TOLERANCES[np.dtype(served.dtype).name][0]  # as the executor's fused ops round in other places
            atol = rtol * float(np.abs(expected).max())
            served = served.astype(np.float32)
        if not np.allclose(served, expected, rtol=rtol, atol=atol):
            raise RuntimeError(f"the exported model {prefix} does not reproduce the trained model's outputs "
                               f"(max difference {np.abs(served - expected).max():.3g})")
        result["export_checked"] = True
    return result


def _save_inference(exporter, network, prefix: Path, data: DataSplits) -> None:
    """``exporter(network, prefix, input_spec=...)`` in eval mode, the mode an inference model is captured in."""
    from oar.static import InputSpec

    prefix.parent.mkdir(parents=True, exist_ok=True)
    was_training = network.training
    network.eval()
    try:
        exporter(network, str(prefix), input_spec=[InputSpec([None, *data.input_shape], "float32", "image")])
    finally:
        if was_training:
            network.train()


def _eval_batch(data: DataSplits, size: int = 64) -> np.ndarray:
    """The first ``size`` evaluation inputs (repeated when there are fewer), as one float32 batch."""
    return np.stack([np.asarray(data.eval[i % len(data.eval)][0]) for i in range(size)]).astype(np.float32)


def _predictor_latencies(prefixes: list[Path], batch: np.ndarray, runs: int) -> list[float | None]:
    """The median seconds of ``runs`` Predictor runs of each saved model on ``batch``, after one
    warm-up run each; the models take turns, so a slow moment of the machine hits them alike.
    None for each without oar-serving."""
    if importlib.util.find_spec("oar.inference") is None:
        return [None] * len(prefixes)
    from oar.inference import Config, create_predictor

    predictors = [create_predictor(Config(str(prefix))) for prefix in prefixes]
    times: list[list[float]] = [[] for _ in prefixes]
    for turn in range(runs + 1):
        for predictor, seconds in zip(predictors, times):
            begin = time.perf_counter()
            predictor.run([batch])
            if turn:
                seconds.append(time.perf_counter() - begin)
    return [float(np.median(seconds)) for seconds in times]


def _flops(network, data: DataSplits) -> int | None:
    """``oar.flops`` of one sample, or None where it counts nothing (quantized layers have no rule)."""
    with contextlib.redirect_stdout(io.StringIO()):  # oar.flops prints Paddle's per-layer lines
        count = oar.flops(network, [1, *data.input_shape])
    return int(count) or None


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    lines = [header, ["-" * w for w in widths], *rows]
    return "\n".join("| " + " | ".join(c.ljust(w) for c, w in zip(line, widths)) + " |" for line in lines)


def _ratio(before: float | None, after: float | None, larger: str, smaller: str) -> str:
    if not before or not after:
        return ""
    return f" ({before / after:.2f}x {larger})" if before >= after else f" ({after / before:.2f}x {smaller})"


LATENCY_BATCH, LATENCY_RUNS = 64, 7


def _compare_slim(label: str, networks: tuple, prefixes: tuple[Path, Path], metrics: dict, data: DataSplits,
                  run_dir: Path) -> dict:
    """float32 vs compressed (``networks`` and their saved ``prefixes``, in that order): test
    accuracy, ``.pdiparams`` size, FLOPs and Predictor latency; the ``slim`` entry of metrics.json."""
    latencies = _predictor_latencies(list(prefixes), _eval_batch(data, LATENCY_BATCH), LATENCY_RUNS)
    accuracies = (metrics["test_accuracy"], metrics["slim_test_accuracy"])
    before, after = ({"test_accuracy": accuracy, "pdiparams_bytes": Path(f"{prefix}.pdiparams").stat().st_size,
                      "latency_ms": None if seconds is None else 1000 * seconds, "flops": _flops(network, data),
                      "model": prefix.relative_to(run_dir).as_posix()}
                     for network, prefix, accuracy, seconds in zip(networks, prefixes, accuracies, latencies))
    return {"option": label, "float32": before, "compressed": after,
            "accuracy_change": after["test_accuracy"] - before["test_accuracy"],
            "size_ratio": before["pdiparams_bytes"] / after["pdiparams_bytes"],
            "speedup": before["latency_ms"] / after["latency_ms"] if after["latency_ms"] else None,
            "latency_batch": LATENCY_BATCH, "latency_runs": LATENCY_RUNS}


def _slim_table(report: dict) -> str:
    """The printed table of a ``_compare_slim`` report, the ratios in the compressed row."""
    before, after = report["float32"], report["compressed"]

    def latency(row: dict, ratio: str = "") -> str:
        return "n/a (install oar-serving)" if row["latency_ms"] is None else f"{row['latency_ms']:.2f} ms{ratio}"

    header = ["model", "test accuracy", ".pdiparams", f"Predictor latency (batch {report['latency_batch']})"]
    rows = [["float32", f"{before['test_accuracy']:.2%}", f"{before['pdiparams_bytes']:,} B", latency(before)],
            [report["option"], f"{after['test_accuracy']:.2%} ({100 * report['accuracy_change']:+.2f} points)",
             f"{after['pdiparams_bytes']:,} B"
             + _ratio(before["pdiparams_bytes"], after["pdiparams_bytes"], "smaller", "larger"),
             latency(after, _ratio(before["latency_ms"], after["latency_ms"], "faster", "slower"))]]
    if before["flops"] and after["flops"]:  # quantized layers have no FLOPs rule: the column says nothing then
        header.insert(3, "FLOPs")
        rows[0].insert(3, f"{before['flops']:,}")
        rows[1].insert(3, f"{after['flops']:,} ({after['flops'] / before['flops'] - 1:+.1%})")
    return _markdown_table(header, rows)


def _run_onnx(path: Path, batch: np.ndarray) -> np.ndarray:
    # onnxruntime comes with oar-onnx, the package whose export=onnx option wrote the file.
    import onnxruntime

    # The check is of the file: ORT's graph optimizations would run an int8 model's QDQ pairs as
    # int8 kernels that requantize between layers, which differ from the QDQ program by rounding.
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: batch})[0]


def _restore(model, checkpoint_dir: Path, sampler, history: History, saver: RunCheckpoint) -> int:
    latest = json.loads((checkpoint_dir / LATEST).read_text(encoding="utf-8"))
    target = checkpoint_dir / latest["dir"]
    model.load(target / "model")
    state = oar.load(str(target / "trainer.pdstate"))
    oar.set_rng_state([state["rng"]])
    sampler.set_epoch(int(state["sampler_epoch"]))
    history.records = list(state["history"])
    saver.train_steps = int(state["train_steps"])
    return int(state["epochs_done"])


def run(cfg: DictConfig, run_dir: Path) -> dict:
    """Train, evaluate, save and export as ``cfg`` says, in ``run_dir``; returns the final metrics."""
    resume_from = None
    choices = dict(HydraConfig.get().runtime.choices) if HydraConfig.initialized() else {}
    if cfg.trainer.resume:
        cfg, resume_from, choices = _resume_config(cfg)  # the original run's choices, not this command's
    validate(cfg)
    launched = _launch_ranks(cfg, run_dir)
    if launched is not None:
        return launched
    trainer = cfg.trainer
    try:
        oar.set_device(trainer.device)
    except oar.errors.DeviceError as exc:
        raise ConfigValueError(f"trainer.device={trainer.device!r}: {exc}") from None
    writer = _rank() == 0  # in a job of several ranks, rank 0 alone writes the run directory
    if writer:
        write_atomic(run_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))
    start = time.perf_counter()

    oar.seed(trainer.seed)
    data = _build_data(cfg)
    network = instantiate(cfg.model)
    name = type(network).__name__.lower()  # the files' names: lenet.pdparams, inference/lenet.json
    log.info("oar %s: %s on %s (%d training, %d evaluation samples), %d epochs; output in %s", oar.__version__,
             type(network).__name__, cfg.data._target_, len(data.train), len(data.eval), trainer.epochs, run_dir)
    trained = network
    if _chosen(cfg.strategy):  # e.g. data parallelism: the strategy wraps the network (export takes it unwrapped)
        trained = instantiate(cfg.strategy)(network)

    # Across ranks each loads its share; one process loads everything. oar.Model gathers the shares'
    # outputs for the metrics, so the evaluation is of the whole test set either way.
    sampler = DistributedBatchSampler(data.train, batch_size=trainer.batch_size, shuffle=True)
    train_loader = DataLoader(data.train, batch_sampler=sampler, num_workers=trainer.num_workers, return_list=True)
    eval_sampler = DistributedBatchSampler(data.eval, batch_size=trainer.eval_batch_size)
    eval_loader = DataLoader(data.eval, batch_sampler=eval_sampler, num_workers=trainer.num_workers, return_list=True)
    model = oar.Model(trained)
    optimizer = _build_optimizer(cfg, model.parameters(), trainer.epochs, len(train_loader))
    amp_configs, amp_record = _amp_record(cfg, choices)
    model.prepare(optimizer, oar.nn.CrossEntropyLoss(), oar.metric.Accuracy(), amp_configs=amp_configs)
    if amp_record is not None and amp_record["level"] == "O0":
        log.info("amp=%s: level O0, training in float32", amp_record["option"])
    elif amp_record is not None:
        details = [f"{k}={v}" for k, v in amp_record.items() if k not in ("option", "level", "dtype") and v != []]
        log.info("amp=%s: mixed precision at %s in %s%s", amp_record["option"], amp_record["level"],
                 amp_record["dtype"], f" ({', '.join(details)})" if details else "")

    history = History()
    saver = RunCheckpoint(run_dir, trainer.save_freq, trainer.epochs, sampler, history)
    done = 0
    if resume_from is not None:
        done = _restore(model, resume_from / CHECKPOINTS, sampler, history, saver)
        log.info("resumed from %s after epoch %d of %d", resume_from, done, trainer.epochs)
    shown = [oar.callbacks.ProgBarLogger(trainer.log_freq, verbose=trainer.verbose)] if trainer.verbose else []
    shown += [oar.callbacks.VisualDL(run_dir / "tensorboard"), oar.callbacks.TrainingCurves(run_dir / "curves.png"),
              history, saver]
    if trainer.get("profile") and writer:  # off (the default): no profiler exists, nothing records
        shown.append(RunProfiler(run_dir, tuple(trainer.get("profile_steps") or (2, 7))))
    callbacks = ContinuedRun(shown, start=done, total=trainer.epochs, replay=history.records,
                             train_steps=saver.train_steps)

    with _printed_lines_logged():
        if done < trainer.epochs:
            # verbose=0: the progress logger is ours (inside ContinuedRun), so fit adds none.
            model.fit(train_loader, eval_loader, epochs=trainer.epochs - done, eval_freq=trainer.eval_freq,
                      verbose=0, callbacks=[callbacks], num_iters=trainer.max_steps)
        else:
            log.info("the checkpoint already holds all %d epochs; evaluating it", trainer.epochs)
        result = model.evaluate(eval_loader, verbose=0)
    model.save(run_dir / name)
    if not writer:  # the other ranks' results are rank 0's (the metrics are reduced across the ranks)
        return {"test_accuracy": float(result["acc"]), "test_loss": float(result["loss"][0])}

    final = history.records[-1] if history.records else {}
    metrics = {
        "test_accuracy": float(result["acc"]), "test_loss": float(result["loss"][0]),
        "train_accuracy": final.get("train_acc"), "train_loss": final.get("train_loss"),
        "epochs": len(history.records),
    }
    if _chosen(cfg.slim):  # compression after training: the compressed network is what gets exported
        float_network, float_prefix = model.network, run_dir / "inference" / f"{name}_float32"
        _save_inference(oar.jit.save, float_network, float_prefix, data)  # before slim can touch the network
        label = choices.get("slim") or cfg.slim._target_.rpartition(".")[2]
        began = time.perf_counter()
        network = instantiate(cfg.slim)(model=model, train_data=data.train, eval_data=data.eval)
        log.info("slim=%s: compressed in %.2f s", label, time.perf_counter() - began)
        compressed = oar.Model(network)
        compressed.prepare(loss=oar.nn.CrossEntropyLoss(), metrics=oar.metric.Accuracy())
        slim_result = compressed.evaluate(eval_loader, verbose=0)
        metrics.update(slim_test_accuracy=float(slim_result["acc"]), slim_test_loss=float(slim_result["loss"][0]))
    # With slim the network is the compressed one, which oar-run evaluated outside any amp block.
    exported = _export(cfg, network, run_dir, name, data, contextlib.nullcontext if _chosen(cfg.slim) else model.auto_cast)
    if _chosen(cfg.slim):
        prefix = run_dir / exported.get("export", "")
        if not exported or not Path(f"{prefix}.json").is_file():  # export=onnx or none: measure an oar.jit file
            prefix = run_dir / "inference" / f"{name}_compressed"
            _save_inference(oar.jit.save, network, prefix, data)
        metrics["slim"] = _compare_slim(label, (float_network, network), (float_prefix, prefix), metrics, data, run_dir)
    seconds = time.perf_counter() - start
    record = {
        **metrics, "seconds": round(seconds, 1), **exported,
        "model": cfg.model._target_, "data": cfg.data._target_, "optimizer": cfg.optimizer._target_, "amp": amp_record,
        "choices": {k: v for k, v in choices.items() if not k.startswith("hydra")},
        "overrides": list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else [],
        "resumed_from": str(resume_from) if resume_from else None,
        "ranks": int(os.environ.get("PADDLE_TRAINERS_NUM") or 1),  # processes that trained (strategy=dp: several)
        "history": history.records,
    }
    write_atomic(run_dir / "metrics.json", json.dumps(record, indent=2) + "\n")
    log.info("test accuracy %.2f%% (loss %.4f) after %d epochs in %.1f s", 100 * metrics["test_accuracy"],
             metrics["test_loss"], metrics["epochs"], seconds)
    if "slim" in metrics:
        log.info("float32 vs slim=%s (Predictor latency: the median of %d runs):\n%s", metrics["slim"]["option"],
                 LATENCY_RUNS, _slim_table(metrics["slim"]))
    log.info("everything is in %s:\n%s", run_dir, "\n".join(
        f"  {p.relative_to(run_dir).as_posix()}" for p in sorted(run_dir.rglob("*"))
        if p.is_file() and ".hydra" not in p.parts))

    if _chosen(cfg.serve) and exported:  # serving runs last: it may block until stopped
        instantiate(cfg.serve)(str(run_dir / exported["export"]))
    return metrics

"""The summary of a multirun (``oar-run -m ...``): a Hydra callback that collects each job's
final metrics and, when the sweep ends, prints one row per job and writes ``summary.json`` and
``summary.md`` into the sweep directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from oar_hydra.callbacks import write_atomic

COLUMNS = ("test_accuracy", "test_loss", "train_loss", "epochs")


class MultirunSummary(Callback):
    """Registered in ``conf/config.yaml`` under ``hydra.callbacks``; only multiruns print."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self.rows = []

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        num = OmegaConf.select(job_return.hydra_cfg, "hydra.job.num", default=None) if job_return.hydra_cfg else None
        if num is None:  # a single run: nothing to summarize
            return
        ok = job_return.status == JobStatus.COMPLETED
        metrics = job_return.return_value if ok and isinstance(job_return.return_value, dict) else {}
        self.rows.append({
            "job": num,
            "overrides": " ".join(job_return.overrides or []),
            "status": "ok" if ok else f"failed: {type(job_return._return_value).__name__}",
            "dir": job_return.working_dir or "",
            **{k: metrics.get(k) for k in COLUMNS},
        })

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        # The table shows what differs between the jobs; summary.json keeps every override.
        common = set.intersection(*(set(r["overrides"].split()) for r in self.rows)) if self.rows else set()
        shown = [{**r, "overrides": " ".join(o for o in r["overrides"].split() if o not in common)} for r in self.rows]
        table = format_table(shown)
        print(f"\noar-run: {len(self.rows)} runs in {sweep_dir}\n{table}", flush=True)
        write_atomic(sweep_dir / "summary.md", table + "\n")
        write_atomic(sweep_dir / "summary.json", json.dumps(self.rows, indent=2, default=str) + "\n")


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "" if value is None else str(value)


def format_table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table: job, overrides, status and the final metrics of each run.

    >>> print(format_table([{"job": 0, "overrides": "optimizer.lr=0.01", "status": "ok", "test_accuracy": 0.9712,
    ...                      "test_loss": 0.1, "train_loss": 0.2, "epochs": 3}]))
    | job | overrides         | status | test_accuracy | test_loss | train_loss | epochs |
    | --- | ----------------- | ------ | ------------- | --------- | ---------- | ------ |
    | 0   | optimizer.lr=0.01 | ok     | 0.9712        | 0.1000    | 0.2000     | 3      |
    """
    header = ("job", "overrides", "status", *COLUMNS)
    cells = [[_cell(row.get(name)) for name in header] for row in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(header)]
    lines = [header, tuple("-" * w for w in widths), *cells]
    return "\n".join("| " + " | ".join(c.ljust(w) for c, w in zip(line, widths)) + " |" for line in lines)



"""``oar-run`` (and ``python -m oar_hydra``): the Hydra application.

Before Hydra starts, every config group option that an installed package registered through
``oar_register_config_groups`` is stored in Hydra's ConfigStore, and the command line is checked
for options of contributed groups whose package is not installed, so that ``oar-run amp=fp16``
says to install oar-amp instead of failing deep inside Hydra.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import re
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from oar_hydra.schema import CONTRIBUTED_GROUPS, ConfigValueError, group_options, provider_of, register_configs

log = logging.getLogger("oar_hydra")
# `group=option`, `+group=option`, `group@package=option`, or a sweep `group=a,b`.
_GROUP_OVERRIDE = re.compile(r"^[+~]{0,2}(?P<group>[A-Za-z_][\w/]*)(?:@[\w.]*)?=(?P<value>.*)$")


class MissingPackageError(LookupError):
    """A config group option that comes with a package which is not installed."""


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def check_overrides(overrides: list[str]) -> None:
    """Raise ``MissingPackageError`` for an option of a contributed group (``amp``, ``strategy``,
    ``slim``, ``export``, ``serve``) that no installed package registered, naming the package
    that provides it. Call after ``register_configs``.

    Without oar-distributed, ``strategy=dp`` raises: "strategy=dp: the config group 'strategy'
    comes with oar-distributed, which is not installed (...): pip install oar-distributed". An
    override of oar-hydra's own groups is never refused:

    >>> from oar_hydra.app import check_overrides
    >>> from oar_hydra.schema import register_configs
    >>> _ = register_configs()
    >>> check_overrides(["trainer.epochs=2", "model=mlp"])
    """
    for override in overrides:
        match = _GROUP_OVERRIDE.match(override)
        if match is None or match["group"] not in CONTRIBUTED_GROUPS:
            continue
        group, known = match["group"], group_options(match["group"])
        for option in (v.strip() for v in match["value"].split(",")):
            if option in known or option in ("", "null") or not re.fullmatch(r"[\w-]+", option):
                continue  # Hydra itself reports unknown options of a group that has some, with the list
            package = provider_of(group, option)
            if known and (package is None or _installed(package)):
                continue  # its package is installed: Hydra names the unknown option and lists the known ones
            if not known:
                raise MissingPackageError(
                    f"{group}={option}: the config group {group!r} comes with {package or 'a package'}, which is not "
                    f"installed (no installed package contributes any {group} option): pip install {package}"
                    if package else f"{group}={option}: no installed package contributes a {group!r} option")
            raise MissingPackageError(
                f"{group}={option}: the {group} option {option!r} comes with {package}, which is not installed: "
                f"pip install {package} (installed {group} options: {', '.join(known)})")


@hydra.main(version_base="1.3", config_path="pkg://oar_hydra.conf", config_name="config")
def _task(cfg: DictConfig) -> dict:
    from oar_hydra.run import run

    hydra_cfg = HydraConfig.get()
    run_dir = Path(hydra_cfg.runtime.output_dir)
    try:
        metrics = run(cfg, run_dir)
    except ConfigValueError as exc:
        # A bad value is the user's to fix: the message, not a traceback; status 2 like a usage error.
        print(f"oar-run: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    bar = cfg.trainer.min_accuracy
    if bar is not None and metrics["test_accuracy"] < bar:
        log.error("test accuracy %.2f%% is below trainer.min_accuracy=%s", 100 * metrics["test_accuracy"], bar)
        if hydra_cfg.mode == RunMode.RUN:
            raise SystemExit(1)
    return metrics


# What a rank other than 0 of a job (strategy=dp) adds to its command line: rank 0 alone writes the
# run directory, so the others keep Hydra's records and log file out of it (their output goes to
# the launcher's workerlog.<rank>).
QUIET_RANK_OVERRIDES = ("hydra.output_subdir=null", "hydra/job_logging=stdout")


def main() -> None:
    """The ``oar-run`` console script: Hydra's command line (``oar-run --help``)."""
    if os.environ.get("PADDLE_TRAINER_ID", "0") not in ("", "0"):
        sys.argv.extend(QUIET_RANK_OVERRIDES)
    register_configs()
    try:
        check_overrides([arg for arg in sys.argv[1:] if not arg.startswith("-")])
    except MissingPackageError as exc:
        print(f"oar-run: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    _task()


if __name__ == "__main__":
    main()

"""What the isolated sessions could not run: the skipped tests, for the combined session to run.

``python3 dev.py test`` runs each distribution's tests once, in its own venv (``tests_isolated``),
where a test that needs another distribution skips (``pytest.importorskip("oar.inference")``).
With ``OAR_SKIPPED_LOG`` set (noxfile.py sets it there), the session writes the node ids of the
tests and modules it skipped to that file; the combined session (``tests``, every distribution
installed) then runs those and the tests of no single distribution, not the whole tree again.
"""

from __future__ import annotations

import os

_skipped: set[str] = set()


def pytest_runtest_logreport(report) -> None:
    if report.skipped:
        _skipped.add(report.nodeid)


def pytest_collectreport(report) -> None:
    if report.skipped:  # a module-level importorskip: the whole module
        _skipped.add(report.nodeid)


def pytest_sessionfinish(session) -> None:
    path = os.environ.get("OAR_SKIPPED_LOG")
    if path and not hasattr(session.config, "workerinput"):  # xdist's controller has every worker's reports
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as file:
            file.writelines(f"{nodeid}\n" for nodeid in sorted(_skipped))

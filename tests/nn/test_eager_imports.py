"""Eager training with oar-nn (and whatever plugins are installed: oar-numba's kernels in the full
suite) never imports oar's static graph: it loads when a program is captured, loaded or optimized."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap


def test_an_eager_training_step_imports_no_static_graph():
    script = """
        import json, sys
        import oar
        from oar import nn
        model = nn.Sequential(nn.Conv2D(1, 4, 3), nn.BatchNorm2D(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
        opt = oar.optimizer.Adam(parameters=model.parameters(), learning_rate=1e-3)
        x, y = oar.randn([2, 1, 8, 8]), oar.to_tensor([0, 2])
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        model.eval()
        with oar.no_grad():
            model(x)
        print(json.dumps(sorted(m for m in sys.modules if m.startswith(("oar._graph", "oar.jit", "oar.static")))))
    """
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                            timeout=120, check=True)
    assert json.loads(result.stdout.splitlines()[-1]) == []

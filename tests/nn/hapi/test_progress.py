"""ProgBarLogger and ProgressBar: Paddle's line format where stdout is not a terminal, a bar redrawn
in place with speed and ETA where it is (a fake TTY stream, and a real pseudo-terminal)."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import textwrap
import time
from types import SimpleNamespace

import pytest

import oar
from oar.hapi.progressbar import ProgressBar, format_duration, format_speed, format_value

STEP_LINE = re.compile(r"^step +(\d+)/(\d+) - loss: \d+\.\d{4} - acc: \d\.\d{4}( - ETA: \d+s)? - \d+(ms|us|s)/step$")


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_lines_on_a_non_terminal_follow_paddles_format(make_model, blobs, capsys):
    model = make_model()
    model.fit(blobs, blobs, batch_size=4, epochs=2, log_freq=5, verbose=2)  # 12 steps per epoch
    out = capsys.readouterr().out
    assert "\r" not in out and "\b" not in out
    lines = out.splitlines()
    assert lines[0].startswith("The loss value printed in the log is the current step")
    assert lines[1] == "Epoch 1/2"
    steps = [line for line in lines if line.startswith("step")]
    assert all(STEP_LINE.match(line) for line in steps), steps
    per_epoch = [int(STEP_LINE.match(line).group(1)) for line in steps]
    # train 5, 10, 12 (the last with the epoch's averages); eval 5, 10, 12; twice.
    assert per_epoch == [5, 10, 12, 5, 10, 12] * 2
    assert "ETA" in steps[0] and "ETA" not in steps[2]  # no time left at the last step
    assert lines.count("Eval begin...") == 2 and lines.count("Eval samples: 48") == 2
    assert "Epoch 2/2" in lines


def test_the_line_that_ends_an_epoch_shows_the_epoch_means(make_model, blobs, capsys):
    epoch_logs = []

    class Keep(oar.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            epoch_logs.append(dict(logs))

    make_model().fit(blobs, batch_size=16, epochs=1, verbose=2, log_freq=100, callbacks=[Keep()])
    (last,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step")]
    assert f"loss: {epoch_logs[0]['loss'][0]:.4f}" in last and f"acc: {epoch_logs[0]['acc']:.4f}" in last


def test_verbose_1_without_a_terminal_prints_only_the_end_of_each_pass(make_model, blobs, capsys):
    make_model().fit(blobs, blobs, batch_size=4, epochs=2, log_freq=1, verbose=1)
    steps = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step")]
    assert [STEP_LINE.match(line).group(1) for line in steps] == ["12"] * 4


def test_verbose_0_prints_nothing(make_model, blobs, capsys):
    model = make_model()
    model.fit(blobs, blobs, batch_size=16, epochs=1, verbose=0)
    model.evaluate(blobs, batch_size=16, verbose=0)
    model.predict(blobs, batch_size=16, verbose=0)
    assert capsys.readouterr().out == ""


def test_verbose_3_adds_timings(make_model, blobs, capsys):
    make_model().fit(blobs, batch_size=16, epochs=1, log_freq=1, verbose=3)
    steps = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step")]
    assert len(steps) == 3
    assert all(re.search(r"avg_reader_cost: \d+\.\d{5} sec - avg_batch_cost: \d+\.\d{5} sec - ips: [\d.]+ "
                         r"samples/sec", line) for line in steps)


def test_evaluate_and_predict_print_their_summaries(make_model, blobs, capsys):
    model = make_model()
    model.evaluate(blobs, batch_size=16)
    model.predict(blobs, batch_size=16)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Eval begin..." and lines[-3] == "Predict begin..."
    assert "Eval samples: 48" in lines and lines[-1] == "Predict samples: 48"
    assert re.match(r"^step 3/3 - \d+(ms|us|s)/step$", lines[-2])


def test_a_terminal_gets_a_bar_redrawn_in_place(make_model, blobs, monkeypatch):
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.setattr("oar.hapi.progressbar._REDRAW_SECONDS", 0.0)  # draw every step
    make_model().fit(blobs, blobs, batch_size=4, epochs=2, verbose=2)
    out = terminal.getvalue()
    assert out.count("\r") >= 2 * 12
    frames = [frame for line in out.split("\n") for frame in line.split("\r") if frame.startswith("step")]
    bars = [re.match(r"^step +(\d+)/12 \[([=>.]{30})\]( - loss: [\d.]+ - acc: [\d.]+)?( - ETA: \d+s)? - \d+(ms|us|s)/step",
                     frame.rstrip()) for frame in frames]
    assert all(bars), frames
    first = bars[0]
    assert first.group(1) == "1" and first.group(4) and first.group(2) == "=>" + "." * 28
    done = [b for b in bars if b.group(1) == "12"]
    assert done and all(b.group(2) == "=" * 30 and not b.group(4) for b in done)
    # Each finished bar stays as one line: Epoch, bar, Eval begin..., bar, Eval samples, per epoch.
    lines = [line.split("\r")[-1].rstrip() for line in out.split("\n") if line]
    assert [line.split(" ")[0] for line in lines[1:]] == ["Epoch", "step", "Eval", "step", "Eval"] * 2


def test_progress_bar_shapes_and_eta(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr("oar.hapi.progressbar.time", SimpleNamespace(perf_counter=lambda: clock[0]))
    out = FakeTerminal()
    bar = ProgressBar(num=10, width=10, file=out)
    clock[0] += 2.0  # two seconds for four steps
    bar.update(4, [("loss", [0.5]), ("acc", 0.25)], force=True)
    first = "step  4/10 [===>......] - loss: 0.5000 - acc: 0.2500 - ETA: 3s - 500ms/step"
    assert out.getvalue() == "\r" + first
    bar.update(10, [("loss", [0.125])])
    last = "step 10/10 [==========] - loss: 0.1250 - 200ms/step"
    assert out.getvalue() == "\r" + first + "\r" + last + " " * (len(first) - len(last)) + "\n"  # blanks the rest
    plain = io.StringIO()
    ProgressBar(num=None, file=plain).update(7, {"loss": 1e-5})
    assert re.match(r"^step   7 - loss: 1\.0000e-05 - \d+(us|ms|s)/step\n$", plain.getvalue())
    with pytest.raises(ValueError, match="positive int"):
        ProgressBar(num=0)


def test_a_live_bar_redraws_at_most_ten_times_a_second():
    out = FakeTerminal()
    bar = ProgressBar(num=1000, file=out)
    for step in range(1, 1000):
        bar.update(step)
    assert out.getvalue().count("\r") < 20
    bar.update(1000)
    assert out.getvalue().endswith("\n") and "1000/1000" in out.getvalue()


def test_formats():
    assert format_value([0.123456]) == "0.1235" and format_value(0.0) == "0.0000"
    assert format_value(0.0001) == "1.0000e-04" and format_value([0.5, 0.25]) == "0.5000 0.2500"
    assert format_value("12.5 sec") == "12.5 sec" and format_value(3) == "3"
    assert format_duration(7.9) == "7s" and format_duration(125) == "2:05" and format_duration(3725) == "1:02:05"
    assert format_speed(2.5) == "2s/step" and format_speed(0.012) == "12ms/step" and format_speed(5e-5) == "50us/step"


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="pseudo-terminals are POSIX")
def test_a_real_pseudo_terminal_gets_the_live_bar(tmp_path):
    script = textwrap.dedent("""
        import oar
        oar.seed(0)
        net = oar.nn.Linear(4, 3)
        model = oar.Model(net)
        model.prepare(oar.optimizer.Adam(parameters=net.parameters()), oar.nn.CrossEntropyLoss(), oar.metric.Accuracy())
        data = oar.io.TensorDataset([oar.rand([64, 4]), oar.randint(0, 3, [64, 1])])
        model.fit(data, batch_size=4, epochs=1)
    """)
    master, slave = os.openpty()
    env = {**os.environ, "TERM": "xterm"}
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=slave, stderr=subprocess.PIPE, env=env)
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()
    out = b"".join(chunks).decode().replace("\r\n", "\n")  # the terminal turns \n into \r\n
    assert "Epoch 1/1" in out
    assert re.search(r"\rstep 16/16 \[={30}\] - loss: \d\.\d{4} - acc: \d\.\d{4} - \d+(ms|us|s)/step", out)

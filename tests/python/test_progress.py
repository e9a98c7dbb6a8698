"""Progress and Ctrl-C on long calls (issue #23 item 4): sizing, the layout search and calibration run in the core
while a bar (quiet when output is not a terminal) follows them; Ctrl-C stops them with what they had, marked stopped;
the CLI prints that partial answer and exits 130. Ctrl-C is simulated with SIGINT, raised in-process when the core's
own count says the call is under way (never after it returned, which would interrupt pytest itself)."""
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import capplan
from capplan import calibration
from capplan._progress import StoppedWarning


@contextlib.contextmanager
def ctrl_c_when(monkeypatch, reached):
    """SIGINT once ``reached(progress)`` holds for the core's count of the next long call (checked every 5 ms)."""
    real = capplan._core.Progress

    class Tripwire(real):
        def __init__(self):
            super().__init__()
            threading.Thread(target=self._watch, daemon=True).start()

        def _watch(self):
            while not self.stop_requested():
                if reached(self):
                    signal.raise_signal(signal.SIGINT)
                    return
                time.sleep(0.005)

    monkeypatch.setattr(capplan._core, "Progress", Tripwire)
    yield
    monkeypatch.setattr(capplan._core, "Progress", real)


def test_a_bar_stays_quiet_when_output_is_not_a_terminal(capsys):
    r = capplan.search_training({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
                                 "training": {"seq_len": 4096, "global_batch": 64}}, top_k=1)
    assert r["shapes"] == r["shapes_searched"] > 0 and not r["stopped"]
    assert capsys.readouterr().err == ""  # pytest's capture is not a terminal: tqdm draws nothing


def test_ctrl_c_stops_sizing_and_keeps_the_accelerators_searched(monkeypatch):
    question = ("Llama-3.1-70B", 100, 2000, 500)  # 14 accelerators with a preset, about 2.3 s
    with ctrl_c_when(monkeypatch, lambda p: p.done() >= 2), \
            pytest.warns(StoppedWarning, match=r"of \d+ accelerators searched"):
        part = capplan.size_inference(*question)
    whole = capplan.size_inference(*question, progress=False)
    assert part["stopped"] and not whole["stopped"]
    assert 2 <= part["accelerators_searched"] < part["accelerators"] == whole["accelerators"]
    searched = {o["accelerator"] for o in part["options"]} | {x["accelerator"] for x in part["rejected"]}
    assert len(searched) == part["accelerators_searched"]
    answers = {o["accelerator"]: o for o in whole["options"]}
    for o in part["options"]:  # an accelerator searched to the end has the answer the whole search gives it
        assert o == answers[o["accelerator"]]
    assert f"stopped (Ctrl-C) after {part['accelerators_searched']} of" in repr(part)


def test_ctrl_c_stops_a_layout_search_with_the_best_of_the_shapes_searched(monkeypatch):
    big = {"model": "Qwen3-30B-A3B", "system": {"preset": "DGX-H100", "count": 1 << 20},
           "training": {"seq_len": 8192, "global_batch": 1 << 20}}  # 960 shapes, 5.7 M layouts: about 4.7 s
    with ctrl_c_when(monkeypatch, lambda p: p.done() >= 20), \
            pytest.warns(StoppedWarning, match=r"of 960 layout shapes searched"):
        r = capplan.search_training(big, top_k=3)
    assert r["stopped"] and 20 <= r["shapes_searched"] < r["shapes"] == 960
    assert [b["step_time_s"] for b in r["best"]] == sorted(b["step_time_s"] for b in r["best"])
    assert "stopped (Ctrl-C) after" in repr(r)


def test_ctrl_c_stops_measuring_and_returns_the_probes_measured(monkeypatch):
    with ctrl_c_when(monkeypatch, lambda p: p.done() >= 2), \
            pytest.warns(StoppedWarning, match="probes measured"):  # twelve 1024^3 GEMMs: about 1.1 s
        m = calibration.measure_cpu(shapes=[(1024, 1024, 1024)] * 12, array=0, max_time="0.3 s")
    assert m["stopped"] and 2 <= len(m["measurements"]) < 12


def test_ctrl_c_in_the_second_round_fits_the_first(monkeypatch):
    # The first round sets the total (two rounds' probes): one probe into the second, Ctrl-C.
    with ctrl_c_when(monkeypatch, lambda p: p.total() > 0 and p.done() > p.total() // 2), \
            pytest.warns(StoppedWarning, match="stopped after 1 of 2 rounds"):
        cal = calibration.calibrate_cpu("Llama-3.2-1B", layer_tokens=16, gemm_tokens=(1,), rounds=2,
                                        max_time="0.02 s", triad_arrays=["1 MiB"])
    assert cal["source"].endswith("stopped after 1 of 2 rounds")
    assert cal["curves"]["gemm"]["fp32"]  # fitted from the round measured


def test_the_cli_prints_the_partial_answer_and_exits_130():
    cmd = [sys.executable, "-m", "capplan", "size", "training", "--model", "Qwen3-30B-A3B", "--system", "DGX-H100",
           "--count", str(1 << 20), "--seq-len", "8192", "--global-batch", str(1 << 20)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONWARNINGS": "ignore::DeprecationWarning"})
    timer = threading.Timer(3.0, proc.send_signal, [signal.SIGINT])  # start-up ~1 s, then a 4.7 s search
    timer.start()
    out, err = proc.communicate(timeout=120)
    timer.join()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert "stopped (Ctrl-C)" in err
    # Ctrl-C during the search: its best so far, then the line that says so (before it, on a slow start: nothing).
    assert "layout shapes (tp x pp x cp x ep)" in out or out == ""

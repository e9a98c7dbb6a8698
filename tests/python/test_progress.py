"""Progress and Ctrl-C on long calls (issue #23 item 4): sizing, the layout search and calibration run in the core
while a bar (quiet when output is not a terminal) follows them; Ctrl-C stops them with what they had, marked stopped;
the CLI prints that partial answer and exits 130. Ctrl-C is simulated with SIGINT to the main thread when the core's
own count says the call is under way (never after it returned, which would interrupt pytest itself); one test sends
it to a separate process from outside."""
import contextlib
import os
import re
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
    """Ctrl-C (SIGINT to the main thread, as a terminal sends it) once ``reached(progress)`` holds for the core's count
    of a long call in this block (checked every 5 ms, for at most a minute)."""
    main, real = threading.main_thread().ident, capplan._core.Progress

    class Tripwire(real):
        def __init__(self):
            super().__init__()
            threading.Thread(target=self._watch, daemon=True).start()

        def _watch(self):
            for _ in range(12_000):
                if self.stop_requested():
                    return
                if reached(self):
                    signal.pthread_kill(main, signal.SIGINT)
                    return
                time.sleep(0.005)

    monkeypatch.setattr(capplan._core, "Progress", Tripwire)
    yield
    monkeypatch.setattr(capplan._core, "Progress", real)  # calls after the block run untripped


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
            pytest.warns(StoppedWarning, match="fitted from 1 of 2 rounds finished"):
        cal = calibration.calibrate_cpu("Llama-3.2-1B", layer_tokens=16, gemm_tokens=(1,), rounds=2,
                                        max_time="0.02 s", triad_arrays=["1 MiB"])
    assert cal["source"].endswith("stopped after 1 of 2 rounds")
    assert cal["curves"]["gemm"]["fp32"]  # fitted from the round measured


SEARCH = ["size", "training", "--model", "Qwen3-30B-A3B", "--system", "DGX-H100", "--count", str(1 << 20),
          "--seq-len", "8192", "--global-batch", str(1 << 20)]  # the 4.7 s search above


def test_the_cli_prints_the_partial_answer_and_exits_130(monkeypatch, capsys):
    from capplan import cli
    with ctrl_c_when(monkeypatch, lambda p: p.done() >= 20):
        code = cli.main(SEARCH)
    out, err = capsys.readouterr()
    assert code == 130
    assert "Traceback" not in err
    assert "capplan: capplan.search_training stopped (Ctrl-C): " in err
    assert "layout shapes (tp x pp x cp x ep)" in out and "tokens/s" in out  # the best so far, as a table


def test_ctrl_c_while_the_cli_works_out_the_limits_keeps_the_whole_search(monkeypatch, capsys):
    from capplan import api, cli

    def ctrl_c(*args, **kwargs):  # Ctrl-C in the limits' first estimate, after the search ended
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "estimate", ctrl_c)
    code = cli.main(["size", "training", "--model", "Llama-3.1-8B", "--system", "DGX-H100", "--count", "8",
                     "--seq-len", "4096", "--global-batch", "64"])
    out, err = capsys.readouterr()
    assert code == 130
    assert "limits not computed (Ctrl-C)" in out and "tokens/s" in out
    assert "largest micro-batch and longest sequence were not computed" in err


def test_sizing_stopped_before_any_accelerator_finished_says_so_not_that_none_meets_the_targets(monkeypatch, capsys):
    from capplan import cli
    with ctrl_c_when(monkeypatch, lambda p: p.total() > 0):  # as soon as the search has started
        code = cli.main(["size", "inference", "--model", "Llama-3.1-70B", "--concurrency", "100", "--input", "2000",
                         "--output", "500"])
    out, err = capsys.readouterr()
    assert code == 130 and "Traceback" not in err
    # The first accelerator takes ~0.1 s and the stop comes within 5 ms of the start: it lands in the first.
    assert re.search(r"stopped \(Ctrl-C\) after 0 of \d+ accelerators", out)
    assert "no accelerator was searched to the end" in out and "meets the targets" not in out


def test_a_stopped_search_is_not_an_answer_to_work_limits_from():
    stopped = {"best": [], "stopped": True, "enumerated": 0}
    with pytest.raises(capplan.ConfigError, match="/search"):
        capplan.training_limits({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
                                 "training": {"seq_len": 4096, "global_batch": 64}}, search=stopped)


def test_the_command_line_stops_cleanly_from_a_real_ctrl_c():
    """The process as a user runs it: SIGINT from outside, once it has started (3 s; the search takes 4.7 s)."""
    proc = subprocess.Popen([sys.executable, "-m", "capplan", *SEARCH], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONWARNINGS": "ignore::DeprecationWarning"})
    timer = threading.Timer(3.0, proc.send_signal, [signal.SIGINT])
    timer.start()
    out, err = proc.communicate(timeout=120)
    timer.join()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "stopped (Ctrl-C)" in err


@pytest.mark.parametrize("call", [
    lambda p: capplan.size_inference("Llama-3.1-8B", 8, 1000, 100, accelerators=["H100-SXM"], progress=p),
    lambda p: capplan.search_training({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
                                       "training": {"seq_len": 4096, "global_batch": 64}}, progress=p),
    lambda p: calibration.measure_cpu(shapes=[(8, 8, 8)], array=0, progress=p),
    lambda p: calibration.calibrate_cpu("Llama-3.2-1B", rounds=1, progress=p),
])
@pytest.mark.parametrize("bad", ["yes", 2, None, [True]])
def test_progress_takes_a_boolean_and_names_it_otherwise(call, bad):
    with pytest.raises(capplan.ConfigError, match="/progress"):
        call(bad)

"""Progress bars and Ctrl-C for long calls (issue #23 item 4): sweeps, layout searches, sizing, calibration.

A bar is tqdm's and stays quiet when output is not a terminal (``disable=None``); without tqdm there is none. A core
call runs on a worker thread while this thread draws the bar from a ``_core.Progress``; Ctrl-C asks the core to stop,
and the call returns what it has so far (a search its best so far, sizing
the accelerators searched, a calibration the rounds finished), which the caller marks as stopped."""
import signal
import threading
import warnings
from typing import Any, Callable, Optional, Tuple

from . import _core


def bar(total: Optional[int], unit: str, description: str = ""):
    """A tqdm bar over ``total`` items (None: a count without a total); None without tqdm."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit=unit, desc=description or None, disable=None, leave=False)


def run_watched(call: Callable[[Any], Any], unit: str, description: str, show: bool) -> Tuple[Any, bool]:
    """``call(watch)`` on a worker thread, with a bar of ``watch``'s progress when ``show``: (its result, whether
    Ctrl-C asked it to stop). The call's own exception is raised here; a call that had nothing to return when asked
    to stop raises KeyboardInterrupt. On the main thread, Ctrl-C (SIGINT) only asks the core to stop while the call
    runs (a second one too): the call always ends before this returns, so no core work is left running behind it."""
    watch = _core.Progress()
    outcome: dict = {}
    finished = threading.Event()
    asked = []

    def target() -> None:
        try:
            outcome["result"] = call(watch)
        except BaseException as e:  # handed to the caller's thread
            outcome["error"] = e
        finally:
            finished.set()

    def on_ctrl_c(signum, frame) -> None:
        asked.append(signum)
        watch.request_stop()

    on_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, on_ctrl_c) if on_main else None
    shown = None
    try:
        shown = bar(None, unit, description) if show else None
        threading.Thread(target=target, name="capplan " + description, daemon=True).start()
        while not finished.wait(0.1):
            if shown is not None:
                total = watch.total()
                if total and shown.total != total:
                    shown.total = total
                shown.n = watch.done()
                shown.refresh()
    finally:
        if not finished.is_set():  # left early (an error drawing the bar): stop the core's work and wait for it
            watch.request_stop()
            finished.wait()
        if on_main and previous is not None:  # None: a handler set outside Python, which cannot be put back
            signal.signal(signal.SIGINT, previous)
        if shown is not None:
            shown.close()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"], bool(asked)


class StoppedWarning(UserWarning):
    """A long call stopped by Ctrl-C returned what it had: the message says how much (the CLI exits 130 on it)."""


def warn_stopped(what: str, kept: str) -> None:
    """The warning a stopped call gives with its partial result."""
    warnings.warn(f"{what} stopped (Ctrl-C): {kept}", StoppedWarning, stacklevel=3)


def stop_if_stopped(result) -> None:
    """In a loop of calls: one that Ctrl-C stopped ends the loop as Ctrl-C would."""
    if result.get("stopped"):
        raise KeyboardInterrupt

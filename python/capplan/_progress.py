"""Progress bars and Ctrl-C for long calls (issue #23 item 4): sweeps, layout searches, sizing, calibration.

A bar is tqdm's and stays quiet when output is not a terminal (``disable=None``); without tqdm there is none. A core
call runs on a worker thread while this thread draws the bar from a ``_core.Progress`` and waits for Ctrl-C: the
KeyboardInterrupt asks the core to stop, and the call returns what it has so far (a search its best so far, sizing
the accelerators searched, a calibration the rounds finished), which the caller marks as stopped."""
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
    Ctrl-C stopped it). The call's own exception is raised here; a call that had nothing to return when asked to
    stop raises KeyboardInterrupt."""
    watch = _core.Progress()
    outcome: dict = {}
    finished = threading.Event()

    def target() -> None:
        try:
            outcome["result"] = call(watch)
        except BaseException as e:  # handed to the caller's thread
            outcome["error"] = e
        finally:
            finished.set()

    worker = threading.Thread(target=target, name="capplan " + description, daemon=True)
    shown = bar(None, unit, description) if show else None
    interrupted = False
    worker.start()
    try:
        # Waiting on an Event, not Thread.join: a join that KeyboardInterrupt breaks can leave the thread marked as
        # ended while it still runs (CPython issue 90882).
        while not finished.is_set():
            try:
                finished.wait(0.1)
            except KeyboardInterrupt:  # ask the core to stop, then wait for what it has
                interrupted = True
                watch.request_stop()
            if shown is not None:
                total = watch.total()
                if total and shown.total != total:
                    shown.total = total
                shown.n = watch.done()
                shown.refresh()
    finally:
        if shown is not None:
            shown.close()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"], interrupted


class StoppedWarning(UserWarning):
    """A long call stopped by Ctrl-C returned what it had: the message says how much (the CLI exits 130 on it)."""


def warn_stopped(what: str, kept: str) -> None:
    """The warning a stopped call gives with its partial result."""
    warnings.warn(f"{what} stopped (Ctrl-C): {kept}", StoppedWarning, stacklevel=3)


def stop_if_stopped(result) -> None:
    """In a loop of calls: one that Ctrl-C stopped ends the loop as Ctrl-C would."""
    if result.get("stopped"):
        raise KeyboardInterrupt

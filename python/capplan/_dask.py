"""Sweeps on a Dask cluster (issue #23 item 3): the grid cut into partitions, each evaluated by
``capplan.batch.sweep_partition`` on a worker, gathered back in order."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional, Sequence

from . import _args
from ._progress import bar as progress_bar, warn_stopped

Row = Dict[str, Any]


def _check_client(client: Any) -> None:
    if not all(hasattr(client, name) for name in ("map", "gather", "nthreads")):
        raise _args.config_error("/client", client, "not a Dask client",
                                 "a dask.distributed.Client (pip install \"capplan[dask]\")")


def _partition_count(client: Any, points: int, partitions: Optional[int]) -> int:
    """Four partitions a worker thread by default (a lost worker costs little to redo), never more than points."""
    if partitions is not None:
        wanted = _args.integer(partitions, "/partitions", 1, 1_000_000)
    else:
        wanted = 4 * max(1, sum(client.nthreads().values()))
    return max(1, min(wanted, points))


def sweep_on_cluster(client: Any, base: Mapping[str, Any], points: Sequence[Mapping[str, Any]], progress: bool,
                     infeasible_speed: bool, partitions: Optional[int]) -> List[Row]:
    """The rows of every point, computed on the cluster; with a progress bar on a terminal. Ctrl-C cancels what is
    left and returns the partitions done (in order), with a warning."""
    from .batch import sweep_partition
    _check_client(client)
    n = _partition_count(client, len(points), partitions)
    size = math.ceil(len(points) / n) if points else 1
    chunks = [list(points[i:i + size]) for i in range(0, len(points), size)]
    # pure=False: the same chunk twice is still two tasks (no key clash across sweeps); retries: a task whose worker
    # failed in a way the scheduler reports as an error is tried again (a worker that dies is rescheduled anyway).
    futures = client.map(sweep_partition, [dict(base)] * len(chunks), chunks, [infeasible_speed] * len(chunks),
                         pure=False, retries=3)
    done: Dict[int, List[Row]] = {}
    index = {f.key: i for i, f in enumerate(futures)}
    bar = progress_bar(len(points), "point") if progress else None
    try:
        from distributed import as_completed
        for future in as_completed(futures):
            i = index[future.key]
            done[i] = future.result()
            if bar is not None:
                bar.update(len(chunks[i]))
    except KeyboardInterrupt:
        client.cancel(futures)
        kept = sum(len(done[i]) for i in done)
        warn_stopped("capplan.sweep", f"{kept} of {len(points)} points done; the rows returned are those")
    finally:
        if bar is not None:
            bar.close()
    return [row for i in sorted(done) for row in done[i]]


def sweep_columns_on_cluster(client: Any, base: str, axes: List[Any], wanted: List[str], progress: bool,
                             partitions: Optional[int]) -> List[Dict[str, Any]]:
    """A columnar sweep's parts computed on the cluster, in the grid's order: the first axis (which varies slowest)
    cut into consecutive runs of values, one task each. Ctrl-C cancels what is left and keeps the parts done before
    the first one missing, with a warning."""
    from .batch import sweep_columns_partition
    _check_client(client)
    first = axes[0][1] if axes else [None]
    rest = math.prod(len(v) for _, v in axes[1:]) if axes else 1
    n = _partition_count(client, len(first), partitions)
    size = math.ceil(len(first) / n)
    cuts = [first[i:i + size] for i in range(0, len(first), size)]
    tasks = [([(axes[0][0], cut)] + list(axes[1:])) if axes else [] for cut in cuts]
    futures = client.map(sweep_columns_partition, [base] * len(tasks), tasks, [wanted] * len(tasks),
                         pure=False, retries=3)
    done: Dict[int, Dict[str, Any]] = {}
    index = {f.key: i for i, f in enumerate(futures)}
    bar = progress_bar(len(first) * rest, "point") if progress else None
    try:
        from distributed import as_completed
        for future in as_completed(futures):
            i = index[future.key]
            done[i] = future.result()
            if bar is not None:
                bar.update(len(cuts[i]) * rest)
    except KeyboardInterrupt:
        client.cancel(futures)
    except BaseException:  # a part that failed: the others are not worth waiting for
        client.cancel(futures)
        raise
    finally:
        if bar is not None:
            bar.close()
    parts = []
    for i in range(len(cuts)):
        if i not in done:
            break
        parts.append(done[i])
    return parts or [{"columns": [], "errors": {}, "reasons": {}, "points": 0}]

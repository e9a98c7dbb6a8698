"""capplan.sweep on a Dask cluster (issue #23 item 3): a LocalCluster of two worker processes gives the same
DataFrame as a local run, in the same order, also when one worker is killed mid-sweep (its partitions are computed
again); workers= limits the local cores; bad arguments name their field."""
import os
import signal
import threading
import time

import pytest

import capplan

distributed = pytest.importorskip("distributed")
pandas = pytest.importorskip("pandas")

# A small model under load: every point runs the serving simulation (0.5-1 ms each here).
SCENARIO = {"model": "Llama-3.1-8B", "system": {"accelerator": "H100-SXM", "count": 1},
            "inference": {"input_tokens": 500, "output_tokens": 16, "concurrency": 4, "workload": {"requests": 40}}}
GRID = {"inference.concurrency": list(range(1, 25)), "inference.input_tokens": [256, 512, 1024, 2048],
        "inference.output_tokens": [8, 16]}


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=50) as c, distributed.Client(c) as client:
        yield c, client


def test_a_dask_sweep_is_the_local_sweep(cluster):
    _, client = cluster
    local = capplan.sweep(SCENARIO, GRID, progress=False)
    remote = capplan.sweep(SCENARIO, GRID, progress=False, client=client)
    assert len(local) == 24 * 4 * 2 and "error" not in local
    pandas.testing.assert_frame_equal(local, remote)
    serial = capplan.sweep(SCENARIO, GRID, progress=False, workers=1)
    pandas.testing.assert_frame_equal(local, serial)


def test_a_worker_killed_mid_sweep_costs_only_its_partitions(cluster):
    c, client = cluster
    # About 1 s on the two-worker cluster of an idle 2-core machine (96 concurrencies took 0.3 s there, as long as the
    # kill's wait: the sweep could end before it), time to kill one worker mid-sweep.
    grid = dict(GRID, **{"inference.concurrency": list(range(1, 577))})
    local = capplan.sweep(SCENARIO, grid, progress=False)
    pids = client.run(os.getpid)  # worker address -> its process
    victim = sorted(pids)[0]
    killed = threading.Event()

    def kill():
        time.sleep(0.3)  # the sweep is under way
        os.kill(pids[victim], signal.SIGKILL)
        killed.set()

    threading.Thread(target=kill, daemon=True).start()
    remote = capplan.sweep(SCENARIO, grid, progress=False, client=client, partitions=64)
    assert killed.is_set()
    pandas.testing.assert_frame_equal(local, remote)
    client.wait_for_workers(2, timeout=60)  # the nanny starts a new worker in the killed one's place
    assert victim not in set(client.scheduler_info()["workers"])


def test_sweep_arguments_name_their_field(cluster):
    _, client = cluster
    for kwargs, field in (({"workers": 0}, "/workers"), ({"partitions": 4}, "/partitions"),
                          ({"client": object()}, "/client"), ({"client": client, "partitions": 0}, "/partitions")):
        with pytest.raises(capplan.ConfigError, match=field):
            capplan.sweep(SCENARIO, {"inference.concurrency": [1, 2]}, progress=False, **kwargs)


def test_a_columnar_dask_sweep_is_the_local_one(cluster):
    # Cut along the first key (it varies slowest): consecutive runs of its values, one task each, joined in order;
    # more partitions than values gives one value a task.
    _, client = cluster
    local = capplan.sweep(SCENARIO, GRID, progress=False, columns="all")
    for partitions in (3, 100):
        remote = capplan.sweep(SCENARIO, GRID, progress=False, client=client, partitions=partitions, columns="all")
        pandas.testing.assert_frame_equal(local, remote)
    few = capplan.sweep(SCENARIO, GRID, progress=False, client=client, columns=["inference.ttft_p99_s"])
    assert few["inference.ttft_p99_s"].tolist() == local["inference.ttft_p99_s"].tolist()

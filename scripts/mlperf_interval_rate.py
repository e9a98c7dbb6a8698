#!/usr/bin/env python3
"""Training throughput of an MLPerf Training submission from its result logs, as capplan's catalog reads it.

MLPerf v5.x logs carry no throughput line; each `tracked_stats` point with a `train_loss` value logs its wall time
(`time_ms`) and the samples consumed so far (`metadata.samples_count`). The rate of one interval is the samples
between two consecutive points over the time between them; this prints the median over every interval of every
file given (evaluation pauses fall in the slow tail, so the median is the training rate).

    python scripts/mlperf_interval_rate.py <results dir>/result_*.txt

models/accelerators/gb300.json cites the GB300 and GB200 Llama-2-70B LoRA runs of MLPerf Training v5.1
(mlcommons/training_results_v5.1, NVIDIA/results/{theia,tyche}_ngpu72_ngc25.09_nemo/llama2_70b_lora): 52.45 and
45.27 samples/s.
"""
import json
import statistics
import sys

_MARK = ":::MLLOG "


def train_loss_points(lines):
    """(time in ms, samples so far) of each train_loss point of one log, in order."""
    points = []
    for line in lines:
        if _MARK not in line or '"train_loss"' not in line:
            continue
        event = json.loads(line.split(_MARK, 1)[1])
        points.append((event["time_ms"], event["metadata"]["samples_count"]))
    return points


def interval_rates(points):
    """Samples per second between consecutive points."""
    return [(s1 - s0) / ((t1 - t0) / 1000.0) for (t0, s0), (t1, s1) in zip(points, points[1:]) if t1 > t0]


def main(paths):
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    rates = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            rates += interval_rates(train_loss_points(f))
    if not rates:
        print("no train_loss intervals in the files given", file=sys.stderr)
        return 1
    print(f"{statistics.median(rates):.2f} samples/s (median of {len(rates)} intervals in {len(paths)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""scripts/mlperf_interval_rate.py: the training rate of an MLPerf log from its train_loss points, by hand."""
import importlib.util
import pathlib

_PATH = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "mlperf_interval_rate.py"
_SPEC = importlib.util.spec_from_file_location("mlperf_interval_rate", _PATH)
rate = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(rate)


def _point(time_ms, samples):
    return (':::MLLOG {"namespace": "", "time_ms": %d, "event_type": "POINT_IN_TIME", "key": "tracked_stats", '
            '"value": {"train_loss": 1.0}, "metadata": {"samples_count": %d, "step": 0}}\n' % (time_ms, samples))


def test_median_of_interval_rates_skips_other_lines(tmp_path, capsys):
    # 90 samples in 2 s (45/s), 90 in 2 s (45/s), 90 in 10 s (9/s: an evaluation pause): median 45.
    log = tmp_path / "result_0.txt"
    log.write_text(":::MLLOG {\"key\": \"run_start\"}\nnot a log line\n" + "".join(
        _point(t, s) for t, s in ((1000, 90), (3000, 180), (5000, 270), (15000, 360))))
    points = rate.train_loss_points(log.read_text().splitlines())
    assert points == [(1000, 90), (3000, 180), (5000, 270), (15000, 360)]
    assert rate.interval_rates(points) == [45.0, 45.0, 9.0]
    assert rate.main([str(log)]) == 0
    assert capsys.readouterr().out.startswith("45.00 samples/s (median of 3 intervals in 1 files)")


def test_no_files_or_no_points_is_an_error_not_a_traceback(tmp_path, capsys):
    assert rate.main([]) == 2
    empty = tmp_path / "empty.txt"
    empty.write_text("nothing here\n")
    assert rate.main([str(empty)]) == 1
    assert "no train_loss intervals" in capsys.readouterr().err

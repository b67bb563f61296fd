"""Many replays on this machine (no Dask): jobs, the local pool, grids, and the CLI's grid."""

import dataclasses
import doctest
import json
import pickle
import shlex
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import onlinesparse.replay.parallel
from onlinesparse.replay.cli import main
from onlinesparse.replay.cluster import import_distributed
from onlinesparse.replay.errors import UsageError
from onlinesparse.replay.grid import evaluate_grid, grid_settings, parse_grid
from onlinesparse.replay.jobs import JobResult, ReplayJob
from onlinesparse.replay.parallel import replay_many
from onlinesparse.replay.runner import ReplayConfig, run_replay

N = 400
OPTIONS = {"time": "time", "features": ["n1", "n2", "n3", "n4"], "warmup": 50}
#: Settings that cover the models' different code paths and stay fast on 400 rows.
SETTINGS = [
    ("linear", {}),
    ("vbls", {}),
    ("rbf", {"max_basis": 10, "window_size": 100, "evaluations_per_sample": 2}),
    ("lin1", {}),
]
#: What depends on the clock, not on the data and the model.
TIMING = ("latency_us", "cpu_us", "gc_pauses_us", "warm_up_s", "elapsed_s", "rows_per_second")


def make_recording(directory):
    """A 400-row Parquet recording with two targets, and its frame."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N, 4))
    frame = pd.DataFrame(X, columns=["n1", "n2", "n3", "n4"])
    frame.insert(0, "time", np.arange(N) * 0.01)
    frame["y1"] = 1.5 * X[:, 0] - X[:, 2] + 0.1 * rng.normal(size=N)
    frame["y2"] = np.tanh(X[:, 1]) + 0.1 * rng.normal(size=N)
    path = directory / "rec.parquet"
    frame.to_parquet(path, index=False, row_group_size=100)
    return path


def make_jobs(path, out=None):
    """One job per (target, model setting), then two that cannot run. With ``out``, each
    runnable job writes its outputs there, the first one with its report (the plots take
    a second a job)."""
    jobs = [
        ReplayJob(path, target, model, params, options={**OPTIONS, "report": not jobs_before},
                  out=None if out is None else out / f"{target}-{model}")
        for jobs_before, (target, (model, params)) in enumerate(
            (t, s) for t in ("y1", "y2") for s in SETTINGS)
    ]
    jobs.append(ReplayJob(path.with_name("missing.parquet"), "y1", "linear", options=OPTIONS))
    jobs.append(ReplayJob(path, "y1", "linear", {"depth": 3}, options=OPTIONS))
    return jobs


def deterministic(metrics):
    """The metrics without those that measure time."""
    return {k: v for k, v in metrics.items() if k not in TIMING}


def sequential_metrics(job):
    """The job's metrics from the one-machine, in-process ``run_replay`` the CLI uses."""
    outcome = run_replay(dataclasses.replace(job.config(), out=None))
    assert outcome.exit_code == 0
    return deterministic(outcome.results[0].metrics)


def check_results_against_sequential_run(jobs, results):
    """Every runnable job equals its sequential replay; the two broken ones fail, named."""
    assert [r.index for r in results] == list(range(len(jobs)))
    assert [r.job for r in results] == jobs
    *good, missing, bad_param = results
    for result in good:
        assert result.status == "completed", result.describe()
        assert result.metrics["n_scored"] == N - 50
        assert deterministic(result.metrics) == sequential_metrics(result.job), result.job.name
    assert missing.status == "failed" and not missing.ok
    assert missing.metrics is None
    assert "recording not found" in missing.error and "missing.parquet" in missing.error
    assert missing.describe().startswith(f"job {len(jobs) - 2} 'missing.parquet:y1:linear' "
                                         "failed on ")
    assert bad_param.status == "failed"
    assert bad_param.describe().startswith(
        f"job {len(jobs) - 1} 'rec.parquet:y1:linear(depth=3)' failed on ")
    assert "model 'linear' does not take a parameter 'depth'" in bad_param.error


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    return make_recording(tmp_path_factory.mktemp("parallel"))


def test_local_pool_gives_the_metrics_of_a_sequential_run_and_keeps_failures_apart(
    recording, tmp_path
):
    jobs = make_jobs(recording, out=tmp_path)
    results = replay_many(jobs, workers=2)
    check_results_against_sequential_run(jobs, results)
    # Each job ran in a worker process and wrote its own outputs there.
    assert len({r.worker for r in results[:-2]}) == 2
    first = results[0]
    assert first.out == tmp_path / "y1-linear"
    written = json.loads((first.out / "metrics.json").read_text())["targets"]["y1"]
    assert written["rmse"] == first.metrics["rmse"]
    assert len(pd.read_parquet(first.out / "predictions.parquet")) == N
    assert (first.out / "report.html").exists()
    assert not (results[1].out / "report.html").exists()


def test_jobs_carry_paths_and_settings_not_data(recording):
    job = ReplayJob(recording, "y1", "rbf", {"max_basis": 10}, options=OPTIONS)
    assert len(pickle.dumps(job)) < 1000  # the recording is 400 × 7 float64 = 22 kB
    assert job.name == "rec.parquet:y1:rbf(max_basis=10)"
    cfg = job.config()
    assert (cfg.targets, cfg.model_params, cfg.warmup, cfg.workers) == (["y1"], {"max_basis": 10},
                                                                       50, 1)
    with pytest.raises(UsageError, match="unknown option 'wramup'"):
        ReplayJob(recording, "y1", options={"wramup": 5})
    with pytest.raises(UsageError, match="'targets' is not an option of a job"):
        ReplayJob(recording, "y1", options={"targets": ["y2"]})
    with pytest.raises(UsageError, match=r"its target 'y1' is not one of its targets \['y2'\]"):
        ReplayJob(recording, "y1", targets=["y2"])


def test_a_job_among_several_targets_does_not_use_the_others_as_inputs(recording):
    both = run_replay(ReplayConfig(recording, ["y1", "y2"], model="linear", workers=1))
    alone, among = replay_many([ReplayJob(recording, "y2", "linear"),
                                ReplayJob(recording, "y2", "linear", targets=["y1", "y2"])],
                               workers=1)
    assert deterministic(among.metrics) == deterministic(both.results[1].metrics)
    assert "y1" in alone.relevance and "y1" not in among.relevance  # the model's inputs


def test_the_job_list_is_checked_before_anything_runs(recording, tmp_path):
    same = [ReplayJob(recording, t, "linear", out=tmp_path / "o") for t in ("y1", "y2")]
    with pytest.raises(UsageError, match=r"jobs 0 .* and 1 .* would both write to"):
        replay_many(same)
    with pytest.raises(UsageError, match="not a ReplayJob"):
        replay_many([ReplayConfig(recording, ["y1"])])
    with pytest.raises(UsageError, match="workers must be at least 1"):
        replay_many(same[:1], workers=0)
    assert replay_many([]) == []


def test_relative_paths_are_resolved_where_jobs_are_submitted(recording, monkeypatch):
    monkeypatch.chdir(recording.parent)
    job = ReplayJob("rec.parquet", "y1", "linear", options=OPTIONS, out="relative-out")
    [result] = replay_many([job], workers=1)
    assert result.ok and result.job is job  # reported as written
    assert result.out == recording.parent / "relative-out"


def test_without_dask_options_nothing_imports_dask(recording, tmp_path):
    """The local pool, ``replay`` and ``grid`` in a fresh interpreter: no dask module loaded."""
    script = f"""
import sys
from onlinesparse.replay.cli import main
from onlinesparse.replay.jobs import ReplayJob
from onlinesparse.replay.parallel import replay_many
jobs = [ReplayJob({str(recording)!r}, t, "linear") for t in ("y1", "y2")]
assert all(r.ok for r in replay_many(jobs, workers=2))
assert main(["replay", {str(recording)!r}, "--target", "y1", "--target", "y2", "--model",
             "linear", "--workers", "1", "--out", {str(tmp_path / "r")!r}]) == 0
assert main(["grid", {str(recording)!r}, "--target", "y1", "--model", "linear",
             "--grid", "lr=0.01,0.02", "--workers", "1"]) == 0
print(sorted({{m.split(".")[0] for m in sys.modules}} & {{"dask", "distributed"}}))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_without_dask_installed_the_error_says_how_to_install_it(
    recording, monkeypatch, capsys
):
    monkeypatch.setitem(sys.modules, "distributed", None)  # makes ``import distributed`` fail
    with pytest.raises(UsageError, match=r"pip install 'onlinesparse\[dask\]'"):
        import_distributed()
    for command in ("replay", "grid"):
        extra = ["--grid", "lr=0.01,0.02"] if command == "grid" else []
        code = main([command, str(recording), "--target", "y1", "--model", "linear", *extra,
                     "--scheduler", "local"])
        err = capsys.readouterr().err
        assert code == 2
        assert "running on Dask needs the optional 'dask' extra" in err
        assert "pip install 'onlinesparse[dask]'" in err
        assert "Traceback" not in err


def test_grid_values_parse_to_the_models_types_and_ranges():
    assert parse_grid(["max-basis=10,20", "window_size=200,500"], "rbf") == {
        "max_basis": [10, 20], "window_size": [200, 500]}
    assert parse_grid(["max_basis=1e1"], "rbf") == {"max_basis": [10]}
    assert parse_grid(["radii=(0.5,),(1.0, 2.0)", "kernel=gaussian,cauchy"], "rbf") == {
        "radii": [(0.5,), (1.0, 2.0)], "kernel": ["gaussian", "cauchy"]}
    assert parse_grid(["lr=0.01,0.1"], "linear") == {"lr": [0.01, 0.1]}
    for bad, message in [
        (["max-basis=10,0"], r"--max-basis: max_basis must be an integer ≥ 1, got 0"),
        (["lr=0"], r"--lr must be a number in \(0, 10\]"),
        (["window"], "--grid expects KEY=V1,V2,..."),
        (["window=1,2", "window=3"], "--grid window is given twice"),
        (["window=1,,2"], "needs values separated by commas"),
    ]:
        with pytest.raises(UsageError, match=message):
            parse_grid(bad, "rbf" if "lr" not in bad[0] else "linear")
    assert grid_settings({"a": [1, 2], "b": ["x"]}) == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]


def test_a_grid_is_ranked_by_the_metric_averaged_over_targets(recording):
    grid = {"lr": [0.001, 0.01, 0.05]}
    options = {"time": "time", "warmup": 50}
    result = evaluate_grid(recording, ["y1", "y2"], grid, model="linear", params={"l2": 0.0},
                           options=options, workers=1)
    expected = {}
    for lr in grid["lr"]:
        outcome = run_replay(ReplayConfig(recording, ["y1", "y2"], model="linear",
                                          model_params={"l2": 0.0, "lr": lr}, workers=1,
                                          **options))
        expected[lr] = sum(r.metrics["nmse"] for r in outcome.results) / 2
    ranked = sorted(grid["lr"], key=expected.__getitem__)
    own = [row for row in result.rows if row.role == "grid"]
    assert [row.setting["lr"] for row in own] == ranked
    assert [row.score for row in own] == pytest.approx([expected[v] for v in ranked])
    # Besides the grid: the model's defaults (lr 0.005 is not in the grid) and lin-1.
    extra = {(row.model, row.role): row for row in result.rows if row.role != "grid"}
    assert set(extra) == {("linear", "default"), ("lin1", "baseline")}
    assert extra["linear", "default"].setting == {}
    assert extra["linear", "default"].results[0].job.params == {"l2": 0.0}
    scores = [row.score for row in result.rows]
    assert scores == sorted(scores) and result.best is result.rows[0]
    assert all(r.job.params["l2"] == 0.0 for row in result.rows if row.model == "linear"
               for r in row.results)
    by_r2 = evaluate_grid(recording, ["y1", "y2"], grid, model="linear", options=options,
                          metric="r2", workers=1)
    assert by_r2.rows[0].means["r2"] == max(row.means["r2"] for row in by_r2.rows)
    with pytest.raises(UsageError, match="unknown metric 'mse'"):
        evaluate_grid(recording, ["y1"], grid, model="linear", metric="mse")
    with pytest.raises(UsageError, match="model 'linear' does not take a parameter 'depth'"):
        evaluate_grid(recording, ["y1"], {"depth": [1, 2]}, model="linear")


def test_a_setting_with_a_failed_replay_ranks_last_and_is_not_best(recording, tmp_path):
    frame = pd.read_parquet(recording)
    frame.loc[100, "y2"] = np.nan  # a corrupt row for y2 only under --missing drop
    path = tmp_path / "gap.parquet"
    frame.to_parquet(path, index=False)
    result = evaluate_grid(path, ["y1", "y2"], {"lr": [0.01, 0.02]}, model="linear",
                           options={"strict": True, "missing": "drop"}, workers=1)
    assert result.best is None
    for row in result.rows:
        assert row.score is None and not row.ok
        assert [r.status for r in row.results] == ["completed", "corrupt_row"]
        assert "corrupt row 100" in row.results[1].error
    missing = evaluate_grid(recording, ["y1", "nope"], {"lr": [0.01]}, model="linear",
                            workers=1)
    assert [r.status for r in missing.rows[0].results] == ["failed", "failed"]
    assert "unknown target column 'nope'" in missing.rows[0].results[1].error


def test_the_grid_command_reports_the_best_and_how_to_replay_it(recording, tmp_path, capsys):
    args = ["grid", str(recording), "--target", "y1", "--target", "y2", "--time", "time",
            "--model", "linear", "--l2", "0.0", "--grid", "lr=0.002,0.01,0.05", "--warmup", "50",
            "--workers", "1", "--out", str(tmp_path / "g")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "5 settings of 'linear' (with each model's defaults and the lin1 linear baseline) " \
           "on rec.parquet, 2 targets, ranked by nMSE" in out
    assert "RMSE and MAE are averaged over the targets in their own units" in out
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("rank"))
    assert lines[header].split()[:5] == ["rank", "model", "row", "lr", "nMSE"]
    table = [line.split() for line in lines[header + 2 : header + 7]]
    assert [row[0] for row in table] == ["1", "2", "3", "4", "5"]
    assert sorted((row[1], row[2]) for row in table) == [
        ("lin1", "baseline"), ("linear", "default"), ("linear", "grid"), ("linear", "grid"),
        ("linear", "grid")]
    nmse = [float(row[4]) for row in table]
    assert nmse == sorted(nmse)
    saved = json.loads((tmp_path / "g" / "grid.json").read_text())
    best_row = saved["settings"][0]
    assert saved["best"] == {"model": best_row["model"], **best_row["setting"]}
    assert len(pd.read_csv(tmp_path / "g" / "grid.csv")) == 5

    best = next(line for line in lines if line.startswith("best: "))
    assert best.startswith(f"best: {table[0][1]} with ")
    # (what it was built with: --l2 0.0 is the linear model's setting too)
    assert ("l2=0.0" if table[0][1] == "linear" else "with its defaults") in best
    command = next(line for line in lines if line.startswith("replay it with: "))
    words = shlex.split(command.removeprefix("replay it with: "))
    assert words[:2] == ["onlinesparse", "replay"]
    # The printed command reproduces the best setting's score.
    assert main([*words[1:], "--out", str(tmp_path / "best"), "--no-report"]) == 0
    capsys.readouterr()
    targets = json.loads((tmp_path / "best" / "metrics.json").read_text())["targets"]
    assert (targets["y1"]["nmse"] + targets["y2"]["nmse"]) / 2 == pytest.approx(
        saved["settings"][0]["score"])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--grid", "lr=0,1"], "--lr must be a number in (0, 10] (got 0.0)"),
        (["--grid", "lr=0.1", "--lr", "0.2"], "lr set both by --grid and by a fixed model"),
        (["--grid", "lr=0.1", "--warmup", "5", "--interval", "2"], "--interval must be"),
        (["--grid", "lr=0.1", "--target", "y_1"], "unknown target column 'y_1'"),
        (["--grid", "lr=0.1", "--scheduler", "tcp://127.0.0.1:1", "--workers", "2"],
         "--workers sets the size of the local pool"),
        ([], "the following arguments are required: --grid"),
    ],
)
def test_grid_usage_errors_name_the_problem(recording, extra, message, capsys):
    assert main(["grid", str(recording), "--target", "y1", "--model", "linear", *extra]) == 2
    assert message in capsys.readouterr().err


def test_job_results_describe_themselves():
    job = ReplayJob("r.csv", "y", "linear")
    assert JobResult(0, job, "completed").describe() == "job 0 'r.csv:y:linear' completed"
    assert JobResult(2, job, "model_error", error="the model raised", worker="h:1").describe() \
        == "job 2 'r.csv:y:linear' model error on h:1: the model raised"


def test_the_modules_examples_run():
    result = doctest.testmod(onlinesparse.replay.parallel, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 5 and result.failed == 0


def test_a_grid_compares_models_and_their_defaults(recording, capsys):
    result = evaluate_grid(recording, ["y1"], {"model": ["linear", "lin1"], "lr": [0.01, 0.05]},
                           options={"time": "time", "warmup": 50}, workers=1)
    rows = {(row.model, row.role, tuple(row.setting.items())) for row in result.rows}
    # lr applies to the model that takes it; lin1 (no lr) is its own default and the baseline
    assert rows == {("linear", "grid", (("lr", 0.01),)), ("linear", "grid", (("lr", 0.05),)),
                    ("linear", "default", ()), ("lin1", "grid", ())}
    assert all(row.ok for row in result.rows)
    # A shared keyword goes to the models that take it; one that none takes is an error.
    from onlinesparse.replay.grid import grid_candidates

    assert grid_candidates({"model": ["linear", "rbf"]}, "rbf", {"max_basis": 10}) == [
        ("linear", {}, "grid"), ("rbf", {"max_basis": 10}, "grid"), ("lin1", {}, "baseline")]
    # The default row is the model's defaults for the grid's keys, shared keywords kept.
    assert grid_candidates({"window_size": [50]}, "rbf", {"max_basis": 10}) == [
        ("rbf", {"max_basis": 10, "window_size": 50}, "grid"),
        ("rbf", {"max_basis": 10}, "default"), ("lin1", {}, "baseline")]
    assert main(["grid", str(recording), "--target", "y1", "--grid", "model=linear,lin1",
                 "--param", "depth=3", "--workers", "1"]) == 2
    assert "no model of the grid (linear, lin1) takes a parameter 'depth'" in \
        capsys.readouterr().err

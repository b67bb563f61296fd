"""The ``onlinesparse`` command: ``replay`` a recording, choose settings on a ``grid``, run
the ``demo``, list ``models``.

Exit codes: 0 done; 1 the replay had to stop (a corrupt row under ``--strict``, a model that
raised, a write that failed, a worker that died), scored nothing, or diverged (an nMSE above
10⁶ or not finite: every output is written, but the model learned nothing usable), or an
output could not be written; 2 the command cannot run as given (missing file, unknown
column, parameter out of range, model not installed, the ``replay`` extra not installed,
unwritable ``--out``, a checkpoint refused); 130 interrupted by Ctrl-C after saving a
checkpoint. See ``docs/replay_failures.md``.

Examples
--------
>>> main(["models"])  # doctest: +ELLIPSIS
name ...
0

"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from onlinesparse import __version__
from onlinesparse.replay import models as registry
from onlinesparse.replay.errors import ReplayError, UsageError
from onlinesparse.replay.extra import require_replay_extra

__all__ = ["main", "build_parser"]

DEFAULT_MODEL = "rbf"
#: Samples learned but not scored by default. The first predictions of a model that has seen
#: a handful of samples (0 before any) are far off and dominate squared-error scores: on
#: river's TrumpApproval the linear baseline scores R² = −0.71 over all samples and 0.62
#: without its first 50. A hundred samples is a short transient for a recording and
#: ``--warmup 0`` scores everything.
DEFAULT_WARMUP = 100


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text}")
    return value


def _model_flags() -> dict[str, list[tuple[str, registry.ModelParam]]]:
    """Each parameter flag of the registry with the models that take it."""
    flags: dict[str, list[tuple[str, registry.ModelParam]]] = {}
    for spec in registry.MODELS.values():
        for p in spec.params:
            flags.setdefault(p.flag, []).append((spec.name, p))
    return flags


def _shared_models() -> list[str]:
    """The registry's models that have a multi-output form (several targets share one)."""
    return [spec.name for spec in registry.MODELS.values() if spec.multi_target]


def _add_separate(group: Any) -> None:
    """``--separate``, which says what a shared model costs and which models have none."""
    group.add_argument(
        "--separate", action="store_true",
        help="one model per target even when the model has a multi-output form. A shared "
             "model reads each row once, predicts every target in one call and learns "
             "one basis from all of them, but learns only rows that carry every target "
             "(a row lacking one is predicted and scored for the others, learned by "
             "none); separate models learn each target from every row that has it, at "
             "one model's time per target. Models without a multi-output form ("
             + ", ".join(n for n in registry.MODELS if n not in _shared_models())
             + ") always fit one model per target")


def _add_replay_options(parser: argparse.ArgumentParser, grid: bool = False) -> None:
    """The options of ``replay``; ``grid`` keeps those that apply to a grid of replays."""
    cols = parser.add_argument_group("columns")
    cols.add_argument("--target", action="append", metavar="COL", required=True,
                      help="target column; repeat for several"
                           + ("" if grid else ": they share one model when the model has a "
                              "multi-output form (" + ", ".join(_shared_models()) + "), "
                              "else, or with --separate, each has its own"))
    cols.add_argument("--features", action="append", metavar="COLS",
                      help="feature columns, comma-separated, shell patterns allowed "
                           "(e.g. 'n*'); repeatable; default: every other column")
    cols.add_argument("--time", metavar="COL", help="time column (default: the row number)")

    model = parser.add_argument_group("model")
    model.add_argument("--model", default=DEFAULT_MODEL, metavar="NAME",
                       help=f"one of {', '.join(registry.MODELS)} (default {DEFAULT_MODEL}); "
                            "see 'onlinesparse models'")
    for flag, owners in _model_flags().items():
        p = owners[0][1]
        names = ", ".join(name for name, _ in owners)
        model.add_argument(f"--{flag}", dest=f"param_{p.flag.replace('-', '_')}",
                           metavar=p.type.__name__.upper(),
                           help=f"{p.help} ({p.describe_range()}; models: {names})")
    model.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                       help="any other constructor keyword of the model (repeatable)")
    if not grid:
        _add_separate(model)
    model.add_argument("--standardize", action=argparse.BooleanOptionalAction, default=True,
                       help="scale inputs with running, past-only mean and variance "
                            "(default: on)")

    ev = parser.add_argument_group("evaluation")
    ev.add_argument("--warmup", "--warm-up", type=_positive_int, default=DEFAULT_WARMUP,
                    metavar="N", help="first N samples are learned but not scored: the "
                    "first predictions of a model that has seen almost nothing would "
                    f"dominate the scores (default {DEFAULT_WARMUP}; 0 scores every sample)")
    ev.add_argument("--interval", type=float, default=0.95, metavar="LEVEL",
                    help="level of the predictive interval whose coverage is reported "
                         "(default 0.95)")
    ev.add_argument("--diag-every", type=_positive_int, default=100, metavar="K",
                    help="record the model's diagnostics every K samples (default 100)")
    if not grid:
        ev.add_argument("--budget-us", type=_positive_float, metavar="US",
                        help="deadline per sample in µs: count the samples whose predict_one "
                             "+ learn_one took longer (wall-clock) and draw it in the report")

    _add_output_options(parser, grid)

    run = parser.add_argument_group("running")
    what = "replays" if grid else "targets"
    run.add_argument("--workers", type=_positive_int, metavar="N",
                     help=f"worker processes for several {what} (default: one per {what[:-1]} "
                          "up to the CPU count; 1 runs in this process); with --scheduler "
                          "local, the number of Dask workers"
                          + ("" if grid else "; a model shared by the targets is one job, "
                             "run in this process"))
    run.add_argument("--scheduler", metavar="ADDRESS",
                     help=f"run the {what} on Dask: tcp://HOST:PORT of a running scheduler, "
                          "or 'local' to start a local Dask cluster for this run (needs "
                          "pip install 'onlinesparse[dask]'; the workers read the recording "
                          "and write the outputs, so paths must be visible to them)")
    run.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help="progress bar (default: when standard error is a terminal)")
    if not grid:
        run.add_argument("--quiet", "-q", action="store_true",
                         help="leave out the warning and check lines (suspicious features, "
                              "corrupt rows, stuck channels, …); errors still print, and "
                              "the report and metrics.json list everything")


def _add_output_options(parser: argparse.ArgumentParser, grid: bool) -> None:
    """The input, output and checkpoint options of ``replay`` (of ``grid``: those that apply)."""
    io = parser.add_argument_group("input and output")
    if grid:
        io.add_argument("--out", type=Path, metavar="DIR",
                        help="write grid.json and grid.csv (every setting's metrics) here")
    else:
        io.add_argument("--out", type=Path, metavar="DIR",
                        help="write predictions, metrics.json and report.html here")
        io.add_argument("--predictions-format", choices=("parquet", "csv"), default="parquet",
                        help="format of the predictions file (default parquet)")
        io.add_argument("--no-report", action="store_true", help="skip the HTML report")
    io.add_argument("--chunksize", type=_positive_int, default=10_000, metavar="ROWS",
                    help="rows read at a time (default 10000)")
    io.add_argument("--max-rows", type=_positive_int, metavar="N",
                    help="stop after N rows of the recording"
                         + ("" if grid else " (resume later with --checkpoint and --resume)"))
    io.add_argument("--strict", action="store_true",
                    help="stop at the first corrupt row (default: skip and count it)")
    io.add_argument("--missing", choices=("impute", "drop"), default="impute",
                    help="a missing (empty or NaN) feature value: 'impute' leaves it out of "
                         "the row and the model imputes it (its running mean), and a row "
                         "without its target is predicted and timed but not scored or "
                         "learned; 'drop' skips the row (for that target) and imputes "
                         "nothing, losing the row's other channels (default impute)")
    io.add_argument("--bin-ms", type=_positive_float, metavar="MS",
                    help="NWB recordings: bin width in ms; spike times are counted per bin "
                         "and every series is sampled at each bin's end by linear "
                         "interpolation (default 20)")

    if not grid:
        ck = parser.add_argument_group("checkpoints")
        ck.add_argument("--checkpoint", type=Path, metavar="PATH",
                        help="checkpoint file (a model shared by the targets: this file; "
                             "one model per target: one file per target beside it)")
        ck.add_argument("--every", type=_positive_int, metavar="N",
                        help="save a checkpoint every N rows (default 10000 with --checkpoint)")
        ck.add_argument("--resume", action="store_true", help="continue from --checkpoint")


def _add_demo_and_models(sub: Any) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The ``demo`` and ``models`` subcommands."""
    demo = sub.add_parser(
        "demo",
        help="simulate a motor-cortex session and compare VBLS and RBF models on it",
        description="Generate a deterministic simulated recording (direction-tuned neurons, "
                    "EMG of several muscles from a known subset of them), replay it through "
                    "the VBLS and RBF regressors and compare accuracy, latency and recovery "
                    "of the relevant neurons.",
    )
    demo.add_argument("--out", type=Path, default=Path("onlinesparse-demo"), metavar="DIR",
                      help="output directory (default ./onlinesparse-demo)")
    demo.add_argument("--seed", type=_positive_int, default=0, help="simulation seed")
    demo.add_argument("--format", choices=("parquet", "csv", "npz"), default="parquet",
                      help="file format of the simulated recording (default parquet)")
    demo.add_argument("--trials", type=_positive_int, default=None, metavar="N",
                      help="number of centre-out reaches (default 16)")
    demo.add_argument("--models", metavar="A,B", default="vbls,rbf",
                      help="models to compare (default vbls,rbf)")
    demo.add_argument("--workers", type=_positive_int, metavar="N",
                      help="worker processes (default: CPU count)")
    demo.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                      help="progress bars (default: when standard error is a terminal)")

    models = sub.add_parser(
        "models", help="list the models, or every parameter of one model",
        description="Without NAME: the models and their command-line options. With NAME: "
                    "every constructor parameter of that model, its default and what it does "
                    "(set one with --param KEY=VALUE, or with its option when it has one).",
    )
    models.add_argument("name", nargs="?", metavar="NAME", help="a model name, e.g. rbf")
    return demo, models


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``onlinesparse`` command."""
    parser = argparse.ArgumentParser(
        prog="onlinesparse",
        description="Sparse online regression: replay recordings through river models.",
    )
    parser.add_argument("--version", action="version", version=f"onlinesparse {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    # main() reports an unknown option with the usage of the subcommand it was given to.
    parser.set_defaults(_subparsers={})

    replay = sub.add_parser(
        "replay",
        help="replay a recording through a model with progressive validation",
        description="Replay a CSV, Parquet, NPZ or NWB recording as if it were live: for every "
                    "row predict, score, then learn. Prints MAE, RMSE, nMSE, R², interval "
                    "coverage and latency; --out writes predictions, metrics and a report.",
    )
    replay.add_argument("recording", type=Path, metavar="RECORDING",
                        help="a .csv, .tsv, .parquet, .npz or .nwb file (NWB needs "
                             "pip install 'onlinesparse[nwb]')")
    _add_replay_options(replay)

    grid = sub.add_parser(
        "grid",
        help="replay a grid of model settings and report the best",
        description="Replay the recording through the model once per combination of the "
                    "--grid values (plus the model's defaults and a lin1 linear baseline), "
                    "each with progressive validation (every sample is "
                    "predicted before it is learned, so no data is held out), and rank the "
                    "settings by a metric averaged over the targets. Other model options "
                    "(--max-basis, --param, ...) are shared by every setting.",
    )
    grid.add_argument("recording", type=Path, metavar="RECORDING",
                      help="a .csv, .tsv, .parquet, .npz or .nwb file")
    grid.add_argument("--grid", action="append", required=True, metavar="KEY=V1,V2,...",
                      help="a model keyword or flag and the values to try, e.g. "
                           "max-basis=10,20,40 or 'radii=(0.5,),(1.0,)'; repeat for a "
                           "grid over several (every combination is replayed); "
                           "model=rbf,vbls,lin1 compares models (the other keys go to the "
                           "models that take them). Each model's default setting and the "
                           "lin1 linear baseline are always replayed too")
    grid.add_argument("--metric", choices=("nmse", "rmse", "mae", "r2"), default="nmse",
                      help="rank by this metric averaged over the targets (default nmse)")
    _add_replay_options(grid, grid=True)

    demo, models = _add_demo_and_models(sub)
    parser.set_defaults(_subparsers={"replay": replay, "grid": grid, "demo": demo,
                                     "models": models})
    return parser


def _model_params(args: argparse.Namespace) -> dict[str, Any]:
    spec = registry.get_spec(args.model)
    params: dict[str, Any] = {}
    for flag in _model_flags():
        raw = getattr(args, f"param_{flag.replace('-', '_')}")
        if raw is None:
            continue
        p = spec.param(flag)
        if p is None:
            own = ", ".join(f"--{q.flag}" for q in spec.params) or "none"
            raise UsageError(
                f"--{flag} does not apply to model {spec.name!r} (its parameters: {own})"
            )
        params[p.kwarg] = p.parse(raw)
    for assignment in args.param:
        key, value = registry.parse_param_assignment(assignment)
        params[key] = value
    return params


def _split(values: Sequence[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def _resume_hint(argv: Sequence[str], checkpoint: str) -> str:
    words = ["onlinesparse", *argv]
    cleaned: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word == "--checkpoint":
            skip = True
            continue
        if word.startswith("--checkpoint=") or word == "--resume":
            continue
        cleaned.append(word)
    return shlex.join([*cleaned, "--checkpoint", checkpoint, "--resume"])


def _announce_columns(cfg: Any) -> None:
    """Print the features the replay will use and what looks wrong about them."""
    from onlinesparse.replay.checks import recording_warnings
    from onlinesparse.replay.reader import open_recording

    cfg.check()
    if not Path(cfg.recording).exists():
        return  # run_replay says so; a remote cluster may see a path this machine does not
    recording = open_recording(cfg.recording, cfg.bin_ms)
    columns = recording.select(cfg.targets, cfg.features, cfg.time)
    shown = ", ".join(columns.features[:30]) + (" …" if len(columns.features) > 30 else "")
    print(f"features ({len(columns.features)}): {shown or 'none'}"
          + ("" if cfg.features else "  (the units and the non-behavioural series: choose "
             "with --features)" if recording.format == "nwb" else "  (every column but the "
             "targets and the time: choose with --features)"))
    sys.stdout.flush()  # the warnings (standard error) come after the list they are about
    if not cfg.quiet:  # one line for all of them: the report lists each
        from onlinesparse.replay.checks import fold_warnings

        for note in recording.notes:
            print(f"note: {note}", file=sys.stderr)
        folded = fold_warnings(recording_warnings(recording, columns))
        if folded:
            print(f"warning: {folded}", file=sys.stderr, flush=True)
    n = len(columns.targets)
    if registry.shares_model(cfg.model, n, cfg.separate):
        print(f"the {n} targets share one {cfg.model} model (its multi-output form); "
              "--separate fits one model per target")
    elif n > 1:
        why = ("--separate" if cfg.separate else
               f"{cfg.model} has no multi-output form")
        print(f"one {cfg.model} model per target ({why})")
    if cfg.warmup:
        print(f"the first {cfg.warmup} samples of each target are learned but not scored "
              "(--warmup)")


def _cmd_replay(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from onlinesparse.replay.runner import ReplayConfig, format_summary, run_replay

    cfg = ReplayConfig(
        recording=args.recording,
        targets=args.target,
        features=_split(args.features),
        time=args.time,
        model=args.model,
        model_params=_model_params(args),
        standardize=args.standardize,
        warmup=args.warmup,
        interval=args.interval,
        chunksize=args.chunksize,
        workers=args.workers,
        strict=args.strict,
        out=args.out,
        predictions_format=args.predictions_format,
        checkpoint=args.checkpoint,
        every=args.every,
        resume=args.resume,
        max_rows=args.max_rows,
        diag_every=args.diag_every,
        progress=args.progress,
        report=not args.no_report,
        budget_us=args.budget_us,
        command=shlex.join(["onlinesparse", *argv]),
        missing=args.missing,
        quiet=args.quiet,
        bin_ms=args.bin_ms,
        separate=args.separate,
    )
    _announce_columns(cfg)
    if args.scheduler and registry.shares_model(cfg.model, len(cfg.targets), cfg.separate):
        print("onlinesparse: note: a model shared by the targets is one job: it runs in this "
              "process, not on --scheduler (--separate runs one task per target there)",
              file=sys.stderr)
        outcome = run_replay(cfg)
    elif args.scheduler:
        from onlinesparse.replay.cluster import DaskPool, dask_client

        cfg.check()  # before starting a cluster
        with dask_client(args.scheduler, workers=args.workers) as client:
            outcome = run_replay(cfg, pool=DaskPool(client))
    else:
        outcome = run_replay(cfg)
    print(format_summary(outcome, cfg))
    if not cfg.quiet:
        from onlinesparse.replay.check_report import check_lines, merge_checks

        for line in check_lines(merge_checks(outcome.results)):
            print(f"check: {line}", file=sys.stderr)
    _say_outcome(outcome, cfg, argv)
    return outcome.exit_code


def _say_outcome(outcome: Any, cfg: Any, argv: Sequence[str]) -> None:
    """Errors, files written, and how to resume, after a replay's summary table."""
    said: dict[str, list[str]] = {}
    for r in outcome.results:
        if r.message:  # (a shared model's targets end with one message: said once)
            key = r.message if outcome.shared is not None else f"{r.target}\0{r.message}"
            said.setdefault(key, []).append(r.target)
    for key, targets in said.items():
        print(f"onlinesparse: error: {', '.join(targets)}: {key.split(chr(0))[-1]}",
              file=sys.stderr)
    for message in outcome.errors:  # outputs that could not be written (the others were)
        print(f"onlinesparse: error: {message}", file=sys.stderr)
    written = [p.name for p in (outcome.predictions_path, outcome.metrics_path,
                                outcome.report_path) if p is not None]
    if outcome.out is not None and written:
        done = "up to where the replay stopped " if outcome.exit_code else ""
        print(f"wrote {done}to {outcome.out}/: {', '.join(written)}")
        if outcome.report_path:
            print(f"report: {outcome.report_path}")
    if outcome.exit_code == 130:
        saved = sorted({r.checkpoint_path for r in outcome.results if r.checkpoint_path})
        base = str(cfg.checkpoint) if cfg.checkpoint else None
        if base is None and saved:
            from onlinesparse.replay.target import default_checkpoint

            base = str(default_checkpoint(cfg))
        print(f"interrupted {_where_interrupted(outcome.results)}; checkpoint saved: "
              f"{', '.join(saved)}", file=sys.stderr)
        if base:
            print(f"resume with: {_resume_hint(argv, base)}", file=sys.stderr)
    elif any(r.status == "stopped" for r in outcome.results):
        print(f"stopped after --max-rows {cfg.max_rows} rows"
              + (f"; resume with --resume --checkpoint {cfg.checkpoint}" if cfg.checkpoint
                 else ""))


def _where_interrupted(results: Sequence[Any]) -> str:
    """Where each target stopped: "at row N" when they all stopped at one row, else the row
    of each (a target still waiting for a worker had not started).

    >>> from types import SimpleNamespace as R
    >>> _where_interrupted([R(target="a", metrics={"rows_read": 9}),
    ...                     R(target="b", metrics={"rows_read": 9})])
    'at row 9'
    >>> _where_interrupted([R(target=t, metrics={"rows_read": n})
    ...                     for t, n in (("a", 47120), ("b", 46988), ("c", 0), ("d", 0))])
    'at row 47120 (a), row 46988 (b); not started: c, d'

    """
    rows = {r.target: r.metrics["rows_read"] for r in results}
    if len(set(rows.values())) == 1:
        return f"at row {next(iter(rows.values()))}"
    started = [f"row {n} ({t})" for t, n in sorted(rows.items(), key=lambda i: -i[1]) if n]
    waiting = [t for t, n in rows.items() if not n]
    shown = ", ".join(waiting[:8]) + (f" and {len(waiting) - 8} more" if len(waiting) > 8 else "")
    return "at " + ", ".join(started) + (f"; not started: {shown}" if waiting else "")


def _cmd_grid(args: argparse.Namespace) -> int:
    from onlinesparse.replay.cluster import dask_client
    from onlinesparse.replay.grid import evaluate_grid, format_grid, parse_grid
    from onlinesparse.replay.reader import open_recording
    from onlinesparse.replay.runner import ReplayConfig

    grid = parse_grid(args.grid, args.model)
    params = _model_params(args)
    both = sorted(set(grid) & set(params))
    if both:
        raise UsageError(f"{', '.join(both)} set both by --grid and by a fixed model option; "
                         "give each in one place")
    options = {
        "features": _split(args.features), "time": args.time,
        "standardize": args.standardize, "warmup": args.warmup, "interval": args.interval,
        "chunksize": args.chunksize, "max_rows": args.max_rows, "strict": args.strict,
        "diag_every": args.diag_every, "missing": args.missing, "bin_ms": args.bin_ms,
    }
    ReplayConfig(args.recording, args.target, model=args.model, **options).check()
    if args.scheduler in (None, "local") or args.recording.exists():
        # Said once here rather than once per replay. A remote cluster's workers may see a
        # recording that this machine does not: each replay then says so if they do not.
        open_recording(args.recording, args.bin_ms).select(args.target, options["features"],
                                                           args.time)

    def evaluate(client: Any = None) -> Any:
        return evaluate_grid(args.recording, args.target, grid, model=args.model,
                             params=params, options=options, metric=args.metric,
                             client=client, workers=None if client else args.workers,
                             progress=args.progress)

    if args.scheduler:
        with dask_client(args.scheduler, workers=args.workers) as client:
            result = evaluate(client)
    else:
        result = evaluate()
    n = len(result.rows)
    label = {"nmse": "nMSE", "rmse": "RMSE", "mae": "MAE", "r2": "R²"}[args.metric]
    what = (f"models {', '.join(grid['model'])}" if "model" in grid else repr(args.model))
    print(f"{n} setting{'s' * (n != 1)} of {what} (with each model's defaults and the lin1 "
          f"linear baseline) on {args.recording.name}, "
          f"{len(args.target)} target{'s' * (len(args.target) != 1)}, ranked by {label} "
          "averaged over the targets (progressive validation"
          + (f", first {args.warmup} samples not scored)" if args.warmup else ")"))
    print(format_grid(result))
    if len(args.target) > 1:  # (RMSE and MAE are in each target's unit)
        print("RMSE and MAE are averaged over the targets in their own units: where the "
              "targets' units differ, rank by nMSE or R² (--metric)")
    for row in result.rows:
        for r in row.results:
            if not r.ok:
                print(f"onlinesparse: error: {r.describe()}", file=sys.stderr)
    if args.out is not None:
        _write_grid_files(args.out, result)
    best = result.best
    if best is None:
        print("onlinesparse: error: no setting of the grid completed", file=sys.stderr)
        return 1
    # (the keywords it was built with: the grid's setting and the --param ones it takes)
    built = best.results[0].job.params
    settings = ", ".join(f"{k}={v!r}" for k, v in built.items()) or "its defaults"
    print(f"best: {best.model} with {settings} ({label} {best.score:.4g})")
    print("replay it with: "
          + _replay_command(args, best.model, built))
    return 0


def _write_grid_files(out: Path, result: Any) -> None:
    """``grid.json`` (everything) and ``grid.csv`` (one row per setting) in ``out``."""
    import json

    import pandas as pd

    from onlinesparse.replay.outputs import _json_safe

    out.mkdir(parents=True, exist_ok=True)
    (out / "grid.json").write_text(
        json.dumps(_json_safe(result.as_dict()), indent=2, allow_nan=False, default=str)
    )
    pd.DataFrame([{"model": row.model, "row": row.role,
                   **{k: repr(v) if isinstance(v, tuple) else v
                      for k, v in row.setting.items()},
                   "score": row.score, **row.means, "ok": row.ok} for row in result.rows]
                 ).to_csv(out / "grid.csv", index=False)
    print(f"wrote {out}/grid.json and grid.csv")


def _replay_command(args: argparse.Namespace, model: str, params: dict[str, Any]) -> str:
    """The ``onlinesparse replay`` command that replays ``model`` with constructor keywords
    ``params`` as the grid did, quoted for a POSIX shell (``shlex.join``)."""
    words = ["onlinesparse", "replay", str(args.recording)]
    words += [w for t in args.target for w in ("--target", t)]
    words += [w for f in args.features or [] for w in ("--features", f)]
    if args.time:
        words += ["--time", args.time]
    words += ["--model", model, *_parameter_words(model, params)]
    if not args.standardize:
        words.append("--no-standardize")
    for option, value, default in (("--warmup", args.warmup, DEFAULT_WARMUP),
                                   ("--interval", args.interval, 0.95),
                                   ("--diag-every", args.diag_every, 100),
                                   ("--max-rows", args.max_rows, None),
                                   ("--missing", args.missing, "impute"),
                                   ("--bin-ms", args.bin_ms, None)):
        if value != default:
            words += [option, str(value)]
    if args.strict:
        words.append("--strict")
    if registry.shares_model(model, len(args.target)):
        words.append("--separate")  # the grid replays one model per target
    return shlex.join(words)


def _parameter_words(model: str, params: dict[str, Any]) -> list[str]:
    """Options that give ``model`` the constructor keywords ``params``, written so that this
    command's own parser reads each value back: the parameter's option when it has one
    (``--max-basis 20``), else ``--param KEY=VALUE`` with the value as typed
    (``memory=window``), or as a Python literal when the plain text would read back as
    something else (``--param 'label="None"'`` for the string "None").

    >>> _parameter_words("rbf", {"max_basis": 20, "memory": "window", "radii": (0.5, 1.0)})
    ['--max-basis', '20', '--param', 'memory=window', '--param', 'radii=(0.5, 1.0)']
    >>> _parameter_words("rbf", {"label": "None"})
    ['--param', 'label="None"']

    """
    spec = registry.get_spec(model)
    words: list[str] = []
    for key, value in params.items():
        option = next((p for p in spec.params if p.kwarg == key), None)
        if option is not None and _reads_back(option.parse, value):
            words += [f"--{option.flag}", str(value)]
            continue
        plain = f"{key}={value}"
        same = _reads_back(lambda text: registry.parse_param_assignment(text)[1], value, plain)
        words += ["--param", plain if same else f"{key}={_literal(value)}"]
    return words


def _literal(value: Any) -> str:
    """``value`` as a Python literal, a string in double quotes when it can be (the shell
    quotes the whole word in single quotes, which would otherwise have to be escaped)."""
    if isinstance(value, str) and '"' not in value and "\\" not in value:
        return f'"{value}"'
    return repr(value)


def _reads_back(parse: Any, value: Any, text: str | None = None) -> bool:
    """Whether ``parse`` reads ``text`` (default ``str(value)``) back as ``value`` itself."""
    try:
        parsed = parse(str(value) if text is None else text)
    except (UsageError, ValueError):
        return False
    return type(parsed) is type(value) and parsed == value


def _cmd_models(name: str | None = None) -> int:
    if name is not None:
        return _cmd_model_parameters(name)
    rows = [("name", "available", "parameters", "description")]
    for spec in registry.MODELS.values():
        params = " ".join(f"--{p.flag}" for p in spec.params) or "-"
        rows.append((spec.name, "yes" if registry.is_available(spec.name) else "no",
                     params, spec.description))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r[:3], widths, strict=True)) + "  " + r[3])
    shared = ", ".join(_shared_models())
    if shared:
        print(f"\nWith several --target, {shared} fit one model shared by the targets (its "
              "multi-output form; --separate: one model each); the others one model per "
              "target.")
    print("\n'onlinesparse models NAME' lists every parameter of a model with its default.")
    return 0


def _cmd_model_parameters(name: str) -> int:
    """Every constructor parameter of one model, its default, how to set it, what it does."""
    import textwrap

    spec = registry.get_spec(name)
    params = registry.describe_parameters(name)  # raises ModelUnavailable (exit 2) if missing
    print(f"{spec.name}: {spec.description}\n({spec.path.replace(':', '.')}; set a parameter "
          "with its option, or with --param NAME=VALUE when it has none; the full "
          "description of each is in the class's help())\n")
    rows = [("parameter", "default", "option")] + [(p.name, p.default, p.option)
                                                   for p in params]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    indent = sum(widths) + 6
    for row, p in zip(rows, [None, *params], strict=True):
        head = "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))
        meaning = "meaning" if p is None else p.meaning
        lines = textwrap.wrap(meaning, width=max(40, 100 - indent)) or [""]
        print(f"{head}  {lines[0]}")
        for line in lines[1:]:
            print(" " * indent + line)
    return 0


def _unknown_options(args: argparse.Namespace, unknown: list[str]) -> None:
    """Exit with the subcommand's usage (not the top level's) and a "did you mean"."""
    import difflib

    sub: argparse.ArgumentParser = args._subparsers[args.command]
    # (argparse lists a parser's options only in its private _actions; read, never written)
    known = [s for a in sub._actions for s in a.option_strings]
    hints = []
    for word in unknown:
        if word.startswith("--"):
            close = difflib.get_close_matches(word.split("=")[0], known, n=1, cutoff=0.75)
            if close:
                hints.append(f"{word.split('=')[0]}: did you mean {close[0]}?")
    sub.error(f"unrecognized arguments: {' '.join(unknown)}"
              + (f" ({'; '.join(hints)})" if hints else ""))


def compile_first(stream=None) -> bool:
    """On a machine whose compiled core is not cached yet, compile it now, saying so with
    progress on standard error (``warm.cold_progress``), rather than spend a minute in
    silence inside the first sample; returns whether it compiled. (Workers then load it
    from the cache.)"""
    from onlinesparse import warm

    if not warm.cache_is_cold():
        return False
    warm.warm_up(progress=warm.cold_progress(sys.stderr if stream is None else stream))
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``onlinesparse`` command with ``argv`` (default: ``sys.argv[1:]``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:
            _unknown_options(args, unknown)
    except SystemExit as exc:  # argparse already printed usage and the error
        return int(exc.code or 0)
    try:
        if args.command != "models":
            require_replay_extra(f"onlinesparse {args.command}")
            compile_first()
        if args.command == "replay":
            return _cmd_replay(args, argv)
        if args.command == "grid":
            return _cmd_grid(args)
        if args.command == "demo":
            from onlinesparse.replay.demo import run_demo

            return run_demo(
                out=args.out, seed=args.seed, fmt=args.format, trials=args.trials,
                models=[m.strip() for m in args.models.split(",") if m.strip()],
                workers=args.workers, progress=args.progress,
                command=shlex.join(["onlinesparse", *argv]),
            )
        return _cmd_models(args.name)
    except ReplayError as exc:
        print(f"onlinesparse: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:  # a file system that failed where no step expected it
        print(f"onlinesparse: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("onlinesparse: aborted without saving a checkpoint", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""Replay a CSV recording through a model, from Python and from the command line.

Writes a small simulated motor-cortex recording to a CSV file, replays the EMG of one muscle
from all neurons with progressive validation (predict, score, then learn, row by row), and
prints the metrics and where the report is. The same replay from a shell is::

    onlinesparse replay recording.csv --target emg_biceps --features 'n*' --time time \\
        --model linear --warmup 200 --out replay-out

Run it with ``python examples/replay_csv.py [OUTPUT_DIR]``.
"""

import sys
import tempfile
from pathlib import Path

from onlinesparse.datasets import make_motor_cortex_session
from onlinesparse.replay import ReplayConfig, run_replay
from onlinesparse.replay.models import is_available
from onlinesparse.replay.runner import format_summary


def main(out_dir: Path) -> int:
    session = make_motor_cortex_session(n_trials=8, seed=1)
    recording = session.write(out_dir / "recording.csv")
    muscle = "emg_biceps"
    # lin1 gives a predictive distribution (interval coverage); river's linear model does not.
    model = "lin1" if is_available("lin1") else "linear"
    cfg = ReplayConfig(
        recording=recording,
        targets=[muscle],
        features=["n*"],  # shell patterns select columns
        time="time",
        model=model,
        warmup=200,
        out=out_dir / "replay-out",
        relevant=session.relevant,  # the simulation's ground truth, drawn in the report
        workers=1,
    )
    outcome = run_replay(cfg)
    print(format_summary(outcome, cfg))
    print(f"truly relevant neurons for {muscle}: {', '.join(session.relevant[muscle])}")
    relevance = outcome.results[0].relevance or {}
    top = sorted(relevance, key=relevance.get, reverse=True)[: len(session.relevant[muscle])]
    print(f"most relevant according to {model}: {', '.join(sorted(top))}")
    print(f"report: {outcome.report_path}")
    return outcome.exit_code


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    sys.exit(main(target))

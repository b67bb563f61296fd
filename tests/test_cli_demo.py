"""``onlinesparse demo`` end to end, and its choice of models."""

import subprocess
import sys
from html.parser import HTMLParser

from onlinesparse.replay import demo, models


def test_demo_simulates_replays_compares_and_points_to_its_report(tmp_path):
    out = tmp_path / "demo"
    proc = subprocess.run(
        [sys.executable, "-m", "onlinesparse.replay.cli", "demo", "--out", str(out),
         "--trials", "8", "--models", "linear", "--workers", "1"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "48 neurons, 6 muscles, 1360 bins of 10 ms" in proc.stdout
    assert "relevant neurons in top k" in proc.stdout
    assert f"Report (every model's results on one page): {(out / 'report.html').resolve()}" \
        in proc.stdout
    assert (out / "recording.parquet").exists() and (out / "recording.truth.json").exists()

    class Refs(HTMLParser):
        refs: list[str] = []
        ids: list[str] = []

        def handle_starttag(self, tag, attrs):
            self.refs += [v for k, v in attrs if k in ("src", "href")]
            self.ids += [v for k, v in attrs if k == "id"]

    parser = Refs()
    page = (out / "report.html").read_text()
    parser.feed(page)
    images = [r for r in parser.refs if r.startswith("data:image/png;base64,")]
    # The comparison figure, then each muscle's own plots: the index stands alone.
    assert len(images) >= 1 + 6 * 3
    links = set(parser.refs) - set(images)
    assert links and all(ref.startswith("#") and ref[1:] in parser.ids for ref in links)
    assert "<h2 id='linear'>linear</h2>" in page
    for muscle in ("emg_biceps", "emg_triceps_lat", "emg_deltoid_ant"):
        assert f"linear: {muscle} (plots)" in page
    assert page.count("<h3>Accuracy</h3>") == 1 and page.count("<h3>Latency</h3>") == 1
    assert "onlinesparse demo --out" in page and "--trials 8" in page  # the command line


def test_missing_models_are_replaced_by_available_ones_and_said_so(monkeypatch, capsys):
    monkeypatch.setitem(models.MODELS, "ghost", models.ModelSpec("ghost", "no_such:G", ""))
    chosen = demo.choose_models(["ghost", "linear"])
    assert chosen[1] == "linear" and chosen[0] in models.available_models()
    assert chosen[0] != "linear"
    assert f"model 'ghost' is not available in this installation; using {chosen[0]!r}" in (
        capsys.readouterr().out)

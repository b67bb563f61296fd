"""The estimators work without the ``replay`` and ``dask`` extras, and the command line says
how to install what it is missing.

Each test runs a fresh interpreter in which the extras' modules cannot be imported (a
``sys.meta_path`` finder refuses them), as in an installation without the extras.
"""

import subprocess
import sys
import textwrap

BLOCKED = ("matplotlib", "pyarrow", "tqdm", "dask", "distributed")

BLOCKER = f"""
import sys

class _NotInstalled:
    blocked = {BLOCKED!r}

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.blocked:
            raise ImportError(f"No module named {{name!r}} (blocked by the test)")
        return None

sys.meta_path.insert(0, _NotInstalled())
for _name in list(sys.modules):
    if _name.split(".")[0] in _NotInstalled.blocked:
        del sys.modules[_name]
"""


def _run(code: str, *args: str) -> subprocess.CompletedProcess:
    script = BLOCKER + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True,
                          text=True, timeout=300)


def test_the_blocker_blocks():
    proc = _run("import tqdm")
    assert proc.returncode != 0 and "blocked by the test" in proc.stderr


def test_every_estimator_fits_and_predicts_without_the_extras():
    proc = _run("""
        import math
        import pkgutil, importlib
        import onlinesparse
        from onlinesparse import Lin1Regressor, SparseRBFRegressor, VBLSRegressor

        # Every module of the package but the replay application imports.
        for info in pkgutil.walk_packages(onlinesparse.__path__, "onlinesparse."):
            if not info.name.startswith("onlinesparse.replay"):
                importlib.import_module(info.name)
        for model in (SparseRBFRegressor(max_basis=10, window_size=50), VBLSRegressor(),
                      Lin1Regressor()):
            for i in range(30):
                x = {"a": math.sin(i), "b": math.cos(0.3 * i)}
                model.predict_one(x)
                model.learn_one(x, 2.0 * x["a"] - x["b"])
            assert math.isfinite(model.predict_one({"a": 0.1, "b": 0.2})), model
        loaded = sorted({m.split(".")[0] for m in sys.modules} & set(_NotInstalled.blocked))
        print("loaded:", loaded)
    """)
    assert proc.returncode == 0, proc.stderr
    assert "loaded: []" in proc.stdout


def test_the_command_line_names_the_extra_it_needs(tmp_path):
    recording = tmp_path / "r.csv"
    recording.write_text("x,y\n1,2\n2,4\n")
    for command in (["replay", str(recording), "--target", "y"],
                    ["grid", str(recording), "--target", "y", "--grid", "model=lin1"],
                    ["demo", "--out", str(tmp_path / "demo")]):
        proc = _run("""
            from onlinesparse.replay.cli import main
            sys.exit(main(sys.argv[1:]))
        """, *command)
        assert proc.returncode == 2, proc.stderr
        assert "onlinesparse: error:" in proc.stderr
        assert "pip install 'onlinesparse[replay]'" in proc.stderr
        assert "matplotlib, pyarrow, tqdm" in proc.stderr
        assert "Traceback" not in proc.stderr
    assert not (tmp_path / "demo").exists()


def test_listing_the_models_needs_no_extra():
    proc = _run("""
        from onlinesparse.replay.cli import main
        sys.exit(main(["models"]))
    """)
    assert proc.returncode == 0, proc.stderr
    assert "rbf" in proc.stdout and "vbls" in proc.stdout


def test_the_library_entry_points_name_the_extra_too(tmp_path):
    proc = _run(f"""
        from onlinesparse.replay import ReplayConfig, UsageError, run_replay
        try:
            run_replay(ReplayConfig({str(tmp_path / "r.csv")!r}, ["y"]))
        except UsageError as exc:
            print(exc)
    """)
    assert proc.returncode == 0, proc.stderr
    assert "run_replay needs the optional 'replay' extra" in proc.stdout
    assert "pip install 'onlinesparse[replay]'" in proc.stdout

"""The command's own usage: ``--version``, errors with the subcommand's usage and a "did you
mean", and ``models NAME`` listing every constructor parameter."""

import inspect

import pytest

import onlinesparse
from onlinesparse.replay import models as registry
from onlinesparse.replay.cli import main


def test_version_prints_the_package_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"onlinesparse {onlinesparse.__version__}"


def test_an_unknown_option_shows_the_subcommand_usage_and_the_closest_option(capsys):
    assert main(["replay", "rec.csv", "--target", "y", "--wamrup", "5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: onlinesparse replay ")
    assert "unrecognized arguments: --wamrup 5" in err
    assert "did you mean --warmup?" in err
    assert main(["grid", "rec.csv", "--target", "y", "--grid", "l2=0,1", "--metirc", "r2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: onlinesparse grid ") and "did you mean --metric?" in err


def test_warm_up_is_accepted_as_spelled_in_prose(tmp_path):
    from onlinesparse.replay.cli import build_parser

    args = build_parser().parse_args(["replay", "r.csv", "--target", "y", "--warm-up", "7"])
    assert args.warmup == 7


@pytest.mark.parametrize("name", registry.available_models())
def test_models_name_lists_every_constructor_parameter_with_its_default(name, capsys):
    assert main(["models", name]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    factory = registry.resolve(name)
    for pname, p in inspect.signature(factory).parameters.items():
        line = next((ln for ln in lines if ln.split()[:1] == [pname]), None)
        assert line is not None, f"{pname} missing from 'models {name}'"
        if p.default is not p.empty:
            assert line.split()[1] == repr(p.default).split()[0]
    assert "(not documented)" not in out


def test_models_name_says_what_a_parameter_does_and_how_to_set_it(capsys):
    assert main(["models", "rbf"]) == 0
    out = capsys.readouterr().out
    window = next(ln for ln in out.splitlines() if ln.startswith("window_size "))
    assert "1000" in window and "most patterns the model is fitted to" in window
    max_basis = next(ln for ln in out.splitlines() if ln.startswith("max_basis "))
    assert "--max-basis" in max_basis


def test_models_with_an_unknown_name_is_a_usage_error(capsys):
    assert main(["models", "rbff"]) == 2
    assert "unknown model 'rbff'" in capsys.readouterr().err


def test_the_command_line_leaves_the_first_samples_unscored_by_default():
    from onlinesparse.replay.cli import DEFAULT_WARMUP, build_parser

    for command in (["replay", "r.csv", "--target", "y"],
                    ["grid", "r.csv", "--target", "y", "--grid", "lr=0.1"]):
        assert build_parser().parse_args(command).warmup == DEFAULT_WARMUP == 100


def test_a_cold_compiled_core_is_compiled_first_with_a_message_and_progress(monkeypatch):
    """A newcomer's first run compiles the core for about a minute: the command says so,
    with progress, before it starts (not a minute of silence inside the first sample); a
    warm cache says nothing."""
    import io

    from onlinesparse import warm
    from onlinesparse.replay import cli

    calls = []

    def fake_warm_up(progress):
        calls.append(progress)
        for k in range(100):
            progress(f"compiling {k + 1}: f{k}")
        progress("compiled core ready (1.0 s)")

    monkeypatch.setattr(warm, "warm_up", fake_warm_up)
    monkeypatch.setattr(warm, "cache_is_cold", lambda: True)
    out = io.StringIO()
    assert cli.compile_first(out)
    text = out.getvalue()
    assert "compiling the numerical core, once for this installation" in text
    assert "80 functions compiled" in text and "compiled core ready" in text
    assert len(text.splitlines()) <= 5  # (a line every 40 functions, not one each)
    monkeypatch.setattr(warm, "cache_is_cold", lambda: False)
    quiet = io.StringIO()
    assert not cli.compile_first(quiet) and quiet.getvalue() == "" and len(calls) == 1


def test_warm_up_reports_its_stages_to_a_callable():
    from onlinesparse import warm_up

    lines = []
    warm_up(progress=lines.append)
    assert lines[-1].startswith("compiled core ready")


def test_the_command_starts_without_loading_the_estimators():
    """The command's module loads neither numba, scipy nor river: those come inside
    ``main``, whose Ctrl-C handler then covers them (a Ctrl-C in the 1.4 s the package
    took to import printed a traceback). Every public name still resolves, and ``__all__``
    lists exactly them."""
    import subprocess
    import sys

    code = ("import sys, onlinesparse.replay.cli; "
            "print(sorted(m for m in ('numba', 'scipy', 'river') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr
    # (and the console script imports nothing but the standard library before its handler)
    code = ("import sys; before = set(sys.modules); import onlinesparse.replay.console; "
            "print(sorted(m for m in set(sys.modules) - before "
            "if m.split('.')[0] not in sys.stdlib_module_names and m != 'onlinesparse' "
            "and not m.startswith(('onlinesparse._', 'onlinesparse.replay'))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr
    assert set(onlinesparse.__all__) == {"__version__", *onlinesparse._PUBLIC}
    for name in onlinesparse._PUBLIC:
        assert getattr(onlinesparse, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = onlinesparse.nothing


def test_a_ctrl_c_while_the_command_loads_says_one_line_and_exits_130():
    import subprocess
    import sys

    code = """
import sys
class Interrupting:
    def find_spec(self, name, path=None, target=None):
        if name == "onlinesparse.replay.cli":
            raise KeyboardInterrupt
sys.meta_path.insert(0, Interrupting())
from onlinesparse.replay.console import main
sys.exit(main(["models"]))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 130
    assert proc.stderr == "onlinesparse: interrupted before it started\n"


def test_the_replay_package_names_each_public_name_once():
    import onlinesparse.replay as replay

    assert set(replay.__all__) == {*replay._PUBLIC, "ReplayError", "ReplayFailure",
                                   "UsageError"}
    for name in replay.__all__:
        assert getattr(replay, name) is not None

"""The README runs as written: its Python snippets execute, every ``onlinesparse`` command in
it parses with the real argument parser, and its shell blocks run in order as a newcomer
would type them (after ``make demo``, in a fresh directory)."""

import hashlib
import re
import shlex
import shutil
import tomllib
from pathlib import Path

import pytest

from onlinesparse.replay.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: Other pages whose commands a user copies: they must parse too.
PAGES = [README, ROOT / "examples" / "trump_approval" / "README.md"]


def _blocks(language: str, pages=(README,)) -> list[str]:
    return [block for page in pages for block in
            re.findall(rf"```{language}\n(.*?)```", page.read_text(encoding="utf-8"), re.S)]


def _shell(pages=PAGES) -> list[list[str]]:
    """Every command of the shell blocks, in order, continuation lines joined."""
    commands = []
    for block in _blocks("sh", pages):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words:
                commands.append(words)
    return commands


def _commands() -> list[list[str]]:
    """Every ``onlinesparse ...`` command of the shell blocks."""
    return [words[1:] for words in _shell() if words[0] == "onlinesparse"]


def test_the_readme_has_commands_and_snippets_to_check():
    assert len(_commands()) >= 8
    assert len(_blocks("python")) >= 3


@pytest.mark.parametrize("argv", _commands(), ids=lambda a: " ".join(a)[:60])
def test_every_readme_command_parses_with_the_real_parser(argv, capsys):
    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:
        # --version and --help exit 0; anything else is a usage error argparse printed.
        assert exc.code == 0, capsys.readouterr().err


@pytest.mark.parametrize("index", range(len(_blocks("python"))))
def test_every_readme_python_snippet_runs(index):
    exec(compile(_blocks("python")[index], f"README snippet {index}", "exec"), {})


def test_the_example_export_writes_the_committed_csv(tmp_path):
    import importlib.util

    import pandas as pd

    spec = importlib.util.spec_from_file_location(
        "export_river_dataset", ROOT / "examples" / "export_river_dataset.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.export("TrumpApproval", tmp_path / "t.csv") == 1001
    pd.testing.assert_frame_equal(
        pd.read_csv(tmp_path / "t.csv"),
        pd.read_csv(ROOT / "examples" / "trump_approval" / "trump_approval.csv"))


def _activates(words: list[str]) -> bool:
    return words[0] in (".", "source") and words[1].endswith(".venv/bin/activate")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.parent.name)
def test_a_bare_onlinesparse_command_comes_after_putting_the_venv_on_path(page):
    """``make demo`` installs the command in .venv/bin, which is not on PATH: a page says
    so (``. .venv/bin/activate``) before its first bare ``onlinesparse``, or names
    ``.venv/bin/onlinesparse``."""
    on_path = False
    for words in _shell([page]):
        on_path = on_path or _activates(words)
        if words[0] == "onlinesparse":
            assert on_path, f"{page.name}: {shlex.join(words)[:60]} before .venv/bin is on PATH"


def test_the_activated_venv_holds_the_command():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^VENV\s*:=\s*\.venv$", makefile, re.M)
    assert "$(BIN)/onlinesparse demo" in makefile
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, name = scripts["onlinesparse"].partition(":")
    from onlinesparse.replay import console

    assert getattr(__import__(module, fromlist=[name]), name) is console.main


def _run_walkthrough(commands: list[list[str]], capsys) -> list[str]:
    """Run ``commands`` here as a newcomer would after ``make demo``: of ``make demo`` only
    the recording it writes (a shorter session: replaying it is the commands' job),
    activating the venv is already done, a remote scheduler is not reachable from a test;
    the rest runs, in this process (the test suite shares the cores)."""
    ran = []
    for words in commands:
        if words[:2] == ["make", "demo"]:
            from onlinesparse.datasets import make_motor_cortex_session

            demo = build_parser().parse_args(["demo"])  # where `onlinesparse demo` writes
            session = make_motor_cortex_session(n_trials=4, seed=demo.seed)
            session.write(demo.out / f"recording.{demo.format}")
        if words[0] != "onlinesparse":
            continue
        argv = list(words[1:])
        if argv[0] in ("replay", "grid"):
            if "--workers" not in argv:
                argv += ["--workers", "1"]
            argv[argv.index("--workers") + 1] = "1"
        recording = Path(argv[1]) if argv[0] in ("replay", "grid") else None
        assert recording is None or recording.exists(), f"{argv[1]} does not exist"
        if "--scheduler" in argv:
            continue
        code = main(argv)
        assert code == 0, (shlex.join(words), capsys.readouterr().err)
        ran.append(argv[0])
    return ran


def test_the_readme_walkthrough_runs_on_the_recording_the_demo_writes(tmp_path, monkeypatch,
                                                                      capsys):
    monkeypatch.chdir(tmp_path)
    ran = _run_walkthrough(_shell([README]), capsys)
    assert ran.count("replay") >= 1 and ran.count("grid") >= 2 and "models" in ran
    assert (tmp_path / "results" / "report.html").exists()
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert "/onlinesparse-demo/" in ignored and "/results/" in ignored


def test_following_the_trump_approval_example_keeps_its_committed_outputs(tmp_path,
                                                                         monkeypatch, capsys):
    example = ROOT / "examples" / "trump_approval"
    copy = tmp_path / "trump_approval"
    shutil.copytree(example, copy, ignore=shutil.ignore_patterns("out-local"))

    def digests():
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted((copy / "out").iterdir())}

    committed = digests()
    assert committed  # the reference outputs are there to keep
    monkeypatch.chdir(copy)
    commands = [w for w in _shell([example / "README.md"]) if w[0] != "python"]
    ran = _run_walkthrough(commands, capsys)
    assert ran.count("replay") == 2 and ran.count("grid") == 1
    assert digests() == committed
    written = [w[w.index("--out") + 1] for w in commands if "--out" in w]
    assert written and all((copy / d / "report.html").exists() for d in written)
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert all(f"examples/trump_approval/{d.rstrip('/')}/" in ignored for d in written)

"""The README runs as written: its Python snippets execute and every ``onlinesparse`` command
in it parses with the real argument parser."""

import re
import shlex
from pathlib import Path

import pytest

from onlinesparse.replay.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: Other pages whose commands a user copies: they must parse too.
PAGES = [README, ROOT / "examples" / "trump_approval" / "README.md"]


def _blocks(language: str, pages=(README,)) -> list[str]:
    return [block for page in pages for block in
            re.findall(rf"```{language}\n(.*?)```", page.read_text(encoding="utf-8"), re.S)]


def _commands() -> list[list[str]]:
    """Every ``onlinesparse ...`` command of the shell blocks, continuation lines joined."""
    commands = []
    for block in _blocks("sh", PAGES):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] == "onlinesparse":
                commands.append(words[1:])
    return commands


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

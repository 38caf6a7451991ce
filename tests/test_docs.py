"""The README and docs/ pages say what the code does: every shell block is marked with what it needs,
the blocks that need neither a robot nor a ROS 2 install run, and the others name only commands,
options, executables, launch files and launch arguments that exist.

A block is marked by the line before its fence, ``<!-- doc-block: KIND -->``:

- ``runs``: needs neither a robot nor a ROS 2 install; run here, page by page in order, in a fresh
  folder that sees the checkout's ``.venv``, ``config`` and ``examples``;
- ``synopsis``: a usage listing: each ``motor-ident`` command and ``--option`` must exist;
- ``ros2``: needs a ROS 2 install (``ros2 launch`` / ``ros2 run`` / ``colcon``): executables, launch
  files and their ``name:=value`` arguments must exist;
- ``robot``: needs a robot, its own recordings or a cluster (not run; its commands are checked
  like a synopsis);
- ``long``: needs neither but takes minutes (a paper's full reproduction): its commands are checked
  like a synopsis, and the suite runs the same code in its own tests;
- ``setup``: the README's two commands themselves (the test command runs this suite).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from motor_ident.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
KINDS = {"runs", "synopsis", "ros2", "robot", "long", "setup"}
MARK = re.compile(r"<!-- doc-block: (\w[\w-]*) -->")


@dataclass(frozen=True)
class Block:
    """One fenced shell block of a page."""

    page: Path
    line: int  # 1-based line of the opening fence
    kind: str | None
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def shell_blocks(page: Path) -> list[Block]:
    """Every ```bash / ```sh / ```shell block of a page with its mark (None when unmarked)."""
    lines = page.read_text().splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        if re.fullmatch(r"```(bash|sh|shell|console)\s*", lines[i]):
            before = [line for line in lines[max(0, i - 2) : i] if line.strip()]
            mark = MARK.fullmatch(before[-1].strip()) if before else None
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            blocks.append(Block(page, i + 1, mark.group(1) if mark else None, "\n".join(lines[i + 1 : end])))
            i = end
        i += 1
    return blocks


BLOCKS = [block for page in PAGES for block in shell_blocks(page)]


def commands(text: str) -> list[list[str]]:
    """The block's commands as words (continuation lines joined, comments and placeholders left out)."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        line = re.sub(r"\[[^\]]*\]", " ", line)  # optional parts of a synopsis: checked below by flag
        out.append(shlex.split(line.replace("|", " "), comments=True))
    return out


def _options_of(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", text))


def test_every_shell_block_says_what_it_needs() -> None:
    """An unmarked or unknown-kind block fails, naming its page and line."""
    bad = [f"{b.where} ({b.kind})" for b in BLOCKS if b.kind not in KINDS]
    assert not bad, f"shell blocks without a valid <!-- doc-block: KIND --> mark ({sorted(KINDS)}): {bad}"
    assert sum(b.kind == "runs" for b in BLOCKS) >= 4


def _subparsers() -> dict[str, object]:
    parser = build_parser()
    action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return dict(action.choices)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.kind in {"synopsis", "robot", "long", "runs"}], ids=lambda b: b.where
)
def test_motor_ident_commands_and_options_exist(block: Block) -> None:
    """Every ``motor-ident COMMAND --option`` a block names is in that command's parser."""
    parsers = _subparsers()
    full_text = re.sub(r"\\\n\s*", " ", block.text)
    for line in full_text.splitlines():
        line = line.split(" #", 1)[0]
        for match in re.finditer(r"motor-ident\s+([a-z-]+)((?:\s+[a-z]+\|)*)", line):
            names = [match.group(1), *re.findall(r"([a-z]+)\|", match.group(2))]
            command = names[0]
            assert command in parsers, f"{block.where}: no command motor-ident {command}"
            help_text = parsers[command].format_help()  # type: ignore[attr-defined]
            if command == "fleet":
                help_text += "".join(
                    sub.format_help()
                    for action in parsers[command]._actions  # type: ignore[attr-defined]
                    if action.__class__.__name__ == "_SubParsersAction"
                    for sub in action.choices.values()
                )
            unknown = _options_of(line[match.start() :]) - _options_of(help_text)
            assert not unknown, f"{block.where}: motor-ident {command} has no option {sorted(unknown)}"


def _entry_points() -> set[str]:
    setup = (REPO / "setup.py").read_text()
    return set(re.findall(r'"([a-z_]+)":\s*"motor_ident\.', setup))


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind == "ros2"], ids=lambda b: b.where)
def test_ros2_blocks_name_what_exists(block: Block) -> None:
    """``ros2 run motor_ident X`` is an entry point, ``ros2 launch motor_ident F a:=b`` a launch file
    that declares ``a``, and every ``motor-ident`` command in them exists."""
    executables = _entry_points()
    for words in commands(block.text.replace("$(cat $URDF)", "URDF")):
        if words[:3] == ["ros2", "run", "motor_ident"]:
            assert words[3] in executables, f"{block.where}: no executable {words[3]}"
        if words[:3] == ["ros2", "launch", "motor_ident"]:
            assert (REPO / "launch" / words[3]).is_file(), f"{block.where}: no launch file {words[3]}"
            declared = _launch_arguments(words[3])
            for argument in (w.split(":=")[0] for w in words[4:] if ":=" in w):
                assert argument in declared, f"{block.where}: {words[3]} declares no argument {argument}"


def _launch_arguments(launch_file: str) -> set[str]:
    """The arguments a launch file declares, with those of the launch files it includes."""
    text = (REPO / "launch" / launch_file).read_text()
    declared = set(re.findall(r'DeclareLaunchArgument\(\s*"(\w+)"', text))
    for included in set(re.findall(r'"(\w+\.launch\.py)"', text)) - {launch_file}:
        declared |= _launch_arguments(included)
    return declared


def _run_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST",
        FASTDDS_BUILTIN_TRANSPORTS="SHM",
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
        MPLBACKEND="Agg",
    )
    return env


RUNNABLE_PAGES = sorted({b.page for b in BLOCKS if b.kind == "runs"})


@pytest.mark.slow
@pytest.mark.ros
@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_runnable_blocks_run(page: Path, tmp_path: Path) -> None:
    """Each ``runs`` block of a page, in order, in a fresh folder: exit status 0."""
    venv = Path(sys.executable).parent.parent
    (tmp_path / ".venv").symlink_to(venv if (venv / "bin" / "motor-ident").exists() else REPO / ".venv")
    for name in ("config", "examples"):
        (tmp_path / name).symlink_to(REPO / name)
    for block in (b for b in BLOCKS if b.page == page and b.kind == "runs"):
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block.text],
            cwd=tmp_path,
            env=_run_env(),
            capture_output=True,
            text=True,
            timeout=600,
            stdin=subprocess.DEVNULL,
        )
        output = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert done.returncode == 0, f"{block.where} failed ({done.returncode}):\n{output}"

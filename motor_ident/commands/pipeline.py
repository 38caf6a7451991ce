"""``identify`` and ``validate`` as pipelines of stages: outputs checked first, results kept by late failures.

A command's stages run in order (``identify``: read, prepare, fit, parameters, validate, urdf,
report). `check_outputs` looks at every output path before the first stage: a parent folder that
cannot be written, a file output that is a directory, an output that is one of the inputs, two
outputs on one path are refused with one line (exit 2) before any work. Each stage writes its own
artifact when it completes (atomically). Once the results exist (``identify``: after the fit), a
stage that fails is recorded and said in one line, the stages after it still run, and the
``--json`` file, rewritten after each stage, records every stage's status beside the results.

Exit status (`EXIT_HELP`, printed by ``--help``): 0 done; 1 the verdict failed; 2 usage or
input error before any output was written; 3 a later stage failed (its error printed), the earlier
results kept; 130 interrupted (Ctrl-C), 143 terminated (SIGTERM). A failed verdict gives 1 even
when a later stage failed too: the verdict is what a script checks first.

Rejected: one ``try`` around the whole command (a failing ``--urdf-out`` took the verdict's exit
status and the JSON with it), and checking outputs where they are written (a read-only ``--out``
was found after the whole fit, naming a hidden temporary file).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from motor_ident.errors import MotorIdentError

EXIT_OK = 0
EXIT_VERDICT_FAILED = 1
EXIT_USAGE = 2
EXIT_LATE_STAGE = 3
EXIT_HELP = (
    "Exit status: 0 done; 1 the verdict failed (--validate-on, validate); 2 usage or input error, before any "
    "output was written; 3 a later stage failed (its error printed, the --json file records every stage), the "
    "results before it kept; 130 interrupted by Ctrl-C (143 by SIGTERM), every output whole or absent."
)

DONE, FAILED, SKIPPED, NOT_REACHED, INTERRUPTED = "done", "failed", "skipped", "not reached", "interrupted"


class OutputError(MotorIdentError):
    """An output path cannot be written, or would overwrite an input or another output."""


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and a.samefile(b))
    except OSError:
        return False


def check_outputs(
    outputs: Mapping[str, str | Path | None],
    inputs: Mapping[str, str | Path | None],
    *,
    directories: Sequence[str] = (),
) -> None:
    """Refuse outputs that cannot be written, before any work.

    Args:
        outputs: flag (``--out``) -> path (None: not written). Files, except the flags in
            ``directories`` (a report folder).
        inputs: what the command reads, name (``DATA``, ``--spec``) -> path (None: not given).

    Raises:
        OutputError: naming the flag, the path and what is wrong.
    """
    given = {flag: Path(path) for flag, path in outputs.items() if path}
    read = {name: Path(path) for name, path in inputs.items() if path}
    seen: dict[Path, str] = {}
    for flag, path in given.items():
        for name, source in read.items():
            if _same(path, source):
                raise OutputError(f"{flag} {path} is {name}: it would overwrite the input; write it elsewhere")
        key = path.resolve()
        if key in seen:
            raise OutputError(f"{seen[key]} and {flag} both name {path}: give each output its own path")
        seen[key] = flag
        if flag in directories:
            if path.exists() and not path.is_dir():
                raise OutputError(f"{flag} {path} is a file: give a folder (created if missing)")
        elif path.is_dir():
            raise OutputError(f"{flag} {path} is a directory: give a file name")
        parent = path.resolve().parent
        while not parent.exists():  # the folders atomic_write creates: the first existing one must be writable
            parent = parent.parent
        if not parent.is_dir():
            raise OutputError(f"{flag} {path}: {parent} is not a folder")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise OutputError(f"{flag} {path}: cannot write into {parent} (permission denied)")


class Pipeline:
    """The stages of one command run: their status, the results so far, and the JSON that records both.

    `stage` runs a stage's block. Before the results exist (`keep` not yet called), an error
    propagates: the command ends with exit 2 and no output. After `keep`, an error of motor_ident
    or of the file system is recorded, printed in one line, and the command goes on.
    """

    def __init__(self, command: str, stages: Sequence[str], *, json_path: str | Path | None = None) -> None:
        self.command = command
        self.status = dict.fromkeys(stages, NOT_REACHED)
        self.errors: dict[str, str] = {}
        self.results: dict[str, Any] = {}
        self.json_path = None if not json_path else Path(json_path)
        self.kept = False

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Run one stage (``with pipeline.stage('fit'):``): done, or failed with its error kept after `keep`."""
        try:
            yield
        except (MotorIdentError, OSError) as exc:
            self.status[name] = FAILED
            if not self.kept:
                raise
            self.errors[name] = str(exc)
            print(
                f"motor-ident {self.command}: error: stage {name}: {exc} (the results before it are kept)",
                file=sys.stderr,
            )
        except BaseException:  # Ctrl-C, SIGTERM: the JSON says where
            self.status[name] = INTERRUPTED
            raise
        else:
            self.status[name] = DONE
        finally:
            if self.kept:
                self.write_json()

    def skip(self, name: str) -> None:
        """A stage the command line did not ask for."""
        self.status[name] = SKIPPED
        if self.kept:
            self.write_json()

    def keep(self) -> None:
        """The results exist from here on: later failures are recorded, not fatal; the JSON is written."""
        self.kept = True
        self.write_json()

    def payload(self) -> dict[str, Any]:
        """The results with every stage's status and the errors of failed stages."""
        return {**self.results, "stages": dict(self.status), "stage_errors": dict(self.errors)}

    def write_json(self) -> None:
        """Write `payload` to ``--json`` atomically (nothing without it); a failure is the stage ``json``'s."""
        if self.json_path is None:
            return
        from motor_ident.io.data import atomic_write

        text = json.dumps(self.payload(), indent=2, allow_nan=True)
        try:
            atomic_write(self.json_path, lambda tmp: tmp.write_text(text + "\n"))
        except OSError as exc:
            if "json" not in self.errors:
                print(f"motor-ident {self.command}: error: --json {self.json_path}: {exc}", file=sys.stderr)
            self.errors["json"] = str(exc)

    def exit_code(self, *, passed: bool = True) -> int:
        """1 when the verdict failed, else 3 when a stage failed, else 0."""
        if not passed:
            return EXIT_VERDICT_FAILED
        return EXIT_LATE_STAGE if self.errors else EXIT_OK

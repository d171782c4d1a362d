"""`mockserver record`'s files: what `tools.recorder.Recording` learns, written into the recording's folder after
every exchange (whole files, or not at all), and an earlier recording in the same folder read back so a new one
merges with it. The only place a recording touches the disk."""
from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from ..base.errors import LoadError, Problem
from ..pipeline.pipeline import Pipeline
from ..spec.documents import inside, outside_message, read_document
from ..tools.drift import Exchange
from ..tools.recorder import Recording

log = logging.getLogger("mockserver.record")
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_HEADER = ("# Written by `mockserver record` (docs/RECORDING.md). A new recording into this\n"
           "# folder merges with it; keep settings of your own (auth tokens) in a file of your own beside it.\n")
_REJECTED = "# Not saved as a fixture: it breaks the description (violations below). For a person to judge.\n"
_SHARED = ("settings.yaml", "operations.yaml", "scenarios.yaml")


class Recorder:
    """A recording session: one exchange at a time learnt, then its documents written to `out` (and answers that
    break the description to `rejected`). LoadError when an earlier recording in `out` cannot be read."""

    def __init__(self, out: Path, rejected: Path, redact: Iterable[str] = ()) -> None:
        self.out, self.rejected = out, rejected
        self.recording = Recording(_earlier(out), redact)
        self._lock = threading.Lock()

    def observe(self, pipeline: Pipeline, exchange: Exchange) -> str:
        """Learn from one exchange and save it; says what became of it, for the log."""
        with self._lock:
            learnt = self.recording.observe(pipeline, exchange)
            for warning in learnt.warnings:
                log.warning("record: %s", warning)
            for relative, document in learnt.documents.items():
                _write(self.out / relative, document)
            if learnt.rejected is None:
                return learnt.outcome
            name, document = learnt.rejected
            _write(self.rejected / name, document, _REJECTED)
            return f"kept apart in {self.rejected / name}"


def _earlier(out: Path) -> dict[str, Any]:
    """The documents of an earlier recording in `out`, by their path in it. LoadError for a file that cannot be
    read (bad YAML, a symlink out of `out`) naming it and its line, never its content."""
    paths = sorted((out / "collections").glob("*.yaml")) + [out / name for name in _SHARED]
    folders = (out.resolve(),)
    found: dict[str, Any] = {}
    problems: list[Problem] = []
    for path in (p for p in paths if p.is_file()):
        if not inside(path, folders):
            problems.append(Problem(str(path), "", outside_message(path, folders, "the recording's folder",
                                                                   shared=False), "outside-folder"))
            continue
        try:
            found[path.relative_to(out).as_posix()] = read_document(path).data or {}
        except LoadError as exc:
            problems.extend(exc.problems)
    if problems:
        raise LoadError(problems)
    return found


def _write(path: Path, data: Any, header: str = _HEADER) -> None:
    """Whole or not at all: a reader (or a `serve --watch`) never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(header + yaml.dump(data, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=120,
                                                  default_flow_style=None))
    os.replace(temporary, path)

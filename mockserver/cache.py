"""The parse cache on disk: what a YAML file parsed to, kept by the hash of its bytes, so a start (or a `--watch`
reload) reads a file it has seen before in milliseconds instead of parsing it again (Kindgi's 780 kB of YAML: 0.35
s to parse, 15 ms to read back). `core.documents` asks it through the `ParseCache` protocol and never touches a
file itself; the command line installs it (`cli.main`).

Where: `$MOCKSERVER_CACHE_DIR`, else `$XDG_CACHE_HOME/mockserver/parsed`, else `~/.cache/mockserver/parsed`;
`MOCKSERVER_CACHE_DIR=off` turns it off. An entry is a `marshal` blob (data only: reading it runs no code);
a folder that cannot be written only means no cache, and at most `KEEP` entries are kept (the oldest go)."""
from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

ENV = "MOCKSERVER_CACHE_DIR"
KEEP = 64  # entries: a few descriptions and fixture sets, and their recent edits
log = logging.getLogger("mockserver")


class DiskCache:
    """Blobs by key in one folder, written atomically (workers and replicas may share the folder)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def get(self, key: str) -> bytes | None:
        try:
            return (self.folder / key).read_bytes()
        except OSError:
            return None

    def put(self, key: str, blob: bytes) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.folder, prefix=".tmp-")
            with os.fdopen(fd, "wb") as out:
                out.write(blob)
            os.replace(temporary, self.folder / key)
            self._prune()
        except OSError as exc:  # a read-only home, a full disk: the file is simply parsed next time
            log.debug("parse cache: cannot write %s: %s", self.folder, exc)

    def _prune(self) -> None:
        entries = [p for p in self.folder.iterdir() if not p.name.startswith(".")]
        if len(entries) > KEEP:
            entries.sort(key=lambda p: p.stat().st_mtime)
            for old in entries[:-KEEP]:
                old.unlink(missing_ok=True)


def default_cache() -> DiskCache | None:
    """The cache the environment asks for (module docstring), or None when it is turned off."""
    chosen = os.environ.get(ENV)
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "off", "0", "no") else DiskCache(Path(chosen))
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return DiskCache(Path(base) / "mockserver" / "parsed")

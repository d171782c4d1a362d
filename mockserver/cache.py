"""The parse cache on disk: what a YAML file parsed to, kept by the hash of its bytes, so a start (or a `--watch`
reload) reads a file it has seen before in milliseconds instead of parsing it again (Kindgi's 780 kB of YAML: 0.35
s to parse, 15 ms to read back). `spec.documents` asks it through the `ParseCache` protocol and never touches a
file itself; the command line installs it (`cli.main`).

Where: `$MOCKSERVER_CACHE_DIR`, else `$XDG_CACHE_HOME/mockserver/parsed`, else `~/.cache/mockserver/parsed`;
`MOCKSERVER_CACHE_DIR=off` turns it off. An entry is a `marshal` blob (data only: reading it runs no code);
a folder that cannot be written only means no cache, and at most `KEEP` entries are kept (the oldest go): enough
for a description of thousands of files (DigitalOcean's: about 1,500 YAML files read) and a few others besides."""
from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

ENV = "MOCKSERVER_CACHE_DIR"
KEEP = 4096  # entries (files): a few descriptions, big ones of many files too, fixture sets and their recent edits
log = logging.getLogger("mockserver")


class DiskCache:
    """Blobs by key in one folder, written atomically (workers and replicas may share the folder)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._entries: int | None = None  # in the folder, as this process last counted them and has added since

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
            new = not (self.folder / key).exists()
            os.replace(temporary, self.folder / key)
            self._count(new)
        except OSError as exc:  # a read-only home, a full disk: the file is simply parsed next time
            log.debug("parse cache: cannot write %s: %s", self.folder, exc)

    def _count(self, new: bool) -> None:
        """The folder is listed once, then only when the entries this process counted pass `KEEP` (listing it
        after every write cost more than parsing a small file: a description of 1,500 files wrote 1,500 times)."""
        if self._entries is None:
            self._entries = self._prune()
        elif new:
            self._entries += 1
            if self._entries > KEEP:
                self._entries = self._prune()

    def _prune(self) -> int:
        """The oldest entries removed, down to `KEEP`; how many are left."""
        entries = [p for p in self.folder.iterdir() if not p.name.startswith(".")]
        if len(entries) > KEEP:
            entries.sort(key=lambda p: p.stat().st_mtime)
            for old in entries[:-KEEP]:
                old.unlink(missing_ok=True)
        return min(len(entries), KEEP)


def default_cache() -> DiskCache | None:
    """The cache the environment asks for (module docstring), or None when it is turned off."""
    chosen = os.environ.get(ENV)
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "off", "0", "no") else DiskCache(Path(chosen))
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return DiskCache(Path(base) / "mockserver" / "parsed")

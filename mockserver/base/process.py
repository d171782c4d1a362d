"""This process's id, as of its last fork: what the request path compares with to notice it runs in a new worker
(threads and sockets do not survive a fork: the access log's flusher, the reloader's watcher, the callbacks'
senders, the Redis store's journal threads and script connections are made again there), read from memory where
`os.getpid()` made a system call on each request."""
from __future__ import annotations

import os


class _Process:
    def __init__(self) -> None:
        self.pid = os.getpid()

    def forked(self) -> None:
        self.pid = os.getpid()


PROCESS = _Process()
os.register_at_fork(after_in_child=PROCESS.forked)

"""Runs a checker (`python counted.py FILE -m MODULE ARGS…`) with every HTTP request it sends through `requests`
counted, and writes the count to FILE when it exits: how `bench/contract_speed.py` counts the requests of plain
Schemathesis and of `mockserver contract` alike, without a report that costs either of them time."""
from __future__ import annotations

import atexit
import runpy
import sys
from pathlib import Path
from typing import Any

import requests

_send = requests.Session.send
_sent = 0


def _counted(self: requests.Session, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
    global _sent
    _sent += 1
    return _send(self, request, **kwargs)


if __name__ == "__main__":
    count, module = Path(sys.argv[1]), sys.argv[3]
    requests.Session.send = _counted  # type: ignore[method-assign]
    atexit.register(lambda: count.write_text(str(_sent)))
    sys.argv = [module, *sys.argv[4:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)

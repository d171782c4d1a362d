"""What the SDK drivers (`bench/sdk_*.py`) share: each runs in the SDK's own venv, so this uses the standard
library alone. A driver makes an SDK's calls through a `Driver`, which prints one JSON record per call, read-back
and getting-started example for `bench/sdks.py` to fold into its table."""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any


def reason(error: BaseException) -> str:
    """An exception as one short line: its type and the first lines of its message (a pydantic error names the
    field on its second line)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {'; '.join(lines[:3])}"[:400]


def as_json(value: Any) -> Any:
    """A read answer as the JSON it came as: SDK models by their wire names."""
    if hasattr(value, "model_dump"):
        return value.model_dump(by_alias=True, mode="json")
    if isinstance(value, list):
        return [as_json(item) for item in value]
    return value


def differences(wrote: Mapping[str, Any], read: Any, where: str = "") -> list[str]:
    """The written fields the read answer does not hold as written (objects compared by the keys written, at
    every depth: the objects of an array too, so a field the server adds to each, such as `ref: null`, is no
    difference)."""
    if not isinstance(read, Mapping):
        return [f"{where or 'answer'}: read {type(read).__name__}, not an object"]
    found = []
    for key, value in wrote.items():
        got = read.get(key)
        if isinstance(value, Mapping):
            found += differences(value, got, f"{where}{key}.")
        elif isinstance(value, list) and isinstance(got, list) and len(value) == len(got) and value and all(
                isinstance(v, Mapping) for v in value):
            found += [d for i, (v, g) in enumerate(zip(value, got)) for d in differences(v, g, f"{where}{key}[{i}].")]
        elif got != value:
            found.append(f"{where}{key}: wrote {value!r}, read {got!r}")
    return found


class Driver:
    """Runs an SDK's calls, never stopping at a failure, and prints each outcome as it comes."""

    def __init__(self, sdk: str) -> None:
        self.sdk = sdk
        self.failures: set[str] = set()  # the calls that failed, by name
        self.last = ""  # the reason last printed: a read-back that could not read says why
        self.answer = ""  # the body of the last error answer: an SDK may keep only part of it

    def hook(self, response: Any) -> None:
        """An httpx response hook: keeps an error answer's body, as the SDK's exception may not tell it."""
        if response.status_code >= 400:
            response.read()
            self.answer = f"{response.status_code} {response.headers.get('content-type', '')} {response.text}"

    def failed(self, error: BaseException) -> str:
        """Why a call failed: the exception, and the answer it came from."""
        said, self.answer = self.answer, ""
        return reason(error) + (f" (answer: {said[:600]})" if said else "")

    def emit(self, kind: str, name: str, ok: bool, why: str = "") -> None:
        self.last = why
        print(json.dumps({"sdk": self.sdk, "kind": kind, "name": name, "ok": ok, "reason": why}), flush=True)

    def call(self, name: str, method: Callable[..., Any], /, *args: Any, after: str = "", **kwargs: Any) -> Any:
        """The method's answer, or None when it raised (the reason is printed). `after` names the write whose
        item the call uses: when that write failed, the reason says so first, as the call could not work."""
        self.answer = ""
        try:
            value = method(*args, **kwargs)
        except Exception as error:  # every failure is a finding: the SDK's own, the transport's, the answer's
            self.failures.add(name)
            first = f"after a failed write ({after}): " if after in self.failures else ""
            self.emit("call", name, False, first + self.failed(error))
            return None
        self.emit("call", name, True)
        return value if value is not None else True

    def readback(self, name: str, wrote: Mapping[str, Any], method: Callable[..., Any], /, *args: Any,
                 after: str = "", **kwargs: Any) -> None:
        """A read call, and whether it answers the fields as written."""
        value = self.call(name, method, *args, after=after, **kwargs)
        if value is None:
            self.emit("readback", name, False, f"the read failed: {self.last}")
            return
        wrong = differences(wrote, as_json(value))
        self.emit("readback", name, not wrong, "; ".join(wrong)[:400])

    def listed(self, name: str, ident: Any, method: Callable[..., Any], /, *args: Any, key: str = "id",
               after: str = "", **kwargs: Any) -> None:
        """A list call, and whether the item written (by its `key`) is in its first page."""
        value = self.call(name, method, *args, after=after, **kwargs)
        if value is None:
            self.emit("readback", name, False, f"the list failed: {self.last}")
            return
        items = as_json(value)  # a page (`{"data": [...]}`) or a plain list
        if isinstance(items, Mapping):
            items = items.get("data", [])
        keys = [str(item.get(key)) for item in items if isinstance(item, Mapping)]
        first = f"after a failed write ({after}): " if after in self.failures else ""
        self.emit("readback", name, str(ident) in keys,
                  "" if str(ident) in keys else f"{first}{key} {ident!r} not among {len(keys)} listed: {keys[:3]}")

    def example(self, name: str, steps: Callable[[], Any]) -> None:
        """The SDK's getting-started example, run whole: it completes or it raises."""
        try:
            outcome = steps()
        except Exception as error:
            self.emit("example", name, False, self.failed(error))
            return
        self.emit("example", name, outcome is not False, "" if outcome is not False else "it did not complete")

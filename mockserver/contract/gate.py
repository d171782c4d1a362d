"""Fail closed: a run that checked nothing must not pass. Silence from the checks means something only when the
calls got through and reached what the checks look at, so an operation is a gap (and the run fails) when

- the calls that carried the run's credentials were all refused (401/403; a 400 or 422 aside, which some servers
  answer before they read credentials): a wrong, expired or rotated token;
- it declares a success and never answered with one (the ids it was called with do not exist there, say), so its
  success answers were never checked;
- it answered with success, yet one of the checks its description makes relevant never applied (a list whose
  pages never had a next one leaves the cursor walk unchecked).

Operations a team knowingly leaves untested (`--allow-untested`) are excused: reported, not failed.

A negative run (`--mode negative`) sends data the description forbids, which a server is right to refuse: it
expects no success, so only the credentials are judged (and only where the run sends any: without credentials,
`--no-auth`, every call of a secured operation refused is the expected outcome, not a gap)."""
from __future__ import annotations

from collections.abc import Iterable

from .results import Gap, OperationResult

REFUSED = frozenset({401, 403})
BEFORE_AUTH = frozenset({400, 422})  # validation answers some servers give before they read the credentials


def judge(operations: Iterable[OperationResult], allowed: set[str], *,
          expect_success: bool = True) -> tuple[list[Gap], list[Gap]]:
    """The gaps that fail the run, and those of the `allowed` operations (by label), excused. `expect_success`:
    False for a negative run, whose calls a server is right to refuse."""
    failing: list[Gap] = []
    excused: list[Gap] = []
    for op in operations:
        (excused if op.label in allowed else failing).extend(gaps(op, expect_success=expect_success))
    return failing, excused


def gaps(op: OperationResult, *, expect_success: bool = True) -> list[Gap]:
    """What the run did not see of one operation; the credentials first, since they explain the rest."""
    if op.sent is not None and refused(op):
        return [Gap("credentials", op.label, seen(op.authenticated))]
    if not expect_success:
        return []
    if op.declares_success and not op.succeeded:
        return [Gap("success", op.label, seen(op.statuses) or "no answer")]
    if not op.succeeded:
        return []
    return [Gap("check", op.label, check) for check in op.must_apply if not op.passed[check] and not op.failed[check]]


def refused(op: OperationResult) -> bool:
    statuses = set(op.authenticated)
    return bool(statuses & REFUSED) and statuses <= REFUSED | BEFORE_AUTH


def seen(statuses: dict[int, int]) -> str:
    return ", ".join(f"{status}×{count}" for status, count in sorted(statuses.items()))

import time

import pytest
from itsdangerous import TimestampSigner, URLSafeTimedSerializer

from mockserver.base.errors import MockError
from mockserver.pipeline.pagination import CursorSealer


def reason(exc: pytest.ExceptionInfo[MockError]) -> str:
    assert exc.value.status == 400
    return exc.value.details["reason"]


def test_a_cursor_opens_for_its_own_binding_only():
    sealer = CursorSealer("s3cret")
    binding = sealer.binding("listThings", '{"id": "a"}|{"kind": "x"}', "caller-1")
    cursor = sealer.seal(binding, 41)
    assert sealer.open(cursor, binding) == 41
    for other in (sealer.binding("listOther", '{"id": "a"}|{"kind": "x"}', "caller-1"),
                  sealer.binding("listThings", '{"id": "b"}|{"kind": "x"}', "caller-1"),
                  sealer.binding("listThings", '{"id": "a"}|{"kind": "y"}', "caller-1"),
                  sealer.binding("listThings", '{"id": "a"}|{"kind": "x"}', "caller-2")):
        with pytest.raises(MockError) as caught:
            sealer.open(cursor, other)
        assert reason(caught) == "foreign"


def test_tampered_and_foreign_secret_cursors_are_refused():
    sealer = CursorSealer("s3cret")
    binding = sealer.binding("op", '{}|{}', "c")
    cursor = sealer.seal(binding, 3)
    for bad in (cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB"), "garbage", ""):
        with pytest.raises(MockError) as caught:
            sealer.open(bad, binding)
        assert reason(caught) == "tampered"
    with pytest.raises(MockError) as caught:  # well formed, sealed with another secret: an earlier run's
        sealer.open(CursorSealer("other").seal(binding, 3), binding)
    assert reason(caught) == "expired" and "earlier run" in caught.value.message


def test_replicas_sharing_a_secret_accept_each_others_cursors():
    a, b = CursorSealer("shared"), CursorSealer("shared")
    binding = a.binding("op", '{}|{}', "c")
    assert b.open(a.seal(binding, 7), binding) == 7


def test_a_replica_of_an_earlier_version_accepts_the_cursors_and_seals_the_same():
    """Cursors are sealed with hashlib's SHA-1 (OpenSSL's HMAC, issue 35) instead of itsdangerous's own wrapper of
    it: the same HMAC, so replicas sharing a secret across the upgrade read each other's cursors."""
    earlier = URLSafeTimedSerializer("shared", salt="mockserver.cursor")  # as an earlier mock sealed them
    sealer = CursorSealer("shared")
    binding = sealer.binding("op", '{}|{}', "c")
    cursor = sealer.seal(binding, [7, 3])
    assert sealer.open(earlier.dumps(earlier.loads(cursor)), binding, ranked=list) == [7, 3]
    assert earlier.loads(cursor)["r"] == [7, 3]


def test_an_expired_cursor_is_refused(monkeypatch: pytest.MonkeyPatch):
    clock = [int(time.time())]  # itsdangerous's clock (whole seconds), moved on instead of waited for
    monkeypatch.setattr(TimestampSigner, "get_timestamp", lambda self: clock[0])
    sealer = CursorSealer("s3cret", max_age=1)
    binding = sealer.binding("op", '{}|{}', "c")
    cursor = sealer.seal(binding, 1)
    clock[0] += 1
    assert sealer.open(cursor, binding) == 1  # as old as max_age: still good
    clock[0] += 1
    with pytest.raises(MockError) as caught:
        sealer.open(cursor, binding)
    assert reason(caught) == "expired"

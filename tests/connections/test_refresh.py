"""Lazy refresh: within 30 s of expiry, re-stored, single-flight in one process and across processes."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from workbench.connections.credentials import LEASE_SUFFIX, Credentials
from workbench.connections.provider_oauth import ProviderError, TokenSet
from workbench.errors import CredentialError, NotConnected, ReconnectRequired
from workbench.identity.crypto import Cipher, LocalKeyProvider
from workbench.manifest import Manifest
from workbench.stores import Connection, ConnectionStore
from workbench.stores.memory import memory_stores
from workbench.stores.sqlite import sqlite_stores

from tests.connections.plugins.testoauth import make_manifest

MANIFEST = make_manifest("http://127.0.0.1:9")
KEY = os.urandom(32)


class Provider:
    """A refresher standing in for the token endpoint: counts calls, rotates refresh tokens."""

    def __init__(self, *, delay: float = 0.0, fail: ProviderError | None = None, rotate: bool = True) -> None:
        self.calls: list[str] = []
        self.delay = delay
        self.fail = fail
        self.rotate = rotate
        self._lock = threading.Lock()

    async def __call__(self, manifest: Manifest, refresh_token: str, stored: Mapping[str, Any]) -> TokenSet:
        with self._lock:
            self.calls.append(refresh_token)
            n = len(self.calls)
        await asyncio.sleep(self.delay)
        if self.fail is not None:
            raise self.fail
        cred: dict[str, Any] = {"access_token": f"at-{n}", "token_type": "Bearer"}
        if self.rotate:
            cred["refresh_token"] = f"rt-{n}"
        return TokenSet(cred, 3600)


def creds(store: ConnectionStore, provider: Provider) -> Credentials:
    return Credentials(store, Cipher(LocalKeyProvider.from_secret(KEY)), refresh=provider)


def seed(c: Credentials, *, expires_in: float, refresh_token: str | None = "rt-0") -> Connection:
    cred = {"access_token": "at-0", **({"refresh_token": refresh_token} if refresh_token else {})}
    c.save("u1", MANIFEST.name, cred, expires_at=time.time() + expires_in)
    conn = c.store.get("u1", MANIFEST.name)
    assert conn is not None
    return conn


async def test_token_expiring_within_30_seconds_is_refreshed_and_stored() -> None:
    provider = Provider()
    c = creds(memory_stores().connections, provider)
    conn = seed(c, expires_in=29)
    cred = await c.access(MANIFEST, "u1", conn)
    assert cred["access_token"] == "at-1" and cred["refresh_token"] == "rt-1"
    assert provider.calls == ["rt-0"]
    stored = c.store.get("u1", MANIFEST.name)
    assert stored is not None and stored.version == conn.version + 1
    assert c.load(stored) == cred
    assert stored.expires_at is not None and stored.expires_at > time.time() + 3500


async def test_token_with_time_left_is_used_as_is() -> None:
    provider = Provider()
    c = creds(memory_stores().connections, provider)
    conn = seed(c, expires_in=120)
    assert (await c.access(MANIFEST, "u1", conn))["access_token"] == "at-0"
    assert provider.calls == []


async def test_provider_that_does_not_rotate_keeps_the_old_refresh_token() -> None:
    provider = Provider(rotate=False)
    c = creds(memory_stores().connections, provider)
    cred = await c.access(MANIFEST, "u1", seed(c, expires_in=0))
    assert cred == {"access_token": "at-1", "refresh_token": "rt-0", "token_type": "Bearer"}


async def test_no_refresh_token_fails_clearly_without_calling_the_provider() -> None:
    provider = Provider()
    c = creds(memory_stores().connections, provider)
    conn = seed(c, expires_in=5, refresh_token=None)
    with pytest.raises(CredentialError) as err:
        await c.access(MANIFEST, "u1", conn)
    assert str(err.value) == (
        "testoauth access token has expired and no refresh token is stored. Use connect('testoauth') to reconnect."
    )
    assert provider.calls == []


async def test_rejected_refresh_marks_reconnect_required_and_names_connect() -> None:
    provider = Provider(fail=ProviderError("invalid_grant", "grant revoked", status=400, permanent=True))
    c = creds(memory_stores().connections, provider)
    conn = seed(c, expires_in=5)
    with pytest.raises(ReconnectRequired) as err:
        await c.access(MANIFEST, "u1", conn)
    assert "Use connect('testoauth') to reconnect." in str(err.value)
    stored = c.store.get("u1", MANIFEST.name)
    assert stored is not None and stored.status == "reconnect_required"
    assert c.is_connected(MANIFEST, stored) is False
    with pytest.raises(ReconnectRequired):  # and nobody tries the dead token again
        await c.access(MANIFEST, "u1", stored)
    assert len(provider.calls) == 1


async def test_provider_outage_is_retryable_keeps_the_connection_and_backs_off() -> None:
    provider = Provider(fail=ProviderError("unreachable", "token endpoint: ConnectError"))
    now = [time.time()]
    c = Credentials(
        memory_stores().connections,
        Cipher(LocalKeyProvider.from_secret(KEY)),
        refresh=provider,
        clock=lambda: now[0],
    )
    conn = seed(c, expires_in=5)
    with pytest.raises(CredentialError) as err:
        await c.access(MANIFEST, "u1", conn)
    words = "testoauth token refresh failed (unreachable: token endpoint: ConnectError); try the call again shortly."
    assert str(err.value) == words and not isinstance(err.value, ReconnectRequired)
    stored = c.store.get("u1", MANIFEST.name)
    assert stored is not None and stored.status == "connected"
    # The lease is free again, and keeps the failure with when the next attempt may go (2 s on).
    lease = c.store.get("u1", MANIFEST.name + LEASE_SUFFIX)
    assert lease is not None and (lease.status, lease.expires_at, lease.last_error) == (
        "failed",
        now[0] + 2,
        words,
    )
    # Within the backoff a call gets the same answer and the failing provider is not asked again.
    with pytest.raises(CredentialError) as again:
        await c.access(MANIFEST, "u1", conn)
    assert str(again.value) == words and len(provider.calls) == 1
    # After it, one attempt; a second failure doubles the wait.
    now[0] += 2.5
    with pytest.raises(CredentialError):
        await c.access(MANIFEST, "u1", conn)
    assert len(provider.calls) == 2
    lease = c.store.get("u1", MANIFEST.name + LEASE_SUFFIX)
    assert lease is not None and lease.expires_at == now[0] + 4
    # The provider is back: the next attempt after the backoff succeeds and clears the failure.
    provider.fail = None
    now[0] += 4.5
    assert (await c.access(MANIFEST, "u1", conn))["access_token"] == "at-3"
    lease = c.store.get("u1", MANIFEST.name + LEASE_SUFFIX)
    assert lease is not None and (lease.status, lease.expires_at, lease.last_error) == ("lease", 0.0, "")


@pytest.mark.parametrize(
    "failure",
    [
        ProviderError("temporarily_unavailable", "try later", status=400),
        ProviderError("http_503", status=503),
        ProviderError("server_error", status=500),
    ],
)
async def test_a_transient_refusal_never_marks_the_connection_for_reconnect(failure: ProviderError) -> None:
    assert failure.permanent is False
    provider = Provider(fail=failure)
    c = creds(memory_stores().connections, provider)
    with pytest.raises(CredentialError) as err:
        await c.access(MANIFEST, "u1", seed(c, expires_in=5))
    assert not isinstance(err.value, ReconnectRequired) and "try the call again shortly" in str(err.value)
    stored = c.store.get("u1", MANIFEST.name)
    assert stored is not None and stored.status == "connected"


def test_token_endpoint_refusals_are_classified_by_code_and_status() -> None:
    from workbench.connections.provider_oauth import refusal_is_permanent

    assert refusal_is_permanent("temporarily_unavailable", 400) is False
    assert refusal_is_permanent("invalid_grant", 503) is False  # a 5xx is the server's trouble
    assert refusal_is_permanent("http_429", 429) is False
    assert refusal_is_permanent("invalid_grant", 400) is True
    assert refusal_is_permanent("unauthorized_client", 400) is True
    assert refusal_is_permanent("token_revoked", 200) is True  # Slack: 200 with ok: false
    assert refusal_is_permanent("invalid_request", 400) is True


async def test_every_caller_of_a_burst_gets_the_same_answer_and_the_provider_sees_one_attempt() -> None:
    for failure, permanent in (
        (ProviderError("invalid_grant", "revoked", status=400, permanent=True), True),
        (ProviderError("http_503", status=503), False),
    ):
        provider = Provider(delay=0.1, fail=failure)
        c = creds(memory_stores().connections, provider)
        conn = seed(c, expires_in=5)
        answers = await asyncio.gather(
            *(c.access(MANIFEST, "u1", conn) for _ in range(20)), return_exceptions=True
        )
        later = await asyncio.gather(
            *(c.access(MANIFEST, "u1", conn) for _ in range(5)), return_exceptions=True
        )
        assert len(provider.calls) == 1
        words = {(type(a).__name__, str(a)) for a in [*answers, *later]}
        assert len(words) == 1, words
        kind, text = words.pop()
        if permanent:
            assert (kind, text) == (
                "ReconnectRequired",
                "testoauth must be connected again: the provider refused the refresh (invalid_grant). "
                "Use connect('testoauth') to reconnect.",
            )
        else:
            assert text == "testoauth token refresh failed (http_503); try the call again shortly."


async def test_a_refresh_whose_answer_was_lost_says_so_and_a_later_refusal_names_it() -> None:
    lost = ProviderError("unreachable", "token endpoint: ReadError", lost=True)
    provider = Provider(fail=lost)
    now = [time.time()]
    c = Credentials(
        memory_stores().connections,
        Cipher(LocalKeyProvider.from_secret(KEY)),
        refresh=provider,
        clock=lambda: now[0],
    )
    conn = seed(c, expires_in=5)
    with pytest.raises(CredentialError) as err:
        await c.access(MANIFEST, "u1", conn)
    assert str(err.value) == (
        "testoauth the provider's answer to the token refresh was lost in transit (unreachable: token endpoint: "
        "ReadError); it may have renewed the token; try the call again shortly."
    )
    # The provider did rotate and now refuses the old token: the reconnect reason says what happened.
    provider.fail = ProviderError("invalid_grant", status=400, permanent=True)
    now[0] += 3
    with pytest.raises(ReconnectRequired) as refused:
        await c.access(MANIFEST, "u1", conn)
    assert "after its answer to the previous refresh was lost in transit" in str(refused.value)


async def test_twenty_concurrent_callers_in_one_process_make_one_refresh() -> None:
    provider = Provider(delay=0.1)
    c = creds(memory_stores().connections, provider)
    conn = seed(c, expires_in=10)
    results = await asyncio.gather(*(c.access(MANIFEST, "u1", conn) for _ in range(20)))
    assert provider.calls == ["rt-0"]
    assert {r["access_token"] for r in results} == {"at-1"}


def race_two_instances(new_store: Callable[[], ConnectionStore], *, join_seconds: float) -> Provider:
    """Two Credentials, each on its own store client and event loop (as two processes would be),
    ten callers each, all on a token about to expire; returns the provider to count refreshes."""
    provider = Provider(delay=0.3)
    seed(creds(new_store(), provider), expires_in=10)
    seen: list[str] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def instance() -> None:
        c = creds(new_store(), provider)

        async def run() -> list[dict[str, Any]]:
            conn = c.store.get("u1", MANIFEST.name)
            barrier.wait()
            return await asyncio.gather(*(c.access(MANIFEST, "u1", conn) for _ in range(10)))

        try:
            seen.extend(r["access_token"] for r in asyncio.run(run()))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=instance) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(join_seconds)
    assert errors == []
    assert seen == ["at-1"] * 20
    return provider


def test_concurrent_refreshes_across_instances_on_one_sqlite_file_make_one_call(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    provider = race_two_instances(lambda: sqlite_stores(path).connections, join_seconds=30)
    assert provider.calls == ["rt-0"]


async def test_a_lease_left_by_a_crashed_holder_expires_and_is_taken_over() -> None:
    provider = Provider()
    store = memory_stores().connections
    c = creds(store, provider)
    conn = seed(c, expires_in=5)
    store.put(
        Connection("u1", MANIFEST.name + LEASE_SUFFIX, b"lease", "lease", time.time() - 1, time.time(), 1),
        expected_version=0,
    )
    assert (await c.access(MANIFEST, "u1", conn))["access_token"] == "at-1"


async def test_a_live_lease_makes_others_wait_for_its_result() -> None:
    provider = Provider()
    store = memory_stores().connections
    c = creds(store, provider)
    conn = seed(c, expires_in=5)
    now = time.time()
    store.put(
        Connection("u1", MANIFEST.name + LEASE_SUFFIX, b"lease", "lease", now + 30, now, 1),
        expected_version=0,
    )

    async def other_instance_finishes() -> None:
        await asyncio.sleep(0.2)
        other = creds(store, Provider())
        other.save(
            "u1",
            MANIFEST.name,
            {"access_token": "from-other", "refresh_token": "rt-x"},
            expires_at=now + 3600,
        )

    waiter = asyncio.create_task(c.access(MANIFEST, "u1", conn))
    await other_instance_finishes()
    assert (await waiter)["access_token"] == "from-other"
    assert provider.calls == []


async def test_disconnected_while_waiting_is_not_connected() -> None:
    c = creds(memory_stores().connections, Provider())
    conn = seed(c, expires_in=5)
    c.store.delete("u1", MANIFEST.name)
    with pytest.raises(NotConnected):
        await c.access(MANIFEST, "u1", conn)


class _Interleaved:
    """A ConnectionStore that lets another instance act between our read of the lease and our write."""

    def __init__(self, inner: ConnectionStore) -> None:
        self.inner = inner
        self.between: Any = None

    def get(self, user_id: str, integration: str) -> Connection | None:
        row = self.inner.get(user_id, integration)
        if integration.endswith(LEASE_SUFFIX) and self.between is not None:
            act, self.between = self.between, None
            act()
        return row

    def list_for(self, user_id: str) -> list[Connection]:
        return self.inner.list_for(user_id)

    def put(self, conn: Connection, *, expected_version: int | None = None) -> bool:
        return self.inner.put(conn, expected_version=expected_version)

    def delete(self, user_id: str, integration: str) -> bool:
        return self.inner.delete(user_id, integration)


@pytest.mark.parametrize("adapter", ["memory", "sqlite"])
def test_two_instances_seeing_the_lease_free_at_once_only_one_takes_it(tmp_path: Path, adapter: str) -> None:
    inner = (
        memory_stores().connections if adapter == "memory" else sqlite_stores(tmp_path / "x.db").connections
    )
    mine = _Interleaved(inner)
    me, other = creds(mine, Provider()), creds(inner, Provider())
    taken: list[Any] = []
    mine.between = lambda: taken.append(other._take_lease("u1", MANIFEST.name))
    assert me._take_lease("u1", MANIFEST.name) is None  # the conditional write lost
    assert taken[0] is not None
    other._release_lease(taken[0])
    assert me._take_lease("u1", MANIFEST.name) is not None


# -- the user token (Slack's authed_user) has an expiry and a refresh token of its own -------------


def seed_user_token(c: Credentials, *, expires_in: float, refresh_token: str | None = "urt-0") -> Connection:
    user_token = {"access_token": "xoxp-0", "expires_at": time.time() + expires_in}
    if refresh_token:
        user_token["refresh_token"] = refresh_token
    cred = {"access_token": "at-0", "refresh_token": "rt-0", "user_token": user_token}
    c.save("u1", MANIFEST.name, cred, expires_at=time.time() + 3600)
    conn = c.store.get("u1", MANIFEST.name)
    assert conn is not None
    return conn


async def test_an_expiring_user_token_is_refreshed_with_its_own_refresh_token() -> None:
    provider = Provider()
    c = creds(memory_stores().connections, provider)
    conn = seed_user_token(c, expires_in=10)
    cred = await c.access(MANIFEST, "u1", conn, kind="user")
    assert provider.calls == ["urt-0"]  # the user token's refresh token, not the app's
    assert cred["access_token"] == "at-0" and cred["refresh_token"] == "rt-0"  # the app's token untouched
    user = cred["user_token"]
    assert (user["access_token"], user["refresh_token"]) == ("at-1", "rt-1")
    assert user["expires_at"] > time.time() + 3500
    stored = c.store.get("u1", MANIFEST.name)
    assert stored is not None and c.load(stored) == cred
    assert stored.expires_at == conn.expires_at  # the app token's expiry is not the user token's
    # The app token still needs nothing.
    assert (await c.access(MANIFEST, "u1", stored))["access_token"] == "at-0"
    assert provider.calls == ["urt-0"]


async def test_a_rejected_user_token_is_refreshed_once_for_all_callers() -> None:
    provider = Provider(delay=0.05)
    c = creds(memory_stores().connections, provider)
    seed_user_token(c, expires_in=3600)
    results = await asyncio.gather(
        *(c.after_rejection(MANIFEST, "u1", "xoxp-0", kind="user") for _ in range(10))
    )
    assert provider.calls == ["urt-0"]
    assert {r["user_token"]["access_token"] for r in results} == {"at-1"}


async def test_a_rejected_user_token_without_refresh_keeps_the_connection_and_says_reconnect() -> None:
    provider = Provider()
    c = creds(memory_stores().connections, provider)
    seed_user_token(c, expires_in=3600, refresh_token=None)
    with pytest.raises(CredentialError) as err:
        await c.after_rejection(MANIFEST, "u1", "xoxp-0", kind="user")
    assert str(err.value) == (
        "testoauth: the provider refused the user token and no refresh token is stored. "
        "Use connect('testoauth') to reconnect."
    )
    assert not isinstance(err.value, ReconnectRequired)
    stored = c.store.get("u1", MANIFEST.name)
    assert stored is not None and stored.status == "connected"  # the app token still works
    assert stored.last_error == "the provider refused the user token and no refresh token is stored"
    assert provider.calls == []

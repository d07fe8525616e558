"""A user's jots (notes) and their share links.

Every read and write names the owner: another user's jot is indistinguishable from one that never
existed. A share link's token is 192 random bits; sharing again after unsharing mints a new one.
All methods are blocking (store calls): built-in tools run on the tool pool, the jots host calls
them from its handlers.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from workbench.errors import ConflictError
from workbench.stores import Jot

if TYPE_CHECKING:
    from workbench.stores import JotStore

__all__ = ["JotService", "new_share_token"]

_ATTEMPTS = 8  # lost races in a row before a change answers ConflictError


def new_share_token() -> str:
    return secrets.token_urlsafe(24)  # 192 bits: a share link cannot be guessed


def _share_token(current: str | None, shared: bool | None) -> str | None:
    if shared is None:
        return current
    return (current or new_share_token()) if shared else None


class JotService:
    def __init__(self, store: JotStore, *, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._clock = clock

    def create(self, user_id: str, title: str, body: str, *, shared: bool = False) -> Jot:
        now = self._clock()
        jot = Jot(
            "jot_" + secrets.token_urlsafe(12), user_id, title, body, now, now, _share_token(None, shared)
        )
        self._store.put(jot)
        return jot

    def get(self, user_id: str, jot_id: str) -> Jot | None:
        return self._store.get(user_id, jot_id)

    def list_for(self, user_id: str, limit: int | None = None) -> list[Jot]:
        """Most recently updated first."""
        return self._store.list_for(user_id)[:limit]

    def update(
        self,
        user_id: str,
        jot_id: str,
        *,
        title: str | None = None,
        body: str | None = None,
        shared: bool | None = None,
    ) -> Jot | None:
        """Change what is given (shared: True keeps or makes a share link, False revokes it).

        A read-modify-write on the version it read (`updated_at`): when another edit (another
        instance, the portal) wrote first, the change is applied again to what that edit stored, so a
        title edit and a body edit made at the same moment both survive. After a few lost races in
        a row it answers ConflictError, which the agent can retry."""
        return self._change(
            user_id,
            jot_id,
            lambda jot: Jot(
                jot.id,
                jot.user_id,
                title if title is not None else jot.title,
                body if body is not None else jot.body,
                jot.created_at,
                self._later_than(jot),
                _share_token(jot.share_token, shared),
            ),
        )

    def set_shared(self, user_id: str, jot_id: str, shared: bool) -> Jot | None:
        """Make (or keep) or revoke the share link, leaving the jot's text alone."""
        return self._change(
            user_id,
            jot_id,
            lambda jot: replace(
                jot, share_token=_share_token(jot.share_token, shared), updated_at=self._later_than(jot)
            ),
        )

    def _change(self, user_id: str, jot_id: str, change: Callable[[Jot], Jot]) -> Jot | None:
        for _ in range(_ATTEMPTS):
            jot = self._store.get(user_id, jot_id)
            if jot is None:
                return None
            changed = change(jot)
            if self._store.put_if(changed, expected_updated_at=jot.updated_at):
                return changed
        raise ConflictError(
            f"Jot {jot_id} is being changed elsewhere at the same moment; nothing was changed. Try again."
        )

    def _later_than(self, jot: Jot) -> float:
        """Now, and always after the version it replaces (the version is what writes compare)."""
        return max(self._clock(), jot.updated_at + 0.001)

    def delete(self, user_id: str, jot_id: str) -> bool:
        return self._store.delete(user_id, jot_id)

    def search(self, user_id: str, query: str, limit: int) -> list[Jot]:
        """Jots holding every word of `query` (title or body), most mentions first."""
        words = [w for w in query.lower().split() if w]
        hits = []
        for jot in self._store.list_for(user_id):
            text = f"{jot.title}\n{jot.body}".lower()
            score = sum(text.count(w) for w in words)
            if score and all(w in text for w in words):
                hits.append((score, jot))
        hits.sort(key=lambda h: -h[0])
        return [jot for _, jot in hits[:limit]]

    def shared(self, token: str) -> Jot | None:
        """The jot behind a share link (anyone may read it), or None."""
        return self._store.by_share_token(token) if 16 <= len(token) <= 128 else None

"""Forward migrations of the stored data, with the data's schema version kept in the data itself
(`Stores.schema`: SQLite's user_version, an item of the DynamoDB users table, memory).

`migrate(stores)` applies, in order, every migration above the stored version and records each
step with a conditional write, so it can run anywhere at any time: on every deploy (the stack's
CodeDeploy PreTraffic hook, workbench/runtime/migrate_hook.py), from `workbench migrate [--stack]`,
and when `workbench serve` starts. Each migration must be idempotent (a runner that died after
applying a step and before recording it runs it again) and additive (new attributes, new item
kinds, nothing removed or renamed in place): the previous code version keeps working on migrated
data, which is what lets a canary deploy roll back. Older code meeting a newer version refuses
nothing; it simply does not know what the newer steps added.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from workbench.errors import ConfigError

if TYPE_CHECKING:
    from workbench.stores import Stores

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Migration", "migrate"]


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    description: str
    apply: Callable[[Stores], None]


def _baseline(stores: Stores) -> None:
    """The data as this release writes it: nothing to change, only the version to record."""


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "baseline: the data as of the first versioned release", _baseline),
)
SCHEMA_VERSION = MIGRATIONS[-1].version


def migrate(stores: Stores, migrations: tuple[Migration, ...] = MIGRATIONS) -> list[int]:
    """Bring the data up to the last migration's version; the versions this call applied. A store
    already at (or past) it is left alone; a step another runner recorded meanwhile is not redone."""
    schema = stores.schema
    assert schema is not None  # Stores always has one (set in __post_init__)
    if [m.version for m in migrations] != list(range(1, len(migrations) + 1)):
        raise ConfigError("migrations must be numbered 1, 2, 3, ... in order")
    applied: list[int] = []
    current = schema.version()
    for step in migrations:
        if step.version <= current:
            continue
        step.apply(stores)
        if schema.advance(current, step.version):
            applied.append(step.version)
            current = step.version
        else:
            current = schema.version()  # another runner moved on: continue from where it is
    return applied

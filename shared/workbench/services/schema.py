"""The stored data's schema version and its forward migrations (workbench.stores.migrations), for the
doors that run them: the deploy hook, `workbench migrate`, `workbench serve` at start."""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.stores.migrations import SCHEMA_VERSION, migrate

if TYPE_CHECKING:
    from workbench.stores import Stores

__all__ = ["SchemaService"]


class SchemaService:
    latest = SCHEMA_VERSION

    def __init__(self, stores: Stores) -> None:
        self._stores = stores

    def version(self) -> int:
        schema = self._stores.schema
        assert schema is not None  # Stores always has one (set in __post_init__)
        return schema.version()

    def migrate(self) -> list[int]:
        """Apply what this version has and the data lacks; the versions applied (idempotent)."""
        return migrate(self._stores)

"""vault_* tools: names in, never values out. Names are taken literally (no ref resolution)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field, field_validator

from workbench.builtin import VAULT
from workbench.tools import tool

MANIFEST = VAULT

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


class VaultName(BaseModel):
    name: str = Field(description="Secret name, used as {{vault:NAME}}")

    @field_validator("name")
    @classmethod
    def _valid(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError("name must be 1-128 characters of letters, digits, '_', '.', '-'")
        return v


class VaultSet(VaultName):
    value: str = Field(
        min_length=1,
        max_length=16_384,
        description="The secret value (never returned)",
        json_schema_extra={"writeOnly": True},  # never kept in the audit either
    )


class NoArgs(BaseModel):
    pass


@tool(
    "vault_list",
    "List the names of your vault secrets (values are never returned).",
    NoArgs,
    keywords=("show", "stored", "saved", "names", "keys", "tokens"),
)
def vault_list(args: NoArgs, ctx: Any) -> dict[str, Any]:
    return {"names": ctx.services.vault.names(ctx.user_id)}


@tool(
    "vault_set",
    "Store a secret in your vault under a name, for use as {{vault:NAME}} in tool arguments.",
    VaultSet,
    keywords=(
        "save",
        "store",
        "put",
        "add",
        "remember",
        "keep",
        "api key",
        "password",
        "token",
        "rotate",
        "securely",
    ),
)
def vault_set(args: VaultSet, ctx: Any) -> dict[str, Any]:
    ctx.services.vault.set(ctx.user_id, args.name, args.value)
    return {"stored": args.name}


@tool(
    "vault_delete",
    "Delete a secret from your vault by name.",
    VaultName,
    keywords=("remove", "forget", "erase", "revoke", "discard", "get rid", "api key", "password", "token"),
)
def vault_delete(args: VaultName, ctx: Any) -> dict[str, Any]:
    if not ctx.services.vault.delete(ctx.user_id, args.name):
        raise LookupError(f"Vault secret '{args.name}' not found")
    return {"deleted": args.name}


TOOLS = [vault_list, vault_set, vault_delete]

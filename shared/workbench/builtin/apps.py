"""apps_* tools: register, list, refresh and remove your own custom apps: external MCP tool servers
and OpenAPI apps (each operation of an OpenAPI 3.x document becomes a tool).

Their arguments are taken literally (like vault_*): a `{{vault:NAME}}` in a URL or token is stored
as a reference and resolved at each call, so the secret itself is never written into the
registration and never passes through the agent.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from workbench.builtin import APPS
from workbench.tools import tool

__all__ = ["MANIFEST", "TOOLS"]

MANIFEST = APPS


class NoAuthSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["none"] = "none"


class BearerSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["bearer"]
    token: str = Field(
        min_length=1,
        max_length=4096,
        description="Token, best as {{vault:NAME}}",
        json_schema_extra={"writeOnly": True},
    )


class HeaderSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["header"]
    headerName: str = Field(min_length=1, max_length=64, description="e.g. X-Api-Key")
    value: str = Field(
        min_length=1,
        max_length=4096,
        description="Header value, best as {{vault:NAME}}",
        json_schema_extra={"writeOnly": True},
    )


class OAuthSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["oauth"]


class OAuth2Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["oauth2"]
    clientId: str = Field(
        min_length=1, max_length=512, description="The OAuth client you registered with the API"
    )
    clientSecret: str = Field(
        default="",
        max_length=4096,
        description="Its secret (empty for a public client)",
        json_schema_extra={"writeOnly": True},
    )
    scopes: list[str] | None = Field(
        default=None, description="Scopes to ask for (default: all the flow lists)"
    )
    scheme: str | None = Field(default=None, description="Which oauth2 security scheme (default: the first)")


class QuerySpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["query"]
    name: str = Field(min_length=1, max_length=64, description="Query parameter name, e.g. api_key")
    value: str = Field(
        min_length=1,
        max_length=4096,
        description="Its value, best as {{vault:NAME}}",
        json_schema_extra={"writeOnly": True},
    )


class RegisterOpenApi(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(
        description="Short id, lowercase (a-z, 0-9, '_', '-'); tools appear as <name>_<operationId>"
    )
    document: dict[str, Any] | str = Field(
        description="The OpenAPI 3.0/3.1 document (an object, or JSON text)"
    )
    baseUrl: str | None = Field(
        default=None,
        description="The API's base URL; default: the document's first server. May contain {{vault:NAME}}.",
    )
    auth: NoAuthSpec | BearerSpec | HeaderSpec | QuerySpec | OAuth2Spec | None = Field(
        default=None,
        discriminator="type",
        description=(
            "none (default), bearer, header (API key), query, or oauth2 (the document's authorization-code "
            "flow; each user then connects with connect)"
        ),
    )
    enabled: bool = True
    toolPrefix: str | None = Field(default=None, description='Prefix for the tool names; default "<name>_"')
    timeout: int = Field(default=30_000, ge=100, le=120_000, description="Milliseconds per call")
    operations: list[str] | None = Field(
        default=None,
        description="Only these operationIds or tags (default: every operation)",
        max_length=2000,
    )


class RegisterServer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="Short id, lowercase (a-z, 0-9, '_', '-'); tools appear as <name>_<tool>")
    url: str = Field(
        description=(
            "The server's MCP endpoint (Streamable HTTP). May contain {workspaceCode} (replaced by your "
            "Workbench user id) and {{vault:NAME}} references."
        )
    )
    auth: NoAuthSpec | BearerSpec | HeaderSpec | OAuthSpec | None = Field(
        default=None,
        discriminator="type",
        description="none (default), bearer, header, or oauth (the server's own OAuth: connect it with connect)",
    )
    enabled: bool = True
    toolPrefix: str | None = Field(
        default=None, description='Prefix for the merged tool names; default "<name>_"'
    )
    timeout: int = Field(
        default=30_000, ge=100, le=120_000, description="Milliseconds per call (default 30000)"
    )


class AppName(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="The custom app's name")


class NoArgs(BaseModel):
    pass


@tool(
    "apps_register_server",
    "Register (or replace) one of your own external MCP tool servers as a custom app. Its tools then "
    "appear in your search_tools under the prefix and run through execute_tools. Use {{vault:NAME}} for "
    "tokens; names that collide with built-in or plugin tools are refused.",
    RegisterServer,
    keywords=("add", "connect", "install", "hook up", "plug in", "integrate", "own tools"),
)
async def apps_register_server(args: RegisterServer, ctx: Any) -> dict[str, Any]:
    external = ctx.services.external
    view = await external.register(
        ctx.user_id,
        name=args.name,
        url=args.url,
        auth=args.auth.model_dump() if args.auth is not None else None,
        enabled=args.enabled,
        tool_prefix=args.toolPrefix,
        timeout_ms=args.timeout,
    )
    if not args.enabled:
        return dict(view)
    return dict(await external.reconnect(ctx.user_id, args.name))


@tool(
    "apps_register_openapi",
    "Register (or replace) an OpenAPI 3.x document as a custom app: each operation becomes a tool named "
    "<prefix><operationId>, its input from the parameters and a `body` property, its description from the "
    "summary and description. Operations that cannot become tools are dropped and listed under `dropped`. "
    "Use {{vault:NAME}} for API keys and tokens.",
    RegisterOpenApi,
    keywords=("add", "connect", "import", "swagger", "rest api", "spec", "endpoints", "integrate"),
)
async def apps_register_openapi(args: RegisterOpenApi, ctx: Any) -> dict[str, Any]:
    view = await ctx.services.external.register_openapi(
        ctx.user_id,
        name=args.name,
        document=args.document,
        base_url=args.baseUrl,
        auth=args.auth.model_dump() if args.auth is not None else None,
        enabled=args.enabled,
        tool_prefix=args.toolPrefix,
        timeout_ms=args.timeout,
        operations=args.operations,
    )
    return dict(view)


@tool(
    "apps_list",
    "List your custom apps (MCP servers and OpenAPI apps) and their status.",
    NoArgs,
    keywords=("show", "installed", "registered", "custom", "servers"),
)
def apps_list(args: NoArgs, ctx: Any) -> dict[str, Any]:
    return {"apps": ctx.services.external.list_for(ctx.user_id)}


@tool(
    "apps_refresh",
    "Reconnect a custom app: forget its cached tool list (and any reconnect-required flag) and discover "
    "its tools again now.",
    AppName,
    keywords=("reload", "resync", "sync", "rediscover", "reconnect", "fetch again", "tool list", "update"),
)
async def apps_refresh(args: AppName, ctx: Any) -> dict[str, Any]:
    return dict(await ctx.services.external.reconnect(ctx.user_id, args.name))


@tool(
    "apps_remove",
    "Remove one of your custom apps by name.",
    AppName,
    keywords=("delete", "unregister", "uninstall", "disconnect", "drop", "get rid"),
)
def apps_remove(args: AppName, ctx: Any) -> dict[str, Any]:
    ctx.services.external.remove(ctx.user_id, args.name)
    return {"removed": args.name}


TOOLS = [apps_register_server, apps_register_openapi, apps_list, apps_refresh, apps_remove]

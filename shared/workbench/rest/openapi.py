"""The OpenAPI 3.1 document for POST /rest/{integration}, built from the live registry."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench.composition import Gateway

__all__ = ["openapi_document"]

_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {"type": "string"}},
}
_EXECUTION_RESULT = {
    "type": "object",
    "description": (
        "One execution's outcome: {result} on success, or an error object — {error} (Tool not found, "
        "Invalid arguments for <tool>: ..., a handler failure) or the NOT_CONNECTED shape "
        "{error: 'NOT_CONNECTED', integration, message}."
    ),
    "properties": {
        "result": {},
        "error": {"type": "string"},
        "integration": {"type": "string"},
        "message": {"type": "string"},
    },
    "minProperties": 1,
}
_EXECUTION = {
    "type": "object",
    "required": ["tool"],
    "properties": {
        "tool": {"type": "string", "minLength": 1, "description": "Tool name, as search_tools returns it"},
        "args": {"type": "object", "description": "Arguments matching the tool's schema", "default": {}},
    },
}


def _json_body(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def openapi_document(gw: Gateway) -> dict[str, Any]:
    base = gw.settings.public_url.rstrip("/")
    integrations = sorted(m.name for m in gw.registry.manifests())
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Workbench REST",
            "version": "0.1.0",
            "description": (
                "Run Workbench tools over plain JSON, without MCP: the same engine and result shapes "
                "as execute_tools, with no JSON-RPC envelope and no result cap. compose and return "
                "are MCP-only and answered with 400. Authenticate with a Workbench API key."
            ),
        },
        "servers": [{"url": base}],
        "components": {
            "securitySchemes": {
                "apiKey": {"type": "http", "scheme": "bearer", "description": "A Workbench API key (wb_...)"}
            },
            "schemas": {
                "Error": _ERROR,
                "ExecutionResult": _EXECUTION_RESULT,
                "SingleRequest": {
                    "type": "object",
                    "required": ["tool"],
                    "additionalProperties": False,
                    "properties": _EXECUTION["properties"],
                },
                "BatchRequest": {
                    "type": "object",
                    "required": ["executions"],
                    "additionalProperties": False,
                    "properties": {
                        "executions": {"type": "array", "minItems": 1, "items": _EXECUTION},
                    },
                },
                "BatchResponse": {
                    "type": "object",
                    "required": ["results"],
                    "properties": {
                        "results": {
                            "type": "array",
                            "items": {"$ref": "#/components/schemas/ExecutionResult"},
                        }
                    },
                },
            },
        },
        "security": [{"apiKey": []}],
        "paths": {
            "/rest/{integration}": {
                "post": {
                    "operationId": "runTools",
                    "summary": "Run one tool, or a batch of tools, of one integration",
                    "parameters": [
                        {
                            "name": "integration",
                            "in": "path",
                            "required": True,
                            "description": "The integration every tool in the request belongs to",
                            "schema": {"type": "string", "enum": integrations},
                        }
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "oneOf": [
                                        {"$ref": "#/components/schemas/SingleRequest"},
                                        {"$ref": "#/components/schemas/BatchRequest"},
                                    ]
                                },
                                "examples": {
                                    "single": {"value": {"tool": "list_jots", "args": {}}},
                                    "batch": {"value": {"executions": [{"tool": "list_jots", "args": {}}]}},
                                },
                            }
                        },
                    },
                    "responses": {
                        "200": _json_body(
                            {
                                "anyOf": [
                                    {"$ref": "#/components/schemas/BatchResponse"},
                                    {"$ref": "#/components/schemas/ExecutionResult"},
                                ]
                            },
                            "The single execution's result object, or {results} for a batch "
                            "(index-aligned with executions). Tool failures are data, not HTTP errors.",
                        ),
                        "400": _json_body(
                            {"$ref": "#/components/schemas/Error"},
                            "Malformed JSON or body; compose/return; a tool of another integration",
                        ),
                        "401": {
                            **_json_body(
                                {"$ref": "#/components/schemas/Error"}, "Missing or invalid API key"
                            ),
                            "headers": {"WWW-Authenticate": {"schema": {"type": "string"}}},
                        },
                        "404": _json_body({"$ref": "#/components/schemas/Error"}, "Unknown integration"),
                        "413": _json_body({"$ref": "#/components/schemas/Error"}, "Body larger than 4 MiB"),
                    },
                }
            }
        },
    }

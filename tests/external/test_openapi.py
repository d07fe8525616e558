"""OpenAPI apps: real public documents from npm packages (package.json): the Swagger Petstore as
ReadMe ships it (@readme/oas-examples) and the Directus API (@directus/specs, 136 operations).
Each operation becomes a tool; calls go to a loopback API that records the exact request."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from workbench.composition import Gateway
from workbench.external.openapi import compile_document

from tests.external.conftest import Agent
from tests.external.servers import Upstreams
from tests.support.logs import events as log_events

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
PETSTORE = ROOT / "node_modules/@readme/oas-examples/3.0/json/petstore.json"
DIRECTUS = ROOT / "node_modules/@directus/specs/dist/openapi.json"


def load(path: Path) -> dict[str, Any]:
    if not path.exists():
        message = f"{path.relative_to(ROOT)} is missing: run `make setup-test` (npm ci)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    value = json.loads(path.read_text())
    assert isinstance(value, dict)
    return value


async def register_petstore(agent: Agent, ups: Upstreams, **extra: Any) -> dict[str, Any]:
    await agent.run("vault_set", name="PET_KEY", value="pet-key-5e3c")
    return await agent.run(
        "apps_register_openapi",
        name="petstore",
        document=load(PETSTORE),
        baseUrl=ups.base + "/api/petstore/v2",
        auth={"type": "header", "headerName": "api_key", "value": "{{vault:PET_KEY}}"},
        **extra,
    )


async def test_petstore_operations_become_tools_with_schemas_and_descriptions(
    agent: Agent, bob: Agent, ups: Upstreams, caplog: pytest.LogCaptureFixture
) -> None:
    out = (await register_petstore(agent, ups))["result"]
    assert out["kind"] == "openapi" and out["title"] == "Swagger Petstore"
    assert out["operations"] == 19
    # uploadFile takes only application/octet-stream: not a JSON or form body, so it is dropped.
    assert out["dropped"] == [
        {"operation": "uploadFile", "reason": "its requestBody has no JSON or form media type"}
    ]
    dropped = log_events(caplog.records, "openapi_operation_dropped")
    assert [line["operation"] for line in dropped] == ["uploadFile"]

    schema = (await agent.call("get_tool_schema", tool="petstore_getPetById"))["schema"]
    assert schema["required"] == ["petId"]
    assert schema["properties"]["petId"]["type"] == "integer"
    assert schema["properties"]["petId"]["description"] == "ID of pet to return"
    add = (await agent.call("get_tool_schema", tool="petstore_addPet"))["schema"]
    assert add["required"] == ["body"]
    pet = add["properties"]["body"]  # the Pet schema, its $refs inlined
    assert pet["required"] == ["name", "photoUrls"]
    assert pet["properties"]["category"]["properties"]["name"]["type"] == "string"

    hits = (await agent.call("search_tools", query="find pets by status", limit=50))["tools"]
    top = next(h for h in hits if h["name"] == "petstore_findPetsByStatus")
    assert top["integration"] == "petstore"
    assert top["description"].startswith("Finds Pets by status")
    assert "Multiple status values can be provided" in top["description"]  # summary + description
    # Searchable by its owner only.
    assert "petstore_findPetsByStatus" not in await bob.search("find pets by status")
    assert await bob.run("petstore_getPetById", petId=1) == {"error": "Tool not found"}


async def test_petstore_calls_build_the_exact_request(agent: Agent, ups: Upstreams) -> None:
    await register_petstore(agent, ups)
    got = (await agent.run("petstore_getPetById", petId=7))["result"]
    assert got["method"] == "GET" and got["path"] == "/api/petstore/v2/pet/7"
    assert ups.api.seen[-1].headers["api_key"] == "pet-key-5e3c"  # from the vault, per call

    got = (await agent.run("petstore_findPetsByStatus", status=["available", "sold"]))["result"]
    assert got["query"] == [["status", "available"], ["status", "sold"]]

    body = {"name": "doggie", "photoUrls": ["u"], "status": "available"}
    got = (await agent.run("petstore_addPet", body=body))["result"]
    assert got["method"] == "POST" and got["body"] == body
    assert ups.api.seen[-1].headers["content-type"] == "application/json"

    got = (await agent.run("petstore_updatePetWithForm", petId=3, body={"name": "rex"}))["result"]
    assert got["body"] == "name=rex"
    assert ups.api.seen[-1].headers["content-type"] == "application/x-www-form-urlencoded"

    # A path argument cannot leave its segment.
    got = (await agent.run("petstore_getPetById", petId="a/b?x=1"))["result"]
    assert got["path"] == "/api/petstore/v2/pet/a%2Fb%3Fx%3D1" and got["query"] == []
    # Nor name the parent path: `.` and `..`, literal or encoded, are refused before any request.
    calls = len(ups.api.seen)
    for dots in ("..", ".", "%2e%2e", "%2E.", "%252e%252e", "../../admin?x=1", "a/..", "..\\x"):
        assert await agent.run("petstore_getPetById", petId=dots) == {
            "error": "Invalid arguments for petstore_getPetById: "
            "'petId': '.' and '..' (or an encoding of them) cannot be used as a path segment"
        }, dots
    assert len(ups.api.seen) == calls
    assert (await agent.run("petstore_getPetById", petId="..."))["result"]["path"].endswith("/pet/...")

    # Missing required argument; upstream errors come back as tool errors.
    assert (await agent.run("petstore_getPetById")) == {
        "error": "Invalid arguments for petstore_getPetById: 'petId' is required"
    }
    assert await agent.run("petstore_getOrderById", orderId="missing") == {
        "error": 'petstore answered HTTP 404: {"message": "Pet not found"}'
    }
    # A secret the API echoes back is scrubbed.
    leaked = await agent.run("petstore_getUserByName", username="leak")
    assert "pet-key-5e3c" not in json.dumps(leaked) and "[REDACTED]" in leaked["error"]


async def test_large_real_world_spec_with_query_api_key(agent: Agent, ups: Upstreams) -> None:
    document = load(DIRECTUS)
    compiled = compile_document(document)
    assert len(compiled.operations) + len(compiled.dropped) == 136
    await agent.run("vault_set", name="DIRECTUS_TOKEN", value="dt-77aa")
    out = await agent.run("apps_register_openapi", name="directus", document=document)
    assert out == {"error": "baseUrl is required: the document names no server URL"}
    out = (
        await agent.run(
            "apps_register_openapi",
            name="directus",
            document=json.dumps(document),  # as JSON text, the way the portal posts it
            baseUrl=ups.base + "/api/directus",
            auth={"type": "query", "name": "access_token", "value": "{{vault:DIRECTUS_TOKEN}}"},
        )
    )["result"]
    assert out["operations"] == len(compiled.operations) >= 120
    hits = await agent.search("list activity actions", limit=10)
    assert "directus_getActivities" in hits
    got = (await agent.run("directus_getActivity", id=5, fields=["id", "action"]))["result"]
    assert got["path"] == "/api/directus/activity/5"
    assert ["access_token", "[REDACTED]"] in got["query"]  # the API echoed it: scrubbed in the result
    assert ("access_token", "dt-77aa") in ups.api.seen[-1].query

    # Only some operations, by operationId or tag.
    out = (
        await agent.run(
            "apps_register_openapi",
            name="directus",
            document=document,
            baseUrl=ups.base + "/api/directus",
            operations=["Activity", "getAsset"],
        )
    )["result"]
    assert out["operations"] == 3  # the Activity tag's two operations + getAsset


async def test_operator_openapi_app_for_everyone(tmp_path: Path, ups: Upstreams) -> None:
    from workbench.composition import build_gateway
    from workbench.settings import Settings

    from tests.support.demo_plugins import demo_registry
    from tests.support.gateways import principal_for

    load(PETSTORE)
    entry = {
        "name": "pets",
        "type": "openapi",
        "spec": str(PETSTORE),
        "url": ups.base + "/api/shared",
        "auth": {"type": "header", "headerName": "api_key", "envVar": "PETS_KEY"},
    }
    settings = Settings.from_env(
        {
            "WORKBENCH_STORE": "memory",
            "WORKBENCH_EXTERNAL_SERVERS": json.dumps([entry]),
            "PETS_KEY": "op-k",
            "WORKBENCH_EGRESS_ALLOW": "loopback",  # the test's server listens on loopback
        }
    )
    gw: Gateway = build_gateway(settings, registry=demo_registry())
    for email in ("ada@example.com", "bob@example.com"):
        agent = Agent(gw, principal_for(gw, email))
        assert "pets_getInventory" in await agent.search("returns pet inventories by status")
        got = (await agent.run("pets_getInventory"))["result"]
        assert got["path"] == "/api/shared/store/inventory"
        assert ups.api.seen[-1].headers["api_key"] == "op-k"
        listed = {i["name"]: i for i in (await agent.call("list_integrations"))["integrations"]}
        assert listed["pets"] == {"name": "pets", "version": "1.0.0", "connected": True}


async def test_bad_documents_are_refused_clearly(agent: Agent, ups: Upstreams) -> None:
    async def reg(document: Any) -> Any:
        return (await agent.run("apps_register_openapi", name="x", document=document, baseUrl=ups.base))[
            "error"
        ]

    assert "only OpenAPI 3.0 and 3.1" in await reg({"swagger": "2.0", "paths": {"/a": {}}})
    assert "neither valid JSON nor valid YAML" in await reg("{not json")
    yaml_doc = "openapi: 3.0.0\npaths:\n  /y:\n    get:\n      operationId: fromYaml\n"
    out = await agent.run("apps_register_openapi", name="y", document=yaml_doc, baseUrl=ups.base + "/api")
    assert out["result"]["operations"] == 1
    assert "no paths" in await reg({"openapi": "3.0.0", "info": {}, "paths": {}})
    ops = {"get": {"summary": "no id"}}
    assert "no usable operation" in await reg({"openapi": "3.1.0", "paths": {"/a": ops}})
    broken = {
        "openapi": "3.0.3",
        "paths": {
            "/a/{id}": {"get": {"operationId": "noParam"}},  # {id} defined by no parameter
            "/b": {
                "get": {"operationId": "badRef", "parameters": [{"$ref": "#/components/parameters/nope"}]}
            },
            "/c": {"get": {"operationId": "ok"}},
            "/d": {"post": {"operationId": "ok"}},
        },
    }
    out = (await agent.run("apps_register_openapi", name="x", document=broken, baseUrl=ups.base))["result"]
    assert out["operations"] == 1
    assert {d["operation"] for d in out["dropped"]} == {"noParam", "badRef", "ok"}


async def test_header_and_cookie_parameters(agent: Agent, ups: Upstreams) -> None:
    document = {
        "openapi": "3.0.3",
        "paths": {
            "/c": {
                "get": {
                    "operationId": "withContext",
                    "parameters": [
                        {"name": "session", "in": "cookie", "schema": {"type": "string"}},
                        {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                        {"name": "Authorization", "in": "header", "schema": {"type": "string"}},
                    ],
                }
            }
        },
    }
    out = await agent.run("apps_register_openapi", name="ctx", document=document, baseUrl=ups.base + "/api")
    schema = (await agent.call("get_tool_schema", tool="ctx_withContext"))["schema"]
    assert set(schema["properties"]) == {"session", "X-Trace"}  # Authorization is Workbench's to set
    assert out["result"]["operations"] == 1
    await agent.run("ctx_withContext", session="a b;c", **{"X-Trace": "t-1"})
    seen = ups.api.seen[-1].headers
    assert seen["cookie"] == "session=a%20b%3Bc" and seen["x-trace"] == "t-1"
    bad = await agent.run("ctx_withContext", **{"X-Trace": "t\r\nX-Evil: 1"})
    assert bad == {"error": "Invalid arguments for ctx_withContext: 'X-Trace' may not contain line breaks"}

"""Client setup: ready-to-paste snippets for the MCP clients people use, each filled with this
gateway's real URL, with an API-key variant and an OAuth variant that needs no key.

  GET /portal/connect-client    every client's setup, a key field that fills the snippets, and a
                                "test connection" button (tools/list with the key, from the page)

The API key page shows the same snippets, filled with a key it has just minted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from workbench.web.client_names import WRITABLE_CLIENTS
from workbench.web.html import copy_block, e, html_page
from workbench.web.local_signin import is_loopback_host

if TYPE_CHECKING:
    from workbench.stores import User
    from workbench.web.context import WebContext

__all__ = ["KEY_PLACEHOLDER", "ClientSnippet", "client_setup_routes", "client_snippets", "setup_section"]

KEY_PLACEHOLDER = "wb_YOUR_API_KEY"
_KEY = "@@WORKBENCH_KEY@@"  # where the key goes (unchanged by JSON and HTML escaping)
CALLBACK_PORT = 33418  # the OAuth examples' local redirect listener


@dataclass(frozen=True, slots=True)
class ClientSnippet:
    slug: str
    name: str
    where: str  # where the snippet goes (a file, a terminal)
    with_key: str  # text with _KEY where the API key goes
    oauth: str  # the same client signing in with OAuth: no key at all
    oauth_note: str


def _json(value: object) -> str:
    return json.dumps(value, indent=2)


def client_snippets(mcp_url: str) -> list[ClientSnippet]:
    base = mcp_url.removesuffix("/mcp")
    remote = ["-y", "mcp-remote", mcp_url]
    if urlsplit(mcp_url).scheme == "http" and not is_loopback_host(urlsplit(mcp_url).netloc):
        remote.append("--allow-http")
    redirect = f"http://127.0.0.1:{CALLBACK_PORT}/callback"
    return [
        ClientSnippet(
            "claude-code",
            "Claude Code",
            "Run in a terminal",
            f'claude mcp add --transport http workbench {mcp_url} \\\n  --header "Authorization: Bearer {_KEY}"',
            f"claude mcp add --transport http workbench {mcp_url}\n"
            "# then, in Claude Code: /mcp → workbench → Authenticate",
            "Claude Code opens the browser; sign in to Workbench and allow it.",
        ),
        ClientSnippet(
            "claude-desktop",
            "Claude Desktop",
            "claude_desktop_config.json (Settings → Developer → Edit Config)",
            _json(
                {
                    "mcpServers": {
                        "workbench": {
                            "command": "npx",
                            "args": [*remote, "--header", "Authorization:${WORKBENCH_AUTH}"],
                            "env": {"WORKBENCH_AUTH": f"Bearer {_KEY}"},
                        }
                    }
                }
            ),
            _json({"mcpServers": {"workbench": {"command": "npx", "args": remote}}}),
            "mcp-remote opens the browser on first use; sign in to Workbench and allow it.",
        ),
        ClientSnippet(
            "cursor",
            "Cursor",
            "~/.cursor/mcp.json (or .cursor/mcp.json in a project)",
            _json(
                {
                    "mcpServers": {
                        "workbench": {"url": mcp_url, "headers": {"Authorization": f"Bearer {_KEY}"}}
                    }
                }
            ),
            _json({"mcpServers": {"workbench": {"url": mcp_url}}}),
            "Cursor shows “Needs login” for the server; click it, sign in to Workbench and allow it.",
        ),
        ClientSnippet(
            "vscode",
            "VS Code",
            "mcp.json (Command Palette → MCP: Open User Configuration)",
            _json(
                {
                    "servers": {
                        "workbench": {
                            "type": "http",
                            "url": mcp_url,
                            "headers": {"Authorization": f"Bearer {_KEY}"},
                        }
                    }
                }
            ),
            _json({"servers": {"workbench": {"type": "http", "url": mcp_url}}}),
            "VS Code asks to sign in when the server starts; sign in to Workbench and allow it.",
        ),
        ClientSnippet(
            "python",
            "Python SDK",
            "pip install 'mcp>=2' (the 2.x SDK), save as workbench_client.py, run: python workbench_client.py",
            _PYTHON_KEY.replace("@URL@", mcp_url),
            _PYTHON_OAUTH.replace("@URL@", mcp_url).replace("@PORT@", str(CALLBACK_PORT)),
            "Prints a sign-in link; after you allow it, the browser returns to the script's local port.",
        ),
        ClientSnippet(
            "typescript",
            "TypeScript / JavaScript SDK",
            "npm install @modelcontextprotocol/sdk, save as workbench.mjs, run: node workbench.mjs",
            _TS_KEY.replace("@URL@", mcp_url),
            _TS_OAUTH.replace("@URL@", mcp_url).replace("@PORT@", str(CALLBACK_PORT)),
            "Prints a sign-in link; after you allow it, the browser returns to the script's local port.",
        ),
        ClientSnippet(
            "curl",
            "curl",
            "Run in a terminal",
            f"curl -sS {mcp_url} \\\n"
            f'  -H "Authorization: Bearer {_KEY}" \\\n'
            '  -H "Content-Type: application/json" \\\n'
            '  -H "Accept: application/json, text/event-stream" \\\n'
            '  -H "MCP-Protocol-Version: 2025-06-18" \\\n'
            """  -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'""",
            _CURL_OAUTH.replace("@BASE@", base).replace("@REDIRECT@", redirect),
            "The OAuth flow by hand: register, sign in and allow in the browser, exchange the code.",
        ),
    ]


def _with_key(text: str, key: str | None) -> str:
    """Escape the snippet, then put the key (or a slot the page script refills) where it goes."""
    slot = e(key) if key else f'<span class="key-slot">{KEY_PLACEHOLDER}</span>'
    return e(text).replace(_KEY, slot)


def setup_section(mcp_url: str, key: str | None, *, heading: str = "Connect a client") -> str:
    """Every client's snippets (filled with `key` when given), and the test-connection form."""
    blocks = []
    for i, snip in enumerate(client_snippets(mcp_url)):
        blocks.append(
            f'<details class="client" id="client-{snip.slug}"{" open" if i == 0 else ""}>'
            f"<summary>{e(snip.name)}</summary>"
            f'<p class="help">{e(snip.where)}</p>'
            + copy_block(
                f"snippet-{snip.slug}-key", _with_key(snip.with_key, key), f"{snip.name}: with an API key"
            )
            + copy_block(f"snippet-{snip.slug}-oauth", e(snip.oauth), f"{snip.name}: with OAuth (no key)")
            + f'<p class="help">{e(snip.oauth_note)}</p>'
            + (
                f'<p class="help">Or let Workbench write the file: <code>workbench client add {snip.slug}'
                "</code> (OAuth; add <code>--key wb_…</code> for a key, <code>--print</code> to only show it)."
                "</p>"
                if snip.slug in WRITABLE_CLIENTS
                else ""
            )
            + "</details>"
        )
    key_field = (
        f'<input id="test-key" name="key" type="hidden" value="{e(key)}">'
        if key
        else (
            '<label for="test-key">API key to test</label>'
            '<input id="test-key" name="key" type="password" autocomplete="off" placeholder="wb_…">'
        )
    )
    test = (
        '<form id="test-connection" class="snippet-block" aria-label="Test the connection">'
        + key_field
        + '<p class="actions"><button type="submit">Test connection</button>'
        '<span class="help">Runs <code>tools/list</code> on this gateway with the key.</span></p>'
        '<p id="test-result" role="status" aria-live="polite"></p></form>'
    )
    fill = (
        ""
        if key
        else (
            '<label for="snippet-key">Your API key (optional: fills the snippets below; it stays in this page)</label>'
            '<input id="snippet-key" type="password" autocomplete="off" placeholder="wb_…">'
            '<p class="help">No key? Every client also has an OAuth variant: it signs in through this portal, '
            'no key needed. <a href="/portal/api-keys">Create a key</a>.</p>'
        )
    )
    return (
        f'<section class="card" aria-labelledby="setup-heading"><h2 id="setup-heading">{e(heading)}</h2>'
        f"<p>MCP endpoint: <code>{e(mcp_url)}</code></p>"
        + fill
        + "".join(blocks)
        + test
        + '<noscript><p class="help">Copy buttons and the connection test need JavaScript; '
        "the snippets can be selected and copied by hand.</p></noscript></section>"
    )


def client_setup_routes(web: WebContext) -> list[BaseRoute]:
    def page(request: Request, user: User) -> Response:
        body = setup_section(web.gw.settings.mcp_url, None)
        return html_page(
            "Connect a client", body, email=user.email, csrf=web.csrf(request), active="connect-client"
        )

    return [Route("/portal/connect-client", web.page(page), methods=["GET"])]


_PYTHON_KEY = """import asyncio

import httpx2  # installed with mcp
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

URL = "@URL@"
KEY = "@@WORKBENCH_KEY@@"


async def main() -> None:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {KEY}"}, timeout=60) as http:
        async with Client(streamable_http_client(URL, http_client=http)) as client:
            tools = await client.list_tools()
            print([tool.name for tool in tools.tools])
            me = await client.call_tool("whoami", {})
            print(me.content[0].text)


asyncio.run(main())"""

_PYTHON_OAUTH = """import asyncio
import webbrowser
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlsplit

import httpx2  # installed with mcp
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

URL = "@URL@"
PORT = @PORT@  # any free port on this machine: change it if @PORT@ is taken
REDIRECT = f"http://127.0.0.1:{PORT}/callback"
returned: dict[str, str] = {}


class Memory:  # this run's client registration and tokens (keep them in a file to reuse)
    tokens = client = None

    async def get_tokens(self): return self.tokens
    async def set_tokens(self, tokens): self.tokens = tokens
    async def get_client_info(self): return self.client
    async def set_client_info(self, info): self.client = info


class Callback(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        returned.update({k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()})
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"Signed in. You can close this tab.")

    def log_message(self, *args: object) -> None:
        pass


async def sign_in(url: str) -> None:
    print("Sign in and allow access:", url, flush=True)
    webbrowser.open(url)


async def code() -> AuthorizationCodeResult:
    server = HTTPServer(("127.0.0.1", PORT), Callback)
    await asyncio.to_thread(server.handle_request)
    server.server_close()
    return AuthorizationCodeResult(code=returned["code"], state=returned.get("state"), iss=returned.get("iss"))


async def main() -> None:
    auth = OAuthClientProvider(
        server_url=URL,
        client_metadata=OAuthClientMetadata(
            client_name="My Python agent",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=Memory(),
        redirect_handler=sign_in,
        callback_handler=code,
    )
    async with httpx2.AsyncClient(auth=auth, timeout=60) as http:
        async with Client(streamable_http_client(URL, http_client=http)) as client:
            tools = await client.list_tools()
            print([tool.name for tool in tools.tools])


asyncio.run(main())"""

_TS_KEY = """import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const transport = new StreamableHTTPClientTransport(new URL("@URL@"), {
  requestInit: { headers: { Authorization: "Bearer @@WORKBENCH_KEY@@" } },
});
const client = new Client({ name: "my-agent", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
console.log(tools.map((tool) => tool.name).join(", "));
const me = await client.callTool({ name: "whoami", arguments: {} });
console.log(me.content[0].text);
await client.close();"""

_TS_OAUTH = """import http from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const url = new URL("@URL@");
const port = @PORT@; // any free port on this machine: change it if @PORT@ is taken
const redirectUrl = `http://127.0.0.1:${port}/callback`;
const saved = {}; // this run's client registration and tokens (keep them in a file to reuse)
const authProvider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return {
      client_name: "My agent",
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  },
  clientInformation: () => saved.client,
  saveClientInformation: (info) => { saved.client = info; },
  tokens: () => saved.tokens,
  saveTokens: (tokens) => { saved.tokens = tokens; },
  codeVerifier: () => saved.verifier,
  saveCodeVerifier: (verifier) => { saved.verifier = verifier; },
  redirectToAuthorization: (link) => console.log(`Sign in and allow access: ${link}`),
};

// The browser comes back to redirectUrl with ?code=… once you allow access.
const nextCode = () => new Promise((resolve) => {
  const server = http.createServer((req, res) => {
    res.end("Signed in. You can close this tab.");
    server.close();
    resolve(new URL(req.url, redirectUrl).searchParams.get("code"));
  }).listen(port, "127.0.0.1");
});

async function connect() {
  const transport = new StreamableHTTPClientTransport(url, { authProvider });
  const client = new Client({ name: "my-agent", version: "1.0.0" });
  try {
    await client.connect(transport);
    return client;
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
    await transport.finishAuth(await nextCode());
    return connect();
  }
}

const client = await connect();
const { tools } = await client.listTools();
console.log(tools.map((tool) => tool.name).join(", "));
await client.close();"""

_CURL_OAUTH = """BASE=@BASE@
REDIRECT=@REDIRECT@
# 1. Register a client (dynamic client registration)
CLIENT_ID=$(curl -sS "$BASE/register" -H "Content-Type: application/json" \\
  -d '{"client_name":"curl","redirect_uris":["'"$REDIRECT"'"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"]}' \\
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["client_id"])')
# 2. PKCE (S256), then sign in and allow in the browser
VERIFIER=$(openssl rand -hex 32)
CHALLENGE=$(printf %s "$VERIFIER" | openssl dgst -sha256 -binary | openssl base64 | tr '+/' '-_' | tr -d '=')
echo "Open: $BASE/authorize?response_type=code&client_id=$CLIENT_ID&redirect_uri=$REDIRECT&state=s1&code_challenge=$CHALLENGE&code_challenge_method=S256&resource=$BASE/mcp"
read -rp "Paste the code= value from the address the browser lands on: " CODE
# 3. Exchange the code, then call /mcp with the access token
TOKEN=$(curl -sS "$BASE/token" -d grant_type=authorization_code -d "code=$CODE" -d "client_id=$CLIENT_ID" \\
  -d "redirect_uri=$REDIRECT" -d "code_verifier=$VERIFIER" -d "resource=$BASE/mcp" \\
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
curl -sS "$BASE/mcp" -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" \\
  -H "Accept: application/json, text/event-stream" -H "MCP-Protocol-Version: 2025-06-18" \\
  -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'"""

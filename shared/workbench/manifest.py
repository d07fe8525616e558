"""What an integration declares: its `Manifest`, how it authenticates (`NoAuth`, `ApiKeyAuth`,
`OAuth2Auth`, `CookieAuth`), the probe that proves a credential works, and the hints its tools'
annotations start from. Plain dataclasses, no pydantic models: a cold start pays for the manifests
alone. Plugin authors import these from `workbench.tools`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from workbench.annotations import Hint, hints_for

__all__ = [
    "ApiKeyAuth",
    "ApiKeyField",
    "AuthSpec",
    "CookieAuth",
    "LoginHosts",
    "Manifest",
    "NoAuth",
    "OAuth2Auth",
    "Probe",
    "TokenRejected",
]


@dataclass(frozen=True, slots=True)
class NoAuth:
    type: Literal["none"] = "none"


@dataclass(frozen=True, slots=True)
class ApiKeyField:
    name: str
    label: str
    secret: bool = True
    help: str = ""
    # When the value decides where Workbench sends requests: the URL it makes, with `{}` for the
    # value ("{}" for a whole URL, "https://{}.zendesk.com/" for a subdomain). The portal refuses
    # a value whose URL the egress policy refuses, and stores nothing.
    url: str = ""


@dataclass(frozen=True, slots=True)
class ApiKeyAuth:
    """Fields the portal asks for; `header`/`scheme` say how the key is injected upstream."""

    fields: tuple[ApiKeyField, ...]
    header: str = "Authorization"
    scheme: str = "Bearer"  # "" means the raw value; "Basic" means base64(field0:field1)
    type: Literal["api_key"] = "api_key"


@dataclass(frozen=True, slots=True)
class TokenRejected:
    """An upstream answer meaning "this access token is no longer valid": the engine refreshes the
    token once (single-flight across instances) and retries the request once. `body_contains`, when
    set, must also appear in the body (Salesforce: 401 with INVALID_SESSION_ID)."""

    status: int = 401
    body_contains: str = ""


@dataclass(frozen=True, slots=True)
class LoginHosts:
    """A sign-in host the person chooses per connection (Salesforce: production, sandbox, My Domain).

    `authorize_url` and `token_url` carry `{login_host}`; the chosen host is kept with the stored
    credential so refreshes go back to it. A typed host must end with one of `custom_suffixes`,
    because the client secret is sent to it."""

    choices: tuple[tuple[str, str], ...]  # (label, host); the first is the default
    custom_suffixes: tuple[str, ...] = ()
    custom_label: str = ""
    custom_help: str = ""


@dataclass(frozen=True, slots=True)
class OAuth2Auth:
    authorize_url: str
    token_url: str
    scopes: tuple[str, ...] = ()
    scope_separator: str = " "
    extra_authorize_params: tuple[tuple[str, str], ...] = ()
    # Extra token-response fields stored with the credential (e.g. Salesforce's `instance_url`,
    # the org's API host, which tools read back with `ctx.credential()`).
    token_fields: tuple[str, ...] = ()
    # How the token endpoint takes the client secret: in the request body, or as HTTP Basic
    # (RFC 6749 §2.3.1), which some providers (Notion, Airtable) require.
    token_auth: Literal["client_secret_post", "client_secret_basic"] = "client_secret_post"
    # The token request's body: form-encoded (RFC 6749) or JSON (Notion), and extra headers it needs.
    token_body: Literal["form", "json"] = "form"
    token_headers: tuple[tuple[str, str], ...] = ()
    # PKCE (S256) on the authorize URL and the code exchange. Off only for a provider whose token
    # endpoint refuses the verifier it does not know (Notion validates its JSON body).
    pkce: bool = True
    # Answers that mean the access token is no longer valid (refresh once, retry once). A 401 is the
    # RFC 6750 answer; providers with their own shape declare it.
    token_rejected: tuple[TokenRejected, ...] = (TokenRejected(401),)
    # A token for the person themselves next to the app's token, in the same flow (Slack:
    # `user_scope=` on the authorize URL, the user token under `authed_user` in the token response).
    user_scopes: tuple[str, ...] = ()
    user_scope_param: str = "user_scope"
    user_token_field: str = "authed_user"
    # Per-connection sign-in host (Salesforce); None: the URLs above are used as they are.
    login_hosts: LoginHosts | None = None
    # A field of the token response that is the API's base URL for this connection (Salesforce's
    # `instance_url`); it must be https. Empty: the manifest's base_url.
    base_url_field: str = ""
    type: Literal["oauth2"] = "oauth2"


@dataclass(frozen=True, slots=True)
class CookieAuth:
    login_url: str
    cookie_domain: str
    # Cookie names whose presence (unexpired) means the session is live.
    session_cookies: tuple[str, ...] = ()
    type: Literal["cookie"] = "cookie"


AuthSpec = NoAuth | ApiKeyAuth | OAuth2Auth | CookieAuth


@dataclass(frozen=True, slots=True)
class Probe:
    """How connecting checks a credential before storing it: one cheap authenticated request.

    `path` is sent with the credential injected, relative to the API base (an absolute https URL
    also works), with `headers` and, when given, the raw JSON body `json`; a 2xx answer passes
    (and, with `ok_field`, only if that JSON field is true: Slack answers errors with 200). A
    provider that checks a token given as a query parameter names it in `token_param`.

    A plugin whose requests need code of its own (a host per account, a login step) names an
    `async def probe(ctx: ToolContext) -> None` as "package.module:function" in `function`
    instead; raising fails the check.
    """

    method: str = "GET"
    path: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    json: str = ""
    ok_field: str = ""
    token_param: str = ""
    function: str = ""


@dataclass(frozen=True, slots=True)
class Manifest:
    name: str
    version: str
    display_name: str
    auth: AuthSpec
    base_url: str = ""
    tool_prefix: str = ""
    curl_proxy: bool = False
    # Hosts the curl proxy may reach for this integration (base_url's host is always allowed).
    allowed_hosts: tuple[str, ...] = ()
    tools_module: str = ""
    description: str = ""
    # Search keywords: what users call the whole integration besides its name ("crm", "helpdesk");
    # search_tools indexes them with every tool's own keywords.
    keywords: tuple[str, ...] = ()
    builtin: bool = False
    # A cheap request that proves a credential works, made before anything is stored.
    probe: Probe | None = None
    # The tool names, when the integration declares them up front (the built-ins, which have no
    # prefix): a lookup then imports the tools module only for one of these names.
    tool_names: frozenset[str] | None = None
    # Where a tool's name says less than the truth about what it does (workbench.annotations):
    # (tool name, Hint) pairs; every other tool's annotations come from its name's verb.
    tool_hints: tuple[tuple[str, Hint], ...] = ()

    def annotations(self, tool_name: str) -> dict[str, Any]:
        """The tool's MCP annotations (title and the four hints); needs no tools module."""
        declared = next((h for n, h in self.tool_hints if n == tool_name), None)
        return hints_for(
            tool_name,
            prefix=self.prefix,
            integration=self.name,
            display_name=self.display_name,
            declared=declared,
        )

    @property
    def prefix(self) -> str:
        return self.tool_prefix or self.name.replace("-", "_") + "_"

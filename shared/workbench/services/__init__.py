"""The application services: what the surfaces (mcp, rest, web, oauth, proxy, the built-in tools,
the runtime and CLI) call. The rules — the auth cache and revocation, audit, leases, ownership —
live here and in the engine below; the stores sit below the services and no surface reads one.

- `auth.AuthService`: bearer tokens, users, API keys, one-time sign-in states.
- `runs.RunService`: executing tools (plain and composed), audit events, the activity log.
- `catalog.CatalogService`: search, tool schemas, the integration list with connection status.
- `connections.ConnectionService`: the connect flow, connection records, credential checks.
- `curl.CurlSessions`: minting curl_session tokens and checking the credential behind one.
- `jots.JotService`: a user's jots and their share links.

Custom apps are `workbench.external.ExternalServers`, built the same way by the composition root.
Each service is built by `workbench.composition` on first use; this package imports nothing.
"""

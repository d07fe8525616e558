from workbench.tools import Manifest, OAuth2Auth, Probe, TokenRejected

manifest = Manifest(
    name="slack",
    version="1.0.0",
    display_name="Slack",
    description="Send and read Slack messages, channels, threads, reactions and users.",
    keywords=("chat", "messaging", "team chat"),
    # Slack OAuth v2 (bot token, plus a user token for search). Scopes are comma-separated on the
    # authorize URL.
    auth=OAuth2Auth(
        authorize_url="https://slack.com/oauth/v2/authorize",
        token_url="https://slack.com/api/oauth.v2.access",
        scopes=(
            "chat:write",
            "chat:write.public",
            "channels:read",
            "groups:read",
            "im:read",
            "mpim:read",
            "channels:history",
            "groups:history",
            "im:history",
            "mpim:history",
            "channels:join",
            "channels:manage",
            "groups:write",
            "reactions:write",
            "users:read",
            "users:read.email",
            "im:write",
            "mpim:write",
            "files:write",
        ),
        scope_separator=",",
        # A user token next to the bot token, in the same consent: search.messages only takes a
        # user token. Slack returns it under `authed_user`; tools ask for it with kind="user".
        user_scopes=("search:read",),
        # Slack answers a dead or expired token with 200 {"ok": false, "error": ...}.
        token_rejected=(
            TokenRejected(200, '"error":"token_expired"'),
            TokenRejected(200, '"error":"token_revoked"'),
            TokenRejected(200, '"error":"invalid_auth"'),
            TokenRejected(401),
        ),
    ),
    base_url="https://slack.com/api",
    tool_prefix="slack_",
    # slack_upload_file sends the bytes to the upload URL Slack hands out, on this host.
    allowed_hosts=("files.slack.com",),
    curl_proxy=True,
    probe=Probe("GET", "/auth.test", ok_field="ok"),
)

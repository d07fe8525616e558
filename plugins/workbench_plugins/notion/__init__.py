from workbench.tools import Manifest, OAuth2Auth, Probe

manifest = Manifest(
    name="notion",
    version="1.0.0",
    display_name="Notion",
    description="Pages, databases, blocks, comments and users in a Notion workspace.",
    keywords=("wiki", "docs", "knowledge base"),
    # Notion's public integrations: no scopes (access = the pages the user shares at consent);
    # `owner=user` is required on the authorize URL. The token endpoint takes HTTP Basic client
    # auth, a JSON body of documented fields only (no PKCE verifier: Notion has no PKCE) and the
    # Notion-Version header; refresh tokens rotate.
    auth=OAuth2Auth(
        authorize_url="https://api.notion.com/v1/oauth/authorize",
        token_url="https://api.notion.com/v1/oauth/token",
        scopes=(),
        extra_authorize_params=(("owner", "user"),),
        token_auth="client_secret_basic",
        token_body="json",
        token_headers=(("Notion-Version", "2025-09-03"),),
        pkce=False,
    ),
    base_url="https://api.notion.com",
    tool_prefix="notion_",
    curl_proxy=True,
    probe=Probe("GET", "/v1/users/me", headers=(("Notion-Version", "2025-09-03"),)),
)

from workbench.registry import Manifest, OAuth2Auth

manifest = Manifest(
    name="notion",
    version="1.0.0",
    display_name="Notion",
    description="Pages, databases, blocks, comments and users in a Notion workspace.",
    # Notion's public integrations: no scopes (access = the pages the user shares at consent);
    # `owner=user` is required on the authorize URL; the token endpoint takes HTTP Basic client auth.
    auth=OAuth2Auth(
        authorize_url="https://api.notion.com/v1/oauth/authorize",
        token_url="https://api.notion.com/v1/oauth/token",
        scopes=(),
        extra_authorize_params=(("owner", "user"),),
        token_auth="client_secret_basic",
    ),
    base_url="https://api.notion.com",
    tool_prefix="notion_",
    curl_proxy=True,
)

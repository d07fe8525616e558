from workbench.registry import Manifest, OAuth2Auth

manifest = Manifest(
    name="salesforce",
    version="1.0.0",
    display_name="Salesforce",
    description="Salesforce records (SOQL queries, search, CRUD), object metadata and reports.",
    # Each org has its own API host: the token response's `instance_url` (kept with the stored
    # credential via `token_fields`, on connect and on every refresh) is where every tool sends
    # its requests, so there is no fixed base URL and no curl proxy.
    auth=OAuth2Auth(
        authorize_url="https://login.salesforce.com/services/oauth2/authorize",
        token_url="https://login.salesforce.com/services/oauth2/token",
        scopes=("api", "refresh_token"),
        token_fields=("instance_url",),
    ),
    base_url="",
    tool_prefix="salesforce_",
    curl_proxy=False,
)

from workbench.tools import Manifest, OAuth2Auth, Probe

manifest = Manifest(
    name="airtable",
    version="1.0.0",
    display_name="Airtable",
    description="Airtable bases, tables, records and record comments.",
    keywords=("database", "tables"),
    # Airtable's OAuth requires PKCE (S256), and HTTP Basic client auth at the token endpoint.
    auth=OAuth2Auth(
        authorize_url="https://airtable.com/oauth2/v1/authorize",
        token_url="https://airtable.com/oauth2/v1/token",
        scopes=(
            "data.records:read",
            "data.records:write",
            "data.recordComments:read",
            "data.recordComments:write",
            "schema.bases:read",
            "schema.bases:write",
        ),
        token_auth="client_secret_basic",
    ),
    base_url="https://api.airtable.com",
    tool_prefix="airtable_",
    curl_proxy=True,
    probe=Probe("GET", "/v0/meta/whoami"),
)

from workbench.tools import ApiKeyAuth, ApiKeyField, Manifest, Probe

manifest = Manifest(
    name="zendesk",
    version="1.0.0",
    display_name="Zendesk",
    description="Zendesk Support: tickets, comments, users, organizations and groups.",
    keywords=("helpdesk", "help desk", "support", "customer service"),
    # Zendesk API tokens use HTTP Basic with the username "{email}/token" on the account's own host
    # (https://{subdomain}.zendesk.com). The tools build that header and URL from the stored fields
    # per request, so there is no fixed base URL and no curl proxy.
    auth=ApiKeyAuth(
        fields=(
            ApiKeyField(
                "email", "Agent email address", secret=False, help="The email you sign in to Zendesk with."
            ),
            ApiKeyField(
                "api_token",
                "API token",
                help="Admin Center → Apps and integrations → APIs → Zendesk API → Add API token.",
            ),
            ApiKeyField(
                "subdomain",
                "Zendesk subdomain",
                secret=False,
                help="The 'acme' in https://acme.zendesk.com.",
                url="https://{}.zendesk.com/",
            ),
        ),
        header="Authorization",
        scheme="Basic",
    ),
    base_url="",
    tool_prefix="zendesk_",
    curl_proxy=False,
    probe=Probe(function="workbench_plugins.zendesk.tools:probe"),
)

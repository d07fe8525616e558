from workbench.tools import Manifest, OAuth2Auth, Probe

# Same Atlassian 3LO gateway as Jira: calls go to /ex/confluence/{cloudId}/wiki/... (see
# workbench_plugins.atlassian_jira.cloud for how the site is chosen).
manifest = Manifest(
    name="atlassian-confluence",
    version="1.0.0",
    display_name="Confluence",
    description="Spaces, pages, comments, attachments and CQL search in Confluence Cloud.",
    keywords=("wiki", "knowledge base", "documentation"),
    auth=OAuth2Auth(
        authorize_url="https://auth.atlassian.com/authorize",
        token_url="https://auth.atlassian.com/oauth/token",
        scopes=(
            "read:space:confluence",
            "read:page:confluence",
            "write:page:confluence",
            "delete:page:confluence",
            "read:comment:confluence",
            "write:comment:confluence",
            "read:attachment:confluence",
            "read:content-details:confluence",
            "search:confluence",
            "offline_access",
        ),
        extra_authorize_params=(("audience", "api.atlassian.com"), ("prompt", "consent")),
    ),
    base_url="https://api.atlassian.com",
    tool_prefix="confluence_",
    curl_proxy=True,
    probe=Probe("GET", "/oauth/token/accessible-resources"),
)

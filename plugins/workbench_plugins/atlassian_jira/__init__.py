from workbench.engine.registry import Manifest, OAuth2Auth, Probe

# Atlassian Cloud OAuth 2.0 (3LO): every call goes through the api.atlassian.com gateway, to
# /ex/jira/{cloudId}/... for the site chosen by `cloudId` (or discovered; see cloud.py).
manifest = Manifest(
    name="atlassian-jira",
    version="1.0.0",
    display_name="Jira",
    description="Issues, projects, comments and workflow transitions in Jira Cloud.",
    keywords=("tracker", "bug tracker", "agile"),
    auth=OAuth2Auth(
        authorize_url="https://auth.atlassian.com/authorize",
        token_url="https://auth.atlassian.com/oauth/token",
        scopes=("read:jira-work", "write:jira-work", "read:jira-user", "offline_access"),
        extra_authorize_params=(("audience", "api.atlassian.com"), ("prompt", "consent")),
    ),
    base_url="https://api.atlassian.com",
    tool_prefix="jira_",
    curl_proxy=True,
    probe=Probe("GET", "/oauth/token/accessible-resources"),
)

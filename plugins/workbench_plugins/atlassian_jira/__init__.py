from workbench.tools import Manifest, OAuth2Auth, Probe

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
        # Classic scopes for the platform API (/rest/api/3); the Jira Software API (/rest/agile/1.0:
        # boards, sprints) accepts granular scopes only, so those are requested too.
        scopes=(
            "read:jira-work",
            "write:jira-work",
            "read:jira-user",
            "offline_access",
            "read:board-scope:jira-software",
            "read:project:jira",
            "read:sprint:jira-software",
            "write:sprint:jira-software",
            "read:issue-details:jira",
            "read:jql:jira",
        ),
        extra_authorize_params=(("audience", "api.atlassian.com"), ("prompt", "consent")),
    ),
    base_url="https://api.atlassian.com",
    tool_prefix="jira_",
    curl_proxy=True,
    probe=Probe("GET", "/oauth/token/accessible-resources"),
)

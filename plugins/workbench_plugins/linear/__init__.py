from workbench.tools import Manifest, OAuth2Auth, Probe

manifest = Manifest(
    name="linear",
    version="1.0.0",
    display_name="Linear",
    description="Linear issues, comments, teams, projects, workflow states, labels and users (GraphQL API).",
    keywords=("tracker", "bug tracker"),
    auth=OAuth2Auth(
        authorize_url="https://linear.app/oauth/authorize",
        token_url="https://api.linear.app/oauth/token",
        scopes=("read", "write"),
        scope_separator=",",  # Linear takes a comma-separated scope list
    ),
    base_url="https://api.linear.app",
    tool_prefix="linear_",
    curl_proxy=True,
    probe=Probe("POST", "/graphql", json='{"query": "{ viewer { id } }"}'),
)

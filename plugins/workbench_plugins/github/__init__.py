from workbench.tools import Hint, Manifest, OAuth2Auth, Probe

manifest = Manifest(
    name="github",
    version="1.0.0",
    display_name="GitHub",
    description="Repositories, pull requests, issues and code on GitHub.",
    keywords=("git", "source control"),
    auth=OAuth2Auth(
        authorize_url="https://github.com/login/oauth/authorize",
        token_url="https://github.com/login/oauth/access_token",
        scopes=("repo", "workflow", "read:user", "read:org"),
    ),
    base_url="https://api.github.com",
    tool_prefix="github_",
    curl_proxy=True,
    probe=Probe("GET", "/user"),
    # Creating or updating a file overwrites the file that is there.
    tool_hints=(("github_create_or_update_file", Hint(destructive=True, idempotent=True)),),
)

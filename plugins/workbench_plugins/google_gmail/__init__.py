from workbench.tools import Manifest, OAuth2Auth, Probe

manifest = Manifest(
    name="google-gmail",
    version="1.0.0",
    display_name="Gmail",
    description="Search, read, send and label email in Gmail.",
    keywords=("email", "mail", "inbox", "mailbox"),
    # Google OAuth 2.0 web-server flow; access_type=offline + prompt=consent yield a refresh token.
    auth=OAuth2Auth(
        authorize_url="https://accounts.google.com/o/oauth2/v2/auth",
        token_url="https://oauth2.googleapis.com/token",
        scopes=("https://www.googleapis.com/auth/gmail.modify",),
        extra_authorize_params=(("access_type", "offline"), ("prompt", "consent")),
    ),
    base_url="https://gmail.googleapis.com",
    tool_prefix="gmail_",
    curl_proxy=True,
    probe=Probe("GET", "/gmail/v1/users/me/profile"),
)

from workbench.tools import Manifest, OAuth2Auth, Probe

manifest = Manifest(
    name="google-drive",
    version="1.0.0",
    display_name="Google Drive",
    description="Find, read, upload, organise and share files in Google Drive.",
    keywords=("gdrive", "files", "documents", "cloud storage"),
    # Google OAuth 2.0 web-server flow; access_type=offline + prompt=consent yield a refresh token.
    auth=OAuth2Auth(
        authorize_url="https://accounts.google.com/o/oauth2/v2/auth",
        token_url="https://oauth2.googleapis.com/token",
        scopes=("https://www.googleapis.com/auth/drive",),
        extra_authorize_params=(("access_type", "offline"), ("prompt", "consent")),
    ),
    # Metadata calls go to /drive/v3 and content uploads to /upload/drive/v3 on the same host, so
    # no extra allowed_hosts are needed for the curl proxy.
    base_url="https://www.googleapis.com",
    tool_prefix="google_drive_",
    curl_proxy=True,
    probe=Probe("GET", "/drive/v3/about?fields=user"),
)

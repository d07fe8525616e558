from workbench.tools import Manifest, OAuth2Auth, Probe

manifest = Manifest(
    name="google-sheets",
    version="1.0.0",
    display_name="Google Sheets",
    description="Create spreadsheets and read, write and append cell ranges in Google Sheets.",
    keywords=("spreadsheet", "excel", "gsheets"),
    # Google OAuth 2.0 web-server flow; access_type=offline + prompt=consent yield a refresh token.
    auth=OAuth2Auth(
        authorize_url="https://accounts.google.com/o/oauth2/v2/auth",
        token_url="https://oauth2.googleapis.com/token",
        scopes=("https://www.googleapis.com/auth/spreadsheets",),
        extra_authorize_params=(("access_type", "offline"), ("prompt", "consent")),
    ),
    base_url="https://sheets.googleapis.com",
    tool_prefix="sheets_",
    curl_proxy=True,
    # The Sheets API has no "who am I" call: Google's tokeninfo checks the token and its scope.
    probe=Probe("POST", "https://www.googleapis.com/oauth2/v2/tokeninfo", token_param="access_token"),
)

from workbench.tools import Manifest, OAuth2Auth, Probe

manifest = Manifest(
    name="google-calendar",
    version="1.0.0",
    display_name="Google Calendar",
    description="Calendars, events, invitations and free/busy times in Google Calendar.",
    keywords=("gcal", "agenda"),
    # Google OAuth 2.0 web-server flow; access_type=offline + prompt=consent yield a refresh token.
    auth=OAuth2Auth(
        authorize_url="https://accounts.google.com/o/oauth2/v2/auth",
        token_url="https://oauth2.googleapis.com/token",
        scopes=("https://www.googleapis.com/auth/calendar",),
        extra_authorize_params=(("access_type", "offline"), ("prompt", "consent")),
    ),
    base_url="https://www.googleapis.com",
    tool_prefix="calendar_",
    curl_proxy=True,
    probe=Probe("GET", "/calendar/v3/users/me/calendarList?maxResults=1"),
)

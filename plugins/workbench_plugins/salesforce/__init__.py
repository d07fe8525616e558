from workbench.tools import Hint, LoginHosts, Manifest, OAuth2Auth, Probe, TokenRejected

manifest = Manifest(
    name="salesforce",
    version="1.0.0",
    display_name="Salesforce",
    description="Salesforce records (SOQL queries, search, CRUD), object metadata and reports.",
    keywords=("crm", "sfdc", "sales"),
    # Each org has its own API host: the token response's `instance_url` (kept with the stored
    # credential on connect and on every refresh) is the connection's API base, so there is no
    # fixed base URL and no curl proxy. People sign in on the host they choose per connection:
    # production, a sandbox, or their My Domain (the client secret is sent there, hence the suffix).
    # Salesforce's token response has no expires_in: an expired session shows as 401
    # INVALID_SESSION_ID, which refreshes the token once and retries the request once.
    auth=OAuth2Auth(
        authorize_url="https://{login_host}/services/oauth2/authorize",
        token_url="https://{login_host}/services/oauth2/token",
        scopes=("api", "refresh_token"),
        token_fields=("instance_url",),
        base_url_field="instance_url",
        token_rejected=(TokenRejected(401, "INVALID_SESSION_ID"),),
        login_hosts=LoginHosts(
            choices=(("Production", "login.salesforce.com"), ("Sandbox", "test.salesforce.com")),
            custom_suffixes=(".my.salesforce.com",),
            custom_label="My Domain",
            custom_help="Your org's My Domain host, e.g. acme.my.salesforce.com "
            "or acme--dev.sandbox.my.salesforce.com.",
        ),
    ),
    base_url="",
    tool_prefix="salesforce_",
    curl_proxy=False,
    probe=Probe("GET", "/services/oauth2/userinfo"),
    # Running a report reads it (GET); nothing is changed.
    tool_hints=(("salesforce_run_report", Hint(read_only=True)),),
)

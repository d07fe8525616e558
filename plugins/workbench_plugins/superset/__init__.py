from workbench.tools import ApiKeyAuth, ApiKeyField, Manifest, Probe

manifest = Manifest(
    name="superset",
    version="1.0.0",
    display_name="Apache Superset",
    description="Apache Superset: run SQL in SQL Lab, export CSV, browse databases, dashboards, charts and datasets.",
    keywords=("bi", "analytics", "reporting"),
    # Every deployment has its own URL, and Superset's API wants a short-lived JWT from
    # POST /api/v1/security/login (database auth). The tools log in with the stored username and
    # password per call and send `Authorization: Bearer <access_token>` to the stored base URL, so
    # there is no fixed base URL and no curl proxy.
    auth=ApiKeyAuth(
        fields=(
            ApiKeyField(
                "username", "Username", secret=False, help="A Superset user with database (db) login."
            ),
            ApiKeyField("password", "Password"),
            ApiKeyField(
                "base_url",
                "Superset URL",
                secret=False,
                help="Your Superset address, e.g. https://superset.example.com",
                url="{}",
            ),
        ),
        header="Authorization",
        scheme="Basic",
    ),
    base_url="",
    tool_prefix="superset_",
    curl_proxy=False,
    probe=Probe(function="workbench_plugins.superset.tools:probe"),
)

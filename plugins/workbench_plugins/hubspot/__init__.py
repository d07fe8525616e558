from workbench.tools import Manifest, OAuth2Auth, Probe

manifest = Manifest(
    name="hubspot",
    version="1.0.0",
    display_name="HubSpot",
    description="HubSpot CRM: contacts, companies, deals, tickets, notes and owners.",
    keywords=("crm", "sales", "marketing"),
    auth=OAuth2Auth(
        authorize_url="https://app.hubspot.com/oauth/authorize",
        token_url="https://api.hubapi.com/oauth/v1/token",
        scopes=(
            "oauth",
            "crm.objects.contacts.read",
            "crm.objects.contacts.write",
            "crm.objects.companies.read",
            "crm.objects.companies.write",
            "crm.objects.deals.read",
            "crm.objects.deals.write",
            "crm.objects.owners.read",
            "tickets",
        ),
    ),
    base_url="https://api.hubapi.com",
    tool_prefix="hubspot_",
    curl_proxy=True,
    probe=Probe("GET", "/crm/v3/owners/?limit=1"),
)

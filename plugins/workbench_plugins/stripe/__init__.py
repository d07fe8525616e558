from workbench.tools import ApiKeyAuth, ApiKeyField, Hint, Manifest, Probe

manifest = Manifest(
    name="stripe",
    version="1.0.0",
    display_name="Stripe",
    description="Customers, invoices, payments, subscriptions and refunds on Stripe.",
    keywords=("billing", "payments"),
    auth=ApiKeyAuth(
        fields=(
            ApiKeyField(
                "api_key",
                "Secret key",
                help="A secret (sk_live_/sk_test_) or restricted (rk_) key from Dashboard → Developers → API keys.",
            ),
        ),
        header="Authorization",
        scheme="Bearer",
    ),
    base_url="https://api.stripe.com",
    tool_prefix="stripe_",
    curl_proxy=True,
    probe=Probe("GET", "/v1/balance"),
    # A refund is created, but it takes money back: nothing undoes it.
    tool_hints=(("stripe_create_refund", Hint(destructive=True)),),
)

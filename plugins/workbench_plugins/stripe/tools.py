"""Stripe API tools (https://docs.stripe.com/api).

Stripe takes form-encoded bodies (nested keys as `metadata[key]`), pages lists with
`starting_after=<last id>` and answers errors as `{"error": {"message"}}`. Requests pin
`Stripe-Version` so response shapes don't drift with the account's default version.
"""

from __future__ import annotations

from typing import Any, Literal

from workbench.sdk import api, pick, pick_many
from workbench.tools import ArgsModel, Field, ToolContext, tool

STRIPE_VERSION = "2024-06-20"
_HEADERS = {"Stripe-Version": STRIPE_VERSION}

_CUSTOMER = (
    "id",
    "name",
    "email",
    "description",
    "phone",
    "balance",
    "currency",
    "delinquent",
    "created",
    "metadata",
)
_INVOICE = (
    "id",
    "number",
    "status",
    "customer",
    "customer_email",
    "currency",
    "total",
    "amount_due",
    "amount_paid",
    "amount_remaining",
    "due_date",
    "created",
    "hosted_invoice_url",
    "invoice_pdf",
)
_PAYMENT_INTENT = (
    "id",
    "amount",
    "amount_received",
    "currency",
    "status",
    "customer",
    "description",
    "created",
)
_REFUND = ("id", "amount", "currency", "status", "payment_intent", "charge", "reason", "created")


def _form(values: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Stripe's form encoding: None dropped, booleans lower-case, dicts as key[sub], lists as
    key[0][sub], to any depth."""
    out: dict[str, str] = {}
    for key, value in values.items():
        name = f"{prefix}[{key}]" if prefix else str(key)
        if value is None:
            continue
        if isinstance(value, dict):
            out.update(_form(value, name))
        elif isinstance(value, list):
            out.update(_form({str(i): item for i, item in enumerate(value)}, name))
        elif isinstance(value, bool):
            out[name] = "true" if value else "false"
        else:
            out[name] = str(value)
    return out


def _bool(value: bool | None) -> str | None:
    return None if value is None else ("true" if value else "false")


async def _get(ctx: ToolContext, path: str, params: dict[str, Any] | None = None) -> Any:
    return await api(ctx, "GET", f"/v1{path}", params=params, headers=_HEADERS)


async def _post(ctx: ToolContext, path: str, body: dict[str, Any] | None = None) -> Any:
    return await api(ctx, "POST", f"/v1{path}", data=_form(body or {}), headers=_HEADERS)


def _page(body: Any, key: str, fields: tuple[str, ...]) -> dict[str, Any]:
    """A Stripe list object as {<key>: [...], hasMore, nextCursor} (cursor = last id)."""
    items = body.get("data") or []
    has_more = bool(body.get("has_more"))
    return {
        key: pick_many(items, *fields),
        "hasMore": has_more,
        "nextCursor": items[-1]["id"] if has_more and items else None,
    }


class Page(ArgsModel):
    limit: int = Field(default=10, ge=1, le=100, description="How many to return (1-100)")
    cursor: str | None = Field(default=None, description="nextCursor from the previous page (an object id)")


class ListCustomers(Page):
    email: str | None = Field(default=None, description="Only customers with exactly this email")


@tool(
    "stripe_list_customers",
    "List Stripe customers, newest first, optionally filtered by email.",
    ListCustomers,
    keywords=("clients", "accounts", "buyers", "show"),
)
async def list_customers(args: ListCustomers, ctx: ToolContext) -> Any:
    body = await _get(
        ctx, "/customers", {"limit": args.limit, "starting_after": args.cursor, "email": args.email}
    )
    return _page(body, "customers", _CUSTOMER)


class SearchCustomers(ArgsModel):
    query: str = Field(
        description="Stripe search query, e.g. email:'jenny@example.com' or name~'Rosen' or metadata['plan']:'pro'"
    )
    limit: int = Field(default=10, ge=1, le=100, description="How many to return (1-100)")
    cursor: str | None = Field(
        default=None, description="nextCursor (next_page token) from the previous call"
    )


@tool(
    "stripe_search_customers",
    "Search Stripe customers with Stripe's search query language (by email, name, phone, metadata).",
    SearchCustomers,
    keywords=("find", "look up", "client", "by email", "buyer"),
)
async def search_customers(args: SearchCustomers, ctx: ToolContext) -> Any:
    body = await _get(
        ctx, "/customers/search", {"query": args.query, "limit": args.limit, "page": args.cursor}
    )
    return {
        "customers": pick_many(body.get("data"), *_CUSTOMER),
        "hasMore": bool(body.get("has_more")),
        "nextCursor": body.get("next_page"),
    }


class CustomerId(ArgsModel):
    customer_id: str = Field(
        description="Customer id (cus_...), from stripe_search_customers or stripe_list_customers"
    )


@tool(
    "stripe_get_customer",
    "Get one Stripe customer by id.",
    CustomerId,
    keywords=("client", "details", "show", "account", "buyer"),
)
async def get_customer(args: CustomerId, ctx: ToolContext) -> Any:
    return pick(await _get(ctx, f"/customers/{args.customer_id}"), *_CUSTOMER)


class CreateCustomer(ArgsModel):
    email: str | None = Field(default=None, description="Customer email")
    name: str | None = Field(default=None, description="Full name or business name")
    description: str | None = Field(default=None, description="Internal note shown in the Dashboard")
    phone: str | None = Field(default=None, description="Phone number")
    metadata: dict[str, str] | None = Field(
        default=None, description="Key/value pairs to store on the customer"
    )


@tool(
    "stripe_create_customer",
    "Create a Stripe customer.",
    CreateCustomer,
    keywords=("new", "add", "client", "account", "sign up", "onboard"),
)
async def create_customer(args: CreateCustomer, ctx: ToolContext) -> Any:
    return pick(await _post(ctx, "/customers", args.model_dump()), *_CUSTOMER)


class ListInvoices(Page):
    customer_id: str | None = Field(
        default=None, description="Only this customer's invoices (customer id from stripe_search_customers)"
    )
    status: Literal["draft", "open", "paid", "uncollectible", "void"] | None = Field(
        default=None, description="Only invoices in this status"
    )


@tool(
    "stripe_list_invoices",
    "List Stripe invoices, optionally for one customer or status.",
    ListInvoices,
    keywords=("bills", "unpaid", "outstanding", "overdue", "show"),
)
async def list_invoices(args: ListInvoices, ctx: ToolContext) -> Any:
    body = await _get(
        ctx,
        "/invoices",
        {
            "limit": args.limit,
            "starting_after": args.cursor,
            "customer": args.customer_id,
            "status": args.status,
        },
    )
    return _page(body, "invoices", _INVOICE)


class InvoiceId(ArgsModel):
    invoice_id: str = Field(description="Invoice id (in_...), from stripe_list_invoices")


_LINE = ("id", "description", "amount", "currency", "quantity")
_MAX_LINES = 1_000  # 10 pages of 100: a bound on the calls one invoice can cost


@tool(
    "stripe_get_invoice",
    "Get one Stripe invoice with all its line items (up to 1,000; linesTruncated says if there were more).",
    InvoiceId,
    keywords=("bill", "details", "line items", "show", "amount due"),
)
async def get_invoice(args: InvoiceId, ctx: ToolContext) -> Any:
    inv = await _get(ctx, f"/invoices/{args.invoice_id}")
    out = pick(inv, *_INVOICE)
    page = inv.get("lines") or {}
    lines = list(page.get("data") or [])
    # The invoice embeds only the first page of its lines (10); the rest come from its lines list.
    while page.get("has_more") and lines and len(lines) < _MAX_LINES:
        page = await _get(
            ctx,
            f"/invoices/{args.invoice_id}/lines",
            {"limit": min(100, _MAX_LINES - len(lines)), "starting_after": lines[-1].get("id")},
        )
        lines.extend(page.get("data") or [])
    out["lines"] = pick_many(lines, *_LINE)
    out["linesTruncated"] = bool(page.get("has_more"))
    return out


class CreateInvoice(ArgsModel):
    customer_id: str = Field(description="Customer to bill (cus_...), from stripe_search_customers")
    collection_method: Literal["charge_automatically", "send_invoice"] = Field(
        default="send_invoice", description="Charge the saved payment method, or email the invoice"
    )
    days_until_due: int | None = Field(
        default=30, ge=1, description="Days until due (only for collection_method=send_invoice)"
    )
    description: str | None = Field(default=None, description="Memo shown on the invoice")
    auto_advance: bool = Field(default=False, description="Let Stripe finalize the draft automatically")
    pending_items: bool = Field(
        default=True,
        description="Include the customer's pending invoice items (added with stripe_add_invoice_item)",
    )


@tool(
    "stripe_create_invoice",
    "Create a draft Stripe invoice for a customer (add items, then finalize and send it).",
    CreateInvoice,
    keywords=("bill", "new", "charge", "draft invoice", "make"),
)
async def create_invoice(args: CreateInvoice, ctx: ToolContext) -> Any:
    body = {
        "customer": args.customer_id,
        "collection_method": args.collection_method,
        "days_until_due": args.days_until_due if args.collection_method == "send_invoice" else None,
        "description": args.description,
        "auto_advance": args.auto_advance,
        "pending_invoice_items_behavior": "include" if args.pending_items else "exclude",
    }
    return pick(await _post(ctx, "/invoices", body), *_INVOICE)


class AddInvoiceItem(ArgsModel):
    customer_id: str = Field(
        description="Customer the item is billed to (cus_...), from stripe_search_customers"
    )
    amount: int = Field(description="Amount in the currency's smallest unit (e.g. cents)")
    currency: str = Field(default="usd", description="Three-letter ISO currency code, lower case")
    description: str | None = Field(default=None, description="Line item description")
    invoice_id: str | None = Field(
        default=None,
        description="Draft invoice to add it to (id from stripe_list_invoices); omitted: pending until the next invoice",
    )


@tool(
    "stripe_add_invoice_item",
    "Add a line item (an amount) to a customer's draft or next Stripe invoice.",
    AddInvoiceItem,
    keywords=("line item", "charge", "fee", "bill"),
)
async def add_invoice_item(args: AddInvoiceItem, ctx: ToolContext) -> Any:
    body = {
        "customer": args.customer_id,
        "amount": args.amount,
        "currency": args.currency,
        "description": args.description,
        "invoice": args.invoice_id,
    }
    item = await _post(ctx, "/invoiceitems", body)
    return pick(item, "id", "customer", "invoice", "amount", "currency", "description")


@tool(
    "stripe_finalize_invoice",
    "Finalize a draft Stripe invoice so it can be paid or sent.",
    InvoiceId,
    keywords=("finalise", "finish", "issue", "lock", "ready to pay", "complete"),
)
async def finalize_invoice(args: InvoiceId, ctx: ToolContext) -> Any:
    return pick(await _post(ctx, f"/invoices/{args.invoice_id}/finalize"), *_INVOICE)


@tool(
    "stripe_send_invoice",
    "Email a finalized Stripe invoice to the customer.",
    InvoiceId,
    keywords=("email", "deliver", "bill", "request payment"),
)
async def send_invoice(args: InvoiceId, ctx: ToolContext) -> Any:
    return pick(await _post(ctx, f"/invoices/{args.invoice_id}/send"), *_INVOICE)


class ListPaymentIntents(Page):
    customer_id: str | None = Field(
        default=None, description="Only this customer's payments (customer id from stripe_search_customers)"
    )


@tool(
    "stripe_list_payments",
    "List Stripe payments (PaymentIntents), newest first.",
    ListPaymentIntents,
    keywords=("charges", "transactions", "paymentintents", "revenue", "received"),
)
async def list_payments(args: ListPaymentIntents, ctx: ToolContext) -> Any:
    body = await _get(
        ctx,
        "/payment_intents",
        {"limit": args.limit, "starting_after": args.cursor, "customer": args.customer_id},
    )
    return _page(body, "payments", _PAYMENT_INTENT)


class ListSubscriptions(Page):
    customer_id: str | None = Field(
        default=None,
        description="Only this customer's subscriptions (customer id from stripe_search_customers)",
    )
    status: (
        Literal["active", "past_due", "unpaid", "canceled", "incomplete", "trialing", "paused", "all"] | None
    ) = Field(default=None, description="Only subscriptions in this status (default: all but canceled)")


@tool(
    "stripe_list_subscriptions",
    "List Stripe subscriptions with their plan/price items.",
    ListSubscriptions,
    keywords=("plans", "recurring", "memberships", "subscribers", "show"),
)
async def list_subscriptions(args: ListSubscriptions, ctx: ToolContext) -> Any:
    body = await _get(
        ctx,
        "/subscriptions",
        {
            "limit": args.limit,
            "starting_after": args.cursor,
            "customer": args.customer_id,
            "status": args.status,
        },
    )
    page = _page(
        body,
        "subscriptions",
        ("id", "customer", "status", "cancel_at_period_end", "current_period_end", "created"),
    )
    for sub, raw in zip(page["subscriptions"], body.get("data") or [], strict=True):
        sub["items"] = [
            {"price_id": (i.get("price") or {}).get("id"), "quantity": i.get("quantity")}
            for i in (raw.get("items") or {}).get("data") or []
        ]
    return page


class CreateRefund(ArgsModel):
    payment_intent_id: str = Field(description="Payment to refund (pi_...), from stripe_list_payments")
    amount: int | None = Field(
        default=None, ge=1, description="Partial amount in the smallest unit; omitted: all"
    )
    reason: Literal["duplicate", "fraudulent", "requested_by_customer"] | None = Field(
        default=None, description="Why the payment is refunded"
    )


@tool(
    "stripe_create_refund",
    "Refund a Stripe payment, fully or partly.",
    CreateRefund,
    keywords=("money back", "reimburse", "return", "reverse", "chargeback", "credit"),
)
async def create_refund(args: CreateRefund, ctx: ToolContext) -> Any:
    body = {"payment_intent": args.payment_intent_id, "amount": args.amount, "reason": args.reason}
    return pick(await _post(ctx, "/refunds", body), *_REFUND)


class NoArgs(ArgsModel):
    pass


@tool(
    "stripe_get_balance",
    "Get the Stripe account balance (available and pending, per currency).",
    NoArgs,
    keywords=("funds", "money", "cash", "available", "pending", "account balance", "payout"),
)
async def get_balance(args: NoArgs, ctx: ToolContext) -> Any:
    body = await _get(ctx, "/balance")
    return {
        "available": pick_many(body.get("available"), "amount", "currency"),
        "pending": pick_many(body.get("pending"), "amount", "currency"),
    }


# -- coupons and disputes ---------------------------------------------------------------------------

_COUPON = ("id", "name", "percent_off", "amount_off", "currency", "duration", "duration_in_months", "valid", "times_redeemed", "max_redemptions", "redeem_by", "created")  # fmt: skip
_DISPUTE = ("id", "amount", "currency", "status", "reason", "charge", "payment_intent", "created", "evidence_details.due_by")  # fmt: skip


@tool(
    "stripe_list_coupons",
    "List Stripe coupons (discounts), newest first, with their amount or percentage off and validity.",
    Page,
    keywords=("discounts", "promo", "promotion", "voucher", "deal", "show"),
)
async def list_coupons(args: Page, ctx: ToolContext) -> Any:
    body = await _get(ctx, "/coupons", {"limit": args.limit, "starting_after": args.cursor})
    return _page(body, "coupons", _COUPON)


class ListDisputes(Page):
    payment_intent_id: str | None = Field(
        default=None, description="Only disputes of this payment (pi_...), from stripe_list_payments"
    )


@tool(
    "stripe_list_disputes",
    "List Stripe disputes (chargebacks), newest first, with status, reason and the evidence due date.",
    ListDisputes,
    keywords=("chargebacks", "contested", "fraud claims", "bank disputes", "show"),
)
async def list_disputes(args: ListDisputes, ctx: ToolContext) -> Any:
    body = await _get(
        ctx,
        "/disputes",
        {"limit": args.limit, "starting_after": args.cursor, "payment_intent": args.payment_intent_id},
    )
    return _page(body, "disputes", _DISPUTE)


# -- products, prices, payment links ---------------------------------------------------------------

_PRODUCT = ("id", "name", "description", "active", "default_price", "created", "metadata")
_PRICE = ("id", "product", "active", "currency", "unit_amount", "type", "recurring", "nickname", "created")
_CURRENCY = r"^[a-z]{3}$"


class ListProducts(Page):
    active: bool | None = Field(default=None, description="Only active (true) or archived (false) products")


@tool(
    "stripe_list_products",
    "List Stripe products (what you sell), newest first.",
    ListProducts,
    keywords=("catalog", "items", "offerings", "goods", "plans", "show"),
)
async def list_products(args: ListProducts, ctx: ToolContext) -> Any:
    body = await _get(
        ctx,
        "/products",
        {"limit": args.limit, "starting_after": args.cursor, "active": _bool(args.active)},
    )
    return _page(body, "products", _PRODUCT)


class Recurring(ArgsModel):
    interval: Literal["day", "week", "month", "year"] = Field(description="Billing period")
    interval_count: int = Field(default=1, ge=1, le=365, description="Periods between bills, e.g. 3 months")


class CreateProduct(ArgsModel):
    name: str = Field(min_length=1, max_length=250, description="Product name shown to customers")
    description: str | None = Field(default=None, max_length=5_000, description="Product description")
    unit_amount: int | None = Field(
        default=None, ge=0, description="Default price in the smallest unit (cents); omit for no price"
    )
    currency: str = Field(
        default="usd", pattern=_CURRENCY, description="Currency of the default price, e.g. 'usd'"
    )
    recurring: Recurring | None = Field(
        default=None, description="Make the default price a subscription price"
    )
    metadata: dict[str, str] | None = Field(default=None, description="Your own key-value data")


@tool(
    "stripe_create_product",
    "Create a Stripe product, optionally with a default one-off or recurring price.",
    CreateProduct,
    keywords=("new", "add", "item", "offering", "plan", "sell"),
)
async def create_product(args: CreateProduct, ctx: ToolContext) -> Any:
    price = None
    if args.unit_amount is not None:
        price = {"unit_amount": args.unit_amount, "currency": args.currency}
        if args.recurring:
            price["recurring"] = args.recurring.model_dump()
    body = {
        "name": args.name,
        "description": args.description,
        "default_price_data": price,
        "metadata": args.metadata,
    }
    return pick(await _post(ctx, "/products", body), *_PRODUCT)


class ListPrices(Page):
    product_id: str | None = Field(
        default=None, description="Only prices of this product (prod_...), from stripe_list_products"
    )
    active: bool | None = Field(default=None, description="Only active (true) or inactive (false) prices")
    type: Literal["one_time", "recurring"] | None = Field(default=None, description="Only this kind of price")


@tool(
    "stripe_list_prices",
    "List Stripe prices (amount, currency, one-off or recurring), optionally for one product.",
    ListPrices,
    keywords=("pricing", "plans", "tiers", "cost", "rates", "show"),
)
async def list_prices(args: ListPrices, ctx: ToolContext) -> Any:
    body = await _get(
        ctx,
        "/prices",
        {
            "limit": args.limit,
            "starting_after": args.cursor,
            "product": args.product_id,
            "active": _bool(args.active),
            "type": args.type,
        },
    )
    return _page(body, "prices", _PRICE)


class CreatePrice(ArgsModel):
    product_id: str = Field(description="Product the price is for (prod_...), from stripe_list_products")
    unit_amount: int = Field(ge=0, description="Amount in the smallest unit (cents)")
    currency: str = Field(
        pattern=_CURRENCY, description="Three-letter ISO currency code, lower case, e.g. 'usd'"
    )
    recurring: Recurring | None = Field(
        default=None, description="Bill it every period (a subscription price)"
    )
    nickname: str | None = Field(
        default=None, max_length=250, description="Internal name, e.g. 'Pro monthly'"
    )


@tool(
    "stripe_create_price",
    "Create a Stripe price (one-off or recurring) for a product.",
    CreatePrice,
    keywords=("pricing", "plan", "tier", "cost", "rate", "set price"),
)
async def create_price(args: CreatePrice, ctx: ToolContext) -> Any:
    body = {
        "product": args.product_id,
        "unit_amount": args.unit_amount,
        "currency": args.currency,
        "recurring": args.recurring.model_dump() if args.recurring else None,
        "nickname": args.nickname,
    }
    return pick(await _post(ctx, "/prices", body), *_PRICE)


class LineItem(ArgsModel):
    price_id: str = Field(description="Price to sell (price_...)")
    quantity: int = Field(default=1, ge=1, le=999_999, description="How many")


class CreatePaymentLink(ArgsModel):
    line_items: list[LineItem] = Field(
        min_length=1, max_length=20, description="What the link sells (1-20 prices)"
    )
    after_completion_url: str | None = Field(
        default=None, pattern=r"^https://", description="Send the buyer to this https URL after paying"
    )


@tool(
    "stripe_create_payment_link",
    "Create a Stripe payment link: a shareable checkout URL selling one or more prices.",
    CreatePaymentLink,
    keywords=("checkout", "pay link", "sell", "purchase", "storefront"),
)
async def create_payment_link(args: CreatePaymentLink, ctx: ToolContext) -> Any:
    body: dict[str, Any] = {
        "line_items": [{"price": i.price_id, "quantity": i.quantity} for i in args.line_items],
    }
    if args.after_completion_url:
        body["after_completion"] = {"type": "redirect", "redirect": {"url": args.after_completion_url}}
    return pick(await _post(ctx, "/payment_links", body), "id", "url", "active", "currency")


class CancelSubscription(ArgsModel):
    subscription_id: str = Field(
        description="Subscription to cancel (sub_...), from stripe_list_subscriptions"
    )
    at_period_end: bool = Field(
        default=False, description="Keep it until the paid period ends (true) or end it now (false)"
    )
    invoice_now: bool = Field(
        default=False, description="Ending now: invoice pending usage and proration at once"
    )
    prorate: bool = Field(default=False, description="Ending now: credit the unused time")


@tool(
    "stripe_cancel_subscription",
    "Cancel a Stripe subscription now, or at the end of the period already paid for.",
    CancelSubscription,
    keywords=("stop", "end", "terminate", "unsubscribe", "churn", "discontinue"),
)
async def cancel_subscription(args: CancelSubscription, ctx: ToolContext) -> Any:
    fields = (
        "id",
        "customer",
        "status",
        "cancel_at_period_end",
        "cancel_at",
        "canceled_at",
        "current_period_end",
    )
    if args.at_period_end:
        sub = await _post(ctx, f"/subscriptions/{args.subscription_id}", {"cancel_at_period_end": True})
    else:
        sub = await api(
            ctx,
            "DELETE",
            f"/v1/subscriptions/{args.subscription_id}",
            params={"invoice_now": _bool(args.invoice_now), "prorate": _bool(args.prorate)},
            headers=_HEADERS,
        )
    return pick(sub, *fields)


TOOLS = [
    list_customers,
    search_customers,
    get_customer,
    create_customer,
    list_invoices,
    get_invoice,
    create_invoice,
    add_invoice_item,
    finalize_invoice,
    send_invoice,
    list_payments,
    list_subscriptions,
    create_refund,
    get_balance,
    list_products,
    create_product,
    list_prices,
    create_price,
    create_payment_link,
    cancel_subscription,
    list_coupons,
    list_disputes,
]

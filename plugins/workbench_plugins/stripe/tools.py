"""Stripe API tools (https://docs.stripe.com/api).

Stripe takes form-encoded bodies (nested keys as `metadata[key]`), pages lists with
`starting_after=<last id>` and answers errors as `{"error": {"message"}}`. Requests pin
`Stripe-Version` so response shapes don't drift with the account's default version.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field
from workbench.sdk import api, pick, pick_many
from workbench.tools import tool

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


def _form(values: dict[str, Any]) -> dict[str, str]:
    """Stripe's form encoding: None dropped, booleans lower-case, dicts as key[sub]."""
    out: dict[str, str] = {}
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, dict):
            for sub, item in value.items():
                out[f"{key}[{sub}]"] = str(item)
        elif isinstance(value, bool):
            out[key] = "true" if value else "false"
        else:
            out[key] = str(value)
    return out


async def _get(ctx: Any, path: str, params: dict[str, Any] | None = None) -> Any:
    return await api(ctx, "GET", f"/v1{path}", params=params, headers=_HEADERS)


async def _post(ctx: Any, path: str, body: dict[str, Any] | None = None) -> Any:
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


class Page(BaseModel):
    limit: int = Field(default=10, ge=1, le=100, description="How many to return (1-100)")
    cursor: str | None = Field(default=None, description="nextCursor from the previous page (an object id)")


class ListCustomers(Page):
    email: str | None = Field(default=None, description="Only customers with exactly this email")


@tool(
    "stripe_list_customers",
    "List Stripe customers, newest first, optionally filtered by email.",
    ListCustomers,
)
async def list_customers(args: ListCustomers, ctx: Any) -> Any:
    body = await _get(
        ctx, "/customers", {"limit": args.limit, "starting_after": args.cursor, "email": args.email}
    )
    return _page(body, "customers", _CUSTOMER)


class SearchCustomers(BaseModel):
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
)
async def search_customers(args: SearchCustomers, ctx: Any) -> Any:
    body = await _get(
        ctx, "/customers/search", {"query": args.query, "limit": args.limit, "page": args.cursor}
    )
    return {
        "customers": pick_many(body.get("data"), *_CUSTOMER),
        "hasMore": bool(body.get("has_more")),
        "nextCursor": body.get("next_page"),
    }


class CustomerId(BaseModel):
    customer_id: str = Field(description="Customer id (cus_...)")


@tool("stripe_get_customer", "Get one Stripe customer by id.", CustomerId)
async def get_customer(args: CustomerId, ctx: Any) -> Any:
    return pick(await _get(ctx, f"/customers/{args.customer_id}"), *_CUSTOMER)


class CreateCustomer(BaseModel):
    email: str | None = Field(default=None, description="Customer email")
    name: str | None = Field(default=None, description="Full name or business name")
    description: str | None = Field(default=None, description="Internal note shown in the Dashboard")
    phone: str | None = Field(default=None, description="Phone number")
    metadata: dict[str, str] | None = Field(
        default=None, description="Key/value pairs to store on the customer"
    )


@tool("stripe_create_customer", "Create a Stripe customer.", CreateCustomer)
async def create_customer(args: CreateCustomer, ctx: Any) -> Any:
    return pick(await _post(ctx, "/customers", args.model_dump()), *_CUSTOMER)


class ListInvoices(Page):
    customer_id: str | None = Field(default=None, description="Only this customer's invoices")
    status: Literal["draft", "open", "paid", "uncollectible", "void"] | None = Field(
        default=None, description="Only invoices in this status"
    )


@tool("stripe_list_invoices", "List Stripe invoices, optionally for one customer or status.", ListInvoices)
async def list_invoices(args: ListInvoices, ctx: Any) -> Any:
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


class InvoiceId(BaseModel):
    invoice_id: str = Field(description="Invoice id (in_...)")


_LINE = ("id", "description", "amount", "currency", "quantity")
_MAX_LINES = 1_000  # 10 pages of 100: a bound on the calls one invoice can cost


@tool(
    "stripe_get_invoice",
    "Get one Stripe invoice with all its line items (up to 1,000; linesTruncated says if there were more).",
    InvoiceId,
)
async def get_invoice(args: InvoiceId, ctx: Any) -> Any:
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


class CreateInvoice(BaseModel):
    customer_id: str = Field(description="Customer to bill (cus_...)")
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
)
async def create_invoice(args: CreateInvoice, ctx: Any) -> Any:
    body = {
        "customer": args.customer_id,
        "collection_method": args.collection_method,
        "days_until_due": args.days_until_due if args.collection_method == "send_invoice" else None,
        "description": args.description,
        "auto_advance": args.auto_advance,
        "pending_invoice_items_behavior": "include" if args.pending_items else "exclude",
    }
    return pick(await _post(ctx, "/invoices", body), *_INVOICE)


class AddInvoiceItem(BaseModel):
    customer_id: str = Field(description="Customer the item is billed to (cus_...)")
    amount: int = Field(description="Amount in the currency's smallest unit (e.g. cents)")
    currency: str = Field(default="usd", description="Three-letter ISO currency code, lower case")
    description: str | None = Field(default=None, description="Line item description")
    invoice_id: str | None = Field(
        default=None, description="Draft invoice to add it to; omitted: pending until the next invoice"
    )


@tool(
    "stripe_add_invoice_item",
    "Add a line item (an amount) to a customer's draft or next Stripe invoice.",
    AddInvoiceItem,
)
async def add_invoice_item(args: AddInvoiceItem, ctx: Any) -> Any:
    body = {
        "customer": args.customer_id,
        "amount": args.amount,
        "currency": args.currency,
        "description": args.description,
        "invoice": args.invoice_id,
    }
    item = await _post(ctx, "/invoiceitems", body)
    return pick(item, "id", "customer", "invoice", "amount", "currency", "description")


@tool("stripe_finalize_invoice", "Finalize a draft Stripe invoice so it can be paid or sent.", InvoiceId)
async def finalize_invoice(args: InvoiceId, ctx: Any) -> Any:
    return pick(await _post(ctx, f"/invoices/{args.invoice_id}/finalize"), *_INVOICE)


@tool("stripe_send_invoice", "Email a finalized Stripe invoice to the customer.", InvoiceId)
async def send_invoice(args: InvoiceId, ctx: Any) -> Any:
    return pick(await _post(ctx, f"/invoices/{args.invoice_id}/send"), *_INVOICE)


class ListPaymentIntents(Page):
    customer_id: str | None = Field(default=None, description="Only this customer's payments")


@tool("stripe_list_payments", "List Stripe payments (PaymentIntents), newest first.", ListPaymentIntents)
async def list_payments(args: ListPaymentIntents, ctx: Any) -> Any:
    body = await _get(
        ctx,
        "/payment_intents",
        {"limit": args.limit, "starting_after": args.cursor, "customer": args.customer_id},
    )
    return _page(body, "payments", _PAYMENT_INTENT)


class ListSubscriptions(Page):
    customer_id: str | None = Field(default=None, description="Only this customer's subscriptions")
    status: (
        Literal["active", "past_due", "unpaid", "canceled", "incomplete", "trialing", "paused", "all"] | None
    ) = Field(default=None, description="Only subscriptions in this status (default: all but canceled)")


@tool(
    "stripe_list_subscriptions", "List Stripe subscriptions with their plan/price items.", ListSubscriptions
)
async def list_subscriptions(args: ListSubscriptions, ctx: Any) -> Any:
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


class CreateRefund(BaseModel):
    payment_intent_id: str = Field(description="Payment to refund (pi_...)")
    amount: int | None = Field(
        default=None, ge=1, description="Partial amount in the smallest unit; omitted: all"
    )
    reason: Literal["duplicate", "fraudulent", "requested_by_customer"] | None = Field(
        default=None, description="Why the payment is refunded"
    )


@tool("stripe_create_refund", "Refund a Stripe payment, fully or partly.", CreateRefund)
async def create_refund(args: CreateRefund, ctx: Any) -> Any:
    body = {"payment_intent": args.payment_intent_id, "amount": args.amount, "reason": args.reason}
    return pick(await _post(ctx, "/refunds", body), *_REFUND)


class NoArgs(BaseModel):
    pass


@tool("stripe_get_balance", "Get the Stripe account balance (available and pending, per currency).", NoArgs)
async def get_balance(args: NoArgs, ctx: Any) -> Any:
    body = await _get(ctx, "/balance")
    return {
        "available": pick_many(body.get("available"), "amount", "currency"),
        "pending": pick_many(body.get("pending"), "amount", "currency"),
    }


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
]

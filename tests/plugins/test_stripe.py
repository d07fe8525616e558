"""Stripe tools against a fake api.stripe.com (bodies from Stripe's API reference examples)."""

from __future__ import annotations

from pathlib import Path

import pytest
from workbench_plugins.stripe import tools as stripe_tools

from tests.plugins.catalog_support import (
    Call,
    Case,
    Plugin,
    check_catalog,
    run_case,
    run_error,
    run_tool,
    tool_names,
)

PLUGIN = Plugin(
    "stripe", {"api_key": "sk_test_4eC39HqLyjWDarjtT1zdp7dc"}, "Bearer sk_test_4eC39HqLyjWDarjtT1zdp7dc"
)
V = {"stripe-version": "2024-06-20"}
API = "https://api.stripe.com/v1"

CUSTOMER = {
    "id": "cus_NffrFeUfNV2Hib",
    "object": "customer",
    "address": None,
    "balance": 0,
    "created": 1680893993,
    "currency": None,
    "default_source": None,
    "delinquent": False,
    "description": None,
    "email": "jennyrosen@example.com",
    "invoice_settings": {"custom_fields": None, "default_payment_method": None, "footer": None},
    "livemode": False,
    "metadata": {},
    "name": "Jenny Rosen",
    "phone": None,
    "preferred_locales": [],
    "shipping": None,
    "tax_exempt": "none",
}
CUSTOMER_OUT = {
    "id": "cus_NffrFeUfNV2Hib",
    "name": "Jenny Rosen",
    "email": "jennyrosen@example.com",
    "description": None,
    "phone": None,
    "balance": 0,
    "currency": None,
    "delinquent": False,
    "created": 1680893993,
    "metadata": {},
}
INVOICE = {
    "id": "in_1MtHbELkdIwHu7ixl4OzzPMv",
    "object": "invoice",
    "amount_due": 1500,
    "amount_paid": 0,
    "amount_remaining": 1500,
    "collection_method": "send_invoice",
    "created": 1680644467,
    "currency": "usd",
    "customer": "cus_NeZwdNtLEOXuvB",
    "customer_email": "jennyrosen@example.com",
    "due_date": 1683236467,
    "hosted_invoice_url": "https://invoice.stripe.com/i/acct_1M2JTkLkdIwHu7ix/test_YWNj",
    "invoice_pdf": "https://pay.stripe.com/invoice/acct_1M2JTkLkdIwHu7ix/test_YWNj/pdf",
    "lines": {
        "object": "list",
        "data": [
            {
                "id": "il_1MtHbELkdIwHu7ixxyz",
                "object": "line_item",
                "amount": 1500,
                "currency": "usd",
                "description": "Consulting, March",
                "quantity": 1,
            }
        ],
        "has_more": False,
    },
    "number": "5A9D2F1B-0001",
    "status": "open",
    "total": 1500,
}
INVOICE_OUT = {
    "id": "in_1MtHbELkdIwHu7ixl4OzzPMv",
    "number": "5A9D2F1B-0001",
    "status": "open",
    "customer": "cus_NeZwdNtLEOXuvB",
    "customer_email": "jennyrosen@example.com",
    "currency": "usd",
    "total": 1500,
    "amount_due": 1500,
    "amount_paid": 0,
    "amount_remaining": 1500,
    "due_date": 1683236467,
    "created": 1680644467,
    "hosted_invoice_url": "https://invoice.stripe.com/i/acct_1M2JTkLkdIwHu7ix/test_YWNj",
    "invoice_pdf": "https://pay.stripe.com/invoice/acct_1M2JTkLkdIwHu7ix/test_YWNj/pdf",
}
PI = {
    "id": "pi_3MtwBwLkdIwHu7ix28a3tqPa",
    "object": "payment_intent",
    "amount": 2000,
    "amount_received": 2000,
    "currency": "usd",
    "customer": "cus_NffrFeUfNV2Hib",
    "description": "Order 1234",
    "created": 1680800504,
    "status": "succeeded",
    "client_secret": "pi_3MtwBwLkdIwHu7ix28a3tqPa_secret_YrKJUKribcBjcG8HVhfZluoGH",
}


def lst(*items: dict, has_more: bool = False, url: str = "/v1/x") -> dict:
    return {"object": "list", "url": url, "has_more": has_more, "data": list(items)}


CASES = [
    Case(
        "stripe_list_customers",
        {"limit": 1, "email": "jennyrosen@example.com"},
        [
            Call(
                "GET",
                f"{API}/customers",
                [("limit", "1"), ("email", "jennyrosen@example.com")],
                response=lst(CUSTOMER, has_more=True),
                expect_headers=V,
            )
        ],
        {"customers": [CUSTOMER_OUT], "hasMore": True, "nextCursor": "cus_NffrFeUfNV2Hib"},
    ),
    Case(
        "stripe_search_customers",
        {"query": "name:'Jenny Rosen'", "limit": 5, "cursor": "page_abc"},
        [
            Call(
                "GET",
                f"{API}/customers/search",
                [("query", "name:'Jenny Rosen'"), ("limit", "5"), ("page", "page_abc")],
                response={
                    "object": "search_result",
                    "url": "/v1/customers/search",
                    "has_more": False,
                    "data": [CUSTOMER],
                    "next_page": None,
                },
                expect_headers=V,
            )
        ],
        {"customers": [CUSTOMER_OUT], "hasMore": False, "nextCursor": None},
    ),
    Case(
        "stripe_get_customer",
        {"customer_id": "cus_NffrFeUfNV2Hib"},
        [Call("GET", f"{API}/customers/cus_NffrFeUfNV2Hib", response=CUSTOMER, expect_headers=V)],
        CUSTOMER_OUT,
    ),
    Case(
        "stripe_create_customer",
        {"name": "Jenny Rosen", "email": "jennyrosen@example.com", "metadata": {"crm_id": "42"}},
        [
            Call(
                "POST",
                f"{API}/customers",
                form=[
                    ("email", "jennyrosen@example.com"),
                    ("name", "Jenny Rosen"),
                    ("metadata[crm_id]", "42"),
                ],
                response=CUSTOMER,
                expect_headers=V,
            )
        ],
        CUSTOMER_OUT,
    ),
    Case(
        "stripe_list_invoices",
        {"customer_id": "cus_NeZwdNtLEOXuvB", "status": "open", "cursor": "in_0"},
        [
            Call(
                "GET",
                f"{API}/invoices",
                [
                    ("limit", "10"),
                    ("starting_after", "in_0"),
                    ("customer", "cus_NeZwdNtLEOXuvB"),
                    ("status", "open"),
                ],
                response=lst(INVOICE),
            )
        ],
        {"invoices": [INVOICE_OUT], "hasMore": False, "nextCursor": None},
    ),
    Case(
        "stripe_get_invoice",
        {"invoice_id": "in_1MtHbELkdIwHu7ixl4OzzPMv"},
        [Call("GET", f"{API}/invoices/in_1MtHbELkdIwHu7ixl4OzzPMv", response=INVOICE)],
        {
            **INVOICE_OUT,
            "lines": [
                {
                    "id": "il_1MtHbELkdIwHu7ixxyz",
                    "description": "Consulting, March",
                    "amount": 1500,
                    "currency": "usd",
                    "quantity": 1,
                }
            ],
            "linesTruncated": False,
        },
    ),
    Case(
        "stripe_create_invoice",
        {"customer_id": "cus_NeZwdNtLEOXuvB", "days_until_due": 14, "description": "March work"},
        [
            Call(
                "POST",
                f"{API}/invoices",
                form=[
                    ("customer", "cus_NeZwdNtLEOXuvB"),
                    ("collection_method", "send_invoice"),
                    ("days_until_due", "14"),
                    ("description", "March work"),
                    ("auto_advance", "false"),
                    ("pending_invoice_items_behavior", "include"),
                ],
                response={**INVOICE, "status": "draft"},
                expect_headers=V,
            )
        ],
        {**INVOICE_OUT, "status": "draft"},
    ),
    Case(
        "stripe_add_invoice_item",
        {"customer_id": "cus_NeZwdNtLEOXuvB", "amount": 1500, "description": "Consulting, March"},
        [
            Call(
                "POST",
                f"{API}/invoiceitems",
                form=[
                    ("customer", "cus_NeZwdNtLEOXuvB"),
                    ("amount", "1500"),
                    ("currency", "usd"),
                    ("description", "Consulting, March"),
                ],
                response={
                    "id": "ii_1MtGUtLkdIwHu7ixBYwjAM00",
                    "object": "invoiceitem",
                    "amount": 1500,
                    "currency": "usd",
                    "customer": "cus_NeZwdNtLEOXuvB",
                    "date": 1680640231,
                    "description": "Consulting, March",
                    "invoice": None,
                    "livemode": False,
                },
            )
        ],
        {
            "id": "ii_1MtGUtLkdIwHu7ixBYwjAM00",
            "customer": "cus_NeZwdNtLEOXuvB",
            "invoice": None,
            "amount": 1500,
            "currency": "usd",
            "description": "Consulting, March",
        },
    ),
    Case(
        "stripe_finalize_invoice",
        {"invoice_id": "in_1MtHbELkdIwHu7ixl4OzzPMv"},
        [Call("POST", f"{API}/invoices/in_1MtHbELkdIwHu7ixl4OzzPMv/finalize", response=INVOICE)],
        INVOICE_OUT,
    ),
    Case(
        "stripe_send_invoice",
        {"invoice_id": "in_1MtHbELkdIwHu7ixl4OzzPMv"},
        [Call("POST", f"{API}/invoices/in_1MtHbELkdIwHu7ixl4OzzPMv/send", response=INVOICE)],
        INVOICE_OUT,
    ),
    Case(
        "stripe_list_payments",
        {"customer_id": "cus_NffrFeUfNV2Hib", "limit": 2},
        [
            Call(
                "GET",
                f"{API}/payment_intents",
                [("limit", "2"), ("customer", "cus_NffrFeUfNV2Hib")],
                response=lst(PI),
            )
        ],
        {
            "payments": [
                {
                    "id": "pi_3MtwBwLkdIwHu7ix28a3tqPa",
                    "amount": 2000,
                    "amount_received": 2000,
                    "currency": "usd",
                    "status": "succeeded",
                    "customer": "cus_NffrFeUfNV2Hib",
                    "description": "Order 1234",
                    "created": 1680800504,
                }
            ],
            "hasMore": False,
            "nextCursor": None,
        },
    ),
    Case(
        "stripe_list_subscriptions",
        {"status": "active"},
        [
            Call(
                "GET",
                f"{API}/subscriptions",
                [("limit", "10"), ("status", "active")],
                response=lst(
                    {
                        "id": "sub_1MowQVLkdIwHu7ixeRlqHVzs",
                        "object": "subscription",
                        "cancel_at_period_end": False,
                        "created": 1679609767,
                        "current_period_end": 1682288167,
                        "customer": "cus_Na6dX7aXxi11N4",
                        "items": {
                            "object": "list",
                            "data": [
                                {
                                    "id": "si_Na6dzxczY5fwHx",
                                    "price": {"id": "price_1MowQULkdIwHu7ixraBm864M", "unit_amount": 1000},
                                    "quantity": 1,
                                }
                            ],
                        },
                        "status": "active",
                    },
                    has_more=True,
                ),
            )
        ],
        {
            "subscriptions": [
                {
                    "id": "sub_1MowQVLkdIwHu7ixeRlqHVzs",
                    "customer": "cus_Na6dX7aXxi11N4",
                    "status": "active",
                    "cancel_at_period_end": False,
                    "current_period_end": 1682288167,
                    "created": 1679609767,
                    "items": [{"price_id": "price_1MowQULkdIwHu7ixraBm864M", "quantity": 1}],
                }
            ],
            "hasMore": True,
            "nextCursor": "sub_1MowQVLkdIwHu7ixeRlqHVzs",
        },
    ),
    Case(
        "stripe_create_refund",
        {"payment_intent_id": "pi_Aabcxyz01aDfoo", "amount": 500, "reason": "requested_by_customer"},
        [
            Call(
                "POST",
                f"{API}/refunds",
                form=[
                    ("payment_intent", "pi_Aabcxyz01aDfoo"),
                    ("amount", "500"),
                    ("reason", "requested_by_customer"),
                ],
                response={
                    "id": "re_1Nispe2eZvKYlo2Cd31jOCgZ",
                    "object": "refund",
                    "amount": 500,
                    "charge": "ch_1NirD82eZvKYlo2CIvbtLWuY",
                    "created": 1692942318,
                    "currency": "usd",
                    "payment_intent": "pi_Aabcxyz01aDfoo",
                    "reason": "requested_by_customer",
                    "status": "succeeded",
                },
            )
        ],
        {
            "id": "re_1Nispe2eZvKYlo2Cd31jOCgZ",
            "amount": 500,
            "currency": "usd",
            "status": "succeeded",
            "payment_intent": "pi_Aabcxyz01aDfoo",
            "charge": "ch_1NirD82eZvKYlo2CIvbtLWuY",
            "reason": "requested_by_customer",
            "created": 1692942318,
        },
    ),
    Case(
        "stripe_get_balance",
        {},
        [
            Call(
                "GET",
                f"{API}/balance",
                response={
                    "object": "balance",
                    "available": [{"amount": 666670, "currency": "usd", "source_types": {"card": 666670}}],
                    "connect_reserved": [{"amount": 0, "currency": "usd"}],
                    "livemode": False,
                    "pending": [{"amount": 61414, "currency": "usd", "source_types": {"card": 61414}}],
                },
            )
        ],
        {
            "available": [{"amount": 666670, "currency": "usd"}],
            "pending": [{"amount": 61414, "currency": "usd"}],
        },
    ),
]


PRODUCT = {
    "id": "prod_NWjs8kKbJWmuuc",
    "object": "product",
    "active": True,
    "created": 1678833149,
    "default_price": "price_1MoBy5LkdIwHu7ixZhnattbh",
    "description": None,
    "metadata": {},
    "name": "Gold Plan",
}
PRODUCT_OUT = {
    k: PRODUCT[k] for k in ("id", "name", "description", "active", "default_price", "created", "metadata")
}
PRICE = {
    "id": "price_1MoBy5LkdIwHu7ixZhnattbh",
    "object": "price",
    "active": True,
    "created": 1679431181,
    "currency": "usd",
    "nickname": None,
    "product": "prod_NWjs8kKbJWmuuc",
    "recurring": {"interval": "month", "interval_count": 1, "usage_type": "licensed"},
    "type": "recurring",
    "unit_amount": 1000,
}
PRICE_OUT = {
    k: PRICE[k]
    for k in (
        "id",
        "product",
        "active",
        "currency",
        "unit_amount",
        "type",
        "recurring",
        "nickname",
        "created",
    )
}
SUB = {
    "id": "sub_1MlPf9LkdIwHu7ixB6VIYRyX",
    "object": "subscription",
    "customer": "cus_NffrFeUfNV2Hib",
    "status": "canceled",
    "cancel_at_period_end": False,
    "cancel_at": None,
    "canceled_at": 1678768842,
    "current_period_end": 1680641305,
}

CASES += [
    Case(
        "stripe_list_coupons",
        {"limit": 1},
        [
            Call(
                "GET",
                f"{API}/coupons",
                {"limit": 1},
                response={
                    "object": "list",
                    "data": [
                        {
                            "id": "Z4OV52SU",
                            "object": "coupon",
                            "amount_off": None,
                            "created": 1678037688,
                            "currency": "usd",
                            "duration": "repeating",
                            "duration_in_months": 3,
                            "livemode": False,
                            "max_redemptions": None,
                            "metadata": {},
                            "name": "25.5% off",
                            "percent_off": 25.5,
                            "redeem_by": None,
                            "times_redeemed": 0,
                            "valid": True,
                        }
                    ],
                    "has_more": True,
                },
                expect_headers=V,
            )
        ],
        {
            "coupons": [
                {
                    "id": "Z4OV52SU",
                    "name": "25.5% off",
                    "percent_off": 25.5,
                    "amount_off": None,
                    "currency": "usd",
                    "duration": "repeating",
                    "duration_in_months": 3,
                    "valid": True,
                    "times_redeemed": 0,
                    "max_redemptions": None,
                    "redeem_by": None,
                    "created": 1678037688,
                }
            ],
            "hasMore": True,
            "nextCursor": "Z4OV52SU",
        },
    ),
    Case(
        "stripe_list_disputes",
        {"payment_intent_id": "pi_3MtweELkdIwHu7ix0Dt0gF2H", "limit": 1},
        [
            Call(
                "GET",
                f"{API}/disputes",
                {"limit": 1, "payment_intent": "pi_3MtweELkdIwHu7ix0Dt0gF2H"},
                response={
                    "object": "list",
                    "data": [
                        {
                            "id": "du_1MtJUT2eZvKYlo2CNaw2HvEv",
                            "object": "dispute",
                            "amount": 1000,
                            "charge": "ch_1AZtxr2eZvKYlo2CJDX8whov",
                            "created": 1680651737,
                            "currency": "usd",
                            "evidence_details": {"due_by": 1682294399, "has_evidence": False},
                            "payment_intent": "pi_3MtweELkdIwHu7ix0Dt0gF2H",
                            "reason": "general",
                            "status": "warning_needs_response",
                        }
                    ],
                    "has_more": False,
                },
                expect_headers=V,
            )
        ],
        {
            "disputes": [
                {
                    "id": "du_1MtJUT2eZvKYlo2CNaw2HvEv",
                    "amount": 1000,
                    "currency": "usd",
                    "status": "warning_needs_response",
                    "reason": "general",
                    "charge": "ch_1AZtxr2eZvKYlo2CJDX8whov",
                    "payment_intent": "pi_3MtweELkdIwHu7ix0Dt0gF2H",
                    "created": 1680651737,
                    "evidence_details_due_by": 1682294399,
                }
            ],
            "hasMore": False,
            "nextCursor": None,
        },
    ),
    Case(
        "stripe_list_products",
        {"active": True, "limit": 3},
        [
            Call(
                "GET",
                f"{API}/products",
                {"limit": 3, "active": "true"},
                response={"object": "list", "data": [PRODUCT], "has_more": False},
                expect_headers=V,
            )
        ],
        {"products": [PRODUCT_OUT], "hasMore": False, "nextCursor": None},
    ),
    Case(
        "stripe_create_product",
        {"name": "Gold Plan", "unit_amount": 1000, "currency": "usd", "recurring": {"interval": "month"}},
        [
            Call(
                "POST",
                f"{API}/products",
                form=[
                    ("name", "Gold Plan"),
                    ("default_price_data[unit_amount]", "1000"),
                    ("default_price_data[currency]", "usd"),
                    ("default_price_data[recurring][interval]", "month"),
                    ("default_price_data[recurring][interval_count]", "1"),
                ],
                response=PRODUCT,
                expect_headers=V,
            )
        ],
        PRODUCT_OUT,
    ),
    Case(
        "stripe_list_prices",
        {"product_id": "prod_NWjs8kKbJWmuuc", "type": "recurring"},
        [
            Call(
                "GET",
                f"{API}/prices",
                {"limit": 10, "product": "prod_NWjs8kKbJWmuuc", "type": "recurring"},
                response={"object": "list", "data": [PRICE], "has_more": True},
                expect_headers=V,
            )
        ],
        {"prices": [PRICE_OUT], "hasMore": True, "nextCursor": "price_1MoBy5LkdIwHu7ixZhnattbh"},
    ),
    Case(
        "stripe_create_price",
        {
            "product_id": "prod_NWjs8kKbJWmuuc",
            "unit_amount": 1000,
            "currency": "usd",
            "recurring": {"interval": "month"},
        },
        [
            Call(
                "POST",
                f"{API}/prices",
                form=[
                    ("product", "prod_NWjs8kKbJWmuuc"),
                    ("unit_amount", "1000"),
                    ("currency", "usd"),
                    ("recurring[interval]", "month"),
                    ("recurring[interval_count]", "1"),
                ],
                response=PRICE,
                expect_headers=V,
            )
        ],
        PRICE_OUT,
    ),
    Case(
        "stripe_create_payment_link",
        {
            "line_items": [{"price_id": "price_1MoC3TLkdIwHu7ixcIbKelAC", "quantity": 2}],
            "after_completion_url": "https://example.com/thanks",
        },
        [
            Call(
                "POST",
                f"{API}/payment_links",
                form=[
                    ("line_items[0][price]", "price_1MoC3TLkdIwHu7ixcIbKelAC"),
                    ("line_items[0][quantity]", "2"),
                    ("after_completion[type]", "redirect"),
                    ("after_completion[redirect][url]", "https://example.com/thanks"),
                ],
                response={
                    "id": "plink_1MoC3ULkdIwHu7ixZjtGpVl2",
                    "object": "payment_link",
                    "active": True,
                    "currency": "usd",
                    "url": "https://buy.stripe.com/test_cN25nr0iZ7bUa7meUY",
                },
                expect_headers=V,
            )
        ],
        {
            "id": "plink_1MoC3ULkdIwHu7ixZjtGpVl2",
            "url": "https://buy.stripe.com/test_cN25nr0iZ7bUa7meUY",
            "active": True,
            "currency": "usd",
        },
    ),
    Case(
        "stripe_cancel_subscription",
        {"subscription_id": "sub_1MlPf9LkdIwHu7ixB6VIYRyX", "prorate": True},
        [
            Call(
                "DELETE",
                f"{API}/subscriptions/sub_1MlPf9LkdIwHu7ixB6VIYRyX",
                {"invoice_now": "false", "prorate": "true"},
                response=SUB,
                expect_headers=V,
            )
        ],
        {
            k: SUB[k]
            for k in (
                "id",
                "customer",
                "status",
                "cancel_at_period_end",
                "cancel_at",
                "canceled_at",
                "current_period_end",
            )
        },
    ),
]


def test_every_tool_has_a_case() -> None:
    assert tool_names(stripe_tools) == {c.tool for c in CASES}


def test_catalog_entries() -> None:
    check_catalog("stripe", stripe_tools)


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_tool(case: Case, tmp_path: Path) -> None:
    await run_case(PLUGIN, tmp_path, case)


async def test_upstream_error_becomes_tool_error(tmp_path: Path) -> None:
    await run_error(
        PLUGIN,
        tmp_path,
        "stripe_get_customer",
        {"customer_id": "cus_nope"},
        [
            Call(
                "GET",
                f"{API}/customers/cus_nope",
                status=404,
                response={
                    "error": {
                        "code": "resource_missing",
                        "message": "No such customer: 'cus_nope'",
                        "param": "id",
                        "type": "invalid_request_error",
                    }
                },
            )
        ],
        "stripe API error 404: No such customer: 'cus_nope'",
    )


def _line(n: int) -> dict[str, object]:
    return {
        "id": f"il_{n:03d}",
        "object": "line_item",
        "amount": n,
        "currency": "usd",
        "description": f"Item {n}",
        "quantity": 1,
    }


def _shaped_line(n: int) -> dict[str, object]:
    return {"id": f"il_{n:03d}", "description": f"Item {n}", "amount": n, "currency": "usd", "quantity": 1}


async def test_get_invoice_pages_through_all_line_items(tmp_path: Path) -> None:
    """The invoice embeds only its first 10 lines; the rest are read from its lines list."""
    first = {**INVOICE, "lines": {"object": "list", "data": [_line(n) for n in range(10)], "has_more": True}}
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "stripe_get_invoice",
        {"invoice_id": "in_1"},
        [
            Call("GET", f"{API}/invoices/in_1", response=first, expect_headers=V),
            Call(
                "GET",
                f"{API}/invoices/in_1/lines",
                {"limit": 100, "starting_after": "il_009"},
                response={"object": "list", "data": [_line(n) for n in range(10, 110)], "has_more": True},
                expect_headers=V,
            ),
            Call(
                "GET",
                f"{API}/invoices/in_1/lines",
                {"limit": 100, "starting_after": "il_109"},
                response={"object": "list", "data": [_line(n) for n in range(110, 115)], "has_more": False},
                expect_headers=V,
            ),
        ],
    )
    result = out["results"][0]["result"]
    assert result["lines"] == [_shaped_line(n) for n in range(115)]
    assert result["linesTruncated"] is False


async def test_get_invoice_stops_at_the_line_cap_and_says_so(tmp_path: Path) -> None:
    first = {**INVOICE, "lines": {"object": "list", "data": [_line(n) for n in range(10)], "has_more": True}}
    calls = [Call("GET", f"{API}/invoices/in_1", response=first)]
    for start in range(10, 1000, 100):
        take = min(100, 1000 - start)
        calls.append(
            Call(
                "GET",
                f"{API}/invoices/in_1/lines",
                {"limit": take, "starting_after": f"il_{start - 1:03d}"},
                response={
                    "object": "list",
                    "data": [_line(n) for n in range(start, start + take)],
                    "has_more": True,
                },
            )
        )
    out = await run_tool(PLUGIN, tmp_path, "stripe_get_invoice", {"invoice_id": "in_1"}, calls)
    result = out["results"][0]["result"]
    assert len(result["lines"]) == 1000
    assert result["linesTruncated"] is True


async def test_cancel_subscription_at_period_end_keeps_it_until_then(tmp_path: Path) -> None:
    kept = {
        **SUB,
        "status": "active",
        "cancel_at_period_end": True,
        "cancel_at": 1680641305,
        "canceled_at": None,
    }
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "stripe_cancel_subscription",
        {"subscription_id": "sub_1", "at_period_end": True},
        [
            Call(
                "POST",
                f"{API}/subscriptions/sub_1",
                form=[("cancel_at_period_end", "true")],
                response=kept,
                expect_headers=V,
            )
        ],
    )
    result = out["results"][0]["result"]
    assert result["status"] == "active" and result["cancel_at_period_end"] is True


async def test_create_product_without_a_price_sends_no_price(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "stripe_create_product",
        {"name": "Gold Plan", "metadata": {"tier": "gold"}},
        [
            Call(
                "POST",
                f"{API}/products",
                form=[("name", "Gold Plan"), ("metadata[tier]", "gold")],
                response=PRODUCT,
            )
        ],
    )
    assert out == {"results": [{"result": PRODUCT_OUT}]}

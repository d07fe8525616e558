"""The portal's grant and approval pages over HTTP: choices stored, own user only, CSRF-checked."""

from __future__ import annotations

from collections.abc import Callable

from starlette.testclient import TestClient
from workbench.composition import Gateway
from workbench.identity.grants import Grant

from tests.web.conftest import csrf_of

Browser = Callable[[str], TestClient]


def _user(gw: Gateway, email: str) -> str:
    user = gw.stores.users.by_email(email)
    assert user is not None
    return user.id


def test_a_key_is_minted_with_the_grant_chosen_on_the_form(browser_for: Browser, web_gw: Gateway) -> None:
    ada = browser_for("ada@example.com")
    page = ada.get("/portal/api-keys").text
    assert 'id="mint-access-read-only"' in page and 'name="integration:jots"' in page
    form = {
        "csrf": csrf_of(page),
        "label": "ro",
        "access": "read-only",
        "scope": "some",
        "integration:jots": "on",
    }
    assert ada.post("/portal/api-keys", data=form).status_code == 303
    (rec,) = web_gw.stores.api_keys.list_for(_user(web_gw, "ada@example.com"))
    assert Grant.loads(rec.grant) == Grant("read-only", ("jots",))
    listed = ada.get("/portal/api-keys").text
    assert "Read-only" in listed and f'href="/portal/api-keys/{rec.key_id}/access"' in listed
    # "Only these" with nothing ticked, or an access level that does not exist: nothing is minted.
    for bad, said in (
        ({"access": "read-only", "scope": "some"}, "Tick at least one integration"),
        ({"access": "root"}, "Choose full, read-only or approve writes."),
    ):
        r = ada.post("/portal/api-keys", data={"csrf": csrf_of(listed), "label": "x", **bad})
        assert r.status_code == 303
        assert said in ada.get("/portal/api-keys").text  # shown once, on the next page
        assert len(web_gw.stores.api_keys.list_for(_user(web_gw, "ada@example.com"))) == 1


def test_a_keys_access_is_changed_by_its_own_user_only(browser_for: Browser, web_gw: Gateway) -> None:
    ada, eve = browser_for("ada@example.com"), browser_for("eve@example.com")
    user = web_gw.stores.users.by_email("ada@example.com")
    assert user is not None
    key = web_gw.auth.api_keys.mint(user, label="agent", grant=Grant("read-only"))
    key_id = key.split("_")[1]
    page = ada.get(f"/portal/api-keys/{key_id}/access").text
    assert 'id="edit-access-read-only" checked' in page
    # Without the CSRF token, or from another user: nothing changes.
    assert ada.post(f"/portal/api-keys/{key_id}/access", data={"access": "full"}).status_code == 403
    eve_page = eve.get(f"/portal/api-keys/{key_id}/access")
    assert eve_page.status_code == 303 and "no-such-key" in eve_page.headers["location"]
    eve_csrf = csrf_of(eve.get("/portal/api-keys").text)
    r = eve.post(
        f"/portal/api-keys/{key_id}/access", data={"csrf": eve_csrf, "access": "full", "scope": "all"}
    )
    assert r.status_code == 303 and "no-such-key" in r.headers["location"]
    assert web_gw.auth.api_keys.resolve(key).grant == Grant("read-only")
    data = {"csrf": csrf_of(page), "access": "approve", "scope": "all", "deny_tools": "delete_jot"}
    assert ada.post(f"/portal/api-keys/{key_id}/access", data=data).status_code == 303
    assert web_gw.auth.api_keys.resolve(key).grant == Grant("approve", None, ("delete_jot",))
    audit = web_gw.stores.audit.list_for(user.id)
    assert any(e.get("action") == "GRANT" and e.get("key") == key_id for e in audit)


async def test_approval_pages_are_the_users_own_and_decisions_are_csrf_checked(
    browser_for: Browser, web_gw: Gateway
) -> None:
    from workbench.engine.meta import MetaTools

    ada, eve = browser_for("ada@example.com"), browser_for("eve@example.com")
    user = web_gw.stores.users.by_email("ada@example.com")
    assert user is not None
    agent = web_gw.auth.api_keys.resolve(web_gw.auth.api_keys.mint(user, label="bot", grant=Grant("approve")))
    out = await MetaTools(web_gw).call(
        "execute_tools", agent, {"executions": [{"tool": "create_jot", "args": {"title": "t", "body": "b"}}]}
    )
    assert "needs the user's approval" in out["results"][0]["error"]
    assert web_gw.approvals is not None
    (approval,) = web_gw.approvals.listing(user.id)
    path = f"/portal/approvals/{approval.id}"
    listing = ada.get("/portal/approvals").text
    assert f'href="{path}"' in listing and "Waiting for you" in listing
    assert approval.id not in eve.get("/portal/approvals").text
    other = eve.get(path)
    assert other.status_code == 404 and "Approval not found" in other.text
    page = ada.get(path)
    assert page.status_code == 200 and "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert 'id="approve"' in page.text and "API key wb_" in page.text and "(bot)" in page.text
    # No token, a foreign origin, another user: the approval stays pending.
    assert ada.post(f"{path}/approve").status_code == 403
    r = ada.post(
        f"{path}/approve", data={"csrf": csrf_of(page.text)}, headers={"Origin": "https://evil.example"}
    )
    assert r.status_code == 403
    eve.post(f"{path}/approve", data={"csrf": csrf_of(eve.get("/portal/approvals").text)})
    assert web_gw.approvals.get(user.id, approval.id).status == "PENDING"  # type: ignore[union-attr]
    assert ada.post(f"{path}/deny", data={"csrf": csrf_of(page.text)}).status_code == 303
    decided = web_gw.approvals.get(user.id, approval.id)
    assert decided is not None and decided.status == "DENIED" and decided.decided_by == "ada@example.com"
    after = ada.get(path).text
    assert "Denied" in after and 'id="approve"' not in after
    # A second decision is refused.
    ada.post(f"{path}/approve", data={"csrf": csrf_of(after)})
    assert web_gw.approvals.get(user.id, approval.id).status == "DENIED"  # type: ignore[union-attr]

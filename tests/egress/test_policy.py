"""The egress policy on its own: every address class, every textual IPv4 form, URL syntax, the
allow levels, and the one setting that admits local addresses (never set on Lambda)."""

from __future__ import annotations

from pathlib import Path

import pytest
from workbench.guard.egress import EgressPolicy, EgressRefused
from workbench.settings import Settings

PUBLIC = EgressPolicy()
LOOPBACK = EgressPolicy(allow="loopback")
PRIVATE = EgressPolicy(allow="private")

# (address, the word the refusal names) for every class the policy refuses at the default level.
REFUSED = [
    ("127.0.0.1", "loopback"),
    ("127.255.0.9", "loopback"),
    ("::1", "loopback"),
    ("10.0.0.1", "private"),
    ("172.16.5.4", "private"),
    ("192.168.1.1", "private"),
    ("fd12:3456::1", "private"),
    ("100.64.0.1", "private"),  # CGNAT
    ("100.127.255.254", "private"),
    ("169.254.1.1", "link-local"),
    ("fe80::1", "link-local"),
    ("169.254.169.254", "metadata"),
    ("169.254.170.2", "metadata"),
    ("100.100.100.200", "metadata"),
    ("192.0.0.192", "metadata"),
    ("fd00:ec2::254", "metadata"),
    ("192.0.0.8", "reserved"),
    ("192.0.0.170", "reserved"),
    ("198.18.0.1", "benchmarking"),
    ("198.19.255.255", "benchmarking"),
    ("192.0.2.1", "documentation"),
    ("198.51.100.7", "documentation"),
    ("203.0.113.9", "documentation"),
    ("2001:db8::1", "documentation"),
    ("224.0.0.251", "multicast"),
    ("239.255.255.250", "multicast"),
    ("ff02::1", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "unspecified"),
    ("::", "unspecified"),
    ("fec0::1", "site-local"),
    ("::ffff:127.0.0.1", "IPv4-mapped"),
    ("::ffff:8.8.8.8", "IPv4-mapped"),  # every embedded form, even of a public address
    ("::7f00:1", "IPv4-compatible"),
    ("::127.0.0.1", "IPv4-compatible"),
    ("::ffff:0:7f00:1", "IPv4-translated"),
    ("::ffff:0:a9fe:a9fe", "IPv4-translated"),
    ("64:ff9b::7f00:1", "NAT64"),
    ("64:ff9b::808:808", "NAT64"),
    ("64:ff9b:1::a00:1", "NAT64"),
    ("2002:7f00:1::1", "6to4"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
    ("2001:2::1", "reserved"),  # benchmarking
    ("100::1", "reserved"),  # discard-only
    ("3fff::1", "documentation"),
    ("4000::1", "reserved"),  # outside global unicast
]


@pytest.mark.parametrize(("address", "kind"), REFUSED)
def test_every_non_global_class_is_refused_by_default(address: str, kind: str) -> None:
    why = PUBLIC.refusal(address)
    assert why is not None and kind in why, (address, why)
    with pytest.raises(EgressRefused, match="not a public internet address"):
        PUBLIC.check_address(address)


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "1.1.1.1", "8.8.4.4", "2606:4700::1111", "2a00:1450::1"]
)
def test_public_unicast_passes(address: str) -> None:
    assert PUBLIC.refusal(address) is None


def test_loopback_level_admits_loopback_only() -> None:
    admitted = {a for a, _ in REFUSED if LOOPBACK.refusal(a) is None}
    assert admitted == {"127.0.0.1", "127.255.0.9", "::1"}


def test_private_level_admits_lan_but_never_metadata_link_local_or_embedded_forms() -> None:
    admitted = {a for a, _ in REFUSED if PRIVATE.refusal(a) is None}
    assert admitted == {
        "127.0.0.1",
        "127.255.0.9",
        "::1",
        "10.0.0.1",
        "172.16.5.4",
        "192.168.1.1",
        "fd12:3456::1",
        "100.64.0.1",
        "100.127.255.254",
    }


# Every textual form of an IPv4 address other than canonical dotted decimal is refused outright,
# at every level: what inet_aton or a WHATWG parser reads as 127.0.0.1 (or anything else).
TEXTUAL_V4 = [
    "2130706433",  # decimal
    "0x7f000001",  # hex
    "0x7f.1",  # hex + short
    "0x7F.0x0.0x0.0x1",
    "0177.0.0.1",  # octal
    "0177.1",
    "127.1",  # short
    "127.0.1",
    "127.000.000.001",  # leading zeros
    "017700000001",
    "0x7f.0.0.1",  # mixed
    "3232235777",  # 192.168.1.1
    "2852039166",  # 169.254.169.254
    "0xa9fea9fe",
    "134744072",  # 8.8.8.8: a public address in a non-standard form is refused too
    "1.2.3.4.5",
    "1.1.1.1.",
    "example.0x1",
]


@pytest.mark.parametrize("host", TEXTUAL_V4)
@pytest.mark.parametrize("policy", [PUBLIC, PRIVATE], ids=["public", "private"])
def test_every_textual_ipv4_form_is_refused(host: str, policy: EgressPolicy) -> None:
    with pytest.raises(EgressRefused, match="Refused"):
        policy.check_url(f"https://{host}/x")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://example.com/", "must use https"),
        ("ftp://example.com/", "must use https"),
        ("file:///etc/passwd", "must use https"),
        ("gopher://example.com/", "must use https"),
        ("example.com/x", "must be absolute"),
        ("//example.com/x", "must be absolute"),
        ("https://user:pw@example.com/", "user:password"),
        ("https://user@example.com/", "user:password"),
        ("https://example.com\\@evil.test/", "backslash"),
        ("https://evil.test\\.example.com/", "backslash"),
        ("https://exa mple.com/", "whitespace"),
        ("https://example.com/\r\nHost: evil", "control"),
        ("https://example.com:0/", "not a valid URL"),
        ("https://example.com:70000/", "not a valid URL"),
        ("https://[::1/", "not a valid URL"),
        ("https://%31%32%37.0.0.1/", "not a valid host name"),
        ("https://[fe80::1%25eth0]/", "not a valid IPv6 address"),
        ("https://１２７.０.０.１/", "Refused"),
        ("https:///path", "Refused"),
        ("https://127.0.0.1/", "loopback"),
        ("https://[::ffff:7f00:1]/", "IPv4-mapped"),
        ("https://[64:ff9b:1::7f00:1]/", "NAT64"),
    ],
)
def test_url_syntax_is_strict(url: str, message: str) -> None:
    with pytest.raises(EgressRefused, match=message):
        PUBLIC.check_url(url)


def test_ordinary_urls_pass_and_keep_their_host() -> None:
    checked = PUBLIC.check_url("https://API.Example.com:8443/v1/items?q=1")
    assert (checked.scheme, checked.host, checked.port, checked.address) == (
        "https",
        "api.example.com",
        8443,
        None,
    )
    literal = PUBLIC.check_url("https://93.184.216.34/x")
    assert str(literal.address) == "93.184.216.34"
    assert PUBLIC.check_url("https://[2606:4700::1111]/").host == "2606:4700::1111"


def test_plain_http_only_where_local_addresses_are_allowed() -> None:
    with pytest.raises(EgressRefused, match="must use https"):
        PUBLIC.check_url("http://127.0.0.1:8080/")
    assert LOOPBACK.check_url("http://127.0.0.1:8080/").port == 8080
    with pytest.raises(EgressRefused, match="private"):
        LOOPBACK.check_url("http://10.0.0.1/")


async def test_one_refused_answer_refuses_the_whole_resolution() -> None:
    asked: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["93.184.216.34", "127.0.0.1"]

    policy = EgressPolicy(resolver=resolver)
    with pytest.raises(EgressRefused, match=r"resolves to 127\.0\.0\.1, a loopback address"):
        await policy.resolve("split.example", 443)
    assert asked == ["split.example"]


async def test_scoped_answers_and_unresolvable_names() -> None:
    async def scoped(host: str, port: int) -> list[str]:
        return ["fe80::1%eth0"]

    with pytest.raises(EgressRefused, match="scoped"):
        await EgressPolicy(resolver=scoped).resolve("x.example", 443)

    async def nothing(host: str, port: int) -> list[str]:
        raise OSError("Name or service not known")

    with pytest.raises(EgressRefused, match="does not resolve") as info:
        await EgressPolicy(resolver=nothing).check("https://x.example/")
    assert info.value.status == 502
    # At entry time a name that does not resolve yet may pass (it is checked on every call) ...
    checked = await EgressPolicy(resolver=nothing).check("https://x.example/", unresolvable_ok=True)
    assert checked.host == "x.example"

    # ... but never one that resolves to a refused address.
    async def internal(host: str, port: int) -> list[str]:
        return ["10.1.2.3"]

    with pytest.raises(EgressRefused, match="private"):
        await EgressPolicy(resolver=internal).check("https://x.example/", unresolvable_ok=True)


@pytest.mark.parametrize(
    ("env", "level"),
    [
        ({}, "public"),
        ({"WORKBENCH_EGRESS_ALLOW": "public"}, "public"),
        ({"WORKBENCH_EGRESS_ALLOW": "loopback"}, "loopback"),
        ({"WORKBENCH_EGRESS_ALLOW": "private"}, "private"),
        ({"WORKBENCH_PROXY_ALLOW_LOOPBACK": "1"}, "loopback"),
        ({"WORKBENCH_OAUTH_CIMD_ALLOW_LOOPBACK_HTTP": "1"}, "loopback"),
        ({"WORKBENCH_PROXY_ALLOW_LOOPBACK": "1", "WORKBENCH_EGRESS_ALLOW": "public"}, "public"),
        ({"WORKBENCH_STORE": "dynamodb"}, "public"),
    ],
)
def test_one_setting_decides_the_level(env: dict[str, str], level: str) -> None:
    assert Settings.from_env(env).egress_allow == level


def test_an_unknown_level_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="WORKBENCH_EGRESS_ALLOW must be public, loopback or private"):
        Settings.from_env({"WORKBENCH_EGRESS_ALLOW": "all"})


def test_the_lambda_configuration_never_admits_local_addresses() -> None:
    template = (Path(__file__).resolve().parents[2] / "template.yaml").read_text()
    for name in (
        "WORKBENCH_EGRESS_ALLOW",
        "WORKBENCH_PROXY_ALLOW_LOOPBACK",
        "WORKBENCH_OAUTH_CIMD_ALLOW_LOOPBACK_HTTP",
    ):
        assert name not in template, name

"""Jot bodies: GFM by markdown-it-py, sanitised by nh3. What renders, and that nothing an author
writes becomes script, an event handler or a dangerous URL."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from workbench.web.jots_markdown import ALLOWED_TAGS, URL_SCHEMES, render_markdown

ATTRIBUTES = {
    "a": {"href", "title", "rel"},
    "img": {"src", "alt", "title", "loading", "referrerpolicy"},
    "ol": {"start"},
    "th": {"style"},
    "td": {"style"},
    "code": {"class"},
}


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    handle_startendtag = handle_starttag


def tags_of(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Collect()
    parser.feed(html)
    return parser.tags


def test_gfm_tables_with_alignment() -> None:
    html = render_markdown("| Name | Count |\n|:-----|------:|\n| jots | 3 |\n| `x` | **4** |")
    assert "<table>" in html and "<thead>" in html and "<tbody>" in html
    assert '<th style="text-align:left">Name</th>' in html and '<td style="text-align:right">3</td>' in html
    assert "<td><code>x</code></td>" in html.replace(' style="text-align:left"', "")
    assert "<strong>4</strong>" in html


def test_nested_lists() -> None:
    html = render_markdown("- a\n  - b\n    1. c\n    2. d\n- e")
    assert [t for t, _ in tags_of(html)] == ["ul", "li", "ul", "li", "ol", "li", "li", "li"]
    assert render_markdown("3. three\n4. four").startswith('<ol start="3">')


def test_bare_urls_become_links() -> None:
    html = render_markdown("see https://example.com/a?b=1&c=2 and www.example.org, not javascript:alert(1)")
    assert (
        '<a href="https://example.com/a?b=1&amp;c=2" rel="noopener noreferrer nofollow">https://example.com/a?b=1&amp;c=2</a>'
        in html
    )
    assert '<a href="http://www.example.org" rel="noopener noreferrer nofollow">www.example.org</a>' in html
    assert "javascript" not in "".join(str(a.get("href")) for _, a in tags_of(html))


def test_images() -> None:
    html = render_markdown('![a cat](https://img.example/cat.png "Cat")')
    assert html.startswith("<p><img ") and html.endswith("></p>")
    assert tags_of(html) == [
        ("p", {}),
        (
            "img",
            {
                "src": "https://img.example/cat.png",
                "alt": "a cat",
                "title": "Cat",
                "loading": "lazy",
                "referrerpolicy": "no-referrer",  # a shared jot's link never leaks to the image host
            },
        ),
    ]
    for bad in ("javascript:alert(1)", "data:text/html,<script>x</script>", "vbscript:x"):
        for tag, attrs in tags_of(render_markdown(f"![x]({bad})")):
            assert tag != "img" or "src" not in attrs, bad


def test_the_rest_of_the_subset() -> None:
    assert render_markdown("## Title ##") == "<h2>Title</h2>"
    assert render_markdown("a **b** *c* _d_ ~~e~~ `f <g>`") == (
        "<p>a <strong>b</strong> <em>c</em> <em>d</em> <s>e</s> <code>f &lt;g&gt;</code></p>"
    )
    assert render_markdown("line one\nline two") == "<p>line one<br>\nline two</p>"
    assert render_markdown("---") == "<hr>"
    assert render_markdown("```py\n**not bold** <b>\n```") == (
        '<pre><code class="language-py">**not bold** &lt;b&gt;\n</code></pre>'
    )
    assert render_markdown("snake_case_name") == "<p>snake_case_name</p>"
    assert render_markdown("[a](/jots/x) [b](#top) [c](mailto:a@b.example)").count("<a href=") == 3


@pytest.mark.parametrize(
    "text",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        '<a href="javascript:alert(1)" onclick="x()">x</a>',
        "[x](javascript:alert(1))",
        "[x](JaVaScRiPt:alert(1))",
        "[x](java\tscript:alert(1))",
        "[x](&#106;avascript:alert(1))",
        "[x](vbscript:msgbox)",
        "[x](data:text/html;base64,PHNjcmlwdD4=)",
        "<iframe src=https://evil.example></iframe>",
        "<style>body{display:none}</style>",
        '<svg onload="alert(1)"><circle/></svg>',
        '[x](https://ok.example "t" onmouseover=alert(1))',
        '<div style="background:url(javascript:alert(1))">x</div>',
        "| a |\n|---|\n| <script>x</script> |",
    ],
)
def test_script_event_handlers_and_javascript_urls_are_removed(text: str) -> None:
    html = render_markdown(text)
    for tag, attrs in tags_of(html):
        assert tag in ALLOWED_TAGS, (text, tag)
        assert set(attrs) <= ATTRIBUTES.get(tag, set()), (text, tag, attrs)
        for name in ("href", "src"):
            url = attrs.get(name)
            if url is not None:
                scheme = urlsplit(url).scheme.lower()
                assert scheme in URL_SCHEMES or (not scheme and not url.startswith("//")), (text, url)
    lowered = html.lower()
    assert "<script" not in lowered and "<iframe" not in lowered and "<svg" not in lowered
    # (escaped text like &lt;a href="javascript:…"&gt; may remain: it is text, not a tag, as parsed above)


_ALPHABET = st.sampled_from(
    [
        *list("<>\"'&=/ *_`~[]()#>-:|!\n"),
        "<script>",
        "javascript:",
        "onerror=",
        "<img src=x ",
        "![i](",
        "https://a.example",
        "a",
        "b",
        "1. ",
        "  - ",
        "|---|",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_ALPHABET, max_size=60).map("".join))
def test_no_input_produces_markup_beyond_the_allow_list(text: str) -> None:
    for tag, attrs in tags_of(render_markdown(text)):
        assert tag in ALLOWED_TAGS, (text, tag)
        assert set(attrs) <= ATTRIBUTES.get(tag, set()), (text, tag, attrs)
        for name in ("href", "src"):
            url = attrs.get(name)
            if url is not None:
                scheme = urlsplit(url).scheme.lower()
                assert scheme in URL_SCHEMES or not scheme, (text, url)
                assert not url.lower().lstrip().startswith("javascript"), (text, url)

"""The jots markdown renderer: the supported subset, and nothing an author writes becomes markup."""

from __future__ import annotations

from html.parser import HTMLParser

from hypothesis import given, settings
from hypothesis import strategies as st
from workbench.web.jots_markdown import render_markdown, safe_href

RENDERED_TAGS = {"h1", "h2", "h3", "h4", "h5", "h6", "p", "br", "pre", "code", "blockquote", "ul", "ol", "li"}
RENDERED_TAGS |= {"hr", "strong", "em", "del", "a"}


def test_subset() -> None:
    assert render_markdown("## Title ##") == "<h2>Title</h2>"
    assert render_markdown("a **b** *c* _d_ ~~e~~ `f <g>`") == (
        "<p>a <strong>b</strong> <em>c</em> <em>d</em> <del>e</del> <code>f &lt;g&gt;</code></p>"
    )
    assert render_markdown("1. one\n2. two") == "<ol><li>one</li><li>two</li></ol>"
    assert render_markdown("line one\nline two") == "<p>line one<br>\nline two</p>"
    assert render_markdown("---") == "<hr>"
    assert render_markdown("> a\n>\n> b") == "<blockquote><p>a</p><p>b</p></blockquote>"
    assert render_markdown("```\n**not bold** <b>\n```") == "<pre><code>**not bold** &lt;b&gt;</code></pre>"
    assert render_markdown("snake_case_name") == "<p>snake_case_name</p>"
    assert render_markdown("[a](https://x.example/?q=1&r=2)") == (
        '<p><a href="https://x.example/?q=1&amp;r=2" rel="noopener noreferrer nofollow">a</a></p>'
    )


def test_unsafe_link_targets_are_dropped() -> None:
    for url in (
        "javascript:alert(1)",
        "JAVASCRIPT:x",
        "data:text/html,x",
        "//evil.example",
        "vbscript:x",
        "java\tscript:x",
    ):
        assert safe_href(url) is None, url
    for url in ("https://a.example", "http://a.example/x", "mailto:a@b.example", "/jots/x", "#top"):
        assert safe_href(url) == url
    assert render_markdown("[x](javascript:void)") == "<p>x</p>"


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


_ALPHABET = st.sampled_from(
    [*list("<>\"'&=/ *_`~[]()#>-:\n"), "<script>", "javascript:", "onerror=", "a", "b", "1. "]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_ALPHABET, max_size=60).map("".join))
def test_no_input_produces_markup_beyond_the_subset(text: str) -> None:
    parser = _Collect()
    parser.feed(render_markdown(text))
    for tag, attrs in parser.tags:
        assert tag in RENDERED_TAGS, (text, tag)
        names = [name for name, _ in attrs]
        assert names == ([] if tag != "a" else ["href", "rel"]), (text, tag, attrs)
        if tag == "a":
            href = dict(attrs)["href"]
            assert href is not None and safe_href(href) == href, (text, href)

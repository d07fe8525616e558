"""Jot bodies as HTML: GitHub-flavoured Markdown by markdown-it-py, then an allow-list sanitiser (nh3).

Two independent layers, so neither has to be perfect alone:
- markdown-it-py with raw HTML off: whatever HTML an author types is escaped text, and its link
  validation already refuses javascript:, vbscript:, file: and non-image data: URLs.
- nh3 (ammonia) over the result: only the tags and attributes below survive, URLs only with the
  schemes below (relative links stay), every link gets rel="noopener noreferrer nofollow", and an
  image gets referrerpolicy="no-referrer" and lazy loading.

Supported: CommonMark, GFM tables (with column alignment), strikethrough, bare URLs turned into
links (linkify), images, nested lists, fenced code, and single newlines kept as line breaks.
The jots host's CSP still allows no script; images load only over https (or as data: URIs).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import nh3
from markdown_it import MarkdownIt

from workbench.guard.jsontext import replace_lone_surrogates

__all__ = ["ALLOWED_TAGS", "URL_SCHEMES", "render_markdown"]

ALLOWED_TAGS = frozenset(
    {
        *(f"h{i}" for i in range(1, 7)),
        *("p", "br", "hr", "pre", "code", "blockquote", "ul", "ol", "li", "strong", "em", "del", "s"),
        *("a", "img", "table", "thead", "tbody", "tr", "th", "td"),
    }
)
_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "ol": {"start"},
    "th": {"style"},
    "td": {"style"},
    "code": {"class"},  # language-xyz from a fenced block's info string
}
URL_SCHEMES = frozenset({"http", "https", "mailto"})


@cache
def _parser() -> MarkdownIt:
    # "gfm-like" = CommonMark + tables + strikethrough + linkify; raw HTML is switched back off.
    return MarkdownIt("gfm-like", {"html": False, "breaks": True, "linkify": True, "typographer": False})


@cache
def _cleaner() -> Any:
    return nh3.Cleaner(
        tags=set(ALLOWED_TAGS),
        attributes={k: set(v) for k, v in _ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener noreferrer nofollow",
        filter_style_properties={"text-align"},
        set_tag_attribute_values={"img": {"referrerpolicy": "no-referrer", "loading": "lazy"}},
        strip_comments=True,
        attribute_filter=_no_network_path_urls,
    )


def _no_network_path_urls(tag: str, attribute: str, value: str) -> str | None:
    """Drop scheme-relative ("//host/x") and backslash URLs: a relative link stays on this site."""
    if attribute in ("href", "src") and value.lstrip().startswith(("//", "\\", "/\\", "\\/")):
        return None
    return value


def render_markdown(text: str) -> str:
    """Safe HTML for a jot body (any input: nothing an author writes becomes script or a handler)."""
    html = _parser().render(replace_lone_surrogates(text))  # nh3 takes only encodable text
    return str(_cleaner().clean(html)).strip()

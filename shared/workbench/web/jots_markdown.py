"""A small, safe markdown renderer for the jots host.

Safety comes from the order of operations: every piece of the author's text is HTML-escaped first,
and only then are a few constructs turned into tags this module writes itself. No author-supplied
HTML ever reaches the page, attributes exist only on links, and a link's URL must be http(s),
mailto, or a same-page/same-site path.

Supported: ATX headings, paragraphs, hard line breaks kept as <br>, fenced code blocks, block
quotes, bulleted and numbered lists (one level), horizontal rules, `code`, **bold**, *italic* /
_italic_, ~~strike~~, and [text](url) links.
"""

from __future__ import annotations

import re
from html import escape
from urllib.parse import urlsplit

__all__ = ["render_markdown", "safe_href"]

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_QUOTE = re.compile(r"^\s{0,3}>\s?(.*)$")
_BULLET = re.compile(r"^\s{0,3}[-*+]\s+(.*)$")
_NUMBER = re.compile(r"^\s{0,3}\d{1,9}[.)]\s+(.*)$")
# Code spans and links are found on the raw text, so their parts can be escaped separately.
_TOKEN = re.compile(r"`(?P<code>[^`\n]+)`|\[(?P<text>[^\[\]\n]+)\]\((?P<url>[^()\s]+)\)")
_EMPHASIS = (
    (re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*"), "strong"),
    (re.compile(r"__(?=\S)(.+?)(?<=\S)__"), "strong"),
    (re.compile(r"~~(?=\S)(.+?)(?<=\S)~~"), "del"),
    (re.compile(r"(?<![*\w])\*(?=\S)(.+?)(?<=\S)\*(?![*\w])"), "em"),
    (re.compile(r"(?<![_\w])_(?=\S)(.+?)(?<=\S)_(?![_\w])"), "em"),
)
_SCHEMES = frozenset({"http", "https", "mailto"})


def safe_href(url: str) -> str | None:
    """The URL if it is safe as a link target, else None (javascript:, data:, //host, controls...)."""
    url = url.strip()
    if not url or any(ord(c) < 0x20 or c in "\\\x7f" for c in url):
        return None
    if url.startswith("#") or (url.startswith("/") and not url.startswith("//")):
        return url
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        return None
    return url if scheme in _SCHEMES else None


def _emphasis(escaped: str) -> str:
    for pattern, tag in _EMPHASIS:
        escaped = pattern.sub(lambda m, t=tag: f"<{t}>{m.group(1)}</{t}>", escaped)  # type: ignore[misc]
    return escaped


def _inline(raw: str) -> str:
    out: list[str] = []
    pos = 0
    for m in _TOKEN.finditer(raw):
        out.append(_emphasis(escape(raw[pos : m.start()])))
        if m.group("code") is not None:
            out.append(f"<code>{escape(m.group('code'))}</code>")
        else:
            href = safe_href(m.group("url"))
            label = _emphasis(escape(m.group("text")))
            if href is None:
                out.append(label)  # an unsafe target keeps its text and loses the link
            else:
                out.append(
                    f'<a href="{escape(href, quote=True)}" rel="noopener noreferrer nofollow">{label}</a>'
                )
        pos = m.end()
    out.append(_emphasis(escape(raw[pos:])))
    return "".join(out)


def _paragraph(lines: list[str]) -> str:
    return "<p>" + "<br>\n".join(_inline(line.strip()) for line in lines) + "</p>"


def render_markdown(text: str) -> str:
    """HTML for `text`; every character of the input is either escaped or consumed as syntax."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[str] = []
    para: list[str] = []
    i = 0

    def flush() -> None:
        if para:
            out.append(_paragraph(para))
            para.clear()

    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            flush()
            marker = fence.group(1)
            body: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith(marker):
                body.append(lines[i])
                i += 1
            i += 1  # the closing fence (or the end of the text)
            out.append("<pre><code>" + escape("\n".join(body)) + "</code></pre>")
            continue
        if not line.strip():
            flush()
            i += 1
            continue
        heading = _HEADING.match(line)
        if heading:
            flush()
            level = len(heading.group(1))
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
            i += 1
            continue
        if _RULE.match(line):
            flush()
            out.append("<hr>")
            i += 1
            continue
        if _QUOTE.match(line):
            flush()
            quoted: list[str] = []
            while i < len(lines) and (m := _QUOTE.match(lines[i])):
                quoted.append(m.group(1))
                i += 1
            inner = [_paragraph(chunk) for chunk in _chunks(quoted)]
            out.append("<blockquote>" + "".join(inner) + "</blockquote>")
            continue
        for pattern, tag in ((_BULLET, "ul"), (_NUMBER, "ol")):
            if pattern.match(line):
                flush()
                items: list[str] = []
                while i < len(lines) and (m := pattern.match(lines[i])):
                    items.append(f"<li>{_inline(m.group(1).strip())}</li>")
                    i += 1
                out.append(f"<{tag}>" + "".join(items) + f"</{tag}>")
                break
        else:
            para.append(line)
            i += 1
    flush()
    return "\n".join(out)


def _chunks(lines: list[str]) -> list[list[str]]:
    chunks: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            chunks[-1].append(line)
        elif chunks[-1]:
            chunks.append([])
    return [c for c in chunks if c]

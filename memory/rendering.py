"""Turning untrusted lesson text into HTML a reviewer can trust.

Lesson text is LLM output. It is rendered as Markdown with raw HTML disabled and only
http(s) or relative links; characters a reviewer cannot see (zero-width, bidi controls, BOM…)
are made visible as `⟦U+200B⟧` chips so a hidden instruction cannot slip past review.
"""

import difflib
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.utils.safestring import mark_safe
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml

# --- invisible and bidi characters -----------------------------------------------------------

# Characters that render as nothing (or as a plain space) yet change meaning or direction.
_EXTRA_INVISIBLE = {
    0x00A0,  # no-break space
    0x115F,
    0x1160,
    0x3164,
    0xFFA0,  # Hangul fillers: render as blank
    0x2800,  # braille blank
    0x180E,  # Mongolian vowel separator
    0x2000,
    0x2001,
    0x2002,
    0x2003,
    0x2004,
    0x2005,
    0x2006,
    0x2007,
    0x2008,
    0x2009,
    0x200A,
    0x202F,
    0x205F,
    0x3000,
    0x2028,
    0x2029,  # line and paragraph separators: a line break most editors do not show
}


def is_invisible(ch):
    if ch == "\n":
        return False
    cp = ord(ch)
    # Cf: format characters (ZWSP, ZWJ, LRM/RLM, RLO/LRO, isolates, BOM, soft hyphen, tags...).
    # Cc: control characters. Co: private use (renders as nothing useful).
    return unicodedata.category(ch) in ("Cf", "Cc", "Co") or cp in _EXTRA_INVISIBLE


def invisible_label(ch):
    return f"⟦U+{ord(ch):04X}⟧"


def invisible_name(ch):
    return unicodedata.name(ch, "control character").title()


def _invisible_class():
    """A regex character class of every invisible code point, as ranges (built once at import)."""
    ranges, start, prev = [], None, None
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF or not is_invisible(chr(cp)):
            continue
        if prev is not None and cp == prev + 1:
            prev = cp
            continue
        if start is not None:
            ranges.append((start, prev))
        start = prev = cp
    ranges.append((start, prev))
    return (
        "["
        + "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)
        + "]"
    )


_INVISIBLE_RE = re.compile(_invisible_class())


def find_invisible(text):
    """The distinct invisible characters in text, in order of first appearance."""
    seen = []
    for ch in _INVISIBLE_RE.findall(text or ""):
        if ch not in seen:
            seen.append(ch)
    return seen


def has_invisible(text):
    return bool(text) and _INVISIBLE_RE.search(text) is not None


@dataclass(frozen=True)
class Segment:
    """A run of ordinary text, or one invisible character to show as a chip."""

    text: str
    invisible: bool = False

    @property
    def label(self):
        return invisible_label(self.text) if self.invisible else self.text

    @property
    def name(self):
        return invisible_name(self.text) if self.invisible else ""


def invisible_segments(text):
    """Split text so templates can render invisible characters as chips, with autoescaping on."""
    segments, pos = [], 0
    text = text or ""
    for match in _INVISIBLE_RE.finditer(text):
        if match.start() > pos:
            segments.append(Segment(text[pos : match.start()]))
        segments.append(Segment(match.group(), invisible=True))
        pos = match.end()
    if pos < len(text):
        segments.append(Segment(text[pos:]))
    return segments


# --- Markdown --------------------------------------------------------------------------------

SAFE_SCHEMES = ("http", "https")


def _link_is_safe(url):
    # Browsers ignore control characters and whitespace inside a scheme ("java\tscript:"), so
    # judge the URL with them stripped; anything with a scheme other than http(s) is refused.
    cleaned = re.sub(r"[\x00-\x20\x7f]", "", url or "")
    scheme = urlsplit(cleaned).scheme.lower() if ":" in cleaned.split("/", 1)[0] else ""
    return scheme == "" or scheme in SAFE_SCHEMES


def _build_markdown():
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.disable("image")  # remote images would let lesson text fetch arbitrary URLs from the reviewer's browser
    md.validateLink = _link_is_safe

    def link_open(self, tokens, idx, options, env):
        tokens[idx].attrSet("rel", "nofollow noopener noreferrer")
        return self.renderToken(tokens, idx, options, env)

    md.add_render_rule("link_open", link_open)

    # Invisible characters become chips in text and inline code only, never inside attributes
    # (a link title), where inserted markup would break the tag.
    def text(self, tokens, idx, options, env):
        return _with_chips(escapeHtml(tokens[idx].content))

    def code_inline(self, tokens, idx, options, env):
        token = tokens[idx]
        return f"<code{self.renderAttrs(token)}>{_with_chips(escapeHtml(token.content))}</code>"

    md.add_render_rule("text", text)
    md.add_render_rule("code_inline", code_inline)
    return md


_MD = _build_markdown()


def _chip_html(ch):
    return f'<span class="invisible-char" title="{invisible_name(ch)}">{invisible_label(ch)}</span>'


def _with_chips(escaped):
    return _INVISIBLE_RE.sub(lambda m: _chip_html(m.group()), escaped)


def render_markdown(text):
    """Lesson text as inline HTML: Markdown, no raw HTML, safe links, invisible characters as chips.

    This is the only place that marks HTML safe. It is safe because markdown-it escapes every
    character of the input it does not turn into markup itself (raw HTML is disabled, unsafe links
    are left as escaped text), and the chips the text rules insert for invisible characters
    contain only code point numbers and Unicode names.
    """
    html = _MD.renderInline(text or "")
    return mark_safe(html)


# --- diffs -----------------------------------------------------------------------------------

_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")


def text_diff(before, after):
    """Word-level diff as [(op, text)], op in equal/delete/insert; templates render it escaped.

    Short unchanged bits (a space, "the") between two edits are folded into the edit, so a
    rewritten phrase reads as one deletion followed by one insertion rather than confetti.
    """
    a = _TOKENS.findall(before or "")
    b = _TOKENS.findall(after or "")
    regions = []  # ["equal", text] or ["change", deleted, inserted]
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            regions.append(["equal", "".join(a[i1:i2])])
        else:
            regions.append(["change", "".join(a[i1:i2]), "".join(b[j1:j2])])
    merged = []
    for region in regions:
        if (
            region[0] == "change"
            and len(merged) >= 2
            and merged[-1][0] == "equal"
            and merged[-2][0] == "change"
            and len(merged[-1][1].strip()) <= 3
        ):
            glue = merged.pop()[1]
            merged[-1][1] += glue + region[1]
            merged[-1][2] += glue + region[2]
        else:
            merged.append(region)
    out = []
    for region in merged:
        if region[0] == "equal":
            out.append(("equal", region[1]))
            continue
        if region[1]:
            out.append(("delete", region[1]))
        if region[2]:
            out.append(("insert", region[2]))
    return out


SNAPSHOT_FIELDS = [
    ("tier", "Tier"),
    ("category", "Category"),
    ("relevance", "Relevance"),
    ("status", "Status"),
    ("protected", "Protected"),
    ("lesson_date", "Date"),
    ("expires_on", "Expires on"),
    ("expires_when", "Holds until"),
    ("refs", "Refs"),
]


def _field_text(value):
    if isinstance(value, list):
        return ", ".join(value) or "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return value if value not in (None, "") else "—"


def snapshot_diff(before, after):
    """What one change did: the text diff and the other fields that changed (before → after)."""
    before = before or {}
    after = after or {}
    created = not before
    fields = []
    for key, label in SNAPSHOT_FIELDS:
        if before.get(key) != after.get(key):
            fields.append(
                {
                    "label": label,
                    "before": "" if created else _field_text(before.get(key)),
                    "after": _field_text(after.get(key)) if after else "—",
                }
            )
    text_changed = not created and before.get("text") != after.get("text")
    return {
        "text": text_diff(before.get("text", ""), after.get("text", "")) if text_changed else None,
        "text_now": after.get("text") or before.get("text", ""),
        "fields": fields,
        "created": created,
    }

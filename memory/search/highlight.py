"""Lesson text with the query's words marked: built from escaped pieces, so the text stays inert."""

import re

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from memory.search.terms import Query, word_stems

_WORD = re.compile(r"\w+", re.UNICODE)


def highlight(text: str, query: Query) -> SafeString:
    """`text` escaped, with every word matching the query (as written or by a stem) in <mark>."""
    wanted = set(query.positive_words)
    stems = {s for w in wanted for s in word_stems(w)}
    spans: list[tuple[int, int]] = []
    for code, negated in query.codes:
        if not negated:
            spans += [m.span() for m in re.finditer(re.escape(code), text, re.IGNORECASE)]
    for m in _WORD.finditer(text):
        word = m.group().lower()
        if word in wanted or stems.intersection(word_stems(word)):
            spans.append(m.span())
    out: list[str] = []
    at = 0
    for start, end in sorted(spans):
        if start < at:
            if end > at:  # overlapping spans: extend the open mark
                out.insert(len(out) - 1, escape(text[at:end]))
                at = end
            continue
        out += [escape(text[at:start]), "<mark>", escape(text[start:end]), "</mark>"]
        at = end
    out.append(escape(text[at:]))
    # Every piece of lesson text above went through escape(); only the <mark> tags are ours.
    return mark_safe("".join(out))

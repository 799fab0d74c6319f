"""Words, their stems and the query language, shared by the index (SQLite's `nw_stems`) and the read.

The query follows PostgreSQL's `websearch_to_tsquery`: words must all appear, `"a phrase"` in that
order, `or` between two words takes either, `-word` excludes. A word holding `/ . _ # < > = : @ +` or
an inner `-` (`src/billing/refund.py`, `pydantic<2`, `#L20`) is code: it must appear as written.
"""

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache

import Stemmer

from memory.conflicts.lexicon import STOPWORDS  # English, German and Spanish

# English, German and Spanish at least: a word matches its inflected forms in each.
LANGUAGES = ("english", "german", "spanish")
MAX_QUERY_CHARS = 1000
MAX_TERMS = 24
PREFIX_MIN = 4

_WORD = re.compile(r"\w+", re.UNICODE)
_CODE_CHARS = set("/._#<>=:@+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_STEMMERS = [Stemmer.Stemmer(language) for language in LANGUAGES]


def words(text: str) -> list[str]:
    """The lower-case words of a text, as the index's tokenizer splits it (letters, digits, `_`)."""
    return [w for w in _WORD.findall(text.lower()) if w != "_"]


def _stems_of(word: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for stemmer in _STEMMERS:
        seen.setdefault(stemmer.stemWord(word), None)
    return tuple(seen)


@lru_cache(maxsize=50_000)
def word_stems(word: str) -> tuple[str, ...]:
    """The word's stems in each language, without repeats (the word itself when no stemmer changes it)."""
    return _stems_of(word)


class _DifferingStems(dict):
    """word → its stems that differ from it, space separated ("" when none): what a word adds to the
    index's stems column. A store's words repeat from lesson to lesson, so each is stemmed once; a
    number is never stemmed (no stemmer changes digits) nor kept. Emptied when it holds
    INDEX_WORDS_KEPT words, so a store of endless distinct words cannot grow it without bound."""

    def __missing__(self, word: str) -> str:
        if word.isdigit() and word.isascii():
            return ""
        if len(self) >= INDEX_WORDS_KEPT:
            self.clear()
        value = self[word] = " ".join(s for s in _stems_of(word) if s != word)
        return value


class _ChunkStems(dict):
    """The same for a lower-cased run of text between spaces (`refund.py`, `(case`, `retried,`): its
    words' differing stems, joined. Splitting at spaces is much cheaper than the word regex, and such
    runs repeat as words do; no word spans a space, so the words of the runs are the text's words."""

    def __missing__(self, chunk: str) -> str:
        value = " ".join(filter(None, map(_differing_stems, _WORD.findall(chunk))))
        if len(self) >= INDEX_WORDS_KEPT:
            self.clear()
        self[chunk] = value
        return value


INDEX_WORDS_KEPT = 200_000
_differing_stems = _DifferingStems().__getitem__
_chunk_stems = _ChunkStems().__getitem__


def stems(text: str | None) -> str:
    """The index's second column: the words' stems that differ from the word, space separated (SQLite
    calls it as `nw_stems` for every lesson written, so it is kept to a split, a lookup per run of
    text and a join)."""
    if not text:
        return ""
    # A stem equal to its word is in the text column already (the query looks for stems there too).
    return " ".join(filter(None, map(_chunk_stems, text.lower().split())))


def clean(query: str) -> str:
    """The query without NUL and control characters (a tab or newline becomes a space)."""
    return _CONTROL.sub(" ", unicodedata.normalize("NFC", query).replace("\t", " ").replace("\n", " ")).strip()


def is_code(token: str) -> bool:
    return any(c in _CODE_CHARS for c in token) or "-" in token.strip("-")


@dataclass
class Term:
    """One word, phrase or code token of a query; `alternatives` holds the words or-ed with it."""

    words: list[str]
    code: str = ""  # the token as written, when it is code
    negated: bool = False
    phrase: bool = False
    alternatives: list["Term"] = field(default_factory=list)


@dataclass
class Query:
    terms: list[Term]
    text: str  # the cleaned query, for PostgreSQL's own parser
    # Relaxed (see relaxed()): a lesson holding any one of the terms matches, not only one holding all.
    any_term: bool = False
    # Words asked for as written only, not as prefixes (too widespread: memory/search/prefixes.py);
    # None until the search settles them (selectors.settled).
    whole: frozenset[str] | None = None

    @property
    def positive_words(self) -> list[str]:
        """Words to highlight: every word not excluded."""
        out = []
        for term in self.terms:
            for t in [term, *term.alternatives]:
                if not t.negated:
                    out.extend(t.words)
        return out

    @property
    def codes(self) -> list[tuple[str, bool]]:
        """(code token, negated) of the terms that must (or must not) appear as written. A relaxed
        query requires none of its terms, so only its excluded code tokens are checked."""
        return [
            (t.code, t.negated)
            for t in self.terms
            if t.code and not t.alternatives and (t.negated or not self.any_term)
        ]

    @property
    def negated_text(self) -> str:
        """The excluded terms as PostgreSQL's websearch syntax reads them, or-ed ("" when none)."""
        return " or ".join(_as_typed(t) for t in self.terms if t.negated)

    def relaxed(self) -> "Query | None":
        """The query asking for lessons that hold any one of its terms rather than all of them: what
        the search page shows when no lesson holds every term ("customer charged twice for a refund"
        when the lesson says "charged a customer twice"). Words that say nothing on their own (the,
        für, para) are left out, unless they are all there is; phrases and code stay whole, and
        excluded terms stay excluded. The best lessons hold the most terms, and the rarest. None when
        there is nothing to relax (a single term, or a query already relaxed)."""
        if self.any_term:
            return None
        if sum(not term.negated for term in self.terms) < 2:
            return None  # one term (with its or-ed alternatives): any one of them is what it asks already
        asked = [t for term in self.terms if not term.negated for t in [term, *term.alternatives]]
        telling = [t for t in asked if t.phrase or t.code or any(w not in STOPWORDS for w in t.words)]
        kept = [Term(t.words, code=t.code, phrase=t.phrase) for t in (telling or asked)]
        negated = [t for t in self.terms if t.negated]
        return Query(kept + negated, " or ".join(_as_typed(t) for t in kept), any_term=True)

    def __bool__(self) -> bool:
        return any(not t.negated for t in self.terms)


def _as_typed(term: Term) -> str:
    """A term as the query language writes it: code as written and several words as a phrase, each
    quoted, so PostgreSQL's `or` between terms cannot bind to one of their words alone."""
    if term.code:
        return '"' + term.code.replace('"', " ") + '"'
    if term.phrase or len(term.words) > 1:
        return '"' + " ".join(term.words) + '"'
    return term.words[0]


_TOKEN = re.compile(r'(-?)"([^"]*)"?|(\S+)')


def parse(query: str) -> Query:
    """The query's terms. Never fails: an unbalanced quote closes at the end, lone operators are dropped."""
    text = clean(query)[:MAX_QUERY_CHARS]
    terms: list[Term] = []
    pending_or = False
    for m in _TOKEN.finditer(text):
        neg, quoted, bare = m.group(1), m.group(2), m.group(3)
        if bare is not None and bare.lower() == "or":
            pending_or = bool(terms)
            continue
        if quoted is not None:
            term = Term(words(quoted), negated=bool(neg), phrase=True)
        else:
            negated = bare.startswith("-") and not bare.startswith("--")  # --flag is code
            token = bare.lstrip("-") if negated else bare
            token = token.strip("\"'()*^:,;!?")
            term = Term(words(token), code=token if is_code(token) else "", negated=negated)
        if not term.words:
            pending_or = False
            continue
        if pending_or and not term.negated and not terms[-1].negated:
            terms[-1].alternatives.append(term)
        else:
            terms.append(term)
        pending_or = False
        if len(terms) >= MAX_TERMS:
            break
    return Query(terms, text)


# --- SQLite FTS5 ---------------------------------------------------------------------------------


def fts5_quote(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def prefix_words(query: Query) -> list[str]:
    """The words a strict query asks for as prefixes (none for a relaxed one)."""
    if query.any_term:
        return []
    single = [t for term in query.terms for t in [term, *term.alternatives] if not (t.phrase or t.code)]
    return [t.words[0] for t in single if len(t.words) == 1 and len(t.words[0]) >= PREFIX_MIN]


def _fts_one(term: Term, *, as_prefix: bool, whole: frozenset[str]) -> str:
    if term.phrase or term.code or len(term.words) > 1:
        return "text : " + fts5_quote(" ".join(term.words))
    word = term.words[0]
    stems = word_stems(word)
    forms = " OR ".join(fts5_quote(s) for s in stems)
    if word in whole and word in stems:
        # Too widespread for a prefix (memory/search/prefixes.py): the word as written is one of its
        # forms, which both columns are searched for; asking the text column again would only make
        # bm25 walk the word's long list once more.
        return f"({{text stems}} : ({forms}))"
    # A longer word also matches as the start of a word: "docker" finds "Dockerfile", "Datenbank"
    # the German compound "Datenbankverbindungen". Not in a relaxed query (as on PostgreSQL: see
    # selectors._pg_tsquery), whose every match is ranked.
    prefix = "*" if as_prefix and len(word) >= PREFIX_MIN and word not in whole else ""
    return f"(text : {fts5_quote(word)}{prefix} OR {{text stems}} : ({forms}))"


def fts5_match(query: Query) -> str:
    """The FTS5 MATCH expression of a query ("" when nothing is asked for)."""
    positive: list[str] = []
    negative: list[str] = []
    whole = query.whole or frozenset()
    for term in query.terms:
        group = [_fts_one(t, as_prefix=not query.any_term, whole=whole) for t in [term, *term.alternatives]]
        expr = group[0] if len(group) == 1 else "(" + " OR ".join(group) + ")"
        (negative if term.negated else positive).append(expr)
    if not positive:
        return ""
    expr = " AND ".join(positive) if not query.any_term else "(" + " OR ".join(positive) + ")"
    for neg in negative:
        expr = f"({expr}) NOT {neg}"
    return expr


# --- PostgreSQL ------------------------------------------------------------------------------------


def _pg_one(term: Term, whole: frozenset[str]) -> str:
    if term.phrase or term.code or len(term.words) > 1:
        return "(" + " <-> ".join(f"'{w}'" for w in term.words) + ")"
    word = term.words[0]
    return f"'{word}':*" if len(word) >= PREFIX_MIN and word not in whole else f"'{word}'"


def pg_prefix_tsquery(query: Query) -> str:
    """A to_tsquery('simple', ...) text of the query with longer words as prefixes ("" when none).

    Or-ed with websearch_to_tsquery's readings, it finds compounds and longer forms ("docker" in
    "Dockerfile") that no stemmer relates, except the query's `whole` words (too widespread to gather
    as prefixes: memory/search/prefixes.py). Words hold only letters, digits and `_`: safe to quote."""
    positive: list[str] = []
    negative: list[str] = []
    whole = query.whole or frozenset()
    for term in query.terms:
        group = [_pg_one(t, whole) for t in [term, *term.alternatives]]
        expr = group[0] if len(group) == 1 else "(" + " | ".join(group) + ")"
        (negative if term.negated else positive).append(expr)
    if not positive:
        return ""
    return " & ".join(positive + [f"!{n}" for n in negative])

"""Lesson text as weighted terms: what detection compares.

A lesson becomes a bag of stemmed terms:
- code identifiers and paths are split into words (`create_charge()` → create, charge;
  `handleEvent` → handle, event; `src/billing/money.py` → billing, money);
- the language is guessed from stop words (a few counts per lesson, no model), so a German lesson
  is stemmed with the German Snowball stemmer and its German stop words are dropped; English, the
  language of code, is the default and its stop words are always dropped;
- accents are folded after stemming, so "caducó" and "caduco" meet.

Snowball stemmers come from PyStemmer (the C build of the Snowball algorithms: about a microsecond
a word, which keeps 10,000 lessons well under the time budget); the non-English stop-word lists
come from the stop-words package. English keeps a short list of function words of our own: the
package's English list also holds content words such as "test", "order" and "page".
"""

import re
import unicodedata
from functools import cache, lru_cache

import Stemmer
from stop_words import get_stop_words

DEFAULT_LANGUAGE = "english"
# Languages we can both recognise (stop words) and stem (Snowball).
OTHER_LANGUAGES = ("german", "spanish", "french", "italian", "portuguese", "dutch")

# Word lists, each kept on one line rather than one word per line.
# fmt: off
ENGLISH_STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "always",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "cannot",
        "could",
        "did",
        "didn",
        "do",
        "does",
        "doesn",
        "doing",
        "don",
        "done",
        "down",
        "during",
        "each",
        "else",
        "even",
        "ever",
        "every",
        "few",
        "for",
        "from",
        "further",
        "get",
        "gets",
        "got",
        "had",
        "has",
        "hasn",
        "have",
        "haven",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "however",
        "i",
        "if",
        "in",
        "into",
        "is",
        "isn",
        "it",
        "its",
        "itself",
        "just",
        "let",
        "like",
        "made",
        "make",
        "makes",
        "many",
        "may",
        "me",
        "might",
        "more",
        "most",
        "much",
        "must",
        "my",
        "need",
        "needs",
        "never",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "often",
        "on",
        "once",
        "one",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "per",
        "rather",
        "really",
        "same",
        "say",
        "says",
        "see",
        "seem",
        "seems",
        "shall",
        "she",
        "should",
        "shouldn",
        "since",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "thing",
        "things",
        "this",
        "those",
        "though",
        "through",
        "thus",
        "to",
        "too",
        "under",
        "until",
        "up",
        "upon",
        "us",
        "use",
        "used",
        "uses",
        "using",
        "very",
        "via",
        "was",
        "wasn",
        "way",
        "we",
        "well",
        "were",
        "weren",
        "what",
        "when",
        "where",
        "whether",
        "which",
        "while",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "within",
        "without",
        "won",
        "would",
        "wouldn",
        "yes",
        "yet",
        "you",
        "your",
        "yours",
        "e",
        "g",
        "eg",
        "ie",
        "etc",
    ]
)
# Pieces of paths and file names that say nothing about what a lesson means.
PATH_NOISE = frozenset(
    [
        "src",
        "lib",
        "app",
        "py",
        "ts",
        "tsx",
        "js",
        "jsx",
        "md",
        "json",
        "yml",
        "yaml",
        "toml",
        "cfg",
        "ini",
        "txt",
        "sql",
        "sh",
        "html",
        "css",
        "rb",
        "go",
        "rs",
    ]
)
# fmt: on

_ALWAYS_DROPPED = ENGLISH_STOP_WORDS | PATH_NOISE
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_TOKEN = re.compile(r"[^\W_]+")


@cache
def _stop_words(language):
    if language == DEFAULT_LANGUAGE:
        return ENGLISH_STOP_WORDS
    return frozenset(w.casefold() for w in get_stop_words(language))


def _fold_accents(word):
    if word.isascii():
        return word
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


def tokens(text):
    """Lower-cased words of a text, identifiers and paths split into their parts."""
    return _TOKEN.findall(_CAMEL.sub(" ", text or "").casefold())


@lru_cache(maxsize=1)
def _languages_by_stop_word():
    """{stop word: languages it belongs to}, built once: guessing is then one pass over the words."""
    table = {}
    for language in (DEFAULT_LANGUAGE, *OTHER_LANGUAGES):
        for word in _stop_words(language):
            table.setdefault(word, []).append(language)
    return table


def guess_language(words):
    """The language whose stop words the text uses most; English unless another clearly leads."""
    table = _languages_by_stop_word()
    hits = {}
    for word in words:
        for language in table.get(word, ()):
            hits[language] = hits.get(language, 0) + 1
    best = DEFAULT_LANGUAGE
    for language in OTHER_LANGUAGES:
        if hits.get(language, 0) > hits.get(best, 0):
            best = language
    return best


class Analyzer:
    """Turns lesson texts into stemmed terms. One per detection run: stemmers are not thread-safe."""

    def __init__(self):
        self._stemmers = {}
        self._cache = {}

    def _stemmer(self, language):
        if language not in self._stemmers:
            self._stemmers[language] = Stemmer.Stemmer(language)
        return self._stemmers[language]

    def terms(self, text):
        """The lesson's terms in order (repeats kept: term frequency counts)."""
        words = tokens(text)
        language = guess_language(words)
        stop = _stop_words(language)
        kept = [w for w in words if len(w) > 1 and w not in stop and w not in _ALWAYS_DROPPED]
        stems = self._stemmer(language).stemWords(kept)
        cache = self._cache
        result = []
        for stem in stems:
            folded = cache.get(stem)
            if folded is None:
                folded = cache[stem] = _fold_accents(stem)
            result.append(folded)
        return result


def significant_words(text):
    """The distinct stemmed terms of one text."""
    return frozenset(Analyzer().terms(text))

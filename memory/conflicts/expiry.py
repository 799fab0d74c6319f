"""Lessons that say they hold only for a while: a proposed expiry date or event, read from their text.

Precision first: only wording that names an end is read — "until <date>", "until the <event>",
"remove after upstream fixes #1234", "for the migration week", "bis …", "hasta …". An "until" that
describes a step of a procedure ("wait until the build finishes") is not an expiry.
"""

import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import date

from memory.conflicts.lexicon import STOPWORDS

ISO_DATE = r"(\d{4}-\d{2}-\d{2})"
DE_DATE = r"(\d{1,2})\.(\d{1,2})\.(\d{4})"
# The end of an "until" clause: a rollout, a release, a fix, a version, a ticket …
EVENT = (
    r"(?:rollout|roll-out|release[ds]?|ships?|shipped|lands?|landed|merged?|fix(?:ed|es)?|upgrade[ds]?|"
    r"migration|migrated|cutover|freeze|launch(?:es|ed)?|deprecat\w*|sunset|is out|goes live|reaches|"
    r"v?\d+\.\d+(?:\.\d+)?|#\d+|[A-Z]+-\d+|"
    r"rollout|veröffentlich\w*|behoben|gefixt|migration|umstellung|freigabe|release|"
    r"despliegue|lanzamiento|migración|arreglad\w*|corregid\w*|versión)"
)
PROCEDURE = re.compile(r"\b(wait|poll|retr[yi]|loop|block|sleep|scroll|warte|espera)\w*", re.I)

RULES = [
    ("until_date", re.compile(rf"\b(?:until|till|through|bis(?: zum)?|hasta(?: el)?)\s+{ISO_DATE}", re.I)),
    ("until_date_de", re.compile(rf"\b(?:bis(?: zum)?|hasta(?: el)?)\s+{DE_DATE}", re.I)),
    (
        "until_event",
        re.compile(
            rf"\b(?:until|till|bis|bis zum|bis zur|hasta que|hasta el|hasta la)\s+([^.;]{{0,60}}?{EVENT}[^.;]{{0,40}})",
            re.I,
        ),
    ),
    (
        "remove_after",
        re.compile(
            r"\b(?:remove|drop|delete|revert|undo|entfernen|löschen|quitar|eliminar)\b[^.;]{0,30}?"
            r"\b(?:after|once|when|sobald|nachdem|wenn|cuando|después de que|una vez que)\s+([^.;]{3,80})",
            re.I,
        ),
    ),
    (
        "for_period",
        re.compile(
            r"\b(?:for|during|während|durante)\s+(?:the|this|die|der|dem|la|el|esta|este)\s+"
            r"((?:[\w.-]+\s+){0,2}(?:week|sprint|freeze|migration|cutover|woche|sprints?|semana|migración))\b",
            re.I,
        ),
    ),
]


@dataclass(frozen=True)
class ExpiryFinding:
    lesson_id: int
    expires_on: date | None
    expires_when: str
    evidence: str


def read_expiry(text):
    """(expires_on, expires_when, evidence) or None."""
    for name, rule in RULES:
        m = rule.search(text)
        if not m:
            continue
        if name.startswith("until") and PROCEDURE.search(text[: m.start()]):
            continue
        if name == "until_date":
            try:
                return date.fromisoformat(m.group(1)), "", m.group(0)
            except ValueError:
                continue
        if name == "until_date_de":
            try:
                return date(int(m.group(3)), int(m.group(2)), int(m.group(1))), "", m.group(0)
            except ValueError:
                continue
        return None, m.group(1).strip(" ,"), m.group(0).strip()
    return None


def detect_expiry(lessons):
    """[ExpiryFinding] for the lessons whose text names an end."""
    found = []
    for lesson in lessons:
        read = read_expiry(lesson.text)
        if read:
            found.append(ExpiryFinding(lesson.id, *read))
    return found


# --- a later lesson saying that a temporary lesson's condition has happened -------------------
#
# A lesson that holds until something happens ("until the 2.3 rollout reaches 100 %") is retired
# when a later lesson says it did ("the 2.3 rollout reached 100 % today"): the pair is proposed as
# a conflict (the later lesson supersedes), for a person to keep the newer. Precision first, so
# the later lesson must
# - name every identifier of the condition exactly: issues (#1234, PAY-12), versions (2.3), amounts
#   (100 %), numbers — "#12345" is not "#1234", "50 %" is not "100 %";
# - share most of its significant words (all but a few: 2 of 2, 2 of 3 …); an issue named exactly
#   is enough on its own, as an issue names one thing;
# - say it happened: a completion word (reached, fixed, merged, released, shipped, over, done …, in
#   German and Spanish too) in the past or as a state ("is over", "ist vorbei", "está listo"), in a
#   clause that names the condition, neither negated ("not fixed yet", "noch nicht", "todavía no")
#   nor conditional or to come ("once it is fixed", "waiting for #1234 to be fixed", "wird
#   freigegeben", "cuando se publique").

# Said of something that has happened, whatever comes before it.
DONE_WORDS = frozenset(
    [
        "reached",
        "hit",
        "done",
        "finished",
        "completed",
        "fixed",
        "merged",
        "released",
        "shipped",
        "landed",
        "resolved",
        "closed",
        "deployed",
        "published",
        "launched",
        "ended",
        "expired",
        "removed",
        "dropped",
        "migrated",
        "upgraded",
        "passed",
        "rolled",
        "erreicht",
        "abgeschlossen",
        "beendet",
        "behoben",
        "gefixt",
        "gemergt",
        "gemerged",
        "veröffentlicht",
        "freigegeben",
        "ausgeliefert",
        "ausgerollt",
        "gelandet",
        "geschlossen",
        "entfernt",
        "migriert",
        "aktualisiert",
        "alcanzó",
        "alcanzado",
        "alcanzada",
        "alcanzamos",
        "terminó",
        "terminado",
        "terminada",
        "terminaron",
        "acabó",
        "acabado",
        "acabada",
        "completó",
        "completado",
        "completada",
        "arreglado",
        "arreglada",
        "arregló",
        "corregido",
        "corregida",
        "corrigió",
        "fusionado",
        "fusionada",
        "fusionó",
        "publicado",
        "publicada",
        "publicó",
        "publicaron",
        "lanzado",
        "lanzada",
        "lanzó",
        "desplegado",
        "desplegada",
        "desplegó",
        "resuelto",
        "resuelta",
        "resolvió",
        "cerrado",
        "cerrada",
        "cerró",
        "eliminado",
        "eliminada",
        "eliminó",
        "migrado",
        "migrada",
        "migró",
    ]
)
# Said of something that has happened only after a form of "to be": "the freeze is over".
STATE_WORDS = frozenset(
    [
        "over",
        "complete",
        "live",
        "out",
        "through",
        "vorbei",
        "durch",
        "fertig",
        "erledigt",
        "live",
        "listo",
        "lista",
        "hecho",
        "hecha",
    ]
)
BE_WORDS = frozenset(
    [
        "is",
        "was",
        "are",
        "were",
        "been",
        "be",
        "'s",
        "now",
        "finally",
        "ist",
        "sind",
        "war",
        "waren",
        "jetzt",
        "nun",
        "endlich",
        "está",
        "están",
        "estaba",
        "es",
        "son",
        "fue",
        "ya",
    ]
)
# Before a completion word in its clause: it has not happened (yet), or it is what is waited for.
NOT_YET_WORDS = frozenset(
    [
        "not",
        "no",
        "never",
        "n't",
        "isn't",
        "wasn't",
        "aren't",
        "hasn't",
        "haven't",
        "hadn't",
        "didn't",
        "doesn't",
        "won't",
        "yet",
        "until",
        "till",
        "unless",
        "once",
        "when",
        "whenever",
        "if",
        "before",
        "waiting",
        "wait",
        "await",
        "awaiting",
        "expect",
        "expected",
        "expecting",
        "hope",
        "hoping",
        "will",
        "would",
        "should",
        "must",
        "shall",
        "going",
        "gonna",
        "plan",
        "planned",
        "scheduled",
        "soon",
        "almost",
        "nearly",
        "partly",
        "partially",
        "half",
        "mostly",
        "halfway",
        "nicht",
        "kein",
        "keine",
        "noch",
        "nie",
        "bis",
        "sobald",
        "wenn",
        "falls",
        "ob",
        "warten",
        "wartet",
        "wird",
        "werden",
        "soll",
        "sollte",
        "sollen",
        "fast",
        "teilweise",
        "todavía",
        "aún",
        "hasta",
        "cuando",
        "si",
        "espera",
        "esperar",
        "esperando",
        "esperamos",
        "antes",
        "casi",
        "parcialmente",
    ]
)
# After a completion word: it did not happen as waited for ("closed as won't fix", "reverted").
UNDONE_AFTER = frozenset(
    [
        "n't",
        "not",
        "wontfix",
        "reverted",
        "unfixed",
        "invalid",
        "nicht",
        "zurückgerollt",
        "revertiert",
        "no",
        "revertido",
    ]
)
# Completion verbs and event nouns in every form: what a condition says will happen, not what about.
_EVENT_VERBS = (
    "reach hit finish complete fix merge release ship land resolve close deploy publish launch end expire roll"
)
EVENT_WORDS = (
    frozenset(
        form
        for verb in _EVENT_VERBS.split()
        for form in (verb, verb + "s", verb + "es", verb + "ed", verb + "d", verb + "ing", verb[:-1] + "ing")
    )
    | DONE_WORDS
    | STATE_WORDS
    | frozenset(
        [
            "shipped",
            "shipping",
            "ships",
            "hits",
            "goes",
            "go",
            "gone",
            "get",
            "gets",
            "got",
            "happen",
            "happens",
            "happened",
            "out",
            "freigabe",
            "veröffentlichung",
            "veröffentlicht",
            "veröffentlichen",
            "erreichen",
            "erreicht",
            "beheben",
            "behebt",
            "fixen",
            "mergen",
            "ausliefern",
            "ausrollen",
            "ausgerollt",
            "abschließen",
            "abschluss",
            "ende",
            "endet",
            "publique",
            "publiquen",
            "publica",
            "publicar",
            "alcance",
            "alcancen",
            "alcanza",
            "alcanzar",
            "termine",
            "terminen",
            "terminar",
            "arregle",
            "arreglen",
            "arreglar",
            "corrija",
            "corregir",
            "fusione",
            "fusionar",
            "lance",
            "lanzar",
            "salga",
            "salgan",
            "sale",
            "salir",
            "esté",
            "estén",
        ]
    )
)
# Words of a condition that say nothing about what it is.
CONDITION_STOPWORDS = STOPWORDS | frozenset(
    [
        "until",
        "till",
        "after",
        "once",
        "when",
        "unless",
        "bis",
        "sobald",
        "nachdem",
        "hasta",
        "una",
        "vez",
        "después",
        "everything",
        "all",
        "alles",
        "todo",
    ]
)
MIN_SHARED_SHARE = 0.6
_DONE_OR_STATE = DONE_WORDS | STATE_WORDS
_WORD = re.compile(r"\w+")

_TOKEN = re.compile(
    r"(?P<issue>#\d+|\b[A-Za-z][A-Za-z0-9]*-\d+\b|\b(?:issue|bug|ticket|pr)\s+#?\d+\b)"
    r"|(?P<percent>\b\d+(?:[.,]\d+)?\s*(?:%|percent\b|prozent\b|por\s+ciento\b))"
    r"|(?P<version>\bv?\d+(?:\.\d+)+\b)"
    r"|(?P<number>\b\d+\b)"
    r"|(?P<word>[^\W\d_][\w'’]*)"
    r"|(?P<stop>[.;:!?]|,|\s[—–-]\s)",
    re.I,
)


def _stem(word):
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix) and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def _verb(word):
    """The root an English verb shares across its tenses: reaches / reached, ships / shipped."""
    for suffix in ("ing", "ed", "es", "s", "d", "e"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            root = word[: -len(suffix)]
            return root[:-1] if len(root) > 3 and root[-1] == root[-2] else root
    return word


def _tokens(text):
    """[(kind, value)] of a text: identifiers normalised (#1234, 2.3, 100%), words in lower case,
    and "|" between clauses."""
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        value = m.group(kind).lower()
        if kind == "issue":
            value = "#" + re.sub(r"\D", "", value) if not re.match(r"[a-z][a-z0-9]*-\d+$", value) else value
        elif kind == "percent":
            value = re.match(r"\d+(?:[.,]\d+)?", value).group(0).replace(",", ".") + "%"
        elif kind == "version":
            value = value.lstrip("v")
        elif kind == "word":
            value = value.replace("’", "'")
            if value.endswith("n't"):
                out.append(("word", "n't"))
        elif kind == "stop":
            value = "?" if value == "?" else "|"
        out.append((kind, value))
    return out


@dataclass(frozen=True)
class Condition:
    """What a temporary lesson holds until, read once: its identifiers and its significant words."""

    lesson_id: int
    text: str
    ids: frozenset
    issues: frozenset
    terms: frozenset
    events: frozenset  # the verbs of what is to happen ("finish" for "the reindex finishes")

    @classmethod
    def read(cls, lesson_id, text):
        tokens = _tokens(text)
        ids = frozenset(v for k, v in tokens if k in ("issue", "percent", "version", "number"))
        words = [v for k, v in tokens if k == "word"]
        terms = frozenset(
            _stem(v) for v in words if len(v) >= 3 and v not in CONDITION_STOPWORDS and v not in EVENT_WORDS
        )
        events = frozenset(_verb(v) for v in words if v in EVENT_WORDS)
        return cls(lesson_id, text, ids, frozenset(v for k, v in tokens if k == "issue"), terms, events)

    @property
    def readable(self):
        return bool(self.ids or self.terms)


def _said_done(tokens):
    """The clauses of a lesson that say something has happened: [(completion word, clause tokens)]."""
    found, clause = [], []
    for kind, value in [*tokens, ("stop", "|")]:
        if kind != "stop":
            clause.append((kind, value))
            continue
        words = [v if k == "word" else k for k, v in clause]
        for i, word in enumerate(words if value != "?" else ()):  # a question says nothing happened
            state = word in STATE_WORDS and any(w in BE_WORDS for w in words[max(0, i - 3) : i])
            if not (word in DONE_WORDS or state) or any(w in NOT_YET_WORDS for w in words[:i]):
                continue
            if words[i - 2 : i] == ["to", "be"] or words[i - 1 : i] == ["to"]:
                continue  # "to be fixed": what is waited for
            if any(w in UNDONE_AFTER for w in words[i + 1 : i + 5]):
                continue  # "closed as won't fix", "merged, nicht deployed"
            found.append((word, clause))
            break
        clause = []
    return found


@dataclass(frozen=True)
class Reading:
    """A lesson read once for every condition: its identifiers, its word stems, the clauses saying
    something happened."""

    values: frozenset
    terms: frozenset
    done: list

    @classmethod
    def of(cls, text):
        tokens = _tokens(text)
        return cls(
            frozenset(v for k, v in tokens if k != "word"),
            frozenset(_stem(v) for k, v in tokens if k == "word"),
            _said_done(tokens),
        )


def condition_met(condition, text):
    """The evidence (text) when `text` says `condition` has happened, else ''."""
    return _meets(condition, Reading.of(text))


def _meets(condition, reading):
    if not reading.done or not condition.ids <= reading.values:
        return ""
    shared = condition.terms & reading.terms
    if not condition.issues and len(shared) < -(-len(condition.terms) * MIN_SHARED_SHARE // 1):
        return ""
    named = condition.ids | shared
    for word, clause in reading.done:
        in_clause = {v for k, v in clause if k != "word"} | {_stem(v) for k, v in clause if k == "word"}
        if not in_clause & named:
            continue
        # Two things at least tie the lesson to the condition (an issue is one thing named exactly):
        # identifiers, shared words, and the very event it waited for ("finishes" / "finished").
        same_event = _verb(word) in condition.events
        if not condition.issues and len(condition.ids) + len(shared) + same_event < 2:
            continue
        what = ", ".join(sorted(condition.ids) + sorted(shared))
        return f"holds until “{condition.text}”; the newer lesson says it happened (“{word}”: {what})"
    return ""


@dataclass(frozen=True)
class ConditionFinding:
    older_id: int  # the temporary lesson
    newer_id: int  # the lesson saying its condition happened
    evidence: str
    relation: str = "supersedes"


def conditions_met(lessons, temporary):
    """[ConditionFinding] for each lesson of `lessons` saying that the condition (expires_when) of a
    lesson of `temporary` has happened, when it is the later of the two (by date, then id).

    Both are light lessons (id, text, lesson_date; `temporary` also expires_when). Each lesson is read
    once; only one with a completion word is compared, and only with the conditions sharing an
    identifier or a word with it (found through an index of the conditions)."""
    by_key = defaultdict(list)  # an identifier or word of a condition: the conditions naming it
    for lesson in temporary:
        condition = Condition.read(lesson.id, lesson.expires_when or "")
        for key in condition.ids | condition.terms:
            by_key[key].append((lesson, condition))
    if not by_key:
        return []
    found = []
    for lesson in lessons:
        if _DONE_OR_STATE.isdisjoint(_WORD.findall(lesson.text.lower())):  # most lessons: read no further
            continue
        reading = Reading.of(lesson.text)
        if not reading.done:
            continue
        candidates = {
            older.id: (older, condition)
            for key in reading.values | reading.terms
            for older, condition in by_key.get(key, ())
        }
        for older, condition in candidates.values():
            if older.id == lesson.id or (lesson.lesson_date, lesson.id) < (older.lesson_date, older.id):
                continue
            evidence = _meets(condition, reading)
            if evidence:
                found.append(ConditionFinding(older.id, lesson.id, evidence))
    return found

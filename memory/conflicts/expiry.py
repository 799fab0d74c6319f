"""Lessons that say they hold only for a while: a proposed expiry date or event, read from their text.

Precision first: only wording that names an end is read — "until <date>", "until the <event>",
"remove after upstream fixes #1234", "for the migration week", "bis …", "hasta …". An "until" that
describes a step of a procedure ("wait until the build finishes") is not an expiry.
"""

import re
from dataclasses import dataclass
from datetime import date

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

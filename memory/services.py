"""Every write to memory goes through here, so every write leaves history and bumps the version.

No other module creates or updates Lesson, LessonRef or Change rows (tests/test_one_write_path.py
checks it). The fast paths have bulk primitives here too: lessons_bulk_create (an import, a
compaction's new lessons), lessons_bulk_retire (the lessons a compaction replaces or drops),
lessons_append_or_confirm (an agent's or a reflection's lessons) and lesson_refs_set_anchors.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import NamedTuple

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, models, transaction
from django.db.models import Count, F, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.template.defaultfilters import pluralize
from django.utils import timezone

from memory import context_cache
from memory.access import APPROVE, can
from memory.models import (
    ALL_CATEGORIES,
    CORE_CATEGORIES,
    ActorType,
    Change,
    ChangeBatch,
    Lesson,
    LessonConfirmation,
    LessonRef,
    LessonStatus,
    Memory,
    Relevance,
    Tier,
    content_hash,
)
from memory.refs import Ref, parse_ref_list
from memory.signals import batch_reverted, lesson_refs_writing, working_lessons_added
from memory.textcheck import check_text, text_problem

# The cap on one lesson's text (LESSON_MAX_CHARS), as read at start; checks read the setting itself.
MAX_LESSON_CHARS = settings.LESSON_MAX_CHARS


@dataclass(frozen=True)
class Actor:
    type: str
    user: object = None
    label: str = ""

    @classmethod
    def for_user(cls, user):
        return cls(ActorType.USER, user=user, label=user.get_username())

    @classmethod
    def agent(cls, token):
        return cls(ActorType.AGENT, label=f"agent token {token.prefix}")

    @classmethod
    def job(cls, label):
        return cls(ActorType.JOB, label=label)

    @classmethod
    def system(cls, label="system"):
        return cls(ActorType.SYSTEM, label=label)


# --- snapshots -------------------------------------------------------------------------------


def lesson_snapshot(lesson, refs=None):
    """The state of a lesson that history records and revert restores."""
    if refs is None:
        refs = list(lesson.refs.all())
    return {
        "tier": lesson.tier,
        "category": lesson.category,
        "text": lesson.text,
        "relevance": lesson.relevance,
        "protected": lesson.protected,
        "status": lesson.status,
        "lesson_date": lesson.lesson_date.isoformat(),
        "refs": [r.as_text() for r in refs],
    }


def _apply_snapshot(lesson, snap):
    lesson.tier = snap["tier"]
    lesson.category = snap["category"]
    lesson.text = snap["text"]
    lesson.relevance = snap["relevance"]
    lesson.protected = snap["protected"]
    lesson.status = snap["status"]
    lesson.lesson_date = date.fromisoformat(snap["lesson_date"])
    if lesson.status != LessonStatus.SUPERSEDED:
        lesson.superseded_by = None  # a successor only means something while the lesson is superseded
    lesson.save()
    _replace_refs(lesson, parse_ref_list("\n".join(snap["refs"])))


def _replace_refs(lesson, refs, *, new=False):
    if not new:
        lesson.refs.all().delete()
    rows = [
        LessonRef(lesson=lesson, path=r.path, start_line=r.start_line, end_line=r.end_line, position=i)
        for i, r in enumerate(refs)
    ]
    if rows:
        # The refs slice points each row at its anchor (memory/refs/receivers.py).
        lesson_refs_writing.send(sender=LessonRef, lesson=lesson, rows=rows, new=new)
    LessonRef.objects.bulk_create(rows)


# --- validation ------------------------------------------------------------------------------


def clean_refs(refs):
    """Refs given as text, Ref objects or a mix, parsed and validated (an error names the refs field)."""
    if refs is None:
        return []
    if isinstance(refs, str):
        try:
            return parse_ref_list(refs)
        except ValidationError as exc:
            raise ValidationError({"refs": exc.messages}) from None
    cleaned = []
    for ref in refs:
        if isinstance(ref, Ref):
            cleaned.append(ref)
        else:
            try:
                cleaned.extend(parse_ref_list(str(ref)))
            except ValidationError as exc:
                raise ValidationError({"refs": exc.messages}) from None
    return cleaned


def validate_lesson_fields(*, tier, category, text, relevance):
    errors = {}
    if tier not in (Tier.CORE, Tier.WORKING):
        errors["tier"] = f"tier must be core or working, not {tier!r}"
    allowed = CORE_CATEGORIES if tier == Tier.CORE else ALL_CATEGORIES
    if category not in allowed:
        errors["category"] = f"category for {tier} lessons must be one of {', '.join(allowed)}, not {category!r}"
    problem = text_problem(text.strip() if isinstance(text, str) else text, max_chars=settings.LESSON_MAX_CHARS)
    if not text or not text.strip():
        errors["text"] = "lesson text must not be empty"
    elif problem:
        errors["text"] = f"lesson text {problem}"
    if relevance not in Relevance.values:
        errors["relevance"] = f"relevance must be one of {', '.join(Relevance.values)}, not {relevance!r}"
    if errors:
        raise ValidationError(errors)


REASON_MAX_CHARS = 4000


# --- batches and versions --------------------------------------------------------------------


def batch_build(*, memory, kind, actor, label="", reason=""):
    """An unsaved ChangeBatch, for writers that create many at once; batch_create saves one."""
    reason = check_text(reason or "", field="reason", multiline=True, max_chars=REASON_MAX_CHARS)
    return ChangeBatch(
        memory=memory,
        kind=kind,
        label=label[:300],
        reason=reason,
        actor_type=actor.type,
        actor_user=actor.user,
        actor_label=actor.label[:200],
    )


def batch_create(*, memory, kind, actor, label="", reason=""):
    batch = batch_build(memory=memory, kind=kind, actor=actor, label=label, reason=reason)
    batch.save(force_insert=True)
    return batch


def batches_create(batches):
    """Save many batches of batch_build in one statement (an import writes one per memory); returns them."""
    return ChangeBatch.objects.bulk_create(batches)


def _recount_active_lessons(memories):
    """Count again the active lessons per tier of `memories` (a queryset), in one UPDATE.

    Run after the version bump, as a statement of its own: the bump holds the memory's row lock, so
    on PostgreSQL every other writer of this memory has committed (and this statement's snapshot sees
    its lessons) or waits for this transaction.
    """

    def active(tier):
        counted = (
            Lesson.objects.filter(memory=OuterRef("pk"), status=LessonStatus.ACTIVE, tier=tier)
            .order_by()
            .values("memory")
            .annotate(n=Count("pk"))
            .values("n")
        )
        return Coalesce(Subquery(counted), 0)

    memories.update(active_core_lessons=active(Tier.CORE), active_working_lessons=active(Tier.WORKING))


def memory_bump_version(memory):
    memories = Memory.objects.filter(pk=memory.pk)
    memories.update(version=F("version") + 1)
    _recount_active_lessons(memories)
    memory.refresh_from_db(fields=["version", "active_core_lessons", "active_working_lessons"])
    context_cache.memory_changed(memory)
    return memory.version


def memories_bump_version(memory_ids):
    """memory_bump_version for many memories at once (a bulk import); returns {memory id: new version}."""
    memories = Memory.objects.filter(pk__in=memory_ids)
    memories.update(version=F("version") + 1)
    _recount_active_lessons(memories)
    bumped = list(memories.only("id", "persona_id", "project_id", "version"))
    context_cache.memories_changed(bumped)
    return {memory.pk: memory.version for memory in bumped}


def memory_get_or_create(*, persona, project):
    memory, _ = Memory.objects.get_or_create(persona=persona, project=project)
    return memory


def _record(batch, lesson, action, before, after):
    return Change.objects.create(
        batch=batch, memory_id=lesson.memory_id, lesson=lesson, action=action, before=before, after=after
    )


# --- lesson writes ---------------------------------------------------------------------------


@transaction.atomic
def lesson_create(
    *,
    memory,
    text,
    category,
    actor,
    tier=Tier.WORKING,
    refs=None,
    relevance=Relevance.MEDIUM,
    protected=False,
    lesson_date=None,
    section=None,
    batch=None,
    reason="",
    interaction=None,
    derived_from=(),
    source_entry_ids=(),
    observed_at=None,
    vague=False,
    bump=True,
):
    text = (text or "").strip()
    validate_lesson_fields(tier=tier, category=category, text=text, relevance=relevance)
    refs = clean_refs(refs)
    if batch is None:
        batch = batch_create(memory=memory, kind=ChangeBatch.Kind.MANUAL, actor=actor, reason=reason)
    if section is None:
        section = next_section(memory)
    lesson = Lesson.objects.create(
        memory=memory,
        tier=tier,
        category=category,
        text=text,
        relevance=relevance,
        protected=protected,
        lesson_date=lesson_date or timezone.localdate(),
        section=section,
        interaction=interaction,
        source_entry_ids=list(source_entry_ids),
        observed_at=observed_at,
        vague=vague,
        content_hash=content_hash(text),
    )
    _replace_refs(lesson, refs, new=True)
    if derived_from:
        lesson.derived_from.set(derived_from)
    _record(batch, lesson, Change.Action.CREATE, None, lesson_snapshot(lesson, refs))
    if bump:
        memory_bump_version(memory)
    return lesson


@transaction.atomic
def lesson_create_from_file(*, memory, line, batch, section, today=None):
    """A lesson for one line read from a memory file (a ParsedLine), in `batch`; the version is not bumped.

    Unlike lesson_create, the line keeps what the file said: an unparsed line its raw text, a line
    without a date stays undated, a section its header as read, so writing it back gives the line again.
    """
    if line.rejected:
        raise ValidationError(f"{line.where}: {line.problem}")
    if not line.unparsed:
        validate_lesson_fields(tier=line.tier, category=line.category, text=line.text, relevance=Relevance.MEDIUM)
    heading = line.heading if len(line.heading) <= Lesson._meta.get_field("section_heading").max_length else ""
    lesson = Lesson.objects.create(
        memory=memory,
        tier=line.tier,
        category=line.category,
        text=line.text,
        lesson_date=line.lesson_date or today or timezone.localdate(),
        undated=line.lesson_date is None,
        section=section,
        section_heading=heading,
        unparsed=line.unparsed,
        raw_line=line.raw_line if line.unparsed else "",
        content_hash=content_hash(line.text),
    )
    refs = list(line.refs)
    _replace_refs(lesson, refs, new=True)
    _record(batch, lesson, Change.Action.CREATE, None, lesson_snapshot(lesson, refs))
    return lesson


def next_section(memory):
    last = Lesson.objects.filter(memory=memory).order_by("-section").values_list("section", flat=True).first()
    return (last or 0) + 1


def _mutate(lesson, *, actor, reason, action, batch, change_fn, kind=ChangeBatch.Kind.MANUAL, bump=True):
    """Lock the lesson, apply change_fn, record before/after, bump the memory version."""
    lesson = Lesson.objects.select_for_update().get(pk=lesson.pk)
    before = lesson_snapshot(lesson)
    change_fn(lesson)
    after = lesson_snapshot(lesson)
    if before == after:
        return lesson, None
    if batch is None:
        batch = batch_create(memory=lesson.memory, kind=kind, actor=actor, reason=reason)
    change = _record(batch, lesson, action, before, after)
    if bump:
        memory_bump_version(lesson.memory)
    return lesson, change


@transaction.atomic
def lesson_update(
    *, lesson, actor, reason="", batch=None, text=None, category=None, refs=None, relevance=None, lesson_date=None
):
    def apply(obj):
        new_text = obj.text if text is None else text.strip()
        new_category = obj.category if category is None else category
        new_relevance = obj.relevance if relevance is None else relevance
        validate_lesson_fields(tier=obj.tier, category=new_category, text=new_text, relevance=new_relevance)
        new_refs = None if refs is None else clean_refs(refs)
        obj.text, obj.category, obj.relevance = new_text, new_category, new_relevance
        if lesson_date is not None and (lesson_date != obj.lesson_date or obj.undated):
            # A date set by hand is the lesson's date now: written as a new section of its own.
            obj.lesson_date, obj.undated, obj.section_heading = lesson_date, False, ""
        obj.unparsed = False
        obj.save()
        if new_refs is not None:
            _replace_refs(obj, new_refs)

    lesson, _ = _mutate(lesson, actor=actor, reason=reason, action=Change.Action.UPDATE, batch=batch, change_fn=apply)
    return lesson


def _set_status(status, *, allowed_from):
    def apply(obj):
        if obj.status not in allowed_from:
            raise ValidationError(f"lesson {obj.pk} is {obj.status}; cannot change it to {status}")
        obj.status = status
        obj.save()

    return apply


@transaction.atomic
def lesson_delete(*, lesson, actor, reason="", batch=None, bump=True):
    """Soft delete: the lesson leaves compiled memory but stays restorable. Protected lessons refuse.

    bump=False is for callers that delete many lessons in one batch and bump the version once at the end.
    """
    if Lesson.objects.filter(pk=lesson.pk, protected=True).exists():
        raise PermissionDenied("this lesson is protected; unprotect it before deleting")
    lesson, _ = _mutate(
        lesson,
        actor=actor,
        reason=reason,
        action=Change.Action.DELETE,
        batch=batch,
        bump=bump,
        change_fn=_set_status(LessonStatus.DELETED, allowed_from=(LessonStatus.ACTIVE,)),
    )
    return lesson


@transaction.atomic
def lesson_restore(*, lesson, actor, reason="", batch=None):
    lesson, _ = _mutate(
        lesson,
        actor=actor,
        reason=reason,
        action=Change.Action.RESTORE,
        batch=batch,
        change_fn=_set_status(LessonStatus.ACTIVE, allowed_from=(LessonStatus.DELETED, LessonStatus.SUPERSEDED)),
    )
    return lesson


@transaction.atomic
def lesson_promote(*, lesson, actor, reason="", batch=None):
    """An active working lesson now lives on in a core lesson: it leaves compiled memory, kept in history."""
    lesson, _ = _mutate(
        lesson,
        actor=actor,
        reason=reason,
        action=Change.Action.PROMOTE,
        batch=batch,
        change_fn=_set_status(LessonStatus.PROMOTED, allowed_from=(LessonStatus.ACTIVE,)),
    )
    return lesson


@transaction.atomic
def lesson_supersede(*, lesson, superseded_by, actor, reason="", batch=None, bump=True):
    """An active lesson is replaced by another lesson of the same memory (a merge or a rewrite).

    It leaves compiled memory, points at its successor and stays in history; revert makes it active again.
    bump=False is for callers that retire many lessons in one batch and bump the version once at the end.
    """
    if superseded_by is None or superseded_by.pk is None:
        raise ValidationError("a lesson can only be superseded by a saved lesson")
    if superseded_by.pk == lesson.pk:
        raise ValidationError(f"lesson {lesson.pk} cannot supersede itself")
    if superseded_by.memory_id != lesson.memory_id:
        raise ValidationError("a lesson can only be superseded by a lesson of the same memory")

    def apply(obj):
        if obj.status != LessonStatus.ACTIVE:
            raise ValidationError(f"lesson {obj.pk} is {obj.status}; only an active lesson can be superseded")
        obj.status = LessonStatus.SUPERSEDED
        obj.superseded_by = superseded_by
        obj.save()

    lesson, _ = _mutate(
        lesson, actor=actor, reason=reason, action=Change.Action.SUPERSEDE, batch=batch, change_fn=apply, bump=bump
    )
    return lesson


@transaction.atomic
def lesson_set_protected(*, lesson, protected, actor, reason="", batch=None):
    def apply(obj):
        obj.protected = protected
        obj.save()

    action = Change.Action.PROTECT if protected else Change.Action.UNPROTECT
    lesson, _ = _mutate(lesson, actor=actor, reason=reason, action=action, batch=batch, change_fn=apply)
    return lesson


@transaction.atomic
def lesson_confirm(*, lesson, interaction=None, confirmed_on=None):
    """The same lesson was learned again: count the confirmation, store nothing twice."""
    return LessonConfirmation.objects.create(
        lesson=lesson, interaction=interaction, confirmed_on=confirmed_on or timezone.localdate()
    )


# --- bulk writes: many lessons in a few statements, with the same history as one by one -------


class NewLesson(NamedTuple):
    """One lesson for lessons_bulk_create: the batch its `create` change goes in, and its fields.

    Fields left out take the model's defaults, as Lesson.objects.create would give them. The order
    matters to lessons_bulk_create: memory_id … section_heading are the row it inserts, as they are.
    """

    batch_id: int
    memory_id: int
    tier: str
    category: str
    text: str
    lesson_date: date
    section: int
    undated: bool = False
    unparsed: bool = False
    raw_line: str = ""
    section_heading: str = ""
    refs: Sequence = ()  # Ref objects, in order
    relevance: str = Relevance.MEDIUM
    protected: bool = False
    derived_from: Sequence = ()  # ids of the lessons it was made from


def _iso_date(value):
    if type(value) is date:
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} values are not written by the bulk inserter")


class _RowInserter:
    """INSERTs of many rows without model instances, all of them in one statement.

    The ORM's per-object cost dominated imports, and so did binding every value of every row from
    Python (executemany on SQLite; on PostgreSQL, psycopg splitting a multi-row VALUES statement of
    thousands of placeholders). On SQLite the rows go as one JSON array, written by json's C
    encoder and unpacked by json_each, in order. On PostgreSQL they go through one COPY (psycopg
    writes the rows in C; the server skips parsing and planning per row).

    Every concrete column of the model is written: the ones given per row, the rest from the
    field's default (auto_now fields get `now`), so a field added to the model later is filled
    just as `Model.objects.create` would fill it. Given values are JSON strings, integers,
    booleans, None, dates, or (for a JSONField) the JSON text itself.
    """

    def __init__(self, model, varying, now):
        fields = [f for f in model._meta.concrete_fields if not f.primary_key]
        by_name = {f.attname: f for f in fields}
        self.varying = list(varying)
        if any(isinstance(by_name[name], models.DateTimeField) for name in self.varying):
            raise ValueError("date-times are written as constants only")
        sqlite = connection.vendor == "sqlite"
        # SQLite reads each row's values from the JSON array (JSON text given for a JSONField is a
        # string there: stored as it is) and the constants from parameters.
        picks = [f"json_extract(value, '$[{i}]')" for i in range(len(self.varying))]
        constants = {}
        for f in fields:
            if f.attname in self.varying:
                continue
            value = now if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False) else f.get_default()
            constants[f.attname] = f.get_db_prep_save(value, connection)
            picks.append("%s")
        qn = connection.ops.quote_name
        columns = ", ".join(qn(by_name[name].column) for name in [*self.varying, *constants])
        self.table, self.pk = qn(model._meta.db_table), qn(model._meta.pk.column)
        self.constant_values = list(constants.values())
        if sqlite:
            self.sql = f"INSERT INTO {self.table} ({columns}) SELECT {', '.join(picks)} FROM json_each(%s) ORDER BY key"
        else:
            # PostgreSQL: COPY, the fastest way in. Each row is its values then the constants; new
            # ids, when asked for, are taken from the table's sequence first and copied with the rows.
            self.copy_sql = f"COPY {self.table} ({columns}) FROM STDIN"
            self.copy_with_ids_sql = f"COPY {self.table} ({self.pk}, {columns}) FROM STDIN"
            self.next_ids_sql = "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)"
            self.sequence_of = [model._meta.db_table, model._meta.pk.column]
            # A JSON default goes in as its text, written once, not dumped again for every row.
            self.constant_row = tuple(
                json.dumps(by_name[name].get_default()) if isinstance(by_name[name], models.JSONField) else value
                for name, value in constants.items()
            )

    def _payload(self, rows):
        # Dates are written by the encoder as it meets them (rebuilding every row to swap them
        # for text first cost more than the encoding).
        return json.dumps(rows, ensure_ascii=False, default=_iso_date)

    def insert(self, rows, *, returning=False):
        """rows: tuples in `varying` order. Returns the new primary keys in row order when asked.

        On SQLite the new ids are the ones above the largest before: ids only grow, and the writer
        already holds the database's write lock (it wrote the batches first), so no other writer
        adds rows meanwhile. On PostgreSQL they are drawn from the table's sequence before the COPY.
        """
        if not rows:
            return []
        if connection.vendor != "sqlite":
            return self._copy(rows, returning)
        params = [*self.constant_values, self._payload(rows)]  # the placeholders' order in self.sql
        with connection.cursor() as cursor:
            if returning:
                cursor.execute(f"SELECT COALESCE(MAX({self.pk}), 0) FROM {self.table}")
                (before,) = cursor.fetchone()
            cursor.execute(self.sql, params)
            if not returning:
                return []
            cursor.execute(f"SELECT {self.pk} FROM {self.table} WHERE {self.pk} > %s ORDER BY {self.pk}", [before])
            ids = [row[0] for row in cursor.fetchall()]
        if len(ids) != len(rows):
            raise RuntimeError(f"{self.table}: {len(rows)} rows written but {len(ids)} new ids found")
        return ids

    def _copy(self, rows, returning):
        """PostgreSQL: the rows through one COPY. A value too long for its column is refused by
        COPY as by INSERT (never cut); errors come out as Django's, as from any query."""
        constants = self.constant_row
        with connection.cursor() as cursor, connection.wrap_database_errors:
            ids = []
            if returning:
                cursor.execute(self.next_ids_sql, [*self.sequence_of, len(rows)])
                ids = [row[0] for row in cursor.fetchall()]
                with cursor.cursor.copy(self.copy_with_ids_sql) as copy:
                    write = copy.write_row
                    for pk, row in zip(ids, rows):
                        write((pk, *row, *constants))
            else:
                with cursor.cursor.copy(self.copy_sql) as copy:
                    write = copy.write_row
                    for row in rows:
                        write((*row, *constants))
        return ids


@dataclass
class _Snapshot:
    """What lesson_snapshot reads, for a lesson inserted without a model instance."""

    tier: str
    category: str
    text: str
    lesson_date: object
    relevance: str
    protected: bool
    status: str = Lesson._meta.get_field("status").default


_json_string = json.encoder.encode_basestring_ascii  # how json.dumps writes a string by default
_SNAPSHOT_VARYING = ("tier", "category", "text", "lesson_date", "relevance", "protected", "refs")


def _snapshot_writer():
    """A function (tier, category, text, day, relevance, protected, refs) -> the JSON text of
    lesson_snapshot for a new lesson.

    Encoding 100,000 snapshot dicts one by one was a sixth of an import's time. The fields every
    new lesson shares are written once, from lesson_snapshot itself; per lesson only its strings
    are escaped, exactly as json.dumps escapes them. Key order differs from json.dumps, which
    nothing reads (history compares decoded snapshots).
    """
    shared = lesson_snapshot(_Snapshot("", "", "", timezone.localdate(), Relevance.MEDIUM, False), [])
    for key in _SNAPSHOT_VARYING:
        shared.pop(key)
    head = json.dumps(shared)[:-1] + ", " if shared else "{"
    starts = {}  # (tier, category, day, relevance, protected) -> the text before "text", shared by many

    def write(tier, category, text, day, relevance, protected, refs):
        key = (tier, category, day, relevance, protected)
        start = starts.get(key)
        if start is None:
            start = starts[key] = (
                f'{head}"tier": {_json_string(tier)}, "category": {_json_string(category)}, '
                f'"lesson_date": "{day.isoformat()}", "relevance": {_json_string(relevance)}, '
                f'"protected": {json.dumps(bool(protected))}, "text": '
            )
        if refs:
            return f'{start}{_json_string(text)}, "refs": [{", ".join([_json_string(r.as_text()) for r in refs])}]}}'
        return f'{start}{_json_string(text)}, "refs": []}}'

    return write


# NewLesson's fields memory_id … section_heading, then the content hash computed here.
_LESSON_COLUMNS = (*NewLesson._fields[1:11], "content_hash")
# Written per row only when some lesson differs from the model's default (an import never does).
_LESSON_OPTIONAL = ("relevance", "protected")
_REF_COLUMNS = ("lesson_id", "path", "start_line", "end_line", "position")
_CHANGE_COLUMNS = ("batch_id", "memory_id", "lesson_id", "action", "after")


def lessons_bulk_create(lessons, *, now=None):
    """Create many lessons (NewLesson) with their refs, derived-from links and one `create` change
    each, as lesson_create would record them, in a few statements whatever their number.

    For the fast paths (an import, a compaction's new lessons). The caller has validated the
    fields, created the batches (so it holds the write lock) and bumps the versions afterwards;
    refs are stored without anchors (refs_link_anchors' bulk pass gives them one later).
    Returns the new lesson ids, in the order given.
    """
    if not lessons:
        return []
    now = now or timezone.now()
    # Read by position: an import passes 100,000 of these, and field names cost a lookup each.
    rows = [l[1:11] + (content_hash(l[4]),) for l in lessons]
    optional = []
    for name in _LESSON_OPTIONAL:
        i = NewLesson._fields.index(name)
        if {l[i] for l in lessons} != {Lesson._meta.get_field(name).default}:
            optional.append(name)
            rows = [(*row, l[i]) for row, l in zip(rows, lessons)]
    ids = _RowInserter(Lesson, (*_LESSON_COLUMNS, *optional), now).insert(rows, returning=True)
    refs = [
        (lesson_id, r.path, r.start_line, r.end_line, position)
        for lesson_id, l in zip(ids, lessons)
        if l[11]
        for position, r in enumerate(l[11])
    ]
    if refs:
        _RowInserter(LessonRef, _REF_COLUMNS, now).insert(refs)
    links = [
        Lesson.derived_from.through(from_lesson_id=lesson_id, to_lesson_id=source)
        for lesson_id, l in zip(ids, lessons)
        if l[14]
        for source in l[14]
    ]
    if links:
        Lesson.derived_from.through.objects.bulk_create(links)
    snapshot = _snapshot_writer()
    create = Change.Action.CREATE
    _RowInserter(Change, _CHANGE_COLUMNS, now).insert(
        [
            (l[0], l[1], lesson_id, create, snapshot(l[2], l[3], l[4], l[5], l[12], l[13], l[11]))
            for lesson_id, l in zip(ids, lessons)
        ]
    )
    return ids


def lessons_bulk_retire(*, batch, retired, now=None):
    """Lessons leave compiled memory in one batch, as lesson_supersede and lesson_delete record it.

    `retired`: (lesson, its refs, successor id or None), the lessons locked by the caller. With a
    successor the lesson is superseded by it, otherwise deleted (a soft delete: it stays in
    history, revertible). One UPDATE per successor and one INSERT of the history.
    """
    now = now or timezone.now()
    history, by_successor = [], {}
    for lesson, refs, successor_id in retired:
        status = LessonStatus.SUPERSEDED if successor_id else LessonStatus.DELETED
        before = lesson_snapshot(lesson, refs)
        lesson.status, lesson.superseded_by_id, lesson.updated_at = status, successor_id, now
        action = Change.Action.SUPERSEDE if successor_id else Change.Action.DELETE
        history.append(
            Change(
                batch=batch,
                memory_id=lesson.memory_id,
                lesson=lesson,
                action=action,
                before=before,
                after={**before, "status": status},
                created_at=now,
            )
        )
        by_successor.setdefault(successor_id, []).append(lesson.pk)
    # One UPDATE per successor: bulk_update's CASE over every row costs more than the writes themselves.
    for successor_id, ids in by_successor.items():
        status = LessonStatus.SUPERSEDED if successor_id else LessonStatus.DELETED
        Lesson.objects.filter(pk__in=ids).update(status=status, superseded_by_id=successor_id, updated_at=now)
    Change.objects.bulk_create(history)


def lesson_refs_set_anchors(pairs):
    """Point stored refs at their anchors: pairs of (anchor id, ref id). One prepared statement for all
    (Django's bulk_update builds a CASE per row, far slower at 10,000 refs)."""
    if not pairs:
        return
    qn = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {qn(LessonRef._meta.db_table)} SET {qn('anchor_id')} = %s "
            f"WHERE {qn(LessonRef._meta.pk.column)} = %s",
            list(pairs),
        )


def lesson_add_sources(*, lesson, sources):
    """More lessons back `lesson` (a reflection merged with new observations): its derived-from links grow.

    A link is no change of the lesson's recorded state, so it leaves no history of its own; the
    caller's batch records the lessons it changed.
    """
    lesson.derived_from.add(*sources)


def lessons_forget_successor(*, batch):
    """The lessons `batch` changed that are active again point at no successor (after its revert)."""
    Lesson.objects.filter(pk__in=batch.changes.values("lesson_id"), status=LessonStatus.ACTIVE).update(
        superseded_by=None
    )


def lessons_point_at_successor(*, lesson):
    """The lessons `lesson` was made from that are superseded by nothing point at it again (a
    compaction applied again by reverting its revert)."""
    Lesson.objects.filter(
        pk__in=[s.pk for s in lesson.derived_from.all()], status=LessonStatus.SUPERSEDED, superseded_by__isnull=True
    ).update(superseded_by=lesson)


@dataclass(frozen=True)
class LessonDraft:
    """A working lesson an agent or a reflection wants stored (validated by the caller)."""

    text: str
    category: str
    refs: object = ()
    relevance: str = Relevance.MEDIUM
    vague: bool = False


def lessons_append_or_confirm(*, memory, drafts, actor, kind, label, reason, interaction=None, sender=Lesson):
    """Each draft confirms the active lesson of the same text in the memory, or becomes a new working
    lesson; the new ones go in one batch (made at the first of them) under one new section.

    Call inside a transaction holding the memory's row lock, so two writers cannot both add the same
    lesson. `reason` is text or a function of the position of the first new draft. A draft repeating
    an earlier one of the same call counts as that one, confirmed once. When lessons were added, the
    version is bumped once and `working_lessons_added` is sent (by `sender`) after the commit.
    Returns [(lesson, "created" | "confirmed")], one per draft.
    """
    batch = section = None
    results, created_ids, seen = [], [], {}
    for position, draft in enumerate(drafts):
        digest = content_hash(draft.text)
        if digest in seen:
            results.append((seen[digest], "confirmed"))
            continue
        existing = (
            Lesson.objects.filter(memory=memory, status=LessonStatus.ACTIVE, content_hash=digest).order_by("id").first()
        )
        if existing:
            lesson_confirm(lesson=existing, interaction=interaction)
            seen[digest] = existing
            results.append((existing, "confirmed"))
            continue
        if batch is None:
            batch = batch_create(
                memory=memory,
                kind=kind,
                actor=actor,
                label=label,
                reason=reason(position) if callable(reason) else reason,
            )
            section = next_section(memory)
        lesson = lesson_create(
            memory=memory,
            text=draft.text,
            category=draft.category,
            tier=Tier.WORKING,
            refs=draft.refs,
            relevance=draft.relevance,
            actor=actor,
            batch=batch,
            section=section,
            interaction=interaction,
            vague=draft.vague,
            bump=False,
        )
        seen[digest] = lesson
        created_ids.append(lesson.pk)
        results.append((lesson, "created"))
    if created_ids:
        memory_bump_version(memory)
        memory_id = memory.pk
        transaction.on_commit(
            lambda: working_lessons_added.send(sender=sender, memory_id=memory_id, lesson_ids=list(created_ids))
        )
    return results


# --- revert ----------------------------------------------------------------------------------


class RevertError(Exception):
    """A revert that would corrupt memory; the message says why, for the person who asked."""


# Batches only an approver can make; undoing one (or redoing it by reverting its revert) is the
# same decision, so it needs the same role.
APPROVER_BATCH_KINDS = (
    ChangeBatch.Kind.PROMOTION,
    ChangeBatch.Kind.COMPACTION,
    ChangeBatch.Kind.REFINEMENT,
    ChangeBatch.Kind.PIPELINE,
)


def batch_decided_by_approver(batch, _depth=0):
    """True when the batch is an approver's kind, or a revert (of a revert…) of one."""
    if batch.kind in APPROVER_BATCH_KINDS:
        return True
    if batch.kind != ChangeBatch.Kind.REVERT or _depth > 20:
        return False
    originals = ChangeBatch.objects.filter(changes__reverted_by__batch=batch).distinct()
    return any(batch_decided_by_approver(original, _depth + 1) for original in originals)


def _require_role_to_revert(batch, actor):
    if (
        actor.type == ActorType.USER
        and batch_decided_by_approver(batch)
        and not (actor.user is not None and can(actor.user, APPROVE, batch.memory))
    ):
        raise PermissionDenied(
            f"Reverting {batch.get_kind_display().lower()} #{batch.pk} needs the approver role: "
            "an approver's decision is undone by an approver."
        )


def _check_revertible(lesson, expected_after):
    current = lesson_snapshot(lesson)
    if current != expected_after:
        raise RevertError(
            f"Lesson {lesson.pk} was changed again after this; revert the later change first "
            "(see the lesson's history)."
        )


def _status(snapshot):
    return (snapshot or {}).get("status")


def dependent_changes(change):
    """The changes of `change`'s batch that must be undone together with it (those not undone yet).

    A batch that puts one lesson in place of others (a promotion, a compaction merge, a refinement
    consolidation, or the revert of one of those) ties them: the lesson it made active holds the
    knowledge of the lessons it retired. Undoing that activation alone would leave the knowledge in
    neither tier, so the retired lessons come back with it (and, when one of them only came to be in
    this batch, what it retired in turn). Undoing a retirement alone only brings a lesson back beside
    the one that holds it, which loses nothing, so it stands alone.
    """
    if _status(change.before) == LessonStatus.ACTIVE or _status(change.after) != LessonStatus.ACTIVE:
        return []
    changes = list(change.batch.changes.order_by("id"))
    last_after, first_pending_before = {}, {}
    for c in changes:
        last_after[c.lesson_id] = c.after
        if c.reverted_by_id is None:
            first_pending_before.setdefault(c.lesson_id, c.before)
    retired = {
        pk
        for pk, before in first_pending_before.items()
        if _status(last_after[pk]) != LessonStatus.ACTIVE and _status(before) != _status(last_after[pk])
    }
    ids = set(last_after)
    links = {}
    pairs = Lesson.derived_from.through.objects.filter(from_lesson_id__in=ids, to_lesson_id__in=ids).values_list(
        "from_lesson_id", "to_lesson_id"
    )
    pairs = {*pairs, *Lesson.objects.filter(pk__in=ids, superseded_by_id__in=ids).values_list("pk", "superseded_by_id")}
    for a, b in pairs:
        links.setdefault(a, set()).add(b)
        links.setdefault(b, set()).add(a)
    tied, todo = set(), [change.lesson_id]
    while todo:
        for other in links.get(todo.pop(), ()):
            if other in retired and other not in tied and other != change.lesson_id:
                tied.add(other)
                if _status(first_pending_before[other]) != LessonStatus.ACTIVE:
                    todo.append(other)  # undoing it retires it too: what it replaced comes back as well
    return [c for c in changes if c.lesson_id in tied and c.reverted_by_id is None]


def _revert_changes(*, batch, changes, actor, reason, label):
    """Undo `changes` (all of one batch, none reverted yet) as one new batch.

    Per lesson the state before its first undone change comes back; refused when a lesson was
    changed since. When nothing of the batch is left standing, the batch counts as reverted and
    `batch_reverted` tells the features that follow it (candidates, proposals, runs).
    """
    first_before, last_after = {}, {}
    for c in changes:
        first_before.setdefault(c.lesson_id, c.before)
        last_after[c.lesson_id] = c.after
    lessons = {l.pk: l for l in Lesson.objects.select_for_update().filter(pk__in=last_after).prefetch_related("refs")}
    for lesson_id, after in last_after.items():
        _check_revertible(lessons[lesson_id], after)
    revert_batch = batch_create(
        memory=batch.memory, kind=ChangeBatch.Kind.REVERT, actor=actor, reason=reason, label=label
    )
    revert_changes = {}
    for lesson_id, before in first_before.items():
        lesson = lessons[lesson_id]
        target = before if before is not None else {**last_after[lesson_id], "status": LessonStatus.DELETED}
        prior = lesson_snapshot(lesson)
        _apply_snapshot(lesson, target)
        revert_changes[lesson_id] = _record(revert_batch, lesson, Change.Action.REVERT, prior, lesson_snapshot(lesson))
    for c in changes:
        c.reverted_by = revert_changes[c.lesson_id]
    Change.objects.bulk_update(changes, ["reverted_by"])
    memory_bump_version(batch.memory)
    if not batch.changes.filter(reverted_by__isnull=True).exists():
        batch.reverted_by = revert_batch
        batch.save(update_fields=["reverted_by"])
        batch_reverted.send(sender=ChangeBatch, batch=batch, revert_batch=revert_batch)
    return revert_batch


@transaction.atomic
def change_revert(*, change, actor, reason=""):
    """Undo one change, together with the changes of its batch that depend on it (see dependent_changes).

    Returns the revert Change of this change's lesson.
    """
    change = Change.objects.select_for_update().select_related("lesson", "memory").get(pk=change.pk)
    if change.reverted_by_id:
        raise RevertError("This change was already reverted.")
    batch = ChangeBatch.objects.select_for_update().select_related("memory").get(pk=change.batch_id)
    _require_role_to_revert(batch, actor)
    change.batch = batch
    tied = dependent_changes(change)
    label = f"Revert of change #{change.pk} ({change.get_action_display().lower()})"
    if tied:
        label += f" with the {len(tied)} change{pluralize(len(tied))} of {batch} tied to it"
    changes = sorted([change, *tied], key=lambda c: c.pk)
    revert_batch = _revert_changes(batch=batch, changes=changes, actor=actor, reason=reason, label=label)
    return revert_batch.changes.get(lesson_id=change.lesson_id)


def batch_revertible(batch):
    """Whether batch_revert would go through now (something left to undo, nothing changed since)."""
    if batch.reverted_by_id:
        return False
    last_after = {}
    for c in batch.changes.filter(reverted_by__isnull=True).order_by("id"):
        last_after[c.lesson_id] = c.after
    lessons = Lesson.objects.filter(pk__in=last_after).prefetch_related("refs")
    return bool(last_after) and all(lesson_snapshot(l) == last_after[l.pk] for l in lessons)


@transaction.atomic
def batch_revert(*, batch, actor, reason=""):
    """Undo everything one action did that is still standing, as one new batch.

    Works after some of its changes were reverted one by one: those stay as they are. Refused when
    a lesson was changed again since (the later change must go first).
    """
    batch = ChangeBatch.objects.select_for_update().select_related("memory").get(pk=batch.pk)
    _require_role_to_revert(batch, actor)
    if batch.reverted_by_id:
        raise RevertError("This batch was already reverted.")
    changes = list(batch.changes.filter(reverted_by__isnull=True).order_by("id"))
    if not changes:
        if batch.changes.exists():
            raise RevertError("Every change of this batch was already reverted.")
        raise RevertError("This batch changed no lessons; there is nothing to revert.")
    label = f"Revert of {batch.get_kind_display().lower()} #{batch.pk}" + (f": {batch.label}" if batch.label else "")
    return _revert_changes(batch=batch, changes=changes, actor=actor, reason=reason, label=label)

"""A person settles a file conflict: Night Watch's text, the dashboard's, or both."""

from typing import TYPE_CHECKING, cast

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from memory import services
from memory.formats.nightwatch import CORE_FILE, ParsedLine, parse_core, parse_working
from memory.jobs import enqueue_on_commit
from memory.models import ChangeBatch, LessonStatus, Memory
from memory.signals import review_event
from memory.sync.models import SyncConflict, SyncedFolder

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def _file_line(conflict: SyncConflict) -> ParsedLine:
    parse = parse_core if conflict.file_name == CORE_FILE else parse_working
    (line,) = parse(conflict.file_line, conflict.file_name)
    if line.rejected:
        raise ValidationError(f"Night Watch's line cannot be a lesson: {line.problem}")
    return line


@transaction.atomic
def sync_conflict_resolve(*, conflict: SyncConflict, choice: str, actor: services.Actor) -> SyncConflict:
    """Settle one conflict; the next pass writes the outcome to the files.

    - file: the lesson takes Night Watch's text (or is deleted, when Night Watch removed the line);
    - dashboard: the lesson stays as people left it, and the file gets its text back;
    - both: the lesson stays, and Night Watch's line becomes a lesson of its own beside it.
    Every lesson write is the person's, in one batch, revertible from the history.
    """
    conflict = SyncConflict.objects.select_for_update().select_related("lesson", "memory").get(pk=conflict.pk)
    if conflict.status != SyncConflict.Status.PENDING:
        raise ValidationError("This conflict was already settled.")
    if choice not in SyncConflict.Choice.values:
        raise ValidationError(f"Pick one of {', '.join(SyncConflict.Choice.values)}, not {choice!r}.")
    lesson, memory = conflict.lesson, conflict.memory
    reason = f"Settled file conflict #{conflict.pk}: {SyncConflict.Choice(choice).label.lower()}"
    batch = None

    def batch_():
        nonlocal batch
        if batch is None:
            batch = services.batch_create(memory=memory, kind=ChangeBatch.Kind.MANUAL, actor=actor, reason=reason)
        return batch

    if choice == SyncConflict.Choice.FILE:
        if not conflict.file_line:
            if lesson.status == LessonStatus.ACTIVE:
                services.lesson_delete(lesson=lesson, actor=actor, batch=batch_(), reason=reason)
        else:
            line = _file_line(conflict)
            if lesson.status != LessonStatus.ACTIVE:
                services.lesson_restore(lesson=lesson, actor=actor, batch=batch_(), reason=reason)
            if line.unparsed:
                _add(memory, line, batch_())
                services.lesson_delete(lesson=lesson, actor=actor, batch=batch_(), reason=reason)
            else:
                services.lesson_update(
                    lesson=lesson,
                    actor=actor,
                    batch=batch_(),
                    reason=reason,
                    text=line.text,
                    category=line.category,
                    refs=line.refs,
                )
    elif choice == SyncConflict.Choice.BOTH and conflict.file_line:
        _add(memory, _file_line(conflict), batch_())
    if batch is not None:
        services.memory_bump_version(memory)
    conflict.status, conflict.choice = SyncConflict.Status.RESOLVED, choice
    conflict.resolved_by = cast("User | None", actor.user)  # a person settles: the actor has a user
    conflict.resolved_at = timezone.now()
    conflict.save(update_fields=["status", "choice", "resolved_by", "resolved_at"])
    # The files are written from the store again on the next pass, whatever was picked.
    SyncedFolder.objects.filter(pk=conflict.folder_id).update(memory_version=-1)
    review_event.send(
        sender=SyncConflict,
        event_type="review.decided",
        memory_id=conflict.memory_id,
        data={
            "decision": f"settled ({SyncConflict.Choice(choice).label.lower()})",
            "by": actor.label,
            "count": 1,
            "items": [
                {"kind": "file conflict", "id": conflict.pk, "url": reverse("sync-conflict", args=[conflict.pk])}
            ],
        },
        lesson_texts={str(conflict.pk): lesson.text},
    )
    if settings.NIGHT_WATCH_ROOT:
        enqueue_on_commit("memory.sync.pass", robust=True)
    return conflict


def _add(memory: Memory, line: ParsedLine, batch: ChangeBatch) -> None:
    services.lesson_create_from_file(memory=memory, line=line, batch=batch, section=services.next_section(memory))


def sync_failure_announce(*, memory_id, folder: str, error: str) -> None:
    """A folder that synced before now fails: its team hears it once, not at every pass."""
    review_event.send(
        sender=SyncedFolder,
        event_type="sync.failed",
        memory_id=memory_id,
        data={"folder": folder, "error": error[:500], "count": 1, "items": []},
    )

"""Writes of the refinement feature: the per-persona prompt and its versions, and the run lifecycle.

A run is created (one running run per memory), executed (consent, then the tool session of
`session.py`, then applied in one transaction or discarded), swept when its worker died, and
reverted as one change batch.
"""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from memory import services
from memory.engines.base import Engine, EngineError
from memory.models import (
    REFINEMENT_OP_CAP,
    ChangeBatch,
    Lesson,
    LessonStatus,
    Memory,
    RefinementOperation,
    RefinementPromptVersion,
    RefinementRun,
    Tier,
)
from memory.refinement import prompts
from memory.refinement.session import (
    TOOLS,
    RefinementSession,
    StagedOp,
    finish_run,
    lesson_fingerprint,
    mass_of_chars,
)
from personas.models import Persona

log = logging.getLogger(__name__)

MAX_PROMPT_CHARS = 8000


def _next_number(persona: Persona) -> int:
    return (RefinementPromptVersion.objects.filter(persona=persona).aggregate(n=Max("number"))["n"] or 0) + 1


@transaction.atomic
def refinement_prompt_save(
    *, persona: Persona, text: str | None, user: User | None, note: str = ""
) -> RefinementPromptVersion:
    """Save a new version of the persona's refinement prompt (blank = the conservative default)."""
    text = (text or "").replace("\r\n", "\n").strip()
    if len(text) > MAX_PROMPT_CHARS:
        raise ValidationError({"text": f"The prompt must be at most {MAX_PROMPT_CHARS} characters (got {len(text)})."})
    persona = Persona.objects.select_for_update().get(pk=persona.pk)
    if not RefinementPromptVersion.objects.filter(persona=persona).exists() and persona.refinement_prompt.strip():
        # Keep what was there before the first edit from this page, so it can be restored.
        RefinementPromptVersion.objects.create(
            persona=persona,
            number=1,
            text=persona.refinement_prompt.strip(),
            note="prompt before the first recorded edit",
        )
    if text == persona.refinement_prompt.strip() and RefinementPromptVersion.objects.filter(persona=persona).exists():
        raise ValidationError({"text": "This is the current prompt already; nothing to save."})
    version = RefinementPromptVersion.objects.create(
        persona=persona, number=_next_number(persona), text=text, created_by=user, note=note[:200]
    )
    persona.refinement_prompt = text
    persona.save(update_fields=["refinement_prompt"])
    return version


MIN_THRESHOLD_PERCENT = 50  # below half, the breaker would let a run delete most of a memory


@transaction.atomic
def refinement_threshold_set(*, persona: Persona, percent: str | float) -> Persona:
    """Set the persona's retention threshold from a percentage (50–100); later runs use it."""
    try:
        value = float(str(percent).strip().rstrip("%"))
    except ValueError:
        raise ValidationError({"threshold": "Give the threshold as a number of percent, e.g. 90."}) from None
    if not MIN_THRESHOLD_PERCENT <= value <= 100:
        raise ValidationError({"threshold": f"The threshold must be between {MIN_THRESHOLD_PERCENT}% and 100%."})
    persona.refinement_threshold = round(value / 100, 4)
    persona.save(update_fields=["refinement_threshold", "updated_at"])
    return persona


@transaction.atomic
def refinement_prompt_restore(*, version: RefinementPromptVersion, user: User | None) -> RefinementPromptVersion:
    """Restoring an old version saves it again as the newest version."""
    return refinement_prompt_save(
        persona=version.persona, text=version.text, user=user, note=f"restored from version {version.number}"
    )


# --- applying a finished session ----------------------------------------------------------------


class MemoryChanged(Exception):
    pass


def _name_new_lesson(run: RefinementRun, op: StagedOp, lesson: Lesson) -> None:
    """The operation's record showed the new lesson as "new-N"; now that it exists, show its id."""
    record = RefinementOperation.objects.filter(run=run, seq=op.seq).first()
    if record is None:
        return
    record.after = [{**item, "id": lesson.pk} if item.get("id") == op.new_id else item for item in record.after]
    record.save(update_fields=["after"])


@transaction.atomic
def apply_session(session: RefinementSession) -> ChangeBatch | None:
    """Write the staged actions and the run's final state in one transaction, or nothing."""
    run = RefinementRun.objects.select_for_update().get(pk=session.run.pk)
    if run.status != RefinementRun.Status.RUNNING:
        raise MemoryChanged(f"the run is {run.status} (stopped from outside); nothing was applied")
    memory = Memory.objects.get(pk=run.memory_id)
    batch = None
    if session.ops:
        touched: set[int] = set()
        for op in session.ops:
            touched.update(op.args["ids"] if op.action == "consolidate" else [op.args["id"]])
        current = {lesson.pk: lesson for lesson in Lesson.objects.select_for_update().filter(pk__in=touched)}
        for pk in touched:
            if pk not in current or lesson_fingerprint(current[pk]) != session.originals[pk]:
                raise MemoryChanged(f"lesson {pk} was changed while the run was in progress; nothing was applied")
        actor = services.Actor.job(f"refinement run #{run.pk}")
        batch = services.batch_create(
            memory=memory,
            kind=ChangeBatch.Kind.REFINEMENT,
            actor=actor,
            label=f"Refinement run #{run.pk}: {len(session.ops)} change(s)",
            reason="Automatic de-duplication of core memory",
        )
        for op in session.ops:
            a = op.args
            if op.action == "consolidate":
                originals = [current[pk] for pk in a["ids"]]
                new = services.lesson_create(
                    memory=memory,
                    text=a["text"],
                    category=a["category"],
                    tier=Tier.CORE,
                    relevance=a["relevance"],
                    actor=actor,
                    batch=batch,
                    derived_from=originals,
                    bump=False,
                )
                for original in originals:
                    current[original.pk] = services.lesson_supersede(
                        lesson=original, superseded_by=new, actor=actor, batch=batch, bump=False
                    )
                _name_new_lesson(run, op, new)
            elif op.action == "update":
                current[a["id"]] = services.lesson_update(
                    lesson=current[a["id"]], text=a["text"], actor=actor, batch=batch
                )
            elif op.action == "delete":
                current[a["id"]] = services.lesson_delete(
                    lesson=current[a["id"]], actor=actor, batch=batch, reason=a.get("reason", "")
                )
            elif op.action == "protect":
                current[a["id"]] = services.lesson_set_protected(
                    lesson=current[a["id"]], protected=True, actor=actor, batch=batch
                )
        services.memory_bump_version(memory)
    Memory.objects.filter(pk=memory.pk).update(last_refined_at=timezone.now())
    chars = session.active_chars()
    finish_run(
        session.run,
        RefinementRun.Status.COMPLETED,
        batch=batch,
        retention=session.retention(),
        mass_after=int(mass_of_chars(chars)),
        ops_used=len(session.ops),
        current_action=f"completed with {len(session.ops)} change(s)",
    )
    return batch


# --- the whole run ------------------------------------------------------------------------------


class RefinementBusy(Exception):
    pass


def core_mass(memory: Memory) -> int:
    chars = sum(
        len(t)
        for t in Lesson.objects.filter(memory=memory, tier=Tier.CORE, status=LessonStatus.ACTIVE).values_list(
            "text", flat=True
        )
    )
    return int(mass_of_chars(chars))


@transaction.atomic
def refinement_run_create(*, memory: Memory, trigger: str = "manual", user: User | None = None) -> RefinementRun:
    """Open a run record (status running) for a worker to execute; one running run per memory."""
    memory = Memory.objects.select_for_update().select_related("persona").get(pk=memory.pk)
    if RefinementRun.objects.filter(memory=memory, status=RefinementRun.Status.RUNNING).exists():
        raise RefinementBusy("A refinement run is already in progress for this memory.")
    return RefinementRun.objects.create(
        memory=memory,
        trigger=trigger,
        requested_by=user,
        threshold=memory.persona.refinement_threshold,
        op_cap=REFINEMENT_OP_CAP,
        mass_before=core_mass(memory),
        current_action="queued",
    )


def _engine_for(persona: Persona, memory: Memory) -> Engine:
    from memory.engines.registry import get_engine

    return get_engine(persona, memory=memory)


def refinement_run_execute(*, run_id: int, engine: Engine | None = None, max_turns: int | None = None) -> RefinementRun:
    """Ask consent, run the tool session, apply or discard. Returns the run (final state)."""
    run = RefinementRun.objects.select_related("memory__persona").get(pk=run_id)
    if run.status != RefinementRun.Status.RUNNING:
        return run
    memory, persona = run.memory, run.memory.persona
    try:
        engine = engine or _engine_for(persona, memory)
        if not prompts.consent_given(_ask_consent(run, engine)):
            finish_run(
                run,
                RefinementRun.Status.DECLINED,
                mass_after=run.mass_before,
                current_action="declined: the agent did not consent",
            )
            return run

        session, prompt = _start_session(run, persona, memory)
        policy = None
        if run.engine == "offline":
            from memory.refinement.offline import dedupe_policy

            policy = dedupe_policy(session)
        result = engine.run_tools(
            system=prompts.REFINEMENT_SYSTEM,
            prompt=prompt,
            tools=TOOLS,
            handler=session.handle,
            purpose="refinement",
            max_turns=max_turns or int(getattr(settings, "REFINEMENT_MAX_TURNS", 30)),
            should_stop=session.should_stop,
            offline_policy=policy,
        )
        run.tokens_in += result.tokens_in
        run.tokens_out += result.tokens_out
        RefinementRun.objects.filter(pk=run.pk).update(tokens_in=run.tokens_in, tokens_out=run.tokens_out)
        if session.terminated:
            run.refresh_from_db()
            return run
        apply_session(session)
    except (EngineError, MemoryChanged) as exc:
        _fail(run, str(exc))
    except Exception as exc:  # a bug must still end the run visibly, with nothing applied
        log.exception("refinement run %s crashed", run.pk)
        _fail(run, f"internal error: {exc.__class__.__name__}: {exc}")
    run.refresh_from_db()
    return run


def _ask_consent(run: RefinementRun, engine: Engine) -> str:
    """Ask the agent whether it agrees to refine its memory; records prompt, answer and tokens. Returns the answer."""
    run.engine = getattr(engine, "provider", "")[:40]
    consent = prompts.build_consent_prompt()
    RefinementRun.objects.filter(pk=run.pk).update(
        engine=run.engine, consent_prompt=consent, current_action="asking consent", heartbeat_at=timezone.now()
    )
    run.consent_prompt = consent
    if run.engine == "offline":
        answer = "YES"  # the offline policy only ever merges exact and near-exact duplicates
    else:
        completion = engine.complete(
            system=prompts.REFINEMENT_SYSTEM, prompt=consent, purpose="refinement_consent", max_tokens=16
        )
        answer = completion.text or ""
        run.tokens_in += completion.tokens_in
        run.tokens_out += completion.tokens_out
    RefinementRun.objects.filter(pk=run.pk).update(
        consent_answer=answer[:2000], tokens_in=run.tokens_in, tokens_out=run.tokens_out
    )
    run.consent_answer = answer[:2000]
    return answer


def _start_session(run: RefinementRun, persona: Persona, memory: Memory) -> tuple[RefinementSession, str]:
    """Load the session over the memory's lessons and record the prompt it starts from. Returns (session, prompt)."""
    session = RefinementSession.load(run)
    lessons = sorted((s for s in session.lessons.values()), key=lambda s: s.id)
    ledger_rows = Lesson.objects.filter(pk__in=[s.id for s in lessons]).order_by("id")
    prompt = prompts.build_refinement_prompt(persona, memory, lessons=list(ledger_rows))
    version = RefinementPromptVersion.objects.filter(persona=persona).order_by("-number").first()
    session.run.mass_before = int(mass_of_chars(session.chars_before))
    RefinementRun.objects.filter(pk=run.pk).update(
        system_prompt=prompts.REFINEMENT_SYSTEM,
        prompt_sent=prompt,
        prompt_version=version,
        mass_before=session.run.mass_before,
        current_action="session started",
        heartbeat_at=timezone.now(),
    )
    run.system_prompt, run.prompt_sent, run.prompt_version = prompts.REFINEMENT_SYSTEM, prompt, version
    return session, prompt


def _fail(run: RefinementRun, error: str) -> None:
    RefinementOperation.objects.filter(run=run, outcome=RefinementOperation.Outcome.APPLIED, mutating=True).update(
        outcome=RefinementOperation.Outcome.ROLLED_BACK
    )
    finish_run(
        run,
        RefinementRun.Status.FAILED,
        error=error[:4000],
        mass_after=run.mass_before,
        current_action="failed; nothing was applied",
    )


# --- crash safety -------------------------------------------------------------------------------


def refinement_sweep(*, timeout: float | None = None, now: datetime | None = None) -> int:
    """Fail every running run whose heartbeat is older than the timeout; returns how many."""
    timeout = settings.REFINEMENT_HEARTBEAT_TIMEOUT if timeout is None else timeout
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=timeout)
    swept = 0
    for run_id in RefinementRun.objects.filter(
        status=RefinementRun.Status.RUNNING, heartbeat_at__lt=cutoff
    ).values_list("pk", flat=True):
        with transaction.atomic():
            run = (
                RefinementRun.objects.select_for_update()
                .filter(pk=run_id, status=RefinementRun.Status.RUNNING, heartbeat_at__lt=cutoff)
                .first()
            )
            if run is None:
                continue
            # Applying a run commits its final status in the same transaction, so a running run has no
            # committed batch; should one exist anyway, undo it before failing the run.
            batch = run.batch if run.batch_id else None
            if batch is not None and not batch.reverted_by_id:
                services.batch_revert(
                    batch=batch,
                    actor=services.Actor.job("refinement sweeper"),
                    reason="refinement run stopped without finishing",
                )
            _fail(
                run,
                f"The worker stopped responding (last heartbeat {run.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC, "
                f"timeout {timeout}s); the run was rolled back and nothing of it is applied.",
            )
            swept += 1
    return swept


# --- revert a completed run ---------------------------------------------------------------------


def refinement_run_revert(*, run: RefinementRun, actor: services.Actor, reason: str = "") -> ChangeBatch:
    if run.status != RefinementRun.Status.COMPLETED:
        raise services.RevertError(
            f"Only a completed run can be reverted (this one is {run.get_status_display().lower()})."
        )
    batch = run.batch
    if batch is None:
        raise services.RevertError("This run changed nothing; there is nothing to revert.")
    return services.batch_revert(batch=batch, actor=actor, reason=reason or f"Revert of refinement run #{run.pk}")


def refinement_follow_revert(*, batch: ChangeBatch, revert_batch: ChangeBatch) -> None:
    """Reverting a completed run's batch marks the run reverted."""
    RefinementRun.objects.filter(batch=batch, status=RefinementRun.Status.COMPLETED).update(
        status=RefinementRun.Status.REVERTED, current_action=f"reverted by change batch #{revert_batch.pk}"
    )

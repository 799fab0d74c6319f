"""The observation pipeline: observer → reflector → pruner, one run at a time.

Every model call happens outside a transaction; what a phase decided is written afterwards in a
short transaction, through memory.services, into the run's single `pipeline` batch (so the run
reverts as one unit). The run row is updated after every tool call so the progress page can follow.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memory import services
from memory.engines.base import Engine, EngineError, OfflinePolicy, Tool, ToolCall, ToolResult, ToolSession
from memory.engines.registry import get_engine
from memory.jobs import enqueue_on_commit
from memory.models import ChangeBatch, Interaction, Memory, PipelineRun
from memory.pipeline import phases
from memory.pipeline.transcripts import parse_pasted_transcript
from memory.review_queue import announce_run
from memory.textcheck import text_problem

MAX_TURNS = 12


class PipelineError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Start


def pipeline_sweep(*, memory_id: int | None = None) -> int:
    """Mark failed the running runs that stopped making progress (their worker died).

    What such a run already stored stays in its batch, revertible from the memory's history.
    Returns the number of runs marked failed.
    """
    cutoff = timezone.now() - timedelta(seconds=settings.PIPELINE_HEARTBEAT_TIMEOUT)
    stuck = PipelineRun.objects.filter(status=PipelineRun.Status.RUNNING, heartbeat_at__lt=cutoff)
    if memory_id is not None:
        stuck = stuck.filter(memory_id=memory_id)
    with transaction.atomic():
        failed = list(stuck.select_for_update())
        PipelineRun.objects.filter(pk__in=[run.pk for run in failed], status=PipelineRun.Status.RUNNING).update(
            status=PipelineRun.Status.FAILED,
            finished_at=timezone.now(),
            error=f"No progress for {settings.PIPELINE_HEARTBEAT_TIMEOUT} s: the worker running it stopped. "
            "Anything it stored is in its batch and can be reverted from the memory's history.",
        )
        for run in failed:
            run.status = PipelineRun.Status.FAILED
            announce_run(run, "review.waiting")
    return len(failed)


@transaction.atomic
def pipeline_start(
    *, memory: Memory, actor: services.Actor, interaction: Interaction | None = None, transcript_text: str = ""
) -> PipelineRun:
    """Create a run (and an interaction from a pasted transcript) and enqueue it after commit."""
    problem = text_problem(transcript_text or "", multiline=True)
    if problem:
        raise PipelineError(f"The pasted transcript {problem}; nothing was started.")
    pipeline_sweep(memory_id=memory.pk)
    if PipelineRun.objects.filter(memory=memory, status=PipelineRun.Status.RUNNING).exists():
        raise PipelineError("A pipeline run for this memory is already in progress.")
    if interaction is None and transcript_text.strip():
        entries = parse_pasted_transcript(transcript_text)
        if not entries:
            raise PipelineError("The pasted transcript has no entries.")
        interaction = Interaction.objects.create(
            memory=memory,
            trigger_type="pasted transcript",
            summary=entries[0]["text"][:200],
            transcript=entries,
        )
    if interaction is not None and interaction.memory_id != memory.pk:
        raise PipelineError("That interaction belongs to another memory.")
    run = PipelineRun.objects.create(
        memory=memory,
        interaction=interaction,
        created_by=cast("User | None", actor.user),  # Actor.user holds a user or nothing
    )
    enqueue_on_commit("memory.pipeline.run", run.pk)
    return run


# ---------------------------------------------------------------------------------------------
# Run


@dataclass
class _Progress:
    run: PipelineRun

    def save(self, **values: Any) -> None:
        values["heartbeat_at"] = timezone.now()
        for key, value in values.items():
            setattr(self.run, key, value)
        with transaction.atomic():
            PipelineRun.objects.filter(pk=self.run.pk).update(**values)
            if values.get("status") == PipelineRun.Status.FAILED:
                announce_run(self.run, "review.waiting")

    def bump(self, **deltas: int) -> None:
        updates: dict[str, Any] = {}
        for key, delta in deltas.items():
            if delta:
                setattr(self.run, key, getattr(self.run, key) + delta)
                updates[key] = F(key) + delta
        if updates:
            updates["heartbeat_at"] = self.run.heartbeat_at = timezone.now()
            PipelineRun.objects.filter(pk=self.run.pk).update(**updates)

    def enter(self, phase: str, pass_no: int = 1, max_passes: int = 1) -> None:
        completed = list(self.run.completed_phases)
        if self.run.phase and self.run.phase != phase and self.run.phase not in completed:
            completed.append(self.run.phase)
        self.save(phase=phase, pass_no=pass_no, max_passes=max_passes, completed_phases=completed)


ToolHandler = Callable[[ToolCall], ToolResult]


def _counting(progress: _Progress, handler: ToolHandler, delta_fn: Callable[[], dict[str, int]]) -> ToolHandler:
    def wrapped(call: ToolCall) -> ToolResult:
        before = delta_fn()
        result = handler(call)
        after = delta_fn()
        progress.bump(tool_calls=1, **{k: after[k] - before[k] for k in after})
        return result

    return wrapped


def pipeline_run_execute(*, run_id: int, engine: Engine | None = None) -> PipelineRun:
    """Run the three phases of a run. Failures are recorded on the run, never raised."""
    run = PipelineRun.objects.select_related("memory__persona", "interaction").get(pk=run_id)
    if run.status != PipelineRun.Status.RUNNING:
        return run
    memory = run.memory
    progress = _Progress(run)
    try:
        engine = engine or get_engine(memory.persona, memory=memory)
        progress.save(engine=str(getattr(engine, "provider", ""))[:20])
        ctx = _RunContext(run=run, memory=memory, engine=engine, progress=progress)
        phases.observe(ctx)
        phases.reflect(ctx)
        phases.prune(ctx)
    except EngineError as exc:
        progress.save(
            status=PipelineRun.Status.FAILED,
            error=f"The {getattr(engine, 'provider', 'model')} engine failed: {exc}",
            finished_at=timezone.now(),
        )
        return run
    except PipelineError as exc:
        progress.save(status=PipelineRun.Status.FAILED, error=str(exc), finished_at=timezone.now())
        return run
    except Exception as exc:
        # Never leave a run "running" for ever: the page would poll it and block the next run.
        progress.save(
            status=PipelineRun.Status.FAILED,
            finished_at=timezone.now(),
            error=f"The run stopped on an unexpected error ({type(exc).__name__}); see the server log.",
        )
        raise
    completed = list(run.completed_phases)
    if run.phase and run.phase not in completed:
        completed.append(run.phase)
    progress.save(status=PipelineRun.Status.COMPLETED, completed_phases=completed, finished_at=timezone.now())
    return run


@dataclass
class _RunContext:
    run: PipelineRun
    memory: Memory
    engine: Engine
    progress: _Progress

    def batch(self) -> ChangeBatch | None:
        if self.run.batch_id is None:
            batch = services.batch_create(
                memory=self.memory,
                kind=ChangeBatch.Kind.PIPELINE,
                actor=services.Actor.system("observation pipeline"),
                label=f"Pipeline run #{self.run.pk}",
                reason="Observations and reflections from the pipeline.",
            )
            self.progress.save(batch=batch)
        return self.run.batch

    def run_tools(
        self,
        *,
        system: str,
        prompt: str,
        tool: Tool,
        handler: ToolHandler,
        purpose: str,
        policy: OfflinePolicy | None,
        deltas: Callable[[], dict[str, int]],
    ) -> ToolSession:
        return self.engine.run_tools(
            system=system,
            prompt=prompt,
            tools=[tool],
            handler=_counting(self.progress, handler, deltas),
            purpose=purpose,
            max_turns=MAX_TURNS,
            offline_policy=policy,
        )

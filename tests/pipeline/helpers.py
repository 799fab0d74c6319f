from memory import services
from memory.models import Interaction, PipelineRun
from memory.pipeline.services import pipeline_run_execute

TRANSCRIPT = [
    {
        "id": "m1",
        "role": "user",
        "at": "2026-03-02 09:15",
        "text": "We decided to use Postgres advisory locks for the job queue in src/queue/worker.py.",
    },
    {
        "id": "m2",
        "role": "assistant",
        "at": "2026-03-02 09:17",
        "text": "Implemented the advisory locks for the job queue worker; the queue tests pass now.",
    },
    {"id": "m3", "role": "user", "at": "2026-03-02 09:20", "text": "Never push directly to the main branch."},
    {"id": "m4", "role": "user", "at": "2026-03-02 09:21", "text": "ok"},
]


def make_interaction(memory, transcript=TRANSCRIPT):
    return Interaction.objects.create(
        memory=memory, trigger_type="session", summary="queue work", transcript=transcript
    )


def run_pipeline(memory, interaction=None, engine=None):
    run = PipelineRun.objects.create(memory=memory, interaction=interaction)
    return pipeline_run_execute(run_id=run.pk, engine=engine)


SYSTEM = services.Actor.system("test")

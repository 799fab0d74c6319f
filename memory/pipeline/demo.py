"""Demo data: two recorded sessions for Noor on tidewater-etl, one already through the pipeline.

`seed(stdout)` is safe to run again: the sessions are matched by their trigger and the run is
only made once. The second session is left for a person to run the pipeline on from the page.
"""

from memory.engines.offline import OfflineEngine
from memory.models import Interaction, Memory, PipelineRun
from memory.pipeline.services import pipeline_run_execute

DEMO_PERSONA = "Noor"
DEMO_PROJECT = "tidewater-etl"

SESSIONS = [
    (
        "pipeline demo: nightly load",
        "Nightly load failed on the orders partition",
        [
            ("n1", "user", "2026-03-02 09:05", "The nightly load failed again on the orders partition at 02:10."),
            (
                "n2",
                "assistant",
                "2026-03-02 09:12",
                "Root cause: the orders extract in etl/extract/orders.py reads the partition before the upstream "
                "export finishes; the sensor only checks that the file exists.",
            ),
            ("n3", "user", "2026-03-02 09:14", "We decided to wait for the _SUCCESS marker instead of the file."),
            (
                "n4",
                "assistant",
                "2026-03-02 09:40",
                "completed: the orders sensor now waits for the _SUCCESS marker; the backfill for 2026-03-01 passed.",
            ),
            (
                "n5",
                "user",
                "2026-03-02 09:41",
                "Never rerun a partition load without truncating the staging table first.",
            ),
            ("n6", "user", "2026-03-02 09:42", "thanks"),
        ],
    ),
    (
        "pipeline demo: schema drift",
        "Schema drift in the customers feed",
        [
            ("s1", "user", "2026-03-04 14:00", "The customers feed added a nullable loyalty_tier column overnight."),
            (
                "s2",
                "assistant",
                "2026-03-04 14:08",
                "The loader in etl/load/customers.py failed because the schema check rejects unknown columns.",
            ),
            (
                "s3",
                "user",
                "2026-03-04 14:10",
                "We decided new nullable columns are accepted and logged; dropped columns still fail the load.",
            ),
            (
                "s4",
                "assistant",
                "2026-03-04 14:30",
                "completed: schema check accepts new nullable columns and logs them to the drift report.",
            ),
        ],
    ),
]


def _interaction(memory, trigger, summary, entries):
    found = Interaction.objects.filter(memory=memory, trigger_type=trigger).first()
    if found:
        return found
    return Interaction.objects.create(
        memory=memory,
        trigger_type=trigger,
        summary=summary,
        outcome="success",
        transcript=[{"id": i, "role": role, "at": at, "text": text} for i, role, at, text in entries],
    )


def seed(stdout=None):
    memory = Memory.objects.filter(persona__name=DEMO_PERSONA, project__slug=DEMO_PROJECT).first()
    if memory is None:
        return
    first, *_rest = [_interaction(memory, *session) for session in SESSIONS]
    if not PipelineRun.objects.filter(memory=memory, interaction=first).exists():
        run = PipelineRun.objects.create(memory=memory, interaction=first)
        run = pipeline_run_execute(run_id=run.pk, engine=OfflineEngine())
        if stdout:
            stdout.write(
                f"Pipeline: run #{run.pk} on {memory} ({run.status}, {run.observations_added} observations, "
                f"{run.reflections_added} reflections).\n"
            )

"""python manage.py detect_conflicts [--memory ID | --persona NAME [--project SLUG]] — find conflicting
lessons and lessons that name an expiry, in every memory or the ones named (imported memories too)."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from memory.conflicts.model import model_engine_configured
from memory.conflicts.model_runs import conflicts_model_checks_clear
from memory.conflicts.services import conflicts_detect
from memory.models import Memory


class Command(BaseCommand):
    help = "Compare every active lesson with its neighbours and store new conflicts and expiry proposals."

    def add_arguments(self, parser):
        parser.add_argument("--memory", type=int, help="one memory, by id")
        parser.add_argument("--persona", help="the memories of one persona, by name")
        parser.add_argument("--project", help="the memories of one project, by slug")
        parser.add_argument(
            "--full",
            action="store_true",
            help="with a model engine (CONFLICTS_ENGINE), have the model compare every active lesson again, "
            "not only the lessons it has not compared yet",
        )

    def handle(self, *args, memory=None, persona=None, project=None, full=False, **options):
        memories = Memory.objects.select_related("persona", "project").order_by("pk")
        if memory is not None:
            memories = memories.filter(pk=memory)
        if persona:
            memories = memories.filter(persona__name=persona)
        if project:
            memories = memories.filter(project__slug=project)
        if (memory or persona or project) and not memories.exists():
            raise CommandError("No memory matches.")
        total = [0, 0]
        if model_engine_configured():
            self.stdout.write(
                f"Model engine {settings.CONFLICTS_ENGINE}: its pass over each memory follows the offline pass "
                "(in the worker when a broker is configured); its outcome is logged."
            )
        for target in memories:
            if full:
                conflicts_model_checks_clear(memory=target)
            conflicts, expiries = conflicts_detect(memory=target)
            total[0] += conflicts
            total[1] += expiries
            self.stdout.write(
                f"{target.persona.name} × {target.project.slug}: {conflicts} conflicts, {expiries} expiries"
            )
        self.stdout.write(f"{total[0]} new conflicts, {total[1]} new expiry proposals.")

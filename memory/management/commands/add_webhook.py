from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from memory.webhooks.models import EVENT_TYPES
from memory.webhooks.services import webhook_endpoint_create
from personas.models import Team


class Command(BaseCommand):
    help = "Add a webhook endpoint for a team (or every team): prints its id and signing secret."

    def add_arguments(self, parser):
        parser.add_argument("--team", default="", help="The team's slug; leave out for a site-wide endpoint.")
        parser.add_argument("--url", required=True, help="Where events are POSTed (https://…).")
        parser.add_argument(
            "--events",
            required=True,
            help=f"Comma-separated event types: {', '.join(EVENT_TYPES)}.",
        )
        parser.add_argument("--format", default="standard", choices=["standard", "slack"])
        parser.add_argument("--include-lesson-text", action="store_true", help="Send lesson text in events.")
        parser.add_argument("--description", default="")

    def handle(self, *args, team, url, events, format, include_lesson_text, description, **options):
        team_obj = None
        if team:
            team_obj = Team.objects.filter(slug=team).first()
            if team_obj is None:
                raise CommandError(f"no team with slug {team!r}")
        event_types = [e.strip() for e in events.split(",") if e.strip()]
        try:
            endpoint = webhook_endpoint_create(
                team=team_obj,
                url=url,
                event_types=event_types,
                format=format,
                include_lesson_text=include_lesson_text,
                description=description,
            )
        except ValidationError as exc:
            problems = "; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in exc.message_dict.items())
            raise CommandError(problems) from None
        self.stdout.write(f"id {endpoint.pk}")
        self.stdout.write(f"secret {endpoint.secret}")
        self.stderr.write("The secret is shown only here: keep it where the receiver can verify signatures.")

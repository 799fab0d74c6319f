from django.core.management.base import BaseCommand, CommandError

from memory.tokens import agent_token_create
from personas.models import Persona, Project


class Command(BaseCommand):
    help = "Create a bearer token for an agent: it reads and appends only its persona's memory."

    def add_arguments(self, parser):
        parser.add_argument("--persona", required=True, help="Persona name (case-insensitive).")
        parser.add_argument("--project", default="", help="Limit the token to one project (slug).")
        parser.add_argument("--name", default="", help="A label to recognise the token by.")

    def handle(self, *args, persona, project, name, **options):
        try:
            persona_obj = Persona.objects.not_archived().get_by_name(persona)
        except Persona.DoesNotExist:
            raise CommandError(f"no active persona named {persona!r}") from None
        project_obj = None
        if project:
            project_obj = Project.objects.filter(slug=project).first()
            if project_obj is None:
                raise CommandError(f"no project with slug {project!r}")
        token, raw = agent_token_create(persona=persona_obj, project=project_obj, name=name)
        scope = f"project {project_obj.slug}" if project_obj else "all projects"
        self.stderr.write(f"Token {token.prefix}… for {persona_obj.name} ({scope}). It is shown only once:")
        self.stdout.write(raw)

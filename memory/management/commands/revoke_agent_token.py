from django.core.management.base import BaseCommand, CommandError

from memory.models import AgentToken
from memory.tokens import agent_token_revoke


class Command(BaseCommand):
    help = "Revoke an agent token, found by the prefix printed when it was created."

    def add_arguments(self, parser):
        parser.add_argument("prefix", help="The token's first characters (nwm_…), as listed in the admin.")

    def handle(self, *args, prefix, **options):
        tokens = list(AgentToken.objects.filter(prefix=prefix[:12], revoked_at__isnull=True))
        if not tokens:
            raise CommandError(f"no live token with prefix {prefix!r}")
        if len(tokens) > 1:
            raise CommandError(f"{len(tokens)} live tokens share prefix {prefix!r}; revoke them in the admin")
        agent_token_revoke(token=tokens[0])
        self.stdout.write(f"Revoked token {tokens[0].prefix}… of {tokens[0].persona}.")

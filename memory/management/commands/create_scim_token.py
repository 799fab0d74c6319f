from django.core.management.base import BaseCommand

from memory.sso.services import scim_token_create


class Command(BaseCommand):
    help = "Create the bearer token the identity provider presents to /scim/v2/ (shown once; revoke in the admin)."

    def add_arguments(self, parser):
        parser.add_argument("--name", default="identity provider", help="A label to recognise the token by.")

    def handle(self, *args, name, **options):
        token, raw = scim_token_create(name=name)
        self.stderr.write(f"SCIM token “{token.name}”. It is shown only once:")
        self.stdout.write(raw)

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError

from memory.access import Role
from memory.roles import ensure_role_groups

DEMO_USERNAME = "demo"
DEMO_URL = "http://127.0.0.1:8000/"


class Command(BaseCommand):
    help = "Create or reset the local demo login (user 'demo', approver, admin access) and print it."

    def add_arguments(self, parser):
        parser.add_argument("--password", help="Use this password instead of a fresh random one.")
        parser.add_argument("--url", default=DEMO_URL, help=f"The address to print (default {DEMO_URL}).")

    def handle(self, *args, **options):
        if not settings.DEBUG:
            raise CommandError(
                "demo_login only runs with DEBUG on: it creates a superuser with a printed password, "
                "which is for a local machine, never for a shared or public deployment."
            )
        password = options.get("password") or secrets.token_urlsafe(12)
        ensure_role_groups()
        user, created = get_user_model().objects.get_or_create(username=DEMO_USERNAME)
        user.set_password(password)
        user.is_active = True
        user.is_staff = True
        user.is_superuser = True
        user.save()
        user.groups.add(Group.objects.get(name=Role.APPROVER))
        url = options["url"].rstrip("/") + "/"
        self.stdout.write(
            f"{'Created' if created else 'Reset'} the demo login.\n"
            f"  Open:     {url}\n"
            f"  User:     {DEMO_USERNAME}\n"
            f"  Password: {password}\n"
            f"  Admin:    {url}admin/\n"
        )

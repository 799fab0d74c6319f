from django.core.management.base import BaseCommand, CommandError

from memory.sso.services import group_mapping_remove, group_mapping_set
from personas.models import Role, Team


class Command(BaseCommand):
    help = (
        "Map an identity provider group to a role in a team (applied at every sign-in and SCIM push), "
        "or remove the mapping with --remove. The same table is editable in the admin."
    )

    def add_arguments(self, parser):
        parser.add_argument("group", help="The group's name exactly as the provider sends it.")
        parser.add_argument("--team", default="", help="The team's slug (with --remove: omit to unmap every team).")
        parser.add_argument("--role", default="", choices=["", *Role.values], help="viewer, curator or approver.")
        parser.add_argument("--remove", action="store_true", help="Remove the mapping instead.")

    def handle(self, *args, group, team, role, remove, **options):
        team_obj = None
        if team:
            team_obj = Team.objects.filter(slug=team).first()
            if team_obj is None:
                raise CommandError(f"no team with slug {team!r}")
        if remove:
            removed = group_mapping_remove(group=group, team=team_obj)
            if not removed:
                raise CommandError(f"group {group!r} is not mapped" + (f" to team {team!r}" if team else ""))
            self.stdout.write(f"Removed {removed} mapping(s) of group {group!r}.")
            return
        if team_obj is None or not role:
            raise CommandError("--team and --role are required (or --remove)")
        mapping = group_mapping_set(group=group, team=team_obj, role=role)
        self.stdout.write(f"Mapped: {mapping}. It applies at each member's next sign-in or SCIM push.")

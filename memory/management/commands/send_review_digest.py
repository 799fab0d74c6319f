from django.core.management.base import BaseCommand

from memory.digest.services import digest_send_all


class Command(BaseCommand):
    help = (
        "Email each approver what waits for their review, oldest first (the daily beat job does the same). "
        "Nobody with nothing waiting, or who turned the digest off, gets one."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--force", action="store_true", help="send even to approvers who already got a digest in the last 20 hours"
        )

    def handle(self, *args, force=False, **options):
        sent = digest_send_all(force=force)
        self.stdout.write(f"Sent {sent} review digest{'s' if sent != 1 else ''}.")

"""python manage.py sync_memory ROOT [--watch] — two-way sync with a Night Watch agents folder."""

import signal
import threading

from django.core.management.base import BaseCommand, CommandError

from memory.formats.nightwatch import TreeError
from memory.sync.engine import sync_pass
from memory.sync.watch import watch_passes


class Command(BaseCommand):
    help = (
        "Take in what Night Watch wrote under ROOT (<root>/<persona>/memories/<project>/) since the last "
        "pass, then write out what people decided. --watch keeps doing so until stopped."
    )

    def add_arguments(self, parser):
        parser.add_argument("root", help="Night Watch's agents folder, e.g. ~/.night-watch/agents")
        parser.add_argument("--watch", action="store_true", help="keep syncing, reacting to file changes")
        parser.add_argument("--quiet", action="store_true", help="print only folders that changed or failed")

    def handle(self, *args, root, watch=False, quiet=False, **options):
        if not watch:
            failed = self.one_pass(root, quiet)
            if failed:
                raise CommandError(f"{failed} folder(s) could not be synced (listed above); the others were")
            return
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        self.stdout.write(f"watching {root} (Ctrl-C to stop)")
        watch_passes(root, stop=stop, after_pass=lambda report: self.print_report(report, quiet=True))

    def one_pass(self, root, quiet):
        try:
            report = sync_pass(root)
        except TreeError as exc:
            raise CommandError(str(exc)) from None
        return self.print_report(report, quiet)

    def print_report(self, report, quiet):
        out = self.stdout
        for f in report.folders:
            name = f"{f.persona} / {f.project}" if f.persona else f.folder
            if f.error:
                out.write(self.style.ERROR(f"error: {f.folder}: {f.error}"))
                continue
            if f.skipped and quiet:
                continue
            if quiet and not (f.taken_in or f.removed or f.written or f.conflicts):
                continue
            wrote = ", ".join(f.written) or "nothing"
            out.write(
                f"{name}: took in {f.taken_in}, removed {f.removed} (Night Watch's own), wrote {wrote}, "
                f"{f.conflicts} new conflict(s), {f.waiting} waiting for review" + (" (unchanged)" if f.skipped else "")
            )
        synced = len(report.folders) - len(report.failed)
        if not quiet:
            out.write(self.style.SUCCESS(f"{synced} folder(s) synced, {len(report.failed)} failed under {report.root}"))
        return len(report.failed)

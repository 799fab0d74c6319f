"""python manage.py import_memory ROOT — read a Night Watch memory tree into the store."""

from django.core.management.base import BaseCommand, CommandError

from memory.formats.importer import memory_import_tree
from memory.formats.nightwatch import TreeError, read_tree
from memory.formats.workspace import read_workspace_tree
from memory.services import Actor

LAYOUTS = {"nightwatch": read_tree, "workspace": read_workspace_tree}
PREVIEW_CHARS = 200


def _preview(text):
    return text if len(text) <= PREVIEW_CHARS else f"{text[:PREVIEW_CHARS]}… ({len(text):,} characters)"


class Command(BaseCommand):
    help = (
        "Import memory files (<root>/<persona>/memories/<project>/{core,working,main}.md and "
        ".archived/ personas), or with --layout workspace <root>/<persona>/<project>/{MEMORY,TOOLS,AGENTS}.md, "
        "memory/YYYY-MM-DD.md and .learnings/*.md. Idempotent; never modifies the files; lines it cannot read are kept "
        "as unparsed lessons and listed with file:line."
    )

    def add_arguments(self, parser):
        parser.add_argument("root", help="the folder holding one folder per persona")
        parser.add_argument("--layout", choices=sorted(LAYOUTS), default="nightwatch")
        parser.add_argument("--dry-run", action="store_true", help="report what would be added, write nothing")
        parser.add_argument(
            "--follow-symlinks",
            action="store_true",
            help="read files and folders that are symbolic links (skipped and reported by default)",
        )
        parser.add_argument(
            "--notify",
            action="store_true",
            help="wake the features that react to new working lessons (promotion and conflict detection, compaction checks)",
        )

    def handle(self, *args, root, layout, dry_run, notify, follow_symlinks=False, **options):
        try:
            tree = LAYOUTS[layout](root, follow_symlinks=follow_symlinks)
            report = memory_import_tree(tree=tree, actor=Actor.system("import_memory"), dry_run=dry_run, notify=notify)
        except TreeError as exc:
            raise CommandError(f"{exc}. Nothing was imported.") from None
        out = self.stdout
        for m in report.memories:
            state = " (archived)" if m.archived else ""
            created = f" [new {', '.join(m.created)}]" if m.created else ""
            out.write(
                f"{m.persona}{state} / {m.project}: +{m.core_added} core, +{m.working_added} working, "
                f"{m.already_present} already present{created}"
            )
            for note in m.notes:
                out.write(f"  note: {note}")
        for warning in report.warnings:
            out.write(self.style.WARNING(f"warning: {warning}"))
        unparsed = report.unparsed
        if unparsed:
            out.write(
                self.style.WARNING(f"{len(unparsed)} line(s) could not be parsed; kept verbatim as unparsed lessons:")
            )
            for line in unparsed:
                out.write(f"  {line.where}: {line.problem}: {_preview(line.raw_line)}")
        rejected = report.rejected
        if rejected:
            # Only where and why: the line itself may be megabytes long or hold control characters.
            out.write(self.style.ERROR(f"{len(rejected)} line(s) cannot be lessons and were not imported:"))
            for line in rejected:
                out.write(self.style.ERROR(f"  error: {line.where}: {line.problem}"))
        verb = "Would add" if dry_run else "Added"
        out.write(
            self.style.SUCCESS(
                f"{verb} {report.added} lesson(s) in {len(report.memories)} memories; "
                f"{report.already_present} already present."
            )
        )

"""python manage.py export_memory ROOT — write memories out in the Night Watch file layout."""

from django.core.management.base import BaseCommand, CommandError

from memory.formats.exporter import ExportError, export_tree
from memory.formats.workspace import export_workspace_tree

LAYOUTS = {"nightwatch": export_tree, "workspace": export_workspace_tree}


class Command(BaseCommand):
    help = (
        "Export active lessons to <root>/<persona>/memories/<project>/{core,working}.md "
        "(archived personas under .archived/). Files are replaced atomically; a replaced file is "
        "kept as <file>.bak-<timestamp>."
    )

    def add_arguments(self, parser):
        parser.add_argument("root", help="the folder to write one folder per persona into")
        parser.add_argument("--persona", help="only this persona (name, any case)")
        parser.add_argument("--project", help="only this project (slug)")
        parser.add_argument(
            "--layout",
            choices=sorted(LAYOUTS),
            default="nightwatch",
            help="workspace: <root>/<persona>/<project>/ with SOUL.md, MEMORY.md, TOOLS.md, AGENTS.md, "
            "memory/YYYY-MM-DD.md and .learnings/",
        )

    def handle(self, *args, root, persona, project, layout="nightwatch", **options):
        try:
            report = LAYOUTS[layout](root=root, persona=persona, project=project)
        except (ExportError, OSError) as exc:
            raise CommandError(str(exc)) from None
        for f in report.files:
            if f.status == "unchanged":
                continue
            backup = f" (previous kept as {f.backup.name})" if f.backup else ""
            self.stdout.write(f"{f.status}: {f.path.relative_to(report.root)} — {f.lessons} lesson(s){backup}")
        for reason in report.skipped:
            self.stdout.write(self.style.ERROR(f"error: {reason}"))
        self.stdout.write(
            self.style.SUCCESS(
                f"{report.count('written')} written, {report.count('replaced')} replaced, "
                f"{report.count('unchanged')} unchanged under {report.root}"
            )
        )
        if report.skipped:
            raise CommandError(
                f"{len(report.skipped)} memory(ies) could not be exported (listed above); the others were written"
            )

"""Each memory keeps its active lessons per tier (recounted by every write that bumps its version),
so list pages of thousands of memories do not count lessons. Existing memories are counted here, in
one UPDATE."""

from django.db import migrations, models
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce


def count_active_lessons(apps, schema_editor):
    Memory = apps.get_model("memory", "Memory")
    Lesson = apps.get_model("memory", "Lesson")

    def active(tier):
        counted = (Lesson.objects.filter(memory=OuterRef("pk"), status="active", tier=tier).order_by()
                   .values("memory").annotate(n=Count("pk")).values("n"))
        return Coalesce(Subquery(counted), 0)

    Memory.objects.update(active_core_lessons=active("core"), active_working_lessons=active("working"))


class Migration(migrations.Migration):

    dependencies = [
        ("memory", "0012_night_watch_folder_sync"),
    ]

    operations = [
        migrations.AddField(
            model_name="memory",
            name="active_core_lessons",
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
        migrations.AddField(
            model_name="memory",
            name="active_working_lessons",
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
        migrations.RunPython(count_active_lessons, migrations.RunPython.noop),
    ]

"""The lesson search index, kept by the database (see memory/search/index.py)."""

from django.db import migrations

from memory.search import index


def create(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        if schema_editor.connection.vendor == "sqlite":
            cursor.execute(index.SQLITE_TABLE)
            for sql in index.SQLITE_TRIGGERS:
                cursor.execute(sql)
            cursor.execute(index.SQLITE_FILL)
        elif schema_editor.connection.vendor == "postgresql":
            cursor.execute(index.PG_COLUMN)
            cursor.execute(index.PG_INDEX)


def drop(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        if schema_editor.connection.vendor == "sqlite":
            for sql in index.SQLITE_DROP:
                cursor.execute(sql)
        elif schema_editor.connection.vendor == "postgresql":
            for sql in index.PG_DROP:
                cursor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("memory", "0017_lesson_conflicts_and_expiry")]

    operations = [migrations.RunPython(create, drop, elidable=False)]

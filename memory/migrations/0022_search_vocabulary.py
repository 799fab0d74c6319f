"""SQLite: a view of the search index's words and how many lessons hold each (fts5vocab), which
tells search which words are too widespread to match as prefixes (memory/search/prefixes.py)."""

from django.db import migrations

from memory.search import index


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(index.SQLITE_VOCABULARY)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {index.VOCABULARY_TABLE}")


class Migration(migrations.Migration):
    dependencies = [("memory", "0021_search_ref_prefix_indexes")]

    operations = [migrations.RunPython(create, drop, elidable=False)]

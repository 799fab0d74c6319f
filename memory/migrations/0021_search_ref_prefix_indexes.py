"""Indexes that answer search's ref prefix filter without reading lesson rows, and on PostgreSQL the
function that or-s a query's distinct readings (see memory/search/index.py)."""

from django.db import migrations

from memory.search import index


def create(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        index.create_prefix_indexes(cursor, schema_editor.connection.vendor)


def drop(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        index.drop_prefix_indexes(cursor, schema_editor.connection.vendor)


class Migration(migrations.Migration):
    dependencies = [("memory", "0020_expiry_decisions")]

    operations = [migrations.RunPython(create, drop, elidable=False)]

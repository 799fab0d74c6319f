"""Raw SQL writes of many rows, for the bulk writes of the write path only (memory/history/bulk.py).

Keyed on a model's table, so they may write any table: no other module writes rows this way
(tests/test_one_write_path.py checks it), so the write path's history and version rules hold.
"""

import json
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from typing import Any

from django.db import connection, models


def _column(field: Any) -> str:
    """A concrete field's column (optional in Django's types, set on every concrete field)."""
    return field.column


def _iso_date(value: Any) -> str:
    if type(value) is date:
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} values are not written by the bulk inserter")


class RowInserter:
    """INSERTs of many rows without model instances, all of them in one statement.

    The ORM's per-object cost dominated imports, and so did binding every value of every row from
    Python (executemany on SQLite; on PostgreSQL, psycopg splitting a multi-row VALUES statement of
    thousands of placeholders). On SQLite the rows go as one JSON array, written by json's C
    encoder and unpacked by json_each, in order. On PostgreSQL they go through one COPY (psycopg
    writes the rows in C; the server skips parsing and planning per row).

    Every concrete column of the model is written: the ones given per row, the rest from the
    field's default (auto_now fields get `now`), so a field added to the model later is filled
    just as `Model.objects.create` would fill it. Given values are JSON strings, integers,
    booleans, None, dates, or (for a JSONField) the JSON text itself.
    """

    def __init__(self, model: type[models.Model], varying: Iterable[str], now: datetime) -> None:
        fields = [f for f in model._meta.concrete_fields if not f.primary_key]
        by_name = {f.attname: f for f in fields}
        self.varying = list(varying)
        if any(isinstance(by_name[name], models.DateTimeField) for name in self.varying):
            raise ValueError("date-times are written as constants only")
        sqlite = connection.vendor == "sqlite"
        # SQLite reads each row's values from the JSON array (JSON text given for a JSONField is a
        # string there: stored as it is) and the constants from parameters.
        picks = [f"json_extract(value, '$[{i}]')" for i in range(len(self.varying))]
        constants = {}
        for f in fields:
            if f.attname in self.varying:
                continue
            value = now if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False) else f.get_default()
            constants[f.attname] = f.get_db_prep_save(value, connection)
            picks.append("%s")
        qn = connection.ops.quote_name
        columns = ", ".join(qn(_column(by_name[name])) for name in [*self.varying, *constants])
        self.table, self.pk = qn(model._meta.db_table), qn(_column(model._meta.pk))
        self.constant_values = list(constants.values())
        if sqlite:
            self.sql = f"INSERT INTO {self.table} ({columns}) SELECT {', '.join(picks)} FROM json_each(%s) ORDER BY key"
        else:
            # PostgreSQL: COPY, the fastest way in. Each row is its values then the constants; new
            # ids, when asked for, are taken from the table's sequence first and copied with the rows.
            self.copy_sql = f"COPY {self.table} ({columns}) FROM STDIN"
            self.copy_with_ids_sql = f"COPY {self.table} ({self.pk}, {columns}) FROM STDIN"
            self.next_ids_sql = "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)"
            self.sequence_of = [model._meta.db_table, model._meta.pk.column]
            # A JSON default goes in as its text, written once, not dumped again for every row.
            self.constant_row = tuple(
                json.dumps(by_name[name].get_default()) if isinstance(by_name[name], models.JSONField) else value
                for name, value in constants.items()
            )

    def _payload(self, rows: Sequence[Sequence[Any]]) -> str:
        # Dates are written by the encoder as it meets them (rebuilding every row to swap them
        # for text first cost more than the encoding).
        return json.dumps(rows, ensure_ascii=False, default=_iso_date)

    def insert(self, rows: Sequence[Sequence[Any]], *, returning: bool = False) -> list[int]:
        """rows: tuples in `varying` order. Returns the new primary keys in row order when asked.

        On SQLite the new ids are the ones above the largest before: ids only grow, and the writer
        already holds the database's write lock (it wrote the batches first), so no other writer
        adds rows meanwhile. On PostgreSQL they are drawn from the table's sequence before the COPY.
        """
        if not rows:
            return []
        if connection.vendor != "sqlite":
            return self._copy(rows, returning)
        params = [*self.constant_values, self._payload(rows)]  # the placeholders' order in self.sql
        with connection.cursor() as cursor:
            if returning:
                cursor.execute(f"SELECT COALESCE(MAX({self.pk}), 0) FROM {self.table}")
                (before,) = cursor.fetchone()
            cursor.execute(self.sql, params)
            if not returning:
                return []
            cursor.execute(f"SELECT {self.pk} FROM {self.table} WHERE {self.pk} > %s ORDER BY {self.pk}", [before])
            ids = [row[0] for row in cursor.fetchall()]
        if len(ids) != len(rows):
            raise RuntimeError(f"{self.table}: {len(rows)} rows written but {len(ids)} new ids found")
        return ids

    def _copy(self, rows: Sequence[Sequence[Any]], returning: bool) -> list[int]:
        """PostgreSQL: the rows through one COPY. A value too long for its column is refused by
        COPY as by INSERT (never cut); errors come out as Django's, as from any query."""
        constants = self.constant_row
        with connection.cursor() as cursor, connection.wrap_database_errors:
            ids = []
            if returning:
                cursor.execute(self.next_ids_sql, [*self.sequence_of, len(rows)])
                ids = [row[0] for row in cursor.fetchall()]
                with cursor.cursor.copy(self.copy_with_ids_sql) as copy:
                    write = copy.write_row
                    for pk, row in zip(ids, rows):
                        write((pk, *row, *constants))
            else:
                with cursor.cursor.copy(self.copy_sql) as copy:
                    write = copy.write_row
                    for row in rows:
                        write((*row, *constants))
        return ids


def insert_instances(objs: Sequence[models.Model]) -> None:
    """INSERT unsaved model instances (all of one model) with one prepared statement: bulk_create is
    several times slower at 10,000 rows. Callers read the new ids back."""
    model = type(objs[0])
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    qn = connection.ops.quote_name
    sql = (
        f"INSERT INTO {qn(model._meta.db_table)} ({', '.join(qn(_column(f)) for f in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))})"
    )
    with connection.cursor() as cursor:
        cursor.executemany(
            sql, [[f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields] for obj in objs]
        )


def update_by_pk(model: type[models.Model], columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """UPDATE each row by primary key: rows are (value per column…, pk). One prepared statement run
    for every row; Django's bulk_update builds a CASE per field, far slower at 10,000 rows."""
    rows = list(rows)
    if not rows:
        return
    qn = connection.ops.quote_name
    assignments = ", ".join(f"{qn(column)} = %s" for column in columns)
    with connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {qn(model._meta.db_table)} SET {assignments} WHERE {qn(_column(model._meta.pk))} = %s", rows
        )

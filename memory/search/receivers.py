"""Every SQLite connection gets `nw_stems` (the index's triggers call it); after a migrate the index's
triggers are put back if a table rebuild dropped them."""

from django.db.backends.signals import connection_created
from django.db.models.signals import post_migrate
from django.dispatch import receiver

from memory.search import index, terms


@receiver(connection_created, dispatch_uid="search_register_stems")
def register_stems(sender, connection, **kwargs):
    if connection.vendor == "sqlite":
        connection.connection.create_function("nw_stems", 1, terms.stems, deterministic=True)


@receiver(post_migrate, dispatch_uid="search_ensure_index")
def ensure_index(sender, app_config=None, using="default", **kwargs):
    if app_config is not None and app_config.label == "memory":
        index.ensure_index()

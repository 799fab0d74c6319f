from django.apps import AppConfig
from django.db.models.signals import post_migrate


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"

    def ready(self):
        from memory.roles import ensure_role_groups

        post_migrate.connect(ensure_role_groups, sender=self)
        # Features connect their signal receivers at import time, in web and worker processes alike.
        import memory.compaction.receivers
        import memory.conflicts.receivers
        import memory.pipeline.receivers
        import memory.promotions.receivers
        import memory.refinement.receivers
        import memory.refs.receivers
        import memory.search.receivers
        import memory.sync.receivers
        import memory.tasks
        import memory.webhooks.receivers  # noqa: F401
        from memory.context_cache import connect_receivers

        connect_receivers()

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"

    def ready(self):
        from memory.roles import ensure_role_groups

        post_migrate.connect(ensure_role_groups, sender=self)
        import memory.tasks  # noqa: F401  (features connect their signal receivers there)

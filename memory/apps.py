from django.apps import AppConfig
from django.db.models.signals import post_migrate


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"

    def ready(self):
        from memory.roles import ensure_role_groups

        post_migrate.connect(ensure_role_groups, sender=self)
        import memory.promotions.receivers  # noqa: F401  (connects its signal receivers)
        from memory.refinement import receivers  # noqa: F401

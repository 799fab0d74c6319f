"""What an agent's context read takes from the cache instead of the database, and how writes clear it.

Every agent turn reads its compiled memory, so a read that finds everything cached runs no query
and makes at most one trip out of the process:

- a token's scope, by the token's hash, in the process (the `local` cache) for
  `AGENT_TOKEN_CACHE_SECONDS`: revoking or editing a token clears it at once in the process that
  did it, and in the others within those seconds;
- the compiled text, by memory id, version and budgets, in the process: a key is never stale, a
  change makes a new one;
- the memory's id, version and budgets by persona and project slug, for
  `MEMORY_VERSION_CACHE_SECONDS`, in the `versions` cache, which every process of the deployment
  shares (Redis, or files next to a SQLite database), cleared by a write to that memory both at
  once and when it commits: the seconds bound only a read that raced a write.
"""

import threading

from django.conf import settings
from django.core.cache import cache, caches
from django.core.signals import setting_changed
from django.db import transaction
from django.dispatch import receiver
from django.utils import timezone

COMPILED_SECONDS = 24 * 3600


def _forget(key, store=None):
    # Now, and again once committed: a read that raced the write may have cached the old value.
    store = store or local()
    store.delete(key)
    transaction.on_commit(lambda: store.delete(key))


# The cache objects, found once per thread: looking one up by name (`caches[...]`) costs more than
# reading a value from it. A change of CACHES (tests) makes every thread look them up again.
_stores = threading.local()
_generation = [0]


def _store(alias):
    found = getattr(_stores, alias, None)
    if found is None or found[0] != _generation[0]:
        found = (_generation[0], caches[alias] if alias in settings.CACHES else cache)
        setattr(_stores, alias, found)
    return found[1]


@receiver(setting_changed)
def _forget_stores(*, setting, **kwargs):
    if setting == "CACHES":
        _generation[0] += 1


def local():
    """The cache of this process (shared ones cost a trip to Redis or a file read per value)."""
    return _store("local")


def _versions():
    return _store("versions")


def token_key(digest):
    return f"nw:token:{digest}"


def token_get(digest):
    if not settings.AGENT_TOKEN_CACHE_SECONDS:
        return None
    return local().get(token_key(digest))


def token_set(digest, row):
    if settings.AGENT_TOKEN_CACHE_SECONDS:
        local().set(token_key(digest), row, timeout=settings.AGENT_TOKEN_CACHE_SECONDS)


def token_changed(digest):
    """A token was revoked, edited or deleted: its cached scope goes."""
    _forget(token_key(digest))


def _project_key(slug):
    return f"nw:project:{slug}"


def _memory_key(persona_id, project_id):
    return f"nw:memory:{persona_id}:{project_id}"


def memory_get(persona_id, project_slug):
    """The cached memory row of a persona in a project, or None (then read the database)."""
    if not settings.MEMORY_VERSION_CACHE_SECONDS:
        return None
    # A slug names the same project for as long as it is cached here (a rename shows within the
    # seconds); the version, which every write changes, is read from the shared cache.
    project_id = local().get(_project_key(project_slug))
    return None if project_id is None else _versions().get(_memory_key(persona_id, project_id))


def memory_set(persona_id, project_slug, row, project_id):
    seconds = settings.MEMORY_VERSION_CACHE_SECONDS
    if seconds:
        local().set(_project_key(project_slug), project_id, timeout=seconds)
        _versions().set(_memory_key(persona_id, project_id), row, timeout=seconds)


def memory_changed(memory):
    """A memory's lessons or budgets changed: its cached version goes."""
    if settings.MEMORY_VERSION_CACHE_SECONDS:
        _forget(_memory_key(memory.persona_id, memory.project_id), _versions())


def memories_changed(memories):
    """memory_changed for many memories (a bulk import): one trip to the shared cache, not one each."""
    if settings.MEMORY_VERSION_CACHE_SECONDS:
        keys = [_memory_key(m.persona_id, m.project_id) for m in memories]
        if keys:
            store = _versions()
            store.delete_many(keys)
            transaction.on_commit(lambda: store.delete_many(keys))


def project_changed(project):
    if settings.MEMORY_VERSION_CACHE_SECONDS:
        _forget(_project_key(project.slug))


def compiled_key(memory):
    # Budgets are part of the key: editing them changes the text without a new version.
    # The day too: a lesson leaves compiled memory on its expires_on day without a new version.
    return (
        f"nw:compiled:{memory.pk}:{memory.version}:{memory.core_char_budget}:{memory.working_char_budget}"
        f":{timezone.localdate().isoformat()}"
    )


def connect_receivers():
    """Clear the cache on saves that bypass the services (the admin site, scripts)."""
    from django.db.models.signals import post_delete, post_save

    from memory.models import AgentToken, Memory
    from personas.models import Persona, Project

    def on_token(sender, instance, **kwargs):
        token_changed(instance.token_hash)

    def on_memory(sender, instance, **kwargs):
        memory_changed(instance)

    def on_project(sender, instance, **kwargs):
        project_changed(instance)

    def on_persona(sender, instance, **kwargs):
        # An archived persona's tokens stop working; a rename changes the name its tokens reach.
        for digest in AgentToken.objects.filter(persona_id=instance.pk).values_list("token_hash", flat=True):
            token_changed(digest)

    for model, handler in ((AgentToken, on_token), (Memory, on_memory), (Project, on_project), (Persona, on_persona)):
        post_save.connect(handler, sender=model, weak=False, dispatch_uid=f"context-cache-{model.__name__}-save")
        post_delete.connect(handler, sender=model, weak=False, dispatch_uid=f"context-cache-{model.__name__}-delete")

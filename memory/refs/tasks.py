"""Celery tasks of ref checking: thin, take ids, call one service."""

from celery import shared_task

from memory.models import Memory
from memory.refs.git import has_checkout_configured
from memory.refs.services import refs_anchor_pending, refs_check_project
from personas.models import Project

__all__ = ["anchor_refs", "check_refs", "check_refs_everywhere"]


@shared_task(name="memory.refs.anchor")
def anchor_refs(memory_id):
    memory = Memory.objects.select_related("project").filter(pk=memory_id).first()
    return refs_anchor_pending(memory=memory) if memory else 0


@shared_task(name="memory.refs.check")
def check_refs(project_id):
    project = Project.objects.filter(pk=project_id).first()
    return refs_check_project(project=project).pk if project else None


@shared_task(name="memory.refs.check_everywhere")
def check_refs_everywhere():
    """The periodic sweep: one check per project whose checkout the server can read."""
    ids = [p.pk for p in Project.objects.filter(memories__isnull=False).distinct() if has_checkout_configured(p)]
    for project_id in ids:
        check_refs.delay(project_id)
    return len(ids)

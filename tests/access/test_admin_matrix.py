"""The admin's part of the permission matrix: every registered model's list and change page, for a
team's approver (with staff status) against their own team's rows and another team's.

Team-scoped admins (memory.access.TeamScopedAdmin) list the own team's rows only and do not open
another team's; every other admin stays closed to a team's approver (403). A model registered in the
admin without either fails here, naming it."""

import pytest
from django.contrib import admin
from django.urls import reverse

from memory.access import TeamScopedAdmin
from memory.models import AgentToken, ChangeBatch, DetectionRun, LLMCall, WebhookDelivery, WebhookEndpoint, WebhookEvent
from personas.models import Membership, Team
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory, make_lesson

pytestmark = pytest.mark.django_db


def _objects(label):
    team = Team.objects.create(name=f"Team {label}", slug=label)
    persona = PersonaFactory(name=f"Persona-{label}", team=team)
    project = ProjectFactory(name=f"Project {label}", slug=f"project-{label}", team=team)
    memory = MemoryFactory(persona=persona, project=project)
    lesson = make_lesson(memory, f"Lesson of {label}")  # also makes its change batch
    interaction = memory.interactions.create(trigger_type="manual", outcome="ok", summary=f"Work of {label}")
    token = AgentToken.objects.create(persona=persona, prefix=f"tok{label[:5]}", token_hash=label * 10)
    call = LLMCall.objects.create(persona=persona, memory=memory, purpose="test", provider="offline")
    detection = DetectionRun.objects.create(memory=memory, engine="offline", status="done")
    endpoint = WebhookEndpoint.objects.create(
        team=team, url=f"https://{label}.example.com/hook", event_types=["sync.failed"]
    )
    event = WebhookEvent.objects.create(type="sync.failed", team=team, data={})
    delivery = WebhookDelivery.objects.create(event=event, endpoint=endpoint)
    return {
        "memory.webhookendpoint": endpoint,
        "memory.webhookdelivery": delivery,
        "personas.team": team,
        "personas.persona": persona,
        "personas.project": project,
        "memory.memory": memory,
        "memory.lesson": lesson,
        "memory.changebatch": ChangeBatch.objects.filter(memory=memory).first(),
        "memory.interaction": interaction,
        "memory.agenttoken": token,
        "memory.llmcall": call,
        "memory.detectionrun": detection,
    }


def test_every_admin_is_scoped_or_closed_to_a_team_approver(client, django_user_model):
    own, other = _objects("alpha"), _objects("beta")
    lead = django_user_model.objects.create_user("lead", is_staff=True)
    Membership.objects.create(team=own["personas.team"], user=lead, role="approver")
    client.force_login(lead)
    problems = []
    for model, model_admin in admin.site._registry.items():
        label = model._meta.label_lower
        changelist = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        response = client.get(changelist)
        if not isinstance(model_admin, TeamScopedAdmin):
            if response.status_code != 403:
                problems.append(f"{label}: not team-scoped, yet a team approver got {response.status_code}")
            continue
        if label not in own:
            problems.append(f"{label}: team-scoped admin with no objects in this test; add it to _objects")
            continue
        if response.status_code != 200:
            problems.append(f"{label}: own team's list answered {response.status_code}")
            continue
        ids = {obj.pk for obj in response.context["cl"].result_list}
        if own[label].pk not in ids or other[label].pk in ids:
            problems.append(f"{label}: list holds {sorted(ids)}; own {own[label].pk}, other {other[label].pk}")
        change = f"admin:{model._meta.app_label}_{model._meta.model_name}_change"
        if client.get(reverse(change, args=[own[label].pk])).status_code != 200:
            problems.append(f"{label}: own team's row does not open")
        theirs = client.get(reverse(change, args=[other[label].pk]))
        if theirs.status_code == 200:
            problems.append(f"{label}: another team's row opens")
    assert not problems, "\n".join(problems)

import pytest

from personas.models import Membership, Team
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory, make_lesson


@pytest.fixture
def two_teams(db, django_user_model):
    """Two teams, each with a lead (viewer of their team only) and a memory holding refund lessons."""
    world = {}
    for label in ("red", "blue"):
        team = Team.objects.create(name=f"Team {label}", slug=f"team-{label}")
        persona = PersonaFactory(name=f"Agent-{label}", team=team)
        project = ProjectFactory(slug=f"shop-{label}", name=f"Shop {label}", team=team)
        memory = MemoryFactory(persona=persona, project=project)
        lead = django_user_model.objects.create_user(f"lead-{label}", password="pw")
        Membership.objects.create(team=team, user=lead, role="viewer")
        lessons = [
            make_lesson(memory, f"Refunds are retried three times in team {label}", refs="src/billing/refund.py#L20"),
            make_lesson(memory, f"Refund webhooks of {label} must be idempotent", category="PATTERN", tier="core"),
            make_lesson(memory, f"Invoices of {label} round per line", refs="src/billing/invoice.py"),
        ]
        world[label] = {"team": team, "persona": persona, "project": project, "memory": memory}
        world[label].update(lead=lead, lessons=lessons)
    return world

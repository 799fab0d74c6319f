"""Memories, history, tokens and LLM calls in the admin."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memory.models import AgentToken, LLMCall
from tests.factories import MemoryFactory, PersonaFactory, ProjectFactory, make_lesson

MEMORIES = reverse("admin:memory_memory_changelist")


@pytest.mark.django_db
def test_memory_list_counts_lessons_with_constant_queries(admin_client, django_assert_num_queries):
    memory = MemoryFactory()
    make_lesson(memory, "w1")
    make_lesson(memory, "c1", tier="core", category="PATTERN")
    with CaptureQueriesContext(connection) as ctx:
        response = admin_client.get(MEMORIES)
    row = response.context["cl"].result_list[0]
    assert (row.n_core, row.n_working) == (1, 1)
    project = ProjectFactory()
    for i in range(10):
        m = MemoryFactory(persona=PersonaFactory(), project=project)
        for j in range(5):
            make_lesson(m, f"lesson {i}-{j}")
    with django_assert_num_queries(len(ctx.captured_queries)):
        admin_client.get(MEMORIES)


@pytest.mark.django_db
def test_memory_page_shows_compiled_memory_escaped_and_cannot_be_deleted(admin_client):
    memory = MemoryFactory()
    make_lesson(memory, "Escape <b>this</b> please", tier="core", category="PATTERN")
    response = admin_client.get(reverse("admin:memory_memory_change", args=[memory.pk]))
    html = response.content.decode()
    assert "## Core Lessons" in html
    assert "Escape &lt;b&gt;this&lt;/b&gt; please" in html
    assert admin_client.post(reverse("admin:memory_memory_delete", args=[memory.pk])).status_code == 403


@pytest.mark.django_db
@pytest.mark.parametrize("model", ["llmcall", "agenttoken", "changebatch", "interaction", "detectionrun"])
def test_logs_and_tokens_are_read_only(admin_client, model):
    assert admin_client.get(reverse(f"admin:memory_{model}_changelist")).status_code == 200
    assert admin_client.get(reverse(f"admin:memory_{model}_add")).status_code == 403


@pytest.mark.django_db
def test_token_page_never_shows_the_hash(admin_client):
    persona = PersonaFactory()
    token = AgentToken.objects.create(persona=persona, prefix="nw_abc", token_hash="f" * 64, name="ci")
    html = admin_client.get(reverse("admin:memory_agenttoken_change", args=[token.pk])).content.decode()
    assert "nw_abc" in html and "f" * 64 not in html
    LLMCall.objects.create(purpose="reflection", provider="offline")
    assert "reflection" in admin_client.get(reverse("admin:memory_llmcall_changelist")).content.decode()

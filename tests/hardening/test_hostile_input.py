"""Hostile text and numbers through every entry point: a 4xx or a form error naming the problem, and
nothing written. NUL and control characters, the line breaks a single line must not hold
(\\r, U+2028, U+2029), numbers past what the database stores, and over-long text.

Runs on SQLite and, in CI, on PostgreSQL (where NUL and overflowing integers used to give 500s).
"""

import io
from datetime import date

import pytest
from django.conf import settings
from django.core.management import call_command
from django.urls import reverse

from memory import services
from memory.compaction.services import compaction_propose
from memory.models import (
    Change,
    ChangeBatch,
    CompactionProposal,
    Interaction,
    Lesson,
    LessonRef,
    Memory,
    PipelineRun,
    PromotionCandidate,
    ProposalLine,
)
from memory.promotions.services import promotion_detect
from memory.tokens import agent_token_create
from personas.models import Persona, Project
from tests.api.conftest import AgentClient
from tests.compaction.helpers import ScriptedEngine
from tests.factories import make_lesson

pytestmark = pytest.mark.django_db

NUL, BELL, ESC, CR, LS, PS = "a\x00b", "a\x07b", "a\x1bb", "a\rb", "a\u2028b", "a\u2029b"
BIG_LINE = "2147483648"  # one past PostgreSQL's integer
HUGE_LINE = "9223372036854775808"  # one past a bigint


def db_state():
    """Everything a hostile request could have written."""
    return {
        "lessons": sorted(Lesson.objects.values_list("pk", "text", "status", "category")),
        "refs": sorted(LessonRef.objects.values_list("pk", "path", "start_line", "end_line")),
        "changes": Change.objects.count(),
        "batches": sorted(ChangeBatch.objects.values_list("pk", "reverted_by")),
        "versions": sorted(Memory.objects.values_list("pk", "version")),
        "interactions": Interaction.objects.count(),
        "candidates": sorted(PromotionCandidate.objects.values_list("pk", "status", "reason")),
        "proposals": sorted(CompactionProposal.objects.values_list("pk", "status", "reason")),
        "proposal lines": sorted(ProposalLine.objects.values_list("pk", "text", "refs")),
        "runs": PipelineRun.objects.count(),
        "personas": sorted(Persona.objects.values_list("pk", "name")),
        "projects": Project.objects.count(),
    }


@pytest.fixture
def world(memory, approver, client):
    """One memory with a lesson, a promotion candidate, a compaction proposal; an agent and an approver."""
    actor = services.Actor.for_user(approver)
    lesson = make_lesson(memory, "Retry uses a fixed delay", refs="src/queue/worker.py#L10-L20")
    themed = [
        make_lesson(memory, text, refs="src/billing/webhooks.py#L10", day=date(2026, 1, i + 1))
        for i, text in enumerate(
            [
                "Webhook handlers must verify the Stripe signature before parsing the payload",
                "Verify the Stripe webhook signature first; parsing before verification accepted forged events",
                "Stripe webhook payload parsing happens only after signature verification",
            ]
        )
    ]
    candidate = promotion_detect(memory=memory).created[0]
    memory.compaction_target_lines = 10
    memory.save()
    ids = ", ".join(str(lesson.pk) for lesson in themed)
    proposal = compaction_propose(
        memory=memory,
        actor=actor,
        engine=ScriptedEngine(
            f"- [PATTERN] Verify the Stripe webhook signature before parsing (ref: src/billing/webhooks.py#L10) "
            f"{{ids: {ids}}}\n- [OBSERVATION] Retry uses a fixed delay (ref: src/queue/worker.py#L10-L20) "
            f"{{ids: {lesson.pk}}}\n"
        ),
    )
    batch = ChangeBatch.objects.filter(memory=memory).order_by("-id").first()
    agent = AgentClient(client, agent_token_create(persona=memory.persona, name="tests")[1])
    client.force_login(approver)
    return {
        "memory": memory,
        "lesson": lesson,
        "candidate": candidate,
        "proposal": proposal,
        "batch": batch,
        "agent": agent,
        "client": client,
        "persona": memory.persona.name,
        "project": memory.project.slug,
    }


def api(world, method, tail, body=None, params=None):
    url = f"/api/v1/memory/{world['persona']}/{world['project']}/{tail}"
    if method == "get":
        return world["agent"].get(url, params)
    return world["agent"].post(url, body)


def lessons_post(world, **item):
    return api(world, "post", "lessons", {"lessons": [{"tool": "log_learning", "text": "fine", **item}]})


def interaction_post(world, **fields):
    body = {"trigger_type": "pr_review", "summary": "Reviewed the retry code", **fields}
    return api(world, "post", "interactions", body)


def form_post(world, name, args, data):
    return world["client"].post(reverse(name, args=args), data, follow=True)


def compaction_line_post(world, **fields):
    line = world["proposal"].lines.order_by("position").first()
    data = {"category": line.category, "text": line.text, "refs": "", **fields}
    return form_post(world, "compaction-line-edit", [world["proposal"].pk, line.pk], data)


# (entry point, how to send the hostile value); each runs with every value of its kind below.
SINGLE_LINE_ENTRIES = {
    "api lesson text": lambda w, v: lessons_post(w, text=v),
    "api lesson ref": lambda w, v: lessons_post(w, refs=[f"src/{v}.py"]),
    "api interaction trigger_type": lambda w, v: interaction_post(w, trigger_type=v),
    "api interaction outcome": lambda w, v: interaction_post(w, outcome=v),
    "api interaction files_changed": lambda w, v: interaction_post(w, files_changed=[f"src/{v}.py"]),
    "api interaction transcript id": lambda w, v: interaction_post(w, transcript=[{"id": v, "text": "hi"}]),
    "api ?path=": lambda w, v: api(w, "get", "lessons", params={"path": f"src/{v}"}),
    "dashboard lesson edit text": lambda w, v: form_post(
        w,
        "lesson_edit",
        [w["lesson"].pk],
        {"text": v, "category": "OBSERVATION", "relevance": "medium", "refs": "", "reason": ""},
    ),
    "dashboard lesson edit refs": lambda w, v: form_post(
        w,
        "lesson_edit",
        [w["lesson"].pk],
        {"text": "Retry uses a fixed delay", "category": "OBSERVATION", "relevance": "medium", "refs": f"a{v}.py"},
    ),
    "promotion approve-edit text": lambda w, v: form_post(
        w, "promotions:approve", [w["candidate"].pk], {"edit": "1", "text": v, "category": "PATTERN", "refs": ""}
    ),
    "compaction line edit text": lambda w, v: compaction_line_post(w, text=v),
}
MULTI_LINE_ENTRIES = {
    "api interaction summary": lambda w, v: interaction_post(w, summary=v),
    "api interaction transcript text": lambda w, v: interaction_post(w, transcript=[{"id": "m1", "text": v}]),
    "api log_error error": lambda w, v: lessons_post(w, tool="log_error", error=v),
    "dashboard delete reason": lambda w, v: form_post(w, "lesson_delete", [w["lesson"].pk], {"reason": v}),
    "promotion reject reason": lambda w, v: form_post(w, "promotions:reject", [w["candidate"].pk], {"reason": v}),
    "compaction reject reason": lambda w, v: form_post(w, "compaction-reject", [w["proposal"].pk], {"reason": v}),
    "batch revert reason": lambda w, v: form_post(w, "batch_revert", [w["batch"].pk], {"reason": v}),
    "pipeline pasted transcript": lambda w, v: form_post(
        w, "pipeline:run-start", [w["memory"].pk], {"transcript": f"user: {v}"}
    ),
}
NAME_ENTRIES = {
    "api persona in the URL": lambda w, v: w["agent"].get(f"/api/v1/memory/{v}/{w['project']}/context"),
    "api project in the URL": lambda w, v: w["agent"].get(f"/api/v1/memory/{w['persona']}/{v}/lessons"),
}
NUMBER_ENTRIES = {
    "api lesson ref line (int)": lambda w, v: lessons_post(w, refs=[f"a.py#L{v}"]),
    "api lesson ref end line": lambda w, v: lessons_post(w, refs=[f"a.py#L1-L{v}"]),
    "api files_changed line": lambda w, v: interaction_post(w, files_changed=[f"a.py#L{v}"]),
    "api ?offset=": lambda w, v: api(w, "get", "lessons", params={"offset": v}),
    "api ?limit=": lambda w, v: api(w, "get", "lessons", params={"limit": v}),
    "api interaction id": lambda w, v: w["agent"].get(f"/api/v1/interactions/{v}"),
    "api lesson id": lambda w, v: w["agent"].get(f"/api/v1/lessons/{v}"),
    "dashboard lesson edit ref line": lambda w, v: form_post(
        w,
        "lesson_edit",
        [w["lesson"].pk],
        {"text": "Retry uses a fixed delay", "category": "OBSERVATION", "relevance": "medium", "refs": f"a.py#L{v}"},
    ),
    "promotion approve-edit ref line": lambda w, v: form_post(
        w,
        "promotions:approve",
        [w["candidate"].pk],
        {"edit": "1", "text": "Verify webhook signatures first", "category": "PATTERN", "refs": f"a.py#L{v}"},
    ),
    "compaction line edit ref line": lambda w, v: compaction_line_post(w, refs=f"a.py#L{v}"),
    "pipeline start ?interaction=": lambda w, v: form_post(
        w, "pipeline:run-start", [w["memory"].pk], {"interaction": v}
    ),
    "promotions ?memory=": lambda w, v: w["client"].get(reverse("promotions:inbox"), {"memory": v}),
}
LONG_ENTRIES = {
    "api lesson text": SINGLE_LINE_ENTRIES["api lesson text"],
    "compaction line edit text": SINGLE_LINE_ENTRIES["compaction line edit text"],
    "dashboard lesson edit text": SINGLE_LINE_ENTRIES["dashboard lesson edit text"],
    "promotion approve-edit text": SINGLE_LINE_ENTRIES["promotion approve-edit text"],
}

CASES = (
    [
        pytest.param(entry, value, id=f"{entry}-{label}")
        for entry in SINGLE_LINE_ENTRIES
        for label, value in (("NUL", NUL), ("bell", BELL), ("escape", ESC), ("CR", CR), ("U+2028", LS), ("U+2029", PS))
    ]
    + [
        pytest.param(entry, value, id=f"{entry}-{label}")
        for entry in MULTI_LINE_ENTRIES
        for label, value in (("NUL", NUL), ("bell", BELL), ("escape", ESC))
    ]
    + [
        pytest.param(entry, value, id=f"{entry}-{label}")
        for entry in NAME_ENTRIES
        for label, value in (("NUL", "a%00b"), ("bell", "a%07b"), ("U+2028", "a%E2%80%A8b"))
    ]
    + [
        pytest.param(entry, value, id=f"{entry}-{label}")
        for entry in NUMBER_ENTRIES
        for label, value in (("2^31", BIG_LINE), ("2^63", HUGE_LINE), ("superscript two", "²"))
    ]
)
ENTRIES = {**SINGLE_LINE_ENTRIES, **MULTI_LINE_ENTRIES, **NAME_ENTRIES, **NUMBER_ENTRIES}

# A refused value shows up as one of these, on the page or in the JSON error.
REFUSALS = (
    "control character",
    "line break",
    "single line",
    "at most",
    "line numbers go up to",
    "not a code reference",
    "less than or equal",
    "must be a file or folder",
    "no persona named",
    "no project",
    "No such memory",
    "does not belong",
    "unpaired surrogate",
    "valid integer",
    "no interaction",
    "no lesson",
    "greater than or equal",
    "Null characters are not allowed",
    "interaction belongs",
    "Ensure this value has at most",
)


def check_refused(response, before):
    assert response.status_code < 500
    assert db_state() == before, "a refused request changed the database"
    if response.status_code >= 400:
        if response["Content-Type"].startswith("application/json"):
            assert response.json()["detail"]
        return
    # A page (after the redirect) that says what was wrong.
    content = response.content.decode()
    assert any(word in content for word in REFUSALS), content[:3000]


@pytest.mark.parametrize("entry, value", CASES)
def test_hostile_value_is_refused_and_nothing_is_written(world, entry, value):
    before = db_state()
    response = ENTRIES[entry](world, value)
    check_refused(response, before)


@pytest.mark.parametrize("entry", list(LONG_ENTRIES))
def test_over_long_lesson_text_is_refused_on_every_path(world, entry):
    before = db_state()
    response = LONG_ENTRIES[entry](world, "x" * (settings.LESSON_MAX_CHARS + 1))
    check_refused(response, before)


def test_the_api_names_the_field_of_a_hostile_value(world):
    response = lessons_post(world, text=LS)
    assert response.status_code == 422
    assert "line break (U+2028)" in response.json()["fields"]["lessons.0.text"][0]
    response = interaction_post(world, summary="fine\x00")
    assert response.status_code == 422
    assert "control character (U+0000)" in response.json()["fields"]["summary"][0]


def test_multi_line_fields_keep_newlines_and_tabs(world):
    response = interaction_post(world, summary="Line one\n\tLine two\r\nLine three")
    assert response.status_code == 202
    assert Interaction.objects.get().summary == "Line one\n\tLine two\nLine three"


def test_the_lesson_cap_is_a_setting(world, settings):
    settings.LESSON_MAX_CHARS = 300
    form_post(
        world,
        "lesson_edit",
        [world["lesson"].pk],
        {"text": "y" * 301, "category": "OBSERVATION", "relevance": "medium", "refs": "", "reason": ""},
    )
    assert Lesson.objects.get(pk=world["lesson"].pk).text == "Retry uses a fixed delay"
    with pytest.raises(Exception, match="at most 300 characters"):
        services.lesson_create(
            memory=world["memory"], text="z" * 301, category="OBSERVATION", actor=services.Actor.system()
        )


def test_admin_refuses_hostile_persona_names(world, admin_client):
    for name in ("../../../x", "/abs", "a/b", ".", "..", ".hidden", "a\\b", "bell\x07"):
        before = db_state()
        response = admin_client.post(
            reverse("admin:personas_persona_add"),
            {
                "name": name,
                "role": "Dev",
                "is_active": "on",
                "soul": "{}",
                "style": "{}",
                "skill": "{}",
                "provider": "",
                "max_tokens": 1024,
                "temperature": 0.5,
                "refinement_threshold": 0.5,
            },
        )
        assert response.status_code == 200, name
        assert "errornote" in response.content.decode() or "errorlist" in response.content.decode()
        assert db_state() == before, name


def test_import_reports_a_hostile_or_over_long_line_with_file_and_line_and_stores_it_nowhere(tmp_path, db):
    folder = tmp_path / "Dev" / "memories" / "app"
    folder.mkdir(parents=True)
    giant = "- [OBSERVATION] " + "x" * 200_000
    (folder / "working.md").write_text(
        f"## 2026-01-02\n- [OBSERVATION] A fine lesson\n{giant}\n- [TODO] bell \x07 here\nprose line {'y' * 5000}\n",
        encoding="utf-8",
    )
    out = io.StringIO()
    call_command("import_memory", str(tmp_path), stdout=out)
    report = out.getvalue()
    assert "app/working.md:3:" in report and "app/working.md:4:" in report and "app/working.md:5:" in report
    assert "x" * 1000 not in report and "y" * 1000 not in report and "\x07" not in report
    assert list(Lesson.objects.values_list("text", flat=True)) == ["A fine lesson"]


def test_a_huge_line_number_in_files_changed_never_reaches_the_task(world):
    response = interaction_post(world, files_changed=[f"a.py#L{HUGE_LINE}"])
    assert response.status_code == 422
    assert Interaction.objects.count() == 0


def test_a_reflection_that_fails_after_commit_leaves_its_error_on_the_interaction(
    world, monkeypatch, django_capture_on_commit_callbacks
):
    from memory.reflection import services as reflection

    def broken(interaction_id, lessons):
        raise RuntimeError("disk full")

    monkeypatch.setattr(reflection, "_store", broken)
    with django_capture_on_commit_callbacks(execute=True):
        response = interaction_post(world)
    assert response.status_code == 202
    interaction = Interaction.objects.get()
    assert interaction.status == "failed"
    assert "disk full" in interaction.error

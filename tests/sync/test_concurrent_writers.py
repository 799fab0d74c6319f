"""Night Watch keeps appending (O_APPEND, every few milliseconds) while passes run and people decide.

The writer is a real thread writing real files, as Night Watch's appendReflection does; the passes and
people's decisions (an edit, a deletion, an approved promotion, an applied compaction) go through the
product's services meanwhile. At the end every appended line is one active lesson and one line of its
file, every decision is in the files, and a further pass changes nothing.
"""

import threading
from datetime import date, timedelta

import pytest

from memory import services
from memory.compaction.services import compaction_apply, compaction_propose
from memory.models import Lesson, Memory
from memory.promotions.services import promotion_approve, promotion_detect
from memory.selectors import compile_memory
from memory.sync.engine import sync_pass
from memory.sync.models import SyncConflict, SyncedFolder
from tests.promotions.conftest import THEME
from tests.sync.conftest import get_memory, memory_of, nw_append, section

pytestmark = pytest.mark.django_db

FOLDERS = ["api", "web", "docs", "cli"]
APPENDS = 120


def _seed(working):
    themed = "".join(
        section(f"2026-01-0{i + 1}", f"[OBSERVATION] {text} (ref: {ref})") for i, (text, ref) in enumerate(THEME)
    )
    nw_append(working("Dev", "api"), themed + section("2026-01-05", "[TODO] Rename the billing module"))
    day = date(2026, 1, 1)
    web = "".join(
        section((day + timedelta(days=i)).isoformat(), f"[OBSERVATION] Web finding {i} about src/w{i}.ts")
        for i in range(40)
    )
    nw_append(working("Dev", "web"), web)
    nw_append(working("Dev", "docs"), section("2026-01-02", "[DECISION] Docs are built with mkdocs"))
    nw_append(working("Dev", "cli"), section("2026-01-02", "[OBSERVATION] The CLI parses flags twice"))


def _appended(i):
    return f"Appended lesson {i:03d} from the agent's run"


def _writer(working, stop, errors):
    try:
        for i in range(APPENDS):
            nw_append(working("Dev", FOLDERS[i % 4]), section("2026-02-01", f"[OBSERVATION] {_appended(i)}"))
            stop.wait(0.004)  # pacing of the agent's runs, not a wait for a condition
    except Exception as exc:  # surfaced by the assertions
        errors.append(repr(exc))


def _widen_budgets():
    # Within budget the compiled memory is exactly what Night Watch reads from the files.
    Memory.objects.update(core_char_budget=100_000, working_char_budget=100_000)


def test_appends_racing_passes_and_decisions_are_all_kept_and_every_decision_reaches_the_files(root, working, approver):
    _seed(working)
    assert not sync_pass(root).failed
    _widen_budgets()
    person = services.Actor.for_user(approver)
    api, web, docs, cli = (memory_of("Dev", name) for name in FOLDERS)
    (candidate,) = promotion_detect(memory=api).created
    web.max_working_lines, web.compaction_target_lines = 30, 20
    web.save()
    proposal = compaction_propose(memory=web, actor=person)
    assert proposal.status == "pending", proposal.validation_errors

    decisions = [
        lambda: services.lesson_update(
            lesson=Lesson.objects.get(memory=cli, text="The CLI parses flags twice"),
            actor=person,
            text="The CLI parses its flags twice on start",
        ),
        lambda: services.lesson_delete(
            lesson=Lesson.objects.get(memory=docs, text="Docs are built with mkdocs"), actor=person
        ),
        lambda: promotion_approve(candidate=candidate, actor=person),
        lambda: compaction_apply(proposal=proposal, actor=person),
    ]
    stop, errors = threading.Event(), []
    writer = threading.Thread(target=_writer, args=(working, stop, errors))
    writer.start()
    passes = 0
    try:
        while writer.is_alive() or decisions:
            if decisions:
                decisions.pop(0)()
            report = sync_pass(root)
            assert not [f.error for f in report.failed if "kept changing" not in f.error]
            passes += 1
    finally:
        stop.set()
        writer.join()
    assert not errors
    for _ in range(2):  # what the last appends left for the next pass
        assert not sync_pass(root).failed

    assert passes > 3 and not SyncConflict.objects.exists()
    for i in range(APPENDS):
        memory = memory_of("Dev", FOLDERS[i % 4])
        assert Lesson.objects.filter(memory=memory, text=_appended(i), status="active").count() == 1, i
        assert working("Dev", FOLDERS[i % 4]).read_text().count(_appended(i)) == 1, i
    for synced in SyncedFolder.objects.select_related("memory"):
        assert get_memory(root / synced.folder).rstrip() == compile_memory(synced.memory).text.rstrip(), synced
    files = working("Dev", "cli").read_text() + working("Dev", "docs").read_text()
    assert "parses its flags twice on start" in files and "mkdocs" not in files
    core = working("Dev", "api").with_name("core.md").read_text()
    candidate.refresh_from_db()
    assert candidate.text in core and "Stripe" not in working("Dev", "api").read_text()
    web_file = working("Dev", "web").read_text()
    active_web = set(Lesson.objects.filter(memory=web, status="active").values_list("text", flat=True))
    compacted_away = set(
        Lesson.objects.filter(memory=web, status__in=["superseded", "deleted"]).values_list("text", flat=True)
    )
    assert compacted_away and all(text not in web_file for text in compacted_away - active_web)

    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    rows = (Lesson.objects.count(), services.Change.objects.count())
    report = sync_pass(root)
    assert all(f.skipped for f in report.folders)
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
    assert (Lesson.objects.count(), services.Change.objects.count()) == rows


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_passes_racing_people_on_other_connections_lose_nothing(root, working, approver):
    """Passes in one thread, a person editing and deleting in another, Night Watch appending in a third."""
    from django.db import connections

    from tests.conftest import race_needs_postgres

    race_needs_postgres()
    for i in range(20):
        nw_append(working("Dev", "api"), section("2026-01-01", f"[OBSERVATION] Seeded lesson {i:02d}"))
    assert not sync_pass(root).failed
    _widen_budgets()
    person = services.Actor.for_user(approver)
    stop, errors = threading.Event(), []

    def people():
        try:
            for i in range(20):
                lesson = Lesson.objects.get(text=f"Seeded lesson {i:02d}")
                if i % 2:
                    services.lesson_delete(lesson=lesson, actor=person)
                else:
                    services.lesson_update(lesson=lesson, actor=person, text=f"Seeded lesson {i:02d} (edited)")
        except Exception as exc:
            errors.append(repr(exc))
        finally:
            connections.close_all()

    def passes():
        try:
            while not stop.is_set():
                report = sync_pass(root)
                errors.extend(f.error for f in report.failed if "kept changing" not in f.error)
        except Exception as exc:
            errors.append(repr(exc))
        finally:
            connections.close_all()

    threads = [
        threading.Thread(target=_writer, args=(working, stop, errors)),
        threading.Thread(target=people),
        threading.Thread(target=passes),
    ]
    for t in threads:
        t.start()
    threads[0].join()
    threads[1].join()
    stop.set()
    threads[2].join()
    assert not errors
    for _ in range(2):
        assert not sync_pass(root).failed
    assert not SyncConflict.objects.exists()
    for i in range(APPENDS):
        memory = memory_of("Dev", FOLDERS[i % 4])
        assert Lesson.objects.filter(memory=memory, text=_appended(i), status="active").count() == 1, i
        assert working("Dev", FOLDERS[i % 4]).read_text().count(_appended(i)) == 1, i
    api = working("Dev", "api").read_text()
    for i in range(20):
        assert (f"Seeded lesson {i:02d} (edited)" in api) == (i % 2 == 0)
        assert (f"Seeded lesson {i:02d}\n" in api) is False
    for synced in SyncedFolder.objects.select_related("memory"):
        assert get_memory(root / synced.folder).rstrip() == compile_memory(synced.memory).text.rstrip()

"""The ref check on a real git repository: each way code moves gets the right status, and
accepting a move is a recorded change that can be reverted."""

import pytest

from memory import services
from memory.models import Change, LessonRef, RefAnchor
from memory.refs.models import RefStatus
from memory.refs.services import ref_accept_move, refs_accept_moved, refs_check_project
from memory.review_queue import pending_review_counts
from memory.selectors import compile_memory
from tests.factories import SYSTEM, make_lesson

pytestmark = pytest.mark.django_db


@pytest.fixture
def write(django_capture_on_commit_callbacks):
    """Create a lesson and run what its commit triggers (anchoring), as a real request would."""

    def create(memory, refs, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return make_lesson(memory, refs=refs, **kwargs)

    return create


def anchor_of(lesson, position=0):
    ref = LessonRef.objects.select_related("anchor").filter(lesson=lesson).order_by("position")[position]
    return ref.anchor


def test_a_ref_written_with_a_checkout_is_anchored_at_write_time(checked_memory, repo, write):
    lesson = write(checked_memory, "src/auth/middleware.py#L10-L14")

    anchor = anchor_of(lesson)
    assert anchor.status == RefStatus.VALID
    assert anchor.commit == repo.head()
    assert len(anchor.fingerprint) == 64 and anchor.first_line


def test_an_untouched_ref_stays_valid_and_follows_the_head(checked_memory, repo, write):
    lesson = write(checked_memory, "src/auth/middleware.py#L10-L14")
    repo.replace_line("src/billing/invoice.py", 3, "def other(): pass")
    head = repo.commit("elsewhere")

    check = refs_check_project(project=checked_memory.project)

    assert check.error == "" and check.head == head
    anchor = anchor_of(lesson)
    assert (anchor.status, anchor.commit) == (RefStatus.VALID, head)


def test_lines_pushed_down_by_an_insert_above_are_moved_with_a_proposed_range(checked_memory, repo, write):
    lesson = write(checked_memory, "src/auth/middleware.py#L10-L14")
    first = repo.head()
    repo.insert_lines("src/auth/middleware.py", 3, ["import logging", "", "log = logging.getLogger()"])
    repo.commit("insert above")

    refs_check_project(project=checked_memory.project)

    anchor = anchor_of(lesson)
    assert anchor.status == RefStatus.MOVED
    assert anchor.proposed_text == "src/auth/middleware.py#L13-L17"
    assert anchor.commit == first  # still the commit it was last true at
    lesson.refresh_from_db()
    assert [r.as_text() for r in lesson.refs.all()] == ["src/auth/middleware.py#L10-L14"]  # never changed by itself


def test_a_renamed_file_is_followed_by_git_rename_detection(checked_memory, repo, write):
    lesson = write(checked_memory, "src/billing/invoice.py#L5-L6")
    repo.move("src/billing/invoice.py", "src/payments/invoice.py")
    repo.commit("rename")

    refs_check_project(project=checked_memory.project)

    anchor = anchor_of(lesson)
    assert anchor.status == RefStatus.MOVED
    assert anchor.proposed_text == "src/payments/invoice.py#L5-L6"
    assert "renamed to src/payments/invoice.py" in anchor.note


def test_edited_lines_are_changed(checked_memory, repo, write):
    lesson = write(checked_memory, "src/auth/middleware.py#L20-L22")
    repo.replace_line("src/auth/middleware.py", 21, "def auth_21(value, strict=True):  # rewritten")
    repo.commit("edit")

    refs_check_project(project=checked_memory.project)

    anchor = anchor_of(lesson)
    assert anchor.status == RefStatus.CHANGED
    assert anchor.note == "the referenced lines were edited"


def test_whitespace_only_edits_leave_the_ref_valid(checked_memory, repo, write):
    lesson = write(checked_memory, "src/auth/middleware.py#L20-L22")
    repo.replace_line("src/auth/middleware.py", 21, "    def auth_21(value):   # step 21 of auth")
    repo.commit("reindent")

    refs_check_project(project=checked_memory.project)

    assert anchor_of(lesson).status == RefStatus.VALID


def test_a_deleted_file_is_gone(checked_memory, repo, write):
    lesson = write(checked_memory, "src/billing/invoice.py#L1-L3")
    bare = write(checked_memory, "src/billing/invoice.py")
    repo.delete("src/billing/invoice.py")
    repo.commit("delete")

    refs_check_project(project=checked_memory.project)

    assert anchor_of(lesson).status == RefStatus.GONE
    assert anchor_of(bare).status == RefStatus.GONE


def test_a_ref_beyond_the_end_of_the_file_is_stale_from_the_start(checked_memory, repo, write):
    lesson = write(checked_memory, "src/auth/middleware.py#L38-L45")

    anchor = anchor_of(lesson)
    assert anchor.status == RefStatus.CHANGED
    assert anchor.note == "lines 38-45 are past the end of the file (40 lines)"
    assert refs_check_project(project=checked_memory.project).counts == {"changed": 1}


def test_a_file_shortened_under_an_anchored_ref_is_changed(checked_memory, repo, write):
    lesson = write(checked_memory, "src/auth/middleware.py#L36-L40")
    repo.write("src/auth/middleware.py", "\n".join(repo.read("src/auth/middleware.py").split("\n")[:30]))
    repo.commit("truncate")

    refs_check_project(project=checked_memory.project)

    anchor = anchor_of(lesson)
    assert anchor.status == RefStatus.CHANGED
    assert "past the end of the file" in anchor.note


def test_a_ref_written_before_the_checkout_existed_is_anchored_by_the_first_check(
    db, tmp_path, write, django_capture_on_commit_callbacks
):
    from memory.refs.scratch import ScratchRepo, numbered_source
    from tests.factories import MemoryFactory, ProjectFactory

    where = tmp_path / "later"
    memory = MemoryFactory(project=ProjectFactory(checkout_path=str(where)))
    lesson = write(memory, "src/app.py#L2-L4")  # the write succeeds without a checkout
    assert anchor_of(lesson).status == RefStatus.UNANCHORED
    assert "does not exist" in refs_check_project(project=memory.project).error

    later = ScratchRepo(where)
    later.write("src/app.py", numbered_source("app", 10))
    head = later.commit("first")
    check = refs_check_project(project=memory.project)

    assert check.counts == {"valid": 1}
    anchor = anchor_of(lesson)
    assert (anchor.status, anchor.commit) == (RefStatus.VALID, head)

    later.insert_lines("src/app.py", 1, ["# header"])
    later.commit("header")
    refs_check_project(project=memory.project)
    assert anchor_of(lesson).proposed_text == "src/app.py#L3-L5"


def test_accepting_a_move_is_a_recorded_change_that_reverts(checked_memory, repo, write):
    lesson = write(checked_memory, "src/auth/middleware.py#L10-L14, src/billing/invoice.py#L2")
    repo.insert_lines("src/auth/middleware.py", 1, ["# one", "# two"])
    repo.commit("insert")
    refs_check_project(project=checked_memory.project)
    ref = LessonRef.objects.get(lesson=lesson, position=0)

    ref_accept_move(ref=ref, actor=SYSTEM)

    lesson.refresh_from_db()
    assert [r.as_text() for r in lesson.refs.all()] == ["src/auth/middleware.py#L12-L16", "src/billing/invoice.py#L2"]
    assert anchor_of(lesson).status == RefStatus.VALID
    change = Change.objects.filter(lesson=lesson).latest("id")
    assert change.action == Change.Action.UPDATE
    assert change.before["refs"][0] == "src/auth/middleware.py#L10-L14"
    assert change.after["refs"][0] == "src/auth/middleware.py#L12-L16"

    services.change_revert(change=change, actor=SYSTEM)

    assert next(r.as_text() for r in lesson.refs.all()) == "src/auth/middleware.py#L10-L14"
    anchor = anchor_of(lesson)
    assert anchor.status == RefStatus.MOVED  # the revert brings back the ref with what the check found
    assert anchor.proposed_text == "src/auth/middleware.py#L12-L16"


def test_bulk_accept_is_one_batch_that_reverts_as_one(checked_memory, repo, write):
    first = write(checked_memory, "src/auth/middleware.py#L10-L14")
    second = write(checked_memory, "src/auth/middleware.py#L30")
    stale = write(checked_memory, "src/billing/invoice.py#L7")
    repo.insert_lines("src/auth/middleware.py", 1, ["# moved down"])
    repo.replace_line("src/billing/invoice.py", 7, "rewritten = True")
    repo.commit("changes")
    refs_check_project(project=checked_memory.project)

    batch = refs_accept_moved(memory=checked_memory, actor=SYSTEM)

    assert batch.changes.count() == 2
    assert [r.as_text() for r in first.refs.all()] == ["src/auth/middleware.py#L11-L15"]
    assert [r.as_text() for r in second.refs.all()] == ["src/auth/middleware.py#L31"]
    assert anchor_of(stale).status == RefStatus.CHANGED  # a stale ref is not a move to accept

    services.batch_revert(batch=batch, actor=SYSTEM)

    assert [r.as_text() for r in first.refs.all()] == ["src/auth/middleware.py#L10-L14"]
    assert [r.as_text() for r in second.refs.all()] == ["src/auth/middleware.py#L30"]


def test_stale_refs_are_marked_in_compiled_memory_and_counted_for_review(checked_memory, repo, write):
    write(checked_memory, "src/auth/middleware.py#L1-L9", text="Auth reads the session first")
    write(checked_memory, "src/billing/invoice.py#L3", text="Invoices round half up")
    before = compile_memory(checked_memory).text
    assert "(ref: src/auth/middleware.py#L1-L9)" in before
    repo.replace_line("src/auth/middleware.py", 5, "changed = 1")
    repo.commit("edit")

    refs_check_project(project=checked_memory.project)

    checked_memory.refresh_from_db()
    text = compile_memory(checked_memory).text
    assert "Auth reads the session first (ref: src/auth/middleware.py#L1-L9, stale)" in text
    assert "Invoices round half up (ref: src/billing/invoice.py#L3)" in text
    assert pending_review_counts([checked_memory.pk]) == {checked_memory.pk: 1}


def test_the_stale_mark_is_not_read_back_as_a_ref():
    from memory.refs import parse_ref_list

    assert [r.as_text() for r in parse_ref_list("src/a.py#L1-L9, stale, src/b.py")] == ["src/a.py#L1-L9", "src/b.py"]


def test_an_edit_keeping_a_stale_ref_keeps_it_stale(checked_memory, repo, write):
    lesson = write(checked_memory, "src/auth/middleware.py#L20-L22")
    repo.replace_line("src/auth/middleware.py", 21, "rewritten = True")
    repo.commit("edit")
    refs_check_project(project=checked_memory.project)

    services.lesson_update(lesson=lesson, actor=SYSTEM, text="Reworded lesson", refs="src/auth/middleware.py#L20-L22")

    assert anchor_of(lesson).status == RefStatus.CHANGED
    assert RefAnchor.objects.filter(lesson=lesson).count() == 1


def test_a_broken_checkout_never_fails_a_write(db, tmp_path, write):
    from tests.factories import MemoryFactory, ProjectFactory

    (tmp_path / "not-a-repo").mkdir()
    memory = MemoryFactory(project=ProjectFactory(checkout_path=str(tmp_path / "not-a-repo")))
    lesson = write(memory, "src/app.py#L1")

    assert lesson.pk and anchor_of(lesson).status == RefStatus.UNANCHORED
    assert "not a git repository" in refs_check_project(project=memory.project).error


def test_a_project_without_a_checkout_is_not_checked(memory, write):
    lesson = write(memory, "src/app.py#L1")

    assert anchor_of(lesson).status == RefStatus.UNANCHORED
    assert "has no checkout" in refs_check_project(project=memory.project).error


def test_the_branch_is_read_not_the_working_tree(checked_memory, repo, write):
    lesson = write(checked_memory, "src/auth/middleware.py#L10-L14")
    repo.insert_lines("src/auth/middleware.py", 1, ["# uncommitted"])  # not committed: not on the branch

    refs_check_project(project=checked_memory.project)

    assert anchor_of(lesson).status == RefStatus.VALID


def test_a_folder_ref_is_valid_while_the_folder_holds_files(checked_memory, repo, write):
    lesson = write(checked_memory, "src/billing/")
    assert anchor_of(lesson).status == RefStatus.VALID
    repo.delete("src/billing/invoice.py")
    repo.commit("empty the folder")

    refs_check_project(project=checked_memory.project)

    assert anchor_of(lesson).status == RefStatus.GONE

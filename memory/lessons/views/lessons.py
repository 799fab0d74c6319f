"""Inline curation of one lesson: edit, protect/unprotect, delete and restore.

htmx requests get the lesson row back (or the form with its errors); plain requests are
redirected to where they came from, with a message, so every action also works without JS.
"""

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.views.decorators.http import require_POST

from memory import services
from memory.access import CURATE, get_for_user_or_404
from memory.lessons.selectors import budget_state, lesson_with_context
from memory.lessons.views.memory_page import add_coverage, lesson_rows
from memory.models import ALL_CATEGORIES, CORE_CATEGORIES, Category, Lesson, LessonStatus, Relevance, Tier
from memory.refs import format_ref_list
from memory.roles import curator_required, viewer_required
from memory.services import MAX_LESSON_CHARS
from memory.web import actor_for, error_messages, reason_from, safe_next


class LessonEditForm(forms.Form):
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), max_length=MAX_LESSON_CHARS)
    category = forms.ChoiceField()
    relevance = forms.ChoiceField(choices=Relevance.choices)
    refs = forms.CharField(
        required=False,
        help_text="Comma-separated, e.g. src/auth/login.py#L42-L45",
        widget=forms.TextInput(attrs={"placeholder": "src/app.py#L10-L20, docs/adr/0003.md"}),
    )
    reason = forms.CharField(
        required=False,
        max_length=1000,
        widget=forms.TextInput(attrs={"placeholder": "Why? (optional, kept in history)"}),
    )

    def __init__(self, *args, lesson, **kwargs):
        super().__init__(*args, **kwargs)
        allowed = CORE_CATEGORIES if lesson.tier == Tier.CORE else ALL_CATEGORIES
        choices = [(c, Category(c).label) for c in allowed]
        if lesson.category not in allowed:
            choices.insert(0, ("", "— choose a category —"))
        self.fields["category"].choices = choices
        self.lesson = lesson

    @classmethod
    def for_lesson(cls, lesson):
        return cls(
            lesson=lesson,
            initial={
                "text": lesson.text,
                "category": lesson.category,
                "relevance": lesson.relevance,
                "refs": format_ref_list(lesson.refs.all()),
            },
        )

    def add_service_errors(self, exc):
        for field, msgs in getattr(exc, "message_dict", {None: error_messages(exc)}).items():
            self.add_error(field if field in self.fields else None, msgs)


def _row_context(lesson, error=""):
    lesson = lesson_with_context(lesson.pk)
    budget = budget_state(lesson.memory)
    row = lesson_rows(lesson.memory, [lesson], budget)[0]
    add_coverage(lesson.memory, [row])  # the same chips as on the page the row returns to
    return {"row": row, "memory": lesson.memory, "error": error, "budget": budget}


def _row_response(request, lesson, error="", changed=False):
    context = _row_context(lesson, error)
    if changed:
        # The counts and budget bars above the list follow the change (htmx out-of-band swap).
        context["core_usage"], context["working_usage"] = context["budget"].core, context["budget"].working
        context["summary_oob"] = True
    return TemplateResponse(request, "memory/partials/lesson_row.html", context)


def _back(request, lesson):
    return redirect(safe_next(request, lesson.memory.get_absolute_url() + f"#lesson-{lesson.pk}"))


@viewer_required
def lesson_row(request, lesson_id):
    """One lesson row: what an inline edit's Cancel swaps back in."""
    lesson = get_for_user_or_404(request.user, Lesson.objects.all(), pk=lesson_id)
    if not request.htmx:
        return _back(request, lesson)
    return _row_response(request, lesson)


@curator_required
def lesson_edit(request, lesson_id):
    lesson = get_for_user_or_404(
        request.user, Lesson.objects.select_related("memory__persona", "memory__project"), pk=lesson_id, action=CURATE
    )
    if lesson.status != LessonStatus.ACTIVE:
        error = f"This lesson is {lesson.get_status_display().lower()}: restore it before editing it."
        if request.htmx:
            return _row_response(request, lesson, error=error)
        messages.error(request, error)
        return _back(request, lesson)
    if request.method == "POST":
        form = LessonEditForm(request.POST, lesson=lesson)
        if form.is_valid():
            data = form.cleaned_data
            try:
                services.lesson_update(
                    lesson=lesson,
                    actor=actor_for(request),
                    reason=data["reason"].strip(),
                    text=data["text"],
                    category=data["category"],
                    relevance=data["relevance"],
                    refs=data["refs"],
                )
            except (ValidationError, PermissionDenied) as exc:
                form.add_service_errors(exc)
            else:
                if request.htmx:
                    return _row_response(request, lesson, changed=True)
                messages.success(request, "Lesson saved.")
                return _back(request, lesson)
    else:
        form = LessonEditForm.for_lesson(lesson)
    context = {
        "form": form,
        "lesson": lesson,
        "memory": lesson.memory,
        "next": safe_next(request, lesson.memory.get_absolute_url()),
    }
    template = "memory/lessons/lesson_edit.html" + ("#edit-form" if request.htmx else "")
    # htmx only swaps 2xx responses, so the form with its errors comes back as 200 there.
    status = 400 if form.errors and not request.htmx else 200
    return TemplateResponse(request, template, context, status=status)


def _curate(request, lesson_id, action, done):
    lesson = get_for_user_or_404(request.user, Lesson.objects.all(), pk=lesson_id, action=CURATE)
    try:
        action(lesson)
    except (ValidationError, PermissionDenied) as exc:
        error = " ".join(error_messages(exc))
        if request.htmx:
            return _row_response(request, lesson, error=error)
        messages.error(request, error)
        return _back(request, lesson)
    if request.htmx:
        return _row_response(request, lesson, changed=True)
    messages.success(request, done)
    return _back(request, lesson)


@require_POST
@curator_required
def lesson_protect(request, lesson_id):
    protect = request.POST.get("protected", "1") == "1"
    return _curate(
        request,
        lesson_id,
        lambda lesson: services.lesson_set_protected(
            lesson=lesson, protected=protect, actor=actor_for(request), reason=reason_from(request)
        ),
        "Lesson protected." if protect else "Lesson unprotected.",
    )


@require_POST
@curator_required
def lesson_delete(request, lesson_id):
    return _curate(
        request,
        lesson_id,
        lambda lesson: services.lesson_delete(lesson=lesson, actor=actor_for(request), reason=reason_from(request)),
        "Lesson deleted. It stays in history and can be restored.",
    )


@require_POST
@curator_required
def lesson_restore(request, lesson_id):
    return _curate(
        request,
        lesson_id,
        lambda lesson: services.lesson_restore(lesson=lesson, actor=actor_for(request), reason=reason_from(request)),
        "Lesson restored.",
    )

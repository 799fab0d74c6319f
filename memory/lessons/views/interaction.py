"""One interaction as the memory received it: summary, changed files, the transcript, what came of it."""

from django.template.response import TemplateResponse

from memory.access import get_for_user_or_404
from memory.models import Interaction, LessonStatus, PipelineRun
from memory.pipeline.transcripts import transcript_entries
from memory.roles import viewer_required


@viewer_required
def interaction_detail(request, interaction_id):
    interaction = get_for_user_or_404(
        request.user, Interaction.objects.select_related("memory__persona", "memory__project"), pk=interaction_id
    )
    lessons = list(
        interaction.lessons.order_by("id").only(
            "id", "text", "status", "tier", "category", "source_entry_ids", "interaction_id"
        )
    )
    cited = {}
    for lesson in lessons:
        for entry_id in lesson.source_entry_ids or []:
            cited.setdefault(str(entry_id), []).append(lesson)
    entries = [{**entry, "lessons": cited.get(entry["id"], [])} for entry in transcript_entries(interaction.transcript)]
    context = {
        "interaction": interaction,
        "memory": interaction.memory,
        "entries": entries,
        "lessons": lessons,
        "active": LessonStatus.ACTIVE,
        "runs": list(PipelineRun.objects.filter(interaction=interaction).order_by("-created_at", "-id")[:20]),
    }
    return TemplateResponse(request, "memory/lessons/interaction.html", context)

from django.template.response import TemplateResponse

from memory.lessons.selectors import home_grid
from memory.review_queue import queue_total, request_counts
from memory.roles import viewer_required


@viewer_required
def home(request):
    include_archived = request.GET.get("archived") == "1"
    # The same counts as the nav badge, so the page and the badge cannot disagree.
    review_counts = request_counts(request)
    context = {"include_archived": include_archived, "queue": queue_total(review_counts),
               **home_grid(include_archived=include_archived, review_counts=review_counts)}
    return TemplateResponse(request, "memory/lessons/home.html", context)

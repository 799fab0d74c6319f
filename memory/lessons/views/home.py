from django.template.response import TemplateResponse

from memory.lessons.selectors import home_grid
from memory.roles import viewer_required


@viewer_required
def home(request):
    include_archived = request.GET.get("archived") == "1"
    context = {"include_archived": include_archived, **home_grid(include_archived=include_archived)}
    return TemplateResponse(request, "memory/lessons/home.html", context)

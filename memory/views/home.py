from django.contrib.auth.decorators import login_required
from django.template.response import TemplateResponse

from memory.models import Memory


@login_required
def home(request):
    memories = Memory.objects.select_related("persona", "project")
    return TemplateResponse(request, "memory/home.html", {"memories": memories})

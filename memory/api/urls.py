from django.urls import path

from memory.api.views import api, memory_context_text

urlpatterns = [
    # Before the API's own patterns: the context read as text takes the short way (see the view).
    path("v1/memory/<str:persona>/<str:project>/context", memory_context_text, name="memory-context-text"),
    path("v1/", api.urls),
]

from django.urls import path

from memory.views import llm

app_name = "llm"

urlpatterns = [
    path("", llm.call_list, name="calls"),
]

from django.urls import path

from memory.engines import views as llm

app_name = "llm"

urlpatterns = [
    path("", llm.call_list, name="calls"),
]

from django.urls import path

from memory.refinement import views

app_name = "refinement"

urlpatterns = [
    path("", views.run_list, name="runs"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("runs/<int:pk>/revert/", views.run_revert, name="run-revert"),
    path("runs/<int:pk>/looked-at/", views.run_looked_at, name="run-looked-at"),
    path("memories/<int:memory_pk>/run/", views.run_start, name="run-start"),
    path("personas/<int:persona_pk>/prompt/", views.prompt_edit, name="prompt"),
    path("personas/<int:persona_pk>/threshold/", views.threshold_set, name="threshold"),
    path("personas/<int:persona_pk>/prompt/preview/", views.prompt_preview, name="prompt-preview"),
    path(
        "personas/<int:persona_pk>/prompt/versions/<int:version_pk>/restore/",
        views.prompt_restore,
        name="prompt-restore",
    ),
]

from django.urls import path

from memory.pipeline import views

app_name = "pipeline"

urlpatterns = [
    path("", views.run_list, name="runs"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("runs/<int:pk>/looked-at/", views.run_looked_at, name="run-looked-at"),
    path("memories/<int:memory_pk>/run/", views.run_start, name="run-start"),
]

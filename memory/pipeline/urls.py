from django.urls import path

from memory.pipeline import views

app_name = "pipeline"

urlpatterns = [
    path("", views.run_list, name="runs"),
    path("runs/<int:pk>/", views.run_detail, name="run"),
    path("memories/<int:memory_pk>/run/", views.run_start, name="run-start"),
]

from django.urls import path

from memory.conflicts import views as conflicts

app_name = "conflicts"

urlpatterns = [
    path("", conflicts.inbox, name="inbox"),
    path("<int:pk>/", conflicts.detail, name="detail"),
    path("<int:pk>/decide/", conflicts.decide, name="decide"),
]

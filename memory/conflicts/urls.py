from django.urls import path

from memory.conflicts import views as conflicts

app_name = "conflicts"

urlpatterns = [
    path("", conflicts.inbox, name="inbox"),
    path("bulk/", conflicts.bulk_decide, name="bulk"),
    path("<int:pk>/", conflicts.detail, name="detail"),
    path("<int:pk>/decide/", conflicts.decide, name="decide"),
    path("<int:pk>/reopen/", conflicts.reopen, name="reopen"),
]

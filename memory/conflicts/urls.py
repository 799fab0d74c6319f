from django.urls import path

from memory.conflicts import expiry_views as expiries
from memory.conflicts import views as conflicts

app_name = "conflicts"

urlpatterns = [
    path("", conflicts.inbox, name="inbox"),
    path("bulk/", conflicts.bulk_decide, name="bulk"),
    path("detect/", conflicts.detect, name="detect"),
    path("<int:pk>/", conflicts.detail, name="detail"),
    path("<int:pk>/decide/", conflicts.decide, name="decide"),
    path("<int:pk>/reopen/", conflicts.reopen, name="reopen"),
    path("expiries/", expiries.expiries, name="expiries"),
    path("expiries/bulk/", expiries.bulk, name="expiries-bulk"),
    path("expiries/<int:pk>/decide/", expiries.decide, name="expiry-decide"),
    path("expiries/lessons/<int:lesson_id>/restore/", expiries.restore, name="expired-restore"),
    path("expiries/lessons/<int:lesson_id>/retire/", expiries.retire, name="expired-retire"),
]

from django.urls import path

from memory.promotions import views as promotions

app_name = "promotions"

urlpatterns = [
    path("", promotions.inbox, name="inbox"),
    path("detect/", promotions.detect, name="detect"),
    path("bulk/", promotions.bulk_decide, name="bulk"),
    path("<int:pk>/", promotions.candidate_detail, name="detail"),
    path("<int:pk>/lessons/", promotions.supporting, name="supporting"),
    path("<int:pk>/approve/", promotions.approve, name="approve"),
    path("<int:pk>/reject/", promotions.reject, name="reject"),
]

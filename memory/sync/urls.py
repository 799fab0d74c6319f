from django.urls import path

from memory.sync import views

urlpatterns = [
    path("", views.conflict_list, name="sync-conflicts"),
    path("<int:conflict_id>/", views.conflict_detail, name="sync-conflict"),
    path("<int:conflict_id>/resolve/", views.conflict_resolve, name="sync-conflict-resolve"),
]

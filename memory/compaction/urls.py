from django.urls import path

from memory.compaction import views

urlpatterns = [
    path("", views.compaction_list, name="compaction-list"),
    path("reject/", views.compaction_bulk_reject_view, name="compaction-bulk-reject"),
    path("<int:pk>/", views.compaction_detail, name="compaction-detail"),
    path("<int:pk>/apply/", views.compaction_apply_view, name="compaction-apply"),
    path("<int:pk>/reject/", views.compaction_reject_view, name="compaction-reject"),
    path("<int:pk>/revert/", views.compaction_revert_view, name="compaction-revert"),
    path("<int:pk>/recompute/", views.compaction_recompute_view, name="compaction-recompute"),
    path("<int:pk>/lines/<int:line_pk>/edit/", views.compaction_line_edit, name="compaction-line-edit"),
    path("memories/<int:memory_pk>/propose/", views.compaction_propose_view, name="compaction-propose"),
]

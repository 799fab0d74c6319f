from django.urls import path

from memory.lessons.views import history, home, lessons, memory_page, prompt

urlpatterns = [
    path("", home.home, name="home"),
    path("memories/<int:memory_id>/", memory_page.memory_detail, name="memory_detail"),
    path("memories/<int:memory_id>/history/", history.memory_history, name="memory_history"),
    path("memories/<int:memory_id>/prompt/", prompt.prompt_preview, name="prompt_preview"),
    path("lessons/<int:lesson_id>/", lessons.lesson_row, name="lesson_row"),
    path("lessons/<int:lesson_id>/edit/", lessons.lesson_edit, name="lesson_edit"),
    path("lessons/<int:lesson_id>/protect/", lessons.lesson_protect, name="lesson_protect"),
    path("lessons/<int:lesson_id>/delete/", lessons.lesson_delete, name="lesson_delete"),
    path("lessons/<int:lesson_id>/restore/", lessons.lesson_restore, name="lesson_restore"),
    path("lessons/<int:lesson_id>/history/", history.lesson_history, name="lesson_history"),
    path("changes/<int:change_id>/revert/", history.change_revert, name="change_revert"),
    path("batches/<int:batch_id>/revert/", history.batch_revert, name="batch_revert"),
]

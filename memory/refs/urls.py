from django.urls import path

from memory.refs import views

urlpatterns = [
    path("memories/<int:memory_id>/check/", views.refs_check, name="refs_check"),
    path("memories/<int:memory_id>/accept-moved/", views.refs_accept_moved, name="refs_accept_moved"),
    path("memories/<int:memory_id>/decide/", views.refs_bulk, name="refs_bulk"),
    path("<int:ref_id>/accept/", views.ref_accept, name="ref_accept"),
    path("<int:ref_id>/drop/", views.ref_drop, name="ref_drop"),
    path("<int:ref_id>/retire/", views.ref_retire, name="ref_retire"),
]

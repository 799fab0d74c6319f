from django.urls import path

from memory.digest import views

urlpatterns = [
    path("", views.account, name="account"),
]

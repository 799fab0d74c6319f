from django.urls import path

from memory.api.views import api

urlpatterns = [
    path("v1/", api.urls),
]

from django.urls import path

from memory.sso import scim_views

# Under /scim/v2/ (nightwatch/urls.py).
urlpatterns = [
    path("", scim_views.scim_endpoint, name="scim_root"),
    path("<path:path>", scim_views.scim_endpoint, name="scim"),
]

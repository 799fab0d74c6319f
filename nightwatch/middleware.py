"""Site-wide request handling that belongs to no single feature."""

from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.shortcuts import resolve_url
from django_htmx.http import HttpResponseClientRedirect


class HtmxLoginRedirectMiddleware:
    """An htmx request whose session has expired gets sent to the login page as a whole page.

    Left alone, htmx follows the redirect and swaps the login form into the card that was clicked,
    and after logging in the browser lands on the action's URL (a POST-only view: 405). Instead the
    browser is told to load the login page, with `next` the page the user was looking at, so the
    action is never replayed: the user sees the page again and decides again.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not getattr(request, "htmx", False) or response.status_code not in (301, 302, 303, 307, 308):
            return response
        login_path = resolve_url(settings.LOGIN_URL)
        if urlsplit(response.get("Location", "")).path != login_path:
            return response
        back_to = request.htmx.current_url_abs_path or resolve_url(settings.LOGIN_REDIRECT_URL)
        return HttpResponseClientRedirect(f"{login_path}?{urlencode({'next': back_to})}")

"""A person's own account page: who they are, their roles, and the email they get."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.template.response import TemplateResponse

from memory.digest.selectors import account_digest_scope, account_memberships, digest_enabled
from memory.digest.services import digest_preference_set


class DigestForm(forms.Form):
    daily_digest = forms.BooleanField(required=False, label="Email me each day what waits for my review")


@login_required
def account(request):
    user = request.user
    if request.method == "POST":
        form = DigestForm(request.POST)
        if form.is_valid():
            digest_preference_set(user=user, daily_digest=form.cleaned_data["daily_digest"])
            messages.success(
                request,
                "Daily digest turned on."
                if form.cleaned_data["daily_digest"]
                else "Daily digest turned off: no more review emails.",
            )
            return redirect("account")
    else:
        form = DigestForm(initial={"daily_digest": digest_enabled(user)})
    memberships = account_memberships(user)
    context = {
        "form": form,
        "digest": account_digest_scope(user, memberships),
        "memberships": memberships,
        "roles": sorted(user.groups.values_list("name", flat=True)),
    }
    return TemplateResponse(request, "memory/digest/account.html", context)

"""Writes of the refinement feature that are not lesson writes: the per-persona prompt and its versions."""

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max

from memory.models import RefinementPromptVersion
from personas.models import Persona

MAX_PROMPT_CHARS = 8000


def _next_number(persona):
    return (RefinementPromptVersion.objects.filter(persona=persona).aggregate(n=Max("number"))["n"] or 0) + 1


@transaction.atomic
def refinement_prompt_save(*, persona, text, user, note=""):
    """Save a new version of the persona's refinement prompt (blank = the conservative default)."""
    text = (text or "").replace("\r\n", "\n").strip()
    if len(text) > MAX_PROMPT_CHARS:
        raise ValidationError({"text": f"The prompt must be at most {MAX_PROMPT_CHARS} characters (got {len(text)})."})
    persona = Persona.objects.select_for_update().get(pk=persona.pk)
    if not RefinementPromptVersion.objects.filter(persona=persona).exists() and persona.refinement_prompt.strip():
        # Keep what was there before the first edit from this page, so it can be restored.
        RefinementPromptVersion.objects.create(persona=persona, number=1, text=persona.refinement_prompt.strip(),
                                               note="prompt before the first recorded edit")
    if text == persona.refinement_prompt.strip() and RefinementPromptVersion.objects.filter(persona=persona).exists():
        raise ValidationError({"text": "This is the current prompt already; nothing to save."})
    version = RefinementPromptVersion.objects.create(
        persona=persona, number=_next_number(persona), text=text, created_by=user, note=note[:200])
    persona.refinement_prompt = text
    persona.save(update_fields=["refinement_prompt"])
    return version


@transaction.atomic
def refinement_prompt_restore(*, version, user):
    """Restoring an old version saves it again as the newest version."""
    return refinement_prompt_save(persona=version.persona, text=version.text, user=user,
                                  note=f"restored from version {version.number}")

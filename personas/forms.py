"""The persona form used by the admin: soul, style and skill are edited as JSON and checked against
their schema, so a typo is an error next to the field, never a server error."""

import json

from django import forms
from django.core.exceptions import ValidationError

from personas.models import Persona
from personas.schema import SCHEMAS, structured_errors
from personas.services import check_persona_name

_TYPE_HINTS = {str: "text", list: "list of text", dict: "object"}


def schema_help(section):
    fields = ", ".join(f"{name} ({_TYPE_HINTS[kind]})" for name, kind in SCHEMAS[section].items())
    return f"A JSON object. Fields: {fields}."


class StructuredJSONField(forms.JSONField):
    """A JSON textarea that is pretty-printed for editing and reports syntax errors with their position."""

    def __init__(self, section, **kwargs):
        self.section = section
        kwargs.setdefault("required", False)
        kwargs.setdefault("help_text", schema_help(section))
        kwargs.setdefault(
            "widget", forms.Textarea(attrs={"rows": 14, "cols": 100, "class": "vLargeTextField", "spellcheck": "false"})
        )
        super().__init__(**kwargs)

    def to_python(self, value):
        if isinstance(value, str):
            if not value.strip():
                return {}
            try:
                return json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValidationError(
                    f"{self.section} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.",
                    code="invalid",
                ) from None
        return {} if value in (None, "") else value

    def prepare_value(self, value):
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        return json.dumps(value if value is not None else {}, ensure_ascii=False, indent=2)

    def bound_data(self, data, initial):
        if self.disabled:
            return initial
        if data is None:
            return None
        try:
            return json.loads(data)
        except json.JSONDecodeError:
            return forms.fields.InvalidJSONInput(data)

    def validate(self, value):
        super().validate(value)
        errors = structured_errors(self.section, value)
        if errors:
            raise ValidationError(errors, code="schema")


class PersonaForm(forms.ModelForm):
    soul = StructuredJSONField("soul")
    style = StructuredJSONField("style")
    skill = StructuredJSONField("skill")
    base_url = forms.URLField(
        required=False, assume_scheme="https", help_text=Persona._meta.get_field("base_url").help_text
    )

    class Meta:
        model = Persona
        fields = [
            "name",
            "role",
            "avatar",
            "is_active",
            "soul",
            "style",
            "skill",
            "provider",
            "model_name",
            "max_tokens",
            "temperature",
            "base_url",
            "system_prompt_override",
            "reflection_prompt",
            "refinement_prompt",
            "refinement_threshold",
        ]

    def clean_refinement_prompt(self):
        from memory.refinement.services import MAX_PROMPT_CHARS

        text = (self.cleaned_data.get("refinement_prompt") or "").replace("\r\n", "\n").strip()
        if len(text) > MAX_PROMPT_CHARS:
            raise ValidationError(f"The prompt must be at most {MAX_PROMPT_CHARS} characters (got {len(text)}).")
        return text

    def clean_name(self):
        return check_persona_name(self.cleaned_data.get("name"), exclude_pk=self.instance.pk)

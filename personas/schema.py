"""Validation of the structured persona fields (soul, style, skill) against their schema.

The schema itself lives in personas.models (SOUL_FIELDS, STYLE_FIELDS, SKILL_FIELDS): a field name
mapped to its JSON type. Strings are text, lists are lists of strings, and objects map names to a
string or to a list of strings (e.g. opinions per topic, emojiUsage.favorites).
"""

from django.core.exceptions import ValidationError

from personas.models import SKILL_FIELDS, SOUL_FIELDS, STYLE_FIELDS

SCHEMAS = {"soul": SOUL_FIELDS, "style": STYLE_FIELDS, "skill": SKILL_FIELDS}


def _describe(value):
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "null" if value is None else type(value).__name__


def _is_str_list(value):
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def structured_errors(section, data):
    """Every problem in one soul/style/skill value, each naming the offending field."""
    schema = SCHEMAS[section]
    if not isinstance(data, dict):
        return [f"{section} must be a JSON object of named fields, not {_describe(data)}."]
    errors = []
    for key, value in data.items():
        expected = schema.get(key)
        where = f"{section}.{key}"
        if expected is None:
            errors.append(f"{where} is not a {section} field (expected one of: {', '.join(schema)}).")
            continue
        if expected is str and not isinstance(value, str):
            errors.append(f"{where} must be a string, not {_describe(value)}.")
        elif expected is list:
            if not isinstance(value, list):
                errors.append(f"{where} must be a list of strings, not {_describe(value)}.")
            else:
                bad = [i for i, item in enumerate(value) if not isinstance(item, str)]
                if bad:
                    errors.append(f"{where}[{bad[0]}] must be a string, not {_describe(value[bad[0]])}.")
        elif expected is dict:
            if not isinstance(value, dict):
                errors.append(f"{where} must be an object, not {_describe(value)}.")
            else:
                for sub, item in value.items():
                    if not (isinstance(item, str) or _is_str_list(item)):
                        errors.append(f"{where}.{sub} must be a string or a list of strings, not {_describe(item)}.")
    return errors


def validate_structured(section, data):
    errors = structured_errors(section, data)
    if errors:
        raise ValidationError(errors)

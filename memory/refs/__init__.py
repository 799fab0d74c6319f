"""Code references: parsing and formatting (here), anchoring them in the project's repository and
checking that they still point at the code they were written about (the rest of this package)."""

from memory.refs.parsing import (  # noqa: F401
    MAX_REF_PATH,
    STALE_MARK,
    Ref,
    format_ref_list,
    parse_ref,
    parse_ref_list,
)

"""Search across every memory a person may see: the query language, the index the database keeps,
the ranked read (selectors.py) and its page (views.py)."""

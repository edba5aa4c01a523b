import re


def slugify(title):
    """Turn a title into a URL slug: lowercase words, punctuation dropped."""
    words = re.findall(r"[a-z0-9]+", title.lower())
    return "_".join(words)

def slugify(title):
    """Turn a title into a URL slug: lowercase words, punctuation dropped."""
    raise NotImplementedError

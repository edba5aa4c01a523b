def word_counts(text):
    """A dict from each word of the text to how often it occurs."""
    raise NotImplementedError

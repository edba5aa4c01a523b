def word_counts(text):
    """A dict from each word of the text to how often it occurs."""
    counts = {}
    for word in text.lower().split():
        counts[word] = counts.get(word, 0) + 1
    return counts

def parse(text):
    """Parse lines of key=value into a dict. Blank lines and lines starting
    with # are ignored; whitespace around keys and values is stripped."""
    raise NotImplementedError

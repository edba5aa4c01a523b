def parse(text):
    """Parse lines of key=value into a dict. Blank lines and lines starting
    with # are ignored; whitespace around keys and values is stripped."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition("=")
        out.setdefault(key.strip(), value.strip())
    return out

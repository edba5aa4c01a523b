def to_roman(n):
    """Roman numeral for 1 <= n <= 3999, subtractive notation (IV, IX, XL, ...)."""
    raise NotImplementedError

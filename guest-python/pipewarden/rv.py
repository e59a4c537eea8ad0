"""Ordering Kubernetes resourceVersions, as Argo 4.1 does.

Only canonical decimals order: ASCII digits, no sign, no leading zero, not "0", any length.
Anything else is unordered (`compare` returns None) and callers decide what that means.
"""


def parse(text: str):
    """The resourceVersion as an int, or None when it is not a canonical positive decimal."""
    if not text or text[0] == "0" or not all("0" <= c <= "9" for c in text):
        return None
    return int(text)


def compare(a: str, b: str):
    """-1, 0 or 1; None when either side is unparseable."""
    left, right = parse(a), parse(b)
    if left is None or right is None:
        return None
    return (left > right) - (left < right)

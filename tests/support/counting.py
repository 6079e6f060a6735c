"""Count how often a conversion calls one function (a lowering, an export): ``counted(monkeypatch, module, name)``."""


def counted(monkeypatch, owner, name) -> list:
    """Replace ``owner.name`` by a wrapper that counts its calls; returns the one-element counter list."""
    count, real = [0], getattr(owner, name)

    def wrapper(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)
    return count

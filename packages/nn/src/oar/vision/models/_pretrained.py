"""What ``pretrained=True`` does in oar: it says that no weights can be downloaded and how to load
local ones, before anything is built."""

from __future__ import annotations

from oar.errors import ArgumentError


def check_pretrained(arch: str, pretrained: bool) -> None:
    """Raise a clear error when ``pretrained`` asks for weights: oar ships none and does not
    download Paddle's model zoo (its ``.pdparams`` files are pickles, which oar never loads).

    >>> check_pretrained("resnet18", False)
    >>> check_pretrained("resnet18", True)
    Traceback (most recent call last):
    ...
    oar.errors.ArgumentError: resnet18(pretrained=True): ...
    """
    if pretrained:
        raise ArgumentError(
            f"{arch}(pretrained=True): pretrained weights cannot be downloaded here; oar ships no weights and "
            f"does not fetch Paddle's model zoo (its .pdparams files are pickles, which oar never loads). "
            f"Build the model with pretrained=False and load a local state dict saved with oar.save: "
            f"model = {arch}(); model.set_state_dict(oar.load(path))"
        )

"""The one exception type of the encoder package."""


class EncodeError(ValueError):
    """An instruction (or a line holding one) that cannot be encoded; the message names the problem."""

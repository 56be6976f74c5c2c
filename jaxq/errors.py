"""The one exception type for bad input.

The command line turns an ``InputError`` into one line on stderr and exit code 2.
"""


class InputError(ValueError):
    """Bad input: names the offending key and the reason.

    Args:
        key: The offending key (an argument, an option such as ``--seed``, or a file's key).
        reason: Why it is refused.

    Attributes:
        key (str): The offending key.
        reason (str): Why it is refused.
    """

    def __init__(self, key: str, reason: str):
        self.key = key
        self.reason = reason
        super().__init__(f"{key}: {reason}")

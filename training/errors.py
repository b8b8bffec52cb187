"""`UsageError`: what the command line refuses, as an exception a script can catch."""


class UsageError(ValueError):
    """A refusal of what was asked (a flag, a file, a value), said in one line.

    The training code raises it wherever it used to end the process: a script that
    calls it catches a `ValueError`, and only the command line's edge
    (`keras_attn.training.cli.run`) turns it into `keras-attn: error: …` and exit
    status 2, as the parser's own errors.

    Example:

    >>> from keras_attn.training.errors import UsageError
    >>> try:
    ...     raise UsageError("--data: 'pairs.tsv' holds only 3 usable pairs")
    ... except ValueError as refusal:
    ...     print(refusal)
    --data: 'pairs.tsv' holds only 3 usable pairs
    """

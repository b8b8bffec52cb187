"""Datasets: built-in generators and loaders for public formats (no network)."""


def read_utf8_lines(path):
    """Yields the lines of a UTF-8 text file, each with its line ending.

    A line that is not UTF-8 raises a `ValueError` naming the file, the line and
    the byte, instead of a `UnicodeDecodeError` from inside the reader (whose
    position counts bytes of an 8 KiB chunk, not lines).
    """
    with open(path, "rb") as f:
        data = f.read()
    # bytes.splitlines ends lines at \n, \r\n and \r, as text mode does.
    for number, raw in enumerate(data.splitlines(keepends=True), start=1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(
                f"{path}:{number}: not UTF-8 (byte 0x{raw[error.start]:02x} at column "
                f"{error.start + 1}); re-encode the file as UTF-8"
            ) from None

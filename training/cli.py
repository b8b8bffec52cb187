"""The `keras-attn` command line."""

import argparse
import sys


def _first_line(obj):
    doc = (obj.__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


def list_layers(out=None):
    """Prints every registered `keras_attn` layer with its one-line summary."""
    import keras_attn

    out = out or sys.stdout
    layers = keras_attn.registered_layers()
    width = max(len(name) for name in layers)
    for name, cls in layers.items():
        print(f"{name:<{width}}  {_first_line(cls)}", file=out)
    return 0


def build_parser():
    from keras_attn import __version__

    parser = argparse.ArgumentParser(
        prog="keras-attn",
        description="Attention and external-memory networks for Keras 3.",
    )
    parser.add_argument("--version", action="version", version=f"keras-attn {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("layers", help="list the registered layers")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "layers":
        return list_layers()
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One module per ``motor-ident`` subcommand; each exposes ``register(subparsers)``."""

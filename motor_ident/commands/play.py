"""``motor-ident play``: replay a rosbag2 onto its topics with the original timing and /clock."""

from __future__ import annotations

import argparse

from motor_ident.commands import arguments


def cmd_play(args: argparse.Namespace) -> int:
    """Replay a bag over DDS."""
    from motor_ident.ros.recording.bag_player import play

    published = play(
        args.bag,
        rate=args.rate,
        loop=args.loop,
        topics=args.topics or None,
        publish_clock=not args.no_clock,
        wait_for_subscribers=args.wait,
    )
    print(f"published {published} messages from {args.bag}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``play`` to the command line."""
    p = sub.add_parser("play", help="replay a rosbag2 onto its topics with the original timing and /clock")
    p.add_argument("bag", help="bag directory, .mcap or .db3 file")
    p.add_argument("--rate", type=arguments.POSITIVE, default=1.0, help="playback speed factor (default 1)")
    p.add_argument("--loop", action="store_true", help="start again at the end until Ctrl-C (time goes backwards)")
    p.add_argument("--topics", nargs="+", metavar="TOPIC", help="replay only these topics (default: all)")
    p.add_argument(
        "--wait",
        type=arguments.NON_NEGATIVE,
        default=2.0,
        metavar="SEC",
        help="hold the start until every topic has a subscriber, at most SEC seconds (default 2)",
    )
    p.add_argument("--no-clock", action="store_true", help="do not publish /clock")
    p.set_defaults(func=cmd_play)

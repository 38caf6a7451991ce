"""``motor-ident play`` and ``motor-ident record --topics``: rosbag2 playback and live topic recording.

Imports motor_ident.ros.wire and motor_ident.ros.runtime only.
"""

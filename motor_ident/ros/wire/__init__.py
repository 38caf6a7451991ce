"""Message wire format: ROS messages to and from arrays, serialized-message readers and writers, .msg schemas.

Imports nothing else from motor_ident.ros.
"""

"""Scenarios: node settings, the scenario file loader and the ROS-free closed loop."""

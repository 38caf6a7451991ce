"""rosbag2 recordings without ROS: reading, joint-state arrays, alignment, writing."""

"""motor_ident: ament_python package, also installable with pip into a virtual environment."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "motor_ident"

# `ros2 run motor_ident <name>` entry points of the nodes in motor_ident/ros/nodes/ and ros/monitor/:
# each installs the stop handling before it imports its node (motor_ident.ros.runtime.entry_points).
NODES = {
    "sim_robot": "motor_ident.ros.runtime.entry_points:sim_robot",
    "identifier": "motor_ident.ros.runtime.entry_points:identifier",
    "floating_identifier": "motor_ident.ros.runtime.entry_points:floating_identifier",
    "feedforward": "motor_ident.ros.runtime.entry_points:feedforward",
    "excitation": "motor_ident.ros.runtime.entry_points:excitation",
    "decoupler": "motor_ident.ros.runtime.entry_points:decoupler",
    "pwm_feedforward": "motor_ident.ros.runtime.entry_points:pwm_feedforward",
    "vrec_controller": "motor_ident.ros.runtime.entry_points:vrec_controller",
    "elastic_sim": "motor_ident.ros.runtime.entry_points:elastic_sim",
    "monitor": "motor_ident.ros.runtime.entry_points:monitor",
}

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["tests", "tests.*"]),
    package_data={PACKAGE: ["py.typed"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml")),
        (f"share/{PACKAGE}/config/scenarios", glob("config/scenarios/*.yaml")),
        (f"share/{PACKAGE}/config/urdf", glob("config/urdf/*.urdf")),
        (f"share/{PACKAGE}/config/rviz", glob("config/rviz/*.rviz")),
        (f"share/{PACKAGE}/config/rqt", glob("config/rqt/*.sh")),
        (f"share/{PACKAGE}/config/foxglove", glob("config/foxglove/*.json")),
        (f"share/{PACKAGE}/examples", glob("examples/*.npz") + glob("examples/*.yaml")),
    ],
    python_requires=">=3.11",
    # Versions are pinned for reproducible installs in requirements/lock.txt; here only the floor.
    install_requires=[
        "numpy>=1.24",
        "scipy>=1.10",
        "PyYAML>=6.0",
        "matplotlib>=3.7",
        "rich>=13",
        "rosbags>=0.10",  # rosbag2 (MCAP, sqlite3) without ROS
        "apsw>=3.40",  # the SQLite binding rosbags reads sqlite3 bags through (its errors name a damaged bag)
        "cvxpy>=1.5",  # physically consistent identification (SDP)
        "clarabel>=0.9",  # open conic solver behind cvxpy
        "gmr>=1.6",  # Gaussian mixture regression of the deformation residual
        "threadpoolctl>=3.1",  # one BLAS thread per node process (motor_ident.ros.runtime.common.limit_blas_threads)
        "mujoco>=3.1",  # the independent physics engine (sim_robot engine: mujoco)
        "dask[distributed]>=2024.1",  # fleet identification on a local or remote cluster
        "duckdb>=1.0",  # the fleet's parameter store (Parquet files queried with SQL)
        "pyarrow>=15",
        "pandas>=2.1",
    ],
    extras_require={
        # pinocchio and the ROS 2 wheels: left out when a sourced ROS 2 / conda provides them.
        "pinocchio": ["pin>=3.0"],
        "ros": [
            "ros-rclpy",
            "ros-std-msgs",
            "ros-sensor-msgs",
            "ros-geometry-msgs",
            "ros-trajectory-msgs",
            "ros-diagnostic-msgs",
            "ros-std-srvs",
            "ros-rmw-fastrtps-cpp",
        ],
        # live view in Foxglove (motor-ident monitor): its WebSocket server, and a client for checks
        "monitor": ["foxglove-sdk>=0.30", "websockets>=13"],
        "test": [
            "pytest>=8",
            "hypothesis>=6",
            "pytest-benchmark>=4",
            "ruff>=0.5",
            "pyinstrument>=4",
            "mypy>=2",
            "mcap>=1.2",  # recordings read as third-party viewers read them
            "mcap-ros2-support>=0.5",
            "psutil>=5",  # fastdds shm clean: the test command removes what dead DDS processes left in /dev/shm
        ],
    },
    zip_safe=True,
    maintainer="motor_ident maintainers",
    maintainer_email="maintainers@motor-ident.dev",
    description="Online identification of joint and actuator dynamics with feedforward for ros2_control",
    license="Apache-2.0",
    entry_points={
        "console_scripts": ["motor-ident = motor_ident.cli:main"]
        + [f"{name} = {target}" for name, target in NODES.items()],
    },
)

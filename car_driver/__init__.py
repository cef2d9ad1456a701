"""Driver for the SunFounder Smart Video Car (and the PiCar-V variant) on a Raspberry Pi.

Layers, from the bottom:

* :mod:`.hardware` - three small interfaces (``I2CBus``, ``GPIO``, ``Camera``) and their real
  implementations; smbus2, lgpio/gpiozero and OpenCV are imported only when a real device is
  opened, so nothing here needs them on a development machine.
* :mod:`.fakes` - register-level fakes of the same interfaces (a PCA9685 with its registers,
  GPIO pins that remember their level, a camera that draws frames) for tests and for running
  the node without a car.
* :mod:`.pca9685`, :mod:`.actuators` - the PWM chip and what hangs off it: steering servo,
  pan/tilt servos, the two drive motors through an L298N or TB6612 bridge.
* :mod:`.profiles` - the per-car YAML profiles in ``config/cars``.
* :mod:`.controller` - ``CarController``: velocity command -> actuator settings, clamping,
  command watchdog, safe stop. No ROS in it.
* :mod:`.car_node` - the rospy node around ``CarController`` (``cmd_vel`` in, JPEG camera out).
"""

"""Hardware interfaces of the car and their real implementations.

The interfaces are deliberately tiny - just what the driver uses - so that the fakes in
:mod:`.fakes` can model them faithfully. The real classes import their libraries (smbus2,
lgpio or gpiozero, OpenCV) inside ``__init__``: importing this module never needs them.
"""
from __future__ import annotations

import abc
from typing import Optional


class HardwareError(RuntimeError):
    """A device could not be opened or a library is missing (the message says which)."""


def _missing(library: str, pip_name: str, purpose: str) -> HardwareError:
    return HardwareError(
        f"{purpose} needs the Python package '{library}', which is not installed. On the car: "
        f"'pip install {pip_name}' (or the Raspberry Pi OS package python3-{pip_name}); "
        f"to run without a car use the fake hardware (~hardware:=fake).")


# ------------------------------------------------------------------------------------------
# Interfaces
# ------------------------------------------------------------------------------------------
class I2CBus(abc.ABC):
    """Byte-wide register access to devices on one I2C bus."""

    @abc.abstractmethod
    def write_byte_data(self, address: int, register: int, value: int) -> None: ...

    @abc.abstractmethod
    def read_byte_data(self, address: int, register: int) -> int: ...

    def close(self) -> None:
        pass


class GPIO(abc.ABC):
    """Digital output pins, numbered by BCM GPIO number."""

    @abc.abstractmethod
    def setup_output(self, pin: int, initial: int = 0) -> None: ...

    @abc.abstractmethod
    def write(self, pin: int, level: int) -> None: ...

    def close(self) -> None:
        pass


class Camera(abc.ABC):
    """A video source giving BGR frames (numpy arrays of shape (height, width, 3), uint8)."""

    @abc.abstractmethod
    def read(self):
        """The next frame, or None when none is available."""

    def close(self) -> None:
        pass


# ------------------------------------------------------------------------------------------
# Real implementations (Raspberry Pi)
# ------------------------------------------------------------------------------------------
class SMBusI2C(I2CBus):
    """``/dev/i2c-<bus>`` through smbus2 (enable I2C with raspi-config first)."""

    def __init__(self, bus: int = 1):
        try:
            from smbus2 import SMBus  # noqa: PLC0415 - optional dependency, car only
        except ImportError:
            raise _missing("smbus2", "smbus2", "The I2C bus (PCA9685)") from None
        try:
            self._bus = SMBus(bus)
        except OSError as err:
            raise HardwareError(f"cannot open /dev/i2c-{bus}: {err}; is I2C enabled "
                                f"(raspi-config -> Interface Options -> I2C)?") from None

    def write_byte_data(self, address, register, value):
        self._bus.write_byte_data(address, register, value)

    def read_byte_data(self, address, register):
        return self._bus.read_byte_data(address, register)

    def close(self):
        self._bus.close()


class LgpioGPIO(GPIO):
    """GPIO through lgpio (works on every Pi model including the Pi 5)."""

    def __init__(self, chip: int = 0):
        try:
            import lgpio  # noqa: PLC0415
        except ImportError:
            raise _missing("lgpio", "lgpio", "GPIO access") from None
        self._lg = lgpio
        try:
            self._handle = lgpio.gpiochip_open(chip)
        except Exception as err:  # lgpio raises its own error type
            raise HardwareError(f"cannot open /dev/gpiochip{chip}: {err}") from None
        self._pins: set[int] = set()

    def setup_output(self, pin, initial=0):
        self._lg.gpio_claim_output(self._handle, pin, 1 if initial else 0)
        self._pins.add(pin)

    def write(self, pin, level):
        self._lg.gpio_write(self._handle, pin, 1 if level else 0)

    def close(self):
        for pin in sorted(self._pins):
            try:
                self._lg.gpio_write(self._handle, pin, 0)
                self._lg.gpio_free(self._handle, pin)
            except Exception:  # noqa: BLE001 - best effort while closing
                pass
        self._lg.gpiochip_close(self._handle)


class GpiozeroGPIO(GPIO):
    """GPIO through gpiozero's DigitalOutputDevice (whatever pin factory gpiozero picks)."""

    def __init__(self):
        try:
            from gpiozero import DigitalOutputDevice  # noqa: PLC0415
        except ImportError:
            raise _missing("gpiozero", "gpiozero", "GPIO access") from None
        self._cls = DigitalOutputDevice
        self._devices: dict[int, object] = {}

    def setup_output(self, pin, initial=0):
        self._devices[pin] = self._cls(pin, initial_value=bool(initial))

    def write(self, pin, level):
        device = self._devices[pin]
        device.on() if level else device.off()  # type: ignore[attr-defined]

    def close(self):
        for device in self._devices.values():
            try:
                device.off()  # type: ignore[attr-defined]
                device.close()  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001
                pass


def open_gpio(backend: str = "auto") -> GPIO:
    """``lgpio``, ``gpiozero`` or ``auto`` (lgpio if importable, else gpiozero)."""
    if backend == "lgpio":
        return LgpioGPIO()
    if backend == "gpiozero":
        return GpiozeroGPIO()
    if backend != "auto":
        raise ValueError(f"unknown GPIO backend {backend!r}; allowed: auto, lgpio, gpiozero")
    try:
        return LgpioGPIO()
    except HardwareError as first:
        try:
            return GpiozeroGPIO()
        except HardwareError:
            raise first from None


class OpenCVCamera(Camera):
    """A USB (UVC) camera through OpenCV's V4L2 backend, asking for MJPG at the given size."""

    def __init__(self, device: int | str = 0, width: int = 320, height: int = 240, fps: float = 10):
        try:
            import cv2  # noqa: PLC0415
        except ImportError:
            raise _missing("cv2", "opencv", "The camera") from None
        self._cv2 = cv2
        self._cap = cv2.VideoCapture(device, cv2.CAP_V4L2)
        if not self._cap.isOpened():
            raise HardwareError(f"cannot open camera {device!r} (is the USB camera plugged in? "
                                f"see 'v4l2-ctl --list-devices')")
        self._cap.set(cv2.CAP_PROP_FOURCC, cv2.VideoWriter_fourcc(*"MJPG"))
        self._cap.set(cv2.CAP_PROP_FRAME_WIDTH, width)
        self._cap.set(cv2.CAP_PROP_FRAME_HEIGHT, height)
        self._cap.set(cv2.CAP_PROP_FPS, fps)
        self._cap.set(cv2.CAP_PROP_BUFFERSIZE, 1)   # keep latency low: newest frame only

    def read(self):
        ok, frame = self._cap.read()
        return frame if ok else None

    def close(self):
        self._cap.release()


# ------------------------------------------------------------------------------------------
# JPEG
# ------------------------------------------------------------------------------------------
def encode_jpeg(frame, quality: int = 75, size: Optional[tuple[int, int]] = None) -> bytes:
    """Encode a BGR frame as JPEG, first resizing it to ``size`` = (width, height) if given.

    Uses OpenCV when available (it is on the car), otherwise Pillow."""
    try:
        import cv2  # noqa: PLC0415
    except ImportError:
        cv2 = None
    if cv2 is not None:
        if size and (frame.shape[1], frame.shape[0]) != tuple(size):
            frame = cv2.resize(frame, tuple(size), interpolation=cv2.INTER_AREA)
        ok, buf = cv2.imencode(".jpg", frame, [int(cv2.IMWRITE_JPEG_QUALITY), int(quality)])
        if not ok:
            raise HardwareError("JPEG encoding failed")
        return buf.tobytes()
    try:
        from PIL import Image  # noqa: PLC0415
    except ImportError:
        raise HardwareError("JPEG encoding needs OpenCV (cv2) or Pillow") from None
    import io  # noqa: PLC0415
    image = Image.fromarray(frame[:, :, ::-1])   # BGR -> RGB
    if size and image.size != tuple(size):
        image = image.resize(tuple(size))
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=int(quality))
    return out.getvalue()

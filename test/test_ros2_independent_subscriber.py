"""An independent ROS 2-side reader takes netloop's samples: Cyclone DDS's own Python binding
(PyPI `cyclonedds`, with the library of its wheel, not Debian's), knowing nothing of netloop but
ROS 2's names and the type as ROS 2's IDL declares it, reads what netloop's native flow_source
publishes over Cyclone DDS and over Fast DDS. So the topic ("rt/flows/py"), the type name
("netloop::msg::dds_::LoopSample_") and the CDR bytes are what a ROS 2 node would expect."""

import os
from dataclasses import dataclass

import pytest

from test_ros2_nodes import MIDDLEWARES, Loopback, start

pytestmark = pytest.mark.integration

from cyclonedds.core import Policy, Qos  # noqa: E402
from cyclonedds.domain import DomainParticipant  # noqa: E402
from cyclonedds.idl import IdlStruct  # noqa: E402
from cyclonedds.idl.types import float64, int32, int64, sequence, uint8, uint32  # noqa: E402
from cyclonedds.sub import DataReader  # noqa: E402
from cyclonedds.topic import Topic  # noqa: E402
from cyclonedds.util import duration  # noqa: E402


@dataclass
class Time_(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    sec: int32
    nanosec: uint32


@dataclass
class LoopSample_(IdlStruct, typename="netloop::msg::dds_::LoopSample_"):
    """netloop/msg/LoopSample.msg as ROS 2's rosidl maps it (time -> builtin_interfaces/Time)."""
    seq: uint32
    value: float64
    stamp: Time_
    answer_seq: int64
    answer_stamp: Time_
    padding: sequence[uint8]


@pytest.mark.parametrize("middleware", [m for m in ("cyclonedds", "fastdds") if m in MIDDLEWARES])
def test_a_python_cyclonedds_reader_takes_netloops_samples(roscore, tmp_path, middleware, monkeypatch):
    mw = Loopback(middleware, tmp_path)
    reader_config = Loopback("cyclonedds", tmp_path).config("reader")   # peers on 127.0.0.1, no multicast
    monkeypatch.setenv("CYCLONEDDS_URI", f"file://{reader_config}")
    count, size = 20, 1000
    participant = DomainParticipant(mw.domain_id)
    reader = DataReader(participant, Topic(participant, "rt/flows/py", LoopSample_),
                        qos=Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.Durability.Volatile,
                                Policy.History.KeepLast(10)))
    roscore.set_params({"message": "loop_sample", "size_bytes": size, "period": 0.02, "count": count,
                        "start_delay": 0.5, "record_path": str(tmp_path / "tx.csv"), "drain": 0.5,
                        **mw.params("source", tmp_path / "source.ros2.json")}, "/source")
    source = start(roscore, tmp_path, "source", "flow_source", "flow:=/flows/py")
    got = []
    for sample in reader.take_iter(timeout=duration(seconds=30)):
        got.append(sample)
        if len(got) == count:
            break
    assert source.popen.wait(timeout=60) == 0, source.log_path.read_text()[-3000:]
    assert [s.seq for s in got] == list(range(count)), f"{len(got)} of {count} samples read"
    assert all(s.answer_seq == -1 for s in got)
    assert all(s.stamp.sec > 1_700_000_000 for s in got)        # the sender's wall clock, as ROS 2 Time
    assert len({len(s.padding) for s in got}) == 1 and len(got[0].padding) > size // 2   # padded to ~size_bytes
    del reader, participant
    os.environ.pop("CYCLONEDDS_URI", None)

"""Batsim 4.2.1 wire format: typed events, decoding, encoding and the reply rules."""

from batkube_py.protocol.codec import ProtocolError, decode_message, encode_reply
from batkube_py.protocol.models import (
    CallMeLater,
    ExecuteJob,
    JobCompleted,
    JobKilled,
    JobSubmitted,
    KillJob,
    Notify,
    RejectJob,
    RequestedCall,
    SimulationBegins,
    SimulationEnds,
)
from batkube_py.protocol.reply import Reply, ReplyRuleError

__all__ = [
    "CallMeLater",
    "ExecuteJob",
    "JobCompleted",
    "JobKilled",
    "JobSubmitted",
    "KillJob",
    "Notify",
    "ProtocolError",
    "RejectJob",
    "Reply",
    "ReplyRuleError",
    "RequestedCall",
    "SimulationBegins",
    "SimulationEnds",
    "decode_message",
    "encode_reply",
]

#!/usr/bin/python3
"""A MessagePack-RPC client written against the spec only, with Python's
msgpack package (Debian's python3-msgpack): it calls every method of a
running `vesta serve` pipelined on one connection, then prints one JSON
object with what came back, keyed by method. Usage: client.py HOST:PORT"""
import json
import socket
import sys

import msgpack

host, port = sys.argv[1].rsplit(":", 1)
calls = [
    ("Vesta.GenID", []),
    ("Vesta.GenIDs", [{"count": 3}]),
    ("Vesta.ExpID", [{"id": 2610813175020394494}]),
    ("Vesta.MakeID", [{"time": 284025600, "seq": 5, "machine": 1022, "method": 2}]),
    ("Vesta.TransTime", [{"time": 284025600}]),
    ("Vesta.Info", []),
    ("Vesta.GenIDs", [{"count": 0}]),
    ("Vesta.GenIDs", [{"count": -1}]),
    ("Vesta.Nope", []),
    ("Vesta.NextSeq", [{"tag": "py"}]),
    ("Vesta.NextSeqs", [{"tag": "py", "count": 3}]),
    ("Vesta.NextSeq", [{"tag": "nope"}]),
    ("Vesta.Mask", [{"ids": [2610813175020394494], "tenant": "py", "kind": "ord"}]),
    ("Vesta.Unmask", [{"masks": ["ord_2jn04ew76n9f2", "2JN04EW76N9F2"], "tenant": "py", "kind": "ord"}]),
    ("Vesta.Unmask", [{"masks": ["ord_2jn04ew76n9f2"], "tenant": "py", "kind": "usr"}]),
    ("Vesta.Holder", [{"id": 2610813175020394494}]),
    ("Vesta.Holder", [{"id": "x"}]),
]
s = socket.create_connection((host, int(port)), timeout=10)
# Every request in one write: the server may answer in any order.
s.sendall(b"".join(msgpack.packb([0, i + 1, m, p]) for i, (m, p) in enumerate(calls)))
answers = {}
unpacker = msgpack.Unpacker(raw=False)
while len(answers) < len(calls):
    data = s.recv(65536)
    if not data:
        break
    unpacker.feed(data)
    for msg in unpacker:
        kind, msgid, error, result = msg
        assert kind == 1, msg
        answers[msgid] = {"error": error, "result": result}
s.close()
out = {}
for i, (method, params) in enumerate(calls):
    key = method if method not in out else method + "#" + str(i + 1)
    out[key] = answers.get(i + 1)
# IDs above 2^53 survive: JSON numbers from Python ints are exact.
print(json.dumps(out))

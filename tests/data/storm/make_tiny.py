"""Regenerate TinyTopo-stormcode.ser / -stormconf.ser with our own Thrift writer.

Run from the repo root: PYTHONPATH=$PWD python tests/data/storm/make_tiny.py
The topology is written field by field here (not through planner.storm.write_topology) so
the reader is tested against bytes built independently of the importer's own writer; it
also carries fields the reader must skip (an unknown i64 and a map field id 99).
"""

import gzip
import json
from pathlib import Path

from planner.storm import thrift as T

HERE = Path(__file__).parent


def common(inputs, hint, jconf):
    c = {
        1: (T.MAP, (T.STRUCT, T.STRUCT, inputs)),
        2: (T.MAP, (T.STRING, T.STRUCT, [("default", {1: (T.LIST, (T.STRING, ["word"])), 2: (T.BOOL, False)})])),
        4: (T.STRING, json.dumps(jconf)),
        99: (T.MAP, (T.STRING, T.DOUBLE, [("future", 1.5)])),  # a field a newer Storm might add
    }
    if hint is not None:
        c[3] = (T.I32, hint)
    return c


def gsid(comp, stream="default"):
    return {1: (T.STRING, comp), 2: (T.STRING, stream)}


NULL = {}
spouts = [("words", {1: (T.STRUCT, {2: (T.STRING, "java -jar spout")}),
                     2: (T.STRUCT, common([], 2, {"topology.component.cpu.pcore.percent": 50.0,
                                                  "topology.component.resources.onheap.memory.mb": 256.0}))})]
bolts = [
    ("split", {1: (T.STRUCT, {1: (T.STRING, b"\xac\xed")}),
               2: (T.STRUCT, common([(gsid("words"), {8: (T.STRUCT, NULL)})], 3,
                                    {"topology.tasks": 6,
                                     "topology.component.resources.map": {"onheap.memory.mb": 300.0, "gpu.count": 1}}))}),
    ("count", {1: (T.STRUCT, {1: (T.STRING, b"")}),
               2: (T.STRUCT, common([(gsid("split"), {1: (T.LIST, (T.STRING, ["word"]))}),
                                     (gsid("__system", "__tick"), {2: (T.STRUCT, NULL)}),
                                     (gsid("count", "loop"), {2: (T.STRUCT, NULL)})], None, {}))}),
    ("report", {1: (T.STRUCT, {1: (T.STRING, b"")}),
                2: (T.STRUCT, common([(gsid("count"), {1: (T.LIST, (T.STRING, []))}),
                                      (gsid("split", "side"), {3: (T.STRUCT, NULL)})], 1, {}))}),
]
topo = {1: (T.MAP, (T.STRING, T.STRUCT, spouts)), 2: (T.MAP, (T.STRING, T.STRUCT, bolts)),
        3: (T.MAP, (T.STRING, T.STRUCT, [])), 7: (T.STRING, "2.6.0"), 42: (T.I64, 123456789012)}
conf = {"topology.name": "tiny", "topology.workers": 2, "topology.acker.executors": 2,
        "topology.acker.cpu.pcore.percent": 5, "topology.acker.resources.onheap.memory.mb": 64,
        "topology.worker.max.heap.size.mb": 1024.0, "topology.priority": 3, "topology.submitter.user": "alice",
        "topology.component.cpu.pcore.percent": 20.0, "topology.component.resources.onheap.memory.mb": 100.0,
        "topology.component.resources.offheap.memory.mb": 10.0}
(HERE / "TinyTopo-stormcode.ser").write_bytes(gzip.compress(T.write_struct(topo), mtime=0))
(HERE / "TinyTopo-stormconf.ser").write_bytes(gzip.compress(json.dumps(conf, sort_keys=True).encode(), mtime=0))

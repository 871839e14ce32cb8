"""Checks of cluster.two_node_sweep (test_two_node_sweep.sh) on the merged result file.

    python check_cross_node.py MERGED.h5 TRAFFIC.json

MERGED.h5 holds the sweep of cross_node.toml: one configuration on 1 rank and the same on
K = 4 ranks of two nodes (2 per node, contiguous stages of a chain: rank r sends its
activations to r + 1 and its input gradients to r - 1). TRAFFIC.json holds the byte
counters each node's interfaces moved during the job ({"node1": {"veth": tx, "lo": tx}, ...}).
Checks, each failing with a message:
  * every rank's host (root and group `hosts`) and node-local rank (`node_local_ranks`):
    ranks 0, 1 on node1 as local 0, 1; ranks 2, 3 on node2 as local 0, 1;
  * the K = 4 losses equal the 1-rank losses, step by step, to 1e-5 relative (+1e-7), the
    tolerance of the one-host P-rank tests (tests/runs/test_runtime_mpi.cpp);
  * the inter-node messages crossed the veth link: per step node1 sends node2 rank 1's
    activations (bytes_sent[1] - bytes_sent[0]: rank 1 also returns to rank 0 a gradient as
    large as rank 0's activations) and node2 sends node1 rank 2's input gradients
    (bytes_sent[2] - bytes_sent[3]); each veth sent at least that (TCP adds headers);
  * the intra-node messages did not go over TCP: within a namespace TCP between its own
    addresses runs over `lo`, which moved less than half the intra-node payload (Open MPI's
    shared-memory transport, vader, carried it).
"""

import json
import sys

import h5py
import numpy as np


def fail(message):
    print(f"check_cross_node: FAIL: {message}")
    sys.exit(1)


def texts(values):
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def main(merged, traffic_file):
    with open(traffic_file) as f:
        traffic = json.load(f)
    with h5py.File(merged, "r") as f:
        root = f.attrs
        want_hosts = ["node1", "node1", "node2", "node2"]
        if texts(root["hosts"]) != want_hosts:
            fail(f"root hosts {texts(root['hosts'])}, expected {want_hosts}")
        if "node_local_ranks" not in root:
            fail("no root attribute node_local_ranks")
        if [int(v) for v in root["node_local_ranks"]] != [0, 1, 0, 1]:
            fail(f"node_local_ranks {list(root['node_local_ranks'])}, expected [0, 1, 0, 1]")
        by_k = {}
        for gid, g in f["configs"].items():
            a = g.attrs
            if a["status"] != "ok":
                fail(f"{a['name']}: status {a['status']} ({a['reason']})")
            by_k[int(a["devices"])] = g
        if sorted(by_k) != [1, 4]:
            fail(f"configurations with K = {sorted(by_k)}, expected 1 and 4")
        one, four = by_k[1], by_k[4]
        if texts(four.attrs["hosts"]) != want_hosts:
            fail(f"K = 4 hosts {texts(four.attrs['hosts'])}, expected {want_hosts}")
        x, y = four["steps/loss"][:], one["steps/loss"][:]
        if x.shape != y.shape or not np.all(np.isfinite(x)):
            fail(f"losses K=4 {x} vs K=1 {y}")
        err = np.abs(x - y)
        if np.any(err > 1e-5 * np.abs(y) + 1e-7):
            fail(f"K = 4 losses {x.tolist()} differ from the 1-rank losses {y.tolist()}")
        print(f"losses equal: K=4 {x.tolist()} vs K=1 {y.tolist()} (max |diff| {err.max():.3g})")

        sent = four["ranks/bytes_sent"][:]  # (step, rank)
        steps = sent.shape[0]
        to_node2 = int((sent[:, 1] - sent[:, 0]).sum())
        to_node1 = int((sent[:, 2] - sent[:, 3]).sum())
        intra = int((sent[:, 0] + sent[:, 0] + sent[:, 3] + sent[:, 3]).sum())
    if min(to_node1, to_node2) <= 0:
        fail(f"no inter-node payload ({to_node2} B to node2, {to_node1} B to node1)")
    print(f"payload over {steps} steps: node1->node2 {to_node2} B, node2->node1 {to_node1} B, "
          f"intra-node {intra} B; interfaces: {traffic}")
    if traffic["node1"]["veth"] < to_node2:
        fail(f"node1's veth sent {traffic['node1']['veth']} B < {to_node2} B of messages to node2")
    if traffic["node2"]["veth"] < to_node1:
        fail(f"node2's veth sent {traffic['node2']['veth']} B < {to_node1} B of messages to node1")
    lo = traffic["node1"]["lo"] + traffic["node2"]["lo"]
    if lo >= intra / 2:
        fail(f"lo moved {lo} B, >= half the {intra} B of intra-node messages: TCP within a node?")
    print("transport: inter-node over TCP on the veth link, intra-node not over TCP (vader)")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: check_cross_node.py MERGED.h5 TRAFFIC.json")
    main(sys.argv[1], sys.argv[2])

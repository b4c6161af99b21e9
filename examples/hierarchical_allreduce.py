"""Hierarchical all-reduce on nodes of GPUs (default 2 nodes x 4 GPUs), in place.

1. inside each node, a ring reduce-scatter leaves GPU g with the node's sum of its group of
   chunks (``num_nodes`` chunks, moved as one reference);
2. across nodes, GPU g of every node runs a ring all-reduce on each chunk of its group;
3. inside each node, a ring all-gather spreads the groups.
"""
# ruff: noqa: F403, F405

import argparse

from msccl.language import *
from msccl.topologies import *


def hierarchical_allreduce(num_nodes, gpus_per_node, instances, protocol):
    size = num_nodes * gpus_per_node
    collective = AllReduce(size, size, True)

    def rank(node, gpu):
        return node * gpus_per_node + gpu

    with MSCCLProgram(
        "hierarchical_allreduce",
        fully_connected(size),
        collective,
        instances,
        protocol=protocol,
    ):
        # 1. Intra-node reduce-scatter of the groups.
        for n in range(num_nodes):
            for g in range(gpus_per_node):
                index = g * num_nodes
                c = chunk(rank(n, (g + 1) % gpus_per_node), Buffer.input, index, size=num_nodes)
                for step in range(1, gpus_per_node):
                    peer = rank(n, (g + 1 + step) % gpus_per_node)
                    c = chunk(peer, Buffer.input, index, num_nodes).reduce(c)
        # 2. Inter-node all-reduce of every chunk, among the GPUs g of all nodes.
        for g in range(gpus_per_node):
            for k in range(num_nodes):
                index = g * num_nodes + k
                c = chunk(rank((k + 1) % num_nodes, g), Buffer.input, index)
                for step in range(1, num_nodes):
                    c = chunk(rank((k + 1 + step) % num_nodes, g), Buffer.input, index).reduce(c)
                for step in range(1, num_nodes):
                    c = c.copy(rank((k + step) % num_nodes, g), Buffer.input, index)
        # 3. Intra-node all-gather of the groups.
        for n in range(num_nodes):
            for g in range(gpus_per_node):
                c = chunk(rank(n, g), Buffer.input, g * num_nodes, size=num_nodes)
                for step in range(1, gpus_per_node):
                    c = c.copy(rank(n, (g + step) % gpus_per_node), Buffer.input, g * num_nodes)
        Check()


parser = argparse.ArgumentParser()
parser.add_argument("num_nodes", type=int, nargs="?", default=2, help="number of nodes")
parser.add_argument("gpus_per_node", type=int, nargs="?", default=4, help="gpus per node")
parser.add_argument("--instances", type=int, default=1)
parser.add_argument("--protocol", default="Simple", choices=["Simple", "LL", "LL128"])
args = parser.parse_args()

hierarchical_allreduce(args.num_nodes, args.gpus_per_node, args.instances, args.protocol)

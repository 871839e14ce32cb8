"""The graph file (docs/your-network.md) built node by node, with every node's costs counted
as the kernel library counts them (kernels/src/layers/*.cpp, `count_flops`), so that
`interplace` accepts the file: it asks each kernel layer again and refuses a node whose
shape, FLOPs or parameters differ. Ops without a kernel layer become "opaque" nodes with an
estimate (`opaque_costs`) and their original op in the attribute "source_op"."""

import json
import math

FORMAT_NAME = "interplace-graph"
FORMAT_VERSION = 1

# Per element (forward, backward): kernels/src/layers/activation.cpp, flops_per_element.
ACTIVATION_FLOPS = {"relu": (1, 1), "relu6": (2, 2), "gelu": (9, 18), "tanh": (1, 4),
                    "sigmoid": (4, 4)}

# What an opaque node of these ops costs per output element (forward; backward twice it):
# elementwise ops a few FLOPs, the rest 1. An estimate, named in docs/your-network.md.
OPAQUE_FLOPS_PER_ELEMENT = {"hardswish": 4, "hardsigmoid": 3, "silu": 5, "mul": 1, "div": 1,
                            "sub": 1, "softmax": 5, "mean": 1, "adaptive_avg_pool2d": 1,
                            "layer_norm": 8, "gelu": 9, "softmax_": 5}
# Opaque ops that hold matrix products (the FLOPs check cannot compare a graph with them).
PRODUCT_OPS = {"matmul", "bmm", "mm", "baddbmm", "addmm", "einsum", "linear", "conv2d",
               "conv1d", "conv3d", "multiheadattention"}


def numel(shape):
    return math.prod(shape)


class ImportError_(Exception):
    """A network the importer cannot describe at all (not: an op it maps to opaque)."""


def conv_output(size, kernel, stride, padding):
    return (size + 2 * padding - kernel) // stride + 1


def kernel_costs(op, attributes, input_shapes):
    """(output shape, forward, backward, parameter-gradient FLOPs, parameters) of a kernel
    layer, as kernels/ counts them; raises ValueError for inputs the layer refuses."""
    a = attributes
    x = input_shapes[0]
    if op == "conv2d":
        kh = a.get("kernel_h", a.get("kernel"))
        kw = a.get("kernel_w", a.get("kernel"))
        ph = a.get("padding_h", a.get("padding", 0))
        pw = a.get("padding_w", a.get("padding", 0))
        stride, groups = a.get("stride", 1), a.get("groups", 1)
        cin, cout = a["in_channels"], a["out_channels"]
        if len(x) != 4 or x[1] != cin:
            raise ValueError(f"conv2d of {cin} channels on input {x}")
        out = [x[0], cout, conv_output(x[2], kh, stride, ph), conv_output(x[3], kw, stride, pw)]
        if out[2] < 1 or out[3] < 1:
            raise ValueError(f"conv2d kernel larger than the padded input {x}")
        n = numel(out)
        product = 2 * n * (cin // groups) * kh * kw
        bias = n if a.get("bias", 0) else 0
        params = cout * (cin // groups) * kh * kw + (cout if a.get("bias", 0) else 0)
        return out, product + bias, 2 * product + bias, product + bias, params
    if op == "batch_norm":
        if len(x) != 4 or x[1] != a["channels"]:
            raise ValueError(f"batch_norm of {a['channels']} channels on input {x}")
        n = numel(x)
        return list(x), 6 * n, 9 * n, 0, 2 * a["channels"]
    if op in ACTIVATION_FLOPS:
        f, b = ACTIVATION_FLOPS[op]
        return list(x), f * numel(x), b * numel(x), 0, 0
    if op == "add":
        if len(input_shapes) < 2 or any(s != x for s in input_shapes):
            raise ValueError(f"add of shapes {input_shapes}")
        return list(x), (len(input_shapes) - 1) * numel(x), 0, 0, 0
    if op == "multiply":
        if len(input_shapes) != 2 or input_shapes[1] != x:
            raise ValueError(f"multiply of shapes {input_shapes}")
        return list(x), numel(x), 2 * numel(x), 0, 0
    if op == "concat":
        rest = [list(s[:1]) + list(s[2:]) for s in input_shapes]
        if len(x) < 2 or any(r != rest[0] or len(s) != len(x) for r, s in zip(rest, input_shapes)):
            raise ValueError(f"concat along axis 1 of shapes {input_shapes}")
        return [x[0], sum(s[1] for s in input_shapes), *x[2:]], 0, 0, 0, 0
    if op == "flatten":
        if len(x) < 2:
            raise ValueError(f"flatten of {x}")
        return [x[0], numel(x) // x[0]], 0, 0, 0, 0
    if op in ("max_pool", "avg_pool"):
        k, s, p = a["kernel"], a["stride"], a.get("padding", 0)
        if len(x) != 4 or 2 * p > k or x[2] + 2 * p < k or x[3] + 2 * p < k:
            raise ValueError(f"{op} {k}/{s}/{p} on {x}")
        out = [x[0], x[1], conv_output(x[2], k, s, p), conv_output(x[3], k, s, p)]
        window = numel(out) * k * k
        return out, window, numel(out) if op == "max_pool" else window, 0, 0
    if op == "pad2d":
        t, b, l, r = (a.get(k, 0) for k in ("top", "bottom", "left", "right"))
        if len(x) != 4 or x[2] + t + b < 1 or x[3] + l + r < 1:
            raise ValueError(f"pad2d of {x}")
        return [x[0], x[1], x[2] + t + b, x[3] + l + r], 0, 0, 0, 0
    if op == "global_avg_pool":
        if len(x) != 4:
            raise ValueError(f"global_avg_pool of {x}")
        return [x[0], x[1]], numel(x), numel(x), 0, 0
    if op == "linear":
        fin, fout = a["in_features"], a["out_features"]
        if x[-1] != fin:
            raise ValueError(f"linear of {fin} features on {x}")
        out = [*x[:-1], fout]
        rows = numel(out) // fout
        product = 2 * rows * fin * fout
        has_bias = a.get("bias", 1)
        bias = rows * fout if has_bias else 0
        return out, product + bias, 2 * product + bias, product + bias, \
            fin * fout + (fout if has_bias else 0)
    if op == "select_token":
        if len(x) != 3 or not 0 <= a.get("index", 0) < x[1]:
            raise ValueError(f"select_token {a.get('index', 0)} of {x}")
        return [x[0], x[2]], 0, 0, 0, 0
    if op == "dropout":
        n = numel(x) if a.get("p", 0.0) > 0 else 0
        return list(x), n, n, 0, 0
    if op == "self_attention":
        dim, heads = a["dim"], a["heads"]
        if len(x) != 3 or x[2] != dim or dim % heads:
            raise ValueError(f"self_attention of dim {dim} on {x}")
        batch, time = x[0], x[1]
        rows = batch * time
        projections = 2 * rows * dim * 3 * dim + 2 * rows * dim * dim
        biases = rows * 4 * dim
        scores_and_mix = 2 * (2 * batch * time * time * dim)
        scores = batch * heads * time * time
        return list(x), projections + biases + scores_and_mix + 5 * scores, \
            2 * projections + biases + 2 * scores_and_mix + 4 * scores, projections + biases, \
            4 * dim * dim + 4 * dim
    if op == "layer_norm":
        if x[-1] != a["features"]:
            raise ValueError(f"layer_norm of {a['features']} on {x}")
        return list(x), 8 * numel(x), 13 * numel(x), 0, 2 * a["features"]
    raise ValueError(f"no kernel layer '{op}'")


def opaque_costs(source_op, output_shape, input_shapes, parameters, flops=None):
    """The estimate for a node without a kernel layer: per output element the op's FLOPs
    (OPAQUE_FLOPS_PER_ELEMENT, 1 for others), backward twice the forward, and 2 FLOPs per
    parameter and sample each way for ops with parameters (a linear map's count). `flops`,
    when given, is the forward (the importer's count for ops with products: matmul,
    attention, convolutions); parameter gradients then a third of the backward for ops with
    parameters."""
    if flops is not None:
        forward = int(flops)
        param_grad = forward if parameters else 0
        return forward, 2 * forward, param_grad
    per = OPAQUE_FLOPS_PER_ELEMENT.get(source_op.split(".")[-1].lower(), 1)
    elements = max([numel(output_shape)] + [numel(s) for s in input_shapes])
    forward = per * elements + 2 * parameters * output_shape[0]
    param_grad = 2 * parameters * output_shape[0]
    return forward, 2 * forward, param_grad


def product_flops(node):
    """The forward FLOPs of a kernel node's matrix products and convolutions (what
    torch.utils.flop_counter counts): linear and conv2d without bias, self_attention's
    projections, scores and mix."""
    op, a, shape = node["op"], node["attributes"], node["output_shape"]
    if op == "linear":
        return 2 * (numel(shape) // a["out_features"]) * a["in_features"] * a["out_features"]
    if op == "conv2d":
        kh, kw = a.get("kernel_h", a.get("kernel")), a.get("kernel_w", a.get("kernel"))
        return 2 * numel(shape) * (a["in_channels"] // a.get("groups", 1)) * kh * kw
    if op == "self_attention":
        b, t, d = shape
        return 8 * b * t * d * d + 4 * b * t * t * d
    return 0


class GraphBuilder:
    def __init__(self, name, batch_size, family="imported", source=""):
        self.name, self.batch_size, self.family, self.source = name, batch_size, family, source
        self.nodes = []
        self.names = set()
        self.opaque_ops = {}  # source op -> node names
        self.fused_modules = {}  # class of a fused module group -> node names
        self.modules = {}  # node id -> (module path, module call stack) (from_torch)
        self.opaque_products = False  # an opaque node holds matrix products
        self.product_flops_total = None
        self.unused_parameters = ""
        self.torch_parameters = None
        self.flops_check = None

    def unique(self, name):
        name = name or "node"
        candidate, k = name, 1
        while candidate in self.names:
            candidate = f"{name}:{k}"
            k += 1
        self.names.add(candidate)
        return candidate

    def _add(self, name, op, inputs, shape, forward, backward, param_grad, params, attributes):
        shape = [int(e) for e in shape]
        if not shape or shape[0] != self.batch_size:
            raise ImportError_(f"node '{name}': output shape {shape} does not begin with the "
                               f"batch size {self.batch_size}")
        node = {"id": len(self.nodes), "name": self.unique(name), "op": op,
                "inputs": list(inputs), "output_shape": shape,
                "forward_flops": int(forward), "backward_flops": int(backward),
                "parameter_grad_flops": int(param_grad), "parameter_count": int(params),
                "output_bytes": 4 * numel(shape), "attributes": attributes}
        self.nodes.append(node)
        return node["id"]

    def shape(self, node_id):
        return self.nodes[node_id]["output_shape"]

    def input(self, name, shape, dtype="float32"):
        """A data input; token ids (an int64 input) carry the attribute dtype "int64", which
        the torch runtime feeds them as."""
        attributes = {} if dtype == "float32" else {"dtype": dtype}
        return self._add(name, "input", [], shape, 0, 0, 0, 0, attributes)

    def layer(self, name, op, attributes, inputs):
        shapes = [self.shape(i) for i in inputs]
        out, forward, backward, param_grad, params = kernel_costs(op, attributes, shapes)
        return self._add(name, op, inputs, out, forward, backward, param_grad, params,
                         dict(attributes))

    def opaque(self, name, source_op, inputs, output_shape, parameters=0, attributes=None,
               flops=None):
        shapes = [self.shape(i) for i in inputs]
        forward, backward, param_grad = opaque_costs(source_op, output_shape, shapes, parameters,
                                                     flops)
        if parameters or source_op in PRODUCT_OPS:
            self.opaque_products = True
        attributes = dict(attributes or {})
        attributes["source_op"] = source_op
        node_id = self._add(name, "opaque", inputs, output_shape, forward, backward, param_grad,
                            parameters, attributes)
        self.opaque_ops.setdefault(source_op, []).append(self.nodes[node_id]["name"])
        return node_id

    def fused(self, path, kind, inputs, output_shape, members):
        """One node for the ops `members` (node dicts) of the module call at `path` (of class
        `kind`): op "opaque", source_op `kind`, costs and parameters the members' sums."""
        total = {k: sum(m[k] for m in members) for k in
                 ("forward_flops", "backward_flops", "parameter_grad_flops", "parameter_count")}
        attributes = {"source_op": kind, "fused_nodes": len(members)}
        node_id = self._add(path, "opaque", inputs, output_shape, total["forward_flops"],
                            total["backward_flops"], total["parameter_grad_flops"],
                            total["parameter_count"], attributes)
        self.nodes[node_id]["module"] = path
        self.fused_modules.setdefault(kind, []).append(self.nodes[node_id]["name"])
        return node_id

    def prune(self, output_id):
        """Drops the nodes the output does not depend on (but keeps every input), renumbering."""
        keep, todo = set(), [output_id]
        while todo:
            v = todo.pop()
            if v not in keep:
                keep.add(v)
                todo.extend(self.nodes[v]["inputs"])
        keep |= {n["id"] for n in self.nodes if n["op"] == "input"}
        if len(keep) == len(self.nodes):
            return
        new_id, nodes, modules = {}, [], {}
        for n in self.nodes:
            if n["id"] not in keep:
                self.names.discard(n["name"])
                for names in self.opaque_ops.values():
                    if n["name"] in names:
                        names.remove(n["name"])
                continue
            new_id[n["id"]] = len(nodes)
            if n["id"] in self.modules:
                modules[len(nodes)] = self.modules[n["id"]]
            n["id"] = len(nodes)
            n["inputs"] = [new_id[i] for i in n["inputs"]]
            nodes.append(n)
        self.nodes, self.modules = nodes, modules
        self.opaque_ops = {k: v for k, v in self.opaque_ops.items() if v}

    def parameter_count(self):
        return sum(n["parameter_count"] for n in self.nodes)

    def product_flops(self):
        """Forward FLOPs of the kernel nodes' matrix products (product_flops)."""
        if self.product_flops_total is not None:
            return self.product_flops_total
        return sum(product_flops(n) for n in self.nodes)

    def to_json(self):
        edges = []
        for n in self.nodes:
            n["successors"] = []
        for n in self.nodes:
            for i in dict.fromkeys(n["inputs"]):
                edges.append((i, n["id"]))
        for producer, consumer in sorted(edges, key=lambda e: e[0]):
            self.nodes[producer]["successors"].append(consumer)
        doc = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "name": self.name,
               "family": self.family, "batch_size": self.batch_size,
               "node_count": len(self.nodes), "edge_count": len(edges)}
        if self.source:
            doc["source"] = self.source
        doc["nodes"] = self.nodes
        doc["edges"] = [[p, c] for p, c in sorted(edges, key=lambda e: e[0])]
        return doc

    def write(self, path):
        with open(path, "w", encoding="utf-8") as out:
            json.dump(self.to_json(), out, indent=None)
            out.write("\n")

    def warning(self):
        """One line naming the ops that became opaque nodes, or None."""
        if self.fused_modules:
            groups = ", ".join(
                f"{kind} x{len(names)} ({names[0]}{', ...' if len(names) > 1 else ''})"
                for kind, names in sorted(self.fused_modules.items()))
            count = sum(len(v) for v in self.fused_modules.values())
            rest = f"; {sum(len(v) for v in self.opaque_ops.values())} more opaque node(s): " + \
                ", ".join(f"{op} x{len(names)}" for op, names in sorted(self.opaque_ops.items())) \
                if self.opaque_ops else ""
            return (f"{count} module group(s) became fused (opaque) nodes with their ops' summed "
                    f"costs: {groups}{rest}; simulate and place take them, train refuses them "
                    f"(train at --granularity ops)")
        if not self.opaque_ops:
            return None
        ops = ", ".join(f"{op} x{len(names)} ({names[0]}{', ...' if len(names) > 1 else ''})"
                        for op, names in sorted(self.opaque_ops.items()))
        count = sum(len(v) for v in self.opaque_ops.values())
        return (f"{count} node(s) have no kernel layer and became opaque nodes with estimated "
                f"costs: {ops}; simulate and simulate-only sweeps take them, train refuses them")

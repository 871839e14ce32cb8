"""An ONNX model as a graph file: the onnx package reads it and infers every value's shape
(onnx.shape_inference); nodes are taken in the file's order (ONNX keeps them topological).
Each op the kernel library has becomes that kernel layer (_map_node), every other float-valued
op an opaque node whose parameters are its float initializers; integer-valued ops (shape
arithmetic: Shape, Gather, Unsqueeze, ...) and Constant are not nodes of the network.

Export from PyTorch with the model in training mode and
torch.onnx.export(..., training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False):
in eval mode the exporter folds batch normalisation into the convolutions, and the graph is
no longer the one that trains."""

import math

import onnx
from onnx import numpy_helper, shape_inference

from .graph import GraphBuilder

FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
               onnx.TensorProto.BFLOAT16}


def _attributes(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _shape(value_info):
    t = value_info.type.tensor_type
    if not t.HasField("shape") or any(not d.HasField("dim_value") for d in t.shape.dim):
        return None, t.elem_type
    return [d.dim_value for d in t.shape.dim], t.elem_type


def _node_name(node, index):
    """"/layer1/layer1.0/conv1/Conv" -> "layer1.0/conv1/Conv"'s last two parts."""
    parts = [p for p in node.name.split("/") if p]
    if not parts:
        return f"{node.op_type}_{index}"
    return "/".join(parts[-2:])


def _symmetric(pads):
    """The one padding of [top, left, bottom, right] pads that are all equal, else None."""
    pads = list(pads) if pads else [0, 0, 0, 0]
    return pads[0] if len(set(pads)) == 1 else None


def import_onnx(path_or_model, name=None, family="onnx", source=""):
    model = onnx.load(path_or_model) if isinstance(path_or_model, str) else path_or_model
    model = shape_inference.infer_shapes(model)
    graph = model.graph
    name = name or graph.name or "onnx"
    initializers = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    constants = {}
    shapes = {}
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        shapes[vi.name] = _shape(vi)
    inputs = [vi for vi in graph.input if vi.name not in initializers]
    if len(inputs) != 1:
        raise ValueError(f"{name}: {len(inputs)} graph inputs; one is needed (the data)")
    in_shape, _ = shapes[inputs[0].name]
    if in_shape is None:
        raise ValueError(f"{name}: the input's shape is not fixed; export with fixed sizes")
    builder = GraphBuilder(name, in_shape[0], family=family, source=source)
    ids = {inputs[0].name: builder.input(inputs[0].name, in_shape)}
    consumers = {}
    for node in graph.node:
        for i in node.input:
            consumers.setdefault(i, []).append(node)
    squeezed = set()  # values of shape [N, C, 1, 1] whose graph node is [N, C]
    counted = set()   # initializers counted as parameters

    def flattened_by_all(value):
        users = consumers.get(value, [])
        return bool(users) and all(
            (u.op_type == "Flatten" and _attributes(u).get("axis", 1) == 1)
            or (u.op_type == "Reshape" and (shapes.get(u.output[0], (None,))[0] or [0, 0, 0])
                .__len__() == 2)
            or (u.op_type == "Dropout" and flattened_by_all(u.output[0]))
            for u in users)

    def constant(value):
        if value in initializers:
            return initializers[value]
        return constants.get(value)

    for index, node in enumerate(graph.node):
        attributes = _attributes(node)
        if node.op_type == "Constant":
            tensor = attributes.get("value")
            if tensor is not None:
                constants[node.output[0]] = numpy_helper.to_array(tensor)
            continue
        out = node.output[0]
        out_shape, elem_type = shapes.get(out, (None, None))
        data = [i for i in node.input if i in ids]
        if out_shape is None or elem_type not in FLOAT_TYPES or not data:
            continue  # shape arithmetic or constants: not the network's tensors
        weights = [i for i in node.input if i and i in initializers]
        label = _node_name(node, index)
        input_ids = [ids[i] for i in data]
        in_shapes = [builder.shape(i) for i in input_ids]
        mapping = _map_node(node, attributes, in_shapes, out_shape, initializers, constant,
                            flattened_by_all)
        if node.op_type in ("Identity",) and len(input_ids) == 1:
            ids[out] = input_ids[0]
            continue
        if mapping is not None:
            op, attrs = mapping
            try:
                node_id = builder.layer(label, op, attrs, input_ids)
            except ValueError:
                node_id = None
            squeezed_input = any(i in squeezed for i in data)
            expected = out_shape[:2] if op == "global_avg_pool" or (
                squeezed_input and len(out_shape) == 4 and out_shape[2:] == [1, 1]) else out_shape
            if node_id is not None and builder.shape(node_id) == expected:
                if expected != out_shape:
                    squeezed.add(out)
                counted.update(weights)
                ids[out] = node_id
                continue
            if node_id is not None:
                builder.names.discard(builder.nodes.pop()["name"])
        parameters = 0
        for w in weights:
            if w not in counted and initializers[w].dtype.kind == "f":
                counted.add(w)
                parameters += int(initializers[w].size)
        ids[out] = builder.opaque(label, node.op_type, input_ids, out_shape, parameters)
    outputs = [o.name for o in graph.output if o.name in ids]
    if len(outputs) != 1:
        raise ValueError(f"{name}: {len(outputs)} float outputs; one is needed (the logits)")
    return builder


def _map_node(node, a, in_shapes, out_shape, initializers, constant, flattened_by_all):
    """(op, attributes) of the kernel layer an ONNX node is, or None."""
    op = node.op_type
    if op == "Conv":
        w = initializers.get(node.input[1]) if len(node.input) > 1 else None
        strides = a.get("strides", [1, 1])
        pads = a.get("pads", [0, 0, 0, 0])
        if w is None or w.ndim != 4 or any(d != 1 for d in a.get("dilations", [1, 1])) \
                or len(set(strides)) != 1 or a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET") \
                or pads[0] != pads[2] or pads[1] != pads[3]:
            return None
        groups = a.get("group", 1)
        attrs = {"in_channels": int(w.shape[1]) * groups, "out_channels": int(w.shape[0]),
                 "stride": int(strides[0])}
        kh, kw = int(w.shape[2]), int(w.shape[3])
        if kh == kw:
            attrs["kernel"] = kh
        else:
            attrs["kernel_h"], attrs["kernel_w"] = kh, kw
        if pads[0] == pads[1]:
            attrs["padding"] = int(pads[0])
        else:
            attrs["padding_h"], attrs["padding_w"] = int(pads[0]), int(pads[1])
        if groups != 1:
            attrs["groups"] = int(groups)
        if len(node.input) > 2 and node.input[2]:
            attrs["bias"] = 1
        return "conv2d", attrs
    if op == "BatchNormalization":
        scale = initializers.get(node.input[1])
        if scale is None:
            return None
        # ONNX's momentum weighs the running value, PyTorch's (the kernels') the new one.
        return "batch_norm", {"channels": int(scale.shape[0]),
                              "epsilon": float(a.get("epsilon", 1e-5)),
                              "momentum": round(1.0 - float(a.get("momentum", 0.9)), 7)}
    if op in ("Relu", "Sigmoid", "Tanh"):
        return op.lower(), {}
    if op == "Clip":
        low = constant(node.input[1]) if len(node.input) > 1 and node.input[1] else a.get("min")
        high = constant(node.input[2]) if len(node.input) > 2 and node.input[2] else a.get("max")
        if low is not None and high is not None and float(low) == 0.0 and float(high) == 6.0:
            return "relu6", {}
        return None
    if op in ("MaxPool", "AveragePool"):
        kernel = a.get("kernel_shape", [])
        strides = a.get("strides", [1, 1])
        pad = _symmetric(a.get("pads"))
        if len(set(kernel)) != 1 or len(set(strides)) != 1 or pad is None \
                or a.get("ceil_mode", 0) or any(d != 1 for d in a.get("dilations", [1, 1])) \
                or len(node.output) > 1 and node.output[1]:
            return None
        attrs = {"kernel": int(kernel[0]), "stride": int(strides[0]), "padding": int(pad)}
        if op == "AveragePool":
            attrs["count_include_pad"] = int(a.get("count_include_pad", 0))
            return "avg_pool", attrs
        return "max_pool", attrs
    if op == "GlobalAveragePool" and flattened_by_all(node.output[0]):
        return "global_avg_pool", {}
    if op == "Flatten" and a.get("axis", 1) == 1:
        return "flatten", {}
    if op == "Reshape" and len(out_shape) == 2 and out_shape[0] == in_shapes[0][0]:
        return "flatten", {}
    if op == "Gemm":
        w = initializers.get(node.input[1])
        if w is None or w.ndim != 2 or a.get("transA", 0) or not a.get("transB", 0) \
                or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0:
            return None
        bias = len(node.input) > 2 and node.input[2] in initializers
        return "linear", {"in_features": int(w.shape[1]), "out_features": int(w.shape[0]),
                          "bias": 1 if bias else 0}
    if op == "MatMul":
        w = initializers.get(node.input[1])
        if w is None or w.ndim != 2:
            return None
        return "linear", {"in_features": int(w.shape[0]), "out_features": int(w.shape[1]),
                          "bias": 0}
    if op in ("Add", "Mul") and len(in_shapes) == 2 and in_shapes[0] == in_shapes[1] \
            and list(in_shapes[0]) == list(out_shape):
        return ("add" if op == "Add" else "multiply"), {}
    if op == "Concat" and a.get("axis") == 1:
        return "concat", {}
    if op == "Pad" and len(in_shapes[0]) == 4:
        mode = a.get("mode", b"constant")
        pads = constant(node.input[1]) if len(node.input) > 1 and node.input[1] else a.get("pads")
        value = constant(node.input[2]) if len(node.input) > 2 and node.input[2] else 0.0
        if pads is None or mode not in (b"constant", "constant") or float(value) != 0.0:
            return None
        pads = [int(p) for p in list(pads)]
        if len(pads) != 8 or any(pads[i] for i in (0, 1, 4, 5)) or min(pads) < 0:
            return None
        return "pad2d", {"top": pads[2], "bottom": pads[6], "left": pads[3], "right": pads[7]}
    if op == "Dropout":
        ratio = a.get("ratio")
        if ratio is None and len(node.input) > 1 and node.input[1]:
            ratio = constant(node.input[1])
        ratio = 0.5 if ratio is None else float(ratio)
        if not math.isfinite(ratio) or not 0 <= ratio < 1:
            return None
        return "dropout", {"p": round(ratio, 7)}
    return None

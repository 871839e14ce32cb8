"""A PyTorch module as a graph file, through torch.fx: symbolic_trace gives the graph of
calls, ShapeProp (one forward pass in eval mode on zeros, no gradients) the shapes. Each
call whose op the kernel library has becomes that kernel layer (MODULE_MAPPERS,
FUNCTION_MAPPERS); every other one becomes an opaque node (graph.GraphBuilder.opaque).
Parameters are counted once each: a module's own at its call, a parameter read through
get_attr at its first consumer, so the total equals sum(p.numel() for p in
module.parameters()) for every module whose parameters are used in its forward."""

import operator

import torch
import torch.nn.functional as F
from torch import nn
from torch.fx import symbolic_trace
from torch.fx.passes.shape_prop import ShapeProp, TensorMetadata

from .graph import GraphBuilder


def _pair(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


def _square(value):
    """The one extent of a square pair, or None."""
    a, b = _pair(value)
    return a if a == b else None


def _conv(m):
    if not isinstance(m.padding, (tuple, list)) or _pair(m.dilation) != (1, 1) \
            or m.padding_mode != "zeros" or _square(m.stride) is None:
        return None
    (kh, kw), (ph, pw) = _pair(m.kernel_size), _pair(m.padding)
    a = {"in_channels": m.in_channels, "out_channels": m.out_channels,
         "stride": _square(m.stride)}
    if kh == kw:
        a["kernel"] = kh
    else:
        a["kernel_h"], a["kernel_w"] = kh, kw
    if ph == pw:
        a["padding"] = ph
    else:
        a["padding_h"], a["padding_w"] = ph, pw
    if m.groups != 1:
        a["groups"] = m.groups
    if m.bias is not None:
        a["bias"] = 1
    return "conv2d", a


def _pool(kind, kernel, stride, padding, dilation=1, ceil_mode=False, count_include_pad=True,
          divisor_override=None):
    k, s, p = _square(kernel), _square(stride if stride not in (None, []) else kernel), \
        _square(padding)
    if None in (k, s, p) or _square(dilation) != 1 or ceil_mode or divisor_override:
        return None
    a = {"kernel": k, "stride": s, "padding": p}
    if kind == "avg_pool":
        a["count_include_pad"] = 1 if count_include_pad else 0
    return kind, a


def _batch_norm(m):
    if not m.affine or m.momentum is None:
        return None
    return "batch_norm", {"channels": m.num_features, "epsilon": float(m.eps),
                          "momentum": float(m.momentum)}


def _layer_norm(m):
    if len(m.normalized_shape) != 1 or not m.elementwise_affine:
        return None
    return "layer_norm", {"features": m.normalized_shape[0], "epsilon": float(m.eps)}


def _gelu(approximate):
    return ("gelu", {}) if approximate == "tanh" else None  # the kernels' GELU is tanh's


# Module type -> (module -> (op, attributes) or None for opaque).
MODULE_MAPPERS = {
    nn.Conv2d: _conv,
    nn.BatchNorm2d: _batch_norm,
    nn.ReLU: lambda m: ("relu", {}),
    nn.ReLU6: lambda m: ("relu6", {}),
    nn.GELU: lambda m: _gelu(getattr(m, "approximate", "none")),
    nn.Tanh: lambda m: ("tanh", {}),
    nn.Sigmoid: lambda m: ("sigmoid", {}),
    nn.MaxPool2d: lambda m: _pool("max_pool", m.kernel_size, m.stride, m.padding, m.dilation,
                                  m.ceil_mode),
    nn.AvgPool2d: lambda m: _pool("avg_pool", m.kernel_size, m.stride, m.padding, 1, m.ceil_mode,
                                  m.count_include_pad, m.divisor_override),
    nn.Linear: lambda m: ("linear", {"in_features": m.in_features, "out_features": m.out_features,
                                     "bias": 1 if m.bias is not None else 0}),
    nn.Dropout: lambda m: ("dropout", {"p": float(m.p)}),
    nn.Flatten: lambda m: ("flatten", {}) if (m.start_dim, m.end_dim) == (1, -1) else None,
    nn.LayerNorm: _layer_norm,
}


def _arg(node, index, name, default):
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _function_mapping(node, input_shapes, output_shape):
    """(op, attributes) of a call_function or call_method node the kernels have, else None."""
    target = node.target
    name = target if isinstance(target, str) else getattr(target, "__name__", str(target))
    same_shapes = len(input_shapes) >= 2 and all(s == input_shapes[0] for s in input_shapes) \
        and list(input_shapes[0]) == list(output_shape)
    tensor_args = sum(isinstance(a, torch.fx.Node) for a in node.args)
    if name in ("add", "iadd", "__add__") and same_shapes and tensor_args == len(node.args) == 2 \
            and "alpha" not in node.kwargs:
        return "add", {}
    if name in ("mul", "imul", "__mul__") and same_shapes and tensor_args == len(node.args) == 2:
        return "multiply", {}
    if name in ("relu", "relu_"):
        return "relu", {}
    if name == "relu6" or (name == "hardtanh" and _arg(node, 1, "min_val", -1.0) == 0.0
                           and _arg(node, 2, "max_val", 1.0) == 6.0):
        return "relu6", {}
    if name in ("tanh", "sigmoid"):
        return name, {}
    if name == "gelu":
        return _gelu(node.kwargs.get("approximate", "none"))
    if name == "flatten" and _arg(node, 1, "start_dim", 0) == 1 \
            and _arg(node, 2, "end_dim", -1) == -1:
        return "flatten", {}
    if name in ("view", "reshape") and len(output_shape) == 2 and len(input_shapes) == 1 \
            and output_shape[0] == input_shapes[0][0]:
        return "flatten", {}
    if name == "cat" and _arg(node, 1, "dim", 0) == 1 and len(input_shapes) >= 1:
        return "concat", {}
    if name == "max_pool2d":
        return _pool("max_pool", _arg(node, 1, "kernel_size", None), _arg(node, 2, "stride", None),
                     _arg(node, 3, "padding", 0), _arg(node, 4, "dilation", 1),
                     _arg(node, 5, "ceil_mode", False))
    if name == "avg_pool2d":
        return _pool("avg_pool", _arg(node, 1, "kernel_size", None), _arg(node, 2, "stride", None),
                     _arg(node, 3, "padding", 0), 1, _arg(node, 4, "ceil_mode", False),
                     _arg(node, 5, "count_include_pad", True),
                     _arg(node, 6, "divisor_override", None))
    if name == "dropout" and _arg(node, 2, "training", True):
        return "dropout", {"p": float(_arg(node, 1, "p", 0.5))}
    return None


def _is_global_pool(node, module=None):
    size = module.output_size if module is not None else _arg(node, 1, "output_size", None)
    return _pair(size) == (1, 1)


def _flattened_by_all_users(node):
    """True when every user of `node` flattens it to [N, C] (torch.flatten(x, 1), x.view(N, -1),
    nn.Flatten): the kernels' global average pool gives [N, C] itself."""
    if not node.users:
        return False
    for user in node.users:
        target = user.target
        name = target if isinstance(target, str) else getattr(target, "__name__", "")
        if user.op == "call_module":
            sub = user.graph.owning_module.get_submodule(target)
            name = "dropout" if isinstance(sub, nn.Dropout) else \
                "flatten" if isinstance(sub, nn.Flatten) else type(sub).__name__
        if name == "dropout" and _flattened_by_all_users(user):
            continue  # inception_v3: pool -> dropout -> flatten
        shape = user.meta.get("tensor_meta")
        if name in ("flatten", "view", "reshape") and isinstance(shape, TensorMetadata) \
                and len(shape.shape) == 2:
            continue
        return False
    return True


def import_module(module, input_shape, name, batch_size=1, family="torch", source=""):
    """The graph file (a GraphBuilder) of `module` for inputs of per-sample `input_shape`."""
    was_training = module.training
    module.eval()
    try:
        traced = symbolic_trace(module)
        traced.graph.eliminate_dead_code()
        traced.recompile()
        with torch.no_grad():
            ShapeProp(traced).propagate(torch.zeros(batch_size, *input_shape))
    finally:
        module.train(was_training)
    builder = GraphBuilder(name, batch_size, family=family, source=source)
    ids = {}         # fx node -> graph node id (tensor values only)
    params = {}      # get_attr fx node -> parameter (counted at its first consumer)
    counted = set()  # id() of parameters already counted
    squeezed = set()  # fx nodes of shape [N, C, 1, 1] whose graph node is [N, C]
    output_id = None

    def module_parameters(sub):
        total = 0
        for p in sub.parameters():
            if id(p) not in counted:
                counted.add(id(p))
                total += p.numel()
        return total

    for node in traced.graph.nodes:
        meta = node.meta.get("tensor_meta")
        if node.op == "placeholder":
            ids[node] = builder.input(node.name, list(meta.shape))
            continue
        if node.op == "get_attr":
            try:
                params[node] = traced.get_parameter(node.target)
            except AttributeError:
                pass  # a buffer or constant: no parameter
            continue
        if node.op == "output":
            results = [a for a in node.all_input_nodes if a in ids]
            if len(results) != 1:
                raise ValueError(f"{name}: the module returns {len(results)} tensors; the graph "
                                 f"needs one output (the logits)")
            output_id = ids[results[0]]
            continue
        inputs = []
        extra_parameters = 0
        for arg in node.all_input_nodes:
            if arg in ids:
                inputs.append(ids[arg])
            elif arg in params and id(params[arg]) not in counted:
                counted.add(id(params[arg]))
                extra_parameters += params[arg].numel()
        if isinstance(meta, (tuple, list)) and not isinstance(meta, TensorMetadata):
            # a tuple of tensors: its first stands for it
            meta = next((m for m in meta if isinstance(m, TensorMetadata)), None)
        if not isinstance(meta, TensorMetadata) or not inputs:
            continue  # sizes, constants: not tensors of the network
        shape = list(meta.shape)
        input_shapes = [builder.shape(i) for i in inputs]
        if node.op == "call_module":
            sub = traced.get_submodule(node.target)
            label = node.target
            if isinstance(sub, nn.Identity):
                ids[node] = inputs[0]
                continue
            if isinstance(sub, nn.AdaptiveAvgPool2d) and _is_global_pool(node, sub) \
                    and _flattened_by_all_users(node):
                mapping = ("global_avg_pool", {})
            else:
                mapper = MODULE_MAPPERS.get(type(sub))
                mapping = mapper(sub) if mapper else None
            parameters = module_parameters(sub) + extra_parameters
            source_op = type(sub).__name__.lower()
        else:
            label = node.name
            target = node.target
            source_op = target if isinstance(target, str) else getattr(target, "__name__",
                                                                       str(target))
            if source_op == "getitem" and len(inputs) == 1 \
                    and shape == builder.shape(inputs[0]):
                ids[node] = inputs[0]  # the first tensor of a tuple stood for the tuple
                continue
            if source_op == "adaptive_avg_pool2d" and _is_global_pool(node) \
                    and _flattened_by_all_users(node):
                mapping = ("global_avg_pool", {})
            else:
                mapping = _function_mapping(node, input_shapes, shape)
            parameters = extra_parameters
        if mapping is not None:
            op, attributes = mapping
            try:
                node_id = builder.layer(label, op, attributes, inputs)
            except ValueError:
                node_id = None
            # The kernels' global average pool gives [N, C] where PyTorch's gives [N, C, 1, 1]
            # (every user flattens it, _flattened_by_all_users).
            # Nodes after it that keep [N, C, 1, 1] in PyTorch (dropout) keep [N, C] here.
            squeezed_input = any(a in squeezed for a in node.all_input_nodes)
            expected = shape[:2] if op == "global_avg_pool" or (
                squeezed_input and len(shape) == 4 and shape[2:] == [1, 1]) else shape
            if expected != shape:
                squeezed.add(node)
            if node_id is not None and builder.shape(node_id) == expected \
                    and builder.nodes[node_id]["parameter_count"] == parameters:
                ids[node] = node_id
                continue
            if node_id is not None:  # the kernel disagrees: take the call back, keep it opaque
                builder.names.discard(builder.nodes.pop()["name"])
        ids[node] = builder.opaque(label, source_op, inputs, shape, parameters)
    if output_id is None:
        raise ValueError(f"{name}: no output")
    return builder

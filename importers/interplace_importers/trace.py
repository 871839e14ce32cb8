"""A concrete tracer: the module runs once on real inputs (zeros of the given shape) while
every torch function, tensor method and module call is recorded into a torch.fx Graph.

Unlike torch.fx.symbolic_trace, which stops at every torch.nn module and cannot run
data-dependent Python (`n, c, h, w = x.shape`, `if src.dim() != 3`, tuple unpacking on
Python 3.11), this runs the network's own code on tensors, so every shape is an int and
every branch is the one these inputs take. It descends into every module except the
leaves (LEAF_TYPES, as torchvision.models.feature_extraction does: the modules of torch.nn
with no children, plus nn.MultiheadAttention), records them as call_module nodes, and
records everything else as call_function nodes of the outermost torch function
(TorchFunctionMode: a torch function called inside another one is not seen).

Every node's meta holds "tensor_meta" (TensorMetadata, or a tuple of them), "module" (the
path (FQN) of the innermost module whose forward ran it; a leaf's own path) and
"module_stack" (the module calls around it, outermost first: (path, call number, type
name)). Tensors not computed from the inputs (parameters, buffers, tensors made inside
forward) are constants: parameters and buffers become get_attr nodes, so a consumer can
count them."""

import inspect
import itertools

import torch
from torch import nn
from torch.fx import Graph
from torch.fx.passes.shape_prop import _extract_tensor_metadata
from torch.overrides import TorchFunctionMode

# Modules with children that are still one op (the graph format's self_attention).
LEAF_WITH_CHILDREN = (nn.MultiheadAttention,)
CONTAINERS = (nn.Sequential, nn.ModuleList, nn.ModuleDict)

# Tensor methods whose result does not depend on the tensor's values (shape only).
SHAPE_ONLY = {"new_zeros", "new_ones", "new_full", "new_empty", "new_tensor", "zeros_like",
              "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like"}


def is_leaf(module):
    """torch.nn's own modules without children (Conv2d, Linear, LayerNorm, ReLU, ...), and
    nn.MultiheadAttention; containers and every other module are traced through."""
    if isinstance(module, LEAF_WITH_CHILDREN):
        return True
    if isinstance(module, CONTAINERS):
        return False
    kind = type(module).__module__
    return (kind.startswith("torch.nn.") or kind.startswith("torch.ao.nn.")) \
        and next(module.children(), None) is None


def op_name(func):
    """The fx-style name of a torch function: '__mul__' -> 'mul', 'add_' -> 'add'."""
    name = getattr(func, "__name__", None) or str(func)
    if name.startswith("__") and name.endswith("__"):
        name = name[2:-2]
        if name[:1] in ("i", "r") and name[1:] in ("add", "sub", "mul", "truediv", "matmul",
                                                   "floordiv", "and", "or", "pow"):
            name = name[1:]
    if name.endswith("_") and not name.startswith("_"):
        name = name[:-1]  # in place
    return name


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)


class ConcreteTracer:
    def __init__(self, root, leaf_types=()):
        self.root = root
        self.leaf_types = tuple(leaf_types)
        self.graph = Graph()
        self.values = {}  # id(tensor) -> fx node (the latest value of that tensor object)
        self.alive = []   # the tensors of `values`, kept alive so that ids are not reused
        self.path_of_module = {id(m): name for name, m in root.named_modules()}
        self.constants = {}  # id(parameter or buffer) -> (path, tensor)
        for name, p in root.named_parameters():
            self.constants.setdefault(id(p), (name, p))
        for name, b in root.named_buffers():
            self.constants.setdefault(id(b), (name, b))
        self.stack = []  # (path, call number, type name) of the module calls under way
        self.calls = itertools.count()
        self.recording = True
        self.network = set()  # fx nodes computed from the inputs

    # ---- values ------------------------------------------------------------------------
    def _node_of(self, tensor):
        node = self.values.get(id(tensor))
        if node is not None:
            return node
        known = self.constants.get(id(tensor))
        if known is not None:
            node = self.graph.get_attr(known[0])
            self._meta(node, tensor)
            self._set(tensor, node)
            return node
        return None

    def _arg(self, value):
        if isinstance(value, torch.Tensor):
            node = self._node_of(value)
            return node if node is not None else value
        if isinstance(value, torch.Size):
            return tuple(value)
        if isinstance(value, (tuple, list)):
            return type(value)(self._arg(v) for v in value)
        if isinstance(value, dict):
            return {k: self._arg(v) for k, v in value.items()}
        return value

    def _set(self, tensor, node):
        self.values[id(tensor)] = node
        self.alive.append(tensor)

    def _meta(self, node, value):
        if isinstance(value, torch.Tensor):
            node.meta["tensor_meta"] = _extract_tensor_metadata(value)
        elif isinstance(value, (tuple, list)):
            node.meta["tensor_meta"] = tuple(
                _extract_tensor_metadata(v) if isinstance(v, torch.Tensor) else None
                for v in value)
        node.meta["module"] = self.stack[-1][0] if self.stack else ""
        node.meta["module_stack"] = tuple(self.stack)

    def _record(self, op, target, args, kwargs, out, depends=True):
        fx_args, fx_kwargs = self._arg(tuple(args)), self._arg(dict(kwargs))
        node = self.graph.create_node(op, target, fx_args, fx_kwargs)
        if depends and any(a in self.network for a in node.all_input_nodes):
            self.network.add(node)
        self._meta(node, out)
        if isinstance(out, torch.Tensor):
            self._set(out, node)
        elif isinstance(out, (tuple, list)):
            for i, value in enumerate(out):
                if isinstance(value, torch.Tensor):
                    item = self.graph.call_function(_getitem, (node, i))
                    if node in self.network:
                        self.network.add(item)
                    self._meta(item, value)
                    self._set(value, item)
        return node

    # ---- interception ------------------------------------------------------------------
    def record_function(self, func, args, kwargs, out):
        name = op_name(func)
        if name == "setitem":  # x[i] = y: a new value of x
            out = args[0]
        elif not any(True for _ in _tensors(out)):
            return  # sizes, shapes, Python numbers: not tensors of the network
        self._record("call_function", func, args, kwargs, out, depends=name not in SHAPE_ONLY)

    def call_module(self, original, module, args, kwargs):
        path = self.path_of_module.get(id(module))
        if path is None or not self.recording:  # made inside forward, or inside a leaf
            return original(module, *args, **kwargs)
        self.stack.append((path, next(self.calls), type(module).__name__))
        try:
            if module is not self.root and (is_leaf(module)
                                            or isinstance(module, self.leaf_types)):
                self.recording = False
                try:
                    out = original(module, *args, **kwargs)
                finally:
                    self.recording = True
                self._record("call_module", path, args, kwargs, out)
                return out
            return original(module, *args, **kwargs)
        finally:
            self.stack.pop()

    def trace(self, inputs):
        """The fx Graph of root(*inputs); inputs are tensors."""
        names = list(inspect.signature(self.root.forward).parameters)
        for i, value in enumerate(inputs):
            node = self.graph.placeholder(names[i] if i < len(names) else f"input_{i}")
            self._meta(node, value)
            self.network.add(node)
            self._set(value, node)
        tracer = self
        original_call = nn.Module.__call__
        original_getitem = torch.Tensor.__getitem__

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                out = func(*args, **kwargs)
                if tracer.recording and func is not original_getitem:
                    tracer.record_function(func, args, kwargs, out)
                return out

        def call(module, *args, **kwargs):
            return tracer.call_module(original_call, module, args, kwargs)

        def getitem(tensor, index):
            # x[0] (an int index) does not reach __torch_function__; every index comes here
            with torch._C.DisableTorchFunction():
                out = original_getitem(tensor, index)
            if tracer.recording:
                tracer.record_function(original_getitem, (tensor, index), {}, out)
            return out

        nn.Module.__call__ = call
        torch.Tensor.__getitem__ = getitem
        try:
            with Mode():
                out = self.root(*inputs)
        finally:
            nn.Module.__call__ = original_call
            torch.Tensor.__getitem__ = original_getitem
        self.graph.output(self._arg(out))
        self._prune()
        return self.graph

    def _prune(self):
        """Drops nodes whose values nobody uses (dead ends of the trace)."""
        for node in reversed(list(self.graph.nodes)):
            if node.op not in ("placeholder", "output") and not node.users:
                self.graph.erase_node(node)
                self.network.discard(node)


def _getitem(value, index):
    """The element of a tuple a module or function returned (the fx node of `out[i]`)."""
    return value[index]


_getitem.__name__ = "getitem"

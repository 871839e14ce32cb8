"""python3 -m interplace_importers: write a graph file from a torchvision model, a PyTorch
module of your own, or an ONNX file (docs/your-network.md).

  /usr/bin/python3 -m interplace_importers torchvision resnet18 --input-shape 3,224,224 \
      --out r18.json
  /usr/bin/python3 -m interplace_importers module mypkg.nets:make_net --input-shape 1,28,28 \
      --out n.json
  /usr/bin/python3 -m interplace_importers torchvision vit_b_16 --input-shape 3,224,224 \
      --granularity modules:3 --out vit.json     # one node per encoder block
  /usr/bin/python3 -m interplace_importers onnx model.onnx --out model.json

Run it on the Python that has torch (Debian's /usr/bin/python3 with python3-torch; a pyenv or
conda `python3` usually has none). Prints one summary line; ops without a kernel layer are
named in a warning on stderr. Exit 2 for bad arguments or a network that cannot be
imported (its parameters must be torch's own count)."""

import argparse
import importlib
import sys
import warnings

HINT = ("HINT: run the importers on the Python that has torch, e.g. "
        "`/usr/bin/python3 -m interplace_importers ...` (Debian's python3-torch, "
        "python3-torchvision and python3-onnx: scripts/install-deps); the tests use "
        "INTERPLACE_TEST_PYTHON (cmake -DINTERPLACE_TEST_PYTHON=..., default /usr/bin/python3)")


def require(*modules):
    """Exits 2 with a HINT when this interpreter lacks one of `modules`."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as error:
            print(f"interplace_importers: error: this Python ({sys.executable}) cannot import "
                  f"{name} ({error}); the importers need torch >= 1.13 (torchvision for "
                  f"torchvision models, onnx for ONNX files)\n{HINT}", file=sys.stderr)
            sys.exit(2)


def _shape(text):
    try:
        shape = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of sizes: {text!r}")
    if not shape or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be >= 1: {text!r}")
    return shape


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m interplace_importers",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=["torchvision", "module", "onnx"])
    parser.add_argument("what", help="torchvision model name, MODULE:CALLABLE, or ONNX file")
    parser.add_argument("--out", required=True, help="the graph file to write (overwritten)")
    parser.add_argument("--input-shape", type=_shape,
                        help="one sample's input shape, e.g. 3,224,224 (torch kinds)")
    parser.add_argument("--num-classes", type=int, help="torchvision: classes of the head")
    parser.add_argument("--name", help="the graph's name (default: the model's)")
    parser.add_argument("--family", help="the graph's family (default: torchvision, torch, onnx)")
    parser.add_argument("--granularity", default="ops",
                        help="torch kinds: 'ops' (every op a node, the default) or 'modules:D' "
                             "(the ops under each module at path depth D fused into one node: "
                             "modules:3 for vit_b_16's encoder.layers.<block>)")
    parser.add_argument("--input-dtype", choices=["float32", "int64"], default="float32",
                        help="torch kinds: the input's dtype (int64 for token ids)")
    args = parser.parse_args(argv)
    require(*(["onnx"] if args.kind == "onnx" else ["torch"] +
              (["torchvision"] if args.kind == "torchvision" else [])))
    warnings.filterwarnings("ignore")  # torch's and torchvision's deprecation chatter
    try:
        if args.kind == "onnx":
            from .from_onnx import import_onnx
            builder = import_onnx(args.what, name=args.name, family=args.family or "onnx",
                                  source=f"onnx {args.what}")
        else:
            if args.input_shape is None:
                parser.error("--input-shape is required for torch models")
            import torch
            from .from_torch import import_module, parse_granularity
            parse_granularity(args.granularity)
            if args.kind == "torchvision":
                import torchvision
                factory = getattr(torchvision.models, args.what, None)
                if factory is None or not callable(factory):
                    parser.error(f"torchvision has no model {args.what!r}")
                kwargs = {"weights": None}
                if args.num_classes:
                    kwargs["num_classes"] = args.num_classes
                if args.what in ("inception_v3", "googlenet"):
                    kwargs.update(aux_logits=False, init_weights=False)
                module = factory(**kwargs)
                family = args.family or "torchvision"
            else:
                module_name, _, attribute = args.what.partition(":")
                if not attribute:
                    parser.error("module takes MODULE:CALLABLE, e.g. mypkg.nets:make_net")
                module = getattr(importlib.import_module(module_name), attribute)()
                family = args.family or "torch"
            builder = import_module(module, args.input_shape, args.name or args.what.split(":")[-1],
                                    family=family, source=f"{args.kind} {args.what}",
                                    granularity=args.granularity,
                                    input_dtype=getattr(torch, args.input_dtype))
    except (ValueError, OSError) as error:
        print(f"interplace_importers: error: {error}", file=sys.stderr)
        return 2
    builder.write(args.out)
    checked = " (= torch's)" if builder.torch_parameters is not None else ""
    flops = f"; {builder.flops_check}" if builder.flops_check else ""
    print(f"{builder.name}: {len(builder.nodes)} nodes, {builder.parameter_count():,} parameters"
          f"{checked}{flops} -> {args.out}")
    warning = builder.warning()
    if warning:
        print(f"interplace_importers: warning: {warning}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""python3 -m interplace_importers: write a graph file from a torchvision model, a PyTorch
module of your own, or an ONNX file (docs/your-network.md).

  python3 -m interplace_importers torchvision resnet18 --input-shape 3,224,224 --out r18.json
  python3 -m interplace_importers module mypkg.nets:make_net --input-shape 1,28,28 --out n.json
  python3 -m interplace_importers onnx model.onnx --out model.json

Prints one summary line; ops without a kernel layer are named in a warning on stderr.
Exit 2 for bad arguments or a network that cannot be imported."""

import argparse
import importlib
import sys
import warnings


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
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")  # torch's and torchvision's deprecation chatter
    try:
        if args.kind == "onnx":
            from .from_onnx import import_onnx
            builder = import_onnx(args.what, name=args.name, family=args.family or "onnx",
                                  source=f"onnx {args.what}")
        else:
            if args.input_shape is None:
                parser.error("--input-shape is required for torch models")
            from .from_torch import import_module
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
                                    family=family, source=f"{args.kind} {args.what}")
    except (ValueError, OSError) as error:
        print(f"interplace_importers: error: {error}", file=sys.stderr)
        return 2
    builder.write(args.out)
    print(f"{builder.name}: {len(builder.nodes)} nodes, {builder.parameter_count():,} parameters "
          f"-> {args.out}")
    warning = builder.warning()
    if warning:
        print(f"interplace_importers: warning: {warning}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

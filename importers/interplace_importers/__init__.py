"""Importers of networks into interplace graph files (docs/your-network.md): from a PyTorch
module (from_torch, torch.fx) and from an ONNX file (from_onnx). Both run on the system
Python with Debian's python3-torch, python3-torchvision and python3-onnx
(importers/requirements-debian.txt; scripts/install-deps installs them)."""

from .graph import FORMAT_NAME, FORMAT_VERSION, GraphBuilder, kernel_costs  # noqa: F401

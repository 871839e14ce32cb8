"""Small PyTorch networks for the importer tests (importable as MODULE:CALLABLE by
`python3 -m interplace_importers module small_nets:fashion_cnn`)."""

from torch import nn


def fashion_cnn():
    """A CNN for Fashion-MNIST (1x28x28, 10 classes) whose every op the kernels have: it
    trains on the real data set, and its chain of blocks has single-tensor cuts (stages,
    local strategies)."""
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
        nn.MaxPool2d(2, 2),
        nn.Conv2d(8, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        nn.MaxPool2d(2, 2),
        nn.Flatten(), nn.Dropout(0.1), nn.Linear(16 * 7 * 7, 10))

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


class EncoderClassifier(nn.Module):
    """A transformer built from torch's own nn.TransformerEncoder: per-position features
    [T, F] -> a linear embedding, `layers` encoder layers (self-attention and an MLP block
    each, post-norm, ReLU), a linear head on the first position's state (a class token,
    x[:, 0]) giving the logits [classes]. Every op is one the kernels have (attention
    without dropout), so the imported graph trains."""

    def __init__(self, features=16, dim=32, heads=4, layers=4, classes=10, dropout=0.0):
        super().__init__()
        self.embed = nn.Linear(features, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=4 * dim, dropout=dropout,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        return self.head(self.encoder(self.embed(x))[:, 0])


def transformer_encoder():
    return EncoderClassifier()

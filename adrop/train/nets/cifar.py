"""The CIFAR networks of the sparsification literature, as plain nn.Modules (a method trains their Linear and Conv2d
layers as it trains any network's):

    vgg_like   Sparse VD's VGG-like network (Molchanov et al. 2017, after Zagoruyko's cifar.torch): thirteen 3x3
               convolutions (64, 64, M, 128, 128, M, 256 x 3, M, 512 x 3, M, 512 x 3, M; M a 2x2 max-pool), each
               followed by BatchNorm (eps 1e-3) and ReLU, then fc 512 -> BatchNorm -> ReLU -> fc classes; every width
               times `width` (their k)
    resnet20   He et al. 2016's CIFAR ResNet (depth 6n + 2; 20: three stages of three basic blocks, 16, 32, 64
               channels), post-activation; a shortcut that changes shape is a 1x1 convolution with BatchNorm
    wrn        Zagoruyko and Komodakis' wide residual network WRN-depth-widen (the L0 paper's WRN-28-10),
               pre-activation blocks BN-ReLU-conv3x3-BN-ReLU-conv3x3, the stride in a stage's first convolution
"""

from __future__ import annotations

from torch import nn

VGG_LIKE = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]


def image_of(input_shape, multiple: int) -> tuple[int, int]:
    if len(input_shape) != 3 or input_shape[1] != input_shape[2] or input_shape[1] % multiple:
        raise ValueError(
            f"this network takes square images whose side is a multiple of {multiple} (CIFAR's "
            f"3 x 32 x 32), got input_shape {list(input_shape)}"
        )
    return input_shape[0], input_shape[1]


class VGGLike(nn.Module):
    def __init__(self, classes: int = 10, width: float = 1.0, input_shape=(3, 32, 32)):
        super().__init__()
        channels, side = image_of(input_shape, 32)
        layers = []
        for v in VGG_LIKE:
            if v == "M":
                layers.append(nn.MaxPool2d(2))
                side //= 2
                continue
            out = max(1, round(v * width))
            layers += [nn.Conv2d(channels, out, 3, padding=1), nn.BatchNorm2d(out, eps=1e-3), nn.ReLU()]
            channels = out
        hidden = max(1, round(512 * width))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Flatten(),
            nn.Linear(channels * side * side, hidden),
            nn.BatchNorm1d(hidden, eps=1e-3),
            nn.ReLU(),
            nn.Linear(hidden, classes),
        )

    def forward(self, x):
        return self.classifier(self.features(x))


class BasicBlock(nn.Module):
    """conv3x3-BN-ReLU-conv3x3-BN, plus the shortcut, then ReLU (post-activation)."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = (
            nn.Sequential()
            if stride == 1 and cin == cout
            else nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        )
        self.relu = nn.ReLU()

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, classes: int = 10, depth: int = 20, input_shape=(3, 32, 32)):
        super().__init__()
        if depth < 8 or (depth - 2) % 6:
            raise ValueError(f"a CIFAR ResNet has depth 6n + 2 (20, 32, 44, 56, 110), got {depth}")
        channels, _ = image_of(input_shape, 4)
        n = (depth - 2) // 6
        self.stem = nn.Sequential(nn.Conv2d(channels, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        blocks, cin = [], 16
        for stage, cout in enumerate((16, 32, 64)):
            for i in range(n):
                blocks.append(BasicBlock(cin, cout, 2 if stage and not i else 1))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        return self.fc(self.pool(self.blocks(self.stem(x))).flatten(1))


class WideBlock(nn.Module):
    """BN-ReLU-conv3x3(stride)-BN-ReLU-conv3x3, plus the shortcut (a 1x1 convolution of the activated input where the
    width or the size changes)."""

    def __init__(self, cin: int, cout: int, stride: int, dropout: float):
        super().__init__()
        self.bn1, self.conv1 = nn.BatchNorm2d(cin), nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn2, self.conv2 = nn.BatchNorm2d(cout), nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.relu = nn.ReLU()
        self.shortcut = None if stride == 1 and cin == cout else nn.Conv2d(cin, cout, 1, stride, bias=False)

    def forward(self, x):
        a = self.relu(self.bn1(x))
        out = self.conv2(self.dropout(self.relu(self.bn2(self.conv1(a)))))
        return out + (x if self.shortcut is None else self.shortcut(a))


class WideResNet(nn.Module):
    def __init__(
        self, classes: int = 10, depth: int = 28, widen: int = 10, dropout: float = 0.0, input_shape=(3, 32, 32)
    ):
        super().__init__()
        if depth < 10 or (depth - 4) % 6:
            raise ValueError(f"a wide residual network has depth 6n + 4 (16, 22, 28, 40), got {depth}")
        channels, _ = image_of(input_shape, 4)
        n = (depth - 4) // 6
        self.stem = nn.Conv2d(channels, 16, 3, 1, 1, bias=False)
        blocks, cin = [], 16
        for stage, cout in enumerate((16 * widen, 32 * widen, 64 * widen)):
            for i in range(n):
                blocks.append(WideBlock(cin, cout, 2 if stage and not i else 1, dropout))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Sequential(
            nn.BatchNorm2d(cin), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)
        )

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))

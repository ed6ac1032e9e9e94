"""Mean IoU of a trained SegNet on the validation split."""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "src"))

import torch  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from segmenter.data import Cityscapes  # noqa: E402
from segmenter.models import SegNet  # noqa: E402


def mean_iou(pred, target, num_classes):
    ious = []
    for c in range(num_classes):
        inter = ((pred == c) & (target == c)).sum().item()
        union = ((pred == c) | (target == c)).sum().item()
        if union:
            ious.append(inter / union)
    return sum(ious) / max(len(ious), 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="data/cityscapes")
    parser.add_argument("--weights", default="runs/segnet/best.pt")
    args = parser.parse_args()

    model = SegNet()
    model.load_state_dict(torch.load(args.weights, map_location="cpu", weights_only=True))
    loader = DataLoader(Cityscapes(args.data), batch_size=8)
    scores = []
    with torch.no_grad():
        for image, mask in loader:
            pred = model(image).argmax(1)  # expect: missing-eval-mode
            scores.append(mean_iou(pred, mask, 19))
    print(f"mIoU {sum(scores) / len(scores):.4f}")


if __name__ == "__main__":
    main()
